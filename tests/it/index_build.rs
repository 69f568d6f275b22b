//! Listings and searches while a versioned bucket's index is still being built: the build
//! of a bucket with objects outlives PutBucketVersioning's answer when it takes longer than
//! the request waits, and meanwhile listings read the GridFS revisions. A key deleted then
//! (a delete marker, which GridFS does not see) was listed and found by searches: the
//! boto3 search test saw it in the full suite (KeyError on a deleted key).

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
use grids3::failpoint;

use crate::support;

async fn listed(s3: &aws_sdk_s3::Client, b: &str) -> Vec<(String, i64)> {
    let page = s3.list_objects_v2().bucket(b).send().await.unwrap();
    page.contents()
        .iter()
        .map(|o| (o.key().unwrap().to_owned(), o.size().unwrap()))
        .collect()
}

async fn searched(gw: &support::Gateway, b: &str) -> Vec<String> {
    let path = format!("/{b}?search=size%20%3E%3D%200");
    let r = support::Raw::new("GET", &path).send(gw).await;
    let status = r.status();
    let body = r.text().await.unwrap();
    assert_eq!(status, 200, "{body}");
    body.split("<Key>")
        .skip(1)
        .filter_map(|s| s.split("</Key>").next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_key_deleted_while_the_version_index_is_built_is_neither_listed_nor_found() {
    support::run(async {
        let db = format!(
            "g_ixbuild_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&db, |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let b = "ixbuild";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for k in ["a", "b", "c"] {
            s3.put_object()
                .bucket(b)
                .key(k)
                .body(ByteStream::from_static(b"old"))
                .send()
                .await
                .unwrap();
        }
        // The build is held where it leads, and the request waits for it only briefly.
        let led = failpoint::pause("index.led", Some(b));
        let _brief = failpoint::shorten("versioning.inline_build", b, Duration::from_millis(300));
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
        led.reached().await;
        // During the build: b deleted (a marker), c overwritten, d new.
        s3.delete_object().bucket(b).key("b").send().await.unwrap();
        for (k, body) in [("c", &b"newer"[..]), ("d", &b"fresh!"[..])] {
            s3.put_object()
                .bucket(b)
                .key(k)
                .body(ByteStream::from_static(body))
                .send()
                .await
                .unwrap();
        }
        let want = vec![
            ("a".to_owned(), 3),
            ("c".to_owned(), 5),
            ("d".to_owned(), 6),
        ];
        assert_eq!(listed(&s3, b).await, want, "listed during the build");
        assert_eq!(
            searched(&gw, b).await,
            ["a", "c", "d"],
            "found during the build"
        );
        // The same once the index is complete.
        led.release();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !gw
            .state
            .store
            .meta()
            .get_bucket(b)
            .await
            .unwrap()
            .is_some_and(|x| x.versions_indexed)
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the build never ended"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        gw.state.store.meta().forget_bucket(b);
        assert_eq!(listed(&s3, b).await, want, "listed after the build");
        assert_eq!(
            searched(&gw, b).await,
            ["a", "c", "d"],
            "found after the build"
        );
    });
}
