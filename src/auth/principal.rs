//! IAM users and roles' sessions as principals: the user (or the role and the session's
//! name), its account and its identity policies, parsed (cached by `auth::principal_cache`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use super::policy::{self, IdentityPolicies};
use crate::storage::identity::{Account, Role, User};

/// Who an identity-judged request is made by.
#[derive(Clone, Debug)]
pub enum Kind {
    /// An IAM user (its own keys, its service accounts, its GetSessionToken sessions).
    User(User),
    /// A session of a role (AssumeRole, AssumeRoleWithWebIdentity).
    Role {
        /// The role.
        role: Role,
        /// The session's name (`RoleSessionName`).
        session: String,
    },
}

/// An IAM user, or a role's session, making a request.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The user, or the role and session.
    pub kind: Kind,
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
    /// `arn:aws:iam::<account>:user<path><name>`, or a role's session's
    /// `arn:aws:sts::<account>:assumed-role/<role>/<session>`.
    pub fn arn(&self) -> String {
        match &self.kind {
            Kind::User(u) => u.arn(),
            Kind::Role { role, session } => role.session_arn(session),
        }
    }

    /// The IAM user (`None`: a role's session).
    pub fn user(&self) -> Option<&User> {
        match &self.kind {
            Kind::User(u) => Some(u),
            Kind::Role { .. } => None,
        }
    }

    /// The role's ARN, for a role's session (a policy naming the role names its sessions).
    pub fn role_arn(&self) -> Option<String> {
        match &self.kind {
            Kind::User(_) => None,
            Kind::Role { role, .. } => Some(role.arn()),
        }
    }

    /// `aws:userid`: the user's unique id, or `<role id>:<session>` as AWS writes a role
    /// session's.
    pub fn user_id(&self) -> String {
        match &self.kind {
            Kind::User(u) => u.id.clone(),
            Kind::Role { role, session } => format!("{}:{session}", role.id),
        }
    }

    /// The principal as a policy sees it (`direct_only`: see [`Who::User`]).
    pub fn who(&self, direct_only: bool) -> policy::Who {
        policy::Who::User {
            arn: self.arn(),
            account: self.account.id.clone(),
            direct_only,
            role: self.role_arn(),
        }
    }

    /// Adds the principal's condition keys (lower-case names): `aws:username` (a user's
    /// name; a role's session has none, as on AWS), `aws:userid`, `aws:PrincipalArn` (a
    /// session's is its role's ARN, as AWS sets it), `aws:PrincipalAccount`,
    /// `aws:PrincipalType` (`User` or `AssumedRole`) and `aws:PrincipalTag/<key>` (the
    /// user's or the role's tags), replacing what the request's key alone gave.
    pub fn add_condition_values(&self, v: &mut HashMap<String, Vec<String>>) {
        let (tags, kind) = match &self.kind {
            Kind::User(u) => {
                v.insert("aws:username".into(), vec![u.name.clone()]);
                v.insert("aws:principalarn".into(), vec![u.arn()]);
                (&u.tags, "User")
            }
            Kind::Role { role, .. } => {
                v.remove("aws:username");
                v.insert("aws:principalarn".into(), vec![role.arn()]);
                (&role.tags, "AssumedRole")
            }
        };
        v.insert("aws:userid".into(), vec![self.user_id()]);
        v.insert("aws:principalaccount".into(), vec![self.account.id.clone()]);
        v.insert("aws:principaltype".into(), vec![kind.into()]);
        for (k, val) in tags {
            v.insert(
                format!("aws:principaltag/{}", k.to_ascii_lowercase()),
                vec![val.clone()],
            );
        }
    }

    pub(super) fn from_effective(e: crate::storage::identity::Effective) -> Principal {
        Principal {
            account: Account {
                key: e.user.account_key.clone(),
                id: e.user.account.clone(),
            },
            groups: e.groups.into_iter().map(|g| g.name).collect(),
            policies: parsed(&e.user.id, e.policies),
            kind: Kind::User(e.user),
        }
    }

    /// A session named `session` of `role`, whose identity policies are `policies`.
    pub(super) fn of_role(role: Role, session: &str, policies: Vec<(String, String)>) -> Self {
        Principal {
            account: Account {
                key: role.account_key.clone(),
                id: role.account.clone(),
            },
            groups: Vec::new(),
            policies: parsed(&role.id, policies),
            kind: Kind::Role {
                role,
                session: session.to_owned(),
            },
        }
    }
}

/// Stored identity policies, parsed; one that no longer parses denies everything.
fn parsed(owner: &str, texts: Vec<(String, String)>) -> IdentityPolicies {
    let policies = texts
        .into_iter()
        .map(|(label, text)| {
            let p = match policy::parse_identity(&text) {
                Ok(p) => Arc::new(p),
                Err(err) => {
                    tracing::error!(owner, policy = %label, error = %err.message, "a stored identity policy does not parse; it denies everything");
                    deny_all()
                }
            };
            (label, p)
        })
        .collect();
    IdentityPolicies { policies }
}
