//! Issue 37's fault tests: every acknowledged write's event is delivered, none lost, when the
//! gateway is killed right after acknowledging, when the webhook is down for minutes, and when
//! one of two instances dies mid-stream.

use std::collections::{HashMap, HashSet};

use aws_sdk_s3::primitives::ByteStream;

use crate::notify_support::{put_config, queue_rule, Receiver};
use crate::support;

fn db_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

/// An in-process gateway on `db` used only for handles (its state, its database): its
/// background tasks, the dispatcher among them, are stopped, so the processes under test are
/// the only instances that deliver.
async fn handles_on(db: &str) -> support::Gateway {
    let gw = support::gateway_on(db).await;
    gw.state.stop_background();
    gw
}

/// The keys of the object records received, each with how many times it came.
fn received_keys(hook: &Receiver) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for r in hook.records() {
        *out.entry(r["s3"]["object"]["key"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    out
}

/// The events queued (the outbox keeps a target's events in groups).
async fn outbox_len(gw: &support::Gateway) -> u64 {
    use futures::TryStreamExt;
    let docs: Vec<mongodb::bson::Document> = gw
        .db
        .collection::<mongodb::bson::Document>("__notify_outbox")
        .find(mongodb::bson::doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    docs.iter()
        .map(|d| d.get_array("ev").map_or(1, |ev| ev.len() as u64))
        .sum()
}

#[test]
fn a_gateway_killed_right_after_acknowledging_delivers_every_event_after_restart() {
    support::run(async {
        let hook = Receiver::start().await;
        // The target refuses everything while the writes are acknowledged, so every event is
        // still queued when the gateway dies.
        hook.down.store(true, std::sync::atomic::Ordering::SeqCst);
        let db = db_name("nkill");
        let peer = handles_on(&db).await;
        let url = hook.url();
        let env = [
            ("GRIDS3_NOTIFY_WEBHOOK_KILL", url.as_str()),
            ("GRIDS3_NOTIFY_RETRY_MAX_MS", "200"),
        ];
        let mut p = support::Process::start(&db, &env).await;
        let gw = p.as_gateway(&peer);
        let s3 = gw.sdk();
        s3.create_bucket().bucket("killed").send().await.unwrap();
        let rules = queue_rule(
            "k",
            "arn:grids3:sqs::kill:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&gw, "killed", &rules).await.0, 200);
        let mut keys = HashSet::new();
        for i in 0..50 {
            let k = format!("obj-{i:02}");
            s3.put_object()
                .bucket("killed")
                .key(&k)
                .body(ByteStream::from(format!("body {i}").into_bytes()))
                .send()
                .await
                .unwrap();
            keys.insert(k);
        }
        // SIGKILL right after the 50th acknowledgement.
        p.kill();
        // Every acknowledged write's event was durable before its answer (and the TestEvent).
        assert_eq!(outbox_len(&peer).await, 51);
        assert!(hook.records().is_empty());
        hook.down.store(false, std::sync::atomic::Ordering::SeqCst);
        let _p2 = support::Process::start(&db, &env).await;
        // The dead instance's lead expires (10 s), then the new one delivers everything.
        support::eventually(90, || async { received_keys(&hook).len() >= 50 }).await;
        let got = received_keys(&hook);
        let got_keys: HashSet<String> = got.keys().cloned().collect();
        assert_eq!(
            got_keys,
            keys,
            "lost: {:?}",
            keys.difference(&got_keys).collect::<Vec<_>>()
        );
        assert!(support::eventually(20, || async { outbox_len(&peer).await == 0 }).await);
    });
}

/// How long the webhook stays down (2 minutes, as the issue asks; shorter for a local run with
/// `GRIDS3_TEST_WEBHOOK_DOWN_SECS`).
fn down_for() -> std::time::Duration {
    std::time::Duration::from_secs(
        std::env::var("GRIDS3_TEST_WEBHOOK_DOWN_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(120),
    )
}

#[test]
fn a_webhook_down_for_two_minutes_gets_every_event_in_order_per_key() {
    support::run(async {
        let hook = Receiver::start().await;
        let url = hook.url();
        let gw = support::gateway_with(&db_name("ndown"), |c| {
            c.notify_targets = vec![crate::notify_support::webhook("down", &url, None)];
            c.notify_retry_max_ms = 2_000;
        })
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("down").send().await.unwrap();
        let rules = queue_rule(
            "d",
            "arn:grids3:sqs::down:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&gw, "down", &rules).await.0, 200);
        assert!(support::eventually(20, || async { !hook.got.lock().unwrap().is_empty() }).await);
        // Gone: connections refused.
        hook.stop();
        let started = std::time::Instant::now();
        let mut written: HashMap<String, Vec<String>> = HashMap::new();
        for round in 0..8 {
            for k in 0..5 {
                let key = format!("key-{k}");
                let out = s3
                    .put_object()
                    .bucket("down")
                    .key(&key)
                    .body(ByteStream::from(
                        format!("{key} round {round}").into_bytes(),
                    ))
                    .send()
                    .await
                    .unwrap();
                written
                    .entry(key)
                    .or_default()
                    .push(out.e_tag().unwrap().trim_matches('"').to_owned());
            }
        }
        // While it is down the writes go on, and the metrics show the backlog.
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let metrics = reqwest::get(format!("{}/_grids3/metrics", gw.endpoint()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let oldest = metrics
            .lines()
            .find(|l| {
                l.starts_with("grids3_notify_oldest_undelivered_seconds{target=\"down:webhook\"}")
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("no oldest-age gauge in\n{metrics}"));
        assert!(oldest > 0.0, "{oldest}");
        assert!(metrics.contains("grids3_notify_failed_total{target=\"down:webhook\"}"));
        if let Some(rest) = down_for().checked_sub(started.elapsed()) {
            tokio::time::sleep(rest).await;
        }
        hook.restart().await;
        support::eventually(60, || async { hook.records().len() >= 40 }).await;
        let mut seen: HashMap<String, Vec<String>> = HashMap::new();
        for r in hook.records() {
            let o = &r["s3"]["object"];
            seen.entry(o["key"].as_str().unwrap().to_owned())
                .or_default()
                .push(o["eTag"].as_str().unwrap().to_owned());
        }
        // Every event, each key's in the order its writes were acknowledged.
        assert_eq!(seen, written);
    });
}

#[test]
fn two_instances_with_one_killed_mid_stream_deliver_everything() {
    support::run(async {
        let hook = Receiver::start().await;
        let db = db_name("ntwo");
        let peer = handles_on(&db).await;
        let url = hook.url();
        let env = [
            ("GRIDS3_NOTIFY_WEBHOOK_TWO", url.as_str()),
            ("GRIDS3_NOTIFY_RETRY_MAX_MS", "200"),
        ];
        // The first instance takes the dispatcher's lead before the second starts.
        let mut a = support::Process::start(&db, &env).await;
        let info = peer.db.collection::<mongodb::bson::Document>("__infostore");
        assert!(
            support::eventually(20, || async {
                info.find_one(
                    mongodb::bson::doc! {"_id": "lead:notify", "token": {"$exists": true}},
                )
                .await
                .unwrap()
                .is_some()
            })
            .await
        );
        let b = support::Process::start(&db, &env).await;
        let (ga, gb) = (a.as_gateway(&peer), b.as_gateway(&peer));
        let (sa, sb) = (ga.sdk(), gb.sdk());
        sa.create_bucket().bucket("two").send().await.unwrap();
        let rules = queue_rule(
            "t",
            "arn:grids3:sqs::two:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&ga, "two", &rules).await.0, 200);
        let mut keys = HashSet::new();
        for i in 0..60 {
            let k = format!("k{i:02}");
            let s3 = if i % 2 == 0 { &sa } else { &sb };
            if i == 30 {
                // The dispatching instance dies mid-stream; the writes go on through the other.
                a.kill();
            }
            let s3 = if i >= 30 { &sb } else { s3 };
            s3.put_object()
                .bucket("two")
                .key(&k)
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
            keys.insert(k);
        }
        support::eventually(90, || async { received_keys(&hook).len() >= 60 }).await;
        let got = received_keys(&hook);
        let got_keys: HashSet<String> = got.keys().cloned().collect();
        assert_eq!(
            got_keys,
            keys,
            "lost: {:?}",
            keys.difference(&got_keys).collect::<Vec<_>>()
        );
        // Repeats only within the documented window: at most one round's window per target
        // (sequential writes: one event per outbox document).
        let repeats: usize = got.values().map(|n| n - 1).sum();
        eprintln!("two instances, one killed: 60 events, {repeats} repeated");
        assert!(repeats <= grids3::notify::dispatch::WINDOW as usize);
    });
}
