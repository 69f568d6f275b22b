//! Who a bucket policy's statement names (`Principal` / `NotPrincipal`): parsed from the
//! policy's JSON, and matched against the principal of a request (an account's key, an IAM
//! user, a service, an unsigned request).

use serde_json::Value;

use super::{malformed, strings, Who};
use crate::error::S3Result;

/// The principals a statement names.
#[derive(Clone, Debug, Default)]
pub(super) struct Principals {
    pub(super) everyone: bool,
    /// An identity policy's statement: it applies to whoever the policy is attached to.
    pub(super) attached: bool,
    /// Accounts named (`arn:aws:iam::<id>:root` or the bare id; `*`: any): each matches that
    /// account's own key and its IAM users, and no other account's. (Before IAM users every
    /// key of grids3's one account matched any account named; each key is an account now.)
    pub(super) accounts: Vec<String>,
    /// IAM user, role and role-session ARNs named.
    pub(super) user_arns: Vec<String>,
    /// OpenID Connect providers named (`Federated`, trust policies only).
    pub(super) federated: Vec<String>,
    pub(super) keys: Vec<String>,
    pub(super) canonical: Vec<String>,
    /// AWS service principals (`logging.s3.amazonaws.com`): they match only a service's own
    /// requests ([`Who::Service`]), never a key's.
    pub(super) services: Vec<String>,
}

pub(super) fn principals(
    v: &Value,
    key_known: &dyn Fn(&str) -> bool,
    trust: bool,
) -> S3Result<Principals> {
    let bad = || malformed("Invalid principal in policy");
    let mut p = Principals::default();
    match v {
        Value::String(s) if s == "*" => p.everyone = true,
        Value::Object(m) if !m.is_empty() => {
            for (kind, ids) in m {
                for id in strings(ids, "Principal").map_err(|_| bad())? {
                    match kind.as_str() {
                        "AWS" => aws_principal(&id, &mut p, key_known).ok_or_else(bad)?,
                        // A service (`logging.s3.amazonaws.com`, which server access logs
                        // are delivered as): never a key, never an unsigned request.
                        "Service" => {
                            if !id.ends_with(".amazonaws.com") || id.contains(char::is_whitespace) {
                                return Err(bad());
                            }
                            p.services.push(id.to_ascii_lowercase());
                        }
                        // An OpenID Connect provider, in a role's trust policy.
                        "Federated" if trust => {
                            if !id.starts_with("arn:aws:iam::") || !id.contains(":oidc-provider/") {
                                return Err(bad());
                            }
                            p.federated.push(id);
                        }
                        "CanonicalUser" => {
                            if !is_canonical(&id) {
                                return Err(bad());
                            }
                            p.canonical.push(id.to_ascii_lowercase());
                        }
                        _ => return Err(bad()),
                    }
                }
            }
        }
        _ => return Err(bad()),
    }
    Ok(p)
}

fn is_canonical(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

fn is_account(s: &str) -> bool {
    s == "*" || (s.len() == 12 && s.bytes().all(|b| b.is_ascii_digit()))
}

fn aws_principal(id: &str, p: &mut Principals, key_known: &dyn Fn(&str) -> bool) -> Option<()> {
    if id == "*" {
        p.everyone = true;
    } else if is_account(id) {
        p.accounts.push(id.to_owned());
    } else if let Some(rest) = id.strip_prefix("arn:aws:sts::") {
        // A role's session: `arn:aws:sts::<account>:assumed-role/<role>/<session>`.
        let (account, what) = rest.split_once(':')?;
        let parts: Vec<&str> = what.strip_prefix("assumed-role/")?.split('/').collect();
        // No wildcards in a principal's ARN (AWS: "Invalid principal"): one would be stored
        // and never match, so a Deny written with it would deny nothing.
        if !is_account(account)
            || account == "*"
            || parts.len() != 2
            || parts.contains(&"")
            || what.contains(['*', '?'])
        {
            return None;
        }
        p.user_arns.push(id.to_owned());
    } else if let Some(rest) = id.strip_prefix("arn:aws:iam::").filter(|r| {
        r.split_once(':')
            .is_some_and(|(_, w)| w.starts_with("role/"))
    }) {
        // A role: it names every session of the role.
        let (account, what) = rest.split_once(':')?;
        if !is_account(account)
            || account == "*"
            || what.len() <= "role/".len()
            || what.contains(['*', '?'])
        {
            return None;
        }
        p.user_arns.push(id.to_owned());
    } else if let Some(rest) = id.strip_prefix("arn:aws:iam::") {
        let (account, what) = rest.split_once(':')?;
        // An empty account (`arn:aws:iam:::user/<id>`) is how Ceph and other S3 servers
        // write a user of their one account.
        if !(account.is_empty() || is_account(account)) {
            return None;
        }
        if what == "root" {
            // An empty account (Ceph's `arn:aws:iam:::root`) names no account of grids3's.
            p.accounts.push(account.to_owned());
        } else {
            let named = what.strip_prefix("user/")?;
            // An IAM user's ARN: matched as written (AWS matches the user it names now).
            if !account.is_empty() && !named.is_empty() {
                p.user_arns.push(id.to_owned());
            }
            let key = named;
            // IAM user names may carry a path (`user/path/name`): the key is the last part.
            let key = key.rsplit('/').next()?;
            if is_canonical(key) {
                // A user named by its canonical id (what ListBuckets shows as Owner/ID).
                p.canonical.push(key.to_ascii_lowercase());
            } else if key_known(key) {
                p.keys.push(key.to_owned());
            } else if p.user_arns.last().map(String::as_str) != Some(id) {
                return None;
            }
        }
    } else if is_canonical(id) {
        p.canonical.push(id.to_ascii_lowercase());
    } else if key_known(id) {
        p.keys.push(id.to_owned());
    } else {
        return None;
    }
    Some(())
}

impl Principals {
    /// Whether the statement names `who`; `allow`: for an Allow statement (see
    /// [`Who::User::direct_only`]).
    pub(super) fn matches(&self, who: &Who, allow: bool) -> bool {
        if self.attached {
            return !matches!(who, Who::Anonymous);
        }
        match who {
            Who::User {
                arn,
                account,
                direct_only,
                role,
            } => {
                self.everyone
                    || self
                        .user_arns
                        .iter()
                        .any(|a| a == arn || role.as_deref() == Some(a.as_str()))
                    || (!(allow && *direct_only)
                        && self.accounts.iter().any(|a| a == "*" || a == account))
            }
            Who::Anonymous => self.everyone,
            // Only a trust policy names providers; `*` does not reach a web identity (AWS
            // requires the provider to be named).
            Who::Federated(arn) => self.federated.iter().any(|f| f == arn),
            Who::Service(name) => self.everyone || self.services.iter().any(|s| s == name),
            Who::Key {
                id,
                canonical,
                account,
            } => {
                self.everyone
                    || self.accounts.iter().any(|a| a == "*" || a == account)
                    || self.keys.iter().any(|k| k == id)
                    || self.canonical.iter().any(|c| c == canonical)
            }
        }
    }
}
