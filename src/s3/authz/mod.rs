//! Authorization. One pure decision ([`decide`]) of the principal, the bucket policy's verdict,
//! the operation's needs and the bucket, in this order:
//!
//! 1. an explicit Deny in the bucket policy refuses, the root key included, as a Deny binds
//!    AWS's account root user (the root key and the bucket's owner keep Get, Put and
//!    DeleteBucketPolicy, so that no policy locks them out, as AWS keeps them for the
//!    account's root user);
//! 2. the root key may do everything else;
//! 3. the bucket's owner, and keys the admin API granted a role (`read` < `write` < `owner`),
//!    may do what the role allows; an Allow in the bucket policy allows;
//! 4. the bucket's ACL (canned or granted, see `acl::grants`) may allow the operation's ACL
//!    permission: READ lists, WRITE creates, overwrites and deletes objects, READ_ACP and
//!    WRITE_ACP read and write the bucket's ACL; to a key, to any key (AuthenticatedUsers) or
//!    to everyone, unsigned requests included (AllUsers);
//! 5. operations on one existing object (GetObject, HeadObject, Get/PutObjectAcl) are left to
//!    that object's ACL, which the handler checks once it has found the object
//!    ([`Access::IfObjectAcl`]); whoever may not list the bucket then gets 403 for a missing
//!    key as well, and learns nothing about which keys exist (AWS answers the same);
//! 6. everything else is `AccessDenied`.
//!
//! DeleteObjects is decided per key, each entry as the single DeleteObject of its shape would
//! be (`s3:DeleteObject`, or `s3:DeleteObjectVersion` for an entry naming a version), as AWS
//! decides it.
//! Block Public Access and object ownership are meant to join as further inputs to [`decide`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::auth::policy::{self, Policy, Verdict, Who};
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::s3::request::access::PerKey;
use crate::s3::request::grants;
use crate::s3::request::grants::Perm;
use crate::s3::rules::authz::decide;
use crate::s3::rules::authz::decide_why;
use crate::s3::rules::authz::needs;
use crate::s3::rules::authz::principal;
use crate::s3::rules::authz::role_on;
use crate::s3::rules::authz::AclNeed;
use crate::s3::rules::authz::Inputs;
use crate::s3::rules::authz::Role;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

mod facts;
pub mod per_key;
mod tags;
mod user;

pub use crate::s3::actions::{action, op_for_action};
use crate::s3::actions::{actions_for, resource, Shape, BYPASS};
use crate::s3::rules::authz::op_of_extra;
use crate::s3::rules::identity::{decide_user, UserFacts};
pub use facts::{add_request_tag, facts};
use user::UserCtx;

/// The canonical user id of a request's key (empty for an unsigned request).
fn canonical(auth: &Auth) -> String {
    if auth.is_anonymous() {
        String::new()
    } else {
        // An IAM user's ACL identity is its account's, as ACL grants name accounts.
        crate::s3::respond::owner_of(auth.account_key()).id
    }
}

/// A bucket's policy, parsed (`None`: it has none). A stored policy that no longer parses
/// (a principal's key was deleted since) is read leniently: principals that name no key
/// match nobody.
/// Parsed policies by bucket, with the text each was parsed from.
type ParsedPolicies = HashMap<String, (String, Arc<Policy>)>;

/// Whether a bucket's policy lets the server access log delivery
/// (`logging.s3.amazonaws.com`) write `key` into it for the logs of bucket `source`, as
/// PutBucketLogging checks a target. The delivery's `aws:SourceArn` is the source bucket's
/// ARN, as AWS's documented policy expects (`ArnLike`); `aws:SourceAccount` is
/// `000000000000`, the account grids3's partitioned log keys name (it has one account and no
/// account id; docs/access-logs.md).
pub fn allows_log_delivery(b: &BucketInfo, key: &str, source: &str) -> bool {
    let values = HashMap::from([
        (
            "aws:sourcearn".to_owned(),
            vec![format!("arn:aws:s3:::{source}")],
        ),
        (
            "aws:sourceaccount".to_owned(),
            vec!["000000000000".to_owned()],
        ),
    ]);
    bucket_policy(b).is_some_and(|p| {
        p.evaluate(&policy::Context {
            who: Who::Service("logging.s3.amazonaws.com".to_owned()),
            action: "s3:PutObject",
            resource: resource(&b.name, Some(key)),
            values,
        }) == Verdict::Allow
    })
}

fn bucket_policy(b: &BucketInfo) -> Option<Arc<Policy>> {
    let text = b.policy.as_deref()?;
    // Parsed once per stored text, not on every request: the text comes from the bucket
    // cache, so a changed policy is re-parsed as soon as that cache sees it.
    static PARSED: std::sync::LazyLock<std::sync::Mutex<ParsedPolicies>> =
        std::sync::LazyLock::new(Default::default);
    if let Some((t, p)) = PARSED.lock().expect("policy cache").get(&b.name) {
        if t == text {
            return Some(p.clone());
        }
    }
    let parsed = parse_stored(b, text)?;
    let mut cache = PARSED.lock().expect("policy cache");
    if cache.len() >= 10_000 {
        cache.clear();
    }
    cache.insert(b.name.clone(), (text.to_owned(), parsed.clone()));
    Some(parsed)
}

fn parse_stored(b: &BucketInfo, text: &str) -> Option<Arc<Policy>> {
    match policy::parse(text, &b.name, &|_| true) {
        Ok(p) => Some(Arc::new(p)),
        Err(e) => {
            tracing::error!(bucket = %b.name, error = %e.message, "a stored bucket policy does not parse; it denies everything but the owner");
            Some(Arc::new(
                policy::parse(
                    &format!(
                        r#"{{"Statement":{{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::{0}","arn:aws:s3:::{0}/*"]}}}}"#,
                        b.name
                    ),
                    &b.name,
                    &|_| true,
                )
                .ok()?,
            ))
        }
    }
}

/// The principal of a request, for a policy.
fn who(auth: &Auth) -> Who {
    if auth.is_anonymous() {
        Who::Anonymous
    } else {
        Who::Key {
            id: auth.access_key.clone(),
            canonical: canonical(auth),
            account: crate::storage::identity::account_id(auth.account_key()),
        }
    }
}

/// What the request addresses and the facts its conditions see.
pub struct Target<'a> {
    /// The bucket.
    pub bucket: &'a str,
    /// The key, for object operations.
    pub key: Option<&'a str>,
    /// Condition keys ([`facts`]).
    pub facts: &'a HashMap<String, Vec<String>>,
    /// What in the request's shape chooses the actions it is checked as
    /// (`s3::actions::actions_for`).
    pub shape: Shape,
}

/// The decision for one bucket (a bucket that does not exist is left to the handler, which
/// answers NoSuchBucket, as AWS does whoever asks).
async fn decide_on(
    st: &AppState,
    op: &Op,
    auth: &Auth,
    t: &Target<'_>,
    need: Option<(Role, Option<AclNeed>)>,
) -> S3Result<(Explanation, Option<PerKey>)> {
    let mut ex = Explanation {
        access: Access::Granted,
        rule: "the root key may do everything",
        owner: false,
        role: None,
        policy: Verdict::Silent,
        bucket_exists: true,
        public_access_block: Default::default(),
        acls_disabled: false,
        bypass_governance: auth.root && t.shape.bypass,
        by: None,
    };
    let Some(b) = st.store.meta().bucket_cached(t.bucket).await? else {
        ex.rule = "the bucket does not exist (NoSuchBucket)";
        ex.bucket_exists = false;
        return Ok((ex, None));
    };
    let user = match UserCtx::of(st, auth).await? {
        None => None,
        Some(Ok(p)) => Some(UserCtx::on(p, &b)),
        Some(Err(())) => {
            ex.access = Access::Denied;
            ex.rule = "the IAM user of this key no longer exists";
            return Ok((ex, None));
        }
    };
    let mut base_values = t.facts.clone();
    if let Some(u) = &user {
        u.principal.add_condition_values(&mut base_values);
    }
    let policy_of_bucket = bucket_policy(&b);
    let tags_needed = policy_of_bucket
        .as_ref()
        .is_some_and(|p| p.needs_object_tags())
        || user.as_ref().is_some_and(UserCtx::needs_object_tags);
    if let (true, Some(key)) = (tags_needed, t.key) {
        tags::object_tag_values(st, t, key, &mut base_values).await?;
    }
    let id = canonical(auth);
    let pab = crate::s3::rules::public_access::effective(st, &b);
    let mut acl = grants::from_stored(&b.acl);
    if pab.ignore_public_acls {
        acl.retain(|g| !crate::s3::rules::public_access::is_public(g));
    }
    let acls_disabled = crate::s3::rules::ownership::acls_disabled(&b);
    if acls_disabled {
        acl.clear();
    }
    let mut inputs = Inputs {
        owner: auth.owns(&b.owner),
        role: match &user {
            Some(u) => u.role(auth, &b),
            None => role_on(auth, &b),
        },
        bucket_acl: &acl,
        ..Inputs::bare(auth.root, principal(auth, &id))
    };
    let mut per_key = None;
    let acts = actions_for(op, t.shape);
    // The policy's verdict on each action the request needs besides its own, and on the
    // governance bypass it asks for (`Silent` without a policy).
    let mut extra_verdicts = vec![Verdict::Silent; acts.len().saturating_sub(1)];
    let mut bypass_verdict = Verdict::Silent;
    // For an IAM user: the bucket policy's verdicts counting only Allows that name the user
    // (on the action, and on listing).
    let mut direct = (Verdict::Silent, Verdict::Silent);
    if let (Some(p), Some(&act)) = (policy_of_bucket, acts.first()) {
        let cx = policy::Context {
            who: match &user {
                Some(u) => u.who(false),
                None => who(auth),
            },
            action: act,
            resource: resource(t.bucket, t.key),
            values: base_values.clone(),
        };
        inputs.policy = p.evaluate(&cx);
        for (v, extra) in extra_verdicts.iter_mut().zip(&acts[1..]) {
            *v = p.evaluate(&policy::Context {
                action: extra,
                ..cx.clone()
            });
        }
        if t.shape.bypass {
            bypass_verdict = p.evaluate(&policy::Context {
                action: BYPASS,
                ..cx.clone()
            });
        }
        // Whether the caller may list the bucket where this key is (404 or 403 for a missing
        // key): a ListBucket allowed only under an `s3:prefix` counts when the key is under
        // that prefix, since a listing with that prefix would show the key anyway.
        let mut list_cx = policy::Context {
            action: "s3:ListBucket",
            resource: resource(t.bucket, None),
            ..cx.clone()
        };
        if let Some(key) = t.key {
            list_cx
                .values
                .entry("s3:prefix".to_owned())
                .or_insert_with(|| vec![key.to_owned()]);
        }
        inputs.policy_list = p.evaluate(&list_cx);
        if let Some(u) = &user {
            direct = (
                p.evaluate(&policy::Context {
                    who: u.who(true),
                    ..cx.clone()
                }),
                p.evaluate(&policy::Context {
                    who: u.who(true),
                    ..list_cx.clone()
                }),
            );
        }
        if pab.restrict_public_buckets
            && p.is_public()
            && !inputs.owner
            && inputs.policy == Verdict::Allow
            && crate::s3::rules::owner_only::lookup(op).is_some()
        {
            // RestrictPublicBuckets blocks the cross-account access a public policy gives:
            // another key gets no bucket configuration from it (the operations a policy grants
            // it as to another account). Objects stay open to the keys, which belong to
            // grids3's one account, whom AWS still lets in.
            inputs.policy = Verdict::Silent;
        }
        // RestrictPublicBuckets: a public policy allows only signed requests; its Deny
        // statements still apply.
        if pab.restrict_public_buckets && auth.is_anonymous() && p.is_public() {
            for v in [
                &mut inputs.policy,
                &mut inputs.policy_list,
                &mut bypass_verdict,
            ]
            .into_iter()
            .chain(extra_verdicts.iter_mut())
            {
                if *v == Verdict::Allow {
                    *v = Verdict::Silent;
                }
            }
        }
        if *op == Op::DeleteObjects || (*op == Op::DeleteObject && t.shape.force_delete) {
            // Each key is decided on its own; the request itself needs nothing more.
            let base = decide(
                op,
                need,
                &Inputs {
                    policy: Verdict::Silent,
                    ..inputs
                },
            ) == Access::Granted;
            let restrict_public =
                pab.restrict_public_buckets && p.is_public() && auth.is_anonymous();
            per_key = Some(PerKey {
                policy: p,
                cx,
                bucket: t.bucket.to_owned(),
                base,
                bypass: t.shape.bypass.then_some(inputs.role == Some(Role::Owner)),
                restrict_public,
                user: None,
                sessions: Vec::new(),
            });
            inputs.policy = Verdict::Allow;
        }
    }
    let (mut access, mut rule) = decide_why(op, need, &inputs);
    let mut by = None;
    if let (Some(u), Some(&act)) = (&user, acts.first()) {
        let res = resource(t.bucket, t.key);
        let identity = u.identity(act, &res, &base_values);
        let mut list_values = base_values.clone();
        if let Some(key) = t.key {
            list_values
                .entry("s3:prefix".to_owned())
                .or_insert_with(|| vec![key.to_owned()]);
        }
        let identity_list = u.identity("s3:ListBucket", &resource(t.bucket, None), &list_values);
        let facts = UserFacts {
            identity: identity.verdict,
            identity_list: identity_list.verdict,
            same_account: u.same_account,
            policy_direct: direct.0,
            policy_direct_list: direct.1,
            role_allows: need.is_some_and(|(r, _)| role_on(auth, &b).is_some_and(|g| g >= r)),
            object_op: matches!(need, Some((_, Some(AclNeed::Object(_))))),
        };
        let per_key_op =
            *op == Op::DeleteObjects || (*op == Op::DeleteObject && t.shape.force_delete);
        if per_key_op {
            // Each key is decided on its own (`PerKey::allows`), the identity policies on the
            // object's ARN included; the request itself needs nothing more.
            let base = if u.same_account {
                role_on(auth, &b).is_some_and(|r| r >= Role::Write)
            } else {
                decide(
                    op,
                    need,
                    &Inputs {
                        policy: Verdict::Silent,
                        ..inputs
                    },
                ) == Access::Granted
            };
            per_key = Some(PerKey {
                policy: bucket_policy(&b).unwrap_or_else(|| Arc::new(Policy::empty())),
                cx: policy::Context {
                    who: u.who(false),
                    action: act,
                    resource: res.clone(),
                    values: base_values.clone(),
                },
                bucket: t.bucket.to_owned(),
                base,
                bypass: t.shape.bypass.then_some(false),
                restrict_public: false,
                user: Some(crate::s3::request::access::UserPerKey {
                    principal: u.principal.clone(),
                    same_account: u.same_account,
                }),
                sessions: Vec::new(),
            });
            (access, rule) = (Access::Granted, "decided per key");
        } else {
            (access, rule) = decide_user((access, rule), &facts);
        }
        by = identity.by;
        // Each further action the headers need is judged the same way.
        for (extra, verdict) in acts.iter().skip(1).zip(&extra_verdicts) {
            let extra_identity = u.identity(extra, &res, &base_values).verdict;
            let resource_side = match op_of_extra(extra) {
                Some((extra_op, extra_need)) => decide_why(
                    &extra_op,
                    extra_need,
                    &Inputs {
                        policy: *verdict,
                        ..inputs
                    },
                ),
                None => (Access::Granted, ""),
            };
            let (extra_access, _) = decide_user(
                resource_side,
                &UserFacts {
                    identity: extra_identity,
                    identity_list: extra_identity,
                    policy_direct: if *verdict == Verdict::Deny {
                        Verdict::Deny
                    } else {
                        Verdict::Silent
                    },
                    policy_direct_list: Verdict::Silent,
                    object_op: false,
                    ..facts
                },
            );
            if !matches!(extra_access, Access::Granted | Access::GrantedUnlisted)
                && access != Access::Denied
            {
                access = Access::Denied;
                rule = "the request's headers need a further action (s3:PutObjectRetention, s3:PutObjectLegalHold, s3:PutObjectTagging) that no identity policy allows";
            }
        }
        if t.shape.bypass {
            let v = u.identity(BYPASS, &res, &base_values).verdict;
            bypass_verdict = match (v, bypass_verdict) {
                (Verdict::Deny, _) | (_, Verdict::Deny) => Verdict::Deny,
                (Verdict::Allow, _) => Verdict::Allow,
                (_, other) if u.same_account => {
                    // Within the account only a policy naming the user counts.
                    if other == Verdict::Allow && direct.0 == Verdict::Allow {
                        Verdict::Allow
                    } else {
                        Verdict::Silent
                    }
                }
                (_, other) => other,
            };
        }
    }
    // Each further action the request's shape needs (a lock header's) is decided as the
    // operation that stands for it would be, with the policy's verdict on that action (for
    // an IAM user, above).
    for (extra, verdict) in acts
        .iter()
        .skip(1)
        .zip(&extra_verdicts)
        .filter(|_| user.is_none())
    {
        let Some((extra_op, extra_need)) = op_of_extra(extra) else {
            continue;
        };
        let granted = decide(
            &extra_op,
            extra_need,
            &Inputs {
                policy: *verdict,
                ..inputs
            },
        );
        if !matches!(granted, Access::Granted | Access::GrantedUnlisted) && access != Access::Denied
        {
            access = Access::Denied;
            rule = "the request's headers need a further action (s3:PutObjectRetention, s3:PutObjectLegalHold, s3:PutObjectTagging) that nothing allows";
        }
    }
    // A session policy (a service account's) cuts whatever allowed it: every action the
    // request needs must be allowed by each, on the request's resource.
    let session_cx = |action: &'static str| policy::Context {
        who: match &user {
            Some(u) => u.who(false),
            None => who(auth),
        },
        action,
        resource: resource(t.bucket, t.key),
        values: base_values.clone(),
    };
    if !auth.sessions.is_empty() && per_key.is_none() {
        if acts
            .iter()
            .any(|a| !crate::auth::session::allows(&auth.sessions, &session_cx(a)))
        {
            access = Access::Denied;
            rule = "a session policy of the key (a service account's) does not allow it";
        }
        if t.shape.bypass && !crate::auth::session::allows(&auth.sessions, &session_cx(BYPASS)) {
            bypass_verdict = Verdict::Deny;
        }
    }
    if let Some(pk) = per_key.as_mut() {
        pk.sessions = auth.sessions.clone();
    }
    // A governance bypass is granted to the bucket's owners (the root key, the owner, keys
    // the admin API made owners) and to whom the policy allows s3:BypassGovernanceRetention;
    // an explicit Deny of it binds them all. Without it the request still runs, unbypassed.
    let bypass_governance = t.shape.bypass
        && bypass_verdict != Verdict::Deny
        && ((inputs.role == Some(Role::Owner) && user.is_none())
            || bypass_verdict == Verdict::Allow);
    if let Access::IfObjectAcl {
        ignore_public,
        acls_disabled: disabled,
        ..
    } = &mut access
    {
        *ignore_public = pab.ignore_public_acls;
        *disabled = acls_disabled;
    }
    tracing::debug!(bucket = t.bucket, key = %auth.access_key, op = op.name(), ?need, policy = ?inputs.policy, ?access, rule, "authorization");
    let ex = Explanation {
        access,
        rule,
        owner: inputs.owner,
        role: inputs.role,
        policy: inputs.policy,
        bucket_exists: true,
        public_access_block: pab,
        acls_disabled,
        bypass_governance,
        by,
    };
    Ok((ex, per_key))
}

/// How a decision came about (the admin API's "why was this denied?").
#[derive(Clone, Debug)]
pub struct Explanation {
    /// The outcome.
    pub access: Access,
    /// The rule that decided.
    pub rule: &'static str,
    /// Whether the key owns the bucket.
    pub owner: bool,
    /// The key's role through ownership or the admin API.
    pub role: Option<Role>,
    /// The bucket policy's verdict.
    pub policy: Verdict,
    /// Whether the bucket exists.
    pub bucket_exists: bool,
    /// The Block Public Access configuration in force.
    pub public_access_block: crate::storage::meta::PublicAccessBlock,
    /// Whether the bucket's ACLs are disabled (BucketOwnerEnforced).
    pub acls_disabled: bool,
    /// Whether the request asked for, and may use, a GOVERNANCE bypass.
    pub bypass_governance: bool,
    /// For an IAM user: the identity policy and statement that decided (`None`: none
    /// applied, or not a user).
    pub by: Option<String>,
}

/// The condition keys of a request ([`facts`] of its headers, query, key, address and
/// transport, at the database's time).
pub fn facts_of(
    st: &AppState,
    req: &crate::s3::request::S3Request,
) -> HashMap<String, Vec<String>> {
    facts(
        &req.parts.headers,
        &req.query,
        &req.auth,
        req.source_ip,
        crate::tls::Transport::of(&req.parts.extensions),
        st.store.meta().clock().now().to_chrono(),
    )
}

/// The decision on an operation for a principal, explained (no side effects).
pub async fn explain(st: &AppState, op: &Op, auth: &Auth, t: &Target<'_>) -> S3Result<Explanation> {
    Ok(decide_on(st, op, auth, t, needs(op)).await?.0)
}

/// The outcome of authorizing a request.
#[derive(Clone, Debug)]
pub struct Decision {
    /// For the addressed bucket and object.
    pub access: Access,
    /// For a copy's source object (`Granted` for other operations).
    pub source: Access,
    /// For a DeleteObjects on a bucket with a policy: the decision per key.
    pub per_key: Option<PerKey>,
    /// Whether the request asked for, and may use, a GOVERNANCE bypass.
    pub bypass_governance: bool,
}

/// Authorizes an operation (and, for copies, reading the source). Takes the parts it needs
/// rather than the request, whose body is not `Sync`.
pub async fn authorize(
    st: &AppState,
    op: &Op,
    auth: &Auth,
    t: &Target<'_>,
    copy_source: Option<String>,
) -> S3Result<Decision> {
    let need = needs(op);
    let (access, per_key, bypass_governance) = if need.is_none() {
        let id = canonical(auth);
        let mut access = decide(op, None, &Inputs::bare(auth.root, principal(auth, &id)));
        if access == Access::Granted {
            access = user::account_level(st, op, auth, t).await?;
        }
        (access, None, false)
    } else {
        let (ex, per_key) = decide_on(st, op, auth, t, need).await?;
        (ex.access, per_key, ex.bypass_governance)
    };
    match access {
        Access::Denied => return Err(S3Error::access_denied()),
        Access::MethodNotAllowed => return Err(S3Error::method_not_allowed()),
        _ => {}
    }
    let mut source = Access::Granted;
    if let (Op::CopyObject | Op::UploadPartCopy, Some(src)) = (op, copy_source) {
        if let Ok((src_bucket, src_key)) = crate::s3::request::parse_copy_source(&src) {
            let read = Some((Role::Read, Some(AclNeed::Object(Perm::Read))));
            // The source is read as a GetObject of its own shape: `s3:GetObjectVersion`
            // when the copy source names a version, with that version as `s3:VersionId`.
            let mut facts = t.facts.clone();
            facts.remove("s3:versionid");
            if let Ok(Some(v)) = crate::s3::request::copy_source_version(&src) {
                facts.insert("s3:versionid".into(), vec![v]);
            }
            let source_target = Target {
                bucket: &src_bucket,
                key: Some(&src_key),
                facts: &facts,
                shape: Shape {
                    version: t.shape.source_version,
                    ..Shape::default()
                },
            };
            source = decide_on(st, &Op::GetObject, auth, &source_target, read)
                .await?
                .0
                .access;
            if source == Access::Denied {
                return Err(S3Error::access_denied());
            }
        }
    }
    Ok(Decision {
        access,
        source,
        per_key,
        bypass_governance,
    })
}

#[cfg(test)]
mod tests;
