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
        // Encrypted objects in content buckets (SSE-S3 needs a master key).
        c.master_key = Some("content test master key".into());
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

/// The storage mode through the admin API and CLI: chosen at creation, shown afterwards.
#[test]
fn storage_mode_through_the_admin_cli() {
    support::run(async {
        let gw = support::gateway(&fresh_name("contentadmin")).await;
        // The CLI is a process of its own; the gateway runs on this runtime, so wait off it.
        let endpoint = gw.endpoint();
        let (made, shown, plain, refused) = tokio::task::spawn_blocking(move || {
            let cli = |args: &[&str]| support::admin_cli(&endpoint, args);
            let made = cli(&["create-bucket", "cas-admin", "--storage", "content"]);
            let shown = cli(&["bucket-info", "cas-admin"]);
            cli(&["create-bucket", "plain-admin"]);
            let plain = cli(&["bucket-info", "plain-admin"]);
            let refused = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
                .args(["admin", "create-bucket", "bad-mode", "--storage", "weird"])
                .env("GRIDS3_ENDPOINT", &endpoint)
                .env("GRIDS3_ROOT_ACCESS_KEY", support::AK)
                .env("GRIDS3_ROOT_SECRET_KEY", support::SK)
                .output()
                .unwrap();
            (made, shown, plain, refused)
        })
        .await
        .unwrap();
        assert_eq!(made["storage"], "content", "{made}");
        assert_eq!(shown["storage"], "content", "{shown}");
        assert_eq!(shown["name"], "cas-admin");
        assert_eq!(plain["storage"], "gridfs", "{plain}");
        assert!(!refused.status.success(), "an unknown mode is refused");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&refused.stdout),
            String::from_utf8_lossy(&refused.stderr)
        );
        assert!(said.contains("InvalidArgument"), "{said}");
        // The bucket works through S3 in its mode: a small object lives in its document.
        let s3 = gw.sdk();
        s3.put_object()
            .bucket("cas-admin")
            .key("k")
            .body(ByteStream::from_static(b"hello"))
            .send()
            .await
            .unwrap();
        let d = gw
            .db
            .collection::<mongodb::bson::Document>("cas-admin.files")
            .find_one(mongodb::bson::doc! {"filename": "k"})
            .await
            .unwrap()
            .unwrap();
        assert_eq!(d.get_binary_generic("in").unwrap(), b"hello");
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

/// An object small enough to live in its own document: a GET is one MongoDB round trip (the
/// object's document), a PUT of a new key two (the key's revisions, the document).
#[test]
fn an_inline_object_takes_one_round_trip_to_read() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (gw, support::Counters { all, lookups, .. }) =
            support::gateway_counting_split("inline", |_| {}).await;
        let s3 = gw.sdk();
        create_content_bucket(&s3, "inl").await;
        let count = || all.load(Ordering::SeqCst) - lookups.load(Ordering::SeqCst);
        let put = |key: &'static str| {
            s3.put_object()
                .bucket("inl")
                .key(key)
                .body(ByteStream::from_static(b"small and inline"))
                .send()
        };
        let get = || s3.get_object().bucket("inl").key("k").send();
        // Warm the caches and the registration pool; let the settling pass.
        put("warm").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let before = count();
        put("k").await.unwrap();
        let put_count = count() - before;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let before = count();
        let body = get()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        let get_count = count() - before;
        assert_eq!(body.as_ref(), b"small and inline");
        println!("inline object (bucket lookups aside): PUT of a new key {put_count} commands, GET {get_count}");
        assert_eq!(get_count, 1, "a GET of an inline object");
        assert_eq!(put_count, 2, "a PUT of a new inline object");
    });
}

/// `grids3 admin convert-bucket` both ways on a bucket with small, large, duplicate,
/// multipart and versioned objects, while a reader GETs every object throughout and a
/// multipart upload begun before the conversion completes after it. Converted to content:
/// every object points at a content (duplicates share one), and the GridFS chunks go.
/// Back to GridFS: PyMongo's GridFSBucket reads every object, and once the grace period has
/// passed the contents and references are gone.
#[test]
fn a_bucket_converts_both_ways_while_it_is_read() {
    use mongodb::bson::{doc, Document};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    support::run(async {
        let gw = gateway_fast_gc(&fresh_name("convert")).await;
        let s3 = gw.sdk();
        let b = "conv";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let mut objects: Vec<(String, Vec<u8>)> = vec![
            ("tiny".into(), b"tiny object".to_vec()),
            ("text.txt".into(), b"some text, ".repeat(9000)),
            (
                "large".into(),
                support::random_bytes(3 * 1024 * 1024 + 5, 1),
            ),
        ];
        objects.push(("large-again".into(), objects[2].1.clone()));
        for (k, v) in &objects {
            s3.put_object()
                .bucket(b)
                .key(k)
                .content_type(if k.ends_with(".txt") {
                    "text/plain"
                } else {
                    "application/octet-stream"
                })
                .body(ByteStream::from(v.clone()))
                .send()
                .await
                .unwrap();
        }
        // A completed multipart object, and an upload left open across the conversion.
        let mp: Vec<u8> = support::random_bytes(5 * 1024 * 1024 + 3, 2);
        let complete = |key: &'static str, up: String, etag: String| {
            let s3 = s3.clone();
            async move {
                s3.complete_multipart_upload()
                    .bucket(b)
                    .key(key)
                    .upload_id(up)
                    .multipart_upload(
                        aws_sdk_s3::types::CompletedMultipartUpload::builder()
                            .parts(
                                aws_sdk_s3::types::CompletedPart::builder()
                                    .part_number(1)
                                    .e_tag(etag)
                                    .build(),
                            )
                            .build(),
                    )
                    .send()
                    .await
                    .unwrap();
            }
        };
        let mut uploads = Vec::new();
        for key in ["mp", "mp-open"] {
            let up = s3
                .create_multipart_upload()
                .bucket(b)
                .key(key)
                .send()
                .await
                .unwrap();
            let id = up.upload_id().unwrap().to_owned();
            let part = s3
                .upload_part()
                .bucket(b)
                .key(key)
                .upload_id(&id)
                .part_number(1)
                .body(ByteStream::from(mp.clone()))
                .send()
                .await
                .unwrap();
            uploads.push((key, id, part.e_tag().unwrap().to_owned()));
        }
        let (k, id, etag) = uploads.remove(0);
        complete(k, id, etag).await;
        objects.push(("mp".into(), mp.clone()));
        // Two versions of one key.
        s3.put_bucket_versioning()
            .bucket(b)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let mut versions = Vec::new();
        for body in [b"version one".to_vec(), support::random_bytes(400_000, 3)] {
            let r = s3
                .put_object()
                .bucket(b)
                .key("v")
                .body(ByteStream::from(body.clone()))
                .send()
                .await
                .unwrap();
            versions.push((r.version_id().unwrap().to_owned(), body));
        }
        objects.push(("v".into(), versions[1].1.clone()));

        // A reader GETs every object (and the old version) until told to stop.
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let reads = std::sync::Arc::new(AtomicU64::new(0));
        let reader = {
            let (s3, objects, stop, reads) =
                (s3.clone(), objects.clone(), stop.clone(), reads.clone());
            let old = versions[0].clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::SeqCst) {
                    for (k, v) in &objects {
                        let got = s3.get_object().bucket(b).key(k).send().await.unwrap();
                        let got = got.body.collect().await.unwrap().into_bytes();
                        assert!(
                            got.as_ref() == v.as_slice(),
                            "{k} read whole during the conversion"
                        );
                        reads.fetch_add(1, Ordering::SeqCst);
                    }
                    let got = s3
                        .get_object()
                        .bucket(b)
                        .key("v")
                        .version_id(&old.0)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(
                        got.body.collect().await.unwrap().into_bytes().as_ref(),
                        old.1.as_slice()
                    );
                }
            })
        };
        let endpoint = gw.endpoint();
        let cli = move |to: &'static str| {
            let endpoint = endpoint.clone();
            tokio::task::spawn_blocking(move || {
                support::admin_cli(&endpoint, &["convert-bucket", b, "--to", to])
            })
        };
        let files = gw.db.collection::<Document>(&format!("{b}.files"));
        let chunks = gw.db.collection::<Document>(&format!("{b}.chunks"));
        let before = reads.load(Ordering::SeqCst);
        let info = cli("content").await.unwrap();
        assert_eq!(
            (info["storage"].as_str(), info["converting"].as_bool()),
            (Some("content"), Some(false)),
            "{info}"
        );
        let left = files
            .count_documents(doc! {"in": {"$exists": false}, "sha": {"$exists": false}})
            .await
            .unwrap();
        assert_eq!(left, 0, "every object points at a content");
        let large = |k: &str| {
            let files = files.clone();
            let k = k.to_owned();
            async move {
                files
                    .find_one(doc! {"filename": k})
                    .await
                    .unwrap()
                    .unwrap()
                    .get_binary_generic("sha")
                    .unwrap()
                    .clone()
            }
        };
        assert_eq!(
            large("large").await,
            large("large-again").await,
            "duplicates share one content"
        );
        let blobs = gw.db.collection::<Document>(&format!("{b}._blobs.files"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while chunks.count_documents(doc! {}).await.unwrap() > 0
            && std::time::Instant::now() < deadline
        {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        // The open upload's staged chunks stay until it completes.
        let staged = chunks.count_documents(doc! {}).await.unwrap();
        assert_eq!(
            staged, 6,
            "only the open upload's staged chunks are left in {b}.chunks"
        );
        let report = grids3::janitor::fsck::run(&gw.state.store, false)
            .await
            .unwrap();
        assert_eq!(
            report.problems(),
            0,
            "fsck after the conversion to content:\n{}",
            report.render()
        );
        let (k, id, etag) = uploads.remove(0);
        complete(k, id, etag).await;
        objects.push(("mp-open".into(), mp.clone()));
        let got = s3
            .get_object()
            .bucket(b)
            .key("mp-open")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            mp.as_slice(),
            "an upload begun before the conversion completes after it"
        );
        assert!(blobs.count_documents(doc! {}).await.unwrap() >= 2);

        let info = cli("gridfs").await.unwrap();
        assert_eq!(
            (info["storage"].as_str(), info["converting"].as_bool()),
            (Some("gridfs"), Some(false)),
            "{info}"
        );
        let pointing = files
            .count_documents(doc! {"$or": [{"in": {"$exists": true}}, {"sha": {"$exists": true}}]})
            .await
            .unwrap();
        assert_eq!(pointing, 0, "no object points at a content any more");
        stop.store(true, Ordering::SeqCst);
        reader.await.unwrap();
        assert!(
            reads.load(Ordering::SeqCst) > before,
            "the reader read during the conversions"
        );
        // PyMongo reads every object as a standard GridFS file.
        let tmp = tempfile::tempdir().unwrap();
        let keys: Vec<String> = objects.iter().map(|(k, _)| k.clone()).collect();
        let commands: Vec<serde_json::Value> = keys
            .iter()
            .map(|k| serde_json::json!({"op": "get", "name": k, "path": tmp.path().join(k)}))
            .collect();
        let db_name = gw.db.name().to_owned();
        tokio::task::spawn_blocking(move || {
            crate::gridfs_interop::pymongo_gridfs(&db_name, b, serde_json::Value::Array(commands))
        })
        .await
        .unwrap();
        for (k, v) in &objects {
            assert_eq!(
                &std::fs::read(tmp.path().join(k)).unwrap(),
                v,
                "PyMongo reads {k}"
            );
        }
        let old = s3
            .get_object()
            .bucket(b)
            .key("v")
            .version_id(&versions[0].0)
            .send()
            .await
            .unwrap();
        assert_eq!(
            old.body.collect().await.unwrap().into_bytes().as_ref(),
            versions[0].1.as_slice(),
            "an old version after both conversions"
        );
        // After the grace period the janitor reclaims every content and forgets them.
        let refs = gw.db.collection::<Document>(&format!("{b}._refs"));
        let meta = gw.db.collection::<Document>("__metastore");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let flag = meta
                .find_one(doc! {"_id": b})
                .await
                .unwrap()
                .unwrap()
                .get_bool("contents")
                .unwrap_or(false);
            if !flag || std::time::Instant::now() > deadline {
                assert!(!flag, "the converted bucket's contents were all reclaimed");
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        }
        assert_eq!(
            refs.count_documents(doc! {}).await.unwrap(),
            0,
            "no reference left"
        );
        assert_eq!(
            blobs.count_documents(doc! {}).await.unwrap(),
            0,
            "no blob left"
        );
        let report = grids3::janitor::fsck::run(&gw.state.store, false)
            .await
            .unwrap();
        assert_eq!(
            report.problems(),
            0,
            "fsck after the conversion back:\n{}",
            report.render()
        );
    });
}

/// A conversion whose instance stopped right after marking the bucket (simulated: the mark is
/// set through the metastore and nothing runs it) is finished by the janitor.
#[test]
fn an_interrupted_conversion_is_finished_by_the_janitor() {
    use mongodb::bson::{doc, Document};
    support::run(async {
        let gw = gateway_fast_gc(&fresh_name("convresume")).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("crb").send().await.unwrap();
        let big = support::random_bytes(600_000, 9);
        for (k, v) in [("a", b"small".to_vec()), ("b", big.clone())] {
            s3.put_object()
                .bucket("crb")
                .key(k)
                .body(ByteStream::from(v))
                .send()
                .await
                .unwrap();
        }
        let meta = gw.state.store.meta();
        assert!(meta
            .start_conversion("crb", grids3::storage::meta::StorageMode::Content)
            .await
            .unwrap());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while meta.get_bucket("crb").await.unwrap().unwrap().converting {
            assert!(
                std::time::Instant::now() < deadline,
                "the janitor finished the conversion"
            );
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        let files = gw.db.collection::<Document>("crb.files");
        assert_eq!(
            files
                .count_documents(doc! {"in": {"$exists": false}, "sha": {"$exists": false}})
                .await
                .unwrap(),
            0
        );
        let got = s3.get_object().bucket("crb").key("b").send().await.unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            big.as_slice()
        );
    });
}

/// Objects written into a content bucket by another v7files writer (PyMongo, from the
/// StorageFormat description) in the forms grids3 does not write itself: `in` without
/// `length`, hex `sha`, bare byte-array `cat` pieces, a truncating `length`, no ETag. Each
/// reads byte for byte through GET and range GETs (`tests/py/seed_forms.py`).
#[test]
fn objects_other_v7files_writers_wrote_read_byte_for_byte() {
    support::run(async {
        let gw =
            support::gateway_with(&fresh_name("seedforms"), |c| c.janitor_interval = 3600).await;
        let db = gw.db.name().to_owned();
        support::run_py_checks(&gw, "seed_forms.py", "seed", &[&support::db().uri, &db]).await;
    });
}
