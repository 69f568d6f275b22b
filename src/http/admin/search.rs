//! The admin API of metadata search (issue 63), root key only:
//!
//! - `GET /_grids3/admin/buckets/{bucket}/search-indexes`: the declared fields, each
//!   `building` or `ready`.
//! - `PUT` the same path with `{"fields": ["x-amz-meta-customer", "size", …]}`: replaces
//!   them (a field declared already keeps its built indexes; new ones are built in the
//!   background). `400 InvalidArgument` names a field that is unknown or cannot be indexed.
//! - `DELETE` the same path: no declared field (their indexes dropped).
//! - `POST /_grids3/admin/buckets/{bucket}/search-explain` with `{"query": …, "prefix": …}`:
//!   how a search would read (the index it would use, and the database's plan for each
//!   query it sends).

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{db_error, error, optional_json, root_body, AdminError};
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::DeclaredIndex;

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route(
            "/_grids3/admin/buckets/{bucket}/search-indexes",
            get(show).put(declare).delete(clear),
        )
        .route(
            "/_grids3/admin/buckets/{bucket}/search-explain",
            post(explain),
        )
}

// A misspelt key is refused, never read as "no field" (which would drop every index).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Declare {
    #[serde(default)]
    fields: Vec<String>,
}

fn describe(bucket: &str, list: &[DeclaredIndex]) -> Response {
    let fields: Vec<serde_json::Value> = list
        .iter()
        .map(|d| {
            json!({
                "field": d.field,
                "state": if d.ready { "ready" } else { "building" },
                "declared": mongodb::bson::DateTime::from_millis(d.gen.timestamp().timestamp_millis())
                    .try_to_rfc3339_string()
                    .unwrap_or_default(),
            })
        })
        .collect();
    Json(json!({"bucket": bucket, "fields": fields})).into_response()
}

async fn show(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    match st
        .store
        .meta()
        .get_bucket(&bucket)
        .await
        .map_err(db_error)?
    {
        Some(b) => Ok(describe(&bucket, &b.search_indexes)),
        None => Err(S3Error::no_such_bucket().into()),
    }
}

async fn set(st: &AppState, bucket: &str, fields: &[String]) -> Result<Response, AdminError> {
    match st.store.declare_search_indexes(bucket, fields).await {
        Ok(Ok(list)) => Ok(describe(bucket, &list)),
        Ok(Err(why)) => Err(AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            &why,
        ))),
        Err(crate::storage::gridfs::GridFsError::FileNotFound) => {
            Err(S3Error::no_such_bucket().into())
        }
        Err(e) => Err(S3Error::from(e).into()),
    }
}

async fn declare(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let input: Declare = optional_json(&root_body(&st, req).await?)?;
    set(&st, &bucket, &input.fields).await
}

async fn clear(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    root_body(&st, req).await?;
    set(&st, &bucket, &[]).await
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Explain {
    #[serde(default)]
    query: String,
    #[serde(default)]
    prefix: String,
}

async fn explain(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let q: Explain = optional_json(&root_body(&st, req).await?)?;
    let Some(b) = st
        .store
        .meta()
        .get_bucket(&bucket)
        .await
        .map_err(db_error)?
    else {
        return Err(S3Error::no_such_bucket().into());
    };
    let query = crate::search::parse(&q.query).map_err(|e| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            &e.to_string(),
        ))
    })?;
    let ready: Vec<String> = b
        .search_indexes
        .iter()
        .filter(|d| d.ready)
        .map(|d| d.field.clone())
        .collect();
    let driver = crate::storage::objects::search_plan::plan(&query, &ready);
    let plan = st
        .store
        .explain_search(&bucket, driver.as_ref(), &q.prefix)
        .await
        .map_err(|e| AdminError::from(S3Error::from(e)))?;
    let plan = serde_json::to_value(&plan).unwrap_or_default();
    Ok(
        Json(json!({"bucket": bucket, "query": q.query, "prefix": q.prefix, "explain": plan}))
            .into_response(),
    )
}
