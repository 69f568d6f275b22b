//! The one error type of the IAM surface: an AWS error code, its HTTP status, a message and
//! whether the sender or the server is at fault, rendered as IAM's `<ErrorResponse>` document.
//!
//! The IAM Query API answers errors in the shape of every AWS Query service, not S3's:
//!
//! ```xml
//! <ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">
//!   <Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>...</Message></Error>
//!   <RequestId>...</RequestId>
//! </ErrorResponse>
//! ```
//!
//! botocore's `QueryParser` reads `Error/Code` and `Error/Message` from it (and the request id
//! from `RequestId`), so boto3's `client.exceptions.NoSuchEntityException` and friends match.

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::S3Error;

/// The IAM XML namespace, on every answer (success and error).
pub const IAM_NS: &str = "https://iam.amazonaws.com/doc/2010-05-08/";

/// The namespace of AWS's front end, on an `InvalidAction` (the request reached no IAM
/// operation). Parsers ignore namespaces; this is for fidelity.
pub const AWS_FAULT_NS: &str = "http://webservices.amazon.com/AWSFault/2005-15-09";

/// An IAM error as a client sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IamError {
    /// The HTTP status AWS uses for the code.
    pub status: StatusCode,
    /// The AWS error code (`NoSuchEntity`, `ValidationError`, ...).
    pub code: &'static str,
    /// A human-readable message (empty for `ServiceFailure`: details are logged, never sent).
    pub message: String,
    /// `Type`: `Sender` when the request is at fault, `Receiver` when the service is.
    pub sender: bool,
    /// The request id to render; a fresh one is made when none was set.
    pub request_id: Option<String>,
}

/// Result type of the IAM protocol layer and its handlers.
pub type IamResult<T> = Result<T, IamError>;

impl IamError {
    /// An error with any code: the constructors below are the ones AWS documents for IAM.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            sender: !status.is_server_error(),
            request_id: None,
        }
    }

    /// The error carrying the request's id (so the access log and the answer agree).
    pub fn with_request_id(mut self, request_id: impl Into<String>) -> Self {
        self.request_id = Some(request_id.into());
        self
    }

    /// `NoSuchEntity` (404): the named user, group, policy, key... does not exist. AWS's
    /// messages name the entity, e.g. "The user with name alice cannot be found.".
    pub fn no_such_entity(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "NoSuchEntity", message)
    }

    /// `EntityAlreadyExists` (409), e.g. "User with name alice already exists.".
    pub fn entity_already_exists(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "EntityAlreadyExists", message)
    }

    /// `DeleteConflict` (409): the entity still has subordinate entities (keys, policies,
    /// group members, attachments), e.g. "Cannot delete entity, must delete access keys first.".
    pub fn delete_conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "DeleteConflict", message)
    }

    /// `LimitExceeded` (409): an account or per-entity quota, e.g.
    /// "Cannot exceed quota for PolicySize: 6144".
    pub fn limit_exceeded(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "LimitExceeded", message)
    }

    /// `MalformedPolicyDocument` (400): the document does not parse or validate as a policy.
    pub fn malformed_policy_document(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "MalformedPolicyDocument", message)
    }

    /// `ValidationError` (400): a parameter outside its modelled constraints (null, length,
    /// pattern, enum). The message is built by [`IamError::validation`].
    pub fn validation_error(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "ValidationError", message)
    }

    /// `ValidationError` in AWS's words for one violated constraint: "1 validation error
    /// detected: Value at 'userName' failed to satisfy constraint: Member must ...". `member`
    /// is the parameter's model name with a lower-case first letter (`userName`,
    /// `tags.1.member.key`). IAM leaves a string's value out of the message (as observed by
    /// another implementation matching AWS in 2026; older AWS answers quoted it); numbers and
    /// booleans are quoted by [`IamError::validation_value`].
    pub fn validation(member: &str, constraint: &str) -> Self {
        Self::validation_error(format!(
            "1 validation error detected: Value at '{member}' failed to satisfy constraint: {constraint}"
        ))
    }

    /// The same with the value quoted: "Value '0' at 'maxItems' failed to satisfy ...".
    pub fn validation_value(member: &str, value: &str, constraint: &str) -> Self {
        Self::validation_error(format!(
            "1 validation error detected: Value '{value}' at '{member}' failed to satisfy constraint: {constraint}"
        ))
    }

    /// `MissingParameter` (400): a required field of a list member is absent, e.g. "The
    /// request must contain the parameter Tags.member.1.Key.".
    pub fn missing_parameter(name: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "MissingParameter",
            format!("The request must contain the parameter {name}."),
        )
    }

    /// `InvalidInput` (400): a value inside the model's constraints that IAM still refuses (an
    /// ARN that is not one, a marker that is not ours, duplicate tag keys).
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "InvalidInput", message)
    }

    /// `AccessDenied` (403), e.g. "User: arn:... is not authorized to perform: iam:CreateUser
    /// on resource: ...".
    pub fn access_denied(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "AccessDenied", message)
    }

    /// `InvalidClientTokenId` (403): the access key id is unknown (AWS's message).
    pub fn invalid_client_token_id() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "InvalidClientTokenId",
            "The security token included in the request is invalid.",
        )
    }

    /// `SignatureDoesNotMatch` (403), with AWS's message for the Query services.
    pub fn signature_does_not_match() -> Self {
        Self::new(
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
        )
    }

    /// `IncompleteSignature` (400): the Authorization header (or the presigned parameters) is
    /// not a well-formed SigV4 signature.
    pub fn incomplete_signature(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "IncompleteSignature", message)
    }

    /// `MissingAction` (400): the request names no `Action`.
    pub fn missing_action() -> Self {
        Self::new(StatusCode::BAD_REQUEST, "MissingAction", "Missing Action")
    }

    /// `InvalidAction` (400): no such operation for that API version. The Query services word
    /// it "Could not find operation {action} for version {version}", and that is also the
    /// answer to a `Version` other than `2010-05-08` (there is no operation of that version).
    pub fn invalid_action(action: &str, version: &str) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "InvalidAction",
            format!("Could not find operation {action} for version {version}"),
        )
    }

    /// `MalformedQueryString` (404 as AWS documents it for the Query services): the body or
    /// query does not decode (not UTF-8 after percent-decoding).
    pub fn malformed_query_string(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "MalformedQueryString", message)
    }

    /// `NotImplemented` (501): an IAM operation grids3 does not serve (roles, MFA, SAML...).
    pub fn not_implemented(action: &str) -> Self {
        Self::new(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            format!("The operation {action} is not implemented by grids3."),
        )
    }

    /// `ServiceFailure` (500): anything unexpected. The cause is logged by whoever saw it; the
    /// client is told nothing about it.
    pub fn service_failure() -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "ServiceFailure",
            "The request processing has failed because of an unknown error, exception or failure.",
        )
    }

    /// `ServiceUnavailable` (503): the database cannot be reached or is failing over; the
    /// client retries (botocore retries 503 on its own).
    pub fn service_unavailable() -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            "Service is unable to handle request.",
        )
    }

    /// The `<ErrorResponse>` document with the given request id.
    pub fn to_xml(&self, request_id: &str) -> String {
        self.to_xml_in(IAM_NS, request_id)
    }

    /// [`IamError::to_xml`] in another Query service's namespace (STS's).
    pub fn to_xml_in(&self, service_ns: &str, request_id: &str) -> String {
        let ns = if self.code == "InvalidAction" {
            AWS_FAULT_NS
        } else {
            service_ns
        };
        format!(
            "<ErrorResponse xmlns=\"{ns}\"><Error><Type>{}</Type><Code>{}</Code><Message>{}</Message></Error><RequestId>{}</RequestId></ErrorResponse>",
            if self.sender { "Sender" } else { "Receiver" },
            self.code,
            xml_text(&self.message),
            xml_text(request_id),
        )
    }
}

/// Text for an XML element: `&`, `<`, `>` and `"` escaped, a carriage return as `&#13;` (so
/// a parser's line-end normalisation keeps it), and the characters XML 1.0 cannot carry at all
/// (C0 controls other than tab and newline, U+FFFE, U+FFFF) replaced by U+FFFD: a message may
/// quote a parameter name the client chose, and an answer that does not parse helps no one.
pub fn xml_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\r' => out.push_str("&#13;"),
            '\t' | '\n' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// A request id in AWS's IAM form (a hyphenated UUID).
pub fn new_request_id() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

impl IntoResponse for IamError {
    fn into_response(self) -> Response {
        self.into_response_in(IAM_NS)
    }
}

impl IamError {
    /// The answer, in `service_ns` (IAM's, or STS's).
    pub fn into_response_in(self, service_ns: &str) -> Response {
        let rid = self.request_id.clone().unwrap_or_else(new_request_id);
        let mut r = Response::new(Body::from(self.to_xml_in(service_ns, &rid)));
        *r.status_mut() = self.status;
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
        if let Ok(v) = HeaderValue::from_str(&rid) {
            h.insert("x-amzn-requestid", v);
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        r
    }
}

impl std::fmt::Display for IamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for IamError {}

/// The errors of authentication (and of the database) as IAM words them. The S3 auth layer is
/// shared, so its answers arrive as [`S3Error`]s:
///
/// - `InvalidAccessKeyId` / `InvalidToken` -> `InvalidClientTokenId` (403), AWS's message;
/// - `SignatureDoesNotMatch` / `XAmzContentSHA256Mismatch` -> `SignatureDoesNotMatch` (403):
///   a Query service signs the body's hash, so a body that differs from its hash is a
///   signature that does not match;
/// - `AuthorizationHeaderMalformed` / `AuthorizationQueryParametersError` ->
///   `IncompleteSignature` (400), message kept (it describes the client's own header);
/// - `RequestTimeTooSkewed` -> `SignatureDoesNotMatch` (403) "Signature expired: ...", the
///   Query services' answer to a clock more than 15 minutes off;
/// - `AccessDenied` -> `AccessDenied` (403), message kept (e.g. "Request has expired");
/// - `ServiceUnavailable` / `SlowDown` -> `ServiceUnavailable` (503);
/// - any other client error (4xx: a malformed body, a body cut short, a timeout) keeps its
///   code, status and message as a `Sender` error: the message describes the client's request,
///   and answering 500 would tell the client the fault is ours;
/// - anything else (5xx) -> `ServiceFailure` (500) without the message.
impl From<S3Error> for IamError {
    fn from(e: S3Error) -> Self {
        match e.code {
            "InvalidAccessKeyId" | "InvalidToken" => Self::invalid_client_token_id(),
            "SignatureDoesNotMatch" | "XAmzContentSHA256Mismatch" => {
                Self::signature_does_not_match()
            }
            "AuthorizationHeaderMalformed" | "AuthorizationQueryParametersError" => {
                Self::incomplete_signature(e.message)
            }
            "RequestTimeTooSkewed" => Self {
                message: "Signature expired: the request's date is more than 15 minutes away from the server's time.".to_owned(),
                ..Self::signature_does_not_match()
            },
            "AccessDenied" => Self::access_denied(e.message),
            // IAM's and STS's words for temporary credentials past their expiration.
            "ExpiredToken" => Self::new(
                StatusCode::FORBIDDEN,
                "ExpiredToken",
                "The security token included in the request is expired",
            ),
            "ServiceUnavailable" | "SlowDown" => Self::service_unavailable(),
            _ if e.status.is_client_error() => Self::new(e.status, e.code, e.message),
            _ => {
                tracing::error!(code = e.code, message = %e.message, "IAM request failed");
                Self::service_failure()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(r: Response) -> String {
        let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(b.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn renders_aws_error_shape() {
        let e = IamError::no_such_entity("The user with name a<b cannot be found.")
            .with_request_id("rid-1");
        let r = e.into_response();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(r.headers()["content-type"], "text/xml");
        assert_eq!(r.headers()["x-amzn-requestid"], "rid-1");
        assert_eq!(
            body(r).await,
            "<ErrorResponse xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\"><Error><Type>Sender</Type><Code>NoSuchEntity</Code><Message>The user with name a&lt;b cannot be found.</Message></Error><RequestId>rid-1</RequestId></ErrorResponse>"
        );
    }

    #[tokio::test]
    async fn server_errors_are_receiver_and_fresh_request_id() {
        let r = IamError::service_unavailable().into_response();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()["retry-after"], "1");
        let rid = r.headers()["x-amzn-requestid"].to_str().unwrap().to_owned();
        assert_eq!(rid.len(), 36);
        let b = body(r).await;
        assert!(b.contains("<Type>Receiver</Type>"), "{b}");
        assert!(b.contains(&format!("<RequestId>{rid}</RequestId>")), "{b}");
    }

    #[test]
    fn xml_text_escapes_and_replaces() {
        assert_eq!(
            xml_text("a&b<c>\"d\" \r\n\t\u{1}\u{ffff}é"),
            "a&amp;b&lt;c&gt;&quot;d&quot; &#13;\n\t\u{fffd}\u{fffd}é"
        );
        let e = IamError::invalid_input("Tags.member.\u{1}x is odd").to_xml("r");
        assert!(
            e.contains("<Message>Tags.member.\u{fffd}x is odd</Message>"),
            "{e}"
        );
    }

    #[test]
    fn invalid_action_is_in_the_front_end_namespace() {
        let e = IamError::invalid_action("Nope", "2010-05-08").to_xml("r");
        assert_eq!(
            e,
            "<ErrorResponse xmlns=\"http://webservices.amazon.com/AWSFault/2005-15-09\"><Error><Type>Sender</Type><Code>InvalidAction</Code><Message>Could not find operation Nope for version 2010-05-08</Message></Error><RequestId>r</RequestId></ErrorResponse>"
        );
    }

    #[test]
    fn statuses_and_codes() {
        let cases = [
            (IamError::no_such_entity("x"), 404, "NoSuchEntity"),
            (
                IamError::entity_already_exists("x"),
                409,
                "EntityAlreadyExists",
            ),
            (IamError::delete_conflict("x"), 409, "DeleteConflict"),
            (IamError::limit_exceeded("x"), 409, "LimitExceeded"),
            (
                IamError::malformed_policy_document("x"),
                400,
                "MalformedPolicyDocument",
            ),
            (IamError::validation_error("x"), 400, "ValidationError"),
            (IamError::invalid_input("x"), 400, "InvalidInput"),
            (IamError::access_denied("x"), 403, "AccessDenied"),
            (
                IamError::invalid_client_token_id(),
                403,
                "InvalidClientTokenId",
            ),
            (
                IamError::signature_does_not_match(),
                403,
                "SignatureDoesNotMatch",
            ),
            (
                IamError::incomplete_signature("x"),
                400,
                "IncompleteSignature",
            ),
            (IamError::missing_action(), 400, "MissingAction"),
            (IamError::invalid_action("A", "v"), 400, "InvalidAction"),
            (
                IamError::not_implemented("CreateRole"),
                501,
                "NotImplemented",
            ),
            (IamError::service_failure(), 500, "ServiceFailure"),
            (IamError::service_unavailable(), 503, "ServiceUnavailable"),
        ];
        for (e, status, code) in cases {
            assert_eq!((e.status.as_u16(), e.code), (status, code));
            assert_eq!(e.sender, status < 500, "{code}");
        }
    }

    #[test]
    fn validation_message_is_aws_wording() {
        let e = IamError::validation("userName", "Member must not be null");
        assert_eq!(
            e.message,
            "1 validation error detected: Value at 'userName' failed to satisfy constraint: Member must not be null"
        );
        let e = IamError::validation_value(
            "maxItems",
            "0",
            "Member must have value between 1 and 1000",
        );
        assert_eq!(
            e.message,
            "1 validation error detected: Value '0' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000"
        );
        let e = IamError::missing_parameter("Tags.member.1.Key");
        assert_eq!((e.status.as_u16(), e.code), (400, "MissingParameter"));
        assert_eq!(
            e.message,
            "The request must contain the parameter Tags.member.1.Key."
        );
    }

    #[test]
    fn maps_s3_auth_errors() {
        let m = |e: S3Error| IamError::from(e);
        let e = m(S3Error::invalid_access_key_id());
        assert_eq!((e.status.as_u16(), e.code), (403, "InvalidClientTokenId"));
        assert_eq!(
            e.message,
            "The security token included in the request is invalid."
        );
        let e = m(S3Error::signature_does_not_match());
        assert_eq!((e.status.as_u16(), e.code), (403, "SignatureDoesNotMatch"));
        let e = m(S3Error::access_denied().with_message("Request has expired"));
        assert_eq!(
            (e.status.as_u16(), e.code, e.message.as_str()),
            (403, "AccessDenied", "Request has expired")
        );
        let e = m(S3Error::service_unavailable());
        assert_eq!((e.status.as_u16(), e.code), (503, "ServiceUnavailable"));
        let e = m(S3Error::authorization_header_malformed("bad credential"));
        assert_eq!((e.status.as_u16(), e.code), (400, "IncompleteSignature"));
        let e = m(S3Error::request_time_too_skewed());
        assert_eq!((e.status.as_u16(), e.code), (403, "SignatureDoesNotMatch"));
        assert!(e.message.starts_with("Signature expired"), "{}", e.message);
        let e = m(S3Error::incomplete_body());
        assert_eq!((e.status.as_u16(), e.code), (400, "IncompleteBody"));
        // A server-side failure says nothing of its cause.
        let e = m(S3Error::internal().with_message("mongo at 10.0.0.7 said no"));
        assert_eq!((e.status.as_u16(), e.code), (500, "ServiceFailure"));
        assert!(!e.message.contains("mongo"));
        assert!(!e.sender);
    }
}
