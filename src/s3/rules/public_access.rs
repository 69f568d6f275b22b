//! Block Public Access decisions: the configuration in force, what is public, and which ACLs
//! it refuses.

use crate::error::{S3Error, S3Result};
use crate::model::PublicAccessBlock;
use crate::s3::request::grants::{Grant, Grantee};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

/// The configuration in force for a bucket: its own, else the server's.
pub fn effective(st: &AppState, b: &BucketInfo) -> PublicAccessBlock {
    b.public_access_block
        .or(st.config.block_public_access)
        .unwrap_or_default()
}

/// Whether a grant makes what it is on public (AWS counts AuthenticatedUsers as public too).
pub fn is_public(g: &Grant) -> bool {
    matches!(g.grantee, Grantee::AllUsers | Grantee::AuthenticatedUsers)
}

/// Refuses a public ACL where `BlockPublicAcls` is on.
pub fn check_acl(pab: PublicAccessBlock, acl: Option<&[Grant]>) -> S3Result<()> {
    if pab.block_public_acls && acl.is_some_and(|a| a.iter().any(is_public)) {
        return Err(S3Error::access_denied()
            .with_message("Access Denied: Block Public Access (BlockPublicAcls) refuses public ACLs on this bucket"));
    }
    Ok(())
}

/// The facts that decide what of a bucket anyone may reach without a key of the bucket's
/// owner: the public statements of its policy ([`crate::auth::policy::Policy::public_grants`]),
/// the public grants of its ACL (in words), whether ACLs are in force (not
/// `BucketOwnerEnforced`), and the Block Public Access configuration in force ([`effective`]).
#[derive(Clone, Debug, Default)]
pub struct Exposure {
    /// The policy's public statements, in words.
    pub policy: Vec<String>,
    /// The ACL's grants to AllUsers or AuthenticatedUsers, in words.
    pub acl: Vec<String>,
    /// ACLs are in force (ownership is not `BucketOwnerEnforced`).
    pub acls_enabled: bool,
    /// Block Public Access in force.
    pub pab: PublicAccessBlock,
}

/// What the facts make public, each in words, as the authorization treats them:
/// `RestrictPublicBuckets` keeps a public policy from anonymous callers and
/// `IgnorePublicAcls` (or ACLs disabled) a public ACL. (GetBucketPolicyStatus reports a public
/// policy whatever `RestrictPublicBuckets` says, as AWS does; this is what takes effect.)
pub fn exposed(e: &Exposure) -> Vec<String> {
    let mut out = Vec::new();
    if !e.pab.restrict_public_buckets {
        out.extend(e.policy.iter().map(|p| format!("bucket policy: {p}")));
    }
    if e.acls_enabled && !e.pab.ignore_public_acls {
        out.extend(e.acl.iter().map(|g| format!("bucket ACL: {g}")));
    }
    out
}

/// What a change from `before` to `after` makes public that was not before (empty: nothing).
pub fn newly_exposed(before: &Exposure, after: &Exposure) -> Vec<String> {
    let was = exposed(before);
    exposed(after)
        .into_iter()
        .filter(|x| !was.contains(x))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::public_access::parse_flags;
    use crate::s3::request::grants::{canned, Perm};

    #[test]
    fn flags_and_public_acls() {
        let all = parse_flags("all").unwrap();
        assert!(all.block_public_acls && all.restrict_public_buckets);
        let some = parse_flags("BlockPublicPolicy, ignorePublicAcls").unwrap();
        assert!(some.block_public_policy && some.ignore_public_acls && !some.block_public_acls);
        assert!(parse_flags("everything").is_err());
        let public = canned("public-read", true).unwrap();
        let auth = canned("authenticated-read", true).unwrap();
        let user = vec![Grant::new(Grantee::User("a".repeat(64)), Perm::Read)];
        assert_eq!(
            check_acl(all, Some(&public)).unwrap_err().code,
            "AccessDenied"
        );
        assert_eq!(
            check_acl(all, Some(&auth)).unwrap_err().code,
            "AccessDenied"
        );
        assert!(check_acl(all, Some(&user)).is_ok());
        assert!(check_acl(all, None).is_ok());
        assert!(check_acl(some, Some(&public)).is_ok());
    }

    #[test]
    fn what_a_change_makes_public() {
        let read = || vec!["everyone may s3:GetObject on arn:aws:s3:::b/*".to_owned()];
        let none = Exposure {
            acls_enabled: true,
            ..Exposure::default()
        };
        let with_policy = Exposure {
            policy: read(),
            ..none.clone()
        };
        let restricted = Exposure {
            pab: parse_flags("RestrictPublicBuckets").unwrap(),
            ..with_policy.clone()
        };
        let public_acl = Exposure {
            acl: vec!["READ to everyone (AllUsers)".to_owned()],
            ..none.clone()
        };
        let cases = [
            // (before, after, newly public)
            (&none, &none, 0),
            (&none, &with_policy, 1),
            (&with_policy, &with_policy, 0),
            (&none, &restricted, 0),
            (&restricted, &with_policy, 1),
            (&with_policy, &none, 0),
            (&none, &public_acl, 1),
        ];
        for (i, (before, after, n)) in cases.into_iter().enumerate() {
            assert_eq!(newly_exposed(before, after).len(), n, "case {i}");
        }
        assert_eq!(
            newly_exposed(&none, &with_policy),
            ["bucket policy: everyone may s3:GetObject on arn:aws:s3:::b/*"]
        );
        // A public ACL counts only while ACLs are in force and not ignored.
        let enforced = Exposure {
            acls_enabled: false,
            ..public_acl.clone()
        };
        assert!(exposed(&enforced).is_empty());
        let ignored = Exposure {
            pab: parse_flags("IgnorePublicAcls").unwrap(),
            ..public_acl.clone()
        };
        assert!(exposed(&ignored).is_empty());
        assert_eq!(newly_exposed(&enforced, &public_acl).len(), 1);
    }
}
