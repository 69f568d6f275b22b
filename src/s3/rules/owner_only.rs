//! The bucket operations that are the owner's by default: its configuration and its deletion.
//! The owning key, the root key and a key the admin API made an `owner` of the bucket may run
//! them; what others get is the table's, row by row, after AWS:
//!
//! - **Another key** (in grids3 each key is its own "account"): what AWS lets a bucket policy
//!   grant to another account. For the three bucket-policy operations that is nothing: AWS
//!   answers an allowed identity of another account `405 MethodNotAllowed`, and so does
//!   grids3 ([`Others::MethodNotAllowed`]). Every other row can be granted across accounts in
//!   AWS (its API reference asks only for the action's permission, and AWS's own policy
//!   checks flag such cross-account grants as possible), so a bucket policy's Allow for the
//!   key grants it ([`Others::Policy`]). Rows that are grids3's own extensions and have no AWS
//!   counterpart stay the owner's ([`Others::AccessDenied`]).
//! - **An unsigned request**: never, whatever the policy says. This is stricter than AWS, which
//!   lets a public policy grant bucket configuration to anonymous callers when Block Public
//!   Access is off; grids3 lets no unsigned request delete or reconfigure a bucket.
//! - The bucket ACL operations are also open to the ACL's own ACP grants (`READ_ACP`,
//!   `WRITE_ACP`), which is what those permissions mean in AWS.
//!
//! [`OWNER_ONLY`] is the one table. [`crate::s3::rules::authz::decide`] reads it, and an
//! integration test sends every row's request, unsigned and signed by another key, against a
//! bucket whose policy allows `s3:*` to everyone.
//!
//! | rows | another key, allowed by the policy | unsigned, allowed by the policy |
//! |---|---|---|
//! | Get/Put/DeleteBucketPolicy | 405 MethodNotAllowed (as AWS) | 403 (AWS: 405 too) |
//! | DeleteBucket, GetBucketPolicyStatus, Public Access Block, ownership controls, ACL, encryption, lifecycle, CORS, versioning, Object Lock, tagging, website, logging, notification, replication and the other unconfigured reads | granted (as AWS) | 403 (AWS: granted with Block Public Access off) |
//! | ListenBucketNotification (MinIO's extension) | 403 | 403 |

use crate::s3::op::Op;
use crate::s3::request::grants::Perm;

/// What a key other than the owner gets when the bucket policy allows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Others {
    /// Granted: AWS lets a bucket policy grant it to another account.
    Policy,
    /// `403 AccessDenied` whatever the policy says (grids3's own extensions).
    AccessDenied,
    /// `405 MethodNotAllowed` (the bucket policy operations, as AWS answers them).
    MethodNotAllowed,
}

/// One owner-only operation, with the request that asks for it.
#[derive(Debug)]
pub struct OwnerOnly {
    /// The operation.
    pub op: Op,
    /// Its HTTP method.
    pub method: &'static str,
    /// Its sub-resource (the query word; empty for DeleteBucket).
    pub query: &'static str,
    /// What another key gets when the bucket policy allows it.
    pub others: Others,
    /// The bucket ACL permission that may grant it to a non-owner (the ACL operations only).
    pub acl: Option<Perm>,
}

const fn row(op: Op, method: &'static str, query: &'static str) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query,
        others: Others::Policy,
        acl: None,
    }
}

/// A row of grids3's own that a policy grants to no other key.
const fn own_row(op: Op, method: &'static str, query: &'static str) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query,
        others: Others::AccessDenied,
        acl: None,
    }
}

const fn policy_row(op: Op, method: &'static str) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query: "policy",
        others: Others::MethodNotAllowed,
        acl: None,
    }
}

const fn acl_row(op: Op, method: &'static str, perm: Perm) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query: "acl",
        others: Others::Policy,
        acl: Some(perm),
    }
}

/// Every owner-only operation.
pub static OWNER_ONLY: &[OwnerOnly] = &[
    row(Op::DeleteBucket, "DELETE", ""),
    policy_row(Op::GetBucketPolicy, "GET"),
    policy_row(Op::PutBucketPolicy, "PUT"),
    policy_row(Op::DeleteBucketPolicy, "DELETE"),
    row(Op::GetBucketPolicyStatus, "GET", "policyStatus"),
    row(Op::GetPublicAccessBlock, "GET", "publicAccessBlock"),
    row(Op::PutPublicAccessBlock, "PUT", "publicAccessBlock"),
    row(Op::DeletePublicAccessBlock, "DELETE", "publicAccessBlock"),
    row(Op::GetBucketOwnershipControls, "GET", "ownershipControls"),
    row(Op::PutBucketOwnershipControls, "PUT", "ownershipControls"),
    row(
        Op::DeleteBucketOwnershipControls,
        "DELETE",
        "ownershipControls",
    ),
    acl_row(Op::GetBucketAcl, "GET", Perm::ReadAcp),
    acl_row(Op::PutBucketAcl, "PUT", Perm::WriteAcp),
    row(Op::GetBucketEncryption, "GET", "encryption"),
    row(Op::PutBucketEncryption, "PUT", "encryption"),
    row(Op::DeleteBucketEncryption, "DELETE", "encryption"),
    row(Op::GetBucketLifecycleConfiguration, "GET", "lifecycle"),
    row(Op::PutBucketLifecycleConfiguration, "PUT", "lifecycle"),
    row(
        Op::DeleteBucketLifecycleConfiguration,
        "DELETE",
        "lifecycle",
    ),
    row(Op::GetBucketCors, "GET", "cors"),
    row(Op::PutBucketCors, "PUT", "cors"),
    row(Op::DeleteBucketCors, "DELETE", "cors"),
    row(Op::PutBucketVersioning, "PUT", "versioning"),
    row(Op::GetObjectLockConfiguration, "GET", "object-lock"),
    row(Op::PutObjectLockConfiguration, "PUT", "object-lock"),
    row(Op::PutBucketTagging, "PUT", "tagging"),
    row(Op::DeleteBucketTagging, "DELETE", "tagging"),
    row(Op::GetBucketWebsite, "GET", "website"),
    row(Op::PutBucketWebsite, "PUT", "website"),
    row(Op::DeleteBucketWebsite, "DELETE", "website"),
    // The configurations grids3 answers as unconfigured (replication, ...): reading even
    // their absence is the owner's, as in AWS.
    row(Op::GetUnconfigured("replication"), "GET", "replication"),
    row(Op::GetBucketLogging, "GET", "logging"),
    row(Op::PutBucketLogging, "PUT", "logging"),
    row(
        Op::GetBucketNotificationConfiguration,
        "GET",
        "notification",
    ),
    row(
        Op::PutBucketNotificationConfiguration,
        "PUT",
        "notification",
    ),
    own_row(Op::ListenBucketNotification, "GET", "events"),
    row(Op::GetUnconfigured("accelerate"), "GET", "accelerate"),
    row(
        Op::GetUnconfigured("requestPayment"),
        "GET",
        "requestPayment",
    ),
    row(Op::GetUnconfigured("analytics"), "GET", "analytics"),
    row(Op::GetUnconfigured("metrics"), "GET", "metrics"),
    row(Op::GetUnconfigured("inventory"), "GET", "inventory"),
    row(
        Op::GetUnconfigured("intelligent-tiering"),
        "GET",
        "intelligent-tiering",
    ),
];

/// The row of an owner-only operation (`None`: not owner-only).
pub fn lookup(op: &Op) -> Option<&'static OwnerOnly> {
    OWNER_ONLY.iter().find(|r| r.op == *op)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, Method};

    /// Each row's request parses to its operation (the table and the router agree), and every
    /// sub-resource the router answers as unconfigured is in the table.
    #[test]
    fn rows_are_the_requests_the_router_parses() {
        for r in OWNER_ONLY {
            let query: Vec<(String, String)> = if r.query.is_empty() {
                vec![]
            } else {
                vec![(r.query.to_owned(), String::new())]
            };
            let method: Method = r.method.parse().unwrap();
            let op = crate::s3::op::parse(&method, Some("b"), None, &query, &HeaderMap::new());
            assert_eq!(op, r.op, "{} ?{}", r.method, r.query);
        }
        for (sub, _) in crate::s3::op::SUBRESOURCES {
            assert!(lookup(&Op::GetUnconfigured(sub)).is_some(), "{sub}");
        }
    }
}
