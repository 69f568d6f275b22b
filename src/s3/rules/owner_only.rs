//! The operations only a bucket's owner may run: its configuration and its deletion. They are
//! decided by ownership (the owning key, the root key, or a key the admin API made an `owner`
//! of the bucket), never by a bucket policy's Allow: a policy with `Principal: "*"` naming
//! `s3:PutBucketPolicy` or `s3:DeleteBucket` grants them to nobody. AWS keeps them to the
//! bucket owner's account the same way.
//!
//! [`OWNER_ONLY`] is the one table of them. [`crate::s3::rules::authz::decide`] reads it, and an
//! integration test sends every row's request, unsigned and signed by another key, against a
//! bucket whose policy allows `s3:*` to everyone.
//!
//! Where grids3 differs from AWS, by choice:
//! - In AWS another account's identity that a policy allows gets `405 MethodNotAllowed` for
//!   the three policy operations, and may be granted the others across accounts. grids3 has
//!   one key per "account", so another key gets 405 for the policy operations a policy allows
//!   and `403 AccessDenied` for the rest, whatever a policy says.
//! - The bucket ACL operations stay open to the ACL's own ACP grants (`READ_ACP`, `WRITE_ACP`),
//!   which is what those permissions mean in AWS; a policy still grants them to no one.

use crate::s3::op::Op;
use crate::s3::request::grants::Perm;

/// What a key other than the owner gets when a policy would allow it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `403 AccessDenied`.
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
    pub others: Refusal,
    /// The bucket ACL permission that may grant it to a non-owner (the ACL operations only).
    pub acl: Option<Perm>,
}

const fn row(op: Op, method: &'static str, query: &'static str) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query,
        others: Refusal::AccessDenied,
        acl: None,
    }
}

const fn policy_row(op: Op, method: &'static str) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query: "policy",
        others: Refusal::MethodNotAllowed,
        acl: None,
    }
}

const fn acl_row(op: Op, method: &'static str, perm: Perm) -> OwnerOnly {
    OwnerOnly {
        op,
        method,
        query: "acl",
        others: Refusal::AccessDenied,
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
    row(Op::ListenBucketNotification, "GET", "events"),
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
