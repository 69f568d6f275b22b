//! The checksum headers of requests without a body of their own: the algorithm that
//! CreateMultipartUpload, CopyObject and UploadPartCopy name, and the value a copy's bytes
//! must have. Parsed once, here, so that an unknown algorithm or a value of another
//! algorithm is refused the same way everywhere, never read as no checksum.

use axum::http::HeaderMap;

use crate::checksum::Algorithm;
use crate::error::{S3Error, S3Result};

/// `x-amz-checksum-algorithm`, in any case. A value that names no algorithm, or is not
/// text, is `400 InvalidRequest` (read as absent, it would be accepted and ignored).
pub fn algorithm(headers: &HeaderMap) -> S3Result<Option<Algorithm>> {
    let Some(v) = headers.get("x-amz-checksum-algorithm") else {
        return Ok(None);
    };
    std::str::from_utf8(v.as_bytes())
        .ok()
        .and_then(|a| Algorithm::from_name(a.trim()))
        .map(Some)
        .ok_or_else(|| S3Error::invalid_request("Checksum algorithm provided is unsupported."))
}

/// What a copy's checksum is asked to be: the algorithm to compute over the bytes copied,
/// and the value (`x-amz-checksum-<alg>`) they must have, if the request gives one.
#[derive(Debug, Default, PartialEq)]
pub struct CopyChecksum {
    /// The algorithm named, or the one of the value given.
    pub algorithm: Option<Algorithm>,
    /// The value the copied bytes must have (base64).
    pub expected: Option<String>,
}

impl CopyChecksum {
    /// From a copy's headers. A value of another algorithm than the one named, two values,
    /// or a value that is no digest of its algorithm, is `400 InvalidRequest`.
    pub fn parse(headers: &HeaderMap) -> S3Result<Self> {
        let named = algorithm(headers)?;
        let value = Algorithm::named_in(|n| headers.get(n).and_then(|v| v.to_str().ok()), false)
            .map_err(S3Error::invalid_request)?;
        match (named, value) {
            (Some(a), Some((b, _))) if a != b => Err(S3Error::invalid_request(format!(
                "Value for {} header is invalid: x-amz-checksum-algorithm names {}.",
                b.header(),
                a.name().to_ascii_uppercase()
            ))),
            (named, Some((b, v))) => Ok(Self {
                algorithm: Some(named.unwrap_or(b)),
                expected: Some(v),
            }),
            (named, None) => Ok(Self {
                algorithm: named,
                expected: None,
            }),
        }
    }

    /// Whether the bytes copied, whose checksum is `computed`, are what was asked for;
    /// otherwise the copy is `400 BadDigest` and nothing of it is kept.
    pub fn holds(&self, computed: &str) -> bool {
        self.expected.as_deref().is_none_or(|e| e == computed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::request::test_headers as headers;

    #[test]
    fn a_copys_checksum_headers() {
        assert_eq!(
            CopyChecksum::parse(&headers(&[])).unwrap(),
            CopyChecksum::default()
        );
        let c = CopyChecksum::parse(&headers(&[("x-amz-checksum-algorithm", "sha256")])).unwrap();
        assert_eq!((c.algorithm, c.expected), (Some(Algorithm::Sha256), None));
        // A value alone names its algorithm; with a name, they must agree.
        let c = CopyChecksum::parse(&headers(&[("x-amz-checksum-crc32", "jNwWgw==")])).unwrap();
        assert_eq!(c.algorithm, Some(Algorithm::Crc32));
        assert!(c.holds("jNwWgw==") && !c.holds("AAAAAA=="));
        for bad in [
            vec![("x-amz-checksum-algorithm", "MD7")],
            vec![("x-amz-checksum-algorithm", "")],
            vec![("x-amz-checksum-algorithm", "CRC32\u{e9}")],
            vec![("x-amz-checksum-crc32", "garbage!")],
            vec![
                ("x-amz-checksum-algorithm", "SHA256"),
                ("x-amz-checksum-crc32", "jNwWgw=="),
            ],
        ] {
            let e = CopyChecksum::parse(&headers(&bad)).unwrap_err();
            assert_eq!(e.code, "InvalidRequest", "{bad:?}");
        }
    }
}
