//! The S3 operation a request asks for, parsed from method, bucket, key, query and headers in
//! one pure function. Everything not recognised is `NotImplemented`, never a silent 200.

use axum::http::{HeaderMap, Method};

/// An S3 operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// GET /
    ListBuckets,
    /// PUT /bucket
    CreateBucket,
    /// HEAD /bucket
    HeadBucket,
    /// DELETE /bucket
    DeleteBucket,
    /// GET /bucket?location
    GetBucketLocation,
    /// GET /bucket?versioning
    GetBucketVersioning,
    /// PUT /bucket?versioning
    PutBucketVersioning,
    /// GET /bucket?object-lock
    GetObjectLockConfiguration,
    /// PUT /bucket?object-lock
    PutObjectLockConfiguration,
    /// GET /bucket/key?retention
    GetObjectRetention,
    /// PUT /bucket/key?retention
    PutObjectRetention,
    /// GET /bucket/key?legal-hold
    GetObjectLegalHold,
    /// PUT /bucket/key?legal-hold
    PutObjectLegalHold,
    /// GET /bucket?versions
    ListObjectVersions,
    /// GET /bucket?list-type=2
    ListObjectsV2,
    /// GET /bucket
    ListObjects,
    /// GET /bucket?search=… (Zenko's metadata search)
    SearchObjects,
    /// GET /bucket?versions&search=… (Zenko's metadata search of versions)
    SearchObjectVersions,
    /// POST /bucket?delete
    DeleteObjects,
    /// PUT /bucket/key
    PutObject,
    /// PUT /bucket/key with x-amz-copy-source
    CopyObject,
    /// GET /bucket/key
    GetObject,
    /// HEAD /bucket/key
    HeadObject,
    /// DELETE /bucket/key
    DeleteObject,
    /// POST /bucket/key?uploads
    CreateMultipartUpload,
    /// PUT /bucket/key?partNumber&uploadId
    UploadPart,
    /// PUT /bucket/key?partNumber&uploadId with x-amz-copy-source
    UploadPartCopy,
    /// POST /bucket/key?uploadId
    CompleteMultipartUpload,
    /// DELETE /bucket/key?uploadId
    AbortMultipartUpload,
    /// GET /bucket/key?uploadId
    ListParts,
    /// GET /bucket?uploads
    ListMultipartUploads,
    /// GET /bucket?logging
    GetBucketLogging,
    /// PUT /bucket?logging
    PutBucketLogging,
    /// GET /bucket?notification
    GetBucketNotificationConfiguration,
    /// PUT /bucket?notification
    PutBucketNotificationConfiguration,
    /// GET /bucket?events=... (MinIO's ListenBucketNotification: a live stream of records)
    ListenBucketNotification,
    /// GET /bucket?website
    GetBucketWebsite,
    /// PUT /bucket?website
    PutBucketWebsite,
    /// DELETE /bucket?website
    DeleteBucketWebsite,
    /// GET /bucket/key?attributes
    GetObjectAttributes,
    /// GET /bucket/key?torrent: grids3 makes no torrents (501), but a missing key is 404, as
    /// on AWS.
    GetObjectTorrent,
    /// GET /bucket/key?tagging
    GetObjectTagging,
    /// PUT /bucket/key?tagging
    PutObjectTagging,
    /// DELETE /bucket/key?tagging
    DeleteObjectTagging,
    /// GET /bucket?tagging
    GetBucketTagging,
    /// PUT /bucket?tagging
    PutBucketTagging,
    /// DELETE /bucket?tagging
    DeleteBucketTagging,
    /// GET /bucket?acl
    GetBucketAcl,
    /// PUT /bucket?acl
    PutBucketAcl,
    /// GET /bucket/key?acl
    GetObjectAcl,
    /// PUT /bucket/key?acl
    PutObjectAcl,
    /// GET /bucket?cors
    GetBucketCors,
    /// PUT /bucket?cors
    PutBucketCors,
    /// DELETE /bucket?cors
    DeleteBucketCors,
    /// OPTIONS /bucket[/key]: a CORS preflight, answered without authentication.
    Preflight,
    /// GET /bucket?policy
    GetBucketPolicy,
    /// PUT /bucket?policy
    PutBucketPolicy,
    /// DELETE /bucket?policy
    DeleteBucketPolicy,
    /// GET /bucket?policyStatus
    GetBucketPolicyStatus,
    /// GET /bucket?publicAccessBlock
    GetPublicAccessBlock,
    /// PUT /bucket?publicAccessBlock
    PutPublicAccessBlock,
    /// DELETE /bucket?publicAccessBlock
    DeletePublicAccessBlock,
    /// GET /bucket?ownershipControls
    GetBucketOwnershipControls,
    /// PUT /bucket?ownershipControls
    PutBucketOwnershipControls,
    /// DELETE /bucket?ownershipControls
    DeleteBucketOwnershipControls,
    /// GET /bucket?encryption
    GetBucketEncryption,
    /// PUT /bucket?encryption
    PutBucketEncryption,
    /// DELETE /bucket?encryption
    DeleteBucketEncryption,
    /// GET /bucket?lifecycle
    GetBucketLifecycleConfiguration,
    /// PUT /bucket?lifecycle
    PutBucketLifecycleConfiguration,
    /// DELETE /bucket?lifecycle
    DeleteBucketLifecycleConfiguration,
    /// GET /bucket?replication (and the other sub-resources of `s3::unconfigured`): what AWS
    /// answers for a bucket without that configuration.
    GetUnconfigured(&'static str),
    /// POST /bucket with multipart/form-data: a browser form upload, which authenticates
    /// itself with its signed policy.
    PostObject,
    /// Anything else; the string names what was asked for (for the log).
    NotImplemented(String),
}

impl Op {
    /// Whether the handler itself moves object data for as long as the object is large (the
    /// request body, or a server-side copy or rewrite). Those are bounded by the body's idle
    /// timeout instead of the request timeout.
    pub fn moves_data(&self) -> bool {
        matches!(
            self,
            Op::PutObject
                | Op::UploadPart
                | Op::CopyObject
                | Op::UploadPartCopy
                | Op::CompleteMultipartUpload
        )
    }

    /// The operation's name (for logs and metrics).
    pub fn name(&self) -> &str {
        match self {
            Op::ListBuckets => "ListBuckets",
            Op::CreateBucket => "CreateBucket",
            Op::HeadBucket => "HeadBucket",
            Op::DeleteBucket => "DeleteBucket",
            Op::GetBucketLocation => "GetBucketLocation",
            Op::GetBucketVersioning => "GetBucketVersioning",
            Op::PutBucketVersioning => "PutBucketVersioning",
            Op::GetObjectLockConfiguration => "GetObjectLockConfiguration",
            Op::PutObjectLockConfiguration => "PutObjectLockConfiguration",
            Op::GetObjectRetention => "GetObjectRetention",
            Op::PutObjectRetention => "PutObjectRetention",
            Op::GetObjectLegalHold => "GetObjectLegalHold",
            Op::PutObjectLegalHold => "PutObjectLegalHold",
            Op::ListObjectVersions => "ListObjectVersions",
            Op::ListObjectsV2 => "ListObjectsV2",
            Op::ListObjects => "ListObjects",
            Op::SearchObjects => "SearchObjects",
            Op::SearchObjectVersions => "SearchObjectVersions",
            Op::DeleteObjects => "DeleteObjects",
            Op::PutObject => "PutObject",
            Op::CopyObject => "CopyObject",
            Op::GetObject => "GetObject",
            Op::HeadObject => "HeadObject",
            Op::DeleteObject => "DeleteObject",
            Op::CreateMultipartUpload => "CreateMultipartUpload",
            Op::UploadPart => "UploadPart",
            Op::UploadPartCopy => "UploadPartCopy",
            Op::CompleteMultipartUpload => "CompleteMultipartUpload",
            Op::AbortMultipartUpload => "AbortMultipartUpload",
            Op::ListParts => "ListParts",
            Op::ListMultipartUploads => "ListMultipartUploads",
            Op::GetBucketLogging => "GetBucketLogging",
            Op::PutBucketLogging => "PutBucketLogging",
            Op::GetBucketNotificationConfiguration => "GetBucketNotificationConfiguration",
            Op::PutBucketNotificationConfiguration => "PutBucketNotificationConfiguration",
            Op::ListenBucketNotification => "ListenBucketNotification",
            Op::GetBucketWebsite => "GetBucketWebsite",
            Op::PutBucketWebsite => "PutBucketWebsite",
            Op::DeleteBucketWebsite => "DeleteBucketWebsite",
            Op::GetObjectAttributes => "GetObjectAttributes",
            Op::GetObjectTorrent => "GetObjectTorrent",
            Op::GetObjectTagging => "GetObjectTagging",
            Op::PutObjectTagging => "PutObjectTagging",
            Op::DeleteObjectTagging => "DeleteObjectTagging",
            Op::GetBucketTagging => "GetBucketTagging",
            Op::PutBucketTagging => "PutBucketTagging",
            Op::DeleteBucketTagging => "DeleteBucketTagging",
            Op::GetBucketAcl => "GetBucketAcl",
            Op::PutBucketAcl => "PutBucketAcl",
            Op::GetObjectAcl => "GetObjectAcl",
            Op::PutObjectAcl => "PutObjectAcl",
            Op::GetBucketCors => "GetBucketCors",
            Op::PutBucketCors => "PutBucketCors",
            Op::DeleteBucketCors => "DeleteBucketCors",
            Op::Preflight => "PreflightRequest",
            Op::GetBucketPolicy => "GetBucketPolicy",
            Op::PutBucketPolicy => "PutBucketPolicy",
            Op::DeleteBucketPolicy => "DeleteBucketPolicy",
            Op::GetBucketPolicyStatus => "GetBucketPolicyStatus",
            Op::GetPublicAccessBlock => "GetPublicAccessBlock",
            Op::PutPublicAccessBlock => "PutPublicAccessBlock",
            Op::DeletePublicAccessBlock => "DeletePublicAccessBlock",
            Op::GetBucketOwnershipControls => "GetBucketOwnershipControls",
            Op::PutBucketOwnershipControls => "PutBucketOwnershipControls",
            Op::DeleteBucketOwnershipControls => "DeleteBucketOwnershipControls",
            Op::GetUnconfigured(_) => "GetBucketSubresource",
            Op::GetBucketEncryption => "GetBucketEncryption",
            Op::PutBucketEncryption => "PutBucketEncryption",
            Op::DeleteBucketEncryption => "DeleteBucketEncryption",
            Op::GetBucketLifecycleConfiguration => "GetBucketLifecycleConfiguration",
            Op::PutBucketLifecycleConfiguration => "PutBucketLifecycleConfiguration",
            Op::DeleteBucketLifecycleConfiguration => "DeleteBucketLifecycleConfiguration",
            Op::PostObject => "PostObject",
            Op::NotImplemented(_) => "NotImplemented",
        }
    }
}

/// Parses the operation.
pub fn parse(
    method: &Method,
    bucket: Option<&str>,
    key: Option<&str>,
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Op {
    let has = |w: &str| query.iter().any(|(k, _)| k == w);
    let sub: Vec<&str> = query
        .iter()
        .map(|(k, _)| k.as_str())
        .filter(|k| crate::subresource::is_subresource(k))
        .collect();
    let ni = |what: &str| Op::NotImplemented(format!("{method} {what}"));
    match (bucket, key) {
        (None, _) => match *method {
            Method::GET if sub.is_empty() => Op::ListBuckets,
            _ => ni("service"),
        },
        (Some(_), _) if *method == Method::OPTIONS => Op::Preflight,
        (Some(_), None) => match (method.clone(), sub.as_slice()) {
            (Method::PUT, []) => Op::CreateBucket,
            (Method::HEAD, []) => Op::HeadBucket,
            (Method::DELETE, []) => Op::DeleteBucket,
            (Method::GET, ["location"]) => Op::GetBucketLocation,
            (Method::GET, ["versioning"]) => Op::GetBucketVersioning,
            (Method::PUT, ["versioning"]) => Op::PutBucketVersioning,
            (Method::GET, ["object-lock"]) => Op::GetObjectLockConfiguration,
            (Method::PUT, ["object-lock"]) => Op::PutObjectLockConfiguration,
            // Zenko's metadata search, of versions or of current objects.
            (Method::GET, ["versions"]) if has("search") => Op::SearchObjectVersions,
            (Method::GET, ["versions"]) => Op::ListObjectVersions,
            (Method::GET, []) if has("search") => Op::SearchObjects,
            (Method::GET, []) if query.iter().any(|(k, v)| k == "list-type" && v == "2") => {
                Op::ListObjectsV2
            }
            // MinIO's extension (`mc watch`); AWS has no `events` parameter on a bucket GET.
            (Method::GET, []) if has("events") => Op::ListenBucketNotification,
            (Method::GET, []) if !has("list-type") => Op::ListObjects,
            (Method::POST, ["delete"]) => Op::DeleteObjects,
            (Method::POST, [])
                if headers
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|c| c.to_ascii_lowercase().starts_with("multipart/form-data")) =>
            {
                Op::PostObject
            }
            (Method::GET, ["uploads"]) => Op::ListMultipartUploads,
            (Method::GET, ["tagging"]) => Op::GetBucketTagging,
            (Method::PUT, ["tagging"]) => Op::PutBucketTagging,
            (Method::DELETE, ["tagging"]) => Op::DeleteBucketTagging,
            (Method::GET, ["acl"]) => Op::GetBucketAcl,
            (Method::PUT, ["acl"]) => Op::PutBucketAcl,
            (Method::GET, ["cors"]) => Op::GetBucketCors,
            (Method::PUT, ["cors"]) => Op::PutBucketCors,
            (Method::DELETE, ["cors"]) => Op::DeleteBucketCors,
            (Method::GET, ["policy"]) => Op::GetBucketPolicy,
            (Method::PUT, ["policy"]) => Op::PutBucketPolicy,
            (Method::DELETE, ["policy"]) => Op::DeleteBucketPolicy,
            (Method::GET, ["policyStatus"]) => Op::GetBucketPolicyStatus,
            (Method::GET, ["publicAccessBlock"]) => Op::GetPublicAccessBlock,
            (Method::PUT, ["publicAccessBlock"]) => Op::PutPublicAccessBlock,
            (Method::DELETE, ["publicAccessBlock"]) => Op::DeletePublicAccessBlock,
            (Method::GET, ["ownershipControls"]) => Op::GetBucketOwnershipControls,
            (Method::PUT, ["ownershipControls"]) => Op::PutBucketOwnershipControls,
            (Method::DELETE, ["ownershipControls"]) => Op::DeleteBucketOwnershipControls,
            (Method::GET, ["encryption"]) => Op::GetBucketEncryption,
            (Method::PUT, ["encryption"]) => Op::PutBucketEncryption,
            (Method::DELETE, ["encryption"]) => Op::DeleteBucketEncryption,
            (Method::GET, ["logging"]) => Op::GetBucketLogging,
            (Method::PUT, ["logging"]) => Op::PutBucketLogging,
            (Method::GET, ["notification"]) => Op::GetBucketNotificationConfiguration,
            (Method::PUT, ["notification"]) => Op::PutBucketNotificationConfiguration,
            (Method::GET, ["website"]) => Op::GetBucketWebsite,
            (Method::PUT, ["website"]) => Op::PutBucketWebsite,
            (Method::DELETE, ["website"]) => Op::DeleteBucketWebsite,
            (Method::GET, ["lifecycle"]) => Op::GetBucketLifecycleConfiguration,
            (Method::PUT, ["lifecycle"]) => Op::PutBucketLifecycleConfiguration,
            (Method::DELETE, ["lifecycle"]) => Op::DeleteBucketLifecycleConfiguration,
            (Method::GET, [sub]) if crate::s3::op::subresource_action(sub).is_some() => {
                let known = SUBRESOURCES
                    .iter()
                    .find(|(s, _)| s == sub)
                    .map(|(s, _)| *s)
                    .unwrap_or_default();
                Op::GetUnconfigured(known)
            }
            (_, s) => ni(&format!("bucket ?{}", s.join("&"))),
        },
        (Some(_), Some(_)) => {
            // `versionId` is a parameter of the operations that name a version (their
            // handlers look it up); on any other it is not implemented, as before versioning.
            let versioned = has("versionId");
            let sub: Vec<&str> = sub.into_iter().filter(|s| *s != "versionId").collect();
            let op = match (method.clone(), sub.as_slice()) {
                (Method::PUT, []) if headers.contains_key("x-amz-copy-source") => Op::CopyObject,
                (Method::PUT, []) => Op::PutObject,
                (Method::GET, [] | ["partNumber"]) => Op::GetObject,
                (Method::HEAD, [] | ["partNumber"]) => Op::HeadObject,
                (Method::DELETE, []) => Op::DeleteObject,
                (Method::POST, ["uploads"]) => Op::CreateMultipartUpload,
                (Method::PUT, ["partNumber", "uploadId"] | ["uploadId", "partNumber"]) => {
                    if headers.contains_key("x-amz-copy-source") {
                        Op::UploadPartCopy
                    } else {
                        Op::UploadPart
                    }
                }
                (Method::POST, ["uploadId"]) => Op::CompleteMultipartUpload,
                (Method::DELETE, ["uploadId"]) => Op::AbortMultipartUpload,
                (Method::GET, ["uploadId"]) => Op::ListParts,
                (Method::GET, ["tagging"]) => Op::GetObjectTagging,
                (Method::GET, ["acl"]) => Op::GetObjectAcl,
                (Method::PUT, ["acl"]) => Op::PutObjectAcl,
                (Method::GET, ["attributes"]) => Op::GetObjectAttributes,
                (Method::GET, ["torrent"]) => Op::GetObjectTorrent,
                (Method::PUT, ["tagging"]) => Op::PutObjectTagging,
                (Method::DELETE, ["tagging"]) => Op::DeleteObjectTagging,
                (Method::GET, ["retention"]) => Op::GetObjectRetention,
                (Method::PUT, ["retention"]) => Op::PutObjectRetention,
                (Method::GET, ["legal-hold"]) => Op::GetObjectLegalHold,
                (Method::PUT, ["legal-hold"]) => Op::PutObjectLegalHold,
                (_, s) => ni(&format!("object ?{}", s.join("&"))),
            };
            let takes_version = matches!(
                op,
                Op::GetObject
                    | Op::HeadObject
                    | Op::DeleteObject
                    | Op::GetObjectTagging
                    | Op::PutObjectTagging
                    | Op::DeleteObjectTagging
                    | Op::GetObjectAcl
                    | Op::PutObjectAcl
                    | Op::GetObjectAttributes
                    | Op::GetObjectRetention
                    | Op::PutObjectRetention
                    | Op::GetObjectLegalHold
                    | Op::PutObjectLegalHold
                    | Op::NotImplemented(_)
            );
            if versioned && !takes_version {
                return ni("object ?versionId");
            }
            op
        }
    }
}

/// The sub-resources answered here, with the policy action that reads each.
pub const SUBRESOURCES: &[(&str, &str)] = &[
    ("replication", "s3:GetReplicationConfiguration"),
    ("accelerate", "s3:GetAccelerateConfiguration"),
    ("requestPayment", "s3:GetBucketRequestPayment"),
    ("analytics", "s3:GetAnalyticsConfiguration"),
    ("metrics", "s3:GetMetricsConfiguration"),
    ("inventory", "s3:GetInventoryConfiguration"),
    (
        "intelligent-tiering",
        "s3:GetIntelligentTieringConfiguration",
    ),
];

/// The policy action of a sub-resource's GET.
pub fn subresource_action(sub: &str) -> Option<&'static str> {
    SUBRESOURCES
        .iter()
        .find(|(s, _)| *s == sub)
        .map(|(_, a)| *a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Vec<(String, String)> {
        crate::auth::sigv4::parse_query(Some(s))
    }

    fn op(m: Method, b: Option<&str>, k: Option<&str>, query: &str) -> Op {
        parse(&m, b, k, &q(query), &HeaderMap::new())
    }

    #[test]
    fn request_lines_from_the_api_reference() {
        assert_eq!(op(Method::GET, None, None, ""), Op::ListBuckets);
        assert_eq!(op(Method::PUT, Some("b"), None, ""), Op::CreateBucket);
        assert_eq!(
            op(
                Method::GET,
                Some("b"),
                None,
                "list-type=2&prefix=a&delimiter=%2F"
            ),
            Op::ListObjectsV2
        );
        assert_eq!(
            op(Method::GET, Some("b"), None, "marker=x"),
            Op::ListObjects
        );
        assert_eq!(
            op(Method::GET, Some("b"), None, "location"),
            Op::GetBucketLocation
        );
        assert_eq!(
            op(Method::GET, Some("b"), None, "versions&prefix=a"),
            Op::ListObjectVersions
        );
        assert_eq!(
            op(Method::GET, Some("b"), None, "versions&search=size%3E1"),
            Op::SearchObjectVersions
        );
        assert_eq!(
            op(Method::GET, Some("b"), None, "versioning"),
            Op::GetBucketVersioning
        );
        assert_eq!(
            op(Method::POST, Some("b"), None, "delete"),
            Op::DeleteObjects
        );
        assert_eq!(
            op(
                Method::GET,
                Some("b"),
                Some("k"),
                "response-content-type=text/plain"
            ),
            Op::GetObject
        );
        assert_eq!(
            op(Method::GET, Some("b"), Some("k"), "versionId=null"),
            Op::GetObject
        );
        assert_eq!(
            op(Method::DELETE, Some("b"), Some("k"), ""),
            Op::DeleteObject
        );
        let mut h = HeaderMap::new();
        h.insert("x-amz-copy-source", "/a/b".parse().unwrap());
        assert_eq!(
            parse(&Method::PUT, Some("b"), Some("k"), &[], &h),
            Op::CopyObject
        );
    }

    #[test]
    fn unknown_things_are_not_implemented() {
        for (m, b, k, query) in [
            (Method::PUT, Some("b"), None, "replication"),
            (Method::POST, Some("b"), None, "website"),
            (Method::PUT, Some("b"), Some("k"), "cors"),
            (Method::GET, Some("b"), None, "list-type=3"),
            (Method::POST, None, None, ""),
            (Method::PATCH, Some("b"), Some("k"), ""),
        ] {
            assert!(
                matches!(op(m, b, k, query), Op::NotImplemented(_)),
                "{query}"
            );
        }
    }
}
