//! The policy vocabulary of operations: the action a bucket policy names for each one, its
//! versioned form, the resource ARN, and the way back from an action to an operation (the
//! admin API's explanations).

use crate::s3::op::Op;

/// The policy action of an operation (`None`: no bucket policy governs it).
pub fn action(op: &Op) -> Option<&'static str> {
    use Op::*;
    Some(match op {
        HeadBucket | ListObjects | ListObjectsV2 => "s3:ListBucket",
        ListObjectVersions => "s3:ListBucketVersions",
        ListMultipartUploads => "s3:ListBucketMultipartUploads",
        GetBucketLocation => "s3:GetBucketLocation",
        GetBucketVersioning => "s3:GetBucketVersioning",
        PutBucketVersioning => "s3:PutBucketVersioning",
        GetObjectLockConfiguration => "s3:GetBucketObjectLockConfiguration",
        PutObjectLockConfiguration => "s3:PutBucketObjectLockConfiguration",
        GetObjectRetention => "s3:GetObjectRetention",
        PutObjectRetention => "s3:PutObjectRetention",
        GetObjectLegalHold => "s3:GetObjectLegalHold",
        PutObjectLegalHold => "s3:PutObjectLegalHold",
        GetObject | HeadObject => "s3:GetObject",
        GetObjectAttributes => "s3:GetObjectAttributes",
        GetObjectTorrent => "s3:GetObjectTorrent",
        GetBucketLogging => "s3:GetBucketLogging",
        PutBucketLogging => "s3:PutBucketLogging",
        GetObjectTagging => "s3:GetObjectTagging",
        PutObjectTagging => "s3:PutObjectTagging",
        DeleteObjectTagging => "s3:DeleteObjectTagging",
        PutObject
        | CopyObject
        | CreateMultipartUpload
        | UploadPart
        | UploadPartCopy
        | CompleteMultipartUpload
        | PostObject => "s3:PutObject",
        DeleteObject | DeleteObjects => "s3:DeleteObject",
        AbortMultipartUpload => "s3:AbortMultipartUpload",
        ListParts => "s3:ListMultipartUploadParts",
        GetObjectAcl => "s3:GetObjectAcl",
        PutObjectAcl => "s3:PutObjectAcl",
        GetBucketAcl => "s3:GetBucketAcl",
        PutBucketAcl => "s3:PutBucketAcl",
        GetBucketCors => "s3:GetBucketCORS",
        PutBucketCors | DeleteBucketCors => "s3:PutBucketCORS",
        GetBucketTagging => "s3:GetBucketTagging",
        PutBucketTagging | DeleteBucketTagging => "s3:PutBucketTagging",
        DeleteBucket => "s3:DeleteBucket",
        GetBucketPolicy => "s3:GetBucketPolicy",
        PutBucketPolicy => "s3:PutBucketPolicy",
        DeleteBucketPolicy => "s3:DeleteBucketPolicy",
        GetBucketPolicyStatus => "s3:GetBucketPolicyStatus",
        GetPublicAccessBlock => "s3:GetBucketPublicAccessBlock",
        PutPublicAccessBlock | DeletePublicAccessBlock => "s3:PutBucketPublicAccessBlock",
        GetBucketOwnershipControls => "s3:GetBucketOwnershipControls",
        GetUnconfigured(sub) => crate::s3::op::subresource_action(sub)?,
        GetBucketEncryption => "s3:GetEncryptionConfiguration",
        PutBucketEncryption | DeleteBucketEncryption => "s3:PutEncryptionConfiguration",
        GetBucketLifecycleConfiguration => "s3:GetLifecycleConfiguration",
        PutBucketLifecycleConfiguration | DeleteBucketLifecycleConfiguration => {
            "s3:PutLifecycleConfiguration"
        }
        PutBucketOwnershipControls | DeleteBucketOwnershipControls => {
            "s3:PutBucketOwnershipControls"
        }
        ListBuckets | CreateBucket | Preflight | NotImplemented(_) => return None,
    })
}

/// The action AWS names when the request addresses a version (`?versionId=`).
pub(crate) fn versioned_action(act: &'static str, version: bool) -> &'static str {
    match (act, version) {
        ("s3:GetObject", true) => "s3:GetObjectVersion",
        ("s3:DeleteObject", true) => "s3:DeleteObjectVersion",
        ("s3:GetObjectTagging", true) => "s3:GetObjectVersionTagging",
        ("s3:PutObjectTagging", true) => "s3:PutObjectVersionTagging",
        ("s3:DeleteObjectTagging", true) => "s3:DeleteObjectVersionTagging",
        ("s3:GetObjectAcl", true) => "s3:GetObjectVersionAcl",
        ("s3:PutObjectAcl", true) => "s3:PutObjectVersionAcl",
        ("s3:GetObjectAttributes", true) => "s3:GetObjectVersionAttributes",
        _ => act,
    }
}

/// The resource ARN of a request.
pub(crate) fn resource(bucket: &str, key: Option<&str>) -> String {
    match key {
        Some(k) => format!("arn:aws:s3:::{bucket}/{k}"),
        None => format!("arn:aws:s3:::{bucket}"),
    }
}

/// The operation that stands for a policy action (for the admin API).
pub fn op_for_action(action: &str) -> Option<Op> {
    use Op::*;
    [
        ListObjectsV2,
        ListObjectVersions,
        ListMultipartUploads,
        GetBucketLocation,
        GetBucketVersioning,
        PutBucketVersioning,
        GetObject,
        GetObjectAttributes,
        GetObjectTagging,
        PutObjectTagging,
        DeleteObjectTagging,
        PutObject,
        DeleteObject,
        AbortMultipartUpload,
        ListParts,
        GetObjectAcl,
        PutObjectAcl,
        GetBucketAcl,
        PutBucketAcl,
        GetBucketCors,
        PutBucketCors,
        GetBucketTagging,
        PutBucketTagging,
        DeleteBucket,
        GetBucketPolicy,
        PutBucketPolicy,
        DeleteBucketPolicy,
        GetBucketPolicyStatus,
        GetPublicAccessBlock,
        PutPublicAccessBlock,
        GetBucketOwnershipControls,
        PutBucketOwnershipControls,
    ]
    .into_iter()
    .find(|op| self::action(op).is_some_and(|a| a.eq_ignore_ascii_case(action)))
}
