//! IAM users as principals: the user, its account and its identity policies, parsed (cached
//! per user by `auth::principal_cache`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::policy::{self, IdentityPolicies};
use crate::storage::identity::{Account, User};

/// An IAM user making a request.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The user.
    pub user: User,
    /// Its account.
    pub account: Account,
    /// The names of its groups.
    pub groups: Vec<String>,
    /// Every identity policy that applies to it.
    pub policies: IdentityPolicies,
}

/// Cached principals by user id: the principal (`None`: no such user), the epoch it was read
/// under, and when.
pub(super) type Principals = HashMap<String, (Option<Arc<Principal>>, u64, Instant)>;

/// A policy that denies everything: what a stored policy that no longer parses stands for
/// (failing closed; it was valid when stored).
fn deny_all() -> Arc<policy::Policy> {
    Arc::new(
        policy::parse_identity(
            r#"{"Version":"2012-10-17","Statement":{"Effect":"Deny","Action":"*","Resource":"*"}}"#,
        )
        .expect("valid"),
    )
}

impl Principal {
    /// `arn:aws:iam::<account>:user<path><name>`.
    pub fn arn(&self) -> String {
        self.user.arn()
    }

    /// Adds the principal's condition keys (lower-case names): `aws:username` (the user's
    /// name), `aws:userid` (its unique id), `aws:PrincipalArn`, `aws:PrincipalAccount`,
    /// `aws:PrincipalType` (`User`) and `aws:PrincipalTag/<key>`, replacing what the
    /// request's key alone gave.
    pub fn add_condition_values(&self, v: &mut HashMap<String, Vec<String>>) {
        v.insert("aws:username".into(), vec![self.user.name.clone()]);
        v.insert("aws:userid".into(), vec![self.user.id.clone()]);
        v.insert("aws:principalarn".into(), vec![self.arn()]);
        v.insert("aws:principalaccount".into(), vec![self.account.id.clone()]);
        v.insert("aws:principaltype".into(), vec!["User".into()]);
        for (k, val) in &self.user.tags {
            v.insert(
                format!("aws:principaltag/{}", k.to_ascii_lowercase()),
                vec![val.clone()],
            );
        }
    }

    pub(super) fn from_effective(e: crate::storage::identity::Effective) -> Principal {
        let policies = e
            .policies
            .into_iter()
            .map(|(label, text)| {
                let p = match policy::parse_identity(&text) {
                    Ok(p) => Arc::new(p),
                    Err(err) => {
                        tracing::error!(user = %e.user.id, policy = %label, error = %err.message, "a stored identity policy does not parse; it denies everything");
                        deny_all()
                    }
                };
                (label, p)
            })
            .collect();
        Principal {
            account: Account {
                key: e.user.account_key.clone(),
                id: e.user.account.clone(),
            },
            groups: e.groups.into_iter().map(|g| g.name).collect(),
            user: e.user,
            policies: IdentityPolicies { policies },
        }
    }
}
