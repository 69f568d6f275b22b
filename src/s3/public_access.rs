//! Block Public Access: Put/Get/DeletePublicAccessBlock, and the four settings honoured as
//! AWS honours them:
//! - `BlockPublicAcls`: a request that sets a public ACL (a grant to AllUsers or
//!   AuthenticatedUsers, canned or not) is refused with 403;
//! - `IgnorePublicAcls`: such grants, on the bucket and its objects, grant nothing;
//! - `BlockPublicPolicy`: PutBucketPolicy of a public policy is refused with 403;
//! - `RestrictPublicBuckets`: a public policy allows only signed requests (grids3's keys are
//!   all of its one account, which is whom AWS still lets in).
//!
//! A bucket without a configuration of its own uses the server-wide one
//! (`--block-public-access`), which by default blocks nothing.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::meta::PublicAccessBlock;
use crate::xml;

/// `<PublicAccessBlockConfiguration>`.
#[derive(serde::Deserialize, Debug, Default)]
struct Configuration {
    #[serde(rename = "BlockPublicAcls", default)]
    block_public_acls: Option<String>,
    #[serde(rename = "IgnorePublicAcls", default)]
    ignore_public_acls: Option<String>,
    #[serde(rename = "BlockPublicPolicy", default)]
    block_public_policy: Option<String>,
    #[serde(rename = "RestrictPublicBuckets", default)]
    restrict_public_buckets: Option<String>,
}

fn flag(v: &Option<String>) -> S3Result<bool> {
    match v.as_deref().map(str::trim) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(S3Error::malformed_xml()),
    }
}

/// PutPublicAccessBlock.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let c: Configuration = xml::from_xml("PublicAccessBlockConfiguration", &body)?;
    let pab = PublicAccessBlock {
        block_public_acls: flag(&c.block_public_acls)?,
        ignore_public_acls: flag(&c.ignore_public_acls)?,
        block_public_policy: flag(&c.block_public_policy)?,
        restrict_public_buckets: flag(&c.restrict_public_buckets)?,
    };
    st.store
        .meta()
        .set_public_access_block(&b.name, Some(pab))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetPublicAccessBlock: the bucket's own configuration (404 without one, as in S3, even
/// where the server-wide default applies).
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let p = b
        .public_access_block
        .ok_or_else(S3Error::no_such_public_access_block_configuration)?;
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PublicAccessBlockConfiguration xmlns=\"{}\"><BlockPublicAcls>{}</BlockPublicAcls><IgnorePublicAcls>{}</IgnorePublicAcls><BlockPublicPolicy>{}</BlockPublicPolicy><RestrictPublicBuckets>{}</RestrictPublicBuckets></PublicAccessBlockConfiguration>",
            xml::S3_NS,
            p.block_public_acls,
            p.ignore_public_acls,
            p.block_public_policy,
            p.restrict_public_buckets
        ),
    ))
}

/// DeletePublicAccessBlock.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store
        .meta()
        .set_public_access_block(&b.name, None)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
