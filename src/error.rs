//! The one error type of the S3 surface: an AWS error code, its HTTP status and a message,
//! rendered as the S3 `<Error>` XML document.

use axum::http::StatusCode;

use crate::storage::gridfs::GridFsError;

/// An S3 error as a client sees it.
#[derive(Debug, Clone)]
pub struct S3Error {
    /// The AWS error code (`NoSuchKey`, `SignatureDoesNotMatch`, ...).
    pub code: &'static str,
    /// The HTTP status AWS uses for that code.
    pub status: StatusCode,
    /// A human-readable message.
    pub message: String,
    /// Response headers the error carries (`x-amz-delete-marker`, `x-amz-version-id`).
    pub headers: Vec<(&'static str, String)>,
    /// Further elements of the `<Error>` document, after `RequestId` (AWS's
    /// `HeadersNotSigned`, for one).
    pub extra: Vec<(&'static str, String)>,
}

/// Result type of handlers.
pub type S3Result<T> = Result<T, S3Error>;

macro_rules! errors {
    ($($(#[$doc:meta])* $fn:ident => $code:literal, $status:ident, $msg:literal;)*) => {
        impl S3Error {
            $(
                $(#[$doc])*
                pub fn $fn() -> Self {
                    Self { code: $code, status: StatusCode::$status, message: $msg.to_owned(), headers: Vec::new(), extra: Vec::new() }
                }
            )*
        }
    };
}

errors! {
    /// A POST Object body that is not well-formed multipart/form-data.
    malformed_post_request => "MalformedPOSTRequest", BAD_REQUEST, "The body of your POST request is not well-formed multipart/form-data.";
    /// POST Object fields before the file are too large.
    max_post_pre_data_length_exceeded => "MaxPostPreDataLengthExceeded", BAD_REQUEST, "Your POST request fields preceeding the upload file was too large.";
    /// GetBucketCors on a bucket without a CORS configuration.
    no_such_cors_configuration => "NoSuchCORSConfiguration", NOT_FOUND, "The CORS configuration does not exist";
    /// An `x-amz-website-redirect-location` that is neither a path nor an http(s) URL.
    invalid_redirect_location => "InvalidRedirectLocation", BAD_REQUEST, "The website redirect location must have a prefix of 'http://' or 'https://' or '/'.";
    /// GetBucketWebsite (and the website endpoint) on a bucket without a website configuration.
    no_such_website_configuration => "NoSuchWebsiteConfiguration", NOT_FOUND, "The specified bucket does not have a website configuration";
    /// A preflight (or a CORS request) that no CORS rule of the bucket allows.
    cors_forbidden => "AccessForbidden", FORBIDDEN, "CORSResponse: This CORS request is not allowed. This is usually because the evalution of Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers are not whitelisted by the resource's CORS spec.";
    /// A preflight without an Origin header.
    cors_origin_missing => "BadRequest", BAD_REQUEST, "Insufficient information. Origin request header needed.";
    /// Access denied (unsigned request, expired presigned URL, ...).
    access_denied => "AccessDenied", FORBIDDEN, "Access Denied";
    /// The bucket exists and another key owns it.
    bucket_already_exists => "BucketAlreadyExists", CONFLICT, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.";
    /// The bucket exists and this account owns it.
    bucket_already_owned_by_you => "BucketAlreadyOwnedByYou", CONFLICT, "Your previous request to create the named bucket succeeded and you already own it.";
    /// DeleteBucket on a bucket with objects.
    bucket_not_empty => "BucketNotEmpty", CONFLICT, "The bucket you tried to delete is not empty";
    /// Content-MD5 or a checksum did not match the body.
    bad_digest => "BadDigest", BAD_REQUEST, "The Content-MD5 or checksum value that you specified did not match what the server received.";
    /// A storage class grids3 refuses (an archive class, `EXPRESS_ONEZONE`, or unknown).
    invalid_storage_class => "InvalidStorageClass", BAD_REQUEST, "The storage class you specified is not valid";
    /// The body ended before Content-Length bytes.
    incomplete_body => "IncompleteBody", BAD_REQUEST, "You did not provide the number of bytes specified by the Content-Length HTTP header.";
    /// Unexpected server-side failure (details are logged, never sent).
    internal => "InternalError", INTERNAL_SERVER_ERROR, "We encountered an internal error. Please try again.";
    /// A bucket name outside S3's naming rules.
    invalid_bucket_name => "InvalidBucketName", BAD_REQUEST, "The specified bucket is not valid.";
    /// Content-MD5 is not valid base64 of 16 bytes.
    invalid_digest => "InvalidDigest", BAD_REQUEST, "The Content-MD5 you specified is not valid.";
    /// Unknown access key id.
    invalid_access_key_id => "InvalidAccessKeyId", FORBIDDEN, "The AWS Access Key Id you provided does not exist in our records.";
    /// Unsatisfiable Range.
    invalid_range => "InvalidRange", RANGE_NOT_SATISFIABLE, "The requested range is not satisfiable";
    /// XML that does not parse or does not fit the schema.
    malformed_xml => "MalformedXML", BAD_REQUEST, "The XML you provided was not well-formed or did not validate against our published schema.";
    /// A session token (`x-amz-security-token`) that is not the one of the key's session, or
    /// one sent with a key that is not a session's.
    invalid_token => "InvalidToken", BAD_REQUEST, "The provided token is malformed or otherwise invalid.";
    /// Temporary credentials past their expiration.
    expired_token => "ExpiredToken", BAD_REQUEST, "The provided token has expired.";
    /// User metadata over 2 KB.
    metadata_too_large => "MetadataTooLarge", BAD_REQUEST, "Your metadata headers exceed the maximum allowed metadata size.";
    /// A required header is missing.
    missing_content_length => "MissingContentLength", LENGTH_REQUIRED, "You must provide the Content-Length HTTP header.";
    /// No such bucket.
    no_such_bucket => "NoSuchBucket", NOT_FOUND, "The specified bucket does not exist";
    /// No such key.
    no_such_key => "NoSuchKey", NOT_FOUND, "The specified key does not exist.";
    /// An operation grids3 does not implement.
    not_implemented => "NotImplemented", NOT_IMPLEMENTED, "A header or query you provided implies functionality that is not implemented.";
    /// A precondition header failed.
    precondition_failed => "PreconditionFailed", PRECONDITION_FAILED, "At least one of the pre-conditions you specified did not hold";
    /// Clock skew above 15 minutes.
    request_time_too_skewed => "RequestTimeTooSkewed", FORBIDDEN, "The difference between the request time and the server's time is too large.";
    /// A key kept changing under a read (every revision found was replaced before it could
    /// be read): retryable, as AWS's own throttling answer is.
    slow_down => "SlowDown", SERVICE_UNAVAILABLE, "Please reduce your request rate.";
    /// The database cannot be reached.
    service_unavailable => "ServiceUnavailable", SERVICE_UNAVAILABLE, "The service is unavailable. Please retry.";
    /// The signature does not match.
    signature_does_not_match => "SignatureDoesNotMatch", FORBIDDEN, "The request signature we calculated does not match the signature you provided. Check your key and signing method.";
    /// The body's SHA-256 differs from x-amz-content-sha256.
    content_sha256_mismatch => "XAmzContentSHA256Mismatch", BAD_REQUEST, "The provided 'x-amz-content-sha256' header does not match what was computed.";
    /// Single PUT above 5 GiB.
    entity_too_large => "EntityTooLarge", BAD_REQUEST, "Your proposed upload exceeds the maximum allowed object size.";
    /// Unknown (or finished) multipart upload id.
    no_such_upload => "NoSuchUpload", NOT_FOUND, "The specified multipart upload does not exist. The upload ID might be invalid, or the multipart upload might have been aborted or completed.";
    /// A part named in Complete is unknown or its ETag differs.
    invalid_part => "InvalidPart", BAD_REQUEST, "One or more of the specified parts could not be found. The part might not have been uploaded, or the specified entity tag might not have matched the part's entity tag.";
    /// PutObjectLockConfiguration with a default retention of zero or fewer days or years.
    invalid_retention_period => "InvalidRetentionPeriod", BAD_REQUEST, "The retention period must be a positive integer";
    /// Parts not in ascending order.
    invalid_part_order => "InvalidPartOrder", BAD_REQUEST, "The list of parts was not in ascending order. The parts list must be specified in order by part number.";
    /// A non-last part under 5 MiB.
    entity_too_small => "EntityTooSmall", BAD_REQUEST, "Your proposed upload is smaller than the minimum allowed object size.";
    /// A bucket without a tag set.
    no_such_tag_set => "NoSuchTagSet", NOT_FOUND, "The TagSet does not exist";
    /// A conflicting operation on the same key or upload is in progress (retry).
    operation_aborted => "OperationAborted", CONFLICT, "A conflicting conditional operation is currently in progress against this resource. Please try again.";
    /// A conditional write raced another write of its key (retry), as AWS answers it.
    conditional_request_conflict => "ConditionalRequestConflict", CONFLICT, "A conflicting operation occurred. If using PutObject you can retry the request. If using multipart upload you should initiate another CreateMultipartUpload request and re-upload each part.";
    /// A write that would pass its bucket's quota (issue 62): MinIO's code, which its SDKs know.
    admin_bucket_quota_exceeded => "XMinioAdminBucketQuotaExceeded", BAD_REQUEST, "Bucket quota exceeded";
    /// The client stopped sending the body.
    request_timeout => "RequestTimeout", BAD_REQUEST, "Your socket connection to the server was not read from or written to within the timeout period. Idle connections will be closed.";
    /// A request URI that does not decode (invalid UTF-8 after percent-decoding).
    invalid_uri => "InvalidURI", BAD_REQUEST, "Couldn't parse the specified URI.";
    /// A key longer than 1024 bytes.
    key_too_long => "KeyTooLongError", BAD_REQUEST, "Your key is too long";
    /// An AccessControlPolicy document that names an unknown permission or grantee type.
    malformed_acl_error => "MalformedACLError", BAD_REQUEST, "The XML you provided was not well-formed or did not validate against our published schema";
    /// A grant to an e-mail address: grids3 keys have no e-mail addresses.
    unresolvable_grant_by_email => "UnresolvableGrantByEmailAddress", BAD_REQUEST, "The e-mail address you provided does not match any account on record.";
    /// A body on a request that takes none (Put*Acl with both headers and a document).
    unexpected_content => "UnexpectedContent", BAD_REQUEST, "This request does not support content";
    /// Put*Acl with neither an ACL header nor a document.
    missing_security_header => "MissingSecurityHeader", BAD_REQUEST, "Your request was missing a required header";
    /// A bucket policy that does not parse or validate.
    malformed_policy => "MalformedPolicy", BAD_REQUEST, "Policies must be valid JSON and the first byte must be '{'";
    /// GetBucketPolicy on a bucket without one.
    no_such_bucket_policy => "NoSuchBucketPolicy", NOT_FOUND, "The bucket policy does not exist";
    /// GetPublicAccessBlock on a bucket without one.
    no_such_public_access_block_configuration => "NoSuchPublicAccessBlockConfiguration", NOT_FOUND, "The public access block configuration was not found";
    /// An ACL on a bucket whose ownership is BucketOwnerEnforced.
    access_control_list_not_supported => "AccessControlListNotSupported", BAD_REQUEST, "The bucket does not allow ACLs";
    /// CreateBucket or PutBucketOwnershipControls combining BucketOwnerEnforced with ACL grants.
    invalid_bucket_acl_with_object_ownership => "InvalidBucketAclWithObjectOwnership", BAD_REQUEST, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting";
    /// GetBucketOwnershipControls on a bucket without them.
    ownership_controls_not_found => "OwnershipControlsNotFoundError", NOT_FOUND, "The bucket ownership controls were not found";
    /// Method not allowed on this resource.
    method_not_allowed => "MethodNotAllowed", METHOD_NOT_ALLOWED, "The specified method is not allowed against this resource.";
    /// A version id that names no version of the key.
    no_such_version => "NoSuchVersion", NOT_FOUND, "The specified version does not exist.";
}

impl S3Error {
    /// The error with a response header.
    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }

    /// [`Self::admin_bucket_quota_exceeded`] saying by how much (MinIO's text, then the limit
    /// and the usage).
    pub fn quota_exceeded(detail: &str) -> Self {
        Self::admin_bucket_quota_exceeded().with_message(format!("Bucket quota exceeded: {detail}"))
    }

    /// An error with a custom message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = message.into();
        self
    }

    /// The error with one more element in its XML body (`ArgumentName1`, ...).
    pub fn with_extra(mut self, name: &'static str, value: String) -> Self {
        self.extra.push((name, value));
        self
    }

    /// `InvalidArgument` (400) with a message.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self {
            code: "InvalidArgument",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// `InvalidTag` (400) with a message.
    pub fn invalid_tag(message: impl Into<String>) -> Self {
        Self {
            code: "InvalidTag",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// `InvalidRequest` (400) with a message.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self {
            code: "InvalidRequest",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// `AuthorizationHeaderMalformed` (400) with a message.
    pub fn authorization_header_malformed(message: impl Into<String>) -> Self {
        Self {
            code: "AuthorizationHeaderMalformed",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// `AuthorizationQueryParametersError` (400) with a message.
    pub fn authorization_query_parameters_error(message: impl Into<String>) -> Self {
        Self {
            code: "AuthorizationQueryParametersError",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// `IllegalLocationConstraintException` (400).
    pub fn illegal_location_constraint(message: impl Into<String>) -> Self {
        Self {
            code: "IllegalLocationConstraintException",
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            headers: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// Maps a database error on purpose: unreachable, failing over or otherwise transient is
    /// 503 with Retry-After (the client retries), everything else 500 (logged).
    pub fn from_mongo(e: &mongodb::error::Error) -> Self {
        use mongodb::error::{ErrorKind, WriteFailure};
        // Codes of a primary stepping down, a node shutting down or an interrupted operation:
        // the same request succeeds once the replica set has a primary again. Also a write
        // conflict (112), a majority snapshot not yet available (134, which majority reads
        // can meet right after a start or failover) and a write concern that timed out (64):
        // each passes when tried again.
        const TRANSIENT: &[i32] = &[
            6, 7, 50, 64, 89, 91, 112, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436,
        ];
        let code = match &*e.kind {
            ErrorKind::Command(c) => Some(c.code),
            ErrorKind::Write(WriteFailure::WriteConcernError(w)) => Some(w.code),
            ErrorKind::Write(WriteFailure::WriteError(w)) => Some(w.code),
            _ => None,
        };
        let transient = code.is_some_and(|c| TRANSIENT.contains(&c))
            || e.contains_label("RetryableWriteError")
            || e.contains_label("TransientTransactionError");
        match *e.kind {
            _ if transient => {
                tracing::warn!(error = %e, "database failing over");
                Self::service_unavailable()
            }
            ErrorKind::ServerSelection { .. }
            | ErrorKind::Io(_)
            | ErrorKind::ConnectionPoolCleared { .. } => {
                tracing::warn!(error = %e, "database unreachable");
                Self::service_unavailable()
            }
            _ => {
                tracing::error!(error = %e, "database error");
                Self::internal()
            }
        }
    }
}

impl From<mongodb::error::Error> for S3Error {
    fn from(e: mongodb::error::Error) -> Self {
        Self::from_mongo(&e)
    }
}

impl From<GridFsError> for S3Error {
    fn from(e: GridFsError) -> Self {
        match e {
            GridFsError::FileNotFound | GridFsError::RevisionNotFound(_) => Self::no_such_key(),
            GridFsError::InvalidRange { .. } => Self::invalid_range(),
            GridFsError::Mongo(m) => Self::from_mongo(&m),
            GridFsError::Timeout(what) => {
                tracing::warn!(what, "the database did not answer in time");
                Self::service_unavailable()
            }
            GridFsError::Conflict(why) => {
                tracing::warn!(why, "operation aborted by a conflict");
                Self::operation_aborted()
            }
            GridFsError::QuotaExceeded(why) => Self::quota_exceeded(&why),
            GridFsError::Busy(why) => {
                tracing::warn!(why, "a lock stayed held for the whole wait");
                Self::slow_down()
            }
            other => {
                tracing::error!(error = %other, "storage error");
                Self::internal()
            }
        }
    }
}

impl std::fmt::Display for S3Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for S3Error {}
