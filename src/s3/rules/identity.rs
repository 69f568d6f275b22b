//! How an IAM user's identity policies join the decision, as AWS's policy evaluation logic
//! has it for S3:
//!
//! - an explicit Deny in any applicable policy (identity or bucket) refuses;
//! - **within the bucket's own account**, an Allow in the user's identity policies suffices,
//!   and so does a bucket-policy Allow that names the user itself (or everyone), or an admin
//!   API grant to the user's own key; a bucket policy that names only the account delegates
//!   to the identity policies and allows nothing by itself, and the account's ACL grants do
//!   not reach its users;
//! - **across accounts**, the identity policies must allow it **and** the bucket's side
//!   (its policy naming the user or its account, its ACL, an admin API grant) must allow it:
//!   the resource-side decision made for the user's account as for any other key.
//!
//! Pure: the facts are gathered by `s3::authz`.

use crate::auth::policy::Verdict;
use crate::s3::request::access::Access;

/// The facts about one IAM user's request, besides the resource-side decision.
#[derive(Clone, Copy, Debug)]
pub struct UserFacts {
    /// The identity policies' verdict on the request's action and resource.
    pub identity: Verdict,
    /// The identity policies' verdict on listing the bucket (`s3:ListBucket` with the key as
    /// the prefix), for 404 against 403 on a missing key.
    pub identity_list: Verdict,
    /// Whether the bucket belongs to the user's account.
    pub same_account: bool,
    /// The bucket policy's verdict counting only Allows that name the user (or everyone);
    /// Denies that name its account count too.
    pub policy_direct: Verdict,
    /// The bucket policy's verdict on listing, counted the same way.
    pub policy_direct_list: Verdict,
    /// Whether an admin API grant to the user's own key gives the role the operation needs.
    pub role_allows: bool,
    /// Whether the operation addresses one existing object (a missing key is 404 or 403).
    pub object_op: bool,
}

/// The decision for an IAM user: `resource` is the decision the bucket's side makes for the
/// user's account (policy Allows naming the account count there), `f` the rest.
pub fn decide_user(resource: (Access, &'static str), f: &UserFacts) -> (Access, &'static str) {
    if f.identity == Verdict::Deny {
        return (Access::Denied, "an explicit Deny in an identity policy");
    }
    if f.policy_direct == Verdict::Deny {
        return (Access::Denied, "an explicit Deny in the bucket policy");
    }
    if f.same_account {
        let allowed =
            f.identity == Verdict::Allow || f.policy_direct == Verdict::Allow || f.role_allows;
        if !allowed {
            return (
                Access::Denied,
                "within the account: no identity policy allows it, and the bucket policy does not name the user",
            );
        }
        let may_list = f.identity_list == Verdict::Allow
            || f.policy_direct_list == Verdict::Allow
            || f.role_allows;
        return if f.object_op && !may_list {
            (
                Access::GrantedUnlisted,
                "within the account, allowed (a missing key is 403: no s3:ListBucket)",
            )
        } else {
            (
                Access::Granted,
                if f.identity == Verdict::Allow {
                    "within the account: an identity policy allows it"
                } else {
                    "within the account: the bucket policy or a grant names the user"
                },
            )
        };
    }
    if f.identity != Verdict::Allow {
        return (
            Access::Denied,
            "across accounts: no identity policy of the user allows it",
        );
    }
    match resource.0 {
        Access::Denied | Access::MethodNotAllowed => resource,
        _ => (
            resource.0,
            "across accounts: an identity policy and the bucket's side allow it",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Allow, Deny, Silent};

    fn facts(identity: Verdict, same_account: bool, policy_direct: Verdict) -> UserFacts {
        UserFacts {
            identity,
            identity_list: identity,
            same_account,
            policy_direct,
            policy_direct_list: policy_direct,
            role_allows: false,
            object_op: false,
        }
    }

    const RES_OK: (Access, &str) = (Access::Granted, "resource");
    const RES_NO: (Access, &str) = (Access::Denied, "resource");

    /// AWS's documented cases, one row each: (identity, same account, bucket policy naming
    /// the user, resource side for the account) -> granted?
    #[test]
    fn aws_evaluation_table() {
        let rows = [
            // An identity Allow alone suffices within the account.
            (Allow, true, Silent, RES_NO, true),
            // A bucket-policy Allow naming the user alone suffices within the account.
            (Silent, true, Allow, RES_NO, true),
            // Nothing within the account: refused, whatever the account's side says (a
            // policy naming only the account, the owner's ACL).
            (Silent, true, Silent, RES_OK, false),
            // Across accounts both are needed.
            (Allow, false, Silent, RES_OK, true),
            (Allow, false, Silent, RES_NO, false),
            (Silent, false, Allow, RES_OK, false),
            // A Deny anywhere wins.
            (Deny, true, Allow, RES_OK, false),
            (Allow, true, Deny, RES_OK, false),
            (Deny, false, Silent, RES_OK, false),
        ];
        for (i, (identity, same, direct, res, want)) in rows.into_iter().enumerate() {
            let got = decide_user(res, &facts(identity, same, direct)).0;
            assert_eq!(
                matches!(got, Access::Granted | Access::GrantedUnlisted),
                want,
                "row {i}: {got:?}"
            );
        }
    }

    #[test]
    fn a_grant_to_the_users_own_key_counts_within_the_account() {
        let mut f = facts(Silent, true, Silent);
        f.role_allows = true;
        assert_eq!(decide_user(RES_NO, &f).0, Access::Granted);
    }

    #[test]
    fn without_listing_a_missing_object_is_403() {
        let mut f = facts(Allow, true, Silent);
        f.identity_list = Silent;
        f.object_op = true;
        assert_eq!(decide_user(RES_NO, &f).0, Access::GrantedUnlisted);
        f.identity_list = Allow;
        assert_eq!(decide_user(RES_NO, &f).0, Access::Granted);
    }

    #[test]
    fn across_accounts_the_resource_side_keeps_its_own_answer() {
        let r = (Access::MethodNotAllowed, "owner-only");
        assert_eq!(
            decide_user(r, &facts(Allow, false, Silent)).0,
            Access::MethodNotAllowed
        );
    }
}
