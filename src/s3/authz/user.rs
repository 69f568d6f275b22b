//! The IAM user's side of an authorization: its principal (cached, see `auth::principal`),
//! whether the bucket is its account's, its role through admin API grants, and its identity
//! policies' verdicts. `s3::rules::identity` joins them with the bucket's side.

use std::collections::HashMap;
use std::sync::Arc;

use crate::auth::policy::{self, Verdict, Who};
use crate::auth::principal::Principal;
use crate::auth::Auth;
use crate::error::S3Result;
use crate::s3::actions::resource;
use crate::s3::op::Op;
use crate::s3::request::access::Access;

use super::{who, Target};
use crate::s3::rules::authz::{role_on, Role};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

/// An IAM user's request on one bucket.
#[derive(Clone)]
pub struct UserCtx {
    /// The user, its account and policies.
    pub principal: Arc<Principal>,
    /// Whether the bucket belongs to the user's account.
    pub same_account: bool,
}

impl UserCtx {
    /// The user behind `auth` (`None`: not a user's key), or `Err(())` when the user no
    /// longer exists.
    pub async fn of(st: &AppState, auth: &Auth) -> S3Result<Option<Result<Arc<Principal>, ()>>> {
        let Some(u) = &auth.user else {
            return Ok(None);
        };
        Ok(Some(st.creds.principal_of(u).await?.ok_or(())))
    }

    /// On bucket `b`.
    pub fn on(principal: Arc<Principal>, b: &BucketInfo) -> Self {
        UserCtx {
            same_account: b.owner == principal.account.key,
            principal,
        }
    }

    /// The user as a bucket policy sees it (`direct_only`: only Allows naming the user).
    pub fn who(&self, direct_only: bool) -> Who {
        self.principal.who(direct_only)
    }

    /// The identity policies' verdict on `action` over `resource`, and what decided it.
    pub fn identity(
        &self,
        action: &'static str,
        resource: &str,
        values: &HashMap<String, Vec<String>>,
    ) -> policy::IdentityVerdict {
        self.principal.policies.evaluate(&policy::Context {
            who: self.who(false),
            action,
            resource: resource.to_owned(),
            values: values.clone(),
        })
    }

    /// The role admin API grants give on the bucket's side: a grant to the user's own key;
    /// across accounts also one to its account's key (as an ACL grant to the account reaches
    /// its users there). Never the ownership of its own account's bucket: that is the
    /// account's, and reaches users only through identity policies.
    pub fn role(&self, auth: &Auth, b: &BucketInfo) -> Option<Role> {
        let own = role_on(auth, b);
        if self.same_account {
            return own;
        }
        let account = b
            .grants
            .iter()
            .find(|(k, _)| *k == self.principal.account.key)
            .and_then(|(_, r)| Role::parse(r));
        own.max(account)
    }

    /// Whether a stored identity policy reads `s3:ExistingObjectTag/...`.
    pub fn needs_object_tags(&self) -> bool {
        self.principal
            .policies
            .policies
            .iter()
            .any(|(_, p)| p.needs_object_tags())
    }
}

/// ListBuckets and CreateBucket for an IAM user: its identity policies must allow
/// `s3:ListAllMyBuckets` (on `arn:aws:s3:::*`) or `s3:CreateBucket` (on the bucket), as AWS
/// requires; an account's own key may, as before.
pub(super) async fn account_level(
    st: &AppState,
    op: &Op,
    auth: &Auth,
    t: &Target<'_>,
) -> S3Result<Access> {
    let (action, res) = match op {
        Op::ListBuckets => ("s3:ListAllMyBuckets", "arn:aws:s3:::*".to_owned()),
        Op::CreateBucket => ("s3:CreateBucket", resource(t.bucket, None)),
        _ => return Ok(Access::Granted),
    };
    let sessions_allow = |who: Who, values: HashMap<String, Vec<String>>| {
        crate::auth::session::allows(
            &auth.sessions,
            &policy::Context {
                who,
                action,
                resource: res.clone(),
                values,
            },
        )
    };
    let p = match UserCtx::of(st, auth).await? {
        None => {
            return Ok(if sessions_allow(who(auth), t.facts.clone()) {
                Access::Granted
            } else {
                Access::Denied
            })
        }
        Some(Err(())) => return Ok(Access::Denied),
        Some(Ok(p)) => p,
    };
    let mut values = t.facts.clone();
    p.add_condition_values(&mut values);
    let who = p.who(false);
    if !sessions_allow(who.clone(), values.clone()) {
        return Ok(Access::Denied);
    }
    let v = p.policies.evaluate(&policy::Context {
        who,
        action,
        resource: res.clone(),
        values,
    });
    Ok(if v.verdict == Verdict::Allow {
        Access::Granted
    } else {
        Access::Denied
    })
}
