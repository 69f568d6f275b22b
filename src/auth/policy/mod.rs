//! Bucket policies: the IAM policy language as S3 bucket policies use it, parsed and validated
//! once (`parse`) and evaluated as a pure function of a request's [`Context`] (`evaluate`):
//! an explicit Deny wins, then an Allow, else the policy says nothing.
//!
//! Principals, as grids3 maps them (it has one account and access keys, no IAM users):
//! - `"*"` or `{"AWS": "*"}`: everyone, unsigned requests included;
//! - `{"AWS": "<access key id>"}`, `{"AWS": "arn:aws:iam::<account>:user/<access key id>"}`,
//!   `{"CanonicalUser": "<canonical id>"}` (or the canonical id under `AWS`): that key;
//! - `{"AWS": "arn:aws:iam::<account>:root"}` or `{"AWS": "<account>"}` (12 digits): every key
//!   (grids3's keys all belong to its one account; `<account>` may be any 12 digits, or empty
//!   in the ARN, as Ceph writes it);
//! - `{"AWS": "arn:aws:iam::<account>:user/<canonical id>"}`: the key with that canonical id;
//! - `{"Service": "<name>.amazonaws.com"}`: that service acting for grids3 (server access
//!   log delivery is `logging.s3.amazonaws.com`), never a key or an unsigned request.
//!
//! Condition keys are those of the request ([`Context::values`]); a key the request does not
//! have makes a condition false, except for negated operators (true), `...IfExists` (true) and
//! `Null`, as AWS documents.

mod condition;
mod identity;
mod principal;

use principal::{principals, Principals};

pub use identity::{IdentityPolicies, IdentityVerdict};

use std::collections::HashMap;

use serde_json::Value;

use crate::error::{S3Error, S3Result};

/// Largest policy document, as in S3 (20 KiB).
pub const MAX_POLICY_BYTES: usize = 20 * 1024;

/// The actions grids3 knows (every S3 action a bucket policy may name about its operations).
pub const ACTIONS: &[&str] = &[
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:ListBucketMultipartUploads",
    "s3:GetBucketLocation",
    "s3:GetBucketVersioning",
    "s3:PutBucketVersioning",
    "s3:GetObjectRetention",
    "s3:PutObjectRetention",
    "s3:GetObjectLegalHold",
    "s3:PutObjectLegalHold",
    "s3:PutBucketObjectLockConfiguration",
    "s3:BypassGovernanceRetention",
    "s3:GetObjectVersionTagging",
    "s3:PutObjectVersionTagging",
    "s3:DeleteObjectVersionTagging",
    "s3:GetObjectVersionAcl",
    "s3:PutObjectVersionAcl",
    "s3:GetObjectVersionAttributes",
    "s3:GetObject",
    "s3:GetObjectVersion",
    "s3:GetObjectAttributes",
    "s3:GetObjectTagging",
    "s3:PutObjectTagging",
    "s3:DeleteObjectTagging",
    "s3:PutObject",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:AbortMultipartUpload",
    "s3:ListMultipartUploadParts",
    "s3:GetObjectAcl",
    "s3:PutObjectAcl",
    "s3:GetBucketAcl",
    "s3:PutBucketAcl",
    "s3:GetBucketCORS",
    "s3:PutBucketCORS",
    "s3:GetBucketTagging",
    "s3:PutBucketTagging",
    "s3:DeleteBucket",
    "s3:GetBucketPolicy",
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:GetBucketPolicyStatus",
    "s3:GetBucketPublicAccessBlock",
    "s3:PutBucketPublicAccessBlock",
    "s3:GetBucketOwnershipControls",
    "s3:PutBucketOwnershipControls",
    "s3:GetBucketWebsite",
    "s3:GetReplicationConfiguration",
    "s3:GetLifecycleConfiguration",
    "s3:PutLifecycleConfiguration",
    "s3:GetEncryptionConfiguration",
    "s3:PutEncryptionConfiguration",
    "s3:GetBucketObjectLockConfiguration",
    "s3:GetBucketLogging",
    "s3:PutBucketLogging",
    "s3:GetObjectTorrent",
    "s3:GetObjectVersionTorrent",
    "s3:GetBucketNotification",
    "s3:GetAccelerateConfiguration",
    "s3:GetBucketRequestPayment",
    "s3:GetAnalyticsConfiguration",
    "s3:GetMetricsConfiguration",
    "s3:GetInventoryConfiguration",
    "s3:GetIntelligentTieringConfiguration",
];

/// Who makes a request, for a policy.
#[derive(Clone, Debug)]
pub enum Who {
    /// An unsigned request.
    Anonymous,
    /// An account's own key (its root credentials): its id, canonical user id and 12-digit
    /// account id.
    Key {
        /// Access key id.
        id: String,
        /// Canonical user id.
        canonical: String,
        /// The account's 12-digit id (`storage::identity::account_id`).
        account: String,
    },
    /// An AWS service principal acting for grids3 itself (`logging.s3.amazonaws.com`).
    Service(String),
    /// An IAM user of an account, or a session of one of its roles.
    User {
        /// `arn:aws:iam::<account>:user/<path><name>`, or a role's session's
        /// `arn:aws:sts::<account>:assumed-role/<role>/<session>`.
        arn: String,
        /// The 12-digit account id.
        account: String,
        /// Whether an Allow must name the user itself (or everyone) to count: within the
        /// bucket's own account, a bucket policy that names the account only delegates to
        /// the account's identity policies, as AWS evaluates it. Deny statements that name
        /// the account bind the user either way.
        direct_only: bool,
        /// A role's session: the role's ARN, which names every session of the role.
        role: Option<String>,
    },
    /// Whoever an OpenID Connect provider vouches for (AssumeRoleWithWebIdentity): the
    /// provider's ARN (`arn:aws:iam::<account>:oidc-provider/<host/path>`).
    Federated(String),
}

/// What a policy is evaluated against.
#[derive(Clone, Debug)]
pub struct Context {
    /// The principal.
    pub who: Who,
    /// The action (`s3:GetObject`).
    pub action: &'static str,
    /// The resource ARN (`arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`).
    pub resource: String,
    /// Condition keys (lower-case names) and their values.
    pub values: HashMap<String, Vec<String>>,
}

/// A policy's verdict on a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A statement denies it.
    Deny,
    /// A statement allows it and none denies it.
    Allow,
    /// No statement applies.
    Silent,
}

/// A parsed, validated policy.
#[derive(Clone, Debug)]
pub struct Policy {
    statements: Vec<Statement>,
}

#[derive(Clone, Debug)]
struct Statement {
    /// `Sid`, or `#<n>` (1-based) when it has none: how an explanation names it.
    sid: String,
    /// Whether policy variables (`${aws:username}`) are replaced: only in a policy of
    /// `Version: 2012-10-17`, as AWS has it; in any other they are plain text.
    variables: bool,
    allow: bool,
    principals: Principals,
    not_principal: bool,
    actions: Vec<String>,
    not_action: bool,
    resources: Vec<String>,
    not_resource: bool,
    conditions: Vec<condition::Condition>,
}

impl Statement {
    /// An Allow to everyone (or through NotPrincipal) that no condition pins to a source.
    fn is_public(&self) -> bool {
        self.allow
            && (self.principals.everyone || self.not_principal)
            && !self
                .conditions
                .iter()
                .any(condition::Condition::restricts_source)
    }
}

fn malformed(msg: impl Into<String>) -> S3Error {
    S3Error::malformed_policy().with_message(msg)
}

/// One string or an array of strings.
fn strings(v: &Value, what: &str) -> S3Result<Vec<String>> {
    match v {
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .map(|x| {
                x.as_str().map(str::to_owned).ok_or_else(|| {
                    malformed(format!("{what} must be a string or an array of strings"))
                })
            })
            .collect(),
        _ => Err(malformed(format!(
            "{what} must be a string or a non-empty array of strings"
        ))),
    }
}

/// What a policy document is for.
#[derive(Clone, Copy)]
enum Kind<'a> {
    /// A bucket's policy: principals named, resources within the bucket, S3 actions.
    Bucket {
        bucket: &'a str,
        key_known: &'a dyn Fn(&str) -> bool,
    },
    /// An identity policy (attached to a user or group, inline or managed): no principal,
    /// any resource ARN, any service's actions.
    Identity,
    /// A role's trust policy (`AssumeRolePolicyDocument`): principals named (accounts, users,
    /// roles, OpenID Connect providers as `Federated`), STS's actions, no resource (the role
    /// is the resource).
    Trust,
}

/// Parses and validates a bucket policy for `bucket`. `key_known` says whether an access key
/// id exists (principals must name existing keys, as AWS requires principals to exist).
pub fn parse(text: &str, bucket: &str, key_known: &dyn Fn(&str) -> bool) -> S3Result<Policy> {
    if text.len() > MAX_POLICY_BYTES {
        return Err(malformed("Policies must be smaller than 20 KB"));
    }
    parse_kind(text, Kind::Bucket { bucket, key_known })
}

/// Parses and validates an identity policy (IAM's size quotas are the caller's: they differ
/// by where the policy is attached).
pub fn parse_identity(text: &str) -> S3Result<Policy> {
    parse_kind(text, Kind::Identity)
}

/// Parses and validates a role's trust policy.
pub fn parse_trust(text: &str) -> S3Result<Policy> {
    parse_kind(text, Kind::Trust)
}

fn parse_kind(text: &str, kind: Kind<'_>) -> S3Result<Policy> {
    let v: Value = serde_json::from_str(text)
        .map_err(|_| malformed("Policies must be valid JSON and the first byte must be '{'"))?;
    let obj = v
        .as_object()
        .ok_or_else(|| malformed("Policies must be valid JSON and the first byte must be '{'"))?;
    for k in obj.keys() {
        if !matches!(k.as_str(), "Version" | "Id" | "Statement") {
            return Err(malformed(format!("Unknown field {k}")));
        }
    }
    if let Some(ver) = obj.get("Version") {
        if !matches!(ver.as_str(), Some("2012-10-17" | "2008-10-17")) {
            return Err(malformed("The policy must contain a valid version string"));
        }
    }
    let variables = obj.get("Version").and_then(Value::as_str) == Some("2012-10-17");
    let stmts = match obj.get("Statement") {
        Some(Value::Array(a)) if !a.is_empty() => a.clone(),
        Some(o @ Value::Object(_)) => vec![o.clone()],
        Some(_) => {
            return Err(malformed(
                "Statement must be an object or a non-empty array",
            ))
        }
        None => return Err(malformed("Missing required field Statement")),
    };
    let statements = stmts
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut st = statement(s, kind)?;
            if st.sid.is_empty() {
                st.sid = format!("#{}", i + 1);
            }
            st.variables = variables;
            for c in &mut st.conditions {
                c.literal = !variables;
            }
            Ok(st)
        })
        .collect::<S3Result<Vec<_>>>()?;
    Ok(Policy { statements })
}

/// An action as an identity policy may name it: `*`, or `<service>:<action>` where the
/// action may hold wildcards (AWS accepts services and actions it does not know; they match
/// nothing).
fn identity_action(a: &str) -> bool {
    a == "*"
        || a.split_once(':').is_some_and(|(svc, act)| {
            !svc.is_empty()
                && svc.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !act.is_empty()
                && act
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'*' | b'?' | b'-' | b'_'))
        })
}

fn statement(v: &Value, kind: Kind<'_>) -> S3Result<Statement> {
    let o = v
        .as_object()
        .ok_or_else(|| malformed("Each statement must be an object"))?;
    for k in o.keys() {
        if !matches!(
            k.as_str(),
            "Sid"
                | "Effect"
                | "Principal"
                | "NotPrincipal"
                | "Action"
                | "NotAction"
                | "Resource"
                | "NotResource"
                | "Condition"
        ) {
            return Err(malformed(format!("Unknown field {k}")));
        }
    }
    let allow = match o.get("Effect").and_then(Value::as_str) {
        Some("Allow") => true,
        Some("Deny") => false,
        Some(e) => return Err(malformed(format!("Invalid effect: {e}"))),
        None => return Err(malformed("Missing required field Effect")),
    };
    let one_of = |a: &str, b: &str| -> S3Result<(&Value, bool)> {
        match (o.get(a), o.get(b)) {
            (Some(v), None) => Ok((v, false)),
            (None, Some(v)) => Ok((v, true)),
            (None, None) => Err(malformed(format!("Missing required field {a}"))),
            (Some(_), Some(_)) => Err(malformed(format!("{a} and {b} cannot both be given"))),
        }
    };
    let (principals, not_principal) = match kind {
        Kind::Bucket { key_known, .. } => {
            let (p, not_principal) = one_of("Principal", "NotPrincipal")?;
            (principals(p, key_known, false)?, not_principal)
        }
        Kind::Trust => {
            // AWS: NotPrincipal "cannot be used in an IAM role trust policy" (an Allow with
            // it would open the role to every account but the ones named).
            if o.contains_key("NotPrincipal") {
                return Err(malformed(
                    "NotPrincipal cannot be used in a role's trust policy",
                ));
            }
            let p = o
                .get("Principal")
                .ok_or_else(|| malformed("Missing required field Principal"))?;
            (principals(p, &|_| false, true)?, false)
        }
        Kind::Identity => {
            if o.contains_key("Principal") || o.contains_key("NotPrincipal") {
                return Err(malformed("Policy document should not specify a principal."));
            }
            (
                Principals {
                    attached: true,
                    ..Principals::default()
                },
                false,
            )
        }
    };
    let (a, not_action) = one_of("Action", "NotAction")?;
    let actions = strings(a, "Action")?;
    for act in &actions {
        let known = match kind {
            Kind::Identity => identity_action(act),
            // AWS accepts any action in a trust policy; only STS's ever match.
            Kind::Trust => identity_action(act),
            Kind::Bucket { .. } => {
                act == "*"
                    || act.eq_ignore_ascii_case("s3:*")
                    || (act.len() > 3
                        && act[..3].eq_ignore_ascii_case("s3:")
                        && (act.contains(['*', '?'])
                            || ACTIONS.iter().any(|k| k.eq_ignore_ascii_case(act))))
            }
        };
        if !known {
            return Err(malformed(format!("Policy has invalid action: {act}")));
        }
    }
    let (resources, not_resource) = if let Kind::Trust = kind {
        // The role is the resource: AWS refuses one named ("Has prohibited field Resource").
        if o.contains_key("Resource") || o.contains_key("NotResource") {
            return Err(malformed("Has prohibited field Resource"));
        }
        (vec!["*".to_owned()], false)
    } else {
        let (r, not_resource) = one_of("Resource", "NotResource")?;
        (strings(r, "Resource")?, not_resource)
    };
    for res in &resources {
        let ok = match kind {
            // Any ARN (of any service), or every resource.
            Kind::Identity | Kind::Trust => res == "*" || res.starts_with("arn:"),
            // A bucket's policy may only speak of that bucket and its objects.
            Kind::Bucket { bucket, .. } => {
                let own = format!("arn:aws:s3:::{bucket}");
                res == "*"
                    || res == &own
                    || res
                        .strip_prefix(&own)
                        .is_some_and(|rest| rest.starts_with('/'))
                    || (res.starts_with("arn:aws:s3:::")
                        && glob(&res["arn:aws:s3:::".len()..], bucket, false))
            }
        };
        if !ok {
            return Err(malformed(format!("Policy has invalid resource: {res}")));
        }
    }
    let conditions = match o.get("Condition") {
        None => Vec::new(),
        Some(c) => condition::parse(c)?,
    };
    Ok(Statement {
        sid: o
            .get("Sid")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        variables: true,
        allow,
        principals,
        not_principal,
        actions,
        not_action,
        resources,
        not_resource,
        conditions,
    })
}

/// `*` (any run) and `?` (one character) wildcards, as IAM matches actions and resources.
pub fn glob(pattern: &str, s: &str, ignore_case: bool) -> bool {
    let norm = |x: &str| -> Vec<char> {
        if ignore_case {
            x.to_lowercase().chars().collect()
        } else {
            x.chars().collect()
        }
    };
    let (p, t) = (norm(pattern), norm(s));
    // Iterative matcher with backtracking to the last `*`.
    let (mut pi, mut ti) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(sp) = star {
            pi = sp + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Replaces policy variables (`${aws:username}`, `${s3:prefix}`, ..., `${*}`, `${?}`, `${$}`)
/// with the request's values; `None` when one names a key the request does not have (the
/// value then matches nothing, as in IAM).
pub fn substitute(s: &str, values: &HashMap<String, Vec<String>>) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            out.push_str(&rest[i..]);
            return Some(out);
        };
        let name = &after[..j];
        match name {
            // Escapes for the wildcard characters themselves: matched literally.
            "*" => out.push('\u{1}'),
            "?" => out.push('\u{2}'),
            "$" => out.push('$'),
            _ => out.push_str(values.get(&name.to_ascii_lowercase())?.first()?),
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// Matches with wildcards, where `\u{1}` and `\u{2}` (escaped `*` and `?`) match themselves.
fn glob_var(pattern: &str, s: &str, ignore_case: bool) -> bool {
    if pattern.contains(['\u{1}', '\u{2}']) {
        // Rare: compare the escaped characters literally by mapping them into the text too.
        let t = s.replace('*', "\u{1}").replace('?', "\u{2}");
        return glob(pattern, &t, ignore_case);
    }
    glob(pattern, s, ignore_case)
}

impl Statement {
    fn applies(&self, cx: &Context) -> bool {
        let principal = self.principals.matches(&cx.who, self.allow) != self.not_principal;
        let action = self
            .actions
            .iter()
            .any(|a| a == "*" || glob(a, cx.action, true))
            != self.not_action;
        let resource = self.resources.iter().any(|r| {
            r == "*"
                || if self.variables {
                    substitute(r, &cx.values).is_some_and(|r| glob_var(&r, &cx.resource, false))
                } else {
                    glob(r, &cx.resource, false)
                }
        }) != self.not_resource;
        principal && action && resource && self.conditions.iter().all(|c| c.holds(&cx.values))
    }
}

impl Policy {
    /// A policy with no statement: it says nothing about anything.
    pub fn empty() -> Self {
        Policy {
            statements: Vec::new(),
        }
    }

    /// The policy's verdict on a request.
    pub fn evaluate(&self, cx: &Context) -> Verdict {
        self.evaluate_why(cx).0
    }

    /// [`Policy::evaluate`], with the statement that decided (the denying one, else the first
    /// that allows): its `Sid`, or `#<n>`.
    pub fn evaluate_why(&self, cx: &Context) -> (Verdict, Option<&str>) {
        let mut allowed = None;
        for s in &self.statements {
            if s.applies(cx) {
                if !s.allow {
                    return (Verdict::Deny, Some(&s.sid));
                }
                allowed = allowed.or(Some(s.sid.as_str()));
            }
        }
        match allowed {
            Some(sid) => (Verdict::Allow, Some(sid)),
            None => (Verdict::Silent, None),
        }
    }

    /// Whether the policy is public as S3 defines it (GetBucketPolicyStatus, Block Public
    /// Access): an Allow to everyone (or through NotPrincipal) that no condition pins to a
    /// fixed source (an IP range, a user id).
    pub fn is_public(&self) -> bool {
        self.statements.iter().any(Statement::is_public)
    }

    /// What each public statement (see [`Policy::is_public`]) allows everyone, in words
    /// ("s3:GetObject on arn:aws:s3:::b/*"), for a person to confirm before it is applied.
    pub fn public_grants(&self) -> Vec<String> {
        let list = |not: bool, items: &[String], any: &str| {
            if not {
                format!("{any} except {}", items.join(", "))
            } else {
                items.join(", ")
            }
        };
        self.statements
            .iter()
            .filter(|s| s.is_public())
            .map(|s| {
                let who = if s.not_principal {
                    "everyone but the principals it names"
                } else {
                    "everyone"
                };
                format!(
                    "{who} may {} on {}",
                    list(s.not_action, &s.actions, "every action"),
                    list(s.not_resource, &s.resources, "every resource")
                )
            })
            .collect()
    }

    /// Whether some statement reads `s3:ExistingObjectTag/...` (then the request's object
    /// must be looked up to evaluate it).
    pub fn needs_object_tags(&self) -> bool {
        self.statements.iter().any(|s| {
            s.conditions
                .iter()
                .any(condition::Condition::needs_object_tags)
        })
    }
}

#[cfg(test)]
mod tests;
