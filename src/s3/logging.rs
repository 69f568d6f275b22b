//! PutBucketLogging and GetBucketLogging: where a bucket's server access log goes (the records
//! themselves are made and delivered by `crate::access_log`).
//!
//! A target is checked as AWS checks it: it must exist, belong to the source bucket's owner,
//! and let the log delivery service write there, through its bucket policy (a statement that
//! allows `{"Service": "logging.s3.amazonaws.com"}` `s3:PutObject` on the prefix). grids3 has
//! no LogDelivery group, so the ACL way AWS also accepts is not one here.

use axum::http::StatusCode;
use axum::response::Response;

use crate::access_log::config;
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::{empty, xml_response};
use crate::state::AppState;
use crate::xml;

fn invalid_target(message: &str) -> S3Error {
    S3Error {
        code: "InvalidTargetBucketForLogging",
        status: StatusCode::BAD_REQUEST,
        message: message.to_owned(),
        headers: Vec::new(),
        extra: Vec::new(),
    }
}

/// PutBucketLogging.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let target = config::parse(&body)?;
    if let Some(t) = &target {
        let Some(tb) = st.store.meta().get_bucket(&t.bucket).await? else {
            return Err(invalid_target(
                "The target bucket for logging does not exist",
            ));
        };
        if tb.owner != b.owner {
            return Err(invalid_target(
                "The owner for the bucket to be logged and the target bucket must be the same.",
            ));
        }
        // AWS refuses a target whose objects log delivery could not write as it writes them:
        // one with a default Object Lock retention (log objects would be locked), and one
        // whose default encryption is SSE-KMS (delivery encrypts with SSE-S3 only).
        if tb.object_lock.as_ref().is_some_and(|l| l.mode.is_some()) {
            return Err(invalid_target(
                "The target bucket for logging must not have a default Object Lock retention period configured",
            ));
        }
        if tb
            .encryption
            .as_ref()
            .is_some_and(|e| e.algorithm == crate::crypto::MODE_KMS)
        {
            return Err(invalid_target(
                "The target bucket for logging must not use SSE-KMS default encryption: log delivery encrypts with SSE-S3 (AES256) only",
            ));
        }
        if !crate::s3::authz::allows_log_delivery(&tb, &format!("{}probe", t.prefix), &b.name) {
            return Err(invalid_target(
                "You must either provide the necessary permissions to the logging service using a bucket policy or give the log-delivery group WRITE and READ_ACP permissions to the target bucket",
            ));
        }
    }
    let stored = target.as_ref().map(|t| config::render(Some(t)));
    if !st
        .store
        .meta()
        .set_bucket_logging(req.bucket(), stored.as_deref())
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    Ok(empty(StatusCode::OK))
}

/// GetBucketLogging: the configuration, or an empty `BucketLoggingStatus` (logging off).
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let target = b
        .logging
        .as_deref()
        .and_then(|x| config::parse(x.as_bytes()).ok().flatten());
    Ok(xml_response(
        StatusCode::OK,
        config::render(target.as_ref()),
    ))
}
