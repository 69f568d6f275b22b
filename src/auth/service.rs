//! Requests to other services on the S3 endpoint (IAM's Query API; MinIO's admin API): the
//! service a SigV4 request was signed for, the key it names before anything is read, and
//! authentication over a body the caller has read whole (these APIs' bodies are small forms
//! or JSON, bounded by their callers).

use axum::http::request::Parts;
use axum::http::HeaderMap;

use super::parse::header;
use super::{authenticate_for, sigv4, Auth, Credentials, Payload};
use crate::error::{S3Error, S3Result};

/// A request to another AWS service on the S3 endpoint (IAM's Query API, STS), whose whole
/// body the caller has read: SigV4 only, the credential scope must name `service`, and the
/// payload is signed over `body` (the Query API's clients send no `x-amz-content-sha256`;
/// the canonical request carries the body's hash, which is computed here). IAM is a global
/// service that AWS's SDKs sign for `us-east-1`, accepted besides the configured region.
pub async fn authenticate_service(
    parts: &Parts,
    query: &[(String, String)],
    creds: &Credentials,
    region: &str,
    service: &'static str,
    body: &[u8],
) -> S3Result<Auth> {
    let auth = authenticate_for(
        parts,
        query,
        creds,
        region,
        None,
        Some((service, body)),
        false,
    )
    .await?;
    signed_body(auth, body)
}

/// A request to MinIO's admin API (`/minio/admin/v3/`), whose whole body the caller has
/// read: SigV4 in the `Authorization` header for the service `s3`, over a signed payload (an
/// `x-amz-content-sha256` header that is the body's SHA-256; unsigned and presigned requests
/// are refused, as MinIO refuses them). Any region is accepted, as MinIO accepts it for these
/// paths: minio-py and mc sign with an empty one (`YYYYMMDD//s3/aws4_request`) by default.
/// The signature is still computed over the region the client named, so nothing is
/// weakened but the check that the client meant this deployment's region.
pub async fn authenticate_minio_admin(
    parts: &Parts,
    query: &[(String, String)],
    creds: &Credentials,
    region: &str,
    body: &[u8],
) -> S3Result<Auth> {
    let signed_header =
        header(&parts.headers, "authorization").is_some_and(|h| h.starts_with("AWS4-HMAC-SHA256"));
    if !signed_header {
        return Err(S3Error::access_denied().with_message(
            "the admin API takes SigV4 signatures in the Authorization header only",
        ));
    }
    if header(&parts.headers, "x-amz-content-sha256").is_none() {
        return Err(S3Error::access_denied()
            .with_message("the admin API requires a signed payload (x-amz-content-sha256)"));
    }
    let auth =
        authenticate_for(parts, query, creds, region, None, Some(("s3", body)), true).await?;
    signed_body(auth, body)
}

/// Whether the payload a request signed is `body`.
fn signed_body(auth: Auth, body: &[u8]) -> S3Result<Auth> {
    match &auth.payload {
        Payload::Sha256(h) if *h == sigv4::sha256_hex(body) => Ok(auth),
        Payload::Sha256(_) => Err(S3Error::content_sha256_mismatch()),
        _ => Err(S3Error::access_denied()
            .with_message("this service requires a signed payload (the body's SHA-256)")),
    }
}

/// The name of the service a SigV4 request's credential scope names (`s3`, `iam`, `sts`),
/// from its `Authorization` header or `X-Amz-Credential`; `None` for anything else.
pub fn signed_service(headers: &HeaderMap, query: &[(String, String)]) -> Option<String> {
    let scope = credential_scope(headers, query)?;
    let mut parts = scope.rsplit('/');
    (parts.next() == Some("aws4_request"))
        .then(|| parts.next().map(str::to_owned))
        .flatten()
}

/// The access key id a SigV4 request names (its credential scope's first part), before any
/// check: for refusing a request by an unknown key before reading its body.
pub fn signing_key_id(headers: &HeaderMap, query: &[(String, String)]) -> Option<String> {
    credential_scope(headers, query)?
        .split('/')
        .next()
        .map(str::to_owned)
}

/// `Credential=` of the `Authorization` header, or `X-Amz-Credential`.
fn credential_scope(headers: &HeaderMap, query: &[(String, String)]) -> Option<String> {
    Some(match header(headers, "authorization") {
        Some(h) if h.starts_with("AWS4-HMAC-SHA256") => {
            let c = h.split("Credential=").nth(1)?;
            c.split([',', ' ']).next()?.to_owned()
        }
        Some(_) => return None,
        None => query
            .iter()
            .find(|(k, _)| k == "X-Amz-Credential")
            .map(|(_, v)| v.clone())?,
    })
}
