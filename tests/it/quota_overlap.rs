//! What a limit costs a small PUT (issue 62): its hold travels with its revision lookup (the
//! hold of a body that is stored only when it publishes is sent when its length is declared
//! and awaited only before anything is stored). Here the hold's batch is paused (fail point
//! `quota.hold_batch`): the PUT's revision lookup must go meanwhile, and nothing of the
//! object may be sent to be stored until the hold is answered, whether it fits or not.

use std::sync::{Arc, Mutex};

use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::{doc, Document};
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;

use crate::quota::{assert_counted_as_recounted, counters};
use crate::quota_account::holds_settled;
use crate::support;

/// The commands a gateway sent: name, and the command as text.
type Sent = Arc<Mutex<Vec<(String, Document)>>>;

async fn watched_gateway(prefix: &str) -> (support::Gateway, Sent) {
    let sent: Sent = Default::default();
    let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
        .await
        .unwrap();
    let seen = sent.clone();
    opts.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
        if let CommandEvent::Started(e) = ev {
            seen.lock()
                .unwrap()
                .push((e.command_name.clone(), e.command.clone()));
        }
    }));
    let client = mongodb::Client::with_options(opts).unwrap();
    let name = support::fresh_db(prefix).await.name().to_owned();
    let gw = support::gateway_with_client(client, &name, |c| {
        c.janitor_interval = 3600;
        c.mongodb_uri = Some(support::db().uri.clone());
    })
    .await;
    (gw, sent)
}

/// Whether `c` is the revision lookup of `key` in `bucket`.
fn is_lookup(c: &(String, Document), bucket: &str, key: &str) -> bool {
    c.0 == "find"
        && c.1.get_str("find").ok() == Some(&format!("{bucket}.files"))
        && c.1
            .get_document("filter")
            .is_ok_and(|f| f.get_str("filename").ok() == Some(key))
}

/// Whether `c` stores anything into `bucket`'s files or chunks.
fn stores(c: &(String, Document), bucket: &str) -> bool {
    let coll = |n: &str| n == format!("{bucket}.files") || n == format!("{bucket}.chunks");
    match c.0.as_str() {
        "insert" | "update" | "findAndModify" => c.1.get_str(&c.0).is_ok_and(coll),
        "bulkWrite" => c.1.get_array("nsInfo").is_ok_and(|ns| {
            ns.iter().any(|n| {
                n.as_document()
                    .and_then(|d| d.get_str("ns").ok())
                    .is_some_and(|ns| ns.split_once('.').is_some_and(|(_, c)| coll(c)))
            })
        }),
        _ => false,
    }
}

pub(crate) async fn chunks_of(gw: &support::Gateway, bucket: &str) -> u64 {
    gw.db
        .collection::<Document>(&format!("{bucket}.chunks"))
        .count_documents(doc! {})
        .await
        .unwrap()
}

#[test]
fn a_small_puts_hold_travels_with_its_lookup_and_nothing_is_stored_before_it() {
    support::run(async {
        use grids3::failpoint;
        let (gw, sent) = watched_gateway("qoverlap").await;
        let s3 = gw.sdk();
        let b = "overlap";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let limits = grids3::storage::meta::Limits {
            bytes: Some(10_000),
            objects: None,
        };
        assert!(gw.state.store.set_bucket_limits(b, limits).await.unwrap());
        let put = |key: &'static str, n: usize| {
            let s3 = s3.clone();
            tokio::spawn(async move {
                s3.put_object()
                    .bucket(b)
                    .key(key)
                    .body(ByteStream::from(vec![7_u8; n]))
                    .send()
                    .await
            })
        };
        put("first", 1000).await.unwrap().unwrap();
        assert!(holds_settled(&gw, b, 10).await);

        // Fits: the lookup goes while the hold waits; the object is stored after it.
        for (key, n, fits) in [("fits", 4000, true), ("over", 6000, false)] {
            sent.lock().unwrap().clear();
            let chunks = chunks_of(&gw, b).await;
            let paused = failpoint::pause("quota.hold_batch", Some(b));
            let putting = put(key, n);
            paused.reached().await;
            assert!(
                support::eventually(10, || async {
                    sent.lock().unwrap().iter().any(|c| is_lookup(c, b, key))
                })
                .await,
                "{key}: the revision lookup waited for the hold"
            );
            let early: Vec<_> = sent
                .lock()
                .unwrap()
                .iter()
                .filter(|c| stores(c, b))
                .cloned()
                .collect();
            assert!(early.is_empty(), "{key}: stored before its hold: {early:?}");
            assert_eq!(chunks_of(&gw, b).await, chunks, "{key}");
            paused.release();
            let answer = putting.await.unwrap();
            if fits {
                answer.unwrap();
                assert_eq!(chunks_of(&gw, b).await, chunks + 1, "{key}");
            } else {
                let e = answer.unwrap_err();
                let code = e.into_service_error().meta().code().map(str::to_owned);
                assert_eq!(code.as_deref(), Some("XMinioAdminBucketQuotaExceeded"));
                assert_eq!(chunks_of(&gw, b).await, chunks, "{key}: nothing left");
                assert!(
                    !sent.lock().unwrap().iter().any(|c| stores(c, b)),
                    "{key}: a refused body was sent to be stored"
                );
            }
        }
        assert_eq!(counters(&gw, b).await, (5000, 2, 0, 0, 0, 0));
        assert_counted_as_recounted(&gw, b).await;
    });
}

/// A body that fails on its way, while its hold is still unanswered: the hold is given back
/// once it is stored, and nothing stays counted or reserved.
#[test]
fn a_hold_on_its_way_is_given_back_when_its_body_fails() {
    support::run(async {
        use grids3::failpoint;
        let (gw, _sent) = watched_gateway("qoverlapfail").await;
        let s3 = gw.sdk_once();
        let b = "overlapfail";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let limits = grids3::storage::meta::Limits {
            bytes: Some(10_000),
            objects: None,
        };
        assert!(gw.state.store.set_bucket_limits(b, limits).await.unwrap());
        let url = s3
            .put_object()
            .bucket(b)
            .key("cut")
            .presigned(
                aws_sdk_s3::presigning::PresigningConfig::expires_in(
                    std::time::Duration::from_secs(300),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        let uri: reqwest::Url = url.uri().parse().unwrap();
        let target = format!("{}?{}", uri.path(), uri.query().unwrap_or_default());
        let paused = failpoint::pause("quota.hold_batch", Some(b));
        {
            use tokio::io::AsyncWriteExt;
            let mut conn = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
            let host = uri.host_str().unwrap_or("127.0.0.1").to_owned()
                + &uri.port().map(|p| format!(":{p}")).unwrap_or_default();
            let head =
                format!("PUT {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 4000\r\n\r\n");
            conn.write_all(head.as_bytes()).await.unwrap();
            conn.write_all(&[7_u8; 1000]).await.unwrap();
            paused.reached().await;
            // The client goes away with 3000 bytes unsent.
        }
        paused.release();
        assert!(
            holds_settled(&gw, b, 10).await,
            "the hold of a failed body stayed"
        );
        assert_eq!(counters(&gw, b).await, (0, 0, 0, 0, 0, 0));
        assert_eq!(chunks_of(&gw, b).await, 0);
    });
}
