use super::*;
use crate::s3::request::grants::canned;
use crate::s3::request::grants::{Grant, Grantee, Principal};

#[test]
fn an_sse_c_key_is_no_condition_value() {
    let mut h = axum::http::HeaderMap::new();
    h.insert(
        "x-amz-server-side-encryption-customer-key",
        "c2VjcmV0".parse().unwrap(),
    );
    h.insert(
        "x-amz-server-side-encryption-customer-key-md5",
        "bWQ1".parse().unwrap(),
    );
    let auth = Auth::anonymous();
    let v = facts(
        &h,
        &[],
        &auth,
        None,
        crate::tls::Transport::default(),
        chrono::Utc::now(),
    );
    assert!(!v.contains_key("s3:x-amz-server-side-encryption-customer-key"));
    assert!(!v.values().flatten().any(|x| x.contains("c2VjcmV0")));
    assert_eq!(
        v.get("s3:x-amz-server-side-encryption-customer-key-md5"),
        Some(&vec!["bWQ1".to_owned()])
    );
}

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
    let obj = |perm, may_list| IfObjectAcl {
        perm,
        may_list,
        ignore_public: false,
        acls_disabled: false,
    };
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
        let inputs = Inputs {
            role,
            bucket_acl: acl,
            ..Inputs::bare(root, who)
        };
        assert_eq!(decide(&Op::GetObject, need, &inputs), expect, "case {i}");
    }
}

#[test]
fn policy_verdicts_in_the_decision() {
    use Access::*;
    use Principal::{Anonymous, Key};
    fn base<'a>(who: Principal<'a>, role: Option<Role>, acl: &'a [Grant]) -> Inputs<'a> {
        Inputs {
            role,
            bucket_acl: acl,
            ..Inputs::bare(false, who)
        }
    }
    fn with(i: Inputs<'_>, policy: Verdict, policy_list: Verdict) -> Inputs<'_> {
        Inputs {
            policy,
            policy_list,
            ..i
        }
    }
    let public_read = canned("public-read", false).unwrap();
    let leaked: &[Grant] = &public_read;
    let get = needs(&Op::GetObject);
    let put = needs(&Op::PutObject);
    let cases = [
        // An explicit Deny beats the owner, a role, an ACL and the root key (as it binds
        // AWS's account root), except on the policy operations.
        (
            Op::PutObject,
            put,
            with(
                base(Key(ME), Some(Role::Owner), &[]),
                Verdict::Deny,
                Verdict::Silent,
            ),
            Denied,
        ),
        (
            Op::PutObject,
            put,
            with(Inputs::bare(true, Key(ME)), Verdict::Deny, Verdict::Silent),
            Denied,
        ),
        (
            Op::PutObject,
            put,
            with(
                Inputs::bare(true, Key(ME)),
                Verdict::Silent,
                Verdict::Silent,
            ),
            Granted,
        ),
        (
            Op::DeleteBucketPolicy,
            needs(&Op::DeleteBucketPolicy),
            with(Inputs::bare(true, Key(ME)), Verdict::Deny, Verdict::Deny),
            Granted,
        ),
        (
            Op::ListObjectsV2,
            needs(&Op::ListObjectsV2),
            with(base(Anonymous, None, leaked), Verdict::Deny, Verdict::Deny),
            Denied,
        ),
        // The owner keeps the policy operations whatever the policy says.
        (
            Op::DeleteBucketPolicy,
            needs(&Op::DeleteBucketPolicy),
            with(
                Inputs {
                    owner: true,
                    ..base(Key(ME), Some(Role::Owner), &[])
                },
                Verdict::Deny,
                Verdict::Silent,
            ),
            Granted,
        ),
        (
            Op::PutBucketPolicy,
            needs(&Op::PutBucketPolicy),
            with(
                base(Key(ME), Some(Role::Owner), &[]),
                Verdict::Deny,
                Verdict::Silent,
            ),
            Denied,
        ),
        // An Allow allows what nothing else does.
        (
            Op::PutObject,
            put,
            with(base(Anonymous, None, &[]), Verdict::Allow, Verdict::Silent),
            Granted,
        ),
        // ... but a missing key stays a 403 to whoever may not list the bucket.
        (
            Op::GetObject,
            get,
            with(base(Anonymous, None, &[]), Verdict::Allow, Verdict::Silent),
            GrantedUnlisted,
        ),
        (
            Op::GetObject,
            get,
            with(base(Anonymous, None, &[]), Verdict::Allow, Verdict::Allow),
            Granted,
        ),
        // Silence leaves the rest to decide; listing by policy makes a missing key a 404.
        (
            Op::GetObject,
            get,
            with(base(Anonymous, None, &[]), Verdict::Silent, Verdict::Allow),
            IfObjectAcl {
                perm: Perm::Read,
                may_list: true,
                ignore_public: false,
                acls_disabled: false,
            },
        ),
        (
            Op::GetObject,
            get,
            with(
                base(Anonymous, None, leaked),
                Verdict::Silent,
                Verdict::Deny,
            ),
            IfObjectAcl {
                perm: Perm::Read,
                may_list: false,
                ignore_public: false,
                acls_disabled: false,
            },
        ),
        (
            Op::PutObject,
            put,
            with(
                base(Key(ME), Some(Role::Write), &[]),
                Verdict::Silent,
                Verdict::Silent,
            ),
            Granted,
        ),
    ];
    for (i, (op, need, inputs, expect)) in cases.into_iter().enumerate() {
        assert_eq!(decide(&op, need, &inputs), expect, "case {i}");
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
