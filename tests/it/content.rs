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
