//! Issue 35 item 5: a lifecycle pass cut short resumes where it stopped (its position is kept
//! in the database), so every rule of every bucket runs to the end, and an expiration never
//! hides a PUT that landed after the pass judged the key.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BucketLifecycleConfiguration, BucketVersioningStatus, ExpirationStatus, LifecycleExpiration,
    LifecycleRule, LifecycleRuleFilter, VersioningConfiguration,
};
use grids3::failpoint;

use crate::support;

async fn versioned_with_expiry(s3: &aws_sdk_s3::Client, b: &str) {
    s3.create_bucket().bucket(b).send().await.unwrap();
    s3.put_bucket_versioning()
        .bucket(b)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    s3.put_bucket_lifecycle_configuration()
        .bucket(b)
        .lifecycle_configuration(
            BucketLifecycleConfiguration::builder()
                .rules(
                    LifecycleRule::builder()
                        .id("expire")
                        .status(ExpirationStatus::Enabled)
                        .filter(LifecycleRuleFilter::builder().prefix("").build())
                        .expiration(LifecycleExpiration::builder().days(1).build())
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
}

async fn current_keys(s3: &aws_sdk_s3::Client, b: &str) -> usize {
    s3.list_objects_v2()
        .bucket(b)
        .send()
        .await
        .unwrap()
        .contents()
        .len()
}

/// One lifecycle pass, led by this gateway (waiting for a cut-off predecessor's lead to
/// lapse), stopped after its first batch when `cut` is set.
async fn one_pass(gw: &support::Gateway, bucket: &str, cut: bool) {
    let lead_for = Duration::from_millis(400);
    for _ in 0..100 {
        let stop = cut.then(|| failpoint::pause("lifecycle.batch", Some(bucket)));
        let st = gw.state.clone();
        let task = tokio::spawn(async move {
            grids3::janitor::lifecycle::pass(&st, lead_for)
                .await
                .unwrap()
        });
        match stop {
            Some(stop) => {
                let reached = tokio::time::timeout(Duration::from_secs(20), stop.reached()).await;
                if reached.is_ok() {
                    // Cut off after its first batch, as a pass whose lead ran out is.
                    task.abort();
                    let _ = task.await;
                    return;
                }
                let out = task.await.unwrap();
                assert!(!out.led, "a led pass never reached its first batch");
            }
            None => {
                if task.await.unwrap().led {
                    return;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no lifecycle pass could lead");
}

#[test]
fn a_pass_cut_short_resumes_and_a_racing_put_is_never_hidden() {
    support::run(async {
        let gw = support::gateway_with(
            &format!(
                "g_lcruns_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            ),
            |c| {
                c.janitor_interval = 3600;
                c.lifecycle_day_secs = 1;
                c.lifecycle_batch = 12;
            },
        )
        .await;
        let s3 = gw.sdk();
        let b = "lc-resume";
        versioned_with_expiry(&s3, b).await;
        for i in 0..60 {
            s3.put_object()
                .bucket(b)
                .key(format!("k{i:03}"))
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
        }
        // A lifecycle "day" is a second here: every key is due once it has passed.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Each pass is cut off after one batch of 12 keys; resuming, five of them cover the
        // bucket. (Starting over, every pass would judge the first 12 keys again.)
        let mut passes = 0;
        while current_keys(&s3, b).await > 0 {
            passes += 1;
            assert!(
                passes <= 8,
                "{} keys still current after {} cut-off passes",
                current_keys(&s3, b).await,
                passes - 1
            );
            one_pass(&gw, b, true).await;
        }
        assert!(passes >= 5, "60 keys in batches of 12 took {passes} passes");

        // An uncut pass finishes the round (the last cut one stopped inside the bucket).
        one_pass(&gw, b, false).await;

        // A PUT between the pass's judgement and its delete marker stays current.
        let r = "lc-race";
        versioned_with_expiry(&s3, r).await;
        s3.put_object()
            .bucket(r)
            .key("k")
            .body(ByteStream::from_static(b"old"))
            .send()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let judged = failpoint::pause("lifecycle.judged", Some(r));
        let st = gw.state.clone();
        let task = tokio::spawn(async move {
            loop {
                let out = grids3::janitor::lifecycle::pass(&st, Duration::from_secs(30))
                    .await
                    .unwrap();
                if out.led {
                    return out;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        judged.reached().await;
        s3.put_object()
            .bucket(r)
            .key("k")
            .body(ByteStream::from_static(b"new"))
            .send()
            .await
            .unwrap();
        drop(judged);
        task.await.unwrap();
        let got = s3.get_object().bucket(r).key("k").send().await.unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"new",
            "the fresh PUT is current, not hidden behind a delete marker"
        );
    });
}
