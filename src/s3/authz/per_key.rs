//! Decisions per listed key (MinIO's metadata listing, metadata search): whether the caller
//! may run an operation on one object, decided as that request would be.

use std::collections::HashMap;

use crate::error::S3Result;
use crate::s3::authz;
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::storage::objects::ObjectInfo;

/// Who asks, as the per-key decisions need it (the request itself is not `Sync`).
pub struct Caller {
    auth: crate::auth::Auth,
    bucket: String,
    facts: HashMap<String, Vec<String>>,
}

impl Caller {
    /// The caller of `req`.
    pub fn of(st: &AppState, req: &S3Request) -> Self {
        Self {
            facts: authz::facts_of(st, req),
            auth: req.auth.clone(),
            bucket: req.bucket().to_owned(),
        }
    }
}

/// Whether the caller may run `op` on the listed object, decided as that request would be
/// (the policy on the object's ARN, roles, and the object's ACL).
pub async fn may(st: &AppState, who: &Caller, op: &Op, o: &ObjectInfo) -> S3Result<bool> {
    may_on(st, who, op, o, None).await
}

/// [`may`] for one version of the object (`?versionId=`): checked as that request would be,
/// as the operation's `*Version*` action, with `s3:versionid`, and the version's own tags for
/// `s3:ExistingObjectTag`.
pub async fn may_on_version(
    st: &AppState,
    who: &Caller,
    op: &Op,
    o: &ObjectInfo,
    version: &str,
) -> S3Result<bool> {
    may_on(st, who, op, o, Some(version)).await
}

async fn may_on(
    st: &AppState,
    who: &Caller,
    op: &Op,
    o: &ObjectInfo,
    version: Option<&str>,
) -> S3Result<bool> {
    let versioned_facts;
    let facts = match version {
        Some(v) => {
            let mut f = who.facts.clone();
            f.insert("s3:versionid".to_owned(), vec![v.to_owned()]);
            versioned_facts = f;
            &versioned_facts
        }
        None => &who.facts,
    };
    // The root key too: a bucket policy's explicit Deny binds it.
    let target = authz::Target {
        bucket: &who.bucket,
        key: Some(o.key()),
        facts,
        shape: crate::s3::actions::Shape {
            version: version.is_some(),
            ..Default::default()
        },
    };
    let access = authz::explain(st, op, &who.auth, &target).await?.access;
    Ok(match access {
        Access::Granted | Access::GrantedUnlisted => true,
        Access::IfObjectAcl { .. } => {
            crate::s3::rules::acl::require_object_access(&who.auth, access, Some((*o).clone()))
                .is_ok()
        }
        _ => false,
    })
}
