//! Issue 35 items 1, 2 and 4: every request is authorized by its whole shape. A presigned URL
//! carries no `x-amz-*` header it did not sign; a request that names a version is checked as
//! the `*Version*` action, DeleteObjects entry by entry and a copy source by its version too;
//! lock headers need `s3:PutObjectRetention` / `s3:PutObjectLegalHold`, and a governance
//! bypass `s3:BypassGovernanceRetention`.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    Delete, ObjectIdentifier, ObjectLockLegalHoldStatus, ObjectLockMode, Tag, Tagging,
};

use crate::support::{self, Raw};

/// The error code of an SDK call (`ok` for success); a HEAD's error, which has no body, is
/// named by its status.
fn code<T, E: ProvideErrorMetadata>(
    r: Result<T, aws_sdk_s3::error::SdkError<E, aws_sdk_s3::config::http::HttpResponse>>,
) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => match (e.code(), e.raw_response().map(|r| r.status().as_u16())) {
            (Some(c), _) => c.to_owned(),
            (None, Some(403)) => "AccessDenied".to_owned(),
            (None, Some(404)) => "NotFound".to_owned(),
            (None, s) => format!("status {s:?}"),
        },
    }
}

fn not_signed(body: &str) -> String {
    body.split("<HeadersNotSigned>")
        .nth(1)
        .and_then(|s| s.split("</HeadersNotSigned>").next())
        .unwrap_or("")
        .to_owned()
}

/// Item 1: a presigned PUT that signed only `host`, sent with each `x-amz-*` header the
/// source reads, is refused before it does anything; the reproduction from the issue (an
/// unsigned `x-amz-copy-source` turning the PUT into a copy of a secret) first.
#[test]
fn presigned_urls_refuse_every_unsigned_amz_header() {
    support::run(async {
        let gw = support::gateway("unsigned").await;
        let s3 = gw.sdk();
        for b in ["uploads", "secret"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
        }
        s3.put_object()
            .bucket("secret")
            .key("payroll.xlsx")
            .body(ByteStream::from_static(b"the payroll"))
            .send()
            .await
            .unwrap();
        let cfg = PresigningConfig::expires_in(std::time::Duration::from_secs(600)).unwrap();
        let url = s3
            .put_object()
            .bucket("uploads")
            .key("u1.jpg")
            .presigned(cfg.clone())
            .await
            .unwrap()
            .uri()
            .to_owned();
        assert!(url.contains("X-Amz-SignedHeaders=host&"), "{url}");
        let http = reqwest::Client::new();
        let r = http
            .put(&url)
            .header("x-amz-copy-source", "/secret/payroll.xlsx")
            .send()
            .await
            .unwrap();
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert_eq!(
            (status, support::error_code(&body).as_str()),
            (403, "AccessDenied"),
            "{body}"
        );
        assert!(
            body.contains("There were headers present in the request which were not signed"),
            "{body}"
        );
        assert_eq!(not_signed(&body), "x-amz-copy-source");
        assert_eq!(
            code(
                s3.head_object()
                    .bucket("uploads")
                    .key("u1.jpg")
                    .send()
                    .await
            ),
            "NotFound",
            "nothing written by the refused copy"
        );

        // Every x-amz-* header the source reads, alone; names that are prefixes get a suffix.
        let (headers, _) = crate::honoured::names_in_source();
        let mut sent = 0;
        for name in &headers {
            if name == "x-amz-content-sha256" {
                continue;
            }
            let name = if name.ends_with('-') {
                format!("{name}x")
            } else {
                name.clone()
            };
            let r = http
                .put(&url)
                .header(name.as_str(), "1")
                .body("data")
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let body = r.text().await.unwrap();
            if name == "x-amz-security-token" {
                // Refused before any signature is looked at (grids3 issues no session
                // tokens): 400 InvalidToken, signed or not.
                assert_eq!(
                    (status, support::error_code(&body).as_str()),
                    (400, "InvalidToken")
                );
                sent += 1;
                continue;
            }
            assert_eq!(
                (
                    status,
                    support::error_code(&body).as_str(),
                    not_signed(&body)
                ),
                (403, "AccessDenied", name.clone()),
                "unsigned {name}: {body}"
            );
            sent += 1;
        }
        assert!(sent > 60, "the walk found {sent} headers");
        assert_eq!(
            code(
                s3.head_object()
                    .bucket("uploads")
                    .key("u1.jpg")
                    .send()
                    .await
            ),
            "NotFound",
            "no refused request wrote anything"
        );
        // Several at once are all named, sorted.
        let r = http
            .put(&url)
            .header("x-amz-tagging", "a=b")
            .header("x-amz-acl", "public-read")
            .send()
            .await
            .unwrap();
        assert_eq!(
            not_signed(&r.text().await.unwrap()),
            "x-amz-acl, x-amz-tagging"
        );
        // x-amz-content-sha256 is the one AWS lets through: it is checked against the body.
        let r = http
            .put(&url)
            .header(
                "x-amz-content-sha256",
                grids3::auth::sigv4::sha256_hex(b"other"),
            )
            .body("data")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(
            support::error_code(&r.text().await.unwrap()),
            "XAmzContentSHA256Mismatch"
        );
        let r = http
            .put(&url)
            .header(
                "x-amz-content-sha256",
                grids3::auth::sigv4::sha256_hex(b"data"),
            )
            .header("x-amzn-trace-id", "Root=1-not-an-amz-header")
            .body("data")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        let got = s3
            .get_object()
            .bucket("uploads")
            .key("u1.jpg")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"data"
        );

        // A presigned URL that signed the header takes it.
        let url = s3
            .put_object()
            .bucket("uploads")
            .key("tagged")
            .tagging("a=b")
            .presigned(cfg.clone())
            .await
            .unwrap();
        let mut rb = http.put(url.uri()).body("t");
        for (k, v) in url.headers() {
            rb = rb.header(k, v);
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());

        // A header signature: the same rule (AWS answers the same for an Authorization header).
        let mut raw = Raw::new("PUT", "/uploads/h");
        raw.body = b"h".to_vec();
        let mut rb = http
            .put(format!("{}/uploads/h", gw.endpoint()))
            .body("h")
            .header("x-amz-tagging", "unsigned=1");
        for (k, v) in raw.signed_headers(&gw) {
            if k != "host" {
                rb = rb.header(k, v);
            }
        }
        let r = rb.send().await.unwrap();
        assert_eq!(r.status(), 403);
        assert_eq!(not_signed(&r.text().await.unwrap()), "x-amz-tagging");
        assert_eq!(
            code(s3.head_object().bucket("uploads").key("h").send().await),
            "NotFound"
        );

        // SigV2 signs every x-amz-* header: one added later breaks the signature.
        use grids3::auth::sigv2;
        let expires = (chrono::Utc::now().timestamp() + 300).to_string();
        let sts = sigv2::string_to_sign(
            "PUT",
            &axum::http::HeaderMap::new(),
            &expires,
            &sigv2::canonical_resource(None, "/uploads/v2", &[]),
        );
        let v2 = format!(
            "{}/uploads/v2?AWSAccessKeyId={}&Expires={expires}&Signature={}",
            gw.endpoint(),
            support::AK,
            percent_encoding::utf8_percent_encode(
                &sigv2::sign(support::SK, &sts),
                percent_encoding::NON_ALPHANUMERIC
            )
        );
        let r = http
            .put(&v2)
            .header("x-amz-copy-source", "/secret/payroll.xlsx")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        assert_eq!(
            support::error_code(&r.text().await.unwrap()),
            "SignatureDoesNotMatch"
        );
        let r = http.put(&v2).body("v2").send().await.unwrap();
        assert_eq!(r.status(), 200, "the SigV2 URL as signed works");

        // Unsigned requests take no response-* overrides (AWS refuses them), even where a
        // policy makes the object public.
        s3.put_bucket_policy()
            .bucket("uploads")
            .policy(
                r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::uploads/*"}]}"#,
            )
            .send()
            .await
            .unwrap();
        let public = format!("{}/uploads/v2", gw.endpoint());
        let r = http.get(&public).send().await.unwrap();
        assert_eq!(r.status(), 200, "the object is public");
        let r = http
            .get(format!("{public}?response-content-type=text/html"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 400);
        assert_eq!(
            support::error_code(&r.text().await.unwrap()),
            "InvalidRequest"
        );
    });
}

async fn set_deny(s3: &aws_sdk_s3::Client, b: &str, action: &str) {
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": action,
            "Resource": format!("arn:aws:s3:::{b}/*"),
        }],
    });
    s3.put_bucket_policy()
        .bucket(b)
        .policy(policy.to_string())
        .send()
        .await
        .unwrap();
}

/// Item 2: for each operation that can name a version, a policy that denies its `*Version*`
/// action alone refuses it with the version named, and not without (a Deny binds the root
/// key, so the root key's own requests show it).
#[test]
fn operations_naming_a_version_are_checked_as_their_version_actions() {
    support::run(async {
        let gw = support::gateway("vshape").await;
        let s3 = gw.sdk();
        let b = "vshape";
        s3.create_bucket()
            .bucket(b)
            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
            .send()
            .await
            .unwrap();
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
        let mut vids = Vec::new();
        for body in ["one", "two", "three"] {
            let put = s3
                .put_object()
                .bucket(b)
                .key("k")
                .body(ByteStream::from_static(body.as_bytes()))
                .send()
                .await
                .unwrap();
            vids.push(put.version_id().unwrap().to_owned());
        }
        let v1 = vids[0].clone();
        let tagging = || {
            Tagging::builder()
                .tag_set(Tag::builder().key("t").value("v").build().unwrap())
                .build()
                .unwrap()
        };
        // (action denied, operation, with the version: refused, without: allowed)
        macro_rules! check {
            ($action:expr, $name:expr, |$v:ident| $call:expr) => {{
                set_deny(&s3, b, $action).await;
                let $v: Option<String> = Some(v1.clone());
                assert_eq!(
                    code($call.await),
                    "AccessDenied",
                    "{} with a version",
                    $name
                );
                let $v: Option<String> = None;
                assert_eq!(code($call.await), "ok", "{} without a version", $name);
            }};
        }
        check!("s3:GetObjectVersion", "GetObject", |v| s3
            .get_object()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .send());
        check!("s3:GetObjectVersion", "HeadObject", |v| s3
            .head_object()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .send());
        check!("s3:GetObjectVersionTagging", "GetObjectTagging", |v| s3
            .get_object_tagging()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .send());
        check!("s3:PutObjectVersionTagging", "PutObjectTagging", |v| s3
            .put_object_tagging()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .tagging(tagging())
            .send());
        check!(
            "s3:DeleteObjectVersionTagging",
            "DeleteObjectTagging",
            |v| s3
                .delete_object_tagging()
                .bucket(b)
                .key("k")
                .set_version_id(v)
                .send()
        );
        check!("s3:GetObjectVersionAcl", "GetObjectAcl", |v| s3
            .get_object_acl()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .send());
        check!("s3:PutObjectVersionAcl", "PutObjectAcl", |v| s3
            .put_object_acl()
            .bucket(b)
            .key("k")
            .set_version_id(v)
            .acl(aws_sdk_s3::types::ObjectCannedAcl::Private)
            .send());
        check!(
            "s3:GetObjectVersionAttributes",
            "GetObjectAttributes",
            |v| s3
                .get_object_attributes()
                .bucket(b)
                .key("k")
                .set_version_id(v)
                .object_attributes(aws_sdk_s3::types::ObjectAttributes::Etag)
                .send()
        );
        check!("s3:GetObjectVersion", "CopyObject (source version)", |v| s3
            .copy_object()
            .bucket(b)
            .key("copy")
            .copy_source(match v {
                Some(v) => format!("{b}/k?versionId={v}"),
                None => format!("{b}/k"),
            })
            .send());
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("mp")
            .send()
            .await
            .unwrap()
            .upload_id()
            .unwrap()
            .to_owned();
        check!(
            "s3:GetObjectVersion",
            "UploadPartCopy (source version)",
            |v| s3
                .upload_part_copy()
                .bucket(b)
                .key("mp")
                .upload_id(&up)
                .part_number(1)
                .copy_source(match v {
                    Some(v) => format!("{b}/k?versionId={v}"),
                    None => format!("{b}/k"),
                })
                .send()
        );
        // DeleteObject of a version; without one it makes a delete marker.
        set_deny(&s3, b, "s3:DeleteObjectVersion").await;
        assert_eq!(
            code(
                s3.delete_object()
                    .bucket(b)
                    .key("k")
                    .version_id(&v1)
                    .send()
                    .await
            ),
            "AccessDenied"
        );
        // DeleteObjects: each entry as the DeleteObject of its shape (the hole of item 2).
        let out = s3
            .delete_objects()
            .bucket(b)
            .delete(
                Delete::builder()
                    .objects(
                        ObjectIdentifier::builder()
                            .key("k")
                            .version_id(&v1)
                            .build()
                            .unwrap(),
                    )
                    .objects(ObjectIdentifier::builder().key("k").build().unwrap())
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let errors: Vec<_> = out
            .errors()
            .iter()
            .map(|e| (e.key(), e.version_id(), e.code()))
            .collect();
        assert_eq!(
            errors,
            [(Some("k"), Some(v1.as_str()), Some("AccessDenied"))],
            "the version entry is refused"
        );
        assert_eq!(
            out.deleted().len(),
            1,
            "the plain entry made a delete marker"
        );
        assert!(out.deleted()[0].delete_marker().unwrap_or(false));
        // s3:ExistingObjectTag is the addressed version's tag, not the current version's.
        s3.put_object_tagging()
            .bucket(b)
            .key("k")
            .version_id(&v1)
            .tagging(
                Tagging::builder()
                    .tag_set(Tag::builder().key("secret").value("yes").build().unwrap())
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let policy = serde_json::json!({"Statement": [{
            "Effect": "Deny", "Principal": "*", "Action": "s3:GetObjectVersion",
            "Resource": format!("arn:aws:s3:::{b}/*"),
            "Condition": {"StringEquals": {"s3:ExistingObjectTag/secret": "yes"}},
        }]});
        s3.put_bucket_policy()
            .bucket(b)
            .policy(policy.to_string())
            .send()
            .await
            .unwrap();
        let get = |v: String| s3.get_object().bucket(b).key("k").version_id(v).send();
        assert_eq!(
            code(get(v1.clone()).await),
            "AccessDenied",
            "the tagged version"
        );
        assert_eq!(
            code(get(vids[2].clone()).await),
            "ok",
            "an untagged version"
        );
        s3.delete_bucket_policy().bucket(b).send().await.unwrap();
        let versions = s3.list_object_versions().bucket(b).send().await.unwrap();
        assert!(
            versions
                .versions()
                .iter()
                .any(|v| v.version_id() == Some(v1.as_str())),
            "version v1 is still there"
        );
    });
}

async fn lock_bucket(s3: &aws_sdk_s3::Client, b: &str) {
    s3.create_bucket()
        .bucket(b)
        .object_lock_enabled_for_bucket(true)
        .send()
        .await
        .unwrap();
}

async fn set_allow(s3: &aws_sdk_s3::Client, b: &str, who: &str, actions: &[&str]) {
    let policy = serde_json::json!({
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"AWS": who},
             "Action": actions, "Resource": format!("arn:aws:s3:::{b}/*")},
            {"Effect": "Allow", "Principal": {"AWS": who},
             "Action": "s3:ListBucket", "Resource": format!("arn:aws:s3:::{b}")},
        ],
    });
    s3.put_bucket_policy()
        .bucket(b)
        .policy(policy.to_string())
        .send()
        .await
        .unwrap();
}

/// Item 4: a key allowed only `s3:PutObject` cannot lock what it writes; with
/// `s3:PutObjectRetention` (and `s3:PutObjectLegalHold`) it can. A governance bypass needs
/// `s3:BypassGovernanceRetention`, and a Deny of it binds the bucket's owner too.
#[test]
fn lock_headers_need_their_own_actions() {
    support::run(async {
        let gw = support::gateway("lockshape").await;
        let s3 = gw.sdk();
        let b = "lockshape";
        lock_bucket(&s3, b).await;
        let (ak, sk) = crate::authz::new_key(&gw, "writer").await;
        let app = gw.sdk_as(&ak, &sk);
        set_allow(&s3, b, &ak, &["s3:PutObject", "s3:GetObject"]).await;
        let later = DateTime::from_secs(chrono::Utc::now().timestamp() + 3600);
        let put = |key: &'static str| {
            app.put_object()
                .bucket(b)
                .key(key)
                .body(ByteStream::from_static(b"x"))
        };
        assert_eq!(code(put("plain").send().await), "ok");
        assert_eq!(
            code(
                put("compliance")
                    .object_lock_mode(ObjectLockMode::Compliance)
                    .object_lock_retain_until_date(later)
                    .send()
                    .await
            ),
            "AccessDenied"
        );
        assert_eq!(
            code(
                put("held")
                    .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
                    .send()
                    .await
            ),
            "AccessDenied"
        );
        assert_eq!(
            code(
                app.copy_object()
                    .bucket(b)
                    .key("copied")
                    .copy_source(format!("{b}/plain"))
                    .object_lock_mode(ObjectLockMode::Governance)
                    .object_lock_retain_until_date(later)
                    .send()
                    .await
            ),
            "AccessDenied"
        );
        assert_eq!(
            code(
                app.create_multipart_upload()
                    .bucket(b)
                    .key("mp")
                    .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
                    .send()
                    .await
            ),
            "AccessDenied"
        );
        for key in ["compliance", "held", "copied"] {
            assert_eq!(
                code(s3.head_object().bucket(b).key(key).send().await),
                "NotFound",
                "{key}: nothing stored"
            );
        }
        // With the lock actions allowed, the same writes lock.
        set_allow(
            &s3,
            b,
            &ak,
            &[
                "s3:PutObject",
                "s3:GetObject",
                "s3:PutObjectRetention",
                "s3:PutObjectLegalHold",
                "s3:DeleteObjectVersion",
            ],
        )
        .await;
        let locked = put("governed")
            .object_lock_mode(ObjectLockMode::Governance)
            .object_lock_retain_until_date(later)
            .send()
            .await
            .unwrap();
        let vid = locked.version_id().unwrap().to_owned();
        assert_eq!(
            code(
                put("held")
                    .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
                    .send()
                    .await
            ),
            "ok"
        );
        // A bypass needs s3:BypassGovernanceRetention: without it the version stays.
        let delete = || {
            app.delete_object()
                .bucket(b)
                .key("governed")
                .version_id(&vid)
                .bypass_governance_retention(true)
                .send()
        };
        assert_eq!(code(delete().await), "AccessDenied");
        set_allow(
            &s3,
            b,
            &ak,
            &[
                "s3:PutObject",
                "s3:DeleteObjectVersion",
                "s3:BypassGovernanceRetention",
            ],
        )
        .await;
        assert_eq!(code(delete().await), "ok", "the bypass is allowed now");
        // A Deny of the bypass binds the owner (the root key) too.
        let again = s3
            .put_object()
            .bucket(b)
            .key("governed2")
            .object_lock_mode(ObjectLockMode::Governance)
            .object_lock_retain_until_date(later)
            .body(ByteStream::from_static(b"y"))
            .send()
            .await
            .unwrap();
        let vid2 = again.version_id().unwrap().to_owned();
        set_deny(&s3, b, "s3:BypassGovernanceRetention").await;
        let owner_delete = || {
            s3.delete_object()
                .bucket(b)
                .key("governed2")
                .version_id(&vid2)
                .bypass_governance_retention(true)
                .send()
        };
        assert_eq!(code(owner_delete().await), "AccessDenied");
        // DeleteObjects too: the bypass is decided per entry, on the entry's object.
        let out = s3
            .delete_objects()
            .bucket(b)
            .bypass_governance_retention(true)
            .delete(
                Delete::builder()
                    .objects(
                        ObjectIdentifier::builder()
                            .key("governed2")
                            .version_id(&vid2)
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(
            out.errors().iter().map(|e| e.code()).collect::<Vec<_>>(),
            [Some("AccessDenied")],
            "a denied bypass keeps the locked version in DeleteObjects too"
        );
        // A header given twice would let a policy condition see one value and the write
        // use the other: refused.
        let twice = s3
            .put_object()
            .bucket(b)
            .key("twice")
            .body(ByteStream::from_static(b"t"))
            .customize()
            .mutate_request(|r| {
                r.headers_mut().append("x-amz-storage-class", "STANDARD");
                r.headers_mut().append("x-amz-storage-class", "STANDARD_IA");
            })
            .send()
            .await;
        assert_eq!(code(twice), "InvalidArgument");
        s3.delete_bucket_policy().bucket(b).send().await.unwrap();
        assert_eq!(code(owner_delete().await), "ok", "the owner may bypass");
    });
}
