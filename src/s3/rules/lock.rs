//! Object Lock decisions: the retention and legal hold a new object gets, and who may bypass
//! GOVERNANCE retention.

use axum::http::StatusCode;
use mongodb::bson::DateTime;

use crate::error::{S3Error, S3Result};
use crate::s3::request::write::LockHeaders;
use crate::s3::request::S3Request;
use crate::storage::meta::{BucketInfo, ObjectLockConfig};

/// The retention modes.
pub const MODES: [&str; 2] = ["GOVERNANCE", "COMPLIANCE"];

pub(crate) fn lock_missing() -> S3Error {
    S3Error::invalid_request("Bucket is missing Object Lock Configuration")
}

pub(crate) fn invalid_state(msg: &str) -> S3Error {
    S3Error {
        code: "InvalidBucketState",
        status: StatusCode::CONFLICT,
        message: msg.to_owned(),
        headers: Vec::new(),
    }
}

/// The retention and legal hold a new object gets: the lock headers, else the bucket's
/// default retention, as of `now` (the database's clock). Lock headers on a bucket without
/// Object Lock are `InvalidRequest`, before anything else about them is checked (AWS's order).
pub fn for_new_object(
    b: &BucketInfo,
    lock: &LockHeaders,
    now: DateTime,
) -> S3Result<(Option<(String, DateTime)>, bool)> {
    let (mode, until, hold) = (
        lock.mode.as_deref(),
        lock.until.as_deref(),
        lock.hold.as_deref(),
    );
    let asked = mode.is_some() || until.is_some() || hold.is_some();
    let Some(config) = &b.object_lock else {
        return if asked {
            Err(lock_missing())
        } else {
            Ok((None, false))
        };
    };
    let legal_hold = match hold {
        None | Some("OFF") => false,
        Some("ON") => true,
        Some(_) => {
            return Err(S3Error::invalid_argument(
                "Legal Hold must be either of 'ON' or 'OFF'",
            ))
        }
    };
    let retention = match (mode, until) {
        (Some(m), Some(u)) => {
            if !MODES.contains(&m) {
                return Err(S3Error::invalid_argument("Unknown wormMode directive."));
            }
            let u = crate::s3::request::headers::parse_iso8601(u).ok_or_else(|| {
                S3Error::invalid_argument(
                    "The retain until date must be provided in ISO 8601 format",
                )
            })?;
            if u <= now {
                return Err(S3Error::invalid_argument(
                    "The retain until date must be in the future!",
                ));
            }
            Some((m.to_owned(), u))
        }
        (None, None) => default_retention(config, now),
        _ => return Err(S3Error::invalid_argument(
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied",
        )),
    };
    Ok((retention, legal_hold))
}

fn default_retention(c: &ObjectLockConfig, now: DateTime) -> Option<(String, DateTime)> {
    let mode = c.mode.clone()?;
    let days = match (c.days, c.years) {
        (Some(d), _) => i64::from(d),
        (_, Some(y)) => i64::from(y) * 365,
        _ => return None,
    };
    Some((
        mode,
        DateTime::from_millis(now.timestamp_millis() + days * 86_400_000),
    ))
}

/// Whether `x-amz-bypass-governance-retention: true` is sent by a key that may use it.
pub fn bypass(req: &S3Request, b: &BucketInfo) -> bool {
    req.header("x-amz-bypass-governance-retention")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
        && matches!(
            super::authz::role_on(&req.auth, b),
            Some(super::authz::Role::Owner)
        )
}
