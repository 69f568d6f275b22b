//! Object Lock: the bucket's configuration (Put/GetObjectLockConfiguration), a version's
//! retention (Put/GetObjectRetention) and legal hold (Put/GetObjectLegalHold), the lock headers
//! of PutObject, CopyObject and CreateMultipartUpload, and the rule every removal of a version
//! obeys (`storage::objects` refuses it with `Blocked::Locked`).
//!
//! A version's retention and legal hold live in its files document's `metadata`
//! (`s3Retention`, `s3LegalHold`, repeated by the version index) and are compared with the
//! database's time, never an instance's. Object Lock needs versioning: enabling it enables
//! versioning, and a bucket with it cannot be suspended. GOVERNANCE retention may be shortened
//! or removed, and a version under it deleted, with `x-amz-bypass-governance-retention: true`
//! by a key with the owner role on the bucket (its owner, root, or an admin grant): grids3 has
//! no IAM, so that role stands for `s3:BypassGovernanceRetention`.

use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::s3::rules::lock::invalid_state;
use crate::s3::rules::lock::lock_missing;
use crate::s3::rules::lock::MODES;
use crate::state::AppState;
use crate::storage::meta::{BucketInfo, ObjectLockConfig};
use crate::storage::objects::{ObjectInfo, ObjectMeta};
use crate::xml::{self, S3_NS};

#[derive(Deserialize, Debug, Default)]
struct ConfigXml {
    #[serde(rename = "ObjectLockEnabled", default)]
    enabled: Option<String>,
    #[serde(rename = "Rule", default)]
    rule: Option<RuleXml>,
}

#[derive(Deserialize, Debug, Default)]
struct RuleXml {
    #[serde(rename = "DefaultRetention", default)]
    default: Option<DefaultXml>,
}

#[derive(Deserialize, Debug, Default)]
struct DefaultXml {
    #[serde(rename = "Mode", default)]
    mode: Option<String>,
    #[serde(rename = "Days", default)]
    days: Option<i64>,
    #[serde(rename = "Years", default)]
    years: Option<i64>,
}

#[derive(Deserialize, Debug, Default)]
struct RetentionXml {
    #[serde(rename = "Mode", default)]
    mode: Option<String>,
    #[serde(rename = "RetainUntilDate", default)]
    until: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct LegalHoldXml {
    #[serde(rename = "Status", default)]
    status: Option<String>,
}

/// Parses an ObjectLockConfiguration body.
pub fn parse_config(body: &[u8]) -> S3Result<ObjectLockConfig> {
    let c: ConfigXml = xml::from_xml("ObjectLockConfiguration", body)?;
    if c.enabled.as_deref() != Some("Enabled") {
        return Err(S3Error::malformed_xml());
    }
    let Some(d) = c.rule.and_then(|r| r.default) else {
        return Ok(ObjectLockConfig::default());
    };
    let mode = d.mode.ok_or_else(S3Error::malformed_xml)?;
    if !MODES.contains(&mode.as_str()) {
        return Err(S3Error::malformed_xml());
    }
    let positive = |n: i64, what: &str| -> S3Result<u32> {
        // AWS's code for a period of zero or less (not InvalidArgument).
        u32::try_from(n).ok().filter(|n| *n > 0).ok_or_else(|| {
            S3Error::invalid_retention_period().with_message(format!(
                "Default retention period must be a positive integer value for {what}"
            ))
        })
    };
    let (days, years) = match (d.days, d.years) {
        (Some(n), None) => (Some(positive(n, "Days")?), None),
        (None, Some(n)) => (None, Some(positive(n, "Years")?)),
        _ => return Err(S3Error::malformed_xml()),
    };
    Ok(ObjectLockConfig {
        mode: Some(mode),
        days,
        years,
    })
}

const LOCK_EXCLUDED: &str =
    "Object Lock cannot be enabled while versioning excludes prefixes or folders";

/// Whether a bucket may take Object Lock: versioning enabled, and (MinIO's exclusions would
/// replace a key's null version whatever its retention) no versioning exclusions, as MinIO
/// refuses them.
fn may_lock(b: &crate::storage::meta::BucketInfo) -> S3Result<()> {
    if b.versioning.as_deref() != Some("Enabled") {
        return Err(invalid_state(
            "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration",
        ));
    }
    if !b.versioning_exclusions.is_empty() {
        return Err(invalid_state(LOCK_EXCLUDED));
    }
    Ok(())
}

/// PutObjectLockConfiguration: needs versioning `Enabled`.
pub async fn put_config(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    let b = require_bucket(st, &bucket).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let config = parse_config(&body)?;
    may_lock(&b)?;
    crate::failpoint::hit("lock.decided", &bucket).await;
    // Written only if the bucket is still as decided (versioning enabled, no exclusions):
    // a PutBucketVersioning since makes the write match nothing, and the answer says why.
    if !st.store.meta().set_object_lock(&bucket, &config).await? {
        let Some(now) = st.store.meta().get_bucket(&bucket).await? else {
            return Err(S3Error::no_such_bucket());
        };
        may_lock(&now)?;
        return Err(invalid_state(LOCK_EXCLUDED));
    }
    st.store.meta().forget_bucket(&bucket);
    Ok(empty(StatusCode::OK))
}

/// GetObjectLockConfiguration.
pub async fn get_config(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let Some(c) = b.object_lock else {
        return Err(S3Error {
            code: "ObjectLockConfigurationNotFoundError",
            status: StatusCode::NOT_FOUND,
            message: "Object Lock configuration does not exist for this bucket".into(),
            headers: Vec::new(),
            extra: Vec::new(),
        });
    };
    let rule = match (&c.mode, c.days, c.years) {
        (Some(m), Some(d), _) => {
            format!("<Rule><DefaultRetention><Mode>{m}</Mode><Days>{d}</Days></DefaultRetention></Rule>")
        }
        (Some(m), _, Some(y)) => {
            format!("<Rule><DefaultRetention><Mode>{m}</Mode><Years>{y}</Years></DefaultRetention></Rule>")
        }
        _ => String::new(),
    };
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ObjectLockConfiguration xmlns=\"{S3_NS}\"><ObjectLockEnabled>Enabled</ObjectLockEnabled>{rule}</ObjectLockConfiguration>"
        ),
    ))
}

async fn addressed(
    st: &AppState,
    b: &BucketInfo,
    (bucket, key): (&str, &str),
    version: Option<String>,
) -> S3Result<ObjectInfo> {
    if b.object_lock.is_none() {
        return Err(lock_missing());
    }
    crate::s3::lookup::find_version(st, bucket, key, version.as_deref())
        .await?
        .ok_or_else(S3Error::no_such_key)
}

/// GetObjectRetention.
pub async fn get_retention(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let o = addressed(st, &b, (req.bucket(), req.key()), version).await?;
    let Some((mode, until)) = &o.meta.retention else {
        return Err(S3Error {
            code: "NoSuchObjectLockConfiguration",
            status: StatusCode::NOT_FOUND,
            message: "The specified object does not have a ObjectLock configuration".into(),
            headers: Vec::new(),
            extra: Vec::new(),
        });
    };
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Retention xmlns=\"{S3_NS}\"><Mode>{mode}</Mode><RetainUntilDate>{}</RetainUntilDate></Retention>",
            crate::s3::request::headers::iso8601(*until)
        ),
    ))
}

/// PutObjectRetention: a retention in force may be extended in its mode; GOVERNANCE may be
/// shortened, removed or turned into COMPLIANCE only with a bypass; COMPLIANCE never
/// (`rules::lock::retention_change_allowed`).
pub async fn put_retention(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let bypass = req.bypass_governance;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let r: RetentionXml = xml::from_xml("Retention", &body)?;
    let new = match (r.mode.as_deref(), r.until.as_deref()) {
        (Some(m), Some(u)) if MODES.contains(&m) => {
            let u =
                crate::s3::request::headers::parse_iso8601(u).ok_or_else(S3Error::malformed_xml)?;
            Some((m.to_owned(), u))
        }
        (None, None) => None,
        _ => return Err(S3Error::malformed_xml()),
    };
    let named = version.is_some();
    let o = addressed(st, &b, (req.bucket(), req.key()), version).await?;
    let now = st.store.meta().clock().now();
    if let Some((_, u)) = &new {
        if *u <= now {
            return Err(S3Error::invalid_argument(
                "The retain until date must be in the future!",
            ));
        }
    }
    // Decided on the retention as stored when the write lands: a change that raced another
    // is decided again on the fresh value (`attrs::update`), so two changes never both pass
    // against one stale read.
    crate::s3::attrs::update(st, req.bucket(), named, o, |o| {
        if !crate::s3::rules::lock::retention_change_allowed(
            o.meta.retention.as_ref(),
            new.as_ref(),
            now,
            bypass,
        ) {
            return Err(S3Error::access_denied()
                .with_message("Access Denied because object protected by object lock."));
        }
        Ok(ObjectMeta {
            retention: new.clone(),
            ..o.meta.clone()
        })
    })
    .await?;
    Ok(empty(StatusCode::OK))
}

/// GetObjectLegalHold.
pub async fn get_legal_hold(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let o = addressed(st, &b, (req.bucket(), req.key()), version).await?;
    let status = if o.meta.legal_hold { "ON" } else { "OFF" };
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LegalHold xmlns=\"{S3_NS}\"><Status>{status}</Status></LegalHold>"
        ),
    ))
}

/// PutObjectLegalHold.
pub async fn put_legal_hold(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let h: LegalHoldXml = xml::from_xml("LegalHold", &body)?;
    let on = match h.status.as_deref() {
        Some("ON") => true,
        Some("OFF") => false,
        _ => return Err(S3Error::malformed_xml()),
    };
    let named = version.is_some();
    let o = addressed(st, &b, (req.bucket(), req.key()), version).await?;
    crate::s3::attrs::update(st, req.bucket(), named, o, |o| {
        Ok(ObjectMeta {
            legal_hold: on,
            ..o.meta.clone()
        })
    })
    .await?;
    Ok(empty(StatusCode::OK))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::objects::ObjectMeta;
    use mongodb::bson::DateTime;

    #[test]
    fn configurations_and_removal_rules() {
        let c = parse_config(b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days></DefaultRetention></Rule></ObjectLockConfiguration>").unwrap();
        assert_eq!(
            (c.mode.as_deref(), c.days, c.years),
            (Some("GOVERNANCE"), Some(3), None)
        );
        assert!(parse_config(b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>3</Days><Years>1</Years></DefaultRetention></Rule></ObjectLockConfiguration>").is_err());
        assert!(parse_config(b"<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>FOREVER</Mode><Days>3</Days></DefaultRetention></Rule></ObjectLockConfiguration>").is_err());
        for period in ["<Days>0</Days>", "<Days>-1</Days>", "<Years>0</Years>"] {
            let body = format!("<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled><Rule><DefaultRetention><Mode>COMPLIANCE</Mode>{period}</DefaultRetention></Rule></ObjectLockConfiguration>");
            assert_eq!(
                parse_config(body.as_bytes()).unwrap_err().code,
                "InvalidRetentionPeriod",
                "{period}"
            );
        }
        let now = DateTime::from_millis(1_000_000);
        let later = DateTime::from_millis(2_000_000);
        let mut m = ObjectMeta::default();
        assert!(m.removable(now, false));
        m.retention = Some(("GOVERNANCE".into(), later));
        assert!(!m.removable(now, false) && m.removable(now, true));
        assert!(
            m.removable(DateTime::from_millis(3_000_000), false),
            "expired retention"
        );
        m.retention = Some(("COMPLIANCE".into(), later));
        assert!(!m.removable(now, true));
        m.retention = None;
        m.legal_hold = true;
        assert!(!m.removable(now, true));
    }
}
