//! Bucket policies with the three principals (root, a second key, unsigned requests): boto3,
//! curl and awscli in `tests/py/policy.py`, and the AWS SDK for Rust here.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;

use crate::authz::{admin, new_key};
use crate::support;

#[test]
fn policies_with_boto3_awscli_and_curl() {
    support::run(async {
        let gw = support::gateway("policypy").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "policy.py", "policy", &[&ak2, &sk2]).await;
    });
}

#[test]
fn policies_with_the_rust_sdk() {
    support::run(async {
        let gw = support::gateway("policysdk").await;
        let (ak2, sk2) = new_key(&gw, "uploader").await;
        let root = gw.sdk();
        let other = gw.sdk_as(&ak2, &sk2);
        root.create_bucket().bucket("inbox").send().await.unwrap();
        // The second key may upload under uploads/, except objects tagged secret=yes.
        let doc = serde_json::json!({
            "Version": "2012-10-17",
            "Statement": [
                {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:PutObject",
                 "Resource": "arn:aws:s3:::inbox/uploads/*"},
                {"Effect": "Allow", "Principal": {"AWS": ak2}, "Action": "s3:PutObjectTagging",
                 "Resource": "arn:aws:s3:::inbox/uploads/*",
                 "Condition": {"StringEquals": {"s3:RequestObjectTag/class": "public"}}},
                {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
                 "Resource": "arn:aws:s3:::inbox/*",
                 "Condition": {"StringEquals": {"s3:RequestObjectTag/secret": "yes"}}}
            ]
        });
        root.put_bucket_policy()
            .bucket("inbox")
            .policy(doc.to_string())
            .send()
            .await
            .unwrap();
        other
            .put_object()
            .bucket("inbox")
            .key("uploads/a.txt")
            .body(ByteStream::from_static(b"a"))
            .send()
            .await
            .unwrap();
        let e = other
            .put_object()
            .bucket("inbox")
            .key("elsewhere/a.txt")
            .body(ByteStream::from_static(b"a"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"), "outside the prefix");
        let e = other
            .put_object()
            .bucket("inbox")
            .key("uploads/s.txt")
            .tagging("secret=yes")
            .body(ByteStream::from_static(b"s"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"), "a denied request tag");
        // PutObjectTagging's body is a request tag set the policy's conditions see.
        let tagging = |v: &str| {
            aws_sdk_s3::types::Tagging::builder()
                .tag_set(
                    aws_sdk_s3::types::Tag::builder()
                        .key("class")
                        .value(v)
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap()
        };
        other
            .put_object_tagging()
            .bucket("inbox")
            .key("uploads/a.txt")
            .tagging(tagging("public"))
            .send()
            .await
            .unwrap();
        let e = other
            .put_object_tagging()
            .bucket("inbox")
            .key("uploads/a.txt")
            .tagging(tagging("secret"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Some("AccessDenied"),
            "a tag the policy does not allow"
        );
        // Multipart uploads are s3:PutObject too.
        let up = other
            .create_multipart_upload()
            .bucket("inbox")
            .key("uploads/big.bin")
            .send()
            .await
            .unwrap();
        other
            .abort_multipart_upload()
            .bucket("inbox")
            .key("uploads/big.bin")
            .upload_id(up.upload_id().unwrap())
            .send()
            .await
            .expect_err("AbortMultipartUpload is its own action, not granted");
        let got = root
            .get_object()
            .bucket("inbox")
            .key("uploads/a.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"a"
        );
        let e = other
            .get_bucket_policy()
            .bucket("inbox")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"));
        // The admin API explains both decisions.
        let why = |key: &'static str, action: &'static str| serde_json::json!({"accessKeyId": ak2, "bucket": "inbox", "key": key, "action": action});
        let (status, allowed) = admin(
            &gw,
            "POST",
            "/_grids3/admin/access",
            why("uploads/x", "s3:PutObject"),
        )
        .await;
        assert_eq!(status, 200, "{allowed}");
        assert_eq!(allowed["allowed"], true, "{allowed}");
        assert_eq!(
            allowed["rule"], "an Allow in the bucket policy",
            "{allowed}"
        );
        assert_eq!(allowed["inputs"]["policy"], "Allow", "{allowed}");
        let (_, denied) = admin(
            &gw,
            "POST",
            "/_grids3/admin/access",
            why("elsewhere/x", "s3:PutObject"),
        )
        .await;
        assert_eq!(denied["allowed"], false, "{denied}");
        assert_eq!(denied["inputs"]["policy"], "Silent", "{denied}");
        root.delete_bucket_policy()
            .bucket("inbox")
            .send()
            .await
            .unwrap();
        let e = other
            .put_object()
            .bucket("inbox")
            .key("uploads/b.txt")
            .body(ByteStream::from_static(b"b"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"), "the policy is gone");
    });
}
