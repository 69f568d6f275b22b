//! MinIO's admin error shape: `{"Code","Message","Resource","RequestId","HostId"}` as JSON,
//! with MinIO's codes and statuses. Client errors are never 5xx: minio-py retries those five
//! times and then reports a connection failure instead of the answer.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::error::S3Error;
use crate::iam::IamError;
use crate::storage::identity::IdentityError;

/// An error of the admin API.
#[derive(Debug)]
pub struct AdminError {
    /// The HTTP status.
    pub status: StatusCode,
    /// MinIO's code (`XMinioAdminNoSuchUser`, ...).
    pub code: &'static str,
    /// The message.
    pub message: String,
}

/// Results of the admin API.
pub type AdminResult<T> = Result<T, AdminError>;

impl AdminError {
    /// An error with a status, a code and a message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        AdminError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 400 `XMinioAdminInvalidArgument`.
    pub fn invalid_argument(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "XMinioAdminInvalidArgument", m)
    }

    /// 400 `XMinioAdminConfigBadJSON`: a body that does not decrypt or parse.
    pub fn bad_json(m: impl Into<String>) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "XMinioAdminConfigBadJSON",
            format!(
                "JSON configuration provided is of incorrect format ({})",
                m.into()
            ),
        )
    }

    /// 404 `NoSuchBucket` (MinIO's admin API answers the S3 code).
    pub fn no_such_bucket() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "The specified bucket does not exist",
        )
    }

    /// 404 `XMinioAdminNoSuchUser`.
    pub fn no_such_user(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "XMinioAdminNoSuchUser",
            format!("The specified user does not exist: {name}"),
        )
    }

    /// 404 `XMinioAdminNoSuchGroup`.
    pub fn no_such_group(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "XMinioAdminNoSuchGroup",
            format!("The specified group does not exist: {name}"),
        )
    }

    /// 404 `XMinioAdminNoSuchPolicy`.
    pub fn no_such_policy(name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "XMinioAdminNoSuchPolicy",
            format!("The canned policy does not exist: {name}"),
        )
    }

    /// 404 `XMinioInvalidIAMCredentials`: no such service account (in the caller's account).
    pub fn no_such_service_account() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "XMinioInvalidIAMCredentials",
            "The specified service account is not found",
        )
    }

    /// 403 `XMinioIAMActionNotAllowed`.
    pub fn action_not_allowed(m: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "XMinioIAMActionNotAllowed", m)
    }

    /// 403 `XMinioInvalidIAMCredentials`: an access key that may not be used for this.
    pub fn credentials_not_allowed(m: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "XMinioInvalidIAMCredentials", m)
    }

    /// 400 `XMinioMalformedIAMPolicy`.
    pub fn malformed_policy(m: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "XMinioMalformedIAMPolicy", m)
    }

    /// 501 `NotImplemented`: an admin path grids3 does not serve.
    pub fn not_implemented(what: &str) -> Self {
        Self::new(
            StatusCode::NOT_IMPLEMENTED,
            "NotImplemented",
            format!("{what} is not implemented by grids3"),
        )
    }

    /// The JSON document.
    pub fn to_json(&self, resource: &str, request_id: &str) -> String {
        serde_json::json!({
            "Code": self.code,
            "Message": self.message,
            "Resource": resource,
            "RequestId": request_id,
            "HostId": "",
        })
        .to_string()
    }

    /// The response.
    pub fn response(&self, resource: &str, request_id: &str) -> Response {
        let mut r = (self.status, self.to_json(resource, request_id)).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    }
}

/// Authentication and database errors keep their code; a server-side failure is logged and
/// answered without detail.
impl From<S3Error> for AdminError {
    fn from(e: S3Error) -> Self {
        if e.status.is_server_error() && e.status != StatusCode::SERVICE_UNAVAILABLE {
            tracing::error!(code = e.code, message = %e.message, "admin request failed");
            return Self::new(
                e.status,
                "InternalError",
                "We encountered an internal error.",
            );
        }
        Self::new(e.status, e.code, e.message)
    }
}

/// The authorization's refusals (`Caller::allow`) and the caller's resolution.
impl From<IamError> for AdminError {
    fn from(e: IamError) -> Self {
        match e.code {
            "AccessDenied" => Self::new(StatusCode::FORBIDDEN, "AccessDenied", e.message),
            "InvalidClientTokenId" => Self::new(
                StatusCode::FORBIDDEN,
                "InvalidAccessKeyId",
                "The Access Key Id you provided does not exist in our records.",
            ),
            _ if e.status.is_client_error() => Self::new(e.status, e.code, e.message),
            "ServiceUnavailable" => Self::new(e.status, "ServiceUnavailable", e.message),
            _ => Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "We encountered an internal error.",
            ),
        }
    }
}

/// The identity store's refusals where a handler has no better word for them.
impl From<IdentityError> for AdminError {
    fn from(e: IdentityError) -> Self {
        match e {
            IdentityError::NoSuchEntity(m) => {
                Self::new(StatusCode::NOT_FOUND, "XMinioInvalidResource", m)
            }
            IdentityError::EntityAlreadyExists(m) => Self::invalid_argument(m),
            IdentityError::DeleteConflict(m) => {
                Self::new(StatusCode::BAD_REQUEST, "XMinioAdminInvalidArgument", m)
            }
            IdentityError::LimitExceeded(m) | IdentityError::InvalidInput(m) => {
                Self::invalid_argument(m)
            }
            IdentityError::Db(e) => S3Error::from(e).into(),
        }
    }
}

/// A database failure.
impl From<mongodb::error::Error> for AdminError {
    fn from(e: mongodb::error::Error) -> Self {
        S3Error::from(e).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_have_minio_s_json_shape() {
        let e = AdminError::no_such_user("bob");
        let v: serde_json::Value =
            serde_json::from_str(&e.to_json("/minio/admin/v3/user-info", "R1")).unwrap();
        assert_eq!(v["Code"], "XMinioAdminNoSuchUser");
        assert_eq!(v["Resource"], "/minio/admin/v3/user-info");
        assert_eq!(v["RequestId"], "R1");
        assert!(v["Message"].as_str().unwrap().contains("bob"));
        assert_eq!(e.status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn client_errors_of_the_identity_store_stay_client_errors() {
        for e in [
            IdentityError::NoSuchEntity("x".into()),
            IdentityError::EntityAlreadyExists("x".into()),
            IdentityError::DeleteConflict("x".into()),
            IdentityError::LimitExceeded("x".into()),
            IdentityError::InvalidInput("x".into()),
        ] {
            assert!(AdminError::from(e).status.is_client_error());
        }
        let denied = AdminError::from(IamError::access_denied("no"));
        assert_eq!(
            (denied.status, denied.code),
            (StatusCode::FORBIDDEN, "AccessDenied")
        );
    }
}
