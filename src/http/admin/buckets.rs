//! The admin API of buckets, root key only: create a bucket in a chosen storage mode (the
//! S3 way is CreateBucket with `x-grids3-storage-mode`), convert a bucket to another mode,
//! and show a bucket's attributes.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use super::common::{db_error, error, optional_json, root_body, AdminError};
use crate::state::AppState;
use crate::storage::meta::{BucketInfo, StorageMode};

/// The routes.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/_grids3/admin/buckets", post(create))
        .route("/_grids3/admin/buckets/{bucket}", get(show))
        .route("/_grids3/admin/buckets/{bucket}/convert", post(convert))
}

#[derive(Deserialize, Default)]
struct CreateBucket {
    #[serde(default)]
    name: String,
    /// `gridfs` (the default) or `content`.
    #[serde(default)]
    storage: Option<String>,
    /// The owner's access key id (the root key when absent).
    #[serde(default)]
    owner: Option<String>,
}

fn describe(b: &BucketInfo) -> serde_json::Value {
    json!({
        "name": b.name,
        "owner": b.owner,
        "storage": b.storage.as_str(),
        "converting": b.converting,
        "created": b.creation_date.try_to_rfc3339_string().unwrap_or_default(),
        "versioning": b.versioning,
        // The first version index build is done (a large bucket's goes on in the background
        // after PutBucketVersioning answers).
        "versionsIndexed": b.versions_indexed,
        "objectLock": b.object_lock.is_some(),
        "adopted": b.adopted,
    })
}

async fn create(State(st): State<AppState>, req: Request) -> Result<Response, AdminError> {
    let input: CreateBucket = optional_json(&root_body(&st, req).await?)?;
    if !crate::s3::bucket::valid_bucket_name(&input.name) {
        return Err(crate::error::S3Error::invalid_bucket_name().into());
    }
    let storage = match input.storage.as_deref() {
        None => StorageMode::Gridfs,
        Some(s) => StorageMode::parse(s).ok_or_else(|| {
            AdminError(error(
                StatusCode::BAD_REQUEST,
                "InvalidArgument",
                "storage must be gridfs or content",
            ))
        })?,
    };
    let owner = match input.owner {
        Some(o) => o,
        None => st.config.root_access_key.clone().unwrap_or_default(),
    };
    let info = BucketInfo {
        ownership: Some(st.config.default_object_ownership.clone()),
        storage,
        ..BucketInfo::new(
            &input.name,
            &owner,
            &st.config.region,
            st.store.meta().clock().now(),
        )
    };
    if !crate::s3::bucket::store_new_bucket(&st, &info).await? {
        return Err(AdminError(error(
            StatusCode::CONFLICT,
            "BucketAlreadyExists",
            "a bucket of that name exists",
        )));
    }
    Ok((StatusCode::CREATED, Json(describe(&info))).into_response())
}

#[derive(Deserialize, Default)]
struct Convert {
    /// `gridfs` or `content`.
    #[serde(default)]
    to: String,
}

/// Starts converting a bucket (202, the conversion runs in the background and the bucket's
/// info shows `converting` until it is done; 200 when the bucket is in that mode already).
/// Encrypted objects stay GridFS files whatever the mode (never de-duplicated).
async fn convert(
    State(st): State<AppState>,
    Path(bucket): Path<String>,
    req: Request,
) -> Result<Response, AdminError> {
    let input: Convert = optional_json(&root_body(&st, req).await?)?;
    let to = StorageMode::parse(&input.to).ok_or_else(|| {
        AdminError(error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "to must be gridfs or content",
        ))
    })?;
    let Some(b) = st
        .store
        .meta()
        .get_bucket(&bucket)
        .await
        .map_err(db_error)?
    else {
        return Err(crate::error::S3Error::no_such_bucket().into());
    };
    if b.storage == to && !b.converting {
        return Ok(Json(describe(&b)).into_response());
    }
    let Some(now) = st
        .store
        .begin_conversion(&bucket, to)
        .await
        .map_err(|e| AdminError::from(crate::error::S3Error::from(e)))?
    else {
        return Err(crate::error::S3Error::no_such_bucket().into());
    };
    Ok((StatusCode::ACCEPTED, Json(describe(&now))).into_response())
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
        Some(b) => Ok(Json(describe(&b)).into_response()),
        None => Err(crate::error::S3Error::no_such_bucket().into()),
    }
}
