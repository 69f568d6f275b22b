//! The authorization's decision, as a pure function of the operation's needs and the inputs
//! its caller gathered (`s3::authz` gathers them; see its documentation for the order).

use crate::auth::policy::Verdict;
use crate::auth::Auth;
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::s3::request::grants::{self, Grant, Perm, Principal};
use crate::s3::rules::owner_only::Others;
use crate::storage::meta::BucketInfo;

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
    if auth.root || auth.owns(&b.owner) {
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

/// What an operation needs: the role, and the ACL permission that can stand in for it.
pub type Need = Option<(Role, Option<AclNeed>)>;

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
    if let Some(row) = crate::s3::rules::owner_only::lookup(op) {
        return Some((Role::Owner, row.acl.map(Bucket)));
    }
    Some(match op {
        // PostObject authorizes itself as a PutObject once its form is verified.
        ListBuckets | CreateBucket | NotImplemented(_) | Preflight | PostObject => return None,
        HeadBucket | ListObjectVersions | ListObjectsV2 | ListObjects | SearchObjects
        | SearchObjectVersions | ListMultipartUploads => (Role::Read, Some(Bucket(Perm::Read))),
        GetObject | HeadObject | GetObjectTorrent => (Role::Read, Some(Object(Perm::Read))),
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
        | GetBucketLogging
        | PutBucketLogging
        | GetBucketNotificationConfiguration
        | PutBucketNotificationConfiguration
        | ListenBucketNotification
        | GetBucketWebsite
        | PutBucketWebsite
        | DeleteBucketWebsite
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

/// The operation (and what its role and ACL must give) that stands for an action a request
/// needs besides its own.
pub fn op_of_extra(action: &str) -> Option<(Op, Need)> {
    Some(match action {
        "s3:PutObjectRetention" => (Op::PutObjectRetention, needs(&Op::PutObjectRetention)),
        "s3:PutObjectLegalHold" => (Op::PutObjectLegalHold, needs(&Op::PutObjectLegalHold)),
        "s3:PutObjectTagging" => (Op::PutObjectTagging, needs(&Op::PutObjectTagging)),
        _ => return None,
    })
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
    pub(crate) fn bare(root: bool, who: Principal<'_>) -> Inputs<'_> {
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
    let policy_op = matches!(
        op,
        Op::GetBucketPolicy | Op::PutBucketPolicy | Op::DeleteBucketPolicy
    );
    if i.root {
        // An explicit Deny binds the root key too, as a bucket policy's Deny binds AWS's
        // account root user; the policy itself stays its to read and change, so that no
        // policy locks everyone out.
        if i.policy == Verdict::Deny && !policy_op {
            return (
                Access::Denied,
                "an explicit Deny in the bucket policy (it binds the root key too)",
            );
        }
        return (Access::Granted, "the root key may do everything else");
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
    if i.policy == Verdict::Deny && !(i.owner && policy_op) {
        return (Access::Denied, "an explicit Deny in the bucket policy");
    }
    if let Some(row) = crate::s3::rules::owner_only::lookup(op) {
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
            Principal::Key(_) if i.policy == Verdict::Allow => match row.others {
                Others::Policy => (
                    Access::Granted,
                    "an Allow in the bucket policy (AWS lets one grant this to another account)",
                ),
                Others::MethodNotAllowed => (
                    Access::MethodNotAllowed,
                    "owner-only: the policy allows it, but the key does not own the bucket (405)",
                ),
                Others::AccessDenied => (
                    Access::Denied,
                    "owner-only: a bucket policy grants it to no other key",
                ),
            },
            Principal::Key(_) => (
                Access::Denied,
                "the owner's: no Allow in the bucket policy for this key",
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

/// The ACL principal of a request.
pub fn principal<'a>(auth: &Auth, canonical_id: &'a str) -> Principal<'a> {
    if auth.is_anonymous() {
        Principal::Anonymous
    } else {
        Principal::Key(canonical_id)
    }
}
