//! An object's Object Lock from its page: the legal hold (on or off) and the retention (mode
//! and date, with the governance bypass when asked for), each sent as the key's own S3
//! request (PutObjectLegalHold, PutObjectRetention), so S3 decides: a bucket without Object
//! Lock, a shortened COMPLIANCE retention, or a key without `s3:BypassGovernanceRetention` is
//! refused with AWS's code and reason.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::Method;
use axum::response::Response;

use super::objects::Target;
use super::{field, signed_post};
use crate::error::S3Error;
use crate::state::AppState;

/// The retention document for a mode and a date (`2027-01-31` or `2027-01-31T12:00`, UTC),
/// or the reason it cannot be one.
pub fn retention_body(mode: &str, until: &str) -> Result<String, S3Error> {
    if !matches!(mode, "GOVERNANCE" | "COMPLIANCE") {
        return Err(S3Error::invalid_argument(
            "The retention mode is GOVERNANCE or COMPLIANCE",
        ));
    }
    let until = until.trim();
    let at = if until.len() == 10 {
        format!("{until}T00:00:00Z")
    } else if until.len() == 16 {
        format!("{until}:00Z")
    } else {
        format!("{until}Z")
    };
    let parsed = chrono::DateTime::parse_from_rfc3339(&at).map_err(|_| {
        S3Error::invalid_argument(
            "The retain-until date is YYYY-MM-DD, with an optional time (UTC)",
        )
    })?;
    Ok(format!(
        "<Retention><Mode>{mode}</Mode><RetainUntilDate>{}</RetainUntilDate></Retention>",
        parsed.format("%Y-%m-%dT%H:%M:%SZ")
    ))
}

/// POST /objects/lock: `what=legal-hold` (`status` ON or OFF) or `what=retention` (`mode`,
/// `until`, `bypass`).
pub async fn lock(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let t = Target::of(&f);
    let mut query = Vec::new();
    if !t.version.is_empty() {
        query.push(("versionId", t.version.as_str()));
    }
    let mut headers = Vec::new();
    let body = match field(&f, "what") {
        Some("legal-hold") => {
            query.push(("legal-hold", ""));
            match field(&f, "status") {
                Some(s @ ("ON" | "OFF")) => {
                    Ok(format!("<LegalHold><Status>{s}</Status></LegalHold>"))
                }
                _ => Err(S3Error::invalid_argument("The legal hold is ON or OFF")),
            }
        }
        Some("retention") => {
            query.push(("retention", ""));
            if field(&f, "bypass") == Some("on") {
                headers.push(("x-amz-bypass-governance-retention", "true".to_owned()));
            }
            retention_body(
                field(&f, "mode").unwrap_or(""),
                field(&f, "until").unwrap_or(""),
            )
        }
        _ => Err(S3Error::invalid_argument("Nothing to change")),
    };
    let sent = match body {
        Ok(body) => {
            ctx.caller(&st)
                .send(
                    Method::PUT,
                    Some(&t.bucket),
                    Some(&t.key),
                    &query,
                    &headers,
                    Body::from(body),
                )
                .await
        }
        Err(e) => Err(e),
    };
    t.answer(&ctx, sent, "The Object Lock was not changed")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retention_dates_are_read_as_utc() {
        assert_eq!(
            retention_body("GOVERNANCE", "2027-01-31").unwrap(),
            "<Retention><Mode>GOVERNANCE</Mode><RetainUntilDate>2027-01-31T00:00:00Z</RetainUntilDate></Retention>"
        );
        assert!(retention_body("COMPLIANCE", "2027-01-31T12:30")
            .unwrap()
            .contains("2027-01-31T12:30:00Z"));
        assert!(retention_body("SOMETIMES", "2027-01-31").is_err());
        assert!(retention_body("GOVERNANCE", "tomorrow").is_err());
        assert!(retention_body("GOVERNANCE", "2027-01-31</RetainUntilDate>").is_err());
    }
}
