//! PutBucketWebsite, GetBucketWebsite and DeleteBucketWebsite: the configuration the website
//! endpoint (`crate::website`) serves a bucket by. It is checked once
//! (`rules::website::validate`) and stored as the XML it renders to. A website configuration
//! never changes an S3 API answer: the S3 endpoint serves the same bucket as before.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::{empty, xml_response};
use crate::state::AppState;
use crate::xml::{self, WebsiteConfiguration};

/// PutBucketWebsite.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let conf: WebsiteConfiguration = xml::from_xml("WebsiteConfiguration", &body)?;
    let conf = crate::s3::rules::website::validate(conf)?;
    let stored = xml::to_xml("WebsiteConfiguration", &conf);
    if !st
        .store
        .meta()
        .set_bucket_website(req.bucket(), Some(&stored))
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    Ok(empty(StatusCode::OK))
}

/// GetBucketWebsite.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    match b.website {
        Some(x) => Ok(xml_response(StatusCode::OK, x)),
        None => Err(S3Error::no_such_website_configuration()),
    }
}

/// DeleteBucketWebsite (`204`, with or without a configuration, as AWS answers).
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    if !st
        .store
        .meta()
        .set_bucket_website(req.bucket(), None)
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    Ok(empty(StatusCode::NO_CONTENT))
}
