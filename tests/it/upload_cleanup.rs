//! An upload whose chunk insert outlives its time limit: the PUT fails, and the clean-up of
//! its chunks waits for that insert before it deletes. Until the twelfth session of issue 36
//! the insert's task was dropped at the timeout and went on detached, so the clean-up could
//! delete the upload's chunks before the late insert landed, and the chunks it landed were
//! named by nothing once the write's registration was gone (found in review, stop 56).

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use grids3::failpoint;

use crate::support::{self, random_bytes};

#[test]
fn a_chunk_insert_that_times_out_is_cleaned_up_after_it_lands() {
    support::run(async {
        let db = format!(
            "g_joinlate_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&db, |c| c.janitor_interval = 3600).await;
        // One attempt: a retried PUT would store the object afresh.
        let s3 = gw.sdk_once();
        let b = "fp-join-late";
        s3.create_bucket().bucket(b).send().await.unwrap();

        // The first batch's insert stops before it is sent, and the upload waits 300 ms for
        // it (the time limit is a minute outside tests).
        let insert = failpoint::pause("upload.insert", Some(b));
        let cleaned = failpoint::pause("upload.cleaned", Some(b));
        let _short = failpoint::shorten("upload.join", b, Duration::from_millis(300));
        let put = tokio::spawn(async move {
            s3.put_object()
                .bucket(b)
                .key("late")
                .body(ByteStream::from(random_bytes(9 << 20, 36)))
                .send()
                .await
        });
        insert.reached().await;
        // While that insert is still to land, the clean-up must not delete: not in the request
        // (the old code deleted there, and stopped here with the PUT unanswered), and not
        // after it. The second window only catches the old behaviour; the code under test
        // cannot get here before the release below, whatever the machine's speed.
        tokio::select! {
            _ = cleaned.reached() => panic!("the clean-up deleted while an insert could still land"),
            r = put => assert!(r.unwrap().is_err(), "a PUT whose insert timed out must fail"),
        }
        assert_eq!(gw.file_count(b).await, 0, "nothing was published");
        tokio::select! {
            _ = cleaned.reached() => panic!("the clean-up deleted while an insert could still land"),
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
        insert.release();
        cleaned.reached().await;
        assert_eq!(
            gw.chunk_count(b).await,
            0,
            "chunks of the failed PUT were left behind"
        );
        cleaned.release();
    });
}
