//! The admin API of server-side encryption, root key only: the SSE-KMS keyring (create, list,
//! disable, enable) and the master-key rotation.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{error, optional_json, root_body, AdminError};
use crate::crypto::keyring::KmsKeyInfo;
use crate::crypto::SseError;
use crate::state::AppState;

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/_grids3/admin/kms/keys", get(list).post(create))
        .route("/_grids3/admin/kms/keys/{id}/disable", post(disable))
        .route("/_grids3/admin/kms/keys/{id}/enable", post(enable))
        .route("/_grids3/admin/rotate-master-key", post(rotate))
}

fn sse_error(st: &AppState, e: SseError) -> AdminError {
    if let SseError::KeyExists(id) = &e {
        return AdminError(error(
            StatusCode::CONFLICT,
            "AlreadyExistsException",
            &format!("a KMS key named {id} exists"),
        ));
    }
    if matches!(e, SseError::NoMasterKey) {
        // S3 requests answer 501 (the server cannot do it); here the operator asked for
        // something this gateway's configuration does not allow.
        return AdminError(error(
            StatusCode::BAD_REQUEST,
            "MasterKeyRequired",
            "the keyring and its rotation need GRIDS3_MASTER_KEY, which this gateway was started without",
        ));
    }
    let s3 = crate::s3::sse::sse_error(st, e);
    AdminError(error(s3.status, s3.code, &s3.message))
}

fn describe(st: &AppState, k: &KmsKeyInfo) -> serde_json::Value {
    json!({
        "keyId": k.id,
        "arn": st.keys.kms_arn(&k.id),
        "alias": k.alias.as_ref().map(|a| format!("alias/{a}")),
        "description": k.description,
        "enabled": k.enabled,
        "created": crate::s3::request::headers::iso8601(k.created),
    })
}

#[derive(Deserialize, Default)]
struct Create {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    alias: Option<String>,
    #[serde(default)]
    description: String,
}

async fn create(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    let input: Create = optional_json(&root_body(&st, req).await?)?;
    let alias = input
        .alias
        .as_deref()
        .map(|a| a.strip_prefix("alias/").unwrap_or(a))
        .filter(|a| !a.is_empty());
    if alias.is_some_and(|a| {
        a.starts_with("aws/")
            || !a
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'_' | b'-'))
    }) {
        return Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidAliasName",
            "an alias is letters, digits, '/', '_' and '-', and does not start with aws/",
        )));
    }
    let id = input.id.as_deref().filter(|i| !i.is_empty());
    if id.is_some_and(|i| !crate::crypto::keyring::valid_key_id(i)) {
        return Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidKeyId",
            "a key id is 1 to 64 letters, digits, '_' and '-'",
        )));
    }
    let now = st.store.meta().clock().now();
    let k = st
        .keys
        .create_kms_key(id, alias, &input.description, now)
        .await
        .map_err(|e| sse_error(&st, e))?;
    Ok((StatusCode::CREATED, Json(describe(&st, &k))).into_response())
}

async fn list(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let keys = st
        .keys
        .keyring()
        .list()
        .await
        .map_err(|e| sse_error(&st, e))?;
    let keys: Vec<_> = keys.iter().map(|k| describe(&st, k)).collect();
    Ok(Json(json!({"keys": keys})).into_response())
}

async fn set_enabled(
    st: &AppState,
    id: &str,
    enabled: bool,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(st, req).await?;
    if !st
        .keys
        .keyring()
        .set_enabled(id, enabled)
        .await
        .map_err(|e| sse_error(st, e))?
    {
        return Err(AdminError(error(
            StatusCode::NOT_FOUND,
            "NotFoundException",
            "no such KMS key",
        )));
    }
    Ok(Json(json!({"keyId": id, "enabled": enabled})).into_response())
}

async fn disable(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    set_enabled(&st, &id, false, req).await
}

async fn enable(
    State(st): State<AppState>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    set_enabled(&st, &id, true, req).await
}

async fn rotate(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let mut report = st
        .keys
        .rotate(st.store.db())
        .await
        .map_err(|e| sse_error(&st, e))?;
    report.access_keys = st
        .store
        .meta()
        .reseal_access_keys()
        .await
        .map_err(super::common::db_error)?;
    Ok(Json(json!({
        "masterKeyId": st.keys.masters().current.as_ref().map(|m| m.id().to_owned()),
        "keyringEntries": report.keyring_entries,
        "dataKeys": report.data_keys,
        "accessKeys": report.access_keys,
    }))
    .into_response())
}
