//! Issue 59's suspicions about notifications, each reproduced step by step with fail points: a
//! dispatcher stalled past its lead while another takes over, a request overtaken between
//! making its records and queueing them, and events for a target that does not exist yet.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;

use crate::notify_support::{put_config, queue_rule, webhook, Receiver};
use crate::support;

fn db_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..10]
    )
}

/// The records of `key` received, in order.
fn records_of(hook: &Receiver, key: &str) -> Vec<serde_json::Value> {
    hook.records()
        .into_iter()
        .filter(|r| r["s3"]["object"]["key"] == key)
        .collect()
}

fn etags(records: &[serde_json::Value]) -> Vec<String> {
    records
        .iter()
        .map(|r| r["s3"]["object"]["eTag"].as_str().unwrap().to_owned())
        .collect()
}

/// A PUT's ETag, without quotes.
async fn put_body(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, body: &str) -> String {
    let out = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.as_bytes().to_vec()))
        .send()
        .await
        .unwrap();
    out.e_tag().unwrap().trim_matches('"').to_owned()
}

/// Waits until `hook` got the TestEvent of a configuration (so no round is under way with it).
async fn test_event_arrived(hook: &Receiver) {
    assert!(
        support::eventually(30, || async {
            hook.got
                .lock()
                .unwrap()
                .iter()
                .any(|r| r.body["Event"] == "s3:TestEvent")
        })
        .await,
        "no TestEvent"
    );
}

/// Two gateways on one database, each with the webhook target `pair` (and its dispatcher),
/// the lead shortened to `lead`; the first holds the lead before the second starts. A bucket
/// `bucket` sends its creations to `pair`, and its TestEvent has arrived.
struct Pair {
    a: support::Gateway,
    _b: support::Gateway,
    a_id: String,
    b_id: String,
    info: mongodb::Collection<mongodb::bson::Document>,
    _short: grids3::failpoint::Shortened,
}

impl Pair {
    async fn start(tag: &str, hook: &Receiver, lead: Duration, bucket: &str) -> Pair {
        let db = db_name(tag);
        let short = grids3::failpoint::shorten("notify.lead", &db, lead);
        let targets = vec![webhook("pair", &hook.url(), None)];
        let a = support::gateway_with(&db, |c| c.notify_targets = targets.clone()).await;
        let a_id = a.state.store.meta().process_id().to_owned();
        let info = a.db.collection::<mongodb::bson::Document>("__infostore");
        assert!(
            support::eventually(30, || async {
                info.find_one(mongodb::bson::doc! {
                    "_id": "lead:notify", "holder": &a_id, "token": {"$exists": true}
                })
                .await
                .unwrap()
                .is_some()
            })
            .await,
            "the first instance did not take the lead"
        );
        let b = support::gateway_with(&db, |c| c.notify_targets = targets.clone()).await;
        let b_id = b.state.store.meta().process_id().to_owned();
        a.sdk().create_bucket().bucket(bucket).send().await.unwrap();
        let rules = queue_rule(
            "p",
            "arn:grids3:sqs::pair:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&a, bucket, &rules).await.0, 200);
        test_event_arrived(hook).await;
        Pair {
            a,
            _b: b,
            a_id,
            b_id,
            info,
            _short: short,
        }
    }

    /// The process holding the lead, and how many runs took it.
    async fn holder(&self) -> (String, i64) {
        let d = self
            .info
            .find_one(mongodb::bson::doc! {"_id": "lead:notify"})
            .await
            .unwrap()
            .unwrap();
        (
            d.get_str("holder").unwrap().to_owned(),
            d.get_i64("fence").unwrap(),
        )
    }
}

/// Issue 59: "The dispatch lead (30 s) is renewed only between rounds; a slow target can
/// stretch a round past the lead's life, and a second instance then sends the same window in
/// parallel, interleaving one key's sends." The lead shortened to 2 s: the first instance
/// stops with a key's event in hand, right before it sends it, until the lead has expired and
/// the second has taken it over and delivered the key's events. Let go, the first must send
/// nothing more (before: it sent its window again, after the second's).
#[test]
fn a_dispatcher_stalled_past_its_lead_sends_nothing_after_another_took_over() {
    support::run(async {
        let hook = Receiver::start().await;
        let p = Pair::start("nlead", &hook, Duration::from_secs(2), "leadrace").await;
        let s3 = p.a.sdk();
        // The first instance stops at its next send, holding the key's first event.
        let stall = grids3::failpoint::pause("notify.send", Some(&p.a_id));
        let first = put_body(&s3, "leadrace", "k", "one").await;
        let second = put_body(&s3, "leadrace", "k", "two").await;
        stall.reached().await;
        // Its lead expires; the second instance takes it and delivers both, in order.
        assert!(
            support::eventually(60, || async { records_of(&hook, "k").len() >= 2 }).await,
            "the second instance did not deliver the key's events"
        );
        assert_eq!(p.holder().await.0, p.b_id);
        // Let the first go on, and wait until it has given its run up.
        let ended = grids3::failpoint::pause("notify.lead_ended", Some(&p.a_id));
        stall.release();
        ended.reached_n(1, Duration::from_secs(60)).await;
        ended.release();
        // Exactly the second instance's deliveries: the first sent nothing after it.
        assert_eq!(
            etags(&records_of(&hook, "k")),
            vec![first, second],
            "the stalled dispatcher sent after the lead passed to another instance"
        );
    });
}

/// The other half of the same suspicion: a round that lasts longer than the lead (a slow
/// target: 15 events of one key, each answered after 600 ms, 9 s against a lead of 6 s) keeps
/// the lead, renewed as it sends; the second instance never takes over, and every event
/// arrives once, in order (before: the lead expired mid-round, and the second instance sent
/// the key's events again while the first was still sending them).
#[test]
fn a_round_longer_than_the_lead_keeps_it() {
    support::run(async {
        let hook = Receiver::start().await;
        let p = Pair::start("nslow", &hook, Duration::from_secs(6), "slowround").await;
        let fence = p.holder().await.1;
        let s3 = p.a.sdk();
        // Every event of the key queued before the round that sends them starts: the first
        // instance waits at its first send while they are written.
        let stall = grids3::failpoint::pause("notify.send", Some(&p.a_id));
        let mut written = Vec::new();
        for i in 0..15 {
            written.push(put_body(&s3, "slowround", "k", &format!("v{i}")).await);
        }
        stall.reached().await;
        hook.delay_ms
            .store(600, std::sync::atomic::Ordering::SeqCst);
        stall.release();
        let outbox =
            p.a.db
                .collection::<mongodb::bson::Document>("__notify_outbox");
        assert!(
            support::eventually(60, || async {
                records_of(&hook, "k").len() >= 15
                    && outbox
                        .count_documents(mongodb::bson::doc! {"t": "pair:webhook"})
                        .await
                        .unwrap()
                        == 0
            })
            .await,
            "the key's events were not all delivered"
        );
        assert_eq!(etags(&records_of(&hook, "k")), written);
        assert_eq!(p.holder().await, (p.a_id.clone(), fence));
    });
}

/// Issue 59: "An event takes its sequencer before it joins a group commit; two overlapping
/// writes of one key can land in different flushes in reverse order." A PUT of a key stops
/// after its records are made and before they are queued; a second PUT of the key is
/// acknowledged meanwhile (its events committed); then the first goes on. The key's events
/// must arrive in sequencer order (before: the second's, with the newer sequencer, arrived
/// first, and the first's older one after it).
#[test]
fn a_request_overtaken_before_queueing_its_records_takes_the_later_sequencer() {
    support::run(async {
        let hook = Receiver::start().await;
        let url = hook.url();
        let gw = support::gateway_with(&db_name("nseq"), |c| {
            c.notify_targets = vec![webhook("seq", &url, None)];
        })
        .await;
        let s3 = gw.sdk();
        let b = "seqorder";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let rules = queue_rule(
            "s",
            "arn:grids3:sqs::seq:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        assert_eq!(put_config(&gw, b, &rules).await.0, 200);
        test_event_arrived(&hook).await;

        let stall = grids3::failpoint::pause("notify.recorded", Some(b));
        let slow = {
            let s3 = gw.sdk_once();
            tokio::spawn(async move { put_body(&s3, b, "k", "overtaken").await })
        };
        stall.reached().await;
        let overtaking = put_body(&s3, b, "k", "overtaking").await;
        stall.release();
        let overtaken = slow.await.unwrap();
        assert!(
            support::eventually(60, || async { records_of(&hook, "k").len() >= 2 }).await,
            "the key's events did not arrive"
        );
        let got = records_of(&hook, "k");
        assert_eq!(got.len(), 2);
        let seqs: Vec<&str> = got
            .iter()
            .map(|r| r["s3"]["object"]["sequencer"].as_str().unwrap())
            .collect();
        assert!(
            seqs[0] < seqs[1],
            "delivered out of sequencer order: {seqs:?} (ETags {:?})",
            etags(&got)
        );
        // The overtaking write's event was queued first, so it has the older sequencer.
        assert_eq!(etags(&got), vec![overtaking, overtaken]);
    });
}

/// Issue 59: "`x-amz-skip-destination-validation` lets any bucket owner queue events (up to
/// 1M a target, kept a day) for a target name that does not exist yet, delivered to whatever
/// target is later created under that name." A configuration naming a target that does not
/// exist is stored with the header; a write before the target exists queues nothing, and once
/// it is created only later writes reach it (before: the earlier write's event waited in the
/// outbox and was delivered to the new target first).
#[test]
fn events_are_not_queued_for_a_target_that_does_not_exist_yet() {
    support::run(async {
        let hook = Receiver::start().await;
        let gw = support::gateway("nskip").await;
        let s3 = gw.sdk();
        let b = "skipped";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let rules = queue_rule(
            "later",
            "arn:grids3:sqs::late:webhook",
            &["s3:ObjectCreated:*"],
            "",
            "",
        );
        let body = format!("<NotificationConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</NotificationConfiguration>");
        let path = format!("/{b}?notification");
        // Without the header: refused, as AWS refuses it.
        let mut raw = support::Raw::new("PUT", &path);
        raw.body = body.clone().into_bytes();
        let r = raw.send(&gw).await;
        assert_eq!(r.status(), 400);
        assert_eq!(
            support::error_code(&r.text().await.unwrap()),
            "InvalidArgument"
        );
        let mut raw = support::Raw::new("PUT", &path);
        raw.body = body.into_bytes();
        raw.headers
            .push(("x-amz-skip-destination-validation".into(), "true".into()));
        let r = raw.send(&gw).await;
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

        put_body(&s3, b, "k", "before the target").await;
        let outbox = gw
            .db
            .collection::<mongodb::bson::Document>("__notify_outbox");
        assert_eq!(
            outbox
                .count_documents(mongodb::bson::doc! {"t": "late:webhook"})
                .await
                .unwrap(),
            0,
            "an event was queued for a target that does not exist"
        );

        gw.state
            .notify
            .stored()
            .put(&webhook("late", &hook.url(), None))
            .await
            .unwrap();
        let after = put_body(&s3, b, "k", "after the target").await;
        assert!(
            support::eventually(60, || async { !records_of(&hook, "k").is_empty() }).await,
            "the write after the target was created did not reach it"
        );
        // One key's events come in order: an earlier event would have come first.
        assert_eq!(etags(&records_of(&hook, "k")), vec![after]);
    });
}
