//! ACL evaluation: an object's grants, and whether they let a request at the object.

use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::request::access::Access;
use crate::s3::request::grants::{self, Grant};
use crate::s3::respond::owner_of;
use crate::storage::objects::{ObjectInfo, ObjectMeta};

/// An object's grants: the legacy canned `acl` field and the stored grants.
pub fn object_grants(meta: &ObjectMeta) -> Vec<Grant> {
    let mut out = meta
        .acl
        .as_deref()
        .and_then(|a| grants::canned(a, true).ok())
        .unwrap_or_default();
    out.extend(grants::from_stored(&meta.grants));
    out
}

/// The addressed object, when the authorization (`access`) and, where it left the decision
/// to the object, the object's ACL allow the request. A missing key is `NoSuchKey` to whoever
/// may list the bucket and `AccessDenied` to everyone else, who learns nothing (as in AWS).
pub fn require_object_access(
    auth: &Auth,
    access: Access,
    found: Option<ObjectInfo>,
) -> S3Result<ObjectInfo> {
    match (access, found) {
        (Access::Granted, Some(o)) => Ok(o),
        (Access::Granted, None) => Err(S3Error::no_such_key()),
        (Access::GrantedUnlisted, Some(o)) => Ok(o),
        (
            Access::IfObjectAcl {
                perm,
                ignore_public,
                acls_disabled,
                ..
            },
            Some(o),
        ) => {
            let id = owner_of(auth.account_key()).id;
            let who = super::authz::principal(auth, &id);
            let mut acl = object_grants(&o.meta);
            if ignore_public {
                acl.retain(|g| !super::public_access::is_public(g));
            }
            if acls_disabled {
                acl.clear();
            }
            // The object's owner (a key that wrote it into another's bucket with ACLs
            // enabled) has FULL_CONTROL of it.
            let owns = !acls_disabled
                && !auth.is_anonymous()
                && o.meta.owner.as_deref() == Some(auth.account_key());
            if owns || grants::allows(&acl, who, perm) {
                Ok(o)
            } else {
                Err(S3Error::access_denied())
            }
        }
        (Access::IfObjectAcl { may_list: true, .. }, None) => Err(S3Error::no_such_key()),
        _ => Err(S3Error::access_denied()),
    }
}
