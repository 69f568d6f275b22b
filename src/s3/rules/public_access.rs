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
}
