//! What the authorization allowed, carried with the request to its handler: the verdict
//! (`s3::rules::authz` decides it) and, for a DeleteObjects, the decision per key.

use std::sync::Arc;

use crate::auth::policy::{self, Policy, Verdict};
use crate::s3::actions::resource;
use crate::s3::request::grants::Perm;

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

/// The per-key decision of a DeleteObjects on a bucket with a policy.
#[derive(Clone, Debug)]
pub struct PerKey {
    pub(crate) policy: Arc<Policy>,
    pub(crate) cx: policy::Context,
    pub(crate) bucket: String,
    /// Whether the role or the ACL allows deleting without the policy.
    pub(crate) base: bool,
    /// `Some` when the request asks to bypass GOVERNANCE retention: whether the key is one of
    /// the bucket's owners (who may, unless the policy denies it for the entry's key).
    pub(crate) bypass: Option<bool>,
    /// RestrictPublicBuckets with a public policy, for an unsigned request: the policy's
    /// Allows count for nothing.
    pub(crate) restrict_public: bool,
    /// For an IAM user: its identity policies, judged per key too (`s3::rules::identity`).
    pub(crate) user: Option<UserPerKey>,
    /// The key's session policies (a service account's): each must allow each entry too.
    pub(crate) sessions: Vec<Arc<Policy>>,
}

/// An IAM user's side of a per-key decision.
#[derive(Clone, Debug)]
pub struct UserPerKey {
    /// The user and its policies.
    pub principal: Arc<crate::auth::principal::Principal>,
    /// Whether the bucket is its account's.
    pub same_account: bool,
}

impl PerKey {
    /// Whether the request may delete `key` (the `version` it names, if any): decided as the
    /// single DeleteObject of that shape would be, `s3:DeleteObjectVersion` with the
    /// version as `s3:VersionId` when it names one.
    pub fn allows(&self, key: &str, version: Option<&str>) -> bool {
        let act = crate::s3::actions::versioned_action("s3:DeleteObject", version.is_some());
        if !crate::auth::session::allows(&self.sessions, &self.cx_for(act, key, version)) {
            return false;
        }
        if let Some(u) = &self.user {
            return self.user_allows(u, act, key, version, self.base);
        }
        match self.verdict(act, key, version) {
            Verdict::Deny => false,
            Verdict::Allow if !self.restrict_public => true,
            _ => self.base,
        }
    }

    /// The context of `action` for the entry `key` (`version`), on the object's ARN.
    fn cx_for(&self, action: &'static str, key: &str, version: Option<&str>) -> policy::Context {
        let mut cx = self.cx.clone();
        cx.resource = resource(&self.bucket, Some(key));
        cx.action = action;
        cx.values.remove("s3:versionid");
        if let Some(v) = version {
            cx.values.insert("s3:versionid".into(), vec![v.to_owned()]);
        }
        cx
    }

    /// The policy's verdict on `action` for the entry `key` (`version`), on the object's ARN.
    fn verdict(&self, action: &'static str, key: &str, version: Option<&str>) -> Verdict {
        self.policy.evaluate(&self.cx_for(action, key, version))
    }

    /// An IAM user's entry, as `s3::rules::identity` decides a single request.
    fn user_allows(
        &self,
        u: &UserPerKey,
        action: &'static str,
        key: &str,
        version: Option<&str>,
        base: bool,
    ) -> bool {
        let cx = self.cx_for(action, key, version);
        let identity = u.principal.policies.evaluate(&cx).verdict;
        let policy = self.policy.evaluate(&cx);
        let direct = match &cx.who {
            policy::Who::User { .. } => self.policy.evaluate(&policy::Context {
                who: u.principal.who(true),
                ..cx.clone()
            }),
            _ => Verdict::Silent,
        };
        if identity == Verdict::Deny || policy == Verdict::Deny {
            return false;
        }
        if u.same_account {
            identity == Verdict::Allow || direct == Verdict::Allow || base
        } else {
            identity == Verdict::Allow && (policy == Verdict::Allow || base)
        }
    }

    /// Whether the request may bypass GOVERNANCE retention for `key`: it asked to, and the
    /// policy allows `s3:BypassGovernanceRetention` on that key (or the key is an owner's),
    /// and does not deny it there. Decided per entry, on the object's ARN, as AWS decides it.
    pub fn may_bypass(&self, key: &str, version: Option<&str>) -> bool {
        let Some(owner) = self.bypass else {
            return false;
        };
        let bypass = crate::s3::actions::BYPASS;
        if !crate::auth::session::allows(&self.sessions, &self.cx_for(bypass, key, version)) {
            return false;
        }
        if let Some(u) = &self.user {
            // A grant's role does not stand in for the bypass: a policy must allow it.
            return self.user_allows(u, crate::s3::actions::BYPASS, key, version, false);
        }
        match self.verdict(crate::s3::actions::BYPASS, key, version) {
            Verdict::Deny => false,
            Verdict::Allow if !self.restrict_public => true,
            _ => owner,
        }
    }
}

/// The shape of a request ([`crate::s3::actions::Shape`]), read once from its headers and
/// query: a copy source's version by the same parser the copy uses.
pub fn shape_of(
    headers: &axum::http::HeaderMap,
    query: &[(String, String)],
) -> crate::s3::actions::Shape {
    let has = |n: &str| headers.contains_key(n);
    let text = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    crate::s3::actions::Shape {
        version: query.iter().any(|(k, _)| k == "versionId"),
        retention: has("x-amz-object-lock-mode") || has("x-amz-object-lock-retain-until-date"),
        legal_hold: has("x-amz-object-lock-legal-hold"),
        bypass: text("x-amz-bypass-governance-retention")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
        source_version: text("x-amz-copy-source")
            .is_some_and(|v| matches!(super::copy_source_version(v), Ok(Some(_)))),
        tagging: has("x-amz-tagging"),
        force_delete: text("x-minio-force-delete")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
    }
}
