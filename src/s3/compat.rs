//! The S3 compatibility table: every operation the router parses ([`Op`]), what grids3 does
//! with it, and the header families. `docs/operations.md` is generated from it
//! ([`markdown`]); a test keeps the file identical to it, and [`describe`] matches every
//! variant of [`Op`] without a wildcard, so a new operation does not compile until it has a row.

use crate::s3::op::Op;

/// How far grids3 follows AWS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    /// As AWS documents it.
    Yes,
    /// Implemented, with the differences named.
    Partly,
    /// Refused with the error named.
    Refused,
}

impl Support {
    fn label(self) -> &'static str {
        match self {
            Support::Yes => "supported",
            Support::Partly => "partly",
            Support::Refused => "refused",
        }
    }
}

/// What grids3 does with `op`.
pub fn describe(op: &Op) -> (Support, &'static str) {
    use Support::*;
    match op {
        Op::ListBuckets => (Yes, "`prefix`, `max-buckets`, `continuation-token`, `bucket-region`; a non-root key sees its own and granted buckets"),
        Op::CreateBucket => (Partly, "naming rules, LocationConstraint, `x-amz-object-ownership`, canned ACLs; a bucket one already owns answers 200 in us-east-1 (409 `BucketAlreadyOwnedByYou` there too when the request asks for an ACL) and 409 elsewhere, as AWS; `x-grids3-storage-mode` picks the storage mode"),
        Op::HeadBucket => (Yes, ""),
        Op::DeleteBucket => (Yes, "`409 BucketNotEmpty`; the owner's, or another key's that the bucket policy allows (as another AWS account); never an unsigned request"),
        Op::GetBucketLocation => (Yes, ""),
        Op::GetBucketVersioning => (Yes, "with MinIO's `ExcludedPrefixes` / `ExcludeFolders` when set (extension)"),
        Op::PutBucketVersioning => (Partly, "Enabled and Suspended; MFA Delete refused with `501 NotImplemented`; extension: MinIO's `ExcludedPrefixes` (up to 10 `prefix*` patterns) and `ExcludeFolders` with `Enabled`: those keys are written as in a suspended bucket (`400 InvalidArgument` with `Suspended` or over 10)"),
        Op::GetObjectLockConfiguration => (Yes, ""),
        Op::PutObjectLockConfiguration => (Yes, "default retention, GOVERNANCE and COMPLIANCE"),
        Op::GetObjectRetention => (Yes, ""),
        Op::PutObjectRetention => (Yes, "`x-amz-bypass-governance-retention`"),
        Op::GetObjectLegalHold => (Yes, ""),
        Op::PutObjectLegalHold => (Yes, ""),
        Op::ListObjectVersions => (Yes, "from the mongoclient-style version index"),
        Op::ListObjectsV2 => (Yes, "prefix, delimiter (one index seek per common prefix), max-keys, continuation-token, start-after, fetch-owner, encoding-type=url; extension: MinIO's `metadata=true` adds `UserMetadata` and `UserTags` per key, each as GetObject / GetObjectTagging of that key would allow"),
        Op::ListObjects => (Yes, "marker, prefix, delimiter, max-keys, encoding-type=url"),
        Op::SearchObjects => (Yes, "extension: Zenko's metadata search (`search=`): key, size, last-modified, content-type, etag, storage-class, x-amz-meta-*, tags.*; marker, prefix, max-keys, list-type=2 with continuation-token; docs/search.md"),
        Op::SearchObjectVersions => (Yes, "extension: Zenko's metadata search of versions (`versions&search=`), as ListObjectVersions answers: the versions that are objects (delete markers are never found); key-marker, version-id-marker, prefix, max-keys; docs/search.md"),
        Op::DeleteObjects => (Yes, "Quiet, per-key errors, per-key ETag / LastModifiedTime / Size conditions"),
        Op::PutObject => (Partly, "conditional writes, checksums, SSE, tagging, ACLs, Object Lock; a body without Content-Length is accepted (AWS answers 411); no `x-amz-version-id` in a suspended bucket; extension: MinIO's `X-Amz-Meta-Snowball-Auto-Extract: true` stores each member of a tar (or tar.gz) as an object, verified first and each authorized as its own PutObject (`X-Amz-Meta-Minio-Snowball-Prefix`, `-Ignore-Dirs`; `-Ignore-Errors` `501`)"),
        Op::CopyObject => (Yes, "COPY / REPLACE directives, `x-amz-copy-source-if-*`, between any encryption modes"),
        Op::GetObject => (Partly, "single ranges (with `If-Range`), `response-*` overrides, conditionals, `partNumber`; an invalid or multi-range Range header serves the whole object (RFC 9110 allows it)"),
        Op::HeadObject => (Yes, "as GetObject, without the body"),
        Op::DeleteObject => (Yes, "`If-Match` (a missing key: `404 NoSuchKey`, as AWS), `x-amz-if-match-last-modified-time`, `x-amz-if-match-size`; extension: MinIO's `x-minio-force-delete: true` removes every object and version under the key as a prefix, authorized per key as DeleteObjects (refused with Object Lock)"),
        Op::CreateMultipartUpload => (Yes, "checksum algorithm and type, SSE, tagging, ACLs"),
        Op::UploadPart => (Yes, "the part is stored where the object will read it: completion copies nothing"),
        Op::UploadPartCopy => (Yes, "`x-amz-copy-source-range`"),
        Op::CompleteMultipartUpload => (Partly, "conditional writes, composite and full-object checksums (a whole-object `x-amz-checksum-*` header is checked against the parts': `400 BadDigest` when it differs); at most `--max-completions` run at once, more wait and answer `503 SlowDown` after `--completion-wait` (30 s)"),
        Op::AbortMultipartUpload => (Yes, ""),
        Op::ListParts => (Yes, "`Owner` is the object's owner to be (the bucket owner under BucketOwnerEnforced), `Initiator` the key that started it"),
        Op::ListMultipartUploads => (Yes, "`Owner` and `Initiator` as ListParts; encoding-type=url"),
        Op::GetObjectAttributes => (Yes, ""),
        Op::GetBucketLogging => (Yes, ""),
        Op::GetBucketNotificationConfiguration => (Yes, ""),
        Op::GetBucketWebsite => (Yes, ""),
        Op::PutBucketWebsite => (Yes, "served by the website endpoint (`--website-listen`): index and error documents, routing rules, RedirectAllRequestsTo, `x-amz-website-redirect-location`; see docs/websites.md"),
        Op::DeleteBucketWebsite => (Yes, ""),
        Op::ListenBucketNotification => (Partly, "MinIO's extension (`mc watch`): live records of the bucket's changes (and MinIO's `s3:ObjectAccessed:Get`/`Head`), one JSON line each, blank keep-alive lines; owner only; needs change streams (501 otherwise); at most `GRIDS3_NOTIFY_MAX_LISTENERS` per instance (503 SlowDown beyond); see docs/notifications.md"),
        Op::PutBucketNotificationConfiguration => (Partly, "destinations are grids3 targets (`arn:grids3:sqs::<id>:<type>`, webhook or NATS; MinIO's `arn:minio:sqs::` form too), delivered at least once in order per key from a durable outbox; `EventBridgeConfiguration` `501 NotImplemented`; see docs/notifications.md"),
        Op::PutBucketLogging => (Partly, "server access logs in AWS's format, `SimplePrefix` and `PartitionedPrefix` keys; delivery needs the target bucket's policy to allow `logging.s3.amazonaws.com` (`InvalidTargetBucketForLogging` otherwise); `TargetGrants` `501 NotImplemented`; see docs/access-logs.md"),
        Op::GetObjectTorrent => (Refused, "`501 NotImplemented` for an object, `404 NoSuchKey` for a missing key, as AWS answers it"),
        Op::GetObjectTagging => (Yes, ""),
        Op::PutObjectTagging => (Yes, ""),
        Op::DeleteObjectTagging => (Yes, ""),
        Op::GetBucketTagging => (Yes, ""),
        Op::PutBucketTagging => (Yes, "the owner's, or another key's that the bucket policy allows"),
        Op::DeleteBucketTagging => (Yes, "the owner's, or another key's that the bucket policy allows"),
        Op::GetBucketAcl => (Partly, "groups first, then users in grant order; also lists the admin API's grants, so the document says who has access"),
        Op::PutBucketAcl => (Partly, "grant headers and documents kept exactly (the owner's own grants as given; the owner keeps access, as an AWS account does); e-mail grants name the key given that address (`create-key --email`); `aws-exec-read`, `log-delivery-write` and LogDelivery `501 NotImplemented`"),
        Op::GetObjectAcl => (Yes, ""),
        Op::PutObjectAcl => (Partly, "as PutBucketAcl; the bucket's owner owns every object"),
        Op::GetBucketCors => (Yes, ""),
        Op::PutBucketCors => (Yes, ""),
        Op::DeleteBucketCors => (Yes, ""),
        Op::Preflight => (Yes, "the bucket's rules, else `--cors-default-origins`"),
        Op::GetBucketPolicy => (Yes, "owner only: others `405 MethodNotAllowed`, anonymous callers `403 AccessDenied`"),
        Op::PutBucketPolicy => (Yes, "owner only: others `405 MethodNotAllowed`, anonymous callers `403 AccessDenied`"),
        Op::DeleteBucketPolicy => (Yes, "owner only: others `405 MethodNotAllowed`, anonymous callers `403 AccessDenied`"),
        Op::GetBucketPolicyStatus => (Yes, "`IsPublic` from the policy or a public ACL in force (AllUsers, AuthenticatedUsers); `NoSuchBucketPolicy` when there is neither"),
        Op::GetPublicAccessBlock => (Yes, ""),
        Op::PutPublicAccessBlock => (Yes, "`--block-public-access` sets a server-wide default"),
        Op::DeletePublicAccessBlock => (Yes, ""),
        Op::GetBucketOwnershipControls => (Yes, ""),
        Op::PutBucketOwnershipControls => (Yes, ""),
        Op::DeleteBucketOwnershipControls => (Yes, ""),
        Op::GetUnconfigured(_) => (Partly, "website, replication, accelerate, requestPayment, analytics, metrics, inventory, intelligent-tiering: GETs answer as AWS answers a bucket where nothing is configured; their PUTs and DELETEs are refused"),
        Op::GetBucketEncryption => (Yes, ""),
        Op::PutBucketEncryption => (Partly, "SSE-S3 and SSE-KMS defaults need a master key (`501 NotImplemented` without one)"),
        Op::DeleteBucketEncryption => (Yes, ""),
        Op::GetBucketLifecycleConfiguration => (Yes, ""),
        Op::PutBucketLifecycleConfiguration => (Partly, "expiration, noncurrent-version expiration, abort of incomplete uploads, delete markers; transitions to other storage classes refused with `400 InvalidArgument`, `NewerNoncurrentVersions` with `501 NotImplemented`"),
        Op::DeleteBucketLifecycleConfiguration => (Yes, ""),
        Op::PostObject => (Yes, "SigV4 and SigV2 policies, `success_action_*`, `${filename}` (conditions see the substituted key), content-length-range, `tagging`, `x-amz-checksum-*` (verified and stored), `x-amz-storage-class`; Object Lock and website-redirect fields `501 NotImplemented`"),
        Op::NotImplemented(_) => (Refused, "every other operation and sub-resource: `501 NotImplemented` naming it, never accepted and ignored"),
    }
}

/// One of each operation, in the order of the page.
pub fn listed() -> Vec<Op> {
    use Op::*;
    vec![
        ListBuckets,
        CreateBucket,
        HeadBucket,
        DeleteBucket,
        GetBucketLocation,
        GetBucketVersioning,
        PutBucketVersioning,
        GetObjectLockConfiguration,
        PutObjectLockConfiguration,
        GetObjectRetention,
        PutObjectRetention,
        GetObjectLegalHold,
        PutObjectLegalHold,
        ListObjectVersions,
        ListObjectsV2,
        ListObjects,
        SearchObjects,
        SearchObjectVersions,
        DeleteObjects,
        PutObject,
        CopyObject,
        GetObject,
        HeadObject,
        DeleteObject,
        CreateMultipartUpload,
        UploadPart,
        UploadPartCopy,
        CompleteMultipartUpload,
        AbortMultipartUpload,
        ListParts,
        ListMultipartUploads,
        GetObjectAttributes,
        GetObjectTorrent,
        GetBucketLogging,
        PutBucketLogging,
        GetBucketNotificationConfiguration,
        PutBucketNotificationConfiguration,
        ListenBucketNotification,
        GetBucketWebsite,
        PutBucketWebsite,
        DeleteBucketWebsite,
        GetObjectTagging,
        PutObjectTagging,
        DeleteObjectTagging,
        GetBucketTagging,
        PutBucketTagging,
        DeleteBucketTagging,
        GetBucketAcl,
        PutBucketAcl,
        GetObjectAcl,
        PutObjectAcl,
        GetBucketCors,
        PutBucketCors,
        DeleteBucketCors,
        Preflight,
        GetBucketPolicy,
        PutBucketPolicy,
        DeleteBucketPolicy,
        GetBucketPolicyStatus,
        GetPublicAccessBlock,
        PutPublicAccessBlock,
        DeletePublicAccessBlock,
        GetBucketOwnershipControls,
        PutBucketOwnershipControls,
        DeleteBucketOwnershipControls,
        GetUnconfigured(""),
        GetBucketEncryption,
        PutBucketEncryption,
        DeleteBucketEncryption,
        GetBucketLifecycleConfiguration,
        PutBucketLifecycleConfiguration,
        DeleteBucketLifecycleConfiguration,
        PostObject,
        NotImplemented(String::new()),
    ]
}

/// Header families: (family, support, what grids3 does).
pub const HEADERS: &[(&str, Support, &str)] = &[
    ("Authorization: SigV4 (header, presigned URLs up to 7 days, aws-chunked with chunk and trailer signatures)", Support::Yes, "`host` must be signed"),
    ("Authorization: SigV2 (header, query)", Support::Partly, "unless `--disable-sigv2`; a request naming a sub-resource SigV2 does not sign is refused (`403 AccessDenied`); `Expires` at most 7 days"),
    ("x-amz-content-sha256", Support::Partly, "verified while streaming; may be omitted on a request without a body (AWS requires it)"),
    ("x-amz-checksum-* (CRC32, CRC32C, CRC64NVME, SHA-1, SHA-256), x-amz-checksum-mode", Support::Yes, "verified, stored and returned"),
    ("Content-MD5", Support::Yes, "`400 BadDigest` on a mismatch"),
    ("If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since", Support::Yes, "RFC 9110's precedence on reads; `If-None-Match: *` and `If-Match` on writes"),
    ("x-amz-copy-source, x-amz-copy-source-if-*, x-amz-copy-source-range, x-amz-metadata-directive", Support::Yes, ""),
    ("x-amz-meta-*", Support::Yes, "stored in the files document's `metadata`"),
    ("x-amz-server-side-encryption*, -customer-*, -aws-kms-key-id, -context", Support::Partly, "SSE-C needs TLS (`400 InvalidRequest` over HTTP unless `--allow-insecure-sse-c`); KMS keys by id, ARN, `alias/` or an operator-chosen name (`create-kms-key --id`); DSSE-KMS `501 NotImplemented`; bucket keys accepted and echoed (every object has its own data key)"),
    ("x-amz-acl, x-amz-grant-*", Support::Partly, "as PutObjectAcl; where ACLs are disabled (BucketOwnerEnforced) only `bucket-owner-full-control` or the bucket owner's FULL_CONTROL alone, anything else (`private` included) `400 AccessControlListNotSupported`, as AWS"),
    ("x-amz-tagging, x-amz-tagging-directive", Support::Yes, ""),
    ("x-amz-object-lock-mode, -retain-until-date, -legal-hold, x-amz-bypass-governance-retention", Support::Yes, ""),
    ("x-amz-expected-bucket-owner", Support::Yes, ""),
    ("x-amz-storage-class", Support::Partly, "STANDARD, REDUCED_REDUNDANCY, STANDARD_IA, ONEZONE_IA, INTELLIGENT_TIERING and GLACIER_IR are kept and reported (HEAD, GET, listings, ListParts, ListMultipartUploads), though every class is stored alike; the archive classes, EXPRESS_ONEZONE and unknown names `400 InvalidStorageClass`"),
    ("x-amz-request-payer, x-amz-mfa", Support::Partly, "accepted, as AWS accepts them on a bucket without Requester Pays or MFA Delete (grids3 has neither: PutBucketVersioning with MFA Delete is refused)"),
    ("x-amz-website-redirect-location, x-amz-write-offset-bytes", Support::Refused, "`501 NotImplemented`, nothing written (no website endpoint yet; no append)"),
    ("Range, partNumber", Support::Partly, "single ranges; an invalid or multi-range header serves the whole object"),
    ("x-grids3-storage-mode (grids3's own)", Support::Yes, "`gridfs` or `content` on CreateBucket"),
];

fn table(rows: impl Iterator<Item = (String, Support, &'static str)>) -> String {
    let mut out = String::from("| | support | what grids3 does |\n| --- | --- | --- |\n");
    for (name, s, note) in rows {
        out.push_str(&format!("| {name} | {} | {note} |\n", s.label()));
    }
    out
}

/// `docs/operations.md`.
pub fn markdown() -> String {
    let ops = table(listed().into_iter().map(|op| {
        let (s, note) = describe(&op);
        let name = match op {
            Op::GetUnconfigured(_) => "Get of unconfigured sub-resources".to_owned(),
            Op::NotImplemented(_) => "anything else".to_owned(),
            Op::Preflight => "CORS preflight (OPTIONS)".to_owned(),
            other => other.name().to_owned(),
        };
        (name, s, note)
    }));
    let headers = table(
        HEADERS
            .iter()
            .map(|(n, s, note)| (n.to_string(), *s, *note)),
    );
    format!(
        "# S3 operations and headers\n\n\
         For application developers: every operation grids3's router knows, and the header\n\
         families, with what grids3 does. Generated from `src/s3/compat.rs` (a test keeps this\n\
         file identical to it); the details are in [S3 compatibility](compatibility.md).\n\n\
         ## Operations\n\n{ops}\n## Headers\n\n{headers}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_is_listed_once() {
        let names: Vec<String> = listed().iter().map(|o| o.name().to_owned()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "listed twice: {names:?}");
        // `describe` matches every variant (the compiler checks); `name` has one arm per
        // variant: as many as are listed.
        let src = include_str!("op.rs");
        let body = &src[src.find("pub fn name(&self)").unwrap()..];
        let body = &body[..body.find("\n    }\n").unwrap()];
        let arms = body.lines().filter(|l| l.contains(" => \"")).count();
        assert_eq!(arms, names.len(), "an operation is missing from `listed`");
    }

    #[test]
    fn the_operations_page_is_generated_from_this_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operations.md");
        if std::env::var_os("GRIDS3_WRITE_DOCS").is_some() {
            std::fs::write(path, markdown()).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == markdown(),
            "docs/operations.md differs from src/s3/compat.rs: run `GRIDS3_WRITE_DOCS=1 cargo test --lib compat`"
        );
    }
}
