//! AWS's documented evaluation cases for identity and session policies, as a table over the
//! one engine (the join with the bucket's side is `s3::rules::identity`'s table).

use std::collections::HashMap;
use std::sync::Arc;

use super::super::{parse_identity, Context, Policy, Verdict, Who};
use super::IdentityPolicies;

fn p(statements: &str) -> Arc<Policy> {
    Arc::new(
        parse_identity(&format!(
            r#"{{"Version":"2012-10-17","Statement":[{statements}]}}"#
        ))
        .unwrap_or_else(|e| panic!("{}: {statements}", e.message)),
    )
}

fn alice(action: &'static str, resource: &str, extra: &[(&str, &str)]) -> Context {
    let mut values: HashMap<String, Vec<String>> = HashMap::from([
        ("aws:username".into(), vec!["alice".into()]),
        ("aws:principaltag/team".into(), vec!["red".into()]),
    ]);
    for (k, v) in extra {
        values.insert(k.to_ascii_lowercase(), vec![(*v).to_owned()]);
    }
    Context {
        who: Who::User {
            arn: "arn:aws:iam::111111111111:user/alice".into(),
            account: "111111111111".into(),
            direct_only: false,
            role: None,
        },
        action,
        resource: resource.to_owned(),
        values,
    }
}

fn set(ps: &[(&str, Arc<Policy>)]) -> IdentityPolicies {
    IdentityPolicies {
        policies: ps
            .iter()
            .map(|(l, p)| ((*l).to_owned(), p.clone()))
            .collect(),
    }
}

const HOME: &str = r#"{"Effect":"Allow","Action":"s3:ListBucket","Resource":"arn:aws:s3:::team","Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*"]}}},
    {"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::team/home/${aws:username}/*"}"#;

#[test]
fn aws_identity_evaluation_table() {
    use Verdict::{Allow, Deny, Silent};
    let user_allow =
        p(r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#);
    let group_deny =
        p(r#"{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/secret/*"}"#);
    let not_action =
        p(r#"{"Effect":"Allow","NotAction":"s3:DeleteObject","Resource":"arn:aws:s3:::b/*"}"#);
    let not_resource =
        p(r#"{"Effect":"Allow","Action":"s3:GetObject","NotResource":"arn:aws:s3:::b/private/*"}"#);
    let by_name = p(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringEquals":{"aws:username":"alice"}}}"#,
    );
    let by_tag = p(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"*","Condition":{"StringEquals":{"aws:PrincipalTag/team":"blue"}}}"#,
    );
    let home = p(HOME);
    let rows: Vec<(&str, IdentityPolicies, Context, Verdict)> = vec![
        (
            "an identity Allow alone",
            set(&[("user", user_allow.clone())]),
            alice("s3:GetObject", "arn:aws:s3:::b/x", &[]),
            Allow,
        ),
        (
            "nothing applies: an implicit deny",
            set(&[("user", user_allow.clone())]),
            alice("s3:PutObject", "arn:aws:s3:::b/x", &[]),
            Silent,
        ),
        (
            "a Deny in a group's policy beats the user's Allow",
            set(&[("user", user_allow.clone()), ("group", group_deny.clone())]),
            alice("s3:GetObject", "arn:aws:s3:::b/secret/x", &[]),
            Deny,
        ),
        (
            "the group's Deny elsewhere leaves the Allow",
            set(&[("user", user_allow), ("group", group_deny)]),
            alice("s3:GetObject", "arn:aws:s3:::b/open/x", &[]),
            Allow,
        ),
        (
            "NotAction allows what it does not name",
            set(&[("p", not_action.clone())]),
            alice("s3:PutObject", "arn:aws:s3:::b/x", &[]),
            Allow,
        ),
        (
            "and not what it names",
            set(&[("p", not_action)]),
            alice("s3:DeleteObject", "arn:aws:s3:::b/x", &[]),
            Silent,
        ),
        (
            "NotResource allows elsewhere",
            set(&[("p", not_resource.clone())]),
            alice("s3:GetObject", "arn:aws:s3:::b/public/x", &[]),
            Allow,
        ),
        (
            "and not on what it excludes",
            set(&[("p", not_resource)]),
            alice("s3:GetObject", "arn:aws:s3:::b/private/x", &[]),
            Silent,
        ),
        (
            "a condition on aws:username",
            set(&[("p", by_name)]),
            alice("s3:GetObject", "arn:aws:s3:::b/x", &[]),
            Allow,
        ),
        (
            "a condition on a principal tag that does not hold",
            set(&[("p", by_tag)]),
            alice("s3:GetObject", "arn:aws:s3:::b/x", &[]),
            Silent,
        ),
        (
            "the home folder: her own",
            set(&[("home", home.clone())]),
            alice("s3:GetObject", "arn:aws:s3:::team/home/alice/a.txt", &[]),
            Allow,
        ),
        (
            "the home folder: another's",
            set(&[("home", home.clone())]),
            alice("s3:GetObject", "arn:aws:s3:::team/home/bob/b.txt", &[]),
            Silent,
        ),
        (
            "listing her home",
            set(&[("home", home.clone())]),
            alice(
                "s3:ListBucket",
                "arn:aws:s3:::team",
                &[("s3:prefix", "home/alice/")],
            ),
            Allow,
        ),
        (
            "listing the bucket's root",
            set(&[("home", home)]),
            alice("s3:ListBucket", "arn:aws:s3:::team", &[("s3:prefix", "")]),
            Silent,
        ),
    ];
    for (what, policies, cx, want) in rows {
        assert_eq!(policies.evaluate(&cx).verdict, want, "{what}");
    }
}

/// A session policy (a service account's) cuts its parent's rights and never adds to them:
/// a request passes only if the parent's policies allow it **and** every session policy does
/// (`auth::session::allows`).
#[test]
fn a_session_policy_only_cuts() {
    let parent = set(&[(
        "parent",
        p(
            r#"{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject"],"Resource":"arn:aws:s3:::b/*"}"#,
        ),
    )]);
    let narrow = vec![p(
        r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#,
    )];
    let wide = vec![p(r#"{"Effect":"Allow","Action":"*","Resource":"*"}"#)];
    let allowed = |sessions: &[Arc<Policy>], action: &'static str, res: &str| {
        let cx = alice(action, res, &[]);
        parent.evaluate(&cx).verdict == Verdict::Allow
            && crate::auth::session::allows(sessions, &cx)
    };
    assert!(
        allowed(&narrow, "s3:GetObject", "arn:aws:s3:::b/x"),
        "both allow"
    );
    assert!(
        !allowed(&narrow, "s3:PutObject", "arn:aws:s3:::b/x"),
        "the parent allows, the session does not: cut"
    );
    assert!(
        !allowed(&wide, "s3:DeleteObject", "arn:aws:s3:::b/x"),
        "the session allows everything, the parent does not: nothing added"
    );
    assert!(
        !allowed(&wide, "s3:GetObject", "arn:aws:s3:::other/x"),
        "nor on another bucket"
    );
    assert!(
        !allowed(
            &[
                narrow[0].clone(),
                p(
                    r#"{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/secret/*"}"#
                )
            ],
            "s3:GetObject",
            "arn:aws:s3:::b/secret/x"
        ),
        "every session policy must allow (an inherited one's Deny holds)"
    );
    assert!(
        allowed(&[], "s3:PutObject", "arn:aws:s3:::b/x"),
        "no session: the parent's rights"
    );
}

/// Policy variables are replaced only in a `2012-10-17` policy, as AWS reads them.
#[test]
fn variables_only_in_2012_policies() {
    let doc = |version: &str| {
        parse_identity(&format!(
            r#"{{"Version":"{version}","Statement":[{{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/home/${{aws:username}}/*"}}]}}"#
        ))
        .unwrap()
    };
    let cx = alice("s3:GetObject", "arn:aws:s3:::b/home/alice/x", &[]);
    assert_eq!(doc("2012-10-17").evaluate(&cx), Verdict::Allow);
    assert_eq!(doc("2008-10-17").evaluate(&cx), Verdict::Silent);
}
