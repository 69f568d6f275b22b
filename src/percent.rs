//! Percent-encoding as S3 and SigV4 use it, and query strings decoded into pairs: a leaf that
//! signatures, routing and header parsing all use.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but the unreserved characters `A-Z a-z 0-9 - . _ ~` is encoded.
const STRICT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// The same, keeping `/` (S3 path encoding).
const PATH: &AsciiSet = &STRICT.remove(b'/');

/// SigV4 URI encoding; `/` is kept when `keep_slash`.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    utf8_percent_encode(s, if keep_slash { PATH } else { STRICT }).to_string()
}

/// Percent-decodes (no `+` to space: S3 clients encode spaces as `%20`).
pub fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// Query pairs from a raw query string, decoded.
pub fn parse_query(raw: Option<&str>) -> Vec<(String, String)> {
    raw.unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}
