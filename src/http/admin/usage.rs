//! `GET /_grids3/admin/usage` (root key only; `grids3 admin usage`): what every bucket holds,
//! by recount (`storage::objects::usage`), and each account's total (issue 62). Every call
//! recounts, so the figures are true when answered and a call reads each bucket's files.

use std::collections::BTreeMap;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::json;

use super::common::{db_error, root_body, AdminError};
use crate::state::AppState;

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new().route("/_grids3/admin/usage", get(usage))
}

async fn usage(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let mut buckets = Vec::new();
    let mut accounts: BTreeMap<String, (i64, i64, i64, i64, i64)> = BTreeMap::new();
    for b in st.store.meta().list_buckets().await.map_err(db_error)? {
        let u = st.store.recount_usage(&b.name).await.map_err(db_error)?;
        let a = accounts.entry(b.owner.clone()).or_default();
        a.0 += u.bytes;
        a.1 += u.objects;
        a.2 += u.versions;
        a.3 += u.delete_markers;
        a.4 += u.part_bytes;
        buckets.push(json!({
            "bucket": b.name,
            "account": crate::storage::identity::account_id(&b.owner),
            "bytes": u.bytes,
            "objects": u.objects,
            "versions": u.versions,
            "deleteMarkers": u.delete_markers,
            "uploadsInProgress": u.uploads,
            "parts": u.parts,
            "partBytes": u.part_bytes,
        }));
    }
    let accounts: Vec<_> = accounts
        .into_iter()
        .map(|(owner, (bytes, objects, versions, markers, part_bytes))| {
            json!({
                "account": crate::storage::identity::account_id(&owner),
                "bytes": bytes,
                "objects": objects,
                "versions": versions,
                "deleteMarkers": markers,
                "partBytes": part_bytes,
            })
        })
        .collect();
    Ok(Json(json!({
        "at": st
            .store
            .meta()
            .clock()
            .now()
            .to_chrono()
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "buckets": buckets,
        "accounts": accounts,
    }))
    .into_response())
}
