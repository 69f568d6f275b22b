//! Authorization. One pure decision ([`decide`]) of the principal, the bucket policy's verdict,
//! the operation's needs and the bucket, in this order:
//!
//! 1. the root key may do everything;
//! 2. an explicit Deny in the bucket policy refuses (the bucket's owner keeps Get, Put and
//!    DeleteBucketPolicy, so that no policy locks its owner out, as AWS keeps them for the
//!    account's root user);
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
//! DeleteObjects is decided per key (`s3:DeleteObject` on each), as AWS decides it.
//! Block Public Access and object ownership are meant to join as further inputs to [`decide`].

use std::collections::HashMap;
use std::sync::Arc;

use super::acl::grants::{self, Grant, Perm, Principal};
use crate::auth::policy::{self, Policy, Verdict, Who};
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;

mod actions;
mod facts;
pub use actions::{action, op_for_action};
use actions::{resource, versioned_action};
pub use facts::{add_request_tag, facts};

/// What a key may do on a bucket through the admin API's grants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Read objects and listings.
    Read,
    /// Also write and delete objects.
    Write,
    /// Also delete the bucket and change its settings.
    Owner,
}

impl Role {
    /// From the stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "read" => Some(Role::Read),
            "write" => Some(Role::Write),
            "owner" => Some(Role::Owner),
            _ => None,
        }
    }
}

/// The role a request's key has on a bucket through ownership or the admin API, if any.
pub fn role_on(auth: &Auth, b: &BucketInfo) -> Option<Role> {
    if auth.root || (!auth.is_anonymous() && b.owner == auth.access_key) {
        return Some(Role::Owner);
    }
    if auth.is_anonymous() {
        return None;
    }
    b.grants
        .iter()
        .find(|(k, _)| *k == auth.access_key)
        .and_then(|(_, r)| Role::parse(r))
}

/// Where an ACL may allow an operation that the role does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AclNeed {
    /// A permission in the bucket's ACL.
    Bucket(Perm),
    /// A permission in the ACL of the object the request addresses.
    Object(Perm),
}

/// What an operation needs: the role (`None`: not a bucket operation) and the ACL permission
/// that can stand in for it (`None`: only the owner and admin grants).
pub fn needs(op: &Op) -> Option<(Role, Option<AclNeed>)> {
    use AclNeed::{Bucket, Object};
    use Op::*;
    if let Some(row) = super::owner_only::lookup(op) {
        return Some((Role::Owner, row.acl.map(Bucket)));
    }
    Some(match op {
        // PostObject authorizes itself as a PutObject once its form is verified.
        ListBuckets | CreateBucket | NotImplemented(_) | Preflight | PostObject => return None,
        HeadBucket | ListObjectVersions | ListObjectsV2 | ListObjects | ListMultipartUploads => {
            (Role::Read, Some(Bucket(Perm::Read)))
        }
        GetObject | HeadObject => (Role::Read, Some(Object(Perm::Read))),
        GetObjectAcl => (Role::Read, Some(Object(Perm::ReadAcp))),
        GetBucketLocation | GetBucketVersioning | GetObjectAttributes | GetObjectTagging
        | GetBucketTagging => (Role::Read, None),
        // ListParts belongs to the multipart upload the writer started: a WRITE grantee that
        // may upload parts may list them (AWS gives them to the upload's initiator).
        PutObject
        | CopyObject
        | DeleteObject
        | DeleteObjects
        | CreateMultipartUpload
        | UploadPart
        | UploadPartCopy
        | CompleteMultipartUpload
        | AbortMultipartUpload
        | ListParts => (Role::Write, Some(Bucket(Perm::Write))),
        PutObjectTagging | DeleteObjectTagging => (Role::Write, None),
        PutObjectAcl => (Role::Owner, Some(Object(Perm::WriteAcp))),
        // Owner-only: decided by `owner_only::OWNER_ONLY` above.
        GetBucketAcl
        | PutBucketAcl
        | DeleteBucket
        | PutBucketTagging
        | DeleteBucketTagging
        | GetBucketCors
        | PutBucketCors
        | DeleteBucketCors
        | GetBucketPolicy
        | PutBucketPolicy
        | DeleteBucketPolicy
        | GetBucketPolicyStatus
        | GetPublicAccessBlock
        | PutPublicAccessBlock
        | DeletePublicAccessBlock
        | GetBucketOwnershipControls
        | PutBucketOwnershipControls
        | DeleteBucketOwnershipControls
        | GetUnconfigured(_)
        | GetBucketEncryption
        | PutBucketEncryption
        | DeleteBucketEncryption
        | GetBucketLifecycleConfiguration
        | PutBucketLifecycleConfiguration
        | DeleteBucketLifecycleConfiguration
        | PutBucketVersioning
        | GetObjectLockConfiguration
        | PutObjectLockConfiguration => (Role::Owner, None),
        GetObjectRetention | GetObjectLegalHold => (Role::Read, None),
        PutObjectRetention | PutObjectLegalHold => (Role::Write, None),
    })
}

/// What the authorization allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// The operation may run.
    Granted,
    /// An operation on one object that only the object's ACL can allow (the handler checks
    /// `perm` there); `may_list` says whether a missing key may be reported as such.
    IfObjectAcl {
        /// The permission the object's ACL must give.
        perm: Perm,
        /// Whether the principal may list the bucket (then a missing key is 404, else 403).
        may_list: bool,
        /// Block Public Access's IgnorePublicAcls: the object's public grants grant nothing.
        ignore_public: bool,
        /// Object ownership BucketOwnerEnforced: the object's grants grant nothing.
        acls_disabled: bool,
    },
    /// Granted, but the principal may not list the bucket: a missing key is 403, not 404
    /// (a policy that allows `s3:GetObject` without `s3:ListBucket`).
    GrantedUnlisted,
    /// Refused.
    Denied,
    /// Refused with `405 MethodNotAllowed`: a bucket policy operation that the policy allows
    /// to a key that does not own the bucket (AWS's answer to another account).
    MethodNotAllowed,
}

/// What the decision looks at, besides the operation's needs.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The root key.
    pub root: bool,
    /// The ACL principal.
    pub who: Principal<'a>,
    /// Whether the key owns the bucket.
    pub owner: bool,
    /// Its role through ownership or the admin API.
    pub role: Option<Role>,
    /// The bucket's ACL grants.
    pub bucket_acl: &'a [Grant],
    /// The bucket policy's verdict on the operation.
    pub policy: Verdict,
    /// The bucket policy's verdict on listing the bucket (for 404 against 403).
    pub policy_list: Verdict,
}

impl Inputs<'_> {
    /// Inputs for a principal and nothing else (no bucket).
    fn bare(root: bool, who: Principal<'_>) -> Inputs<'_> {
        Inputs {
            root,
            who,
            owner: false,
            role: None,
            bucket_acl: &[],
            policy: Verdict::Silent,
            policy_list: Verdict::Silent,
        }
    }
}

/// The decision, as a pure function of the operation's needs and the [`Inputs`] (see the
/// module documentation for the order).
pub fn decide(op: &Op, need: Option<(Role, Option<AclNeed>)>, i: &Inputs<'_>) -> Access {
    decide_why(op, need, i).0
}

/// [`decide`], with the rule that decided (for the debug log and the admin API's
/// "why was this denied?").
pub fn decide_why(
    op: &Op,
    need: Option<(Role, Option<AclNeed>)>,
    i: &Inputs<'_>,
) -> (Access, &'static str) {
    if i.root {
        return (Access::Granted, "the root key may do everything");
    }
    let Some((needed, acl_need)) = need else {
        // ListBuckets and CreateBucket: any key, never an unsigned request (AWS refuses both).
        return match i.who {
            Principal::Anonymous => (
                Access::Denied,
                "unsigned requests may not list or create buckets",
            ),
            Principal::Key(_) => (Access::Granted, "any key may list and create buckets"),
        };
    };
    let policy_op = matches!(
        op,
        Op::GetBucketPolicy | Op::PutBucketPolicy | Op::DeleteBucketPolicy
    );
    if i.policy == Verdict::Deny && !(i.owner && policy_op) {
        return (Access::Denied, "an explicit Deny in the bucket policy");
    }
    if let Some(row) = super::owner_only::lookup(op) {
        if i.role.is_some_and(|r| r >= Role::Owner) {
            return (
                Access::Granted,
                if i.owner {
                    "the key owns the bucket"
                } else {
                    "the admin API made the key an owner of the bucket"
                },
            );
        }
        if row
            .acl
            .is_some_and(|p| grants::allows(i.bucket_acl, i.who, p))
        {
            return (Access::Granted, "the bucket's ACL (an ACP permission)");
        }
        return match i.who {
            Principal::Anonymous => (
                Access::Denied,
                "owner-only: never an unsigned request, whatever the policy says",
            ),
            Principal::Key(_)
                if i.policy == Verdict::Allow
                    && row.others == super::owner_only::Refusal::MethodNotAllowed =>
            {
                (
                    Access::MethodNotAllowed,
                    "owner-only: the policy allows it, but the key does not own the bucket (405)",
                )
            }
            Principal::Key(_) => (
                Access::Denied,
                "owner-only: a bucket policy grants it to no other key",
            ),
        };
    }
    if i.role.is_some_and(|r| r >= needed) {
        return (
            Access::Granted,
            if i.owner {
                "the key owns the bucket"
            } else {
                "the admin API's grant (role) allows it"
            },
        );
    }
    let may_list = i.role.is_some()
        || i.policy_list == Verdict::Allow
        || (i.policy_list != Verdict::Deny && grants::allows(i.bucket_acl, i.who, Perm::Read));
    match acl_need {
        Some(AclNeed::Object(_)) if i.policy == Verdict::Allow && !may_list => (
            Access::GrantedUnlisted,
            "an Allow in the bucket policy (a missing key is 403: no s3:ListBucket)",
        ),
        _ if i.policy == Verdict::Allow => (Access::Granted, "an Allow in the bucket policy"),
        Some(AclNeed::Bucket(p)) if grants::allows(i.bucket_acl, i.who, p) => {
            (Access::Granted, "the bucket's ACL")
        }
        Some(AclNeed::Object(perm)) => (
            Access::IfObjectAcl {
                perm,
                may_list,
                ignore_public: false,
                acls_disabled: false,
            },
            "left to the object's ACL",
        ),
        _ => (
            Access::Denied,
            "nothing allows it (no role, no policy Allow, no ACL grant)",
        ),
    }
}

/// The canonical user id of a request's key (empty for an unsigned request).
fn canonical(auth: &Auth) -> String {
    if auth.is_anonymous() {
        String::new()
    } else {
        super::owner_of(&auth.access_key).id
    }
}

/// The ACL principal of a request.
pub fn principal<'a>(auth: &Auth, canonical_id: &'a str) -> Principal<'a> {
    if auth.is_anonymous() {
        Principal::Anonymous
    } else {
        Principal::Key(canonical_id)
    }
}

/// A bucket's policy, parsed (`None`: it has none). A stored policy that no longer parses
/// (a principal's key was deleted since) is read leniently: principals that name no key
/// match nobody.
/// Parsed policies by bucket, with the text each was parsed from.
type ParsedPolicies = HashMap<String, (String, Arc<Policy>)>;

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
        }
    }
}

/// The per-key decision of a DeleteObjects on a bucket with a policy.
#[derive(Clone, Debug)]
pub struct PerKey {
    policy: Arc<Policy>,
    cx: policy::Context,
    bucket: String,
    /// Whether the role or the ACL allows deleting without the policy.
    base: bool,
}

impl PerKey {
    /// Whether the request may delete `key`.
    pub fn allows(&self, key: &str) -> bool {
        let mut cx = self.cx.clone();
        cx.resource = resource(&self.bucket, Some(key));
        match self.policy.evaluate(&cx) {
            Verdict::Deny => false,
            Verdict::Allow => true,
            Verdict::Silent => self.base,
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
    };
    if auth.root {
        return Ok((ex, None));
    }
    let Some(b) = st.store.meta().bucket_cached(t.bucket).await? else {
        ex.rule = "the bucket does not exist (NoSuchBucket)";
        ex.bucket_exists = false;
        return Ok((ex, None));
    };
    let id = canonical(auth);
    let pab = super::public_access::effective(st, &b);
    let mut acl = grants::from_stored(&b.acl);
    if pab.ignore_public_acls {
        acl.retain(|g| !super::public_access::is_public(g));
    }
    let acls_disabled = super::ownership::acls_disabled(&b);
    if acls_disabled {
        acl.clear();
    }
    let mut inputs = Inputs {
        owner: !auth.is_anonymous() && b.owner == auth.access_key,
        role: role_on(auth, &b),
        bucket_acl: &acl,
        ..Inputs::bare(false, principal(auth, &id))
    };
    let mut per_key = None;
    if let (Some(p), Some(act)) = (bucket_policy(&b), action(op)) {
        let act = versioned_action(act, t.facts.contains_key("s3:versionid"));
        let mut values = t.facts.clone();
        if let (true, Some(key)) = (p.needs_object_tags(), t.key) {
            if let Some(o) = st.store.head(t.bucket, key).await? {
                for (k, v) in &o.meta.tags {
                    values.insert(
                        format!("s3:existingobjecttag/{}", k.to_ascii_lowercase()),
                        vec![v.clone()],
                    );
                }
            }
        }
        let cx = policy::Context {
            who: who(auth),
            action: act,
            resource: resource(t.bucket, t.key),
            values,
        };
        inputs.policy = p.evaluate(&cx);
        inputs.policy_list = p.evaluate(&policy::Context {
            action: "s3:ListBucket",
            resource: resource(t.bucket, None),
            ..cx.clone()
        });
        if pab.restrict_public_buckets && auth.is_anonymous() && p.is_public() {
            // RestrictPublicBuckets: a public policy allows only signed requests; its Deny
            // statements still apply.
            for v in [&mut inputs.policy, &mut inputs.policy_list] {
                if *v == Verdict::Allow {
                    *v = Verdict::Silent;
                }
            }
        }
        if *op == Op::DeleteObjects {
            // Each key is decided on its own; the request itself needs nothing more.
            let base = decide(
                op,
                need,
                &Inputs {
                    policy: Verdict::Silent,
                    ..inputs
                },
            ) == Access::Granted;
            per_key = Some(PerKey {
                policy: p,
                cx,
                bucket: t.bucket.to_owned(),
                base,
            });
            inputs.policy = Verdict::Allow;
        }
    }
    let (mut access, rule) = decide_why(op, need, &inputs);
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
    let (access, per_key) = if need.is_none() {
        let id = canonical(auth);
        (
            decide(op, None, &Inputs::bare(auth.root, principal(auth, &id))),
            None,
        )
    } else {
        let (ex, per_key) = decide_on(st, op, auth, t, need).await?;
        (ex.access, per_key)
    };
    match access {
        Access::Denied => return Err(S3Error::access_denied()),
        Access::MethodNotAllowed => return Err(S3Error::method_not_allowed()),
        _ => {}
    }
    let mut source = Access::Granted;
    if let (Op::CopyObject | Op::UploadPartCopy, Some(src)) = (op, copy_source) {
        if let Ok((src_bucket, src_key)) = super::copy::parse_copy_source(&src) {
            let read = Some((Role::Read, Some(AclNeed::Object(Perm::Read))));
            let source_target = Target {
                bucket: &src_bucket,
                key: Some(&src_key),
                facts: t.facts,
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
    })
}

#[cfg(test)]
mod tests;
