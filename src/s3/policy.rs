//! Bucket policies: PutBucketPolicy (validated as AWS validates, see `auth::policy`),
//! GetBucketPolicy (the document as stored), DeleteBucketPolicy and GetBucketPolicyStatus.
//! The authorization evaluates them (`s3::authz`).

use std::collections::HashSet;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use crate::auth::policy;
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::xml;

/// PutBucketPolicy.
pub async fn put_bucket_policy(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(1024 * 1024).await?;
    let text = String::from_utf8(body)
        .map_err(|_| S3Error::malformed_policy().with_message("Policies must be UTF-8 JSON"))?;
    let keys: HashSet<String> = st
        .store
        .meta()
        .list_access_keys()
        .await?
        .into_iter()
        .map(|k| k.id)
        .collect();
    let parsed = policy::parse(&text, &b.name, &|k| keys.contains(k))?;
    if parsed.is_public() && crate::s3::rules::public_access::effective(st, &b).block_public_policy
    {
        return Err(S3Error::access_denied().with_message(
            "Access Denied: Block Public Access (BlockPublicPolicy) refuses public policies on this bucket",
        ));
    }
    if !st
        .store
        .meta()
        .set_bucket_policy(&b.name, Some(&text))
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    Ok(empty(StatusCode::NO_CONTENT))
}

/// GetBucketPolicy: the document as it was put.
pub async fn get_bucket_policy(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    // Read fresh: a policy just put through another instance is what its owner expects back.
    let b = st.store.meta().get_bucket(&b.name).await?.unwrap_or(b);
    let text = b.policy.ok_or_else(S3Error::no_such_bucket_policy)?;
    let mut r = Response::new(Body::from(text));
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(r)
}

/// DeleteBucketPolicy (204 whether there was one or not, as in S3).
pub async fn delete_bucket_policy(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_policy(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// GetBucketPolicyStatus: whether the bucket is public, by its policy or by its ACL (a grant
/// to AllUsers or AuthenticatedUsers, in force: ACLs enabled and not ignored by Block Public
/// Access). A bucket with neither a policy nor a public ACL answers `NoSuchBucketPolicy`, as
/// AWS does for a bucket without a policy; one whose ACL is public answers `IsPublic: true`
/// even without a policy, which is what clients that check a bucket's exposure expect.
pub async fn get_bucket_policy_status(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let acl_public = !crate::s3::rules::ownership::acls_disabled(&b)
        && !crate::s3::rules::public_access::effective(st, &b).ignore_public_acls
        && crate::s3::request::grants::from_stored(&b.acl)
            .iter()
            .any(crate::s3::rules::public_access::is_public);
    let policy_public = match &b.policy {
        Some(text) => policy::parse(text, &b.name, &|_| true)
            .map(|p| p.is_public())
            .unwrap_or(false),
        None if acl_public => false,
        None => return Err(S3Error::no_such_bucket_policy()),
    };
    let public = policy_public || acl_public;
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PolicyStatus xmlns=\"{}\"><IsPublic>{public}</IsPublic></PolicyStatus>",
            xml::S3_NS
        ),
    ))
}
