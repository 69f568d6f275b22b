//! The checks MinIO makes of access keys, secrets and statuses, shared by the families.

use super::error::{AdminError, AdminResult};

/// MinIO's shortest access key and secret.
const MIN_ACCESS_KEY: usize = 3;
const MIN_SECRET_KEY: usize = 8;

/// An access key as MinIO accepts one for a user or a service account.
pub fn check_access_key(k: &str) -> AdminResult<()> {
    if k.trim() != k {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "XMinioInvalidResource",
            "an access key may not begin or end with white space",
        ));
    }
    // Also the IAM user name's alphabet: a MinIO user is an IAM user of that name.
    let iam_name = k.len() <= 64
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b));
    if k.len() < MIN_ACCESS_KEY || k.contains(['=', ',']) || !iam_name {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "XMinioAdminInvalidAccessKey",
            "The access key is invalid: 3 to 64 characters of letters, digits and +.@_-",
        ));
    }
    Ok(())
}

/// A secret as MinIO accepts one.
pub fn check_secret_key(s: &str) -> AdminResult<()> {
    if s.len() < MIN_SECRET_KEY || s.len() > 128 {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "XMinioAdminInvalidSecretKey",
            "The secret key is invalid: 8 to 128 characters",
        ));
    }
    Ok(())
}

/// `enabled` / `disabled` (MinIO also takes `on` / `off` in places): `true` for disabled.
pub fn parse_status(s: &str, on_off: bool) -> AdminResult<bool> {
    match s {
        "enabled" => Ok(false),
        "disabled" => Ok(true),
        "on" if on_off => Ok(false),
        "off" if on_off => Ok(true),
        _ => Err(AdminError::invalid_argument(format!(
            "invalid status {s:?}: enabled or disabled"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_and_secret_keys_follow_minio_s_rules() {
        assert!(check_access_key("bob").is_ok());
        assert!(check_access_key("alice.smith@x").is_ok());
        for bad in ["ab", "a=b", "a,b", " bob", "bob ", "bo/b"] {
            assert!(check_access_key(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_access_key("ab").unwrap_err().code,
            "XMinioAdminInvalidAccessKey"
        );
        assert_eq!(
            check_access_key(" bob").unwrap_err().code,
            "XMinioInvalidResource"
        );
        assert!(check_secret_key("12345678").is_ok());
        assert_eq!(
            check_secret_key("1234567").unwrap_err().code,
            "XMinioAdminInvalidSecretKey"
        );
    }

    #[test]
    fn statuses_are_enabled_or_disabled() {
        assert!(!parse_status("enabled", false).unwrap());
        assert!(parse_status("disabled", false).unwrap());
        assert!(parse_status("off", false).is_err());
        assert!(parse_status("off", true).unwrap());
        assert!(parse_status("", true).is_err());
    }
}
