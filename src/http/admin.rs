//! The admin JSON API under `/_grids3/admin/`, for the root key only (SigV4, like S3
//! requests): create, list and delete access keys, and grant keys access to buckets.

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::auth::{authenticate, sigv4, Payload};
use crate::error::S3Error;
use crate::state::AppState;

/// The admin routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/_grids3/admin/keys", get(list_keys).post(create_key))
        .route("/_grids3/admin/keys/{id}", delete(delete_key))
        .route("/_grids3/admin/buckets/{bucket}/grants", put(grant))
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(json!({"error": code, "message": message}))).into_response()
}

impl From<S3Error> for AdminError {
    fn from(e: S3Error) -> Self {
        AdminError(error(e.status, e.code, &e.message))
    }
}

/// An error answered as JSON.
pub struct AdminError(Response);

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        self.0
    }
}

/// Authenticates the request as the root key and returns its (verified) body.
async fn root_body(st: &AppState, req: Request) -> Result<Vec<u8>, AdminError> {
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
    Ok(bytes.to_vec())
}

fn db_error(e: impl std::fmt::Display) -> AdminError {
    tracing::error!(error = %e, "admin API database error");
    AdminError(error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "internal error",
    ))
}

#[derive(Deserialize, Default)]
struct CreateKey {
    #[serde(default)]
    name: String,
}

async fn create_key(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    let body = root_body(&st, req).await?;
    let input: CreateKey = if body.is_empty() {
        CreateKey::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            AdminError(error(
                StatusCode::BAD_REQUEST,
                "MalformedJSON",
                &e.to_string(),
            ))
        })?
    };
    let (id, secret) = st
        .store
        .meta()
        .create_access_key(&input.name)
        .await
        .map_err(db_error)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({"accessKeyId": id, "secretAccessKey": secret, "name": input.name})),
    )
        .into_response())
}

async fn list_keys(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let keys = st.store.meta().list_access_keys().await.map_err(db_error)?;
    let keys: Vec<_> = keys
        .into_iter()
        .map(|k| json!({"accessKeyId": k.id, "name": k.name, "root": k.root, "created": crate::s3::headers::iso8601(k.created)}))
        .collect();
    Ok(Json(json!({"keys": keys})).into_response())
}

async fn delete_key(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    if !st
        .store
        .meta()
        .delete_access_key(&id)
        .await
        .map_err(db_error)?
    {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NoSuchKey",
            "no such access key (or it is the root key)",
        )));
    }
    st.creds.forget(&id);
    Ok(StatusCode::NO_CONTENT.into_response())
}

#[derive(Deserialize)]
struct Grant {
    #[serde(rename = "accessKeyId")]
    access_key_id: String,
    /// `read`, `write`, `owner`, or `none` to revoke.
    role: String,
}

async fn grant(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let body = root_body(&st, req).await?;
    let g: Grant = serde_json::from_slice(&body).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            &e.to_string(),
        ))
    })?;
    let role = match g.role.as_str() {
        "none" => None,
        r if crate::s3::authz::Role::parse(r).is_some() => Some(r),
        _ => {
            return Err(AdminError(error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "role must be read, write, owner or none",
            )))
        }
    };
    if !g
        .access_key_id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        || g.access_key_id.is_empty()
    {
        return Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "invalid access key id",
        )));
    }
    if !st
        .store
        .meta()
        .grant(&bucket, &g.access_key_id, role)
        .await
        .map_err(db_error)?
    {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "The specified bucket does not exist",
        )));
    }
    Ok(StatusCode::NO_CONTENT.into_response())
}
