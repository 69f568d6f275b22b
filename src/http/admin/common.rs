//! What the admin handlers share: the JSON error shape, the root-only body check, and optional
//! JSON bodies.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::auth::{authenticate, sigv4, Payload};
use crate::error::S3Error;
use crate::state::AppState;

pub(crate) fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(json!({"error": code, "message": message}))).into_response()
}

impl From<S3Error> for AdminError {
    fn from(e: S3Error) -> Self {
        AdminError(error(e.status, e.code, &e.message))
    }
}

/// An error answered as JSON.
pub struct AdminError(pub(crate) Response);

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        self.0
    }
}

/// Authenticates the request as the root key and returns its (verified) body.
pub(crate) async fn root_body(st: &AppState, req: Request) -> Result<Vec<u8>, AdminError> {
    let (parts, body) = req.into_parts();
    let query = sigv4::parse_query(parts.uri.query());
    // SigV4 only: the admin API requires signed payloads, which SigV2 cannot give.
    let auth = authenticate(&parts, &query, &st.creds, &st.config.region, None).await?;
    if !auth.root {
        return Err(AdminError(error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "the admin API is for the root key",
        )));
    }
    let bytes = axum::body::to_bytes(Body::new(body), 64 * 1024)
        .await
        .map_err(|_| {
            AdminError(error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "body too large or incomplete",
            ))
        })?;
    // Admin calls change who may do what, so their bodies must be signed: an unsigned payload
    // (and so any presigned URL) could be replayed with another body by whoever holds it.
    match &auth.payload {
        Payload::Unsigned => {
            return Err(AdminError(error(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                "the admin API requires a signed payload (x-amz-content-sha256 with the body's SHA-256); unsigned payloads and presigned URLs are refused",
            )))
        }
        Payload::Sha256(h) if *h == sigv4::sha256_hex(&bytes) => {}
        Payload::Sha256(_) => return Err(S3Error::content_sha256_mismatch().into()),
        _ => {
            return Err(AdminError(error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "streaming payloads are not accepted here",
            )))
        }
    }
    // A signature is good for 15 minutes either side of its date: one seen before is a
    // replay (a captured request, resent), refused on every instance. Only for calls that
    // change something: a read replayed learns what the original learned, and refusing equal
    // reads within one second (the date's resolution) would break any script that polls.
    let changes =
        parts.method != axum::http::Method::GET && parts.method != axum::http::Method::HEAD;
    let first = !changes
        || st
            .store
            .meta()
            .first_use_of_signature(&auth.signing.seed_signature)
            .await
            .map_err(db_error)?;
    if !first {
        return Err(AdminError(error(
            StatusCode::FORBIDDEN,
            "AccessDenied",
            "this signed admin request was already used: sign each request anew",
        )));
    }
    Ok(bytes.to_vec())
}

/// A JSON body whose fields are all optional: an empty body is the default.
// The error is an axum `Response`, made once per failed request, like `root_body`'s.
#[allow(clippy::result_large_err)]
pub(crate) fn optional_json<T: Default + serde::de::DeserializeOwned>(
    body: &[u8],
) -> Result<T, AdminError> {
    if body.is_empty() {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            &e.to_string(),
        ))
    })
}

pub(crate) fn db_error(e: impl std::fmt::Display) -> AdminError {
    tracing::error!(error = %e, "admin API database error");
    AdminError(error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "internal error",
    ))
}
