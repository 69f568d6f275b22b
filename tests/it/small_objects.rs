//! Small objects near the round-trip floor (issue 36):
//! - the small-object cache (`storage::objects::small_cache`): a GET of a small object this
//!   instance knows is one plain `find` and reads no chunk, and a kept chunk never serves
//!   anything but the file it came from, whatever another instance writes;
//! - write registrations: concurrent writes share one new pool instead of registering one
//!   each (`storage::meta::writes`).

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;

use crate::support::{self, random_bytes};

async fn get(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Option<Vec<u8>> {
    match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(o) => Some(
            o.body
                .collect()
                .await
                .unwrap_or_else(|e| panic!("GET {bucket}/{key}: {e:?}"))
                .into_bytes()
                .to_vec(),
        ),
        Err(e) if e.code() == Some("NoSuchKey") => None,
        Err(e) => panic!("GET {key}: {e:?}"),
    }
}

async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, data: &[u8]) -> Option<String> {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap()
        .version_id
}

async fn versioned(s3: &aws_sdk_s3::Client, bucket: &str) {
    s3.create_bucket().bucket(bucket).send().await.unwrap();
    crate::versioning::enable(s3, bucket).await;
}

#[test]
fn a_known_small_object_is_one_find_and_never_stale_across_instances() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (a, counters) = support::gateway_counting_split("smallcache", |_| {}).await;
        let b = support::gateway_on(a.db.name()).await;
        let own = || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let (sa, sb) = (a.sdk(), b.sdk());
        sa.create_bucket().bucket("plain").send().await.unwrap();
        versioned(&sa, "vers").await;
        for bucket in ["plain", "vers"] {
            let (v1, v2, v3) = (
                random_bytes(4096, 1),
                random_bytes(5000, 2),
                random_bytes(300 * 1024, 3),
            );
            // Written here: the GET that follows is one `find` of the files document (or the
            // master), and no chunk is read.
            let id1 = put(&sa, bucket, "k", &v1).await;
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v1);
            support::quiesce(&counters.background).await;
            let (before, logged) = (own(), counters.log.lock().unwrap().len());
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v1);
            let sent: Vec<String> = counters.log.lock().unwrap()[logged..]
                .iter()
                .filter(|c| !c.contains("\"__"))
                .cloned()
                .collect();
            assert_eq!(
                own() - before,
                1,
                "{bucket}: a known small GET sent {sent:?}"
            );
            assert!(
                sent[0].starts_with("find ") && !sent[0].contains("chunks"),
                "{bucket}: {sent:?}"
            );
            // Replaced by another instance: the new bytes, then known again.
            let id2 = put(&sb, bucket, "k", &v2).await;
            let before = own();
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v2, "{bucket}");
            assert_eq!(
                own() - before,
                2,
                "{bucket}: the files document, then chunk 0"
            );
            let before = own();
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v2, "{bucket}");
            assert_eq!(own() - before, 1, "{bucket}: known again");
            // Ranges of it too.
            let r = sa
                .get_object()
                .bucket(bucket)
                .key("k")
                .range("bytes=100-199")
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.body.collect().await.unwrap().into_bytes().as_ref(),
                &v2[100..200]
            );
            // Replaced by a two-chunk object elsewhere: read whole, as large objects are.
            put(&sb, bucket, "k", &v3).await;
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v3, "{bucket}");
            // Deleted elsewhere: gone here too.
            put(&sb, bucket, "k", &v1).await;
            assert_eq!(get(&sa, bucket, "k").await.unwrap(), v1, "{bucket}");
            sb.delete_object()
                .bucket(bucket)
                .key("k")
                .send()
                .await
                .unwrap();
            assert_eq!(
                get(&sa, bucket, "k").await,
                None,
                "{bucket}: deleted elsewhere"
            );
            if bucket == "vers" {
                // Older versions by id, each its own bytes.
                for (id, want) in [(id1, &v1), (id2, &v2)] {
                    let id = id.expect("a version id");
                    for _ in 0..2 {
                        let o = sa
                            .get_object()
                            .bucket(bucket)
                            .key("k")
                            .version_id(&id)
                            .send()
                            .await
                            .unwrap();
                        assert_eq!(&o.body.collect().await.unwrap().into_bytes().to_vec(), want);
                    }
                }
            }
        }
        // Written back in place by another GridFS writer (PyMongo-style: a new files document
        // under a new id, the old one deleted): the new bytes.
        let v4 = random_bytes(777, 4);
        put(&sa, "plain", "ext", &v4).await;
        assert_eq!(get(&sa, "plain", "ext").await.unwrap(), v4);
        let files = a.db.collection::<mongodb::bson::Document>("plain.files");
        let chunks = a.db.collection::<mongodb::bson::Document>("plain.chunks");
        let old = files
            .find_one(mongodb::bson::doc! {"filename": "ext"})
            .await
            .unwrap()
            .unwrap();
        let mut new = old.clone();
        let new_id = mongodb::bson::oid::ObjectId::new();
        new.insert("_id", new_id);
        new.insert("length", 3i64);
        new.insert("uploadDate", mongodb::bson::DateTime::now());
        // (Another writer's file: none of grids3's attributes, such as the checksums.)
        new.remove("metadata");
        chunks
            .insert_one(mongodb::bson::doc! {"files_id": new_id, "n": 0,
            "data": mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: b"new".to_vec() }})
            .await
            .unwrap();
        files.insert_one(new).await.unwrap();
        files
            .delete_one(mongodb::bson::doc! {"_id": old.get("_id").unwrap()})
            .await
            .unwrap();
        assert_eq!(get(&sa, "plain", "ext").await.unwrap(), b"new");
        assert_eq!(get(&sa, "plain", "ext").await.unwrap(), b"new");
        // Rewritten under the same `_id` (GridFS allows it: PyMongo's `delete(id)` then
        // `put(..., _id=id)`), with bytes of the same length and of another length: the
        // upload date tells the files apart.
        for body in [&b"NEW"[..], &b"longer now"[..]] {
            let old = files
                .find_one(mongodb::bson::doc! {"filename": "ext"})
                .await
                .unwrap()
                .unwrap();
            let id = old.get("_id").unwrap().clone();
            chunks
                .delete_many(mongodb::bson::doc! {"files_id": id.clone()})
                .await
                .unwrap();
            files
                .delete_one(mongodb::bson::doc! {"_id": id.clone()})
                .await
                .unwrap();
            let later = mongodb::bson::DateTime::from_millis(
                old.get_datetime("uploadDate").unwrap().timestamp_millis() + 1000,
            );
            chunks
                .insert_one(mongodb::bson::doc! {"files_id": id.clone(), "n": 0,
                "data": mongodb::bson::Binary {
                    subtype: mongodb::bson::spec::BinarySubtype::Generic,
                    bytes: body.to_vec() }})
                .await
                .unwrap();
            files
                .insert_one(mongodb::bson::doc! {"_id": id, "filename": "ext",
                "length": body.len() as i64, "chunkSize": 261120,
                "uploadDate": later})
                .await
                .unwrap();
            assert_eq!(get(&sa, "plain", "ext").await.unwrap(), body);
            assert_eq!(get(&sa, "plain", "ext").await.unwrap(), body);
        }
    });
}

#[test]
fn with_the_cache_off_a_small_get_is_still_one_query() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (a, counters) =
            support::gateway_counting_split("nocache", |c| c.small_object_cache_mib = 0).await;
        let own = || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let s3 = a.sdk();
        s3.create_bucket().bucket("off").send().await.unwrap();
        let v = random_bytes(4096, 9);
        put(&s3, "off", "k", &v).await;
        assert_eq!(get(&s3, "off", "k").await.unwrap(), v);
        for _ in 0..2 {
            support::quiesce(&counters.background).await;
            let (before, logged) = (own(), counters.log.lock().unwrap().len());
            assert_eq!(get(&s3, "off", "k").await.unwrap(), v);
            let sent: Vec<String> = counters.log.lock().unwrap()[logged..]
                .iter()
                .filter(|c| !c.contains("\"__"))
                .cloned()
                .collect();
            assert_eq!(sent.len(), 1, "{sent:?}");
            assert_eq!(own() - before, 1);
            assert!(sent[0].starts_with("aggregate "), "the join: {sent:?}");
        }
    });
}

#[test]
fn concurrent_writes_register_one_pool_between_them() {
    use grids3::failpoint;
    support::run(async {
        let (gw, counters) = support::gateway_counting_split("pools", |_| {}).await;
        let s3 = gw.sdk();
        let bucket = "pool-herd";
        s3.create_bucket().bucket(bucket).send().await.unwrap();
        let pools = || {
            counters
                .log
                .lock()
                .unwrap()
                .iter()
                .filter(|c| c.as_str() == "insert \"__writes\"")
                .count()
        };
        let before = pools();
        let data = random_bytes(1000, 5);
        let spawn_put = |i: usize| {
            let (s3, data) = (s3.clone(), data.clone());
            tokio::spawn(async move { put(&s3, bucket, &format!("k{i}"), &data).await })
        };
        // The first write stops while it registers the bucket's first pool; 23 more then
        // arrive at the gate while it holds it, and are let through to it together.
        let registering = failpoint::pause("writes.new_pool", Some(bucket));
        let first = spawn_put(0);
        registering.reached().await;
        let waiting = failpoint::pause_times("writes.pool_wait", Some(bucket), 23);
        let rest: Vec<_> = (1..24).map(spawn_put).collect();
        waiting
            .reached_n(23, std::time::Duration::from_secs(60))
            .await;
        drop(waiting);
        drop(registering);
        first.await.unwrap();
        for p in rest {
            p.await.unwrap();
        }
        // (Without the gate each of the 23 registers a pool of its own: 24.)
        assert_eq!(pools() - before, 1, "24 writes, fewer than a pool's 64 ids");
        for i in 0..24 {
            assert_eq!(get(&s3, bucket, &format!("k{i}")).await.unwrap(), data);
        }
    });
}
