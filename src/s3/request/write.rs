//! What a request that writes a new object asks for, parsed once: PutObject, and a POST form
//! (whose fields arrive as headers). Handlers and decisions take the [`WriteSpec`], never the
//! raw headers again.

use axum::http::HeaderMap;

use crate::crypto::SseSpec;
use crate::error::S3Result;
use crate::s3::request::headers::{meta_from_headers, storage_class_of, write_condition};
use crate::s3::request::{content_md5_of, sse, tagging};
use crate::storage::objects::{ObjectMeta, WriteCondition};

/// The Object Lock headers of a write, as sent (trimmed). Whether they are allowed and what
/// they mean depends on the bucket, so `s3::rules::lock::for_new_object` checks them: a
/// bucket without Object Lock refuses them before their values are looked at, as AWS does.
#[derive(Clone, Debug, Default)]
pub struct LockHeaders {
    /// `x-amz-object-lock-mode`.
    pub mode: Option<String>,
    /// `x-amz-object-lock-retain-until-date`.
    pub until: Option<String>,
    /// `x-amz-object-lock-legal-hold`.
    pub hold: Option<String>,
}

impl LockHeaders {
    /// The lock headers of a request.
    pub fn parse(h: &HeaderMap) -> Self {
        let get = |n: &str| {
            h.get(n)
                .and_then(|v| v.to_str().ok())
                .map(|v| v.trim().to_owned())
        };
        Self {
            mode: get("x-amz-object-lock-mode"),
            until: get("x-amz-object-lock-retain-until-date"),
            hold: get("x-amz-object-lock-legal-hold"),
        }
    }
}

/// A new object's request: everything but its body.
#[derive(Debug)]
pub struct WriteSpec {
    /// `Content-MD5`, decoded.
    pub md5: Option<[u8; 16]>,
    /// `If-Match` / `If-None-Match` on the key.
    pub condition: WriteCondition,
    /// The attributes the object keeps: content headers, user metadata, ACL grants, tags.
    /// Its owner, retention and content fields are decided later.
    pub meta: ObjectMeta,
    /// `x-amz-acl` as sent (ownership reads `bucket-owner-full-control` in it).
    pub canned_acl: Option<String>,
    /// The Object Lock headers.
    pub lock: LockHeaders,
    /// The encryption asked for (`None`: none; the bucket's default may still apply).
    pub sse: Option<SseSpec>,
}

impl WriteSpec {
    /// Parses a write's headers, with AWS's error for the first that is wrong (in this order:
    /// Content-MD5, conditions, tagging, encryption).
    pub fn parse(h: &HeaderMap) -> S3Result<Self> {
        // The headers that cannot be wrong first; then the checked ones, in AWS's order.
        let lock = LockHeaders::parse(h);
        let canned_acl = h
            .get("x-amz-acl")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let md5 = content_md5_of(h)?;
        let condition = write_condition(h)?;
        let mut meta = meta_from_headers(h)?;
        meta.tags = tagging::from_header(h.get("x-amz-tagging").and_then(|v| v.to_str().ok()))?;
        meta.storage_class = storage_class_of(h)?;
        meta.website_redirect = super::headers::website_redirect_of(h)?;
        Ok(Self {
            md5,
            condition,
            meta,
            canned_acl,
            lock,
            sse: sse::write_spec(h)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::request::test_headers as headers;

    #[test]
    fn a_write_is_parsed_once_with_aws_errors() {
        let ok = WriteSpec::parse(&headers(&[
            ("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg=="),
            ("content-type", "text/plain"),
            ("x-amz-meta-a", "1"),
            ("x-amz-tagging", "k=v&x"),
            ("x-amz-acl", "bucket-owner-full-control"),
            ("x-amz-object-lock-mode", " GOVERNANCE "),
            ("x-amz-server-side-encryption", "AES256"),
        ]))
        .unwrap();
        assert!(ok.md5.is_some());
        assert_eq!(ok.meta.content_type.as_deref(), Some("text/plain"));
        assert_eq!(ok.meta.tags.len(), 2);
        assert_eq!(ok.canned_acl.as_deref(), Some("bucket-owner-full-control"));
        assert_eq!(ok.lock.mode.as_deref(), Some("GOVERNANCE"));
        assert!(ok.lock.until.is_none() && ok.lock.hold.is_none());
        assert!(matches!(ok.sse, Some(SseSpec::S3 { .. })));
        let code = |pairs: &[(&str, &str)]| WriteSpec::parse(&headers(pairs)).unwrap_err().code;
        assert_eq!(code(&[("content-md5", "nope")]), "InvalidDigest");
        assert_eq!(
            code(&[("x-amz-server-side-encryption", "AES512")]),
            "InvalidArgument"
        );
        // The first wrong header answers: Content-MD5 before encryption.
        assert_eq!(
            code(&[
                ("content-md5", "nope"),
                ("x-amz-server-side-encryption", "AES512")
            ]),
            "InvalidDigest"
        );
    }
}
