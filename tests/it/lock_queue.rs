//! Waiting for a key or upload lock while the queue moves. awscli sends ten parts of one
//! upload at once, and each part's commit takes the upload's lock; on a loaded database the
//! last of the queue waited past the fixed 30 s wait, though no holder had been slow, and
//! the part failed `409 OperationAborted`, which no SDK retries (CI, stop 68). A waiter now
//! gives up only when one holder kept the lock for the whole wait, and then answers `503
//! SlowDown`, which every SDK retries.
//!
//! The holders here are lock documents the test writes itself (as another instance's would
//! be); the waiter stops at the `keylock.saw_holder` fail point once it has seen each one
//! until the next holds the lock, so the hand-overs happen in order whatever the machine's
//! speed.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use grids3::failpoint;
use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

use crate::support::{self, random_bytes};

#[test]
fn a_part_waits_while_the_upload_lock_changes_hands_and_is_told_to_slow_down_when_it_does_not() {
    support::run(async {
        let db = format!(
            "g_lockq_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&db, |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk_once();
        let b = "fp-lock-queue";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("k")
            .send()
            .await
            .unwrap();
        let upload_id = up.upload_id().unwrap().to_string();
        let lock_id = format!("\u{0}upload\u{0}{upload_id}");
        let wait = Duration::from_secs(6);
        let _short = failpoint::shorten("keylock.wait", &lock_id, wait);
        let locks = gw.db.collection::<Document>("__keylocks");
        let far = DateTime::from_millis(DateTime::now().timestamp_millis() + 3_600_000);
        let hold = |token: ObjectId| doc! {"_id": &lock_id, "token": token, "expires": far};

        // Five holders in turn, each for 1.5 s: 7.5 s in all, longer than the wait, but no
        // holder keeps the lock for the wait. The waiter stops where it has seen a holder
        // until the next one holds the lock, so the hand-over never depends on how fast this
        // test or the database is (CI, stop 73: a hand-over 3 s late made the part give up).
        let mut seen = failpoint::pause("keylock.saw_holder", Some(&lock_id));
        locks.insert_one(hold(ObjectId::new())).await.unwrap();
        let data1 = random_bytes(5 << 20, 1);
        let part1 = {
            let (s3, upload_id, data) = (s3.clone(), upload_id.clone(), data1.clone());
            tokio::spawn(async move {
                s3.upload_part()
                    .bucket(b)
                    .key("k")
                    .upload_id(upload_id)
                    .part_number(1)
                    .body(ByteStream::from(data))
                    .send()
                    .await
            })
        };
        let started = tokio::time::Instant::now();
        for n in 1..=5 {
            seen.reached().await;
            tokio::time::sleep(Duration::from_millis(1500)).await;
            assert!(
                !part1.is_finished(),
                "the part gave up while the queue moved"
            );
            if n < 5 {
                // Handed over in one write: a gap would let the waiter in early.
                locks
                    .update_one(
                        doc! {"_id": &lock_id},
                        doc! {"$set": {"token": ObjectId::new()}},
                    )
                    .await
                    .unwrap();
                // The next stop is armed before this one lets the waiter go.
                let next = failpoint::pause("keylock.saw_holder", Some(&lock_id));
                drop(std::mem::replace(&mut seen, next));
            } else {
                locks.delete_one(doc! {"_id": &lock_id}).await.unwrap();
                seen.release();
            }
        }
        let p1 = part1
            .await
            .unwrap()
            .expect("the part committed once the lock was free");
        assert!(
            started.elapsed() > wait,
            "the queue must have outlasted one wait for the test to mean anything"
        );

        // One holder for the whole wait: the part is refused, retryably.
        locks.insert_one(hold(ObjectId::new())).await.unwrap();
        let data2 = random_bytes(1 << 20, 2);
        let refused = s3
            .upload_part()
            .bucket(b)
            .key("k")
            .upload_id(&upload_id)
            .part_number(2)
            .body(ByteStream::from(data2.clone()))
            .send()
            .await
            .expect_err("a part that never got the lock must fail");
        let raw = refused.raw_response().expect("an HTTP answer");
        assert_eq!(raw.status().as_u16(), 503, "{refused:?}");
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&refused),
            Some("SlowDown")
        );
        locks.delete_one(doc! {"_id": &lock_id}).await.unwrap();
        let p2 = s3
            .upload_part()
            .bucket(b)
            .key("k")
            .upload_id(&upload_id)
            .part_number(2)
            .body(ByteStream::from(data2.clone()))
            .send()
            .await
            .expect("the retry commits");
        let parts = [(1, p1.e_tag().unwrap()), (2, p2.e_tag().unwrap())]
            .into_iter()
            .map(|(n, e)| {
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(e)
                    .build()
            })
            .collect::<Vec<_>>();
        s3.complete_multipart_upload()
            .bucket(b)
            .key("k")
            .upload_id(&upload_id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let got = s3.get_object().bucket(b).key("k").send().await.unwrap();
        let body = got.body.collect().await.unwrap().into_bytes();
        assert_eq!(body.len(), data1.len() + data2.len());
        assert!(body[..data1.len()] == data1[..] && body[data1.len()..] == data2[..]);
    });
}
