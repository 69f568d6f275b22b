//! Put/Get/DeleteBucketLifecycleConfiguration, and the `x-amz-expiration` header of objects a
//! rule will expire. The rules are `crate::lifecycle`; the janitor applies them
//! (`janitor::lifecycle`).

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::{empty, require_bucket, xml_response, S3Request};
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::ObjectInfo;
use crate::xml;

/// PutBucketLifecycleConfiguration: validated, then stored as given.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    crate::lifecycle::parse(&body)?;
    let text = String::from_utf8(body).map_err(|_| S3Error::malformed_xml())?;
    st.store
        .meta()
        .set_bucket_lifecycle(&b.name, Some(&text))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketLifecycleConfiguration: the document as it was put.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let text = b.lifecycle.ok_or_else(|| S3Error {
        code: "NoSuchLifecycleConfiguration",
        status: StatusCode::NOT_FOUND,
        message: "The lifecycle configuration does not exist".into(),
        headers: Vec::new(),
    })?;
    Ok(xml_response(StatusCode::OK, text))
}

/// DeleteBucketLifecycleConfiguration.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_lifecycle(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Sets `x-amz-expiration` on a response about `o` when a rule of the bucket will expire it,
/// in S3's format (`expiry-date="<RFC 1123>", rule-id="<id>"`).
pub fn expiration_header(st: &AppState, b: &BucketInfo, o: &ObjectInfo, h: &mut HeaderMap) {
    let Some(text) = &b.lifecycle else { return };
    let Ok(rules) = crate::lifecycle::parse(text.as_bytes()) else {
        return;
    };
    let written = o.file.upload_date.to_chrono();
    let day = st.config.lifecycle_day_secs;
    if let Some((at, id)) =
        crate::lifecycle::object_expiry(&rules, o.key(), o.size(), &o.meta.tags, written, day)
    {
        let v = format!(
            "expiry-date=\"{}\", rule-id=\"{}\"",
            at.format("%a, %d %b %Y %H:%M:%S GMT"),
            id.replace('"', "")
        );
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert("x-amz-expiration", v);
        }
    }
}
