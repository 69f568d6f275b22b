//! Smaller S3 behaviours that clients and conformance suites check (`tests/py/fidelity.py`).

use crate::authz::new_key;
use crate::support;

#[test]
fn behaviours_as_aws_documents_them() {
    support::run(async {
        let gw = support::gateway("fidelity").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "fidelity.py", "fidelity", &[&ak2, &sk2]).await;
    });
}

#[test]
fn lifecycle_rules_expire_objects_and_abort_uploads() {
    support::run(async {
        let name = format!(
            "g_lifecycle_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        // A lifecycle "day" of one second, so that expiry shows within the test.
        let gw = support::gateway_with(&name, |c| c.lifecycle_day_secs = 1).await;
        support::run_py_checks(&gw, "lifecycle.py", "lifecycle", &[]).await;
    });
}

/// Issue 28 item 1: DeleteObjects takes each `<Key>` exactly as sent. It trimmed them: `" "`
/// and `"_ "` were reported deleted and stayed, and the request for `"_ "` deleted `"_"`.
#[test]
fn delete_objects_takes_keys_exactly_as_sent() {
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    support::run(async {
        let gw = support::gateway("deletekeys").await;
        let s3 = gw.sdk();
        s3.create_bucket()
            .bucket("deletekeys")
            .send()
            .await
            .unwrap();
        // (The SDK for Rust refuses a key of spaces alone; `" "` is covered by the XML unit test.)
        for k in ["_ ", "_", " lead", "trail\t", "a  "] {
            s3.put_object()
                .bucket("deletekeys")
                .key(k)
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
        }
        let gone = ["_ ", "trail\t", "a  "];
        let delete = Delete::builder()
            .set_objects(Some(
                gone.iter()
                    .map(|k| ObjectIdentifier::builder().key(*k).build().unwrap())
                    .collect(),
            ))
            .build()
            .unwrap();
        let out = s3
            .delete_objects()
            .bucket("deletekeys")
            .delete(delete)
            .send()
            .await
            .unwrap();
        let mut reported: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
        reported.sort();
        let mut want = gone.to_vec();
        want.sort();
        assert_eq!(reported, want, "the Deleted keys, as sent");
        assert!(out.errors().is_empty());
        let listed = s3
            .list_objects_v2()
            .bucket("deletekeys")
            .send()
            .await
            .unwrap();
        let mut left: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
        left.sort();
        assert_eq!(left, [" lead", "_"], "what was not named is still there");
    });
}

/// Issue 28 item 9, three of its behaviours through the SDK: `aws-chunked` leaves
/// Content-Encoding with the client's separators; a lifecycle rule without an ID gets one that
/// Get shows; a default retention of 0 days is `InvalidRetentionPeriod`.
#[test]
fn encoding_lifecycle_ids_and_retention_periods_as_aws() {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, DefaultRetention, ExpirationStatus, LifecycleExpiration,
        LifecycleRule, LifecycleRuleFilter, ObjectLockConfiguration, ObjectLockEnabled,
        ObjectLockRetentionMode, ObjectLockRule,
    };
    support::run(async {
        let gw = support::gateway("fidelity9").await;
        let s3 = gw.sdk();
        s3.create_bucket()
            .bucket("fidelity9")
            .object_lock_enabled_for_bucket(true)
            .send()
            .await
            .unwrap();
        s3.put_object()
            .bucket("fidelity9")
            .key("enc")
            .content_encoding("aws-chunked, deflate, gzip")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        let head = s3
            .head_object()
            .bucket("fidelity9")
            .key("enc")
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_encoding(), Some("deflate, gzip"));

        let rule = LifecycleRule::builder()
            .status(ExpirationStatus::Enabled)
            .filter(LifecycleRuleFilter::builder().prefix("logs/").build())
            .expiration(LifecycleExpiration::builder().days(3).build())
            .build()
            .unwrap();
        s3.put_bucket_lifecycle_configuration()
            .bucket("fidelity9")
            .lifecycle_configuration(
                BucketLifecycleConfiguration::builder()
                    .rules(rule)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let got = s3
            .get_bucket_lifecycle_configuration()
            .bucket("fidelity9")
            .send()
            .await
            .unwrap();
        let id = got.rules()[0].id().unwrap_or_default();
        assert!(!id.is_empty(), "the rule got an id");

        let zero = ObjectLockConfiguration::builder()
            .object_lock_enabled(ObjectLockEnabled::Enabled)
            .rule(
                ObjectLockRule::builder()
                    .default_retention(
                        DefaultRetention::builder()
                            .mode(ObjectLockRetentionMode::Governance)
                            .days(0)
                            .build(),
                    )
                    .build(),
            )
            .build();
        let err = s3
            .put_object_lock_configuration()
            .bucket("fidelity9")
            .object_lock_configuration(zero)
            .send()
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some("InvalidRetentionPeriod"));
    });
}

/// Issue 28 item 6: CompleteMultipartUpload takes the whole-object checksum that the SDKs'
/// upload helpers send (it was read as the XML body's checksum: BadDigest): the COMPOSITE
/// form, with or without its `-N`, and the FULL_OBJECT CRC; a wrong one is BadDigest.
#[test]
fn complete_takes_whole_object_checksums() {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{
        ChecksumAlgorithm, ChecksumType, CompletedMultipartUpload, CompletedPart,
    };
    use base64::Engine;
    use sha2::Digest;
    support::run(async {
        let b64 = base64::engine::general_purpose::STANDARD;
        let gw = support::gateway("wholesum").await;
        let s3 = gw.sdk();
        let b = "wholesum";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let p1 = support::random_bytes(5 << 20, 61);
        let p2 = support::random_bytes(1234, 62);
        let whole: Vec<u8> = [p1.clone(), p2.clone()].concat();
        for (key, alg, kind) in [
            (
                "crc32-composite",
                ChecksumAlgorithm::Crc32,
                ChecksumType::Composite,
            ),
            (
                "sha256-composite",
                ChecksumAlgorithm::Sha256,
                ChecksumType::Composite,
            ),
            (
                "crc32-full",
                ChecksumAlgorithm::Crc32,
                ChecksumType::FullObject,
            ),
        ] {
            let up = s3
                .create_multipart_upload()
                .bucket(b)
                .key(key)
                .checksum_algorithm(alg.clone())
                .checksum_type(kind.clone())
                .send()
                .await
                .unwrap();
            let id = up.upload_id().unwrap();
            let mut parts = Vec::new();
            let mut sums = Vec::new();
            for (n, body) in [(1, &p1), (2, &p2)] {
                let r = s3
                    .upload_part()
                    .bucket(b)
                    .key(key)
                    .upload_id(id)
                    .part_number(n)
                    .checksum_algorithm(alg.clone())
                    .body(ByteStream::from(body.clone()))
                    .send()
                    .await
                    .unwrap();
                let sum = match alg {
                    ChecksumAlgorithm::Sha256 => r.checksum_sha256().unwrap().to_owned(),
                    _ => r.checksum_crc32().unwrap().to_owned(),
                };
                sums.push(b64.decode(&sum).unwrap());
                let part = CompletedPart::builder()
                    .part_number(n)
                    .e_tag(r.e_tag().unwrap());
                parts.push(match alg {
                    ChecksumAlgorithm::Sha256 => part.checksum_sha256(sum).build(),
                    _ => part.checksum_crc32(sum).build(),
                });
            }
            let joined = sums.concat();
            let (right, wrong) = match (&alg, &kind) {
                (ChecksumAlgorithm::Sha256, _) => (
                    format!("{}-2", b64.encode(sha2::Sha256::digest(&joined))),
                    format!("{}-2", b64.encode(sha2::Sha256::digest(b"other"))),
                ),
                (_, ChecksumType::Composite) => (
                    format!("{}-2", b64.encode(crc32fast::hash(&joined).to_be_bytes())),
                    format!("{}-2", b64.encode(crc32fast::hash(b"other").to_be_bytes())),
                ),
                _ => (
                    b64.encode(crc32fast::hash(&whole).to_be_bytes()),
                    b64.encode(crc32fast::hash(b"other").to_be_bytes()),
                ),
            };
            let complete = |value: String| {
                let c = s3
                    .complete_multipart_upload()
                    .bucket(b)
                    .key(key)
                    .upload_id(id)
                    .multipart_upload(
                        CompletedMultipartUpload::builder()
                            .set_parts(Some(parts.clone()))
                            .build(),
                    );
                match alg {
                    ChecksumAlgorithm::Sha256 => c.checksum_sha256(value),
                    _ => c.checksum_crc32(value),
                }
                .send()
            };
            let e = complete(wrong).await.unwrap_err();
            assert_eq!(e.code(), Some("BadDigest"), "{key}: a wrong checksum");
            let done = complete(right.clone()).await.unwrap();
            let got = match alg {
                ChecksumAlgorithm::Sha256 => done.checksum_sha256(),
                _ => done.checksum_crc32(),
            };
            assert_eq!(got, Some(right.as_str()), "{key}");
        }
        // The composite value without its `-N`, as some helpers send it, is taken too.
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("bare")
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let r = s3
            .upload_part()
            .bucket(b)
            .key("bare")
            .upload_id(id)
            .part_number(1)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .body(ByteStream::from(p2.clone()))
            .send()
            .await
            .unwrap();
        let sum = r.checksum_crc32().unwrap().to_owned();
        let bare = b64.encode(crc32fast::hash(&b64.decode(&sum).unwrap()).to_be_bytes());
        s3.complete_multipart_upload()
            .bucket(b)
            .key("bare")
            .upload_id(id)
            .checksum_crc32(bare)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(
                        CompletedPart::builder()
                            .part_number(1)
                            .e_tag(r.e_tag().unwrap())
                            .checksum_crc32(sum)
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
    });
}
