//! Authentication: SigV4 (and SigV2, unless disabled) in the Authorization header or in a
//! presigned URL, the payload mode the request declares, and the credentials store.

pub mod body;
mod credentials;
mod parse;
pub mod policy;
pub mod principal;
mod principal_cache;
pub mod service;
pub mod session;
pub mod sigv2;
pub mod sigv4;
pub mod token;

pub use credentials::{Credentials, Lookup, VERSION_POLL};
use parse::{header, parse_amz_date};
pub(crate) use parse::{parse_header_auth, parse_query_auth};
pub use service::{authenticate_minio_admin, authenticate_service, signed_service, signing_key_id};

use axum::http::request::Parts;
use axum::http::HeaderMap;
use chrono::{DateTime, Utc};

use crate::error::{S3Error, S3Result};

/// Longest presigned URL lifetime (7 days).
pub const MAX_PRESIGNED_EXPIRES: i64 = 7 * 24 * 3600;
/// Largest clock skew accepted (15 minutes).
pub const MAX_SKEW_SECS: i64 = 15 * 60;

/// How the body is protected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    /// `UNSIGNED-PAYLOAD` (or a presigned URL).
    Unsigned,
    /// A hex SHA-256 of the body, verified while streaming.
    Sha256(String),
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]`: aws-chunked with chunk signatures.
    StreamingSigned {
        /// Trailers follow the final chunk.
        trailer: bool,
    },
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: aws-chunked without signatures, with trailers.
    StreamingUnsignedTrailer,
}

/// What chunk and trailer signatures need.
#[derive(Clone)]
pub struct SigningContext {
    /// The derived signing key (zeroed when dropped).
    pub key: zeroize::Zeroizing<[u8; 32]>,
    /// `X-Amz-Date`.
    pub amz_date: String,
    /// Credential scope.
    pub scope: String,
    /// The request's signature, the seed of the chunk signature chain.
    pub seed_signature: String,
}

impl Auth {
    /// A request whose body is not signed (an unsigned request, SigV2, a POST form): no
    /// chunk signatures can follow it, so it has no signing context.
    pub fn unsigned_body(access_key: String, root: bool) -> Self {
        Auth {
            access_key,
            root,
            payload: Payload::Unsigned,
            signing: SigningContext {
                key: [0; 32].into(),
                amz_date: String::new(),
                scope: String::new(),
                seed_signature: String::new(),
            },
            user: None,
            account: None,
            sessions: Vec::new(),
            token: None,
        }
    }

    /// [`Auth::unsigned_body`] for a key as stored: root or not, and its user.
    pub fn of_key(access_key: String, stored: &crate::storage::meta::KeySecret) -> Self {
        let mut a = Self::unsigned_body(access_key, stored.root);
        a.user = stored.user.clone();
        a.account = stored.account.clone();
        a.sessions = session::parse_all(&stored.sessions);
        a.token = stored.token.clone();
        a
    }

    /// The access key id of the account the request acts for: its own for an account's key,
    /// the account's root key for an IAM user's (what a bucket's owner field holds).
    pub fn account_key(&self) -> &str {
        match (&self.user, &self.account) {
            (Some(u), _) => &u.account_key,
            (None, Some(a)) => a,
            (None, None) => &self.access_key,
        }
    }

    /// Whether the request's key owns what `owner` (an account's root key id) owns: it is
    /// that key, or a service account of it. Never an IAM user's key: a user is judged by
    /// its identity policies.
    pub fn owns(&self, owner: &str) -> bool {
        !self.is_anonymous()
            && (owner == self.access_key
                || (self.user.is_none() && self.account.as_deref() == Some(owner)))
    }

    /// An unsigned request: no key, no rights of its own.
    pub fn anonymous() -> Self {
        Self::unsigned_body(String::new(), false)
    }

    /// Whether the request was unsigned.
    pub fn is_anonymous(&self) -> bool {
        self.access_key.is_empty()
    }
}

impl std::fmt::Debug for SigningContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The signing key is a secret: never printed.
        f.debug_struct("SigningContext")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// A header value as text: UTF-8 when it is, else ISO-8859-1, which is how botocore (through
/// Python's http.client) puts non-ASCII metadata on the wire while signing its UTF-8 form.
pub fn header_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|b| char::from(*b)).collect(),
    }
}

/// Whether a request carries any credentials at all (a signature in the header or the query).
/// One without is anonymous: the authorization decides what it may do.
pub fn has_credentials(headers: &HeaderMap, query: &[(String, String)]) -> bool {
    // A session token counts: `authenticate` refuses it, rather than let an unsigned request
    // carry it unread.
    headers.contains_key("authorization")
        || headers.contains_key("x-amz-security-token")
        || query
            .iter()
            .any(|(k, _)| k.eq_ignore_ascii_case("x-amz-security-token"))
        || query.iter().any(|(k, _)| {
            matches!(
                k.as_str(),
                "X-Amz-Algorithm"
                    | "X-Amz-Signature"
                    | "X-Amz-Credential"
                    | "AWSAccessKeyId"
                    | "Signature"
            )
        })
}

/// An authenticated request.
#[derive(Clone, Debug)]
pub struct Auth {
    /// The access key that signed it.
    pub access_key: String,
    /// Whether that is the root key.
    pub root: bool,
    /// The body's protection.
    pub payload: Payload,
    /// For streaming signed payloads.
    pub signing: SigningContext,
    /// The IAM user whose key signed it (`None`: an account's own key, or unsigned).
    pub user: Option<crate::storage::meta::UserOfKey>,
    /// For a service account of an account's root credentials: the account's root key id,
    /// which it acts for (`account_key`, `owns`).
    pub account: Option<String>,
    /// Session policies that cut what the request may do (a service account's): each must
    /// allow it, besides everything else (`auth::session`).
    pub sessions: Vec<std::sync::Arc<policy::Policy>>,
    /// For temporary credentials (STS): when they were issued, and by which action.
    pub token: Option<crate::storage::meta::SessionToken>,
}

fn has_no_body(h: &HeaderMap) -> bool {
    !h.contains_key("transfer-encoding")
        && header(h, "content-length").is_none_or(|l| l.trim() == "0")
}

/// What SigV2 verification needs from the HTTP side. `None` where SigV2 is refused
/// (`--disable-sigv2`, and the admin API, which wants signed payloads).
#[derive(Clone, Copy, Debug)]
pub struct SigV2Request<'a> {
    /// The bucket, when it was addressed by host name (it signs as `/bucket` then).
    pub virtual_bucket: Option<&'a str>,
    /// Whether the request addresses a bucket (no key).
    pub bucket_only: bool,
}

const ONLY_V4: &str =
    "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.";

/// Authenticates a request: SigV4 (or SigV2, when `v2` allows it) in the header or the query.
/// Unsigned requests are denied (grids3 has no anonymous access).
pub async fn authenticate(
    parts: &Parts,
    query: &[(String, String)],
    creds: &Credentials,
    region: &str,
    v2: Option<SigV2Request<'_>>,
) -> S3Result<Auth> {
    authenticate_for(parts, query, creds, region, v2, None, false).await
}

async fn authenticate_for(
    parts: &Parts,
    query: &[(String, String)],
    creds: &Credentials,
    region: &str,
    v2: Option<SigV2Request<'_>>,
    other: Option<(&'static str, &[u8])>,
    any_region: bool,
) -> S3Result<Auth> {
    let now = Utc::now();
    let service = other.map_or("s3", |(s, _)| s);
    // A session token must be the signing key's session's (`token`): checked, never ignored.
    let sent_token = token::sent(&parts.headers, query)?;
    let authz = header(&parts.headers, "authorization");
    let has = |k: &str| query.iter().any(|(n, _)| n == k);
    let v2_query = authz.is_none() && has("AWSAccessKeyId") && has("Signature");
    if authz.is_some_and(|h| h.starts_with("AWS ")) || v2_query {
        let Some(ctx) = v2 else {
            return Err(S3Error::invalid_request(ONLY_V4));
        };
        return authenticate_v2(parts, query, creds, ctx, now, v2_query).await;
    }
    let p = if let Some(h) = authz {
        parse_header_auth(h, &parts.headers)?
    } else if query
        .iter()
        .any(|(k, _)| k == "X-Amz-Algorithm" || k == "X-Amz-Signature")
    {
        parse_query_auth(query, now)?
    } else {
        return Err(S3Error::access_denied());
    };
    if p.region != region
        && !(matches!(service, "iam" | "sts") && p.region == "us-east-1")
        && !any_region
    {
        let m = format!("the region '{}' is wrong; expecting '{region}'", p.region);
        return Err(if p.presigned {
            S3Error::authorization_query_parameters_error(format!(
                "Error parsing the X-Amz-Credential parameter; {m}"
            ))
        } else {
            S3Error::authorization_header_malformed(format!(
                "The authorization header is malformed; {m}"
            ))
        });
    }
    if p.service != service {
        return Err(S3Error::authorization_header_malformed(format!(
            "The authorization header is malformed; incorrect service \"{}\". This endpoint belongs to \"{service}\".",
            p.service
        )));
    }
    // SigV4 requires `host` among the signed headers: unsigned, a request signed for one
    // endpoint could be sent to another that shares the key.
    if !p.signed_headers.split(';').any(|h| h == "host") {
        return Err(S3Error::access_denied()
            .with_message("The host header must be signed (SignedHeaders must include host)"));
    }
    let when = parse_amz_date(&p.amz_date).ok_or_else(|| {
        S3Error::access_denied()
            .with_message("AWS authentication requires a valid Date or x-amz-date header")
    })?;
    if !p.amz_date.starts_with(&p.date) {
        // AWS: "Invalid credential date. Date is not the same as X-Amz-Date."
        let m = format!(
            "Invalid credential date. Date is not the same as X-Amz-Date: {} against {}.",
            p.date, p.amz_date
        );
        return Err(if p.presigned {
            S3Error::authorization_query_parameters_error(m)
        } else {
            S3Error::authorization_header_malformed(m)
        });
    }
    if !p.presigned && (now - when).num_seconds().abs() > MAX_SKEW_SECS {
        return Err(S3Error::request_time_too_skewed());
    }
    let stored = token::signing_secret(creds, &p.access_key, sent_token.as_deref()).await?;

    let payload_hash = if p.presigned {
        query
            .iter()
            .find(|(k, _)| k == "X-Amz-Content-Sha256")
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| "UNSIGNED-PAYLOAD".to_owned())
    } else {
        match header(&parts.headers, "x-amz-content-sha256") {
            Some(h) => h.to_owned(),
            // Deliberately more lenient than AWS: a request without a body (curl
            // --aws-sigv4 before 8.x sends no x-amz-content-sha256 on a GET) was signed over
            // the empty payload's hash, which is known without reading anything.
            None if has_no_body(&parts.headers) => sigv4::EMPTY_SHA256.to_owned(),
            // Another service's Query API: the body is read already, its hash is the payload's.
            None if other.is_some() => sigv4::sha256_hex(other.map_or(&[][..], |(_, b)| b)),
            None => {
                return Err(S3Error::invalid_request(
                    "Missing required header for this request: x-amz-content-sha256",
                ))
            }
        }
    };
    // A presigned URL signs its payload in the query (or not at all); a hex
    // x-amz-content-sha256 header sent with it is a further claim about the body, verified
    // while it streams rather than ignored. A streaming declaration cannot be honoured
    // there: no chunk signature chain starts from a query signature in grids3.
    let declared = if p.presigned && payload_hash == "UNSIGNED-PAYLOAD" {
        match header(&parts.headers, "x-amz-content-sha256") {
            Some(h) if h.starts_with("STREAMING-") => {
                return Err(S3Error::invalid_request(
                    "A presigned URL takes no aws-chunked payload: send the body as it is",
                ))
            }
            Some(h) => h.to_owned(),
            None => payload_hash.clone(),
        }
    } else {
        payload_hash.clone()
    };
    let payload = match declared.as_str() {
        "UNSIGNED-PAYLOAD" => Payload::Unsigned,
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" => Payload::StreamingSigned { trailer: false },
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER" => Payload::StreamingSigned { trailer: true },
        "STREAMING-UNSIGNED-PAYLOAD-TRAILER" => Payload::StreamingUnsignedTrailer,
        h if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Payload::Sha256(h.to_ascii_lowercase())
        }
        _ => return Err(S3Error::invalid_argument(
            "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-... or a valid sha256 value.",
        )),
    };

    let mut headers = Vec::new();
    for name in p.signed_headers.split(';') {
        let values: Vec<String> = parts
            .headers
            .get_all(name)
            .iter()
            .map(|v| header_text(v.as_bytes()))
            .collect();
        if values.is_empty() {
            if name == "host" {
                // HTTP/2 has no Host header; the authority stands in for it.
                let auth = parts
                    .uri
                    .authority()
                    .map(|a| a.as_str().to_owned())
                    .unwrap_or_default();
                headers.push((name.to_owned(), auth));
                continue;
            }
            return Err(S3Error::signature_does_not_match());
        }
        headers.push((name.to_owned(), values.join(",")));
    }
    let cr = sigv4::canonical_request(
        parts.method.as_str(),
        &sigv4::canonical_uri(parts.uri.path()),
        &sigv4::canonical_query(query),
        &headers,
        &p.signed_headers,
        &payload_hash,
    );
    let scope = format!("{}/{}/{}/aws4_request", p.date, p.region, p.service);
    let key = sigv4::signing_key(&stored.secret, &p.date, &p.region, &p.service);
    let expected = sigv4::sign(&key, &sigv4::string_to_sign(&p.amz_date, &scope, &cr));
    if !sigv4::signatures_equal(&expected, &p.signature.to_ascii_lowercase()) {
        tracing::debug!(canonical_request = %redact(&cr), "signature mismatch");
        return Err(S3Error::signature_does_not_match());
    }
    let unsigned = unsigned_amz_headers(&parts.headers, &p.signed_headers);
    if !unsigned.is_empty() {
        return Err(headers_not_signed(&unsigned));
    }
    Ok(Auth {
        access_key: p.access_key,
        root: stored.root,
        user: stored.user.clone(),
        account: stored.account.clone(),
        sessions: session::parse_all(&stored.sessions),
        token: stored.token.clone(),
        payload,
        signing: SigningContext {
            key,
            amz_date: p.amz_date,
            scope,
            seed_signature: expected,
        },
    })
}

/// The `x-amz-*` headers AWS lets through when a SigV4 signature does not cover them:
/// `x-amz-content-sha256`, which a header signature carries as its canonical request's last
/// line anyway, and which grids3 verifies against the body on a presigned URL.
const UNSIGNED_AMZ_ALLOWED: &[&str] = &["x-amz-content-sha256"];

/// The `x-amz-*` headers of a request that a SigV4 signature over `signed` (the
/// `SignedHeaders` list) does not cover, sorted. AWS refuses a request that has any, header
/// signature or presigned URL alike (`403 AccessDenied`, `HeadersNotSigned`): each such
/// header can change what the request does (`x-amz-copy-source` turns a PUT into a copy,
/// `x-amz-object-lock-*` locks the object for years), so none may ride along unsigned.
/// `x-amzn-trace-id` and other `x-amzn-*` headers are not `x-amz-*` and stay unsigned, as
/// the SDKs send them. MinIO's `x-minio-*` headers count too (`x-minio-force-delete` turns
/// the DELETE of one key into that of a folder); the MinIO SDKs sign them.
pub fn unsigned_amz_headers(headers: &HeaderMap, signed: &str) -> Vec<String> {
    let mut names: Vec<String> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| must_be_signed(k) && !UNSIGNED_AMZ_ALLOWED.contains(k))
        .filter(|k| !signed.split(';').any(|s| s.eq_ignore_ascii_case(k)))
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether a header changes what a request does, so that a signature must cover it.
fn must_be_signed(name: &str) -> bool {
    name.starts_with("x-amz-") || name.starts_with("x-minio-")
}

/// AWS's answer to `x-amz-*` headers outside the signature.
fn headers_not_signed(names: &[String]) -> S3Error {
    let mut e = S3Error::access_denied()
        .with_message("There were headers present in the request which were not signed");
    e.extra.push(("HeadersNotSigned", names.join(", ")));
    e
}

/// SigV2: the header (`AWS key:signature`, dated by `Date` or `x-amz-date`) or the query
/// (`AWSAccessKeyId`, `Signature`, `Expires`). The payload is not signed by SigV2.
async fn authenticate_v2(
    parts: &Parts,
    query: &[(String, String)],
    creds: &Credentials,
    ctx: SigV2Request<'_>,
    now: DateTime<Utc>,
    in_query: bool,
) -> S3Result<Auth> {
    let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    // SigV2 signs `x-amz-*` headers only: a MinIO header would ride unsigned.
    let minio: Vec<String> = parts
        .headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("x-minio-"))
        .map(str::to_owned)
        .collect();
    if !minio.is_empty() {
        return Err(headers_not_signed(&minio));
    }
    if let Some(sub) = crate::subresource::sigv2_unsignable(query) {
        return Err(S3Error::access_denied().with_message(format!(
            "Signature Version 2 does not sign the sub-resource `{sub}`: sign the request with AWS4-HMAC-SHA256 (SigV4)"
        )));
    }
    let (access_key, signature, date) = if in_query {
        let (Some(ak), Some(sig), Some(expires)) =
            (get("AWSAccessKeyId"), get("Signature"), get("Expires"))
        else {
            return Err(S3Error::access_denied().with_message(
                "Query-string authentication requires the Signature, Expires and AWSAccessKeyId parameters",
            ));
        };
        let at: i64 = expires.parse().map_err(|_| {
            S3Error::access_denied().with_message("Invalid date (should be seconds since epoch)")
        })?;
        if now.timestamp() > at {
            return Err(S3Error::access_denied().with_message("Request has expired"));
        }
        // SigV2 signs no signing time, so a URL's life is bounded by its Expires alone: at
        // most a week ahead, as SigV4 bounds X-Amz-Expires.
        if at - now.timestamp() > MAX_PRESIGNED_EXPIRES {
            return Err(S3Error::access_denied().with_message(
                "Expires must be less than a week (in seconds) that is 604800 from now",
            ));
        }
        (ak.to_owned(), sig.to_owned(), expires.to_owned())
    } else {
        let value = header(&parts.headers, "authorization").unwrap_or_default();
        let Some((ak, sig)) = value
            .strip_prefix("AWS ")
            .and_then(|v| v.trim().split_once(':'))
        else {
            return Err(S3Error::invalid_argument(
                "AWS authorization header is invalid.  Expected AwsAccessKeyId:signature",
            ));
        };
        // With x-amz-date the Date line is empty (x-amz-date signs among the amz headers).
        let (when, date_line) = match header(&parts.headers, "x-amz-date") {
            Some(d) => (d, String::new()),
            None => {
                let d = header(&parts.headers, "date").unwrap_or_default();
                (d, d.to_owned())
            }
        };
        let t = httpdate::parse_http_date(when)
            .map(DateTime::<Utc>::from)
            .or_else(|_| DateTime::parse_from_rfc2822(when).map(|t| t.with_timezone(&Utc)))
            .map_err(|_| {
                S3Error::access_denied()
                    .with_message("AWS authentication requires a valid Date or x-amz-date header")
            })?;
        if (now - t).num_seconds().abs() > MAX_SKEW_SECS {
            return Err(S3Error::request_time_too_skewed());
        }
        (ak.to_owned(), sig.to_owned(), date_line)
    };
    if header(&parts.headers, "x-amz-content-sha256").is_some_and(|h| h.starts_with("STREAMING-")) {
        return Err(S3Error::invalid_request(
            "aws-chunked payloads need AWS4-HMAC-SHA256 (SigV4) signatures",
        ));
    }
    // A SigV2 presigned URL carries its `x-amz-*` headers (a session token among them) as
    // lower-case query parameters, signed as headers (botocore's `HmacV1QueryAuth`); a
    // header-signed request signs its headers and takes none from the query. SigV4's own
    // `X-Amz-*` parameters (capitalised) are not headers: SigV2 does not sign them.
    let mut signed_headers = parts.headers.clone();
    if in_query {
        for (k, v) in query {
            if let (true, Ok(name), Ok(value)) = (
                k.starts_with("x-amz-"),
                axum::http::HeaderName::from_bytes(k.as_bytes()),
                axum::http::HeaderValue::from_str(v),
            ) {
                signed_headers.append(name, value);
            }
        }
    }
    // A token SigV2 would not sign (in the query of a header-signed request, or capitalised)
    // is refused rather than read or ignored.
    if query.iter().any(|(k, _)| {
        k.eq_ignore_ascii_case("x-amz-security-token") && !(in_query && k == "x-amz-security-token")
    }) {
        return Err(S3Error::invalid_token());
    }
    let sent_token = token::sent(&signed_headers, &[])?;
    let stored = token::signing_secret(creds, &access_key, sent_token.as_deref()).await?;
    // A request that addresses a bucket signs its resource as `/bucket/` (AWS's rule; boto3
    // signs `/b/` for the path `/b`); the path exactly as sent is accepted too, as some
    // clients sign that.
    let path = parts.uri.path();
    let mut paths = vec![path.to_owned()];
    if ctx.bucket_only && !path.ends_with('/') {
        paths.insert(0, format!("{path}/"));
    }
    let matched = paths.iter().any(|p| {
        let resource = sigv2::canonical_resource(ctx.virtual_bucket, p, query);
        let sts = sigv2::string_to_sign(parts.method.as_str(), &signed_headers, &date, &resource);
        let ok = sigv4::signatures_equal(&sigv2::sign(&stored.secret, &sts), &signature);
        if !ok {
            tracing::debug!(string_to_sign = %redact(&sts), "SigV2 signature mismatch");
        }
        ok
    });
    if !matched {
        return Err(S3Error::signature_does_not_match());
    }
    // No chunk signatures follow a SigV2 request (streaming payloads are refused above). A
    // hex SHA-256 the client declares is still verified while the body streams, as with SigV4.
    let mut auth = Auth::of_key(access_key, &stored);
    if let Some(h) = header(&parts.headers, "x-amz-content-sha256")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        auth.payload = Payload::Sha256(h.to_ascii_lowercase());
    }
    Ok(auth)
}

/// Headers whose values are secrets: the SSE-C keys. They are signed like any header, but
/// never written to a log (their MD5s, which identify a key without revealing it, are).
pub const SECRET_HEADERS: &[&str] = &[
    "x-amz-server-side-encryption-customer-key",
    "x-amz-copy-source-server-side-encryption-customer-key",
];

/// A canonical request or string to sign (`name:value` lines) with the values of
/// [`SECRET_HEADERS`] replaced, for the debug log of a signature mismatch.
pub fn redact(text: &str) -> String {
    text.split('\n')
        .map(|line| match line.split_once(':') {
            Some((name, _)) if SECRET_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) => {
                format!("{name}:<redacted>")
            }
            _ => line.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn every_unsigned_amz_header_is_named() {
        let mut h = HeaderMap::new();
        for name in [
            "host",
            "x-amz-date",
            "x-amz-content-sha256",
            "x-amz-copy-source",
            "x-amz-object-lock-mode",
            "x-amzn-trace-id",
            "content-md5",
            "X-Amz-Tagging",
        ] {
            h.insert(
                axum::http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_static("v"),
            );
        }
        // (signed headers, unsigned x-amz-* named)
        let table: [(&str, &[&str]); 4] = [
            (
                "host",
                &[
                    "x-amz-copy-source",
                    "x-amz-date",
                    "x-amz-object-lock-mode",
                    "x-amz-tagging",
                ],
            ),
            (
                "host;x-amz-date",
                &["x-amz-copy-source", "x-amz-object-lock-mode", "x-amz-tagging"],
            ),
            (
                "host;x-amz-copy-source;x-amz-date;x-amz-object-lock-mode;x-amz-tagging",
                &[],
            ),
            (
                "host;x-amz-content-sha256;x-amz-copy-source;x-amz-date;x-amz-object-lock-mode;x-amz-tagging",
                &[],
            ),
        ];
        for (signed, want) in table {
            assert_eq!(unsigned_amz_headers(&h, signed), want, "{signed}");
        }
        let e = headers_not_signed(&["x-amz-acl".into(), "x-amz-tagging".into()]);
        assert_eq!((e.code, e.status.as_u16()), ("AccessDenied", 403));
        assert_eq!(
            e.extra,
            vec![("HeadersNotSigned", "x-amz-acl, x-amz-tagging".to_owned())]
        );
    }
}
