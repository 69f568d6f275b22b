//! The policy vocabulary of operations: the action a bucket policy names for each one, its
//! versioned form, the resource ARN, and the way back from an action to an operation (the
//! admin API's explanations).

use crate::s3::op::Op;

/// The policy action of an operation (`None`: no bucket policy governs it).
pub fn action(op: &Op) -> Option<&'static str> {
    use Op::*;
    Some(match op {
        HeadBucket | ListObjects | ListObjectsV2 | SearchObjects => "s3:ListBucket",
        ListObjectVersions | SearchObjectVersions => "s3:ListBucketVersions",
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
        GetBucketNotificationConfiguration => "s3:GetBucketNotification",
        PutBucketNotificationConfiguration => "s3:PutBucketNotification",
        ListenBucketNotification => "s3:ListenBucketNotification",
        GetBucketWebsite => "s3:GetBucketWebsite",
        PutBucketWebsite => "s3:PutBucketWebsite",
        DeleteBucketWebsite => "s3:DeleteBucketWebsite",
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

/// What in a request's shape, beyond its operation, chooses the actions it is checked as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// It addresses a version (`?versionId=`, or a DeleteObjects entry's `VersionId`).
    pub version: bool,
    /// It sets a retention (`x-amz-object-lock-mode`, `x-amz-object-lock-retain-until-date`).
    pub retention: bool,
    /// It sets a legal hold (`x-amz-object-lock-legal-hold`).
    pub legal_hold: bool,
    /// It asks to bypass GOVERNANCE retention (`x-amz-bypass-governance-retention: true`).
    pub bypass: bool,
    /// Its copy source names a version (`x-amz-copy-source: /b/k?versionId=`).
    pub source_version: bool,
    /// It tags what it writes (`x-amz-tagging`).
    pub tagging: bool,
    /// It is MinIO's force delete of a prefix (`x-minio-force-delete: true`): decided key by
    /// key, as a DeleteObjects.
    pub force_delete: bool,
}

/// The one table of the actions a request is checked as, by its whole shape, as AWS checks
/// them: the operation's own action (its `*Version*` form when the request addresses a
/// version) first, then what its headers add: a write that sets a retention also needs
/// `s3:PutObjectRetention`, one that sets a legal hold `s3:PutObjectLegalHold`. (A copy
/// source's `s3:GetObject`/`s3:GetObjectVersion` is checked on the source, see
/// [`source_action`]; `s3:BypassGovernanceRetention` is asked only when the request asks to
/// bypass, see [`BYPASS`].)
pub fn actions_for(op: &Op, shape: Shape) -> Vec<&'static str> {
    let Some(own) = action(op) else {
        return Vec::new();
    };
    let mut v = vec![versioned_action(own, shape.version)];
    let sets_lock = matches!(
        op,
        Op::PutObject | Op::CopyObject | Op::CreateMultipartUpload | Op::PostObject
    );
    if sets_lock && shape.retention {
        v.push("s3:PutObjectRetention");
    }
    if sets_lock && shape.legal_hold {
        v.push("s3:PutObjectLegalHold");
    }
    // AWS: a PutObject (or copy, or upload) that tags the object also needs
    // s3:PutObjectTagging. An ACL header needs nothing more than s3:PutObject: AWS's own
    // cross-account example (`x-amz-acl: bucket-owner-full-control`) grants s3:PutObject
    // alone, and a policy restricts the ACL by the `s3:x-amz-acl` condition.
    if sets_lock && shape.tagging {
        v.push("s3:PutObjectTagging");
    }
    v
}

/// The action a copy's source is read under.
pub fn source_action(shape: Shape) -> &'static str {
    versioned_action("s3:GetObject", shape.source_version)
}

/// The action that lets a request bypass GOVERNANCE retention.
pub const BYPASS: &str = "s3:BypassGovernanceRetention";

/// The action AWS names when the request addresses a version (`?versionId=`).
pub(crate) fn versioned_action(act: &'static str, version: bool) -> &'static str {
    match (act, version) {
        ("s3:GetObjectTorrent", true) => "s3:GetObjectVersionTorrent",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every operation that can address a version, and the action it is checked as then.
    #[test]
    fn actions_by_whole_shape() {
        let v = Shape {
            version: true,
            ..Shape::default()
        };
        let table: &[(Op, &[&str])] = &[
            (Op::GetObject, &["s3:GetObjectVersion"]),
            (Op::HeadObject, &["s3:GetObjectVersion"]),
            (Op::DeleteObject, &["s3:DeleteObjectVersion"]),
            (Op::DeleteObjects, &["s3:DeleteObjectVersion"]),
            (Op::GetObjectTagging, &["s3:GetObjectVersionTagging"]),
            (Op::PutObjectTagging, &["s3:PutObjectVersionTagging"]),
            (Op::DeleteObjectTagging, &["s3:DeleteObjectVersionTagging"]),
            (Op::GetObjectAcl, &["s3:GetObjectVersionAcl"]),
            (Op::PutObjectAcl, &["s3:PutObjectVersionAcl"]),
            (Op::GetObjectAttributes, &["s3:GetObjectVersionAttributes"]),
            (Op::GetObjectTorrent, &["s3:GetObjectVersionTorrent"]),
            // AWS names one action for a version and the current object alike.
            (Op::GetObjectRetention, &["s3:GetObjectRetention"]),
            (Op::PutObjectRetention, &["s3:PutObjectRetention"]),
            (Op::GetObjectLegalHold, &["s3:GetObjectLegalHold"]),
            (Op::PutObjectLegalHold, &["s3:PutObjectLegalHold"]),
        ];
        for (op, want) in table {
            assert_eq!(actions_for(op, v), *want, "{op:?}");
            assert_eq!(
                actions_for(op, Shape::default()).len(),
                1,
                "{op:?} without a version"
            );
        }
        let lock = Shape {
            retention: true,
            legal_hold: true,
            ..Shape::default()
        };
        for op in [
            Op::PutObject,
            Op::CopyObject,
            Op::CreateMultipartUpload,
            Op::PostObject,
        ] {
            assert_eq!(
                actions_for(&op, lock),
                [
                    "s3:PutObject",
                    "s3:PutObjectRetention",
                    "s3:PutObjectLegalHold"
                ],
                "{op:?}"
            );
        }
        assert_eq!(actions_for(&Op::UploadPart, lock), ["s3:PutObject"]);
        let tagged = Shape {
            tagging: true,
            ..Shape::default()
        };
        assert_eq!(
            actions_for(&Op::PutObject, tagged),
            ["s3:PutObject", "s3:PutObjectTagging"]
        );
        assert_eq!(source_action(Shape::default()), "s3:GetObject");
        assert_eq!(
            source_action(Shape {
                source_version: true,
                ..Shape::default()
            }),
            "s3:GetObjectVersion"
        );
    }
}
