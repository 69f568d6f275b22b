//! Header helpers shared by the handlers: dates, Range, conditional requests, object
//! attributes in and out.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use mongodb::bson::DateTime;

use crate::error::{S3Error, S3Result};
use crate::storage::objects::{DeleteCondition, ObjectMeta, WriteCondition};

/// A Content-Encoding without its `aws-chunked` token, which is transport framing, not the
/// object's encoding. The other codings keep the client's own separators (`aws-chunked,
/// deflate, gzip` is stored as `deflate, gzip`, as AWS stores it).
pub fn without_aws_chunked(e: &str) -> String {
    e.split(',')
        .filter(|p| !p.trim().eq_ignore_ascii_case("aws-chunked"))
        .collect::<Vec<_>>()
        .join(",")
        .trim_start()
        .to_owned()
}

/// ISO 8601 with milliseconds, as S3 XML uses.
pub fn iso8601(d: DateTime) -> String {
    d.to_chrono().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

pub(crate) fn system_time(d: DateTime) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(d.timestamp_millis().max(0) as u64)
}

/// RFC 9110 HTTP-date.
pub fn http_date(d: DateTime) -> String {
    httpdate::fmt_http_date(system_time(d))
}

/// Seconds since the epoch (HTTP dates have second precision).
pub(crate) fn secs(d: DateTime) -> i64 {
    d.timestamp_millis().div_euclid(1000)
}

/// A byte range to serve.
#[derive(Debug, PartialEq, Eq)]
pub enum RangeSpec {
    /// The whole object (no Range, or one grids3 ignores as RFC 9110 allows).
    Full,
    /// Bytes `[start, end)`.
    Part(u64, u64),
}

/// Parses a single-range `Range` header against a length. Syntactically invalid or
/// multi-range headers are ignored (the whole object is served), as RFC 9110 permits and S3
/// does; a valid but unsatisfiable range is `InvalidRange`.
/// `?partNumber=N` of GetObject/HeadObject as a byte range: the part's bytes of a multipart
/// object (`sizes` are its parts'), or the whole of any other object for part 1, as S3 answers
/// (206 either way). `N` past the last part is `InvalidPartNumber` (416).
pub fn part_range(n: &str, sizes: &[u64], length: u64) -> S3Result<(u64, u64)> {
    let n: usize = n
        .trim()
        .parse()
        .ok()
        .filter(|n| (1..=10_000).contains(n))
        .ok_or_else(|| {
            S3Error::invalid_argument(
                "Part number must be an integer between 1 and 10000, inclusive",
            )
        })?;
    let unsatisfiable = || S3Error {
        code: "InvalidPartNumber",
        status: axum::http::StatusCode::RANGE_NOT_SATISFIABLE,
        message: "The requested partnumber is not satisfiable".into(),
        headers: Vec::new(),
        extra: Vec::new(),
    };
    if sizes.is_empty() {
        return if n == 1 {
            Ok((0, length))
        } else {
            Err(unsatisfiable())
        };
    }
    if n > sizes.len() {
        return Err(unsatisfiable());
    }
    let start: u64 = sizes[..n - 1].iter().sum();
    Ok((start, start + sizes[n - 1]))
}

pub fn parse_range(header: Option<&str>, length: u64) -> S3Result<RangeSpec> {
    let Some(h) = header else {
        return Ok(RangeSpec::Full);
    };
    let Some(spec) = h.trim().strip_prefix("bytes=") else {
        return Ok(RangeSpec::Full);
    };
    if spec.contains(',') {
        return Ok(RangeSpec::Full);
    }
    let Some((a, b)) = spec.trim().split_once('-') else {
        return Ok(RangeSpec::Full);
    };
    let (a, b) = (a.trim(), b.trim());
    let unsatisfiable = || Err(S3Error::invalid_range());
    match (a.is_empty(), b.is_empty()) {
        (true, false) => {
            let Ok(n) = b.parse::<u64>() else {
                return Ok(RangeSpec::Full);
            };
            if n == 0 || length == 0 {
                return unsatisfiable();
            }
            Ok(RangeSpec::Part(length.saturating_sub(n), length))
        }
        (false, _) => {
            let Ok(start) = a.parse::<u64>() else {
                return Ok(RangeSpec::Full);
            };
            let end = if b.is_empty() {
                length
            } else {
                match b.parse::<u64>() {
                    // A last byte past the end (up to u64::MAX) means "to the end".
                    Ok(e) if e >= start => e.saturating_add(1).min(length),
                    _ => return Ok(RangeSpec::Full),
                }
            };
            if start >= length {
                return unsatisfiable();
            }
            Ok(RangeSpec::Part(start, end))
        }
        (true, true) => Ok(RangeSpec::Full),
    }
}

/// The write condition of PutObject / CompleteMultipartUpload (`If-None-Match: *`,
/// `If-Match: <etag>`). S3 supports no other If-None-Match value on writes.
pub fn write_condition(h: &HeaderMap) -> S3Result<WriteCondition> {
    let s = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    match (s("if-none-match"), s("if-match")) {
        (Some(_), Some(_)) => Err(S3Error::not_implemented()
            .with_message("If-Match and If-None-Match together are not supported")),
        (Some("*"), None) => Ok(WriteCondition::IfAbsent),
        (Some(e), None) => Ok(WriteCondition::IfNoneMatch(e.to_owned())),
        (None, Some(e)) => Ok(WriteCondition::IfMatch(e.to_owned())),
        (None, None) => Ok(WriteCondition::Always),
    }
}

/// A timestamp as S3 accepts one in a header or an XML body: RFC 3339 / ISO 8601, or an
/// HTTP-date.
pub fn parse_iso8601(s: &str) -> Option<DateTime> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(DateTime::from_millis(t.timestamp_millis()));
    }
    let t = httpdate::parse_http_date(s).ok()?;
    let ms = t.duration_since(UNIX_EPOCH).ok()?.as_millis();
    Some(DateTime::from_millis(ms as i64))
}

/// The conditions of a DeleteObject: `If-Match`, `x-amz-if-match-last-modified-time`,
/// `x-amz-if-match-size`.
pub fn delete_condition(h: &HeaderMap) -> S3Result<DeleteCondition> {
    let get = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::trim);
    let last_modified = match get("x-amz-if-match-last-modified-time") {
        Some(t) => Some(parse_iso8601(t).ok_or_else(|| {
            S3Error::invalid_argument("Invalid x-amz-if-match-last-modified-time")
        })?),
        None => None,
    };
    let size = match get("x-amz-if-match-size") {
        Some(n) => Some(
            n.parse::<u64>()
                .map_err(|_| S3Error::invalid_argument("Invalid x-amz-if-match-size"))?,
        ),
        None => None,
    };
    Ok(DeleteCondition {
        if_match: get("if-match").map(str::to_owned),
        last_modified,
        size,
        bypass_governance: false,
        revision: None,
    })
}

/// `x-amz-storage-class`: `None` for none or STANDARD (stored as no class), the class for one
/// grids3 keeps, `400 InvalidStorageClass` for one it refuses (see `model::storage_class`).
pub fn storage_class_of(h: &HeaderMap) -> S3Result<Option<String>> {
    use crate::model::storage_class::{parse, Class};
    let Some(v) = h.get("x-amz-storage-class") else {
        return Ok(None);
    };
    match v.to_str().map(|v| parse(v.trim())) {
        Ok(Ok(Class::Standard)) => Ok(None),
        Ok(Ok(Class::Kept(k))) => Ok(Some(k.to_owned())),
        _ => Err(S3Error::invalid_storage_class()),
    }
}

/// `x-amz-website-redirect-location`, checked as AWS checks it: a path in the bucket (`/...`)
/// or an absolute `http://` / `https://` URL; anything else is `400 InvalidRedirectLocation`.
/// Only PutObject, CopyObject, CreateMultipartUpload and POST take it.
pub fn website_redirect_of(h: &HeaderMap) -> S3Result<Option<String>> {
    let Some(v) = h.get("x-amz-website-redirect-location") else {
        return Ok(None);
    };
    let v = v.to_str().map_err(|_| {
        S3Error::invalid_redirect_location()
            .with_message("The website redirect location must be ASCII (percent-encode the rest)")
    })?;
    if v.starts_with('/') || v.starts_with("http://") || v.starts_with("https://") {
        Ok(Some(v.to_owned()))
    } else {
        Err(S3Error::invalid_redirect_location())
    }
}

/// Most bytes of user metadata a write may carry: AWS limits the `x-amz-meta-*` names (without
/// the prefix) and values, summed in UTF-8, to 2 KB.
pub const MAX_USER_METADATA: usize = 2048;

/// Object attributes from PutObject/CopyObject(REPLACE) request headers; `400
/// MetadataTooLarge` for user metadata over [`MAX_USER_METADATA`], as AWS answers.
pub fn meta_from_headers(h: &HeaderMap) -> S3Result<ObjectMeta> {
    let s = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let mut user: Vec<(String, String)> = h
        .iter()
        .filter_map(|(k, v)| {
            let name = k.as_str().strip_prefix("x-amz-meta-")?;
            Some((name.to_owned(), crate::auth::header_text(v.as_bytes())))
        })
        .collect();
    user.sort();
    if user.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>() > MAX_USER_METADATA {
        return Err(S3Error::metadata_too_large());
    }
    Ok(ObjectMeta {
        // Validated before the handler runs (`acl::request_acl`).
        acl: None,
        grants: super::grants::object_grants_from_headers(h),
        content_type: s("content-type"),
        cache_control: s("cache-control"),
        content_disposition: s("content-disposition"),
        content_encoding: s("content-encoding")
            .map(|e| without_aws_chunked(&e))
            .filter(|e| !e.is_empty()),
        content_language: s("content-language"),
        expires: s("expires"),
        user,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aws_chunked_is_dropped_from_content_encoding() {
        for (sent, kept) in [
            ("aws-chunked", ""),
            ("aws-chunked, deflate, gzip", "deflate, gzip"),
            ("aws-chunked,gzip", "gzip"),
            ("gzip, aws-chunked", "gzip"),
            ("deflate,  gzip", "deflate,  gzip"),
            ("AWS-CHUNKED, br", "br"),
        ] {
            assert_eq!(without_aws_chunked(sent), kept, "{sent}");
        }
    }

    #[test]
    fn part_numbers() {
        assert_eq!(part_range("1", &[5, 3], 8).unwrap(), (0, 5));
        assert_eq!(part_range("2", &[5, 3], 8).unwrap(), (5, 8));
        assert_eq!(
            part_range("3", &[5, 3], 8).unwrap_err().code,
            "InvalidPartNumber"
        );
        assert_eq!(part_range("1", &[], 7).unwrap(), (0, 7));
        assert_eq!(part_range("2", &[], 7).unwrap_err().status.as_u16(), 416);
        for bad in ["0", "10001", "x", "-1"] {
            assert_eq!(part_range(bad, &[], 7).unwrap_err().code, "InvalidArgument");
        }
    }

    #[test]
    fn ranges() {
        assert_eq!(
            parse_range(Some("bytes=0-9"), 100).unwrap(),
            RangeSpec::Part(0, 10)
        );
        assert_eq!(
            parse_range(Some("bytes=90-"), 100).unwrap(),
            RangeSpec::Part(90, 100)
        );
        assert_eq!(
            parse_range(Some("bytes=-10"), 100).unwrap(),
            RangeSpec::Part(90, 100)
        );
        assert_eq!(
            parse_range(Some("bytes=-200"), 100).unwrap(),
            RangeSpec::Part(0, 100)
        );
        assert_eq!(
            parse_range(Some("bytes=50-500"), 100).unwrap(),
            RangeSpec::Part(50, 100)
        );
        assert!(parse_range(Some("bytes=100-"), 100).is_err());
        assert!(parse_range(Some("bytes=0-0"), 0).is_err());
        assert_eq!(
            parse_range(Some("bytes=0-1,5-6"), 100).unwrap(),
            RangeSpec::Full
        );
        assert_eq!(
            parse_range(Some("items=0-1"), 100).unwrap(),
            RangeSpec::Full
        );
        assert_eq!(
            parse_range(Some("bytes=9-1"), 100).unwrap(),
            RangeSpec::Full
        );
    }
}

/// Query parameters whose value a decision reads (a policy condition, the version addressed):
/// each must come once.
const SINGLE_PARAMS: &[&str] = &[
    "versionId",
    "prefix",
    "delimiter",
    "max-keys",
    "uploadId",
    "partNumber",
];

/// `x-amz-*` headers whose value is a list, which the SDKs send as one header per item.
const LIST_HEADERS: &[&str] = &["x-amz-object-attributes"];

/// Refuses a request that repeats an `x-amz-*` header (`x-amz-meta-*` and the list headers
/// aside, whose values are joined as AWS joins them) or a query parameter of [`SINGLE_PARAMS`]: the bucket
/// policy's conditions would see every value while the operation uses one, so a request
/// could satisfy a condition with one value and act on another (`400 InvalidArgument`).
pub fn refuse_repeats(headers: &axum::http::HeaderMap, query: &[(String, String)]) -> S3Result<()> {
    for name in headers.keys() {
        let n = name.as_str();
        if n.starts_with("x-amz-")
            && !n.starts_with("x-amz-meta-")
            && !LIST_HEADERS.contains(&n)
            && headers.get_all(name).iter().nth(1).is_some()
        {
            return Err(S3Error::invalid_argument(format!(
                "The header {n} may be given once"
            )));
        }
    }
    for p in SINGLE_PARAMS {
        if query.iter().filter(|(k, _)| k == p).nth(1).is_some() {
            return Err(S3Error::invalid_argument(format!(
                "The query parameter {p} may be given once"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod repeat_tests {
    use super::*;

    #[test]
    fn repeated_headers_and_parameters_are_refused() {
        let mut h = axum::http::HeaderMap::new();
        h.append("x-amz-meta-a", "1".parse().unwrap());
        h.append("x-amz-meta-a", "2".parse().unwrap());
        h.append("x-amz-acl", "private".parse().unwrap());
        assert!(refuse_repeats(&h, &[]).is_ok());
        h.append("x-amz-acl", "public-read".parse().unwrap());
        assert_eq!(refuse_repeats(&h, &[]).unwrap_err().code, "InvalidArgument");
        let q = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        let h = axum::http::HeaderMap::new();
        assert!(refuse_repeats(&h, &q(&[("versionId", "a"), ("tagging", "")])).is_ok());
        assert!(refuse_repeats(&h, &q(&[("versionId", "b"), ("versionId", "a")])).is_err());
        assert!(refuse_repeats(&h, &q(&[("prefix", "a"), ("prefix", "b")])).is_err());
    }
}
