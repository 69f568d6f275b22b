//! Object Lock decisions: the retention and legal hold a new object gets, and who may bypass
//! GOVERNANCE retention.

use axum::http::StatusCode;
use mongodb::bson::DateTime;

use crate::error::{S3Error, S3Result};
use crate::s3::request::write::LockHeaders;
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
        extra: Vec::new(),
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

/// Whether PutObjectRetention may replace the `current` retention with `new` at `now`. A
/// retention in force may be extended in its own mode; shortening it, removing it or changing
/// its mode needs GOVERNANCE and a bypass (COMPLIANCE, never). That includes turning
/// GOVERNANCE into COMPLIANCE: AWS refuses it without a bypass, since it can lock the object
/// for good.
pub fn retention_change_allowed(
    current: Option<&(String, DateTime)>,
    new: Option<&(String, DateTime)>,
    now: DateTime,
    bypass: bool,
) -> bool {
    let Some((mode, until)) = current.filter(|(_, until)| *until > now) else {
        return true;
    };
    let weaker_or_other = match new {
        None => true,
        Some((m, u)) => u < until || m != mode,
    };
    !weaker_or_other || (mode == "GOVERNANCE" && bypass)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_changes_as_aws() {
        let (now, soon, later) = (
            DateTime::from_millis(1_000),
            DateTime::from_millis(2_000),
            DateTime::from_millis(3_000),
        );
        let r = |m: &str, u: DateTime| Some((m.to_owned(), u));
        let (g, c) = ("GOVERNANCE", "COMPLIANCE");
        // (current, new, bypass, allowed)
        let table = [
            (None, r(c, soon), false, true),
            (r(g, later), r(g, later), false, true),
            (r(g, soon), r(g, later), false, true),
            (r(g, later), r(g, soon), false, false),
            (r(g, later), r(g, soon), true, true),
            (r(g, later), None, false, false),
            (r(g, later), None, true, true),
            (r(g, soon), r(c, later), false, false),
            (r(g, soon), r(c, later), true, true),
            (r(c, soon), r(c, later), false, true),
            (r(c, later), r(c, soon), true, false),
            (r(c, later), r(g, later), true, false),
            (r(c, later), None, true, false),
            // A retention that has expired holds nothing.
            (r(c, DateTime::from_millis(500)), None, false, true),
        ];
        for (i, (current, new, bypass, allowed)) in table.iter().enumerate() {
            assert_eq!(
                retention_change_allowed(current.as_ref(), new.as_ref(), now, *bypass),
                *allowed,
                "case {i}"
            );
        }
    }
}
