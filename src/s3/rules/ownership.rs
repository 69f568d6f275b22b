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

/// Refuses an ACL where ACLs are disabled (`BucketOwnerEnforced`), as AWS does: a write or an
/// ACL call may give no ACL, `bucket-owner-full-control`, or (in grant headers or a document)
/// the bucket owner's FULL_CONTROL alone; anything else, `private` included, is
/// `400 AccessControlListNotSupported`. `canned` is the request's `x-amz-acl`, `acl` the
/// grants it asks for (`None`: no ACL at all), `owner_id` the bucket owner's canonical id.
pub fn check_acl(
    disabled: bool,
    canned: Option<&str>,
    acl: Option<&[Grant]>,
    owner_id: &str,
) -> S3Result<()> {
    let Some(grants) = acl else { return Ok(()) };
    if !disabled {
        return Ok(());
    }
    let owner_full_control = |g: &Grant| {
        g.grantee == crate::s3::request::grants::Grantee::User(owner_id.to_owned())
            && g.perm == crate::s3::request::grants::Perm::FullControl
    };
    let allowed = match canned.map(str::trim) {
        Some(c) => c == "bucket-owner-full-control",
        None => !grants.is_empty() && grants.iter().all(owner_full_control),
    };
    if allowed {
        Ok(())
    } else {
        Err(S3Error::access_control_list_not_supported())
    }
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
        // An IAM user's object is its account's, as on AWS.
        writer.account_key().to_owned()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::request::grants::{Grantee, Perm};

    #[test]
    fn acls_where_they_are_disabled() {
        let owner = "o".repeat(64);
        let full = vec![Grant::new(Grantee::User(owner.clone()), Perm::FullControl)];
        let read = vec![Grant::new(Grantee::User(owner.clone()), Perm::Read)];
        let public = vec![Grant::new(Grantee::AllUsers, Perm::Read)];
        type Case<'a> = (bool, Option<&'a str>, Option<&'a [Grant]>, bool);
        let cases: &[Case] = &[
            // Enabled: anything goes here (other rules apply elsewhere).
            (false, Some("public-read"), Some(&public), true),
            // Disabled: no ACL, bucket-owner-full-control, or the owner's FULL_CONTROL alone.
            (true, None, None, true),
            (true, Some("bucket-owner-full-control"), Some(&[]), true),
            (true, None, Some(&full), true),
            (true, Some("private"), Some(&[]), false),
            (true, Some("public-read"), Some(&public), false),
            (true, None, Some(&read), false),
            (true, None, Some(&[]), false),
        ];
        for (disabled, canned, acl, ok) in cases {
            assert_eq!(
                check_acl(*disabled, *canned, *acl, &owner).is_ok(),
                *ok,
                "{disabled} {canned:?} {acl:?}"
            );
        }
    }
}
