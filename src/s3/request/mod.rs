//! The parse layer: a request's method, query, headers and body become typed values once, with
//! AWS's errors, before anything is decided or stored.

pub mod access;
pub mod checksum;
pub mod grants;
pub mod headers;
pub mod read;
pub mod sse;
pub mod tagging;
pub mod write;

use axum::body::Body;
use axum::http::request::Parts;

use crate::auth::body::BodyReader;
use crate::auth::sigv4::decode;
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::storage::versions;
use access::{Access, PerKey};
use base64::Engine;

/// Longest object key, in UTF-8 bytes, as in S3.
pub const MAX_KEY_BYTES: usize = 1024;

/// A parsed, authenticated request.
pub struct S3Request {
    /// Method, URI, headers.
    pub parts: Parts,
    /// Decoded query pairs.
    pub query: Vec<(String, String)>,
    /// Addressed bucket.
    pub bucket: Option<String>,
    /// Addressed key.
    pub key: Option<String>,
    /// Who signed it and how the body is protected.
    pub auth: Auth,
    /// The raw body.
    pub body: Body,
    /// What the authorization allowed: everything, or what the addressed object's ACL
    /// allows (GetObject, HeadObject, Get/PutObjectAcl; see `acl::require_object_access`).
    pub access: Access,
    /// For a copy: what the authorization allowed on the source object.
    pub source_access: Access,
    /// For a DeleteObjects on a bucket with a policy: the decision per key.
    pub per_key: Option<PerKey>,
    /// Whether the request asked for, and may use, a GOVERNANCE bypass
    /// (`x-amz-bypass-governance-retention: true` and `s3:BypassGovernanceRetention`).
    pub bypass_governance: bool,
    /// The client's address (for `aws:SourceIp`), when the server knows it.
    pub source_ip: Option<std::net::IpAddr>,
    /// The request's id (`x-amz-request-id`), which event records name.
    pub request_id: String,
    /// PutObjectTagging's tag set, read before the authorization (its policy conditions
    /// `s3:RequestObjectTag/<key>` and `s3:RequestObjectTagKeys` see it).
    pub tagging: Option<Vec<(String, String)>>,
}

impl S3Request {
    /// A request grids3 makes on a client's behalf (the website endpoint's anonymous reads,
    /// the console's actions as the signed-in key), to be run by `s3::dispatch` as the S3
    /// endpoint would run it. `parts` carry its method, URI and headers, and in their
    /// extensions the client's connection (its address for `aws:SourceIp`, TLS for
    /// `aws:SecureTransport`); nothing is authorized yet.
    pub fn on_behalf(
        parts: Parts,
        query: Vec<(String, String)>,
        bucket: Option<String>,
        key: Option<String>,
        auth: Auth,
        body: Body,
        request_id: &str,
    ) -> Self {
        let source_ip = parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip());
        S3Request {
            parts,
            query,
            bucket,
            key,
            auth,
            body,
            access: Access::Denied,
            source_access: Access::Granted,
            per_key: None,
            bypass_governance: false,
            source_ip,
            request_id: request_id.to_owned(),
            tagging: None,
        }
    }

    /// A query parameter.
    pub fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The bucket (operations that reach here have one).
    pub fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or_default()
    }

    /// The key (object operations have one).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    /// The verified, decoded body.
    pub fn body_reader(&mut self) -> S3Result<BodyReader> {
        let body = std::mem::take(&mut self.body);
        BodyReader::new(body, &self.parts.headers, &self.auth)
    }

    /// `max-keys` of a listing: 1,000 when absent, at most 1,000, and a negative or
    /// non-integer value `400 InvalidArgument` (AWS's message).
    pub fn max_keys(&self) -> S3Result<usize> {
        match self.q("max-keys") {
            None => Ok(1000),
            Some(v) => Ok(v
                .parse::<i64>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| {
                    S3Error::invalid_argument(
                        "Provided max-keys not an integer or within integer range",
                    )
                })?
                .min(1000) as usize),
        }
    }

    /// `encoding-type`: `url` (true), none (false), anything else `400 InvalidArgument`, as
    /// AWS answers it on every listing.
    pub fn url_encoding(&self) -> S3Result<bool> {
        match self.q("encoding-type") {
            None => Ok(false),
            Some("url") => Ok(true),
            Some(_) => Err(S3Error::invalid_argument(
                "Invalid Encoding Method specified in Request",
            )),
        }
    }

    /// An object's data needs a length: an HTTP/1 request with neither `Content-Length` nor
    /// chunked transfer has no body at all, and AWS answers it `411 MissingContentLength`
    /// (storing it would make an empty object of data the client meant to send). HTTP/2
    /// frames its body, so it needs neither.
    pub fn require_length(&self) -> S3Result<()> {
        let h = &self.parts.headers;
        let framed = self.parts.version >= axum::http::Version::HTTP_2;
        if framed || h.contains_key("content-length") || h.contains_key("transfer-encoding") {
            Ok(())
        } else {
            Err(S3Error::missing_content_length())
        }
    }
}

/// `?versionId=`: `null` or an id grids3 could have made, else `InvalidArgument` as AWS
/// answers a malformed id.
pub fn version_param(req: &S3Request) -> S3Result<Option<String>> {
    match req.q("versionId") {
        None => Ok(None),
        Some(v) if v == "null" || versions::is_valid_vid(v) => Ok(Some(v.to_owned())),
        Some(_) => Err(S3Error::invalid_argument("Invalid version id specified")),
    }
}

/// Content-MD5 decoded, or `InvalidDigest`.
pub(crate) fn content_md5(req: &S3Request) -> S3Result<Option<[u8; 16]>> {
    content_md5_of(&req.parts.headers)
}

/// Content-MD5 of a header map, decoded, or `InvalidDigest`.
pub(crate) fn content_md5_of(h: &axum::http::HeaderMap) -> S3Result<Option<[u8; 16]>> {
    let Some(v) = h.get("content-md5").and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .map_err(|_| S3Error::invalid_digest())?;
    bytes
        .try_into()
        .map(Some)
        .map_err(|_| S3Error::invalid_digest())
}

/// Largest single PUT, as in S3.
pub const MAX_PUT_SIZE: u64 = 5 * 1024 * 1024 * 1024;

/// Parses `x-amz-copy-source`: `[/]bucket/key[?versionId=...]`, key URL-encoded.
pub fn parse_copy_source(v: &str) -> S3Result<(String, String)> {
    let (path, query) = match v.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (v, None),
    };
    if query.is_some() {
        copy_source_version(v)?;
    }
    let path = decode(path.strip_prefix('/').unwrap_or(path));
    match path.split_once('/') {
        Some((b, k)) if !b.is_empty() && !k.is_empty() => Ok((b.to_owned(), k.to_owned())),
        _ => Err(S3Error::invalid_argument(
            "Copy Source must mention the source bucket and key: sourcebucket/sourcekey",
        )),
    }
}

/// The version `x-amz-copy-source` names (`?versionId=`), if any: `null` or an id grids3 could
/// have made, else `InvalidArgument`.
pub fn copy_source_version(v: &str) -> S3Result<Option<String>> {
    let Some((_, q)) = v.split_once('?') else {
        return Ok(None);
    };
    match q.strip_prefix("versionId=") {
        Some(id) if id == "null" || crate::storage::versions::is_valid_vid(id) => {
            Ok(Some(id.to_owned()))
        }
        _ => Err(S3Error::invalid_argument("Invalid version id specified")),
    }
}

/// A header map of `pairs` (a repeated name appended), for the parse layer's tests.
#[cfg(test)]
pub(crate) fn test_headers(pairs: &[(&str, &str)]) -> axum::http::HeaderMap {
    let mut h = axum::http::HeaderMap::new();
    for (k, v) in pairs {
        h.append(
            axum::http::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            axum::http::HeaderValue::from_bytes(v.as_bytes()).expect("a header value"),
        );
    }
    h
}
