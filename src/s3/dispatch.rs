//! The S3 entry: authorizes an operation, refuses headers the operation does not take, and
//! runs its handler. The top of `s3/`: nothing in `s3/` imports it.

use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::s3::respond::owner_of;
use crate::s3::{
    acl, authz, bucket, copy, cors, delete, encryption, lifecycle, list, logging, multipart,
    notification, object, object_lock, ownership, policy, public_access, search, search_versions,
    tagging, unconfigured, website,
};
use crate::state::AppState;

/// Runs the handler of an operation, after authorizing it.
pub async fn dispatch(st: &AppState, op: Op, mut req: S3Request) -> S3Result<Response> {
    crate::s3::request::headers::refuse_repeats(&req.parts.headers, &req.query)?;
    let copy_source = req.header("x-amz-copy-source").map(str::to_owned);
    crate::s3::lookup::resolve_grant_emails(st, &mut req.parts.headers).await?;
    if op == Op::PutObjectTagging {
        req.tagging = Some(crate::s3::request::tagging::read_object_tagging(&mut req).await?);
    }
    let mut facts = authz::facts_of(st, &req);
    for (k, v) in req.tagging.iter().flatten() {
        authz::add_request_tag(&mut facts, k, v);
    }
    let (bucket, key) = (req.bucket.clone().unwrap_or_default(), req.key.clone());
    let target = authz::Target {
        bucket: &bucket,
        key: key.as_deref(),
        facts: &facts,
        shape: crate::s3::request::access::shape_of(&req.parts.headers, &req.query),
    };
    let decision = authz::authorize(st, &op, &req.auth.clone(), &target, copy_source).await?;
    expected_owner(st, &bucket, req.header("x-amz-expected-bucket-owner")).await?;
    if let Some(src) = req.header("x-amz-copy-source") {
        if let Ok((src_bucket, _)) = crate::s3::request::parse_copy_source(src) {
            let want = req.header("x-amz-source-expected-bucket-owner");
            expected_owner(st, &src_bucket, want).await?;
        }
    }
    req.access = decision.access;
    req.source_access = decision.source;
    req.per_key = decision.per_key;
    req.bypass_governance = decision.bypass_governance;
    // Encryption headers are taken where S3 takes them (see `sse`); anywhere else they are
    // refused, never ignored.
    if let Some(h) = req
        .parts
        .headers
        .keys()
        .find(|h| !sse_header_allowed(&op, h.as_str()))
    {
        return Err(S3Error::invalid_argument(format!(
            "{h} is not allowed on this request"
        )));
    }
    if let Some(e) =
        crate::s3::rules::unsupported::refusal(&op, req.parts.headers.keys().map(|h| h.as_str()))
    {
        return Err(e);
    }
    // Lock headers are honoured where S3 takes them (PutObject, CopyObject,
    // CreateMultipartUpload); anywhere else they are refused rather than ignored.
    if !matches!(
        op,
        Op::PutObject | Op::CopyObject | Op::CreateMultipartUpload
    ) {
        if let Some(h) = req
            .parts
            .headers
            .keys()
            .find(|h| h.as_str().starts_with("x-amz-object-lock-"))
        {
            return Err(S3Error::not_implemented().with_message(format!(
                "{h}: Object Lock headers are taken by PutObject, CopyObject and CreateMultipartUpload only"
            )));
        }
    }
    match op {
        Op::CreateBucket => {
            let acl = crate::s3::lookup::request_acl(st, &req.parts.headers, false).await?;
            let server = st.config.block_public_access.unwrap_or_default();
            crate::s3::rules::public_access::check_acl(server, acl.as_deref())?;
        }
        Op::PutObject | Op::CopyObject | Op::CreateMultipartUpload => {
            let acl = crate::s3::lookup::request_acl(st, &req.parts.headers, true).await?;
            if let Some(b) = st.store.meta().bucket_cached(&bucket).await? {
                crate::s3::rules::ownership::check_acl(
                    crate::s3::rules::ownership::acls_disabled(&b),
                    req.header("x-amz-acl"),
                    acl.as_deref(),
                    &owner_of(&b.owner).id,
                )?;
                crate::s3::rules::public_access::check_acl(
                    crate::s3::rules::public_access::effective(st, &b),
                    acl.as_deref(),
                )?;
            }
        }
        _ => {}
    }
    match op {
        Op::ListBuckets => bucket::list_buckets(st, req).await,
        Op::CreateBucket => bucket::create_bucket(st, req).await,
        Op::HeadBucket => bucket::head_bucket(st, req).await,
        Op::DeleteBucket => bucket::delete_bucket(st, req).await,
        Op::GetBucketLocation => bucket::get_location(st, req).await,
        Op::GetBucketVersioning => bucket::get_versioning(st, req).await,
        Op::PutBucketVersioning => bucket::put_versioning(st, req).await,
        Op::GetObjectLockConfiguration => object_lock::get_config(st, req).await,
        Op::PutObjectLockConfiguration => object_lock::put_config(st, req).await,
        Op::GetObjectRetention => object_lock::get_retention(st, req).await,
        Op::PutObjectRetention => object_lock::put_retention(st, req).await,
        Op::GetObjectLegalHold => object_lock::get_legal_hold(st, req).await,
        Op::PutObjectLegalHold => object_lock::put_legal_hold(st, req).await,
        Op::ListObjectVersions => list::list_object_versions(st, req).await,
        Op::ListObjectsV2 => list::list_objects_v2(st, req).await,
        Op::ListObjects => list::list_objects_v1(st, req).await,
        Op::SearchObjects => search::search_objects(st, req).await,
        Op::SearchObjectVersions => search_versions::search_object_versions(st, req).await,
        Op::DeleteObjects => delete::delete_objects(st, req).await,
        Op::PutObject if crate::s3::minio::snowball::asked(&req.parts.headers) => {
            crate::s3::minio::snowball::extract(st, req).await
        }
        Op::PutObject => object::put_object(st, req).await,
        Op::CopyObject => copy::copy_object(st, req).await,
        Op::GetObject => object::get_object(st, req, false).await,
        Op::HeadObject => object::get_object(st, req, true).await,
        Op::DeleteObject if crate::s3::minio::force_delete::asked(&req.parts.headers)? => {
            crate::s3::minio::force_delete::delete_prefix(st, req).await
        }
        Op::DeleteObject => object::delete_object(st, req).await,
        Op::CreateMultipartUpload => multipart::create(st, req).await,
        Op::UploadPart => multipart::upload_part(st, req).await,
        Op::UploadPartCopy => multipart::upload_part_copy(st, req).await,
        Op::CompleteMultipartUpload => multipart::complete(st, req).await,
        Op::AbortMultipartUpload => multipart::abort(st, req).await,
        Op::ListParts => multipart::list_parts(st, req).await,
        Op::ListMultipartUploads => multipart::list_uploads(st, req).await,
        Op::GetObjectAttributes => object::get_object_attributes(st, req).await,
        Op::GetObjectTorrent => unconfigured::get_object_torrent(st, req).await,
        Op::GetBucketLogging => logging::get(st, req).await,
        Op::PutBucketLogging => logging::put(st, req).await,
        Op::GetBucketNotificationConfiguration => notification::get(st, req).await,
        Op::PutBucketNotificationConfiguration => notification::put(st, req).await,
        Op::ListenBucketNotification => notification::listen(st, req).await,
        Op::GetBucketWebsite => website::get(st, req).await,
        Op::PutBucketWebsite => website::put(st, req).await,
        Op::DeleteBucketWebsite => website::delete(st, req).await,
        Op::GetObjectTagging => tagging::get_object_tagging(st, req).await,
        Op::PutObjectTagging => tagging::put_object_tagging(st, req).await,
        Op::DeleteObjectTagging => tagging::delete_object_tagging(st, req).await,
        Op::GetBucketTagging => tagging::get_bucket_tagging(st, req).await,
        Op::PutBucketTagging => tagging::put_bucket_tagging(st, req).await,
        Op::DeleteBucketTagging => tagging::delete_bucket_tagging(st, req).await,
        Op::GetBucketAcl => acl::get_bucket_acl(st, req).await,
        Op::PutBucketAcl => acl::put_acl(st, req, false).await,
        Op::GetObjectAcl => acl::get_object_acl(st, req).await,
        Op::PutObjectAcl => acl::put_acl(st, req, true).await,
        Op::GetBucketCors => cors::get_bucket_cors(st, req).await,
        Op::PutBucketCors => cors::put_bucket_cors(st, req).await,
        Op::DeleteBucketCors => cors::delete_bucket_cors(st, req).await,
        Op::GetBucketPolicy => policy::get_bucket_policy(st, req).await,
        Op::PutBucketPolicy => policy::put_bucket_policy(st, req).await,
        Op::DeleteBucketPolicy => policy::delete_bucket_policy(st, req).await,
        Op::GetBucketPolicyStatus => policy::get_bucket_policy_status(st, req).await,
        Op::GetPublicAccessBlock => public_access::get(st, req).await,
        Op::PutPublicAccessBlock => public_access::put(st, req).await,
        Op::DeletePublicAccessBlock => public_access::delete(st, req).await,
        Op::GetBucketOwnershipControls => ownership::get(st, req).await,
        Op::PutBucketOwnershipControls => ownership::put(st, req).await,
        Op::DeleteBucketOwnershipControls => ownership::delete(st, req).await,
        Op::GetUnconfigured(sub) => unconfigured::get(st, req, sub).await,
        Op::GetBucketEncryption => encryption::get_bucket_encryption(st, req).await,
        Op::PutBucketEncryption => encryption::put_bucket_encryption(st, req).await,
        Op::DeleteBucketEncryption => encryption::delete_bucket_encryption(st, req).await,
        Op::GetBucketLifecycleConfiguration => lifecycle::get(st, req).await,
        Op::PutBucketLifecycleConfiguration => lifecycle::put(st, req).await,
        Op::DeleteBucketLifecycleConfiguration => lifecycle::delete(st, req).await,
        // Answered before authentication, in the HTTP entry.
        Op::Preflight | Op::PostObject => Err(S3Error::internal()),
        Op::NotImplemented(_) => Err(S3Error::not_implemented()),
    }
}

/// Whether an encryption header may come with an operation: the write headers with the
/// writes that choose an object's encryption, SSE-C keys with the reads and part writes of
/// SSE-C objects, copy-source keys with copies. (GET, HEAD and UploadPart answer the write
/// headers with their own error, see `sse::refuse_write_headers`.)
fn sse_header_allowed(op: &Op, h: &str) -> bool {
    let writes = matches!(
        op,
        Op::PutObject | Op::CopyObject | Op::CreateMultipartUpload
    );
    if h.starts_with(crate::s3::request::sse::CUSTOMER) {
        writes
            || matches!(
                op,
                Op::GetObject
                    | Op::HeadObject
                    | Op::UploadPart
                    | Op::UploadPartCopy
                    | Op::CompleteMultipartUpload
                    | Op::GetObjectAttributes
                    | Op::ListParts
            )
    } else if h.starts_with("x-amz-copy-source-server-side-encryption") {
        matches!(op, Op::CopyObject | Op::UploadPartCopy)
    } else if h.starts_with("x-amz-server-side-encryption") {
        writes || matches!(op, Op::GetObject | Op::HeadObject | Op::UploadPart)
    } else {
        true
    }
}

/// `x-amz-expected-bucket-owner` (and `x-amz-source-expected-bucket-owner`): AccessDenied
/// unless the bucket's owner is the one named. grids3 has no account ids: the owner is named
/// by its access key id or its canonical user id (what ListBuckets shows as `Owner/ID`).
async fn expected_owner(st: &AppState, bucket: &str, want: Option<&str>) -> S3Result<()> {
    let Some(want) = want.map(str::trim) else {
        return Ok(());
    };
    if let Some(b) = st.store.meta().bucket_cached(bucket).await? {
        if want != b.owner && !want.eq_ignore_ascii_case(&owner_of(&b.owner).id) {
            return Err(S3Error::access_denied()
                .with_message("Access Denied: the bucket is not owned by the expected owner"));
        }
    }
    Ok(())
}
