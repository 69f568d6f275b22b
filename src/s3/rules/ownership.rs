//! Object ownership decisions: whether ACLs are disabled, which ACLs a setting refuses, and who
//! owns a new bucket's objects.

use axum::http::HeaderMap;

use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::model::ownership::parse;
use crate::s3::request::grants::Grant;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

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
pub fn owner_for_write(b: &BucketInfo, writer: &Auth, canned_acl: Option<&str>) -> String {
    let full_control = canned_acl == Some("bucket-owner-full-control");
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
