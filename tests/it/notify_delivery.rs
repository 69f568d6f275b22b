//! Issue 37: how events get through when things go wrong at the target or the listeners
//! pile up: an event the target rejects for good goes to the dead letters after a few tries
//! and a key whose events fail holds up no other key; listeners (ListenBucketNotification)
//! share one change stream per instance, so a crowd of them does not starve requests of
//! database connections, and they are bounded; targets shared through the admin CLI.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::doc;
use serde_json::Value;

use crate::notify_support::{obj, put, put_config, queue_rule, webhook, Receiver};
use crate::support;

fn db_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

#[test]
fn a_rejected_event_is_dead_lettered_and_a_failing_key_holds_up_no_other() {
    support::run(async {
        let hook = Receiver::start().await;
        let url = hook.url();
        let db = db_name("npoison");
        let gw = support::gateway_with(&db, |c| {
            c.notify_targets = vec![webhook("pzz", &url, None)];
            c.notify_retry_max_ms = 400;
        })
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("pzz").send().await.unwrap();
        let rules = queue_rule(
            "all",
            "arn:grids3:sqs::pzz:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        let (status, body) = put_config(&gw, "pzz", &rules).await;
        assert_eq!(status, 200, "{body}");
        // "flaky" fails with a 500 (worth retrying) and has more events queued than a round
        // reads; "poison" is rejected for good with a 400.
        hook.refuse.lock().unwrap().insert("flaky".into(), (500, 0));
        hook.refuse
            .lock()
            .unwrap()
            .insert("poison".into(), (400, 0));
        let flaky_n = grids3::notify::dispatch::WINDOW as usize + 44;
        let mut etags = Vec::new();
        for _ in 0..flaky_n {
            let r = s3
                .put_object()
                .bucket("pzz")
                .key("flaky")
                .body(ByteStream::from(
                    uuid::Uuid::new_v4().to_string().into_bytes(),
                ))
                .send()
                .await
                .unwrap();
            etags.push(r.e_tag().unwrap().trim_matches('"').to_owned());
        }
        put(&s3, "pzz", "poison").await;
        put(&s3, "pzz", "poison").await;
        for i in 0..20 {
            put(&s3, "pzz", &format!("ok/{i}")).await;
        }
        // Every other key arrives while "flaky" still fails and "poison" is refused.
        let got = hook.wait_records(20, 30).await;
        let ok: Vec<&str> = got.iter().filter_map(|r| obj(r)["key"].as_str()).collect();
        assert_eq!(ok.len(), 20, "{ok:?}");
        assert!(ok.iter().all(|k| k.starts_with("ok/")), "{ok:?}");
        // Poison's events go to the dead letters after their tries, with the reason, each once
        // the target took other events since it first failed (so a rejection is the event's,
        // not the target's): the first while the others went through, the second when more
        // come.
        let dead = gw.db.collection::<mongodb::bson::Document>("__notify_dead");
        let buried = |n: u64| {
            let dead = dead.clone();
            async move {
                support::eventually(30, || async {
                    dead.count_documents(doc! {"k": "poison"}).await.unwrap() >= n
                })
                .await
            }
        };
        assert!(buried(1).await, "poison's first event was not buried");
        for i in 0..5 {
            put(&s3, "pzz", &format!("ok2/{i}")).await;
        }
        assert!(buried(2).await, "poison's second event was not buried");
        assert_eq!(dead.count_documents(doc! {"k": "poison"}).await.unwrap(), 2);
        let d = dead.find_one(doc! {"k": "poison"}).await.unwrap().unwrap();
        assert!(d.get_str("reason").unwrap().contains("HTTP 400"), "{d}");
        let tries = hook.refuse.lock().unwrap()["poison"].1;
        // Each tried at least that often (more when no other event was taken yet), and with
        // backoff, not in a loop.
        let least = 2 * grids3::notify::targets::REJECTED_TRIES as usize;
        assert!(
            (least..least + 20).contains(&tries),
            "poison tried {tries} times"
        );
        // "flaky" was tried, but not as fast as the loop can go: it waited on its own.
        let flaky_tries = hook.refuse.lock().unwrap()["flaky"].1;
        assert!(flaky_tries >= 2, "{flaky_tries}");
        // Once it takes them, every one of flaky's events arrives, in order, none buried.
        hook.refuse.lock().unwrap().remove("flaky");
        let got = hook.wait_records(25 + flaky_n, 60).await;
        let flaky: Vec<&str> = got
            .iter()
            .filter(|r| obj(r)["key"] == "flaky")
            .map(|r| obj(r)["eTag"].as_str().unwrap())
            .collect();
        assert_eq!(flaky, etags, "flaky's events in the order of its writes");
        assert_eq!(dead.count_documents(doc! {"k": "flaky"}).await.unwrap(), 0);
        let metrics = reqwest::get(format!("{}/_grids3/metrics", gw.endpoint()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let dead_line = metrics
            .lines()
            .find(|l| {
                l.starts_with("grids3_notify_dead_lettered_total") && l.contains("\"pzz:webhook\"")
            })
            .unwrap_or_else(|| panic!("no dead letter metric"));
        assert!(dead_line.ends_with(" 2"), "{dead_line}");
        // A receiver that rejects everything (a rotated token: 401 for all) is as good as
        // down: nothing goes to the dead letters, however often it is tried, and its events
        // arrive once it takes them again.
        hook.refuse_all
            .store(401, std::sync::atomic::Ordering::SeqCst);
        for i in 0..3 {
            put(&s3, "pzz", &format!("later/{i}")).await;
        }
        tokio::time::sleep(Duration::from_secs(8)).await;
        assert_eq!(
            dead.count_documents(doc! {"k": {"$regex": "^later/"}})
                .await
                .unwrap(),
            0,
            "a target that rejects everything had events buried"
        );
        hook.refuse_all
            .store(0, std::sync::atomic::Ordering::SeqCst);
        let got = hook.wait_records(25 + flaky_n + 3, 60).await;
        let later = got
            .iter()
            .filter(|r| obj(r)["key"].as_str().unwrap().starts_with("later/"))
            .count();
        assert_eq!(later, 3);
    });
}

/// Reads a listener's lines until `done` holds for them (or `secs` pass).
async fn read_lines(
    resp: &mut reqwest::Response,
    secs: u64,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let mut text = String::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        let recs: Vec<Value> = text
            .lines()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if done(&recs) || std::time::Instant::now() >= deadline {
            return recs;
        }
        match tokio::time::timeout(Duration::from_secs(2), resp.chunk()).await {
            Ok(Ok(Some(c))) => text.push_str(&String::from_utf8_lossy(&c)),
            Ok(_) => return recs,
            Err(_) => {}
        }
    }
}

#[test]
fn listeners_share_one_change_stream_and_are_bounded() {
    support::run(async {
        // A pool of five connections: a change stream per listener would hold them all.
        let uri = support::db().uri.clone();
        let sep = if uri.contains('?') { '&' } else { '?' };
        let client = grids3::metrics::mongodb_client(&format!("{uri}{sep}maxPoolSize=5"))
            .await
            .unwrap();
        const MAX: usize = 12;
        let gw = support::gateway_with_client(client, &db_name("nlisteners"), |c| {
            c.notify_max_listeners = MAX;
        })
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("crowd").send().await.unwrap();
        // Half take every object event under pics/ ending .jpg; the others take reads too.
        let mut listeners = Vec::new();
        for i in 0..MAX {
            let path = if i % 2 == 0 {
                "/crowd?events=s3:ObjectCreated:*&prefix=pics/&suffix=.jpg&ping=1".to_owned()
            } else {
                "/crowd?events=s3:ObjectCreated:*&events=s3:ObjectRemoved:*&events=s3:ObjectAccessed:*&ping=1".to_owned()
            };
            let resp = support::Raw::new("GET", &path).send(&gw).await;
            assert_eq!(resp.status().as_u16(), 200, "listener {i}");
            listeners.push(resp);
        }
        // One more is refused, as AWS refuses a request rate it cannot take.
        let over = support::Raw::new("GET", "/crowd?events=s3:ObjectCreated:*&ping=1")
            .send(&gw)
            .await;
        assert_eq!(over.status().as_u16(), 503);
        assert_eq!(support::error_code(&over.text().await.unwrap()), "SlowDown");
        // (Instances read the listener registry at most once a second.)
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Requests still get connections while every listener waits.
        let started = std::time::Instant::now();
        for k in ["pics/a.jpg", "pics/b.png", "c.jpg"] {
            tokio::time::timeout(Duration::from_secs(10), put(&s3, "crowd", k))
                .await
                .unwrap_or_else(|_| panic!("PUT {k} stalled behind the listeners"));
        }
        let got = tokio::time::timeout(
            Duration::from_secs(10),
            s3.get_object().bucket("crowd").key("c.jpg").send(),
        )
        .await
        .expect("GET stalled")
        .unwrap();
        got.body.collect().await.unwrap();
        assert!(started.elapsed() < Duration::from_secs(10));
        for (i, resp) in listeners.iter_mut().enumerate() {
            let events: Vec<(String, String)> = if i % 2 == 0 {
                read_lines(resp, 20, |r| !r.is_empty()).await
            } else {
                read_lines(resp, 20, |r| r.len() >= 4).await
            }
            .iter()
            .map(|r| {
                let rec = &r["Records"][0];
                (
                    rec["eventName"].as_str().unwrap().to_owned(),
                    obj(rec)["key"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
            let want: Vec<(&str, &str)> = if i % 2 == 0 {
                vec![("s3:ObjectCreated:Put", "pics/a.jpg")]
            } else {
                vec![
                    ("s3:ObjectCreated:Put", "pics/a.jpg"),
                    ("s3:ObjectCreated:Put", "pics/b.png"),
                    ("s3:ObjectCreated:Put", "c.jpg"),
                    ("s3:ObjectAccessed:Get", "c.jpg"),
                ]
            };
            let got: Vec<(&str, &str)> = events
                .iter()
                .map(|(e, k)| (e.as_str(), k.as_str()))
                .collect();
            assert_eq!(got, want, "listener {i}");
        }
        // A listener that leaves frees its place.
        listeners.pop();
        let again = support::eventually(10, || async {
            let r = support::Raw::new("GET", "/crowd?events=s3:ObjectCreated:*&ping=1")
                .send(&gw)
                .await;
            r.status().as_u16() == 200
        })
        .await;
        assert!(again, "a freed place was not given again");
    });
}

#[test]
fn targets_added_by_the_admin_cli_serve_every_instance_and_listeners_see_live_changes() {
    support::run(async {
        let hook = Receiver::start().await;
        let db = format!(
            "g_nlisten_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        // A target added through the admin CLI of one instance: stored, so the other takes
        // configurations naming it; its token is never shown.
        let (ep, url) = (one.endpoint(), hook.url());
        let (added, listed) = tokio::task::spawn_blocking(move || {
            let added = support::admin_cli(
                &ep,
                &[
                    "notify",
                    "add",
                    "shared",
                    "--type",
                    "webhook",
                    "--url",
                    &url,
                    "--auth-token",
                    "sekret",
                ],
            );
            (added, support::admin_cli(&ep, &["notify", "list"]))
        })
        .await
        .unwrap();
        assert_eq!(added["arn"], "arn:grids3:sqs::shared:webhook");
        assert!(!listed.to_string().contains("sekret"), "{listed}");
        assert_eq!(listed["targets"][0]["source"], "database");
        let s3 = two.sdk();
        s3.create_bucket().bucket("live").send().await.unwrap();
        let rules = queue_rule(
            "s",
            "arn:grids3:sqs::shared:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        let (status, body) = put_config(&two, "live", &rules).await;
        assert_eq!(status, 200, "{body}");

        // A listener on instance one, changes through instance two.
        let raw = support::Raw::new("GET", "/live?events=s3:ObjectCreated:*&prefix=a/&ping=1");
        let mut resp = raw.send(&one).await;
        assert_eq!(resp.status().as_u16(), 200);
        // (Instances read the listener registry at most once a second.)
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        s3.put_object()
            .bucket("live")
            .key("b/not-this")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        let put = s3
            .put_object()
            .bucket("live")
            .key("a/this")
            .body(ByteStream::from_static(b"xyz"))
            .send()
            .await
            .unwrap();
        let mut text = String::new();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !text.contains("a/this") && std::time::Instant::now() < deadline {
            match tokio::time::timeout(std::time::Duration::from_secs(5), resp.chunk()).await {
                Ok(Ok(Some(c))) => text.push_str(&String::from_utf8_lossy(&c)),
                _ => break,
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.contains(&""), "no keep-alive line in {text:?}");
        let recs: Vec<Value> = lines
            .iter()
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(recs.len(), 1, "{text}");
        assert_eq!(obj(&recs[0]["Records"][0])["key"], "a/this");
        assert_eq!(
            obj(&recs[0]["Records"][0])["eTag"],
            put.e_tag().unwrap().trim_matches('"')
        );
        drop(resp);
        // The configured target got both, with its token.
        let got = hook.wait_records(2, 20).await;
        assert_eq!(got.len(), 2);
        assert!(hook
            .got
            .lock()
            .unwrap()
            .iter()
            .all(|r| r.auth.as_deref() == Some("Bearer sekret")));
        // An event type grids3 does not produce is refused; removing the target.
        let bad = support::Raw::new("GET", "/live?events=s3:ObjectRestore:Post")
            .send(&one)
            .await;
        assert_eq!(bad.status().as_u16(), 400);
        // In AWS's words, which minio-js's listener waits for (issue 64).
        let body = bad.text().await.unwrap();
        assert!(
            body.contains(
                "<Message>A specified event is not supported for notifications.</Message>"
            ) && body.contains("<ArgumentName1>s3:ObjectRestore:Post</ArgumentName1>"),
            "{body}"
        );
        let ep = one.endpoint();
        let removed = tokio::task::spawn_blocking(move || {
            support::admin_cli(&ep, &["notify", "remove", "shared:webhook"])
        })
        .await
        .unwrap();
        assert_eq!(removed["removed"], "shared:webhook");
    });
}

#[test]
fn concurrent_puts_share_one_outbox_document_per_target() {
    support::run(async {
        use grids3::failpoint;
        use std::sync::atomic::Ordering;
        let hook = Receiver::start().await;
        let url = hook.url();
        let (gw, counters) = support::gateway_counting_split("ngroup", |c| {
            c.notify_targets = vec![webhook("grp", &url, None)];
        })
        .await;
        let commands =
            || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let outbox_inserts = |from: usize| {
            counters.log.lock().unwrap()[from..]
                .iter()
                .filter(|c| c.starts_with("insert") && c.contains("__notify_outbox"))
                .count()
        };
        let s3 = gw.sdk();
        s3.create_bucket().bucket("grp").send().await.unwrap();
        let rules = queue_rule(
            "g",
            "arn:grids3:sqs::grp:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        let (status, body) = put_config(&gw, "grp", &rules).await;
        assert_eq!(status, 200, "{body}");
        put(&s3, "grp", "warm").await;
        // One small PUT: the revision lookup, the object's bulkWrite, and its event's insert.
        let before = commands();
        let log_before = counters.log.lock().unwrap().len();
        put(&s3, "grp", "one").await;
        let log: Vec<String> = counters.log.lock().unwrap()[log_before..].to_vec();
        assert_eq!(commands() - before, 3, "{log:?}");
        assert_eq!(outbox_inserts(log_before), 1, "{log:?}");
        hook.wait_records(2, 30).await;
        // Eight PUTs at once: the first one's insert is held until the other seven have
        // queued their events behind it; those seven then go in one document. The target is
        // down meanwhile, so that the documents stay to be looked at.
        hook.down.store(true, Ordering::SeqCst);
        let db = gw.db.name().to_owned();
        let log_before = counters.log.lock().unwrap().len();
        let hold = failpoint::pause("notify.outbox_insert", Some(&db));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move { put(&s3, "grp", "c0").await })
        };
        hold.reached().await;
        let queued = failpoint::pause_times("notify.outbox_queued", Some(&db), 7);
        let rest: Vec<_> = (1..8)
            .map(|i| {
                let s3 = s3.clone();
                tokio::spawn(async move { put(&s3, "grp", &format!("c{i}")).await })
            })
            .collect();
        queued.reached_n(7, Duration::from_secs(60)).await;
        queued.release();
        hold.release();
        first.await.unwrap();
        for r in rest {
            r.await.unwrap();
        }
        let log: Vec<String> = counters.log.lock().unwrap()[log_before..].to_vec();
        assert_eq!(outbox_inserts(log_before), 2, "{log:?}");
        let queued: Vec<mongodb::bson::Document> = {
            use futures::TryStreamExt;
            gw.db
                .collection::<mongodb::bson::Document>("__notify_outbox")
                .find(doc! {"t": "grp:webhook"})
                .sort(doc! {"seq": 1})
                .await
                .unwrap()
                .try_collect()
                .await
                .unwrap()
        };
        let groups: Vec<Vec<String>> = queued
            .iter()
            .map(|d| {
                d.get_array("ev")
                    .unwrap()
                    .iter()
                    .map(|e| e.as_document().unwrap().get_str("k").unwrap().to_owned())
                    .collect()
            })
            .collect();
        assert_eq!(groups.len(), 2, "{groups:?}");
        assert_eq!(groups[0], vec!["c0".to_owned()]);
        assert_eq!(groups[1].len(), 7, "{groups:?}");
        // The later group sorts after the earlier, and after each of its own events.
        let seq = |d: &mongodb::bson::Document| d.get_i64("seq").unwrap();
        assert!(seq(&queued[1]) > seq(&queued[0]));
        for e in queued[1].get_array("ev").unwrap() {
            assert!(e.as_document().unwrap().get_i64("s").unwrap() < seq(&queued[1]));
        }
        hook.down.store(false, Ordering::SeqCst);
        // Every event arrives, once.
        let recs = hook.wait_records(10, 30).await;
        let mut keys: Vec<String> = recs
            .iter()
            .filter_map(|r| obj(r)["key"].as_str().map(str::to_owned))
            .collect();
        keys.sort();
        let mut want: Vec<String> = ["one", "warm"]
            .into_iter()
            .map(str::to_owned)
            .chain((0..8).map(|i| format!("c{i}")))
            .collect();
        want.sort();
        assert_eq!(keys, want, "{recs:?}");
        // And the outbox empties: every group was removed once delivered.
        assert!(
            support::eventually(20, || async {
                gw.db
                    .collection::<mongodb::bson::Document>("__notify_outbox")
                    .count_documents(doc! {"t": "grp:webhook"})
                    .await
                    .unwrap()
                    == 0
            })
            .await
        );
    });
}

#[test]
fn a_group_whose_events_are_all_rejected_leaves_nothing_behind() {
    support::run(async {
        use grids3::failpoint;
        let hook = Receiver::start().await;
        let url = hook.url();
        let db = db_name("nempty");
        let gw = support::gateway_with(&db, |c| {
            c.notify_targets = vec![webhook("emp", &url, None)];
        })
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("emp").send().await.unwrap();
        let rules = queue_rule(
            "e",
            "arn:grids3:sqs::emp:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&gw, "emp", &rules).await.0, 200);
        for k in ["pa", "pb"] {
            hook.refuse.lock().unwrap().insert(k.into(), (400, 0));
        }
        // "pa" and "pb" in one outbox document: queued behind a held insert.
        let hold = failpoint::pause("notify.outbox_insert", Some(&db));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move { put(&s3, "emp", "w0").await })
        };
        hold.reached().await;
        let queued = failpoint::pause_times("notify.outbox_queued", Some(&db), 2);
        let both: Vec<_> = ["pa", "pb"]
            .into_iter()
            .map(|k| {
                let s3 = s3.clone();
                tokio::spawn(async move { put(&s3, "emp", k).await })
            })
            .collect();
        queued.reached_n(2, Duration::from_secs(60)).await;
        queued.release();
        hold.release();
        first.await.unwrap();
        for t in both {
            t.await.unwrap();
        }
        // Other keys go through meanwhile, so that the rejections count as the events' own.
        let dead = gw.db.collection::<mongodb::bson::Document>("__notify_dead");
        let mut i = 0;
        while dead
            .count_documents(doc! {"k": {"$in": ["pa", "pb"]}})
            .await
            .unwrap()
            < 2
        {
            assert!(i < 60, "pa and pb were not dead-lettered");
            put(&s3, "emp", &format!("ok/{i}")).await;
            tokio::time::sleep(Duration::from_millis(500)).await;
            i += 1;
        }
        // Nothing more is written: the group they were in must not stay behind, emptied (a
        // pile of those at the head of the queue would stop the target).
        let outbox = gw
            .db
            .collection::<mongodb::bson::Document>("__notify_outbox");
        assert!(
            support::eventually(20, || async {
                outbox
                    .count_documents(doc! {"t": "emp:webhook"})
                    .await
                    .unwrap()
                    == 0
            })
            .await,
            "left in the outbox: {:?}",
            {
                use futures::TryStreamExt;
                outbox
                    .find(doc! {})
                    .await
                    .unwrap()
                    .try_collect::<Vec<_>>()
                    .await
                    .unwrap()
            }
        );
        put(&s3, "emp", "after").await;
        let recs = hook.wait_records(i + 2, 30).await;
        assert!(recs.iter().any(|r| obj(r)["key"] == "after"), "{recs:?}");
        assert!(recs.iter().any(|r| obj(r)["key"] == "w0"), "{recs:?}");
    });
}
