//! Authorization: the root key can do everything; any other key acts only on buckets it owns
//! or was granted (`read` < `write` < `owner`), and sees only those in ListBuckets. Where the
//! bucket grants a principal (a key, or an unsigned request) nothing, reading an object is
//! left to that object's ACL (`public-read`, `authenticated-read`; see `acl`), which the
//! handler checks once it has found the object. Everything else is `AccessDenied`.
//!
//! The decision is one function (`authorize`) of the operation, the principal and the bucket,
//! with the object-level step after it: bucket policies and block-public-access are meant to
//! join it there, as further statements that can deny or allow.

use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

/// What a key may do on a bucket.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Read objects and listings.
    Read,
    /// Also write and delete objects.
    Write,
    /// Also delete the bucket and change its settings.
    Owner,
}

impl Role {
    /// From the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Role::Read),
            "write" => Some(Role::Write),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }
}

/// The role a request's key has on a bucket, if any.
pub fn role_on(auth: &Auth, b: &BucketInfo) -> Option<Role> {
    if auth.root || b.owner == auth.access_key {
        return Some(Role::Owner);
    }
    b.grants
        .iter()
        .find(|(k, _)| *k == auth.access_key)
        .and_then(|(_, r)| Role::parse(r))
}

/// The role an operation needs on its bucket (`None`: not a bucket operation).
fn needed(op: &Op) -> Option<Role> {
    use Op::*;
    Some(match op {
        // PostObject authorizes itself as a PutObject once its form is verified.
        ListBuckets | CreateBucket | NotImplemented(_) | Preflight | PostObject => return None,
        HeadBucket | GetBucketLocation | GetBucketVersioning | ListObjectVersions
        | ListObjectsV2 | ListObjects | GetObject | HeadObject | GetObjectAttributes
        | GetObjectTagging | ListParts | ListMultipartUploads | GetBucketTagging | GetObjectAcl => {
            Role::Read
        }
        PutObject
        | CopyObject
        | DeleteObject
        | DeleteObjects
        | CreateMultipartUpload
        | UploadPart
        | UploadPartCopy
        | CompleteMultipartUpload
        | AbortMultipartUpload
        | PutObjectTagging
        | DeleteObjectTagging => Role::Write,
        DeleteBucket | PutBucketTagging | DeleteBucketTagging | GetBucketCors | PutBucketCors
        | DeleteBucketCors | GetBucketAcl | PutBucketAcl | PutObjectAcl => Role::Owner,
    })
}

async fn require(st: &AppState, auth: &Auth, bucket: &str, role: Role) -> S3Result<()> {
    // A bucket that does not exist is left to the handler (NoSuchBucket).
    let Some(b) = st.store.meta().bucket_cached(bucket).await? else {
        return Ok(());
    };
    match role_on(auth, &b) {
        Some(have) if have >= role => Ok(()),
        _ => Err(S3Error::access_denied()),
    }
}

/// What the authorization allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The operation may run.
    Granted,
    /// A read of one object that only the object's ACL can allow (the handler decides).
    IfObjectAclAllows,
}

/// Authorizes an operation (and, for copies, read access to the source bucket). Takes the
/// parts it needs rather than the request, whose body is not `Sync`.
pub async fn authorize(
    st: &AppState,
    op: &Op,
    auth: &Auth,
    bucket: Option<String>,
    copy_source: Option<String>,
) -> S3Result<Access> {
    if auth.root {
        return Ok(Access::Granted);
    }
    let object_read = matches!(op, Op::GetObject | Op::HeadObject);
    if auth.is_anonymous() && !object_read {
        // Unsigned requests may only read objects whose ACL is public-read.
        return Err(S3Error::access_denied());
    }
    let Some(role) = needed(op) else {
        return Ok(Access::Granted);
    };
    let bucket = bucket.unwrap_or_default();
    match require(st, auth, &bucket, role).await {
        Ok(()) => {}
        Err(e) if object_read && e.code == "AccessDenied" => {
            return Ok(Access::IfObjectAclAllows);
        }
        Err(e) => return Err(e),
    }
    if let (Op::CopyObject | Op::UploadPartCopy, Some(src)) = (op, copy_source) {
        if let Ok((src_bucket, _)) = super::copy::parse_copy_source(&src) {
            require(st, auth, &src_bucket, Role::Read).await?;
        }
    }
    Ok(Access::Granted)
}
