//! The S3 operation handlers, one file per family, plus the header helpers they share.

pub mod acl;
pub mod authz;
pub mod bucket;
pub mod compat;
pub mod copy;
pub mod cors;
pub mod delete;
pub mod encryption;
pub mod headers;
pub mod lifecycle;
pub mod list;
pub mod multipart;
pub mod object;
pub mod object_lock;
pub mod op;
pub mod owner_only;
pub mod ownership;
pub mod policy;
pub mod post;
pub mod public_access;
pub mod sse;
pub mod tagging;
pub mod unconfigured;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::HeaderValue;
use axum::response::Response;

use crate::auth::body::BodyReader;
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::xml::Owner;

/// A parsed, authenticated request.
pub struct S3Request {
    /// Method, URI, headers.
    pub parts: Parts,
    /// Decoded query pairs.
    pub query: Vec<(String, String)>,
    /// Addressed bucket.
    pub bucket: Option<String>,
    /// Addressed key.
    pub key: Option<String>,
    /// Who signed it and how the body is protected.
    pub auth: Auth,
    /// The raw body.
    pub body: Body,
    /// What the authorization allowed: everything, or what the addressed object's ACL
    /// allows (GetObject, HeadObject, Get/PutObjectAcl; see `acl::require_object_access`).
    pub access: authz::Access,
    /// For a copy: what the authorization allowed on the source object.
    pub source_access: authz::Access,
    /// For a DeleteObjects on a bucket with a policy: the decision per key.
    pub per_key: Option<authz::PerKey>,
    /// The client's address (for `aws:SourceIp`), when the server knows it.
    pub source_ip: Option<std::net::IpAddr>,
    /// PutObjectTagging's tag set, read before the authorization (its policy conditions
    /// `s3:RequestObjectTag/<key>` and `s3:RequestObjectTagKeys` see it).
    pub tagging: Option<Vec<(String, String)>>,
}

impl S3Request {
    /// A query parameter.
    pub fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.parts.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The bucket (operations that reach here have one).
    pub fn bucket(&self) -> &str {
        self.bucket.as_deref().unwrap_or_default()
    }

    /// The key (object operations have one).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or_default()
    }

    /// The verified, decoded body.
    pub fn body_reader(&mut self) -> S3Result<BodyReader> {
        let body = std::mem::take(&mut self.body);
        BodyReader::new(body, &self.parts.headers, &self.auth)
    }
}

/// Runs the handler of an operation, after authorizing it.
pub async fn dispatch(st: &AppState, op: Op, mut req: S3Request) -> S3Result<Response> {
    let copy_source = req.header("x-amz-copy-source").map(str::to_owned);
    if op == Op::PutObjectTagging {
        req.tagging = Some(tagging::read_object_tagging(&mut req).await?);
    }
    let mut facts = authz::facts(
        &req.parts.headers,
        &req.query,
        &req.auth,
        req.source_ip,
        crate::tls::Transport::of(&req.parts.extensions),
        st.store.meta().clock().now().to_chrono(),
    );
    for (k, v) in req.tagging.iter().flatten() {
        authz::add_request_tag(&mut facts, k, v);
    }
    let (bucket, key) = (req.bucket.clone().unwrap_or_default(), req.key.clone());
    let target = authz::Target {
        bucket: &bucket,
        key: key.as_deref(),
        facts: &facts,
    };
    let decision = authz::authorize(st, &op, &req.auth.clone(), &target, copy_source).await?;
    expected_owner(st, &bucket, req.header("x-amz-expected-bucket-owner")).await?;
    if let Some(src) = req.header("x-amz-copy-source") {
        if let Ok((src_bucket, _)) = copy::parse_copy_source(src) {
            let want = req.header("x-amz-source-expected-bucket-owner");
            expected_owner(st, &src_bucket, want).await?;
        }
    }
    req.access = decision.access;
    req.source_access = decision.source;
    req.per_key = decision.per_key;
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
            let acl = acl::request_acl(st, &req.parts.headers, false).await?;
            let server = st.config.block_public_access.unwrap_or_default();
            public_access::check_acl(server, acl.as_deref())?;
        }
        Op::PutObject | Op::CopyObject | Op::CreateMultipartUpload => {
            let acl = acl::request_acl(st, &req.parts.headers, true).await?;
            if let Some(b) = st.store.meta().bucket_cached(&bucket).await? {
                ownership::check_acl(ownership::acls_disabled(&b), acl.as_deref())?;
                public_access::check_acl(public_access::effective(st, &b), acl.as_deref())?;
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
        Op::DeleteObjects => delete::delete_objects(st, req).await,
        Op::PutObject => object::put_object(st, req).await,
        Op::CopyObject => copy::copy_object(st, req).await,
        Op::GetObject => object::get_object(st, req, false).await,
        Op::HeadObject => object::get_object(st, req, true).await,
        Op::DeleteObject => object::delete_object(st, req).await,
        Op::CreateMultipartUpload => multipart::create(st, req).await,
        Op::UploadPart => multipart::upload_part(st, req).await,
        Op::UploadPartCopy => multipart::upload_part_copy(st, req).await,
        Op::CompleteMultipartUpload => multipart::complete(st, req).await,
        Op::AbortMultipartUpload => multipart::abort(st, req).await,
        Op::ListParts => multipart::list_parts(st, req).await,
        Op::ListMultipartUploads => multipart::list_uploads(st, req).await,
        Op::GetObjectAttributes => object::get_object_attributes(st, req).await,
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
    if h.starts_with(sse::CUSTOMER) {
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

/// Runs `f` within the request timeout (`--request-timeout`), or answers 503: for the steps of
/// data-moving operations that are bookkeeping (the publish after a PUT's body), which a
/// database that stops answering would otherwise hang. Dropping `f` midway is safe: every write
/// path leaves a state the janitor or a retry finishes.
pub async fn within_request_timeout<T>(
    st: &AppState,
    f: impl std::future::Future<Output = T>,
) -> S3Result<T> {
    let limit = std::time::Duration::from_secs(st.config.request_timeout.max(1));
    tokio::time::timeout(limit, f).await.map_err(|_| {
        tracing::warn!(limit_secs = limit.as_secs(), "request timed out");
        S3Error::service_unavailable()
    })
}

/// The bucket's attributes, or `NoSuchBucket` (cached for at most a second, see
/// `meta::BUCKET_CACHE_TTL`).
pub async fn require_bucket(st: &AppState, name: &str) -> S3Result<BucketInfo> {
    st.store
        .meta()
        .bucket_cached(name)
        .await?
        .ok_or_else(S3Error::no_such_bucket)
}

/// The owner element for an access key (ID: hex SHA-256 of the key id, 64 hex digits like a
/// canonical user id).
pub fn owner_of(access_key: &str) -> Owner {
    Owner {
        id: crate::auth::sigv4::sha256_hex(access_key.as_bytes()),
        display_name: access_key.to_owned(),
    }
}

/// An XML response.
pub fn xml_response(status: axum::http::StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}

/// An empty response with a status.
pub fn empty(status: axum::http::StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}
