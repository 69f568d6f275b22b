//! `PUT` and `GET /_grids3/admin/accounts/{account}/quota` (root key only; `grids3 admin
//! account-quota`, and the console's administrator page): an account's limits on bytes and
//! objects across all its buckets, and its counted usage (issue 62). MinIO has no account
//! quota, so this is grids3's own.
//!
//! - `{account}` is the account's 12-digit id, or its root access key id.
//! - The body is `{"bytes": n, "objects": n}`; 0 or null clears one, an absent field too
//!   (the body says the whole limit, as MinIO's bucket quota does). Other fields are refused.
//! - Like a bucket's, the limit holds exactly: every bucket of the account is linked to the
//!   account's counters first (see `storage::meta::quota_account`).

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::put;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{db_error, error, root_body, AdminError};
use crate::state::AppState;
use crate::storage::meta::{Counted, Limits};

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new().route(
        "/_grids3/admin/accounts/{account}/quota",
        put(set_quota).get(get_quota),
    )
}

/// An account quota's body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct AccountQuota {
    bytes: Option<u64>,
    objects: Option<u64>,
}

/// The limits a body sets: 0 clears; the field that is too large.
fn limits_of(q: &AccountQuota) -> Result<Limits, &'static str> {
    let one = |v: Option<u64>, what: &'static str| match v {
        None | Some(0) => Ok(None),
        Some(n) => i64::try_from(n).map(Some).map_err(|_| what),
    };
    Ok(Limits {
        bytes: one(q.bytes, "bytes")?,
        objects: one(q.objects, "objects")?,
    })
}

/// The account `{account}` names (its 12-digit id, or its root access key id), and its root
/// key while there is one: an account whose key was deleted keeps its limits, which its id
/// still reads and clears.
async fn account_of(st: &AppState, named: &str) -> Result<(String, Option<String>), AdminError> {
    let keys = st.store.meta().list_access_keys().await.map_err(db_error)?;
    if let Some(k) = keys
        .into_iter()
        .find(|k| k.id == named || crate::storage::identity::account_id(&k.id) == named)
    {
        return Ok((crate::storage::identity::account_id(&k.id), Some(k.id)));
    }
    let counted = st.store.account_counted(named).await.map_err(db_error)?;
    if counted.is_some() {
        return Ok((named.to_owned(), None));
    }
    Err(AdminError(error(
        StatusCode::NOT_FOUND,
        "NoSuchAccount",
        "no account has that id or root access key id",
    )))
}

fn answer(account: &str, c: Option<Counted>) -> Response {
    // An account never limited is not counted: its usage is not known here (`grids3 admin
    // usage` recounts it).
    let counted = c.is_some();
    let c = c.unwrap_or_default();
    Json(json!({
        "account": account,
        "counted": counted,
        "limits": {"bytes": c.limits.bytes, "objects": c.limits.objects},
        "usage": {
            "bytes": c.used_bytes(),
            "storedBytes": c.bytes,
            "partBytes": c.part_bytes,
            "heldBytes": c.reserved_bytes,
            "objects": c.used_objects(),
            "storedObjects": c.objects,
        },
    }))
    .into_response()
}

async fn set_quota(
    State(st): State<AppState>,
    Path(named): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let body = root_body(&st, req).await?;
    let q: AccountQuota = serde_json::from_slice(&body).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "MalformedJSON",
            &e.to_string(),
        ))
    })?;
    let limits = limits_of(&q).map_err(|what| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            &format!("{what} is too large"),
        ))
    })?;
    let (account, key) = account_of(&st, &named).await?;
    st.store
        .set_account_limits_of(&account, key.as_deref(), limits)
        .await
        .map_err(db_error)?;
    let c = st.store.account_counted(&account).await.map_err(db_error)?;
    Ok(answer(&account, c))
}

async fn get_quota(
    State(st): State<AppState>,
    Path(named): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    let (account, _) = account_of(&st, &named).await?;
    let c = st.store.account_counted(&account).await.map_err(db_error)?;
    Ok(answer(&account, c))
}
