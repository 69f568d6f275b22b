//! Conditional requests: `If-Match`, `If-None-Match`, `If-Modified-Since`,
//! `If-Unmodified-Since` and their copy-source forms, against what was found.

use std::time::UNIX_EPOCH;

use axum::http::HeaderMap;
use mongodb::bson::DateTime;

use crate::error::{S3Error, S3Result};
use crate::s3::request::headers::secs;
use crate::storage::objects::ObjectInfo;

/// The `x-amz-copy-source-if-*` conditions (CopyObject, UploadPartCopy). Every failed one is
/// 412: a copy has no 304.
pub fn check_copy_source(h: &HeaderMap, src: &ObjectInfo) -> S3Result<()> {
    let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok());
    let pre = evaluate(
        get("x-amz-copy-source-if-match"),
        get("x-amz-copy-source-if-unmodified-since"),
        get("x-amz-copy-source-if-none-match"),
        get("x-amz-copy-source-if-modified-since"),
        src.etag(),
        src.file.upload_date,
    );
    if pre == Precondition::Proceed {
        Ok(())
    } else {
        Err(S3Error::precondition_failed())
    }
}

/// The result of evaluating conditional headers.
#[derive(Debug, PartialEq, Eq)]
pub enum Precondition {
    /// Serve the request.
    Proceed,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

fn etag_matches(list: &str, etag: &str) -> bool {
    let bare = |s: &str| {
        s.trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_owned()
    };
    let want = bare(etag);
    list.split(',').any(|t| t.trim() == "*" || bare(t) == want)
}

/// Whether a Range still applies under `If-Range` (RFC 9110 section 13.1.5): with none, yes;
/// an entity tag must match the object's strongly (a weak one never does); a date must be the
/// object's Last-Modified exactly. Anything else (an unparseable value) does not hold, and the
/// whole object is sent.
pub fn if_range_holds(if_range: Option<&str>, etag: &str, last_modified: DateTime) -> bool {
    let Some(v) = if_range.map(str::trim) else {
        return true;
    };
    if v.starts_with("W/") {
        return false;
    }
    if v.starts_with('"') {
        return v == etag.trim();
    }
    httpdate::parse_http_date(v)
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .is_some_and(|d| d.as_secs() as i64 == secs(last_modified))
}

/// RFC 9110 section 13.2.2 precedence: If-Match, else If-Unmodified-Since; then If-None-Match,
/// else If-Modified-Since (the latter two give 304 on GET/HEAD).
pub fn evaluate(
    if_match: Option<&str>,
    if_unmodified_since: Option<&str>,
    if_none_match: Option<&str>,
    if_modified_since: Option<&str>,
    etag: &str,
    last_modified: DateTime,
) -> Precondition {
    let date = |s: &str| {
        httpdate::parse_http_date(s).ok().map(|t| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        })
    };
    let lm = secs(last_modified);
    if let Some(m) = if_match {
        if !etag_matches(m, etag) {
            return Precondition::Failed;
        }
    } else if let Some(t) = if_unmodified_since.and_then(date) {
        if lm > t {
            return Precondition::Failed;
        }
    }
    if let Some(m) = if_none_match {
        if etag_matches(m, etag) {
            return Precondition::NotModified;
        }
    } else if let Some(t) = if_modified_since.and_then(date) {
        if lm <= t {
            return Precondition::NotModified;
        }
    }
    Precondition::Proceed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn if_range_needs_the_same_object() {
        let lm = DateTime::from_millis(1_700_000_000_500);
        let etag = "\"abc\"";
        let exact =
            httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000));
        for (v, holds) in [
            (None, true),
            (Some("\"abc\""), true),
            (Some("\"abd\""), false),
            (Some("W/\"abc\""), false),
            (Some(exact.as_str()), true),
            (Some("Tue, 14 Nov 2023 22:00:00 GMT"), false),
            (Some("yesterday"), false),
        ] {
            assert_eq!(if_range_holds(v, etag, lm), holds, "{v:?}");
        }
    }

    #[test]
    fn conditional_precedence() {
        let lm = DateTime::from_millis(1_700_000_000_500);
        let before = "Tue, 14 Nov 2023 22:00:00 GMT"; // earlier than lm
        let after = "Wed, 15 Nov 2023 00:00:00 GMT";
        let e = "\"abc\"";
        use Precondition::*;
        assert_eq!(evaluate(Some("\"abc\""), None, None, None, e, lm), Proceed);
        assert_eq!(evaluate(Some("\"x\""), None, None, None, e, lm), Failed);
        // If-Match true wins over a failing If-Unmodified-Since.
        assert_eq!(
            evaluate(Some("*"), Some(before), None, None, e, lm),
            Proceed
        );
        assert_eq!(evaluate(None, Some(before), None, None, e, lm), Failed);
        assert_eq!(
            evaluate(None, None, Some("\"abc\""), None, e, lm),
            NotModified
        );
        // If-None-Match false wins over a true If-Modified-Since... and takes precedence.
        assert_eq!(
            evaluate(None, None, Some("\"zz\""), Some(after), e, lm),
            Proceed
        );
        assert_eq!(evaluate(None, None, None, Some(after), e, lm), NotModified);
        assert_eq!(evaluate(None, None, None, Some(before), e, lm), Proceed);
    }
}
