//! Object ownership: Put/Get/DeleteBucketOwnershipControls and `x-amz-object-ownership` on
//! CreateBucket. `BucketOwnerEnforced` disables ACLs: a request that sets any ACL but the
//! default (`private`, `bucket-owner-full-control`, or a document granting only the owner) is
//! refused with `AccessControlListNotSupported`, and grants stored before grant nothing.
//! `BucketOwnerPreferred` and `ObjectWriter` keep ACLs in force.
//!
//! grids3 has one account, whose keys all write as it: the bucket's owner owns every object
//! under all three settings, which is what AWS does within one account. New buckets get
//! `--default-object-ownership` (`BucketOwnerEnforced`, AWS's default since April 2023);
//! buckets made before grids3 had the setting behave as `ObjectWriter`, as AWS's older buckets
//! do.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::acl::grants::Grant;
use super::{empty, require_bucket, xml_response, S3Request};
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::xml;

/// The three settings.
pub const SETTINGS: &[&str] = &[
    "BucketOwnerEnforced",
    "BucketOwnerPreferred",
    "ObjectWriter",
];

/// Parses a setting (for the flag and the header).
pub fn parse(s: &str) -> Result<String, String> {
    SETTINGS
        .iter()
        .find(|k| **k == s.trim())
        .map(|k| (*k).to_owned())
        .ok_or_else(|| {
            format!(
                "unknown object ownership: {s} (one of {})",
                SETTINGS.join(", ")
            )
        })
}

/// Whether a bucket's ACLs are disabled.
pub fn acls_disabled(b: &BucketInfo) -> bool {
    b.ownership.as_deref() == Some("BucketOwnerEnforced")
}

/// Refuses an ACL that grants anything where ACLs are disabled.
pub fn check_acl(disabled: bool, acl: Option<&[Grant]>) -> S3Result<()> {
    if disabled && acl.is_some_and(|a| !a.is_empty()) {
        return Err(S3Error::access_control_list_not_supported());
    }
    Ok(())
}

/// The ownership a CreateBucket asks for (`x-amz-object-ownership`), or the server's default;
/// refuses an ACL the setting does not allow.
pub fn for_new_bucket(st: &AppState, h: &HeaderMap, acl: Option<&[Grant]>) -> S3Result<String> {
    let setting = match h.get("x-amz-object-ownership") {
        Some(v) => parse(v.to_str().unwrap_or_default())
            .map_err(|_| S3Error::invalid_argument("Invalid x-amz-object-ownership header"))?,
        None => st.config.default_object_ownership.clone(),
    };
    if setting == "BucketOwnerEnforced" && acl.is_some_and(|a| !a.is_empty()) {
        return Err(S3Error::invalid_bucket_acl_with_object_ownership());
    }
    Ok(setting)
}

/// The owner of an object being written: the bucket's owner under `BucketOwnerEnforced`, and
/// under `BucketOwnerPreferred` when the writer gives it `bucket-owner-full-control`; the
/// writer otherwise. Unsigned writes belong to the bucket's owner (AWS's anonymous owner is no
/// key anyone could act as).
pub fn owner_for_write(b: &BucketInfo, writer: &Auth, h: &HeaderMap) -> String {
    let full_control = h
        .get("x-amz-acl")
        .is_some_and(|v| v.as_bytes() == b"bucket-owner-full-control");
    let to_bucket_owner = match b.ownership.as_deref() {
        Some("BucketOwnerEnforced") => true,
        Some("BucketOwnerPreferred") => full_control,
        _ => false,
    };
    if to_bucket_owner || writer.is_anonymous() {
        b.owner.clone()
    } else {
        writer.access_key.clone()
    }
}

/// The owner of an object now: the bucket's owner while ACLs are disabled (AWS's
/// `BucketOwnerEnforced` owns every object, whoever wrote it), else the recorded owner.
pub fn object_owner<'a>(b: &'a BucketInfo, recorded: Option<&'a str>) -> &'a str {
    if acls_disabled(b) {
        &b.owner
    } else {
        recorded.filter(|o| !o.is_empty()).unwrap_or(&b.owner)
    }
}

#[derive(serde::Deserialize, Debug, Default)]
struct Controls {
    #[serde(rename = "Rule", default)]
    rules: Vec<Rule>,
}

#[derive(serde::Deserialize, Debug)]
struct Rule {
    #[serde(rename = "ObjectOwnership")]
    ownership: String,
}

/// PutBucketOwnershipControls.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let c: Controls = xml::from_xml(&body)?;
    let [rule] = c.rules.as_slice() else {
        return Err(S3Error::malformed_xml());
    };
    let setting = parse(&rule.ownership).map_err(|_| S3Error::malformed_xml())?;
    // As in AWS: ACLs can be disabled only once the bucket's own ACL grants nobody else.
    if setting == "BucketOwnerEnforced" && !b.acl.is_empty() {
        return Err(S3Error::invalid_bucket_acl_with_object_ownership());
    }
    st.store
        .meta()
        .set_bucket_ownership(&b.name, Some(&setting))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketOwnershipControls.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let setting = b
        .ownership
        .ok_or_else(S3Error::ownership_controls_not_found)?;
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OwnershipControls xmlns=\"{}\"><Rule><ObjectOwnership>{setting}</ObjectOwnership></Rule></OwnershipControls>",
            xml::S3_NS
        ),
    ))
}

/// DeleteBucketOwnershipControls: the bucket behaves as `ObjectWriter` again.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_ownership(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
