//! The gateway driven by the official AWS SDK for Rust (path-style).

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};

use crate::support::{self, random_bytes};

async fn body_of(out: aws_sdk_s3::operation::get_object::GetObjectOutput) -> Vec<u8> {
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

#[test]
fn buckets_lifecycle() {
    support::run(async {
        let gw = support::gateway("buckets").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("alpha").send().await.unwrap();
        s3.create_bucket().bucket("beta").send().await.unwrap();
        // Creating one's own bucket again: 200 in us-east-1, AWS's legacy behaviour there.
        s3.create_bucket().bucket("alpha").send().await.unwrap();
        let bad = s3
            .create_bucket()
            .bucket("Bad_Name")
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            bad.into_service_error().meta().code(),
            Some("InvalidBucketName")
        );
        let names: Vec<String> = s3
            .list_buckets()
            .send()
            .await
            .unwrap()
            .buckets()
            .iter()
            .filter_map(|b| b.name().map(str::to_owned))
            .collect();
        assert_eq!(names, ["alpha", "beta"]);
        s3.head_bucket().bucket("alpha").send().await.unwrap();
        assert!(s3.head_bucket().bucket("nope").send().await.is_err());
        let loc = s3
            .get_bucket_location()
            .bucket("alpha")
            .send()
            .await
            .unwrap();
        assert!(
            loc.location_constraint().is_none()
                || loc.location_constraint().unwrap().as_str().is_empty()
        );
        let v = s3
            .get_bucket_versioning()
            .bucket("alpha")
            .send()
            .await
            .unwrap();
        assert!(v.status().is_none());

        s3.put_object()
            .bucket("alpha")
            .key("k")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        let e = s3.delete_bucket().bucket("alpha").send().await.unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("BucketNotEmpty"));
        s3.delete_object()
            .bucket("alpha")
            .key("k")
            .send()
            .await
            .unwrap();
        s3.delete_bucket().bucket("alpha").send().await.unwrap();
        let e = s3.head_bucket().bucket("alpha").send().await.unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404));
        let e = s3
            .list_objects_v2()
            .bucket("alpha")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("NoSuchBucket"));
    });
}

/// The ETag of a single-part object: its content's MD5, quoted.
fn md5_etag(data: &[u8]) -> String {
    format!(
        "\"{}\"",
        hex::encode(<md5::Md5 as md5::Digest>::digest(data))
    )
}

/// Twelve large PUTs at once: their chunks' MD5 is taken many uploads at a time (the lanes of
/// `hashing::md5`, on CPUs that have them), and every ETag must still be the content's MD5.
#[test]
fn concurrent_large_puts_get_their_md5_as_etag() {
    support::run(async {
        let gw = support::gateway("md5lanes").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("lanes").send().await.unwrap();
        let mut puts = Vec::new();
        for i in 0..12u64 {
            let s3 = s3.clone();
            puts.push(tokio::spawn(async move {
                let data = random_bytes(3 * 1024 * 1024 + 97 * i as usize, 40 + i);
                let put = s3
                    .put_object()
                    .bucket("lanes")
                    .key(format!("k{i}"))
                    .body(ByteStream::from(data.clone()))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(put.e_tag(), Some(md5_etag(&data).as_str()), "object {i}");
                let got = s3
                    .get_object()
                    .bucket("lanes")
                    .key(format!("k{i}"))
                    .send()
                    .await
                    .unwrap();
                let body = got.body.collect().await.unwrap().into_bytes();
                assert!(body[..] == data[..], "object {i} came back different");
            }));
        }
        for p in puts {
            p.await.unwrap();
        }
    });
}

#[test]
fn put_get_head_range_delete() {
    support::run(async {
        let gw = support::gateway("objects").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("bkt").send().await.unwrap();
        let data = random_bytes(700_001, 7);
        let put = s3
            .put_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .content_type("application/x-test")
            .cache_control("max-age=60")
            .metadata("color", "blue")
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let md5 = md5_etag(&data);
        assert_eq!(put.e_tag(), Some(md5.as_str()));

        let got = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap();
        assert_eq!(got.content_length(), Some(data.len() as i64));
        assert_eq!(got.content_type(), Some("application/x-test"));
        assert_eq!(got.cache_control(), Some("max-age=60"));
        assert_eq!(
            got.metadata().unwrap().get("color").map(String::as_str),
            Some("blue")
        );
        assert_eq!(got.e_tag(), Some(md5.as_str()));
        assert!(body_of(got).await == data);

        // Ranges: a-b across the chunk boundary at 255 KiB, a-, -n.
        let cs = 255 * 1024;
        for (range, a, b) in [
            (format!("bytes={}-{}", cs - 5, cs + 4), cs - 5, cs + 5),
            ("bytes=700000-".to_owned(), 700_000, 700_001),
            ("bytes=-3".to_owned(), 699_998, 700_001),
        ] {
            let r = s3
                .get_object()
                .bucket("bkt")
                .key("dir/obj name+1.bin")
                .range(&range)
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.content_range(),
                Some(format!("bytes {a}-{}/{}", b - 1, data.len()).as_str())
            );
            assert_eq!(body_of(r).await, data[a..b]);
        }
        let e = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .range("bytes=800000-")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(416));

        let head = s3
            .head_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(700_001));
        // Conditionals.
        let e = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .if_match("\"nope\"")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(412));
        let e = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .if_none_match(&md5)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(304));
        // Response overrides.
        let r = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .response_content_type("text/plain")
            .response_content_disposition("attachment")
            .send()
            .await
            .unwrap();
        assert_eq!(r.content_type(), Some("text/plain"));
        assert_eq!(r.content_disposition(), Some("attachment"));

        // Overwrite: the new revision wins and the old one's chunks are reclaimed.
        s3.put_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .body(ByteStream::from_static(b"short"))
            .send()
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap();
        assert_eq!(body_of(got).await, b"short");
        assert_eq!(gw.file_count("bkt").await, 1);
        assert_eq!(gw.chunk_count("bkt").await, 1);

        // Empty object.
        s3.put_object()
            .bucket("bkt")
            .key("empty")
            .body(ByteStream::from_static(b""))
            .send()
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("bkt")
            .key("empty")
            .send()
            .await
            .unwrap();
        assert_eq!(got.e_tag(), Some("\"d41d8cd98f00b204e9800998ecf8427e\""));
        assert!(body_of(got).await.is_empty());

        s3.delete_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap();
        s3.delete_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap(); // idempotent
        let e = s3
            .get_object()
            .bucket("bkt")
            .key("dir/obj name+1.bin")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("NoSuchKey"));
        assert_eq!(gw.chunk_count("bkt").await, 0);
    });
}

#[test]
fn listings_v2_v1_versions() {
    support::run(async {
        let gw = support::gateway("list").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("lst").send().await.unwrap();
        let keys = ["a/1", "a/2", "a/b/3", "b", "c/1", "c/2", "d", "e f"];
        for k in keys {
            s3.put_object()
                .bucket("lst")
                .key(k)
                .body(ByteStream::from_static(b"v"))
                .send()
                .await
                .unwrap();
        }
        // Prefix + delimiter.
        let r = s3
            .list_objects_v2()
            .bucket("lst")
            .delimiter("/")
            .send()
            .await
            .unwrap();
        let ks: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        let ps: Vec<&str> = r
            .common_prefixes()
            .iter()
            .filter_map(|p| p.prefix())
            .collect();
        assert_eq!(ks, ["b", "d", "e f"]);
        assert_eq!(ps, ["a/", "c/"]);
        assert_eq!(r.key_count(), Some(5));
        let r = s3
            .list_objects_v2()
            .bucket("lst")
            .prefix("a/")
            .delimiter("/")
            .send()
            .await
            .unwrap();
        let ks: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(ks, ["a/1", "a/2"]);
        assert_eq!(r.common_prefixes()[0].prefix(), Some("a/b/"));

        // Paging with max-keys and continuation tokens, with a delimiter.
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let r = s3
                .list_objects_v2()
                .bucket("lst")
                .delimiter("/")
                .max_keys(2)
                .set_continuation_token(token.clone())
                .send()
                .await
                .unwrap();
            seen.extend(
                r.contents()
                    .iter()
                    .filter_map(|o| o.key().map(str::to_owned)),
            );
            seen.extend(
                r.common_prefixes()
                    .iter()
                    .filter_map(|p| p.prefix().map(str::to_owned)),
            );
            if !r.is_truncated().unwrap_or(false) {
                break;
            }
            token = r.next_continuation_token().map(str::to_owned);
        }
        seen.sort();
        assert_eq!(seen, ["a/", "b", "c/", "d", "e f"]);

        // start-after, fetch-owner, url encoding.
        let r = s3
            .list_objects_v2()
            .bucket("lst")
            .start_after("c/1")
            .fetch_owner(true)
            .send()
            .await
            .unwrap();
        let ks: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(ks, ["c/2", "d", "e f"]);
        assert!(r.contents()[0].owner().is_some());
        let r = s3
            .list_objects_v2()
            .bucket("lst")
            .prefix("e")
            .encoding_type("url".into())
            .send()
            .await
            .unwrap();
        // The Rust SDK hands url-encoded keys back as sent (botocore decodes them).
        assert_eq!(r.contents()[0].key(), Some("e%20f"));

        // v1 with marker and NextMarker.
        let r = s3
            .list_objects()
            .bucket("lst")
            .delimiter("/")
            .max_keys(2)
            .send()
            .await
            .unwrap();
        assert!(r.is_truncated().unwrap());
        assert_eq!(r.next_marker(), Some("b"));
        let r = s3
            .list_objects()
            .bucket("lst")
            .marker("c/2")
            .send()
            .await
            .unwrap();
        let ks: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(ks, ["d", "e f"]);

        // ListObjectVersions: every object once, version "null".
        let r = s3
            .list_object_versions()
            .bucket("lst")
            .send()
            .await
            .unwrap();
        assert_eq!(r.versions().len(), keys.len());
        assert!(r
            .versions()
            .iter()
            .all(|v| v.version_id() == Some("null") && v.is_latest() == Some(true)));

        // DeleteObjects, quiet and not.
        let ids = |ks: &[&str]| {
            ks.iter()
                .map(|k| ObjectIdentifier::builder().key(*k).build().unwrap())
                .collect::<Vec<_>>()
        };
        let r = s3
            .delete_objects()
            .bucket("lst")
            .delete(
                Delete::builder()
                    .set_objects(Some(ids(&["a/1", "a/2", "missing"])))
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.deleted().len(), 3);
        let r = s3
            .delete_objects()
            .bucket("lst")
            .delete(
                Delete::builder()
                    .set_objects(Some(ids(&["a/b/3", "b"])))
                    .quiet(true)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        assert!(r.deleted().is_empty() && r.errors().is_empty());
        let r = s3.list_objects_v2().bucket("lst").send().await.unwrap();
        let ks: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        assert_eq!(ks, ["c/1", "c/2", "d", "e f"]);
    });
}

#[test]
fn copy_object_and_checksums() {
    support::run(async {
        let gw = support::gateway("copy").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("src").send().await.unwrap();
        s3.create_bucket().bucket("dst").send().await.unwrap();
        let data = random_bytes(300_000, 3);
        s3.put_object()
            .bucket("src")
            .key("a b/ü.txt")
            .content_type("text/x-src")
            .metadata("m", "1")
            .checksum_algorithm(aws_sdk_s3::types::ChecksumAlgorithm::Sha256)
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let h = s3
            .head_object()
            .bucket("src")
            .key("a b/ü.txt")
            .checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        use base64::Engine;
        let want = base64::engine::general_purpose::STANDARD
            .encode(<sha2::Sha256 as sha2::Digest>::digest(&data));
        assert_eq!(h.checksum_sha256(), Some(want.as_str()));

        let src = percent_encoding::utf8_percent_encode(
            "src/a b/ü.txt",
            percent_encoding::NON_ALPHANUMERIC,
        )
        .to_string();
        let r = s3
            .copy_object()
            .bucket("dst")
            .key("copy")
            .copy_source(&src)
            .send()
            .await
            .unwrap();
        let etag = r.copy_object_result().unwrap().e_tag().unwrap().to_owned();
        let got = s3
            .get_object()
            .bucket("dst")
            .key("copy")
            .send()
            .await
            .unwrap();
        assert_eq!(got.e_tag(), Some(etag.as_str()));
        assert_eq!(got.content_type(), Some("text/x-src"));
        assert_eq!(
            got.metadata().unwrap().get("m").map(String::as_str),
            Some("1")
        );
        assert!(body_of(got).await == data);

        let r = s3
            .copy_object()
            .bucket("dst")
            .key("copy2")
            .copy_source(&src)
            .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
            .content_type("text/new")
            .send()
            .await
            .unwrap();
        assert!(r.copy_object_result().is_some());
        let h = s3
            .head_object()
            .bucket("dst")
            .key("copy2")
            .send()
            .await
            .unwrap();
        assert_eq!(h.content_type(), Some("text/new"));
        assert!(h.metadata().map(|m| m.is_empty()).unwrap_or(true));

        let e = s3
            .copy_object()
            .bucket("dst")
            .key("x")
            .copy_source(&src)
            .copy_source_if_match("\"nope\"")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(412));
        let e = s3
            .copy_object()
            .bucket("dst")
            .key("x")
            .copy_source("src/missing")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("NoSuchKey"));
        let e = s3
            .copy_object()
            .bucket("src")
            .key("a b/ü.txt")
            .copy_source(&src)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("InvalidRequest"));
    });
}

#[test]
fn presigned_get_with_plain_http() {
    support::run(async {
        let gw = support::gateway("presign").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("pre").send().await.unwrap();
        s3.put_object()
            .bucket("pre")
            .key("x y")
            .body(ByteStream::from_static(b"presigned!"))
            .send()
            .await
            .unwrap();
        let cfg = aws_sdk_s3::presigning::PresigningConfig::expires_in(
            std::time::Duration::from_secs(300),
        )
        .unwrap();
        let req = s3
            .get_object()
            .bucket("pre")
            .key("x y")
            .presigned(cfg)
            .await
            .unwrap();
        let resp = reqwest::get(req.uri()).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.bytes().await.unwrap().as_ref(), b"presigned!");
        // Tampered: the signature no longer matches.
        let tampered = req.uri().replace("x%20y", "x%20z");
        let resp = reqwest::get(&tampered).await.unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(
            support::error_code(&resp.text().await.unwrap()),
            "SignatureDoesNotMatch"
        );
        // A presigned PUT.
        let cfg = aws_sdk_s3::presigning::PresigningConfig::expires_in(
            std::time::Duration::from_secs(300),
        )
        .unwrap();
        let put = s3
            .put_object()
            .bucket("pre")
            .key("up")
            .presigned(cfg)
            .await
            .unwrap();
        let resp = reqwest::Client::new()
            .put(put.uri())
            .body("via presigned put")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let got = s3
            .get_object()
            .bucket("pre")
            .key("up")
            .send()
            .await
            .unwrap();
        assert_eq!(body_of(got).await, b"via presigned put");
    });
}

#[test]
fn delimiter_listing_skips_large_prefixes_by_seeking() {
    support::run(async {
        let gw = support::gateway("skipseek").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("many").send().await.unwrap();
        // 1,500 keys under a/ (more than the listing reads past before it seeks), a few
        // around them; files documents written directly for speed.
        let files = gw.db.collection::<mongodb::bson::Document>("many.files");
        let mut docs = Vec::new();
        for name in (0..1500)
            .map(|i| format!("a/{i:05}"))
            .chain(["a", "a0", "b", "c/x", "c/y/z", "d"].map(String::from))
        {
            docs.push(mongodb::bson::doc! {
                "length": 0i64, "chunkSize": 261120, "uploadDate": mongodb::bson::DateTime::now(),
                "filename": name, "metadata": {"etag": "\"d41d8cd98f00b204e9800998ecf8427e\""},
            });
        }
        files.insert_many(docs).await.unwrap();
        let r = s3
            .list_objects_v2()
            .bucket("many")
            .delimiter("/")
            .send()
            .await
            .unwrap();
        let keys: Vec<&str> = r.contents().iter().filter_map(|o| o.key()).collect();
        let prefixes: Vec<&str> = r
            .common_prefixes()
            .iter()
            .filter_map(|p| p.prefix())
            .collect();
        assert_eq!(keys, ["a", "a0", "b", "d"]);
        assert_eq!(prefixes, ["a/", "c/"]);
        // Paged two entries at a time, the same sequence.
        let mut seen = Vec::new();
        let mut token = None;
        loop {
            let r = s3
                .list_objects_v2()
                .bucket("many")
                .delimiter("/")
                .max_keys(2)
                .set_continuation_token(token.clone())
                .send()
                .await
                .unwrap();
            seen.extend(
                r.contents()
                    .iter()
                    .filter_map(|o| o.key().map(String::from)),
            );
            seen.extend(
                r.common_prefixes()
                    .iter()
                    .filter_map(|p| p.prefix().map(String::from)),
            );
            if !r.is_truncated().unwrap_or(false) {
                break;
            }
            token = r.next_continuation_token().map(String::from);
        }
        seen.sort();
        assert_eq!(seen, ["a", "a/", "a0", "b", "c/", "d"]);
        // Under a/ without delimiter: all 1,500, in pages of 1,000.
        let r = s3
            .list_objects_v2()
            .bucket("many")
            .prefix("a/")
            .send()
            .await
            .unwrap();
        assert_eq!(r.key_count(), Some(1000));
        assert_eq!(r.is_truncated(), Some(true));
    });
}
