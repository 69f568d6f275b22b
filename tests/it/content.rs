//! Content-addressed buckets (`x-grids3-storage-mode: content`): boto3, the independent
//! v7files-format reader and PyMongo (`tests/py/content.py`); PUT and DELETE of identical
//! bytes racing on two instances while the janitor reclaims.

use aws_sdk_s3::primitives::ByteStream;

use crate::support;

/// A gateway that reclaims unreferenced contents after a second, checking every second.
async fn gateway_fast_gc(db: &str) -> support::Gateway {
    support::gateway_with(db, |c| {
        c.content_grace = 1;
        c.janitor_interval = 1;
    })
    .await
}

fn fresh_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// Creates a content-addressed bucket through the SDK (the mode is a grids3 header).
async fn create_content_bucket(s3: &aws_sdk_s3::Client, name: &str) {
    s3.create_bucket()
        .bucket(name)
        .customize()
        .mutate_request(|r| {
            r.headers_mut().insert("x-grids3-storage-mode", "content");
        })
        .send()
        .await
        .unwrap();
}

#[test]
fn content_buckets_as_boto3_the_v7files_reader_and_pymongo_see_them() {
    support::run(async {
        let gw = gateway_fast_gc(&fresh_name("content")).await;
        let db = gw.db.name().to_owned();
        let inline = gw.state.config.content_inline_max.to_string();
        support::run_py_checks(
            &gw,
            "content.py",
            "content",
            &[&support::db().uri, &db, &inline],
        )
        .await;
    });
}

/// Two instances PUT and DELETE the same bytes under many keys while both janitors reclaim
/// unreferenced contents after a one-second grace: every object that exists at the end reads
/// back whole, and once nothing references the content it is gone.
#[test]
fn reclaim_never_races_a_put_of_the_same_bytes() {
    support::run(async {
        let name = fresh_name("contentrace");
        let a = gateway_fast_gc(&name).await;
        let b = gateway_fast_gc(&name).await;
        create_content_bucket(&a.sdk(), "race").await;
        // Larger than a chunk (a blob, adopted under the content's lock) and one that is a
        // content document.
        let bodies = [
            support::random_bytes(600 * 1024, 21),
            support::random_bytes(40 * 1024, 22),
        ];
        let clients = [a.sdk(), b.sdk()];
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
        let mut tasks = Vec::new();
        for w in 0..6usize {
            let s3 = clients[w % 2].clone();
            let body = bodies[w % 2].clone();
            tasks.push(tokio::spawn(async move {
                let mut i = 0usize;
                while std::time::Instant::now() < deadline {
                    let key = format!("w{w}-{}", i % 3);
                    s3.put_object()
                        .bucket("race")
                        .key(&key)
                        .body(ByteStream::from(body.clone()))
                        .send()
                        .await
                        .unwrap();
                    if i % 2 == 1 {
                        s3.delete_object()
                            .bucket("race")
                            .key(&key)
                            .send()
                            .await
                            .unwrap();
                    }
                    i += 1;
                }
                i
            }));
        }
        let mut writes = 0;
        for t in tasks {
            writes += t.await.unwrap();
        }
        assert!(writes > 20, "the writers did work: {writes}");
        let s3 = a.sdk();
        let listed = s3
            .list_objects_v2()
            .bucket("race")
            .send()
            .await
            .unwrap()
            .contents
            .unwrap_or_default();
        assert!(!listed.is_empty());
        for o in &listed {
            let key = o.key().unwrap();
            let w: usize = key[1..2].parse().unwrap();
            let got = s3
                .get_object()
                .bucket("race")
                .key(key)
                .send()
                .await
                .unwrap()
                .body
                .collect()
                .await
                .unwrap()
                .into_bytes();
            assert!(
                got.as_ref() == bodies[w % 2].as_slice(),
                "{key} reads whole"
            );
        }
        // Delete everything: within a few janitor passes every content is reclaimed.
        for o in &listed {
            s3.delete_object()
                .bucket("race")
                .key(o.key().unwrap())
                .send()
                .await
                .unwrap();
        }
        let gone = async {
            for _ in 0..60 {
                let blobs = a.file_count("race._blobs").await;
                let docs =
                    a.db.collection::<mongodb::bson::Document>("race._content")
                        .count_documents(mongodb::bson::doc! {})
                        .await
                        .unwrap();
                if blobs == 0 && docs == 0 && a.chunk_count("race._blobs").await == 0 {
                    return true;
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
            false
        };
        assert!(gone.await, "unreferenced contents are reclaimed");
    });
}
