//! What a GET or HEAD of an object asks for, parsed once: the version, the conditional
//! headers, the range or part, and whether checksums are wanted. The range's syntax is checked
//! against the object's length once it is found ([`ReadSpec::range`]).

use axum::http::StatusCode;

use crate::error::{S3Error, S3Result};
use crate::s3::request::headers::{parse_range, part_range, RangeSpec};
use crate::s3::request::{sse, version_param, S3Request};

/// A GET or HEAD of an object.
#[derive(Clone, Debug, Default)]
pub struct ReadSpec {
    /// `versionId`.
    pub version: Option<String>,
    /// `If-Match`.
    pub if_match: Option<String>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<String>,
    /// `If-None-Match`.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<String>,
    /// `Range`, as sent.
    pub range: Option<String>,
    /// `If-Range`, as sent: the Range applies only while it names the object's ETag or
    /// Last-Modified (RFC 9110 section 13.1.5), so a resumed download never stitches two
    /// objects' bytes together.
    pub if_range: Option<String>,
    /// `partNumber`, as sent.
    pub part_number: Option<String>,
    /// `x-amz-checksum-mode: ENABLED`.
    pub checksum_mode: bool,
}

impl ReadSpec {
    /// Refuses Range with partNumber. Checked before the bucket is looked up, the rest of the
    /// request after ([`ReadSpec::parse`]): the order of AWS's answers.
    pub fn refuse_range_with_part(req: &S3Request) -> S3Result<()> {
        if req.q("partNumber").is_some() && req.header("range").is_some() {
            return Err(S3Error::invalid_request(
                "Cannot specify both Range header and partNumber query parameter",
            ));
        }
        Ok(())
    }

    /// Parses a GET's or HEAD's request, with AWS's errors: a malformed version id, and
    /// encryption headers that only a write may send.
    pub fn parse(req: &S3Request) -> S3Result<Self> {
        let version = version_param(req)?;
        sse::refuse_write_headers(&req.parts.headers)?;
        let h = |n: &str| req.header(n).map(str::to_owned);
        Ok(Self {
            version,
            if_match: h("if-match"),
            if_unmodified_since: h("if-unmodified-since"),
            if_none_match: h("if-none-match"),
            if_modified_since: h("if-modified-since"),
            range: h("range"),
            if_range: h("if-range"),
            part_number: req.q("partNumber").map(str::to_owned),
            checksum_mode: req
                .header("x-amz-checksum-mode")
                .is_some_and(|v| v.eq_ignore_ascii_case("enabled")),
        })
    }

    /// The status and the byte range `[start, end)` to send of an object of `len` bytes whose
    /// parts have `sizes` (a part number addresses a part; else the Range header, unless
    /// `If-Range` no longer holds: `range_holds`, see `rules::preconditions::if_range_holds`,
    /// which makes the answer the whole object).
    pub fn range(
        &self,
        sizes: &[u64],
        len: u64,
        range_holds: bool,
    ) -> S3Result<(StatusCode, u64, u64)> {
        Ok(match &self.part_number {
            None if !range_holds => (StatusCode::OK, 0, len),
            Some(n) => {
                let (a, b) = part_range(n, sizes, len)?;
                (StatusCode::PARTIAL_CONTENT, a, b)
            }
            None => match parse_range(self.range.as_deref(), len)? {
                RangeSpec::Full => (StatusCode::OK, 0, len),
                RangeSpec::Part(a, b) => (StatusCode::PARTIAL_CONTENT, a, b),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_of_a_read() {
        let spec = |range: Option<&str>, part: Option<&str>| ReadSpec {
            range: range.map(str::to_owned),
            part_number: part.map(str::to_owned),
            ..Default::default()
        };
        let sizes = [5u64, 3];
        assert_eq!(
            spec(None, None).range(&sizes, 8, true).unwrap(),
            (StatusCode::OK, 0, 8)
        );
        assert_eq!(
            spec(Some("bytes=2-4"), None)
                .range(&sizes, 8, true)
                .unwrap(),
            (StatusCode::PARTIAL_CONTENT, 2, 5)
        );
        assert_eq!(
            spec(None, Some("2")).range(&sizes, 8, true).unwrap(),
            (StatusCode::PARTIAL_CONTENT, 5, 8)
        );
        assert_eq!(
            spec(None, Some("3"))
                .range(&sizes, 8, true)
                .unwrap_err()
                .code,
            "InvalidPartNumber"
        );
        assert_eq!(
            spec(Some("bytes=2-4"), None)
                .range(&sizes, 8, false)
                .unwrap(),
            (StatusCode::OK, 0, 8),
            "a stale If-Range: the whole object"
        );
        assert_eq!(
            spec(Some("bytes=9-"), None)
                .range(&sizes, 8, true)
                .unwrap_err()
                .code,
            "InvalidRange"
        );
    }
}
