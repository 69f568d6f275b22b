//! Golden strings for a few shapes, the escaping and encoding rules, and (ignored) a dump of
//! one sample per operation for `tests/py/iam_shapes.py`, which feeds them to botocore.

use super::*;
use chrono::TimeZone;

fn t(h: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 12, 6, h, 0, 0).unwrap()
}

fn user(name: &str, tags: &[(&str, &str)]) -> UserView {
    UserView {
        path: "/eng/".into(),
        name: name.into(),
        id: format!("AIDA{}EXAMPLE0000", name.to_uppercase()),
        arn: format!("arn:aws:iam::123456789012:user/eng/{name}"),
        created: t(9),
        tags: tags
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    }
}

fn group(name: &str) -> GroupView {
    GroupView {
        path: "/".into(),
        name: name.into(),
        id: "AGPAEXAMPLE000000001".into(),
        arn: format!("arn:aws:iam::123456789012:group/{name}"),
        created: t(8),
    }
}

fn policy() -> PolicyView {
    PolicyView {
        name: "ReadLogs".into(),
        id: "ANPAEXAMPLE000000001".into(),
        arn: "arn:aws:iam::123456789012:policy/ops/ReadLogs".into(),
        path: "/ops/".into(),
        default_version_id: "v2".into(),
        attachment_count: 3,
        is_attachable: true,
        description: Some("read <logs> & more".into()),
        created: t(7),
        updated: t(10),
        tags: vec![("team".into(), "ops".into())],
    }
}

const DOC: &str = "{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [{\"Effect\": \"Allow\", \"Action\": \"s3:GetObject\", \"Resource\": \"arn:aws:s3:::logs/a+b é/*\"}]\n}";

fn version(id: &str, default: bool) -> PolicyVersionView {
    PolicyVersionView {
        document: DOC.into(),
        version_id: id.into(),
        is_default: default,
        created: t(11),
    }
}

fn key(secret: Option<&str>) -> AccessKeyView {
    AccessKeyView {
        user_name: "alice".into(),
        id: "AKIAIOSFODNN7EXAMPLE".into(),
        status: KeyStatus::Active,
        secret: secret.map(str::to_owned),
        created: t(12),
    }
}

const NS: &str = "xmlns=\"https://iam.amazonaws.com/doc/2010-05-08/\"";

#[test]
fn golden_create_user() {
    assert_eq!(
        create_user(&user("alice", &[("team", "a&b")]), "rid-1"),
        format!(
            "<CreateUserResponse {NS}><CreateUserResult><User><Path>/eng/</Path><UserName>alice</UserName><UserId>AIDAALICEEXAMPLE0000</UserId><Arn>arn:aws:iam::123456789012:user/eng/alice</Arn><CreateDate>2026-12-06T09:00:00Z</CreateDate><Tags><member><Key>team</Key><Value>a&amp;b</Value></member></Tags></User></CreateUserResult><ResponseMetadata><RequestId>rid-1</RequestId></ResponseMetadata></CreateUserResponse>"
        )
    );
}

#[test]
fn golden_empty_and_list_users() {
    assert_eq!(
        empty("DeleteUser", "rid-2"),
        format!("<DeleteUserResponse {NS}><ResponseMetadata><RequestId>rid-2</RequestId></ResponseMetadata></DeleteUserResponse>")
    );
    // Tags are not listed; the page says whether there is more.
    assert_eq!(
        list_users(&[user("bob", &[("k", "v")])], Some("m<1"), "rid-3"),
        format!(
            "<ListUsersResponse {NS}><ListUsersResult><Users><member><Path>/eng/</Path><UserName>bob</UserName><UserId>AIDABOBEXAMPLE0000</UserId><Arn>arn:aws:iam::123456789012:user/eng/bob</Arn><CreateDate>2026-12-06T09:00:00Z</CreateDate></member></Users><IsTruncated>true</IsTruncated><Marker>m&lt;1</Marker></ListUsersResult><ResponseMetadata><RequestId>rid-3</RequestId></ResponseMetadata></ListUsersResponse>"
        )
    );
    assert_eq!(
        list_users(&[], None, "r"),
        format!("<ListUsersResponse {NS}><ListUsersResult><Users></Users><IsTruncated>false</IsTruncated></ListUsersResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></ListUsersResponse>")
    );
}

#[test]
fn golden_access_keys() {
    assert_eq!(
        create_access_key(&key(Some("wJalr/K7MDENG+bPxRfiCY")), "r"),
        format!(
            "<CreateAccessKeyResponse {NS}><CreateAccessKeyResult><AccessKey><UserName>alice</UserName><AccessKeyId>AKIAIOSFODNN7EXAMPLE</AccessKeyId><Status>Active</Status><SecretAccessKey>wJalr/K7MDENG+bPxRfiCY</SecretAccessKey><CreateDate>2026-12-06T12:00:00Z</CreateDate></AccessKey></CreateAccessKeyResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></CreateAccessKeyResponse>"
        )
    );
    let l = list_access_keys(&[key(Some("never shown"))], None, "r");
    assert!(!l.contains("never shown") && !l.contains("Secret"), "{l}");
    assert!(l.contains("<AccessKeyMetadata><member><UserName>alice</UserName><AccessKeyId>AKIAIOSFODNN7EXAMPLE</AccessKeyId><Status>Active</Status><CreateDate>2026-12-06T12:00:00Z</CreateDate></member></AccessKeyMetadata><IsTruncated>false</IsTruncated>"), "{l}");
    assert_eq!(
        get_access_key_last_used("alice", None, "r"),
        format!("<GetAccessKeyLastUsedResponse {NS}><GetAccessKeyLastUsedResult><UserName>alice</UserName><AccessKeyLastUsed><ServiceName>N/A</ServiceName><Region>N/A</Region></AccessKeyLastUsed></GetAccessKeyLastUsedResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetAccessKeyLastUsedResponse>")
    );
    let used = KeyLastUsedView {
        date: t(13),
        service_name: "s3".into(),
        region: "us-east-1".into(),
    };
    assert!(get_access_key_last_used("alice", Some(&used), "r").contains(
        "<AccessKeyLastUsed><LastUsedDate>2026-12-06T13:00:00Z</LastUsedDate><ServiceName>s3</ServiceName><Region>us-east-1</Region></AccessKeyLastUsed>"
    ));
}

#[test]
fn golden_policy_version_document_is_url_encoded() {
    let x = get_policy_version(&version("v2", true), "r");
    let enc = encode_document(DOC);
    assert!(
        enc.starts_with("%7B%0A%20%20%22Version%22%3A%20%222012-10-17%22%2C"),
        "{enc}"
    );
    // `+` and non-ASCII are percent-encoded (botocore `unquote`s, which keeps a bare `+`).
    assert!(enc.contains("logs%2Fa%2Bb%20%C3%A9%2F%2A"), "{enc}");
    assert_eq!(
        x,
        format!("<GetPolicyVersionResponse {NS}><GetPolicyVersionResult><PolicyVersion><Document>{enc}</Document><VersionId>v2</VersionId><IsDefaultVersion>true</IsDefaultVersion><CreateDate>2026-12-06T11:00:00Z</CreateDate></PolicyVersion></GetPolicyVersionResult><ResponseMetadata><RequestId>r</RequestId></ResponseMetadata></GetPolicyVersionResponse>")
    );
    assert!(!create_policy_version(&version("v3", false), "r").contains("Document"));
    assert!(!list_policy_versions(&[version("v1", false)], None, "r").contains("Document"));
    let g = get_user_policy("alice", "inline", "{\"a\":\"<&>\"}", "r");
    assert!(
        g.contains("<PolicyDocument>%7B%22a%22%3A%22%3C%26%3E%22%7D</PolicyDocument>"),
        "{g}"
    );
}

#[test]
fn policies_full_in_get_and_short_in_lists() {
    let g = get_policy(&policy(), "r");
    assert!(
        g.contains("<Description>read &lt;logs&gt; &amp; more</Description>"),
        "{g}"
    );
    assert!(g.contains("<Tags><member><Key>team</Key><Value>ops</Value></member></Tags>"));
    assert!(g.contains("<DefaultVersionId>v2</DefaultVersionId><AttachmentCount>3</AttachmentCount><PermissionsBoundaryUsageCount>0</PermissionsBoundaryUsageCount><IsAttachable>true</IsAttachable>"), "{g}");
    let l = list_policies(&[policy()], None, "r");
    assert!(!l.contains("Description") && !l.contains("Tags"), "{l}");
    assert!(
        l.contains("<UpdateDate>2026-12-06T10:00:00Z</UpdateDate>"),
        "{l}"
    );
    let mut p = policy();
    p.description = None;
    p.tags.clear();
    let c = create_policy(&p, "r");
    assert!(!c.contains("Description") && !c.contains("Tags"), "{c}");
}

#[test]
fn groups_and_entities() {
    let g = get_group(
        &group("devs"),
        &[user("alice", &[("k", "v")])],
        Some("n"),
        "r",
    );
    assert!(g.starts_with(&format!("<GetGroupResponse {NS}><GetGroupResult><Group><Path>/</Path><GroupName>devs</GroupName>")), "{g}");
    assert!(
        g.contains("</Group><Users><member><Path>/eng/</Path><UserName>alice</UserName>"),
        "{g}"
    );
    assert!(!g.contains("<Tags>"), "{g}");
    assert!(
        g.contains("<IsTruncated>true</IsTruncated><Marker>n</Marker></GetGroupResult>"),
        "{g}"
    );
    let e = list_entities_for_policy(
        &[EntityView {
            name: "devs".into(),
            id: "AGPA1".into(),
        }],
        &[],
        &[],
        None,
        "r",
    );
    assert!(e.contains("<PolicyGroups><member><GroupName>devs</GroupName><GroupId>AGPA1</GroupId></member></PolicyGroups><PolicyUsers></PolicyUsers><PolicyRoles></PolicyRoles><IsTruncated>false</IsTruncated>"), "{e}");
    let n = list_group_policies(&["a".into(), "b&c".into()], None, "r");
    assert!(
        n.contains("<PolicyNames><member>a</member><member>b&amp;c</member></PolicyNames>"),
        "{n}"
    );
}

#[tokio::test]
async fn response_headers() {
    let r = response(empty("TagUser", "rid-9"), "rid-9");
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "text/xml");
    assert_eq!(r.headers()["x-amzn-requestid"], "rid-9");
}

/// One sample answer per operation, as JSON `{Operation: xml}`, written to the file named by
/// `IAM_SAMPLES` (run with `--ignored`): `tests/py/iam_shapes.py` parses each with botocore.
#[test]
#[ignore]
fn dump_samples() {
    let rid = "c0ffee00-0000-4000-8000-000000000001";
    let u = user("alice", &[("team", "a&b"), ("env", "")]);
    let g = group("devs");
    let p = policy();
    let att = [AttachedPolicyView {
        name: p.name.clone(),
        arn: p.arn.clone(),
    }];
    let ent = |n: &str, id: &str| EntityView {
        name: n.into(),
        id: id.into(),
    };
    let used = KeyLastUsedView {
        date: t(13),
        service_name: "s3".into(),
        region: "us-east-1".into(),
    };
    let names = vec!["inline-1".to_owned(), "inline-2".to_owned()];
    let mut s: Vec<(&str, String)> = vec![
        ("CreateUser", create_user(&u, rid)),
        ("GetUser", get_user(&u, rid)),
        (
            "ListUsers",
            list_users(&[u.clone(), user("bob", &[])], Some("next-1"), rid),
        ),
        ("ListUserTags", list_user_tags(&u.tags, None, rid)),
        (
            "CreateAccessKey",
            create_access_key(&key(Some("wJalr/K7MDENG+bPxRfiCY")), rid),
        ),
        ("ListAccessKeys", list_access_keys(&[key(None)], None, rid)),
        (
            "GetAccessKeyLastUsed",
            get_access_key_last_used("alice", None, rid),
        ),
        (
            "GetAccessKeyLastUsed#used",
            get_access_key_last_used("alice", Some(&used), rid),
        ),
        ("CreateGroup", create_group(&g, rid)),
        (
            "GetGroup",
            get_group(&g, std::slice::from_ref(&u), Some("next-2"), rid),
        ),
        (
            "ListGroups",
            list_groups(std::slice::from_ref(&g), None, rid),
        ),
        (
            "ListGroupsForUser",
            list_groups_for_user(std::slice::from_ref(&g), None, rid),
        ),
        ("CreatePolicy", create_policy(&p, rid)),
        ("GetPolicy", get_policy(&p, rid)),
        (
            "ListPolicies",
            list_policies(std::slice::from_ref(&p), Some("next-3"), rid),
        ),
        (
            "CreatePolicyVersion",
            create_policy_version(&version("v3", false), rid),
        ),
        (
            "GetPolicyVersion",
            get_policy_version(&version("v2", true), rid),
        ),
        (
            "ListPolicyVersions",
            list_policy_versions(&[version("v2", true), version("v1", false)], None, rid),
        ),
        (
            "ListAttachedUserPolicies",
            list_attached_user_policies(&att, None, rid),
        ),
        (
            "ListAttachedGroupPolicies",
            list_attached_group_policies(&att, Some("next-4"), rid),
        ),
        (
            "ListEntitiesForPolicy",
            list_entities_for_policy(
                &[ent("devs", "AGPAEXAMPLE000000001")],
                &[ent("alice", "AIDAALICEEXAMPLE0000")],
                &[],
                None,
                rid,
            ),
        ),
        (
            "GetUserPolicy",
            get_user_policy("alice", "inline-1", DOC, rid),
        ),
        (
            "GetGroupPolicy",
            get_group_policy("devs", "inline-1", DOC, rid),
        ),
        ("ListUserPolicies", list_user_policies(&names, None, rid)),
        (
            "ListGroupPolicies",
            list_group_policies(&names, Some("next-5"), rid),
        ),
    ];
    for action in [
        "UpdateUser",
        "DeleteUser",
        "TagUser",
        "UntagUser",
        "UpdateAccessKey",
        "DeleteAccessKey",
        "DeleteGroup",
        "AddUserToGroup",
        "RemoveUserFromGroup",
        "DeletePolicy",
        "SetDefaultPolicyVersion",
        "DeletePolicyVersion",
        "AttachUserPolicy",
        "DetachUserPolicy",
        "AttachGroupPolicy",
        "DetachGroupPolicy",
        "PutUserPolicy",
        "DeleteUserPolicy",
        "PutGroupPolicy",
        "DeleteGroupPolicy",
    ] {
        s.push((action, empty(action, rid)));
    }
    let e = crate::iam::error::IamError::no_such_entity("The user with name bob cannot be found.");
    s.push(("#error", e.to_xml(rid)));
    let map: serde_json::Map<String, serde_json::Value> = s
        .into_iter()
        .map(|(k, v)| (k.to_owned(), serde_json::Value::String(v)))
        .collect();
    let mut out = serde_json::json!({ "samples": map, "document": DOC });
    out["rid"] = rid.into();
    let path = std::env::var("IAM_SAMPLES").expect("IAM_SAMPLES names the output file");
    std::fs::write(path, serde_json::to_string_pretty(&out).unwrap()).unwrap();
}
