//! Authorization. One pure decision ([`decide`]) of the principal, the operation's needs and
//! the bucket, in this order:
//!
//! 1. the root key may do everything;
//! 2. the bucket's owner, and keys the admin API granted a role (`read` < `write` < `owner`),
//!    may do what the role allows;
//! 3. the bucket's ACL (canned or granted, see `acl::grants`) may allow the operation's ACL
//!    permission: READ lists, WRITE creates, overwrites and deletes objects, READ_ACP and
//!    WRITE_ACP read and write the bucket's ACL; to a key, to any key (AuthenticatedUsers) or
//!    to everyone, unsigned requests included (AllUsers);
//! 4. operations on one existing object (GetObject, HeadObject, Get/PutObjectAcl) are left to
//!    that object's ACL, which the handler checks once it has found the object
//!    ([`Access::IfObjectAcl`]); whoever may not list the bucket then gets 403 for a missing
//!    key as well, and learns nothing about which keys exist (AWS answers the same);
//! 5. everything else is `AccessDenied`.
//!
//! Bucket policies, Block Public Access and object ownership are meant to join as further
//! inputs to [`decide`]: an explicit Deny before step 2, Allow statements beside step 3.

use super::acl::grants::{self, Grant, Perm, Principal};
use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::state::AppState;
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
        GetBucketAcl => (Role::Owner, Some(Bucket(Perm::ReadAcp))),
        PutBucketAcl => (Role::Owner, Some(Bucket(Perm::WriteAcp))),
        PutObjectAcl => (Role::Owner, Some(Object(Perm::WriteAcp))),
        DeleteBucket | PutBucketTagging | DeleteBucketTagging | GetBucketCors | PutBucketCors
        | DeleteBucketCors => (Role::Owner, None),
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
    },
    /// Refused.
    Denied,
}

/// The decision, as a pure function of the principal, the role it has on the bucket, the
/// operation's needs and the bucket's ACL (see the module documentation for the order).
pub fn decide(
    root: bool,
    who: Principal<'_>,
    role: Option<Role>,
    need: Option<(Role, Option<AclNeed>)>,
    bucket_acl: &[Grant],
) -> Access {
    if root {
        return Access::Granted;
    }
    let Some((needed, acl_need)) = need else {
        // ListBuckets and CreateBucket: any key, never an unsigned request (AWS refuses both).
        return match who {
            Principal::Anonymous => Access::Denied,
            Principal::Key(_) => Access::Granted,
        };
    };
    if role.is_some_and(|r| r >= needed) {
        return Access::Granted;
    }
    match acl_need {
        Some(AclNeed::Bucket(p)) if grants::allows(bucket_acl, who, p) => Access::Granted,
        Some(AclNeed::Object(perm)) => Access::IfObjectAcl {
            perm,
            may_list: role.is_some() || grants::allows(bucket_acl, who, Perm::Read),
        },
        _ => Access::Denied,
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

/// The decision for one bucket (a bucket that does not exist is left to the handler, which
/// answers NoSuchBucket, as AWS does whoever asks).
async fn decide_on(
    st: &AppState,
    auth: &Auth,
    bucket: &str,
    need: Option<(Role, Option<AclNeed>)>,
) -> S3Result<Access> {
    if auth.root {
        return Ok(Access::Granted);
    }
    let Some(b) = st.store.meta().bucket_cached(bucket).await? else {
        return Ok(Access::Granted);
    };
    let id = canonical(auth);
    let access = decide(
        false,
        principal(auth, &id),
        role_on(auth, &b),
        need,
        &grants::from_stored(&b.acl),
    );
    tracing::debug!(bucket, key = %auth.access_key, ?need, ?access, "authorization");
    Ok(access)
}

/// The outcome of authorizing a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// For the addressed bucket and object.
    pub access: Access,
    /// For a copy's source object: `Some(may_list)` when only the source object's ACL can
    /// allow reading it.
    pub source_acl: Option<bool>,
}

/// Authorizes an operation (and, for copies, reading the source). Takes the parts it needs
/// rather than the request, whose body is not `Sync`.
pub async fn authorize(
    st: &AppState,
    op: &Op,
    auth: &Auth,
    bucket: Option<String>,
    copy_source: Option<String>,
) -> S3Result<Decision> {
    let need = needs(op);
    let access = if need.is_none() {
        let id = canonical(auth);
        decide(auth.root, principal(auth, &id), None, None, &[])
    } else {
        decide_on(st, auth, bucket.as_deref().unwrap_or_default(), need).await?
    };
    if access == Access::Denied {
        return Err(S3Error::access_denied());
    }
    let mut source_acl = None;
    if let (Op::CopyObject | Op::UploadPartCopy, Some(src)) = (op, copy_source) {
        if let Ok((src_bucket, _)) = super::copy::parse_copy_source(&src) {
            let read = Some((Role::Read, Some(AclNeed::Object(Perm::Read))));
            match decide_on(st, auth, &src_bucket, read).await? {
                Access::Granted => {}
                Access::IfObjectAcl { may_list, .. } => source_acl = Some(may_list),
                Access::Denied => return Err(S3Error::access_denied()),
            }
        }
    }
    Ok(Decision { access, source_acl })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::acl::grants::{canned, Grantee};

    const ME: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn decision_table() {
        use Access::*;
        use Principal::{Anonymous, Key};
        let private: Vec<Grant> = vec![];
        let public_read = canned("public-read", false).unwrap();
        let public_rw = canned("public-read-write", false).unwrap();
        let auth_read = canned("authenticated-read", false).unwrap();
        let mine = vec![Grant::new(Grantee::User(ME.into()), Perm::Write)];
        let list = needs(&Op::ListObjectsV2);
        let get = needs(&Op::GetObject);
        let put = needs(&Op::PutObject);
        let cors = needs(&Op::PutBucketCors);
        let acl = needs(&Op::GetBucketAcl);
        let obj = |perm, may_list| IfObjectAcl { perm, may_list };
        type Case<'a> = (
            bool,
            Principal<'a>,
            Option<Role>,
            Option<(Role, Option<AclNeed>)>,
            &'a [Grant],
            Access,
        );
        let cases: Vec<Case> = vec![
            // Root, then the role.
            (true, Anonymous, None, cors, &private, Granted),
            (false, Key(ME), Some(Role::Owner), cors, &private, Granted),
            (false, Key(ME), Some(Role::Write), cors, &public_rw, Denied),
            (false, Key(ME), Some(Role::Read), put, &private, Denied),
            (false, Key(ME), Some(Role::Read), list, &private, Granted),
            (false, Key(ME), Some(Role::Read), get, &private, Granted),
            // Bucket ACLs.
            (false, Anonymous, None, list, &private, Denied),
            (false, Anonymous, None, list, &public_read, Granted),
            (false, Anonymous, None, put, &public_read, Denied),
            (false, Anonymous, None, put, &public_rw, Granted),
            (false, Anonymous, None, list, &auth_read, Denied),
            (false, Key(ME), None, list, &auth_read, Granted),
            (false, Key(ME), None, put, &mine, Granted),
            (false, Key(ME), None, list, &mine, Denied),
            (false, Anonymous, None, cors, &public_rw, Denied),
            (false, Anonymous, None, acl, &public_rw, Denied),
            // Objects: left to their ACL; a missing key is 404 only to who may list.
            (
                false,
                Anonymous,
                None,
                get,
                &private,
                obj(Perm::Read, false),
            ),
            (
                false,
                Anonymous,
                None,
                get,
                &public_read,
                obj(Perm::Read, true),
            ),
            (false, Key(ME), None, get, &mine, obj(Perm::Read, false)),
            // Not bucket operations.
            (false, Anonymous, None, None, &private, Denied),
            (false, Key(ME), None, None, &private, Granted),
        ];
        for (i, (root, who, role, need, acl, expect)) in cases.into_iter().enumerate() {
            assert_eq!(decide(root, who, role, need, acl), expect, "case {i}");
        }
    }

    #[test]
    fn every_bucket_operation_needs_a_role() {
        use Op::*;
        for op in [
            GetObjectAcl,
            PutObjectAcl,
            ListParts,
            DeleteObjects,
            GetBucketCors,
        ] {
            assert!(needs(&op).is_some(), "{op:?}");
        }
        assert_eq!(
            needs(&PutObjectAcl),
            Some((Role::Owner, Some(AclNeed::Object(Perm::WriteAcp))))
        );
    }
}
