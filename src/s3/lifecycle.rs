//! Put/Get/DeleteBucketLifecycleConfiguration, and the `x-amz-expiration` header of objects a
//! rule will expire. The rules are `crate::lifecycle`; the janitor applies them
//! (`janitor::lifecycle`).

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::xml;

/// PutBucketLifecycleConfiguration: validated, then stored as given (with generated rule ids).
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    crate::lifecycle::parse(&body)?;
    let text = std::str::from_utf8(&body).map_err(|_| S3Error::malformed_xml())?;
    // Stored with an id for every rule that came without one, so that Get shows it and the
    // janitor's rules keep the same ids.
    let text = crate::lifecycle::with_rule_ids(text).ok_or_else(S3Error::malformed_xml)?;
    st.store
        .meta()
        .set_bucket_lifecycle(&b.name, Some(&text))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketLifecycleConfiguration: the document as it was put, with the generated rule ids.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let text = b.lifecycle.ok_or_else(|| S3Error {
        code: "NoSuchLifecycleConfiguration",
        status: StatusCode::NOT_FOUND,
        message: "The lifecycle configuration does not exist".into(),
        headers: Vec::new(),
        extra: Vec::new(),
    })?;
    Ok(xml_response(StatusCode::OK, text))
}

/// DeleteBucketLifecycleConfiguration.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_lifecycle(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
