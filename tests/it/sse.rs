//! Server-side encryption: boto3 and PyMongo (`tests/py/sse.py`), the AWS SDK for Rust, the
//! admin CLI's keyring, a master-key rotation across gateway restarts, and a gateway without a
//! master key.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;
use base64::Engine;
use futures::TryStreamExt;
use md5::{Digest, Md5};
use mongodb::bson::{doc, Document};

use crate::authz::admin;
use crate::support;

pub(crate) const MASTER: &str = "grids3 test master key";

async fn gateway_with_master(db: &str, master: &str, previous: Option<&str>) -> support::Gateway {
    let (m, p) = (master.to_owned(), previous.map(str::to_owned));
    support::gateway_with(db, move |c| {
        c.master_key = Some(m.into());
        c.previous_master_keys = p.map(Into::into);
    })
    .await
}

fn fresh_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

#[test]
fn sse_as_boto3_and_pymongo_see_it() {
    support::run(async {
        let gw = gateway_with_master(&fresh_name("sse"), MASTER, None).await;
        let (status, key) = admin(
            &gw,
            "POST",
            "/_grids3/admin/kms/keys",
            serde_json::json!({"alias": "app", "description": "tests"}),
        )
        .await;
        assert_eq!(status, 201, "{key}");
        let (_, off) = admin(
            &gw,
            "POST",
            "/_grids3/admin/kms/keys",
            serde_json::Value::Null,
        )
        .await;
        let (k, d) = (
            key["keyId"].as_str().unwrap().to_owned(),
            off["keyId"].as_str().unwrap().to_owned(),
        );
        let (status, _) = admin(
            &gw,
            "POST",
            &format!("/_grids3/admin/kms/keys/{d}/disable"),
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(status, 200);
        let db = gw.db.name().to_owned();
        support::run_py_checks(&gw, "sse.py", "sse", &[&support::db().uri, &db, &k, &d]).await;
    });
}

fn customer_key(key: &[u8; 32]) -> (String, String) {
    let b64 = base64::engine::general_purpose::STANDARD;
    (b64.encode(key), b64.encode(Md5::digest(key)))
}

#[test]
fn sse_with_the_rust_sdk() {
    support::run(async {
        let gw = gateway_with_master(&fresh_name("ssesdk"), MASTER, None).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        let data = support::random_bytes(2 * 1024 * 1024 + 333, 7);
        let (k, k_md5) = customer_key(&[9u8; 32]);
        let put = s3
            .put_object()
            .bucket("bkt")
            .key("c")
            .body(ByteStream::from(data.clone()))
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap();
        assert_eq!(put.sse_customer_key_md5(), Some(k_md5.as_str()));
        let get = |range: Option<&str>| {
            s3.get_object()
                .bucket("bkt")
                .key("c")
                .set_range(range.map(str::to_owned))
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&k)
                .sse_customer_key_md5(&k_md5)
                .send()
        };
        let whole = get(None).await.unwrap().body.collect().await.unwrap();
        assert_eq!(whole.into_bytes().as_ref(), data.as_slice());
        // 1 MiB + a bit, from inside chunk 3 to inside chunk 8 (255 KiB chunks).
        let (a, b) = (700_000usize, 1_800_000usize);
        let part = get(Some(&format!("bytes={a}-{b}"))).await.unwrap();
        assert_eq!(part.content_length(), Some((b - a + 1) as i64));
        let part = part.body.collect().await.unwrap().into_bytes();
        assert_eq!(part.as_ref(), &data[a..=b]);
        let err = s3
            .get_object()
            .bucket("bkt")
            .key("c")
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.raw_response().unwrap().status().as_u16(), 400);
        let (wrong, wrong_md5) = customer_key(&[8u8; 32]);
        let err = s3
            .head_object()
            .bucket("bkt")
            .key("c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&wrong)
            .sse_customer_key_md5(&wrong_md5)
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.raw_response().unwrap().status().as_u16(), 400);

        // SSE-KMS with the default key, then a copy to SSE-S3.
        let put = s3
            .put_object()
            .bucket("bkt")
            .key("k")
            .body(ByteStream::from(data.clone()))
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .send()
            .await
            .unwrap();
        assert_eq!(
            put.server_side_encryption(),
            Some(&ServerSideEncryption::AwsKms)
        );
        assert!(put
            .ssekms_key_id()
            .is_some_and(|k| k.starts_with("arn:aws:kms:")));
        let copy = s3
            .copy_object()
            .bucket("bkt")
            .key("s")
            .copy_source("bkt/c")
            .copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(&k)
            .copy_source_sse_customer_key_md5(&k_md5)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .send()
            .await
            .unwrap();
        assert_eq!(
            copy.server_side_encryption(),
            Some(&ServerSideEncryption::Aes256)
        );
        let md5 = hex::encode(Md5::digest(&data));
        let got = s3.get_object().bucket("bkt").key("s").send().await.unwrap();
        assert_eq!(
            got.e_tag(),
            Some(format!("\"{md5}\"").as_str()),
            "SSE-S3 keeps the MD5 ETag"
        );
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            data.as_slice()
        );

        // SSE-C multipart with unaligned parts (the tail is re-sealed at completion).
        let up = s3
            .create_multipart_upload()
            .bucket("bkt")
            .key("mp")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let p1 = support::random_bytes(5 * 1024 * 1024 + 3, 1);
        let p2 = support::random_bytes(1000, 2);
        let mut done = Vec::new();
        for (n, p) in [(1, &p1), (2, &p2)] {
            let r = s3
                .upload_part()
                .bucket("bkt")
                .key("mp")
                .upload_id(id)
                .part_number(n)
                .body(ByteStream::from(p.clone()))
                .sse_customer_algorithm("AES256")
                .sse_customer_key(&k)
                .sse_customer_key_md5(&k_md5)
                .send()
                .await
                .unwrap();
            done.push(
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(r.e_tag().unwrap())
                    .build(),
            );
        }
        let without_key = s3
            .complete_multipart_upload()
            .bucket("bkt")
            .key("mp")
            .upload_id(id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(done.clone()))
                    .build(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            without_key.raw_response().unwrap().status().as_u16(),
            400,
            "unaligned SSE-C parts need the key to complete"
        );
        s3.complete_multipart_upload()
            .bucket("bkt")
            .key("mp")
            .upload_id(id)
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("bkt")
            .key("mp")
            .range("bytes=5242000-5243010")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap()
            .body
            .collect()
            .await
            .unwrap()
            .into_bytes();
        let whole: Vec<u8> = [p1.as_slice(), p2.as_slice()].concat();
        assert_eq!(got.as_ref(), &whole[5_242_000..=5_243_010]);
    });
}

/// The raw chunk data of an object, in chunk order.
async fn raw_chunks(db: &mongodb::Database, bucket: &str, key: &str) -> Vec<Vec<u8>> {
    let f = db
        .collection::<Document>(&format!("{bucket}.files"))
        .find_one(doc! {"filename": key})
        .await
        .unwrap()
        .unwrap();
    let chunks: Vec<Document> = db
        .collection::<Document>(&format!("{bucket}.chunks"))
        .find(doc! {"files_id": f.get("_id").unwrap()})
        .sort(doc! {"n": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    chunks
        .iter()
        .map(|c| c.get_binary_generic("data").unwrap().clone())
        .collect()
}

async fn read(s3: &aws_sdk_s3::Client, key: &str) -> Result<Vec<u8>, u16> {
    match s3.get_object().bucket("bkt").key(key).send().await {
        Ok(r) => Ok(r.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(e) => Err(e.raw_response().map_or(0, |r| r.status().as_u16())),
    }
}

#[test]
fn master_key_rotation_reseals_without_rewriting_data() {
    support::run(async {
        let db = fresh_name("rotate");
        let data = support::random_bytes(600_000, 3);
        let old = gateway_with_master(&db, "old master", None).await;
        let s3 = old.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        for (key, sse) in [
            ("s3", ServerSideEncryption::Aes256),
            ("kms", ServerSideEncryption::AwsKms),
        ] {
            s3.put_object()
                .bucket("bkt")
                .key(key)
                .server_side_encryption(sse)
                .body(ByteStream::from(data.clone()))
                .send()
                .await
                .unwrap();
        }
        // A multipart upload in progress keeps its wrapped data key in its record.
        let up = s3
            .create_multipart_upload()
            .bucket("bkt")
            .key("mp")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .send()
            .await
            .unwrap();
        let upload_id = up.upload_id().unwrap().to_owned();
        let (other_ak, other_sk) = crate::authz::new_key(&old, "other").await;
        let before = (
            raw_chunks(&old.db, "bkt", "s3").await,
            raw_chunks(&old.db, "bkt", "kms").await,
        );

        // The new master key, the old one still accepted while the rotation runs.
        let rolling = gateway_with_master(&db, "new master", Some("old master")).await;
        assert_eq!(read(&rolling.sdk(), "s3").await.unwrap(), data);
        let (status, report) = admin(
            &rolling,
            "POST",
            "/_grids3/admin/rotate-master-key",
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(status, 200, "{report}");
        assert!(report["keyringEntries"].as_u64().unwrap() >= 1, "{report}");
        assert!(report["dataKeys"].as_u64().unwrap() >= 2, "{report}");
        assert!(report["accessKeys"].as_u64().unwrap() >= 1, "{report}");
        let (_, again) = admin(
            &rolling,
            "POST",
            "/_grids3/admin/rotate-master-key",
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(
            again["dataKeys"], 0,
            "a second rotation finds nothing left: {again}"
        );
        assert_eq!(
            (
                raw_chunks(&old.db, "bkt", "s3").await,
                raw_chunks(&old.db, "bkt", "kms").await
            ),
            before,
            "no object data was rewritten"
        );

        // Only the new master key now: everything opens.
        let new = gateway_with_master(&db, "new master", None).await;
        let s3 = new.sdk();
        assert_eq!(read(&s3, "s3").await.unwrap(), data);
        assert_eq!(read(&s3, "kms").await.unwrap(), data);
        let part = s3
            .upload_part()
            .bucket("bkt")
            .key("mp")
            .upload_id(&upload_id)
            .part_number(1)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        s3.complete_multipart_upload()
            .bucket("bkt")
            .key("mp")
            .upload_id(&upload_id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(part.e_tag().unwrap())
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(read(&s3, "mp").await.unwrap(), data);
        let other = new.sdk_as(&other_ak, &other_sk);
        assert!(
            other.list_buckets().send().await.is_ok(),
            "an access key's secret re-sealed under the new master key still authenticates"
        );

        // The old master key alone no longer opens anything: 503, naming the key it needs.
        let stale = gateway_with_master(&db, "old master", None).await;
        assert_eq!(read(&stale.sdk(), "s3").await, Err(503));
        assert_eq!(read(&stale.sdk(), "kms").await, Err(503));
    });
}

#[test]
fn without_a_master_key_server_managed_encryption_is_refused() {
    support::run(async {
        let gw = support::gateway("nomaster").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        for sse in [ServerSideEncryption::Aes256, ServerSideEncryption::AwsKms] {
            let e = s3
                .put_object()
                .bucket("bkt")
                .key("x")
                .server_side_encryption(sse)
                .body(ByteStream::from_static(b"secret"))
                .send()
                .await
                .unwrap_err();
            assert_eq!(e.raw_response().unwrap().status().as_u16(), 501);
        }
        assert!(
            s3.head_object()
                .bucket("bkt")
                .key("x")
                .send()
                .await
                .is_err(),
            "nothing stored"
        );
        let e = s3
            .put_bucket_encryption()
            .bucket("bkt")
            .server_side_encryption_configuration(
                aws_sdk_s3::types::ServerSideEncryptionConfiguration::builder()
                    .rules(
                        aws_sdk_s3::types::ServerSideEncryptionRule::builder()
                            .apply_server_side_encryption_by_default(
                                aws_sdk_s3::types::ServerSideEncryptionByDefault::builder()
                                    .sse_algorithm(ServerSideEncryption::Aes256)
                                    .build()
                                    .unwrap(),
                            )
                            .build(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().unwrap().status().as_u16(), 501);
        // SSE-C needs no master key.
        let (k, k_md5) = customer_key(&[1u8; 32]);
        s3.put_object()
            .bucket("bkt")
            .key("c")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .body(ByteStream::from_static(b"secret"))
            .send()
            .await
            .unwrap();
    });
}

#[test]
fn admin_cli_manages_the_keyring() {
    support::run(async {
        let gw = gateway_with_master(&fresh_name("kmscli"), MASTER, None).await;
        let endpoint = gw.endpoint();
        let cli = move |args: &[&str]| support::admin_cli(&endpoint, args);
        let (created, listed, disabled, rotated) = tokio::task::spawn_blocking(move || {
            let created = cli(&["create-kms-key", "--alias", "billing"]);
            let id = created["keyId"].as_str().unwrap().to_owned();
            let disabled = cli(&["disable-kms-key", &id]);
            (
                created,
                cli(&["list-kms-keys"]),
                disabled,
                cli(&["rotate-master-key"]),
            )
        })
        .await
        .unwrap();
        assert_eq!(created["alias"], "alias/billing");
        assert_eq!(disabled["enabled"], false);
        let keys = listed["keys"].as_array().unwrap();
        assert!(keys
            .iter()
            .any(|k| k["keyId"] == created["keyId"] && k["enabled"] == false));
        assert_eq!(
            rotated["dataKeys"], 0,
            "nothing under a former key: {rotated}"
        );
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        let e = s3
            .put_object()
            .bucket("bkt")
            .key("x")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("alias/billing")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.raw_response().unwrap().status().as_u16(),
            400,
            "a key disabled through the CLI is refused by its alias"
        );
    });
}

/// Issue 28 item 2: keys named by the operator (`create-kms-key --id`), found by that bare
/// name as MinIO/KES and Ceph clients send it, and named back as given.
#[test]
fn operator_named_kms_keys_work_by_their_name() {
    support::run(async {
        let gw = gateway_with_master(&fresh_name("kmsnamed"), MASTER, None).await;
        let endpoint = gw.endpoint();
        let cli = move |args: &[&str]| support::admin_cli(&endpoint, args);
        let (one, two) = tokio::task::spawn_blocking(move || {
            (
                cli(&["create-kms-key", "--id", "testkey-1"]),
                cli(&["create-kms-key", "--id", "testkey-2", "--alias", "second"]),
            )
        })
        .await
        .unwrap();
        assert_eq!(one["keyId"], "testkey-1");
        assert_eq!(two["keyId"], "testkey-2");
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        let put = s3
            .put_object()
            .bucket("bkt")
            .key("a")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("testkey-1")
            .body(ByteStream::from_static(b"named key"))
            .send()
            .await
            .unwrap();
        assert_eq!(put.ssekms_key_id(), Some("testkey-1"), "named as given");
        let head = s3
            .head_object()
            .bucket("bkt")
            .key("a")
            .send()
            .await
            .unwrap();
        assert_eq!(head.ssekms_key_id(), Some("testkey-1"));
        assert_eq!(read(&s3, "a").await.unwrap(), b"named key");
        // CopyObject to the other named key, given by its alias.
        let copy = s3
            .copy_object()
            .bucket("bkt")
            .key("b")
            .copy_source("bkt/a")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("alias/second")
            .send()
            .await
            .unwrap();
        assert_eq!(copy.ssekms_key_id(), Some("testkey-2"));
        let head = s3
            .head_object()
            .bucket("bkt")
            .key("b")
            .send()
            .await
            .unwrap();
        assert_eq!(head.ssekms_key_id(), Some("testkey-2"));
        assert_eq!(read(&s3, "b").await.unwrap(), b"named key");
        // A multipart upload under the first key, named by its ARN.
        let arn = "arn:aws:kms:us-east-1:000000000000:key/testkey-1";
        let up = s3
            .create_multipart_upload()
            .bucket("bkt")
            .key("m")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id(arn)
            .send()
            .await
            .unwrap();
        assert_eq!(up.ssekms_key_id(), Some("testkey-1"));
        let id = up.upload_id().unwrap();
        let part1 = support::random_bytes(5 << 20, 1);
        let part2 = b"tail".to_vec();
        let mut parts = Vec::new();
        for (n, body) in [(1, part1.clone()), (2, part2.clone())] {
            let p = s3
                .upload_part()
                .bucket("bkt")
                .key("m")
                .upload_id(id)
                .part_number(n)
                .body(ByteStream::from(body))
                .send()
                .await
                .unwrap();
            parts.push(
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(p.e_tag().unwrap())
                    .build(),
            );
        }
        let done = s3
            .complete_multipart_upload()
            .bucket("bkt")
            .key("m")
            .upload_id(id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(done.ssekms_key_id(), Some("testkey-1"));
        let mut whole = part1;
        whole.extend_from_slice(&part2);
        assert_eq!(read(&s3, "m").await.unwrap(), whole);
        // The data is sealed under the named key: disabled, it is unreadable.
        let endpoint = gw.endpoint();
        let (dup, invalid) = tokio::task::spawn_blocking(move || {
            support::admin_cli(&endpoint, &["disable-kms-key", "testkey-1"]);
            (
                support::admin_cli_failure(&endpoint, &["create-kms-key", "--id", "testkey-1"]),
                support::admin_cli_failure(&endpoint, &["create-kms-key", "--id", "bad/name"]),
            )
        })
        .await
        .unwrap();
        assert!(dup.contains("AlreadyExistsException"), "{dup}");
        assert!(invalid.contains("InvalidKeyId"), "{invalid}");
        assert!(
            read(&s3, "a").await.is_err(),
            "a disabled named key opens nothing"
        );
        assert_eq!(read(&s3, "b").await.unwrap(), b"named key");
        // A name that no key has is KMS.NotFoundException.
        let e = s3
            .put_object()
            .bucket("bkt")
            .key("c")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("testkey-3")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.into_service_error().meta().code(),
            Some("KMS.NotFoundException")
        );
    });
}

#[test]
fn encryption_adds_no_round_trip() {
    use std::sync::atomic::Ordering;
    support::run(async {
        let (gw, counters) = support::gateway_counting_split("ssert", |c| {
            c.master_key = Some(MASTER.into());
        })
        .await;
        let (all_commands, lookups) = (&counters.all, &counters.lookups);
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        let data = support::random_bytes(4096, 11);
        let (k, k_md5) = customer_key(&[4u8; 32]);
        let mut counts = Vec::new();
        for mode in ["plain", "SSE-S3", "SSE-KMS", "SSE-C"] {
            let put = || {
                let p = s3
                    .put_object()
                    .bucket("bkt")
                    .key(mode)
                    .body(ByteStream::from(data.clone()));
                match mode {
                    "SSE-S3" => p.server_side_encryption(ServerSideEncryption::Aes256),
                    "SSE-KMS" => p.server_side_encryption(ServerSideEncryption::AwsKms),
                    "SSE-C" => p
                        .sse_customer_algorithm("AES256")
                        .sse_customer_key(&k)
                        .sse_customer_key_md5(&k_md5),
                    _ => p,
                }
            };
            let get = || {
                let g = s3.get_object().bucket("bkt").key(mode);
                match mode {
                    "SSE-C" => g
                        .sse_customer_algorithm("AES256")
                        .sse_customer_key(&k)
                        .sse_customer_key_md5(&k_md5),
                    _ => g,
                }
            };
            // Commands other than cache refreshes (bucket and key lookups): a count catches a
            // refresh or not depending on when the cache's second ran out, whatever the mode.
            // (A CI run on a loaded machine caught the key cache's in every SSE-KMS GET.)
            let commands = || all_commands.load(Ordering::SeqCst) - lookups.load(Ordering::SeqCst);
            // Warm the caches (bucket, authorization, keyring) and the registration pool
            // with a PUT of the same kind, let its settling pass, then count a PUT of a new
            // key, warm again with a GET, and count a GET, each up to its answer. The caches last a second from their
            // refresh, so one may expire inside a count on a loaded machine: the least of
            // three attempts is what the request itself costs.
            let warm = || async {
                put().key(format!("warm-{mode}")).send().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            };
            let (mut put_count, mut get_count) = (u64::MAX, u64::MAX);
            for attempt in 0..3 {
                let key = format!("{mode}-{attempt}");
                warm().await;
                let before = commands();
                put().key(&key).send().await.unwrap();
                put_count = put_count.min(commands() - before);
                // A GET warms what a GET reads (SSE-KMS: the keyring entry by its id).
                get().key(format!("warm-{mode}")).send().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                let before = commands();
                let got = get().key(&key).send().await.unwrap();
                get_count = get_count.min(commands() - before);
                let got = got.body.collect().await.unwrap();
                assert_eq!(got.into_bytes().as_ref(), data.as_slice());
            }
            counts.push((mode, put_count, get_count));
            if mode == "SSE-KMS" {
                // Key lookups are left out of the counts above, so check here that the key
                // cache is used at all: of two GETs in a row (well inside its second), at most
                // the first reads the key; without the cache both would.
                let before = counters.keyring.load(Ordering::SeqCst);
                for _ in 0..2 {
                    get().key(format!("warm-{mode}")).send().await.unwrap();
                }
                let key_reads = counters.keyring.load(Ordering::SeqCst) - before;
                assert!(
                    key_reads <= 1,
                    "two SSE-KMS GETs read the key {key_reads} times"
                );
            }
        }
        println!("4 KiB object (PUT of a new key, GET) round trips: {counts:?}");
        let (_, plain_put, plain_get) = counts[0];
        assert_eq!((plain_put, plain_get), (2, 1), "{counts:?}");
        for (mode, put, get) in &counts[1..] {
            assert!(
                *put <= plain_put && *get <= plain_get,
                "{mode} costs no more round trips than a plain object: {counts:?}"
            );
        }
    });
}

/// Issue 25 item 3: a master passphrase was a bare SHA-256, and its stored id (an HMAC under
/// it) let anyone who reads the database test guesses offline. A passphrase is now stretched
/// with argon2id and the deployment's salt (32 random bytes in hex or base64 are used as
/// they are). A deployment sealed under the old derivation keeps working on upgrade (each
/// secret's old derivation is a former key) and `rotate-master-key` moves it over.
#[test]
fn a_legacy_master_key_keeps_working_and_rotates_to_argon2id() {
    support::run(async {
        use sha2::Digest;
        let db = fresh_name("legacymk");
        let pass = "an old passphrase";
        // The old derivation of `pass`, given as a raw key: what a deployment before argon2id
        // sealed with.
        let legacy_hex = hex::encode(sha2::Sha256::digest(pass.as_bytes()));
        let data = support::random_bytes(300_000, 9);
        let old = gateway_with_master(&db, &legacy_hex, None).await;
        let legacy_id = old
            .state
            .keys
            .masters()
            .current
            .as_ref()
            .unwrap()
            .id()
            .to_owned();
        assert_eq!(
            legacy_id,
            grids3::crypto::keys::Master::legacy(pass).id(),
            "a 64-hex-digit master key is used as it is"
        );
        let s3 = old.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        s3.put_object()
            .bucket("bkt")
            .key("s3")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let (ak, sk) = crate::authz::new_key(&old, "sealed").await;
        drop(old);

        // Upgraded, configured with the passphrase: everything still opens.
        let new = gateway_with_master(&db, pass, None).await;
        let new_id = new
            .state
            .keys
            .masters()
            .current
            .as_ref()
            .unwrap()
            .id()
            .to_owned();
        assert_ne!(new_id, legacy_id, "the passphrase is stretched, not hashed");
        assert_eq!(read(&new.sdk(), "s3").await.unwrap(), data);
        assert!(new.sdk_as(&ak, &sk).list_buckets().send().await.is_ok());
        let (status, report) = admin(
            &new,
            "POST",
            "/_grids3/admin/rotate-master-key",
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(status, 200, "{report}");
        assert!(report["dataKeys"].as_u64().unwrap() >= 1, "{report}");
        assert!(report["accessKeys"].as_u64().unwrap() >= 1, "{report}");
        let files = new.db.collection::<mongodb::bson::Document>("bkt.files");
        let f = files
            .find_one(mongodb::bson::doc! {"filename": "s3"})
            .await
            .unwrap()
            .unwrap();
        let stored = format!("{f:?}");
        assert!(
            stored.contains(&new_id) && !stored.contains(&legacy_id),
            "the object names the new key's id only: {stored}"
        );
        drop(new);

        // The old derivation alone opens nothing any more; the passphrase does.
        let stale = gateway_with_master(&db, &legacy_hex, None).await;
        assert_eq!(read(&stale.sdk(), "s3").await, Err(503));
        assert!(stale.sdk_as(&ak, &sk).list_buckets().send().await.is_err());
        drop(stale);
        let again = gateway_with_master(&db, pass, None).await;
        assert_eq!(read(&again.sdk(), "s3").await.unwrap(), data);
        assert!(again.sdk_as(&ak, &sk).list_buckets().send().await.is_ok());
    });
}

/// Issue 26, item 8: a gateway restarted without the master key its SSE-S3 objects were sealed
/// under warned of nothing and answered every GET 500. It now warns at start-up, naming the
/// key's id, and a GET answers 503 ServiceUnavailable naming it too; given the key again, the
/// object reads.
#[test]
fn a_gateway_without_the_master_key_warns_and_answers_503_naming_it() {
    support::run(async {
        let name = fresh_name("nomk");
        let sealed = gateway_with_master(&name, MASTER, None).await;
        let id = sealed
            .state
            .store
            .meta()
            .masters()
            .current
            .as_ref()
            .unwrap()
            .id()
            .to_owned();
        let s3 = sealed.sdk();
        s3.create_bucket().bucket("nomk").send().await.unwrap();
        s3.put_object()
            .bucket("nomk")
            .key("k")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from_static(b"sealed"))
            .send()
            .await
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("grids3.log");
        let p = support::Process::start_logging(&name, &[], Some(&log)).await;
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("sealed under master keys") && text.contains(&id),
            "no start-up warning naming {id}:\n{text}"
        );
        let e = p
            .as_gateway(&sealed)
            .sdk()
            .get_object()
            .bucket("nomk")
            .key("k")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().unwrap().status().as_u16(), 503);
        let e = e.into_service_error();
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
            Some("ServiceUnavailable")
        );
        let message = aws_sdk_s3::error::ProvideErrorMetadata::message(&e).unwrap_or_default();
        assert!(message.contains(&id), "{message}");
        let got = s3
            .get_object()
            .bucket("nomk")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"sealed"
        );
    });
}

/// Issue 26, item 10: naming `alias/aws/s3` (as s3cmd does) before any KMS key exists got
/// `KMS.NotFoundException`; AWS creates that managed key on first use, and so does grids3,
/// for an object and for a bucket default alike.
#[test]
fn the_aws_s3_alias_is_created_on_first_use() {
    support::run(async {
        let gw = gateway_with_master(&fresh_name("awss3"), MASTER, None).await;
        let s3 = gw.sdk();
        for b in ["firstobj", "firstdefault"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
        }
        let put = s3
            .put_object()
            .bucket("firstobj")
            .key("k")
            .server_side_encryption(ServerSideEncryption::AwsKms)
            .ssekms_key_id("alias/aws/s3")
            .body(ByteStream::from_static(b"managed"))
            .send()
            .await
            .expect("alias/aws/s3 before any key exists");
        let key_id = put.ssekms_key_id().unwrap_or_default().to_owned();
        let got = s3
            .get_object()
            .bucket("firstobj")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(got.ssekms_key_id(), Some(key_id.as_str()));
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"managed"
        );
        // The bucket default names the same key; one key, not two.
        use aws_sdk_s3::types::{
            ServerSideEncryptionByDefault, ServerSideEncryptionConfiguration,
            ServerSideEncryptionRule,
        };
        s3.put_bucket_encryption()
            .bucket("firstdefault")
            .server_side_encryption_configuration(
                ServerSideEncryptionConfiguration::builder()
                    .rules(
                        ServerSideEncryptionRule::builder()
                            .apply_server_side_encryption_by_default(
                                ServerSideEncryptionByDefault::builder()
                                    .sse_algorithm(ServerSideEncryption::AwsKms)
                                    .kms_master_key_id("alias/aws/s3")
                                    .build()
                                    .unwrap(),
                            )
                            .build(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let keys = gw
            .db
            .collection::<Document>("__keyring")
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(keys, 1, "one managed key");
    });
}
