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

/// Issue 40, items 1 to 5 (`tests/py/fidelity4.py`): conditional deletes, ARN policy
/// conditions and the policy status of a public ACL, checksum types and digests, the owner and
/// initiator of uploads, what a bucket policy grants another key, and the smaller answers.
#[test]
fn fourth_pass_behaviours_as_aws_documents_them() {
    support::run(async {
        let gw = support::gateway("fidelity4").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "fidelity4.py", "fidelity4", &[&ak2, &sk2]).await;
    });
}

/// Issue 40, item 6 (`tests/py/minio_ext.py`): MinIO's extensions through minio-py: versioning
/// exclusions, snowball uploads, ListObjectsV2 `metadata=true`, and `x-minio-force-delete`.
#[test]
fn minio_sdk_extensions() {
    support::run(async {
        let gw = support::gateway("minioext").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "minio_ext.py", "minio_ext", &[&ak2, &sk2]).await;
    });
}

/// minio-js (from npm), as applications and its functional suite call it: issue 40, item 6,
/// `removeObject(..., {forceDelete: true})`, which sends `x-minio-force-delete: true` (minio-py
/// has no such call; `minio_ext.py` sends the header through boto3); issue 64, items 2 to 4,
/// its listener, bucket tagging, and a force delete of a prefix with a leading slash.
#[test]
fn minio_js_force_deletes_listens_and_tags_buckets() {
    support::run(async {
        let gw = support::gateway("miniojs").await;
        run_minio_js(&gw, "minio_js.mjs", "minio_js").await;
    });
}

/// Issue 64, item 1: FULL_OBJECT and COMPOSITE multipart checksums through boto3, with
/// ceph/s3-tests' values, on Complete, HEAD, GetObjectAttributes and part reads.
#[test]
fn full_object_multipart_checksums() {
    support::run(async {
        let gw = support::gateway("fullobject").await;
        support::run_py_checks(
            &gw,
            "full_object_checksums.py",
            "full_object_checksums",
            &[],
        )
        .await;
    });
}

/// Runs `tests/js/<script>` with minio-js from npm against `gw`; it must print `<tag>: all
/// checks passed`.
async fn run_minio_js(gw: &support::Gateway, script: &str, tag: &str) {
    let (Some(node), Some(npm)) = (
        support::apt_tool("node", "nodejs"),
        support::apt_tool("npm", "npm"),
    ) else {
        assert!(
            !support::must_not_skip(),
            "CI=true: node and npm are needed for the minio-js checks"
        );
        println!("SKIPPED: node and npm cannot be installed here");
        return;
    };
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/npm-minio");
    std::fs::create_dir_all(&dir).unwrap();
    if !dir.join("node_modules/minio/package.json").exists() {
        let d = dir.clone();
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(&npm)
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&d)
                .arg("minio@8.0.7")
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "npm install minio: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // An ES module finds its packages beside it, not through NODE_PATH.
    let path = dir.join(script);
    std::fs::copy(root.join("tests/js").join(script), &path).unwrap();
    let endpoint = gw.endpoint();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(node)
            .arg(&path)
            .args([endpoint.as_str(), support::AK, support::SK])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(&format!("{tag}: all checks passed")),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
            // Issue 28 item 9: no version id in a bucket that never had versioning.
            assert_eq!(done.version_id(), None, "{key}");
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
        // The part uploaded again, with other bytes: its new checksum replaces the old one
        // (the composite is made of the new one; the old one is BadDigest).
        let old_sum = r.checksum_crc32().unwrap().to_owned();
        let r = s3
            .upload_part()
            .bucket(b)
            .key("bare")
            .upload_id(id)
            .part_number(1)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .body(ByteStream::from(p1[..4096].to_vec()))
            .send()
            .await
            .unwrap();
        let sum = r.checksum_crc32().unwrap().to_owned();
        assert_ne!(sum, old_sum);
        let stale = b64.encode(crc32fast::hash(&b64.decode(&old_sum).unwrap()).to_be_bytes());
        let e = s3
            .complete_multipart_upload()
            .bucket(b)
            .key("bare")
            .upload_id(id)
            .checksum_crc32(stale)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(
                        CompletedPart::builder()
                            .part_number(1)
                            .e_tag(r.e_tag().unwrap())
                            .checksum_crc32(&sum)
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Some("BadDigest"),
            "the replaced part's checksum is gone"
        );
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

/// Issue 28 item 3: ACLs as AWS lists and keeps them. Groups first, then users in grant order;
/// an ACL given by grant headers or a document is stored exactly (no owner FULL_CONTROL added
/// back); re-creating a bucket one owns with an ACL is 409 and keeps the ACL.
#[test]
fn acls_are_listed_and_kept_as_given() {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{
        AccessControlPolicy, BucketCannedAcl, Grant, Grantee, Owner, Permission, Type,
    };
    support::run(async {
        let gw = support::gateway("aclexact").await;
        let s3 = gw.sdk();
        let (ak2, sk2) = new_key(&gw, "second").await;
        let other = gw.sdk_as(&ak2, &sk2);
        let b = "aclexact";
        s3.create_bucket()
            .bucket(b)
            .acl(BucketCannedAcl::PublicRead)
            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
            .send()
            .await
            .unwrap();
        let owner_id = s3
            .list_buckets()
            .send()
            .await
            .unwrap()
            .owner()
            .unwrap()
            .id()
            .unwrap()
            .to_owned();
        let other_id = other
            .list_buckets()
            .send()
            .await
            .unwrap()
            .owner()
            .unwrap()
            .id()
            .unwrap()
            .to_owned();
        let summary = |grants: &[Grant]| -> Vec<(String, String)> {
            grants
                .iter()
                .map(|g| {
                    let who = g.grantee().unwrap();
                    (
                        who.uri()
                            .map(|u| u.rsplit('/').next().unwrap().to_owned())
                            .or(who.id().map(str::to_owned))
                            .unwrap(),
                        g.permission().unwrap().as_str().to_owned(),
                    )
                })
                .collect()
        };
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert_eq!(
            summary(acl.grants()),
            [
                ("AllUsers".to_owned(), "READ".to_owned()),
                (owner_id.clone(), "FULL_CONTROL".to_owned())
            ],
            "groups first"
        );
        // Re-creating it with an ACL: 409, and the ACL stays.
        let e = s3
            .create_bucket()
            .bucket(b)
            .acl(BucketCannedAcl::Private)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("BucketAlreadyOwnedByYou"));
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert_eq!(acl.grants().len(), 2, "the ACL is left alone");
        // Five grant headers to the other key: exactly five grants.
        let grant = format!("id={other_id}");
        s3.put_object()
            .bucket(b)
            .key("k")
            .grant_read(&grant)
            .grant_read_acp(&grant)
            .grant_write_acp(&grant)
            .grant_full_control(&grant)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        let acl = s3.get_object_acl().bucket(b).key("k").send().await.unwrap();
        let got = summary(acl.grants());
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got.iter().all(|(who, _)| *who == other_id), "{got:?}");
        // A document that lowers the owner to READ is kept as given; an empty one too.
        let user = |id: &str| {
            Grantee::builder()
                .r#type(Type::CanonicalUser)
                .id(id)
                .build()
                .unwrap()
        };
        let owner = Owner::builder().id(&owner_id).build();
        s3.put_bucket_acl()
            .bucket(b)
            .access_control_policy(
                AccessControlPolicy::builder()
                    .owner(owner.clone())
                    .grants(
                        Grant::builder()
                            .grantee(user(&owner_id))
                            .permission(Permission::Read)
                            .build(),
                    )
                    .grants(
                        Grant::builder()
                            .grantee(user(&other_id))
                            .permission(Permission::Write)
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert_eq!(
            summary(acl.grants()),
            [
                (owner_id.clone(), "READ".to_owned()),
                (other_id.clone(), "WRITE".to_owned())
            ]
        );
        s3.put_bucket_acl()
            .bucket(b)
            .access_control_policy(AccessControlPolicy::builder().owner(owner).build())
            .send()
            .await
            .unwrap();
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert!(acl.grants().is_empty(), "{:?}", acl.grants());
        // A canned ACL implies the owner's FULL_CONTROL again.
        s3.put_bucket_acl()
            .bucket(b)
            .acl(BucketCannedAcl::Private)
            .send()
            .await
            .unwrap();
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert_eq!(
            summary(acl.grants()),
            [(owner_id.clone(), "FULL_CONTROL".to_owned())]
        );
        // Grants by e-mail address name the key given that address; an unknown one is
        // UnresolvableGrantByEmailAddress.
        let (status, v) = crate::authz::admin(
            &gw,
            "POST",
            "/_grids3/admin/keys",
            serde_json::json!({"name": "mailed", "email": "Third@Example.com"}),
        )
        .await;
        assert_eq!(status, 201, "{v}");
        let third = gw.sdk_as(
            v["accessKeyId"].as_str().unwrap(),
            v["secretAccessKey"].as_str().unwrap(),
        );
        let third_id = third
            .list_buckets()
            .send()
            .await
            .unwrap()
            .owner()
            .unwrap()
            .id()
            .unwrap()
            .to_owned();
        s3.put_object()
            .bucket(b)
            .key("mailed")
            .grant_read("emailAddress=\"third@example.com\"")
            .body(ByteStream::from_static(b"for third"))
            .send()
            .await
            .unwrap();
        let acl = s3
            .get_object_acl()
            .bucket(b)
            .key("mailed")
            .send()
            .await
            .unwrap();
        assert_eq!(
            summary(acl.grants()),
            [(third_id.clone(), "READ".to_owned())]
        );
        let got = third
            .get_object()
            .bucket(b)
            .key("mailed")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"for third",
            "the grant by address gives the key access"
        );
        let e = s3
            .put_object()
            .bucket(b)
            .key("nobody")
            .grant_read("emailAddress=\"nobody@example.com\"")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("UnresolvableGrantByEmailAddress"));
        s3.put_bucket_acl()
            .bucket(b)
            .access_control_policy(
                AccessControlPolicy::builder()
                    .owner(Owner::builder().id(&owner_id).build())
                    .grants(
                        Grant::builder()
                            .grantee(
                                Grantee::builder()
                                    .r#type(Type::AmazonCustomerByEmail)
                                    .email_address("THIRD@example.com")
                                    .build()
                                    .unwrap(),
                            )
                            .permission(Permission::Read)
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let acl = s3.get_bucket_acl().bucket(b).send().await.unwrap();
        assert_eq!(summary(acl.grants()), [(third_id, "READ".to_owned())]);
    });
}

/// Issue 28 item 4: object ownership as AWS documents it. BucketOwnerEnforced takes no ACL but
/// `bucket-owner-full-control` (`private` included: AccessControlListNotSupported) on writes
/// and the ACL calls; BucketOwnerPreferred gives the bucket's owner an object written with
/// `bucket-owner-full-control`; CreateBucket's `x-amz-object-ownership` is kept.
#[test]
fn object_ownership_as_aws_documents_it() {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl, ObjectOwnership};
    support::run(async {
        let gw = support::gateway("ownership4").await;
        let s3 = gw.sdk();
        let (ak2, sk2) = new_key(&gw, "writer").await;
        let other = gw.sdk_as(&ak2, &sk2);
        let id_of = |c: &aws_sdk_s3::Client| {
            let c = c.clone();
            async move {
                c.list_buckets()
                    .send()
                    .await
                    .unwrap()
                    .owner()
                    .unwrap()
                    .id()
                    .unwrap()
                    .to_owned()
            }
        };
        let (owner_id, other_id) = (id_of(&s3).await, id_of(&other).await);
        for (b, setting) in [
            ("own-enforced", ObjectOwnership::BucketOwnerEnforced),
            ("own-preferred", ObjectOwnership::BucketOwnerPreferred),
            ("own-writer", ObjectOwnership::ObjectWriter),
        ] {
            s3.create_bucket()
                .bucket(b)
                .object_ownership(setting.clone())
                .send()
                .await
                .unwrap();
            let got = s3
                .get_bucket_ownership_controls()
                .bucket(b)
                .send()
                .await
                .unwrap();
            let rules = got.ownership_controls().unwrap().rules();
            assert_eq!(rules[0].object_ownership(), &setting, "{b}");
        }
        let put = |c: &aws_sdk_s3::Client, b: &str, k: &str, acl: Option<ObjectCannedAcl>| {
            c.put_object()
                .bucket(b)
                .key(k)
                .set_acl(acl)
                .body(ByteStream::from_static(b"x"))
                .send()
        };
        // Enforced: private and public-read refused, bucket-owner-full-control and none taken.
        let e = put(&s3, "own-enforced", "a", Some(ObjectCannedAcl::Private))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessControlListNotSupported"));
        let e = put(&s3, "own-enforced", "a", Some(ObjectCannedAcl::PublicRead))
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessControlListNotSupported"));
        put(
            &s3,
            "own-enforced",
            "a",
            Some(ObjectCannedAcl::BucketOwnerFullControl),
        )
        .await
        .unwrap();
        put(&s3, "own-enforced", "b", None).await.unwrap();
        let e = s3
            .put_object_acl()
            .bucket("own-enforced")
            .key("a")
            .acl(ObjectCannedAcl::Private)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessControlListNotSupported"));
        let e = s3
            .put_bucket_acl()
            .bucket("own-enforced")
            .acl(BucketCannedAcl::Private)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessControlListNotSupported"));
        // Preferred: the writer's object goes to the bucket's owner with
        // bucket-owner-full-control, and stays the writer's without.
        let grant = format!("id={other_id}");
        for b in ["own-preferred", "own-writer"] {
            s3.put_bucket_acl()
                .bucket(b)
                .grant_write(&grant)
                .grant_full_control(format!("id={owner_id}"))
                .send()
                .await
                .unwrap();
        }
        put(
            &other,
            "own-preferred",
            "given",
            Some(ObjectCannedAcl::BucketOwnerFullControl),
        )
        .await
        .unwrap();
        put(&other, "own-preferred", "kept", None).await.unwrap();
        put(
            &other,
            "own-writer",
            "kept",
            Some(ObjectCannedAcl::BucketOwnerFullControl),
        )
        .await
        .unwrap();
        let owner_of = |b: &'static str, k: &'static str, c: aws_sdk_s3::Client| async move {
            c.get_object_acl()
                .bucket(b)
                .key(k)
                .send()
                .await
                .unwrap()
                .owner()
                .unwrap()
                .id()
                .unwrap()
                .to_owned()
        };
        assert_eq!(
            owner_of("own-preferred", "given", s3.clone()).await,
            owner_id
        );
        assert_eq!(
            owner_of("own-preferred", "kept", other.clone()).await,
            other_id
        );
        assert_eq!(
            owner_of("own-writer", "kept", other.clone()).await,
            other_id
        );
    });
}
