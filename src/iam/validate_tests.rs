//! Every check's edges: the last value that passes and the first that does not.

use super::*;

fn code(r: IamResult<()>) -> &'static str {
    match r {
        Ok(()) => "ok",
        Err(e) => e.code,
    }
}

#[test]
fn member_names() {
    assert_eq!(member_name("UserName"), "userName");
    assert_eq!(member_name("PolicyArn"), "policyArn");
    assert_eq!(member_name(""), "");
}

#[test]
fn names() {
    assert_eq!(code(user_name("UserName", "a")), "ok");
    assert_eq!(code(user_name("UserName", "Az09_+=,.@-")), "ok");
    assert_eq!(code(user_name("UserName", &"a".repeat(64))), "ok");
    assert_eq!(
        code(user_name("UserName", &"a".repeat(65))),
        "ValidationError"
    );
    assert_eq!(code(user_name("UserName", "")), "ValidationError");
    for bad in ["a b", "a/b", "a:b", "é", "a*", "a\u{0}"] {
        assert_eq!(
            code(user_name("UserName", bad)),
            "ValidationError",
            "{bad:?}"
        );
    }
    let e = user_name("NewUserName", &"a".repeat(65)).unwrap_err();
    assert_eq!(
        e.message,
        "1 validation error detected: Value at 'newUserName' failed to satisfy constraint: Member must have length less than or equal to 64"
    );
    let e = group_name("GroupName", "a b").unwrap_err();
    assert_eq!(
        e.message,
        "The specified value for groupName is invalid. It must contain only alphanumeric characters and/or the following: +=,.@_-"
    );
    assert_eq!(code(existing_user_name("UserName", &"a".repeat(128))), "ok");
    assert_eq!(
        code(existing_user_name("UserName", &"a".repeat(129))),
        "ValidationError"
    );
    assert_eq!(code(group_name("GroupName", &"g".repeat(128))), "ok");
    assert_eq!(
        code(group_name("GroupName", &"g".repeat(129))),
        "ValidationError"
    );
    assert_eq!(code(group_name("GroupName", "a&b")), "ValidationError");
    assert_eq!(code(policy_name("PolicyName", &"p".repeat(128))), "ok");
    assert_eq!(
        code(policy_name("PolicyName", &"p".repeat(129))),
        "ValidationError"
    );
    assert_eq!(code(role_name("RoleName", &"r".repeat(64))), "ok");
    assert_eq!(
        code(role_name("RoleName", &"r".repeat(65))),
        "ValidationError"
    );
}

#[test]
fn paths() {
    for ok in [
        "/",
        "/a/",
        "/a/b/",
        "///",
        "/!~/",
        &format!("/{}/", "a".repeat(510)),
    ] {
        assert_eq!(code(path("Path", ok)), "ok", "{ok}");
    }
    let e = path("NewPath", "bad").unwrap_err();
    assert_eq!(
        e.message,
        "The specified value for newPath is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters."
    );
    for bad in [
        "",
        "//",
        "a/",
        "/a",
        "/a b/",
        "/é/",
        "/\u{7f}/",
        &format!("/{}/", "a".repeat(511)),
    ] {
        assert_eq!(code(path("Path", bad)), "ValidationError", "{bad}");
    }
    for ok in ["/", "/a", "/a/b/", "/\u{7f}"] {
        assert_eq!(code(path_prefix("PathPrefix", ok)), "ok", "{ok:?}");
    }
    for bad in ["", "a", "/ ", "/é", &format!("/{}", "a".repeat(512))] {
        assert_eq!(
            code(path_prefix("PathPrefix", bad)),
            "ValidationError",
            "{bad}"
        );
    }
    assert_eq!(
        path_prefix("PathPrefix", "a").unwrap_err().message,
        "The specified value for pathPrefix is invalid. It must begin with the / character and contain only alphanumeric characters and/or / characters."
    );
    for ok in ["/", "/a/", "/a.b,c+d@e=f_g-h/i/", "/A9/"] {
        assert_eq!(code(policy_path("Path", ok)), "ok", "{ok}");
    }
    for bad in ["", "//", "/a", "a/", "/a//b/", "/a b/", "/a!/", "/a~/"] {
        assert_eq!(code(policy_path("Path", bad)), "ValidationError", "{bad}");
    }
}

#[test]
fn policy_documents() {
    assert_eq!(code(policy_document("PolicyDocument", "{}")), "ok");
    assert_eq!(
        code(policy_document("PolicyDocument", "{\t\r\n é ÿ}")),
        "ok"
    );
    assert_eq!(
        code(policy_document("PolicyDocument", &"x".repeat(131_072))),
        "ok"
    );
    assert_eq!(
        code(policy_document("PolicyDocument", &"x".repeat(131_073))),
        "ValidationError"
    );
    assert_eq!(
        code(policy_document("PolicyDocument", "")),
        "ValidationError"
    );
    for bad in [
        "{\u{0}}",
        "{\u{b}}",
        "{\u{7f}}x",
        "{\u{100}}",
        "{日本}",
        "{🙂}",
    ] {
        let r = policy_document("PolicyDocument", bad);
        if bad.contains('\u{7f}') {
            // U+007F is inside \u0020-\u00FF.
            assert_eq!(code(r), "ok");
            continue;
        }
        let e = r.unwrap_err();
        assert_eq!(e.code, "ValidationError", "{bad:?}");
        assert!(e.message.contains("at 'policyDocument'"), "{}", e.message);
    }
}

#[test]
fn quotas_count_non_whitespace() {
    assert_eq!(policy_size("{ \"a\" :\n\t\"b\" }\r\n"), 9);
    assert_eq!(policy_size("é ÿ"), 2);
    let doc = |n: usize| format!("{}{}", "x".repeat(n), " \n".repeat(5000));
    assert_eq!(code(managed_policy_size(&doc(6144))), "ok");
    let e = managed_policy_size(&doc(6145)).unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (409, "LimitExceeded"));
    assert_eq!(e.message, "Cannot exceed quota for PolicySize: 6144");
    assert_eq!(
        code(inline_policies_size(InlineOwner::User, "alice", 2048)),
        "ok"
    );
    let e = inline_policies_size(InlineOwner::User, "alice", 2049).unwrap_err();
    assert_eq!(e.code, "LimitExceeded");
    assert_eq!(
        e.message,
        "Maximum policy size of 2048 bytes exceeded for user alice"
    );
    assert_eq!(
        code(inline_policies_size(InlineOwner::Group, "g", 5120)),
        "ok"
    );
    assert_eq!(
        code(inline_policies_size(InlineOwner::Group, "g", 5121)),
        "LimitExceeded"
    );
    assert_eq!(
        code(inline_policies_size(InlineOwner::Role, "r", 10240)),
        "ok"
    );
    assert_eq!(
        code(inline_policies_size(InlineOwner::Role, "r", 10241)),
        "LimitExceeded"
    );
}

#[test]
fn descriptions() {
    assert_eq!(code(description("Description", "")), "ok");
    assert_eq!(
        code(description("Description", "line\nline\ttab é 日本")),
        "ok"
    );
    assert_eq!(code(description("Description", &"d".repeat(1000))), "ok");
    assert_eq!(
        code(description("Description", &"d".repeat(1001))),
        "ValidationError"
    );
    assert_eq!(code(description("Description", "a\u{1}b")), "InvalidInput");
    assert_eq!(
        code(description("Description", "a\u{fffe}")),
        "InvalidInput"
    );
}

#[test]
fn tags() {
    let k = |v: &str| code(tag_key_at("tags.1.member.key", v));
    let val = |v: &str| code(tag_value_at("tags.1.member.value", v));
    assert_eq!(k("a"), "ok");
    assert_eq!(k("Team Name_.:/=+-@ 9 é 日本 ٣"), "ok");
    assert_eq!(k(&"k".repeat(128)), "ok");
    assert_eq!(k(&"k".repeat(129)), "ValidationError");
    assert_eq!(k(""), "ValidationError");
    for bad in ["a!", "a<b", "a\tb", "a\nb", "a*", "a#", "🙂"] {
        assert_eq!(k(bad), "ValidationError", "{bad:?}");
    }
    assert_eq!(k("aws:cloudformation"), "InvalidInput");
    assert_eq!(k("AWS:x"), "InvalidInput");
    assert_eq!(k("é日x"), "ok", "no panic on a multi-byte prefix");
    assert_eq!(val(""), "ok");
    assert_eq!(val(&"v".repeat(256)), "ok");
    assert_eq!(val(&"v".repeat(257)), "ValidationError");
    assert_eq!(val("a&b"), "ValidationError");
    assert_eq!(val("aws:fine in a value"), "ok");
}

#[test]
fn markers_and_keys() {
    assert_eq!(code(marker("Marker", "a b~ÿ")), "ok");
    assert_eq!(code(marker("Marker", "\u{100}")), "ValidationError");
    assert_eq!(
        code(access_key_id("AccessKeyId", "AKIAIOSFODNN7EXAMPLE")),
        "ok"
    );
    assert_eq!(code(access_key_id("AccessKeyId", &"A".repeat(16))), "ok");
    assert_eq!(
        code(access_key_id("AccessKeyId", &"A".repeat(15))),
        "ValidationError"
    );
    assert_eq!(code(access_key_id("AccessKeyId", &"A".repeat(128))), "ok");
    assert_eq!(
        code(access_key_id("AccessKeyId", &"A".repeat(129))),
        "ValidationError"
    );
    assert_eq!(
        code(access_key_id("AccessKeyId", "AKIAIOSFODNN7EXAMPL-")),
        "ValidationError"
    );
    assert_eq!(
        access_key_status("Status", "Active").unwrap(),
        KeyStatus::Active
    );
    assert_eq!(
        access_key_status("Status", "Inactive").unwrap(),
        KeyStatus::Inactive
    );
    assert_eq!(KeyStatus::Inactive.as_str(), "Inactive");
    let e = access_key_status("Status", "active").unwrap_err();
    assert_eq!(e.code, "ValidationError");
    assert!(
        e.message
            .ends_with("Member must satisfy enum value set: [Active, Inactive, Expired]"),
        "{}",
        e.message
    );
    assert_eq!(
        access_key_status("Status", "Expired").unwrap_err().code,
        "InvalidInput"
    );
    assert_eq!(code(access_key_status_check("Status", "Active")), "ok");
}

#[test]
fn version_ids() {
    for ok in ["v1", "v9", "v10", "v123", "v1.a-B9", "v2."] {
        assert_eq!(code(version_id("VersionId", ok)), "ok", "{ok}");
    }
    for bad in [
        "", "v", "v0", "v01", "1", "V1", "v1a", "v-1", "v1.a_b", "v1.é",
    ] {
        assert_eq!(
            code(version_id("VersionId", bad)),
            "ValidationError",
            "{bad}"
        );
    }
}

#[test]
fn enums() {
    let scopes = ["All", "AWS", "Local"];
    assert_eq!(code(one_of("Scope", "Local", &scopes)), "ok");
    let e = one_of("Scope", "local", &scopes).unwrap_err();
    assert_eq!(
        e.message,
        "1 validation error detected: Value at 'scope' failed to satisfy constraint: Member must satisfy enum value set: [All, AWS, Local]"
    );
}

#[test]
fn policy_arns() {
    let a = policy_arn("PolicyArn", "arn:aws:iam::123456789012:policy/ReadOnly").unwrap();
    assert_eq!(
        a,
        PolicyArn {
            account: "123456789012".into(),
            path: "/".into(),
            name: "ReadOnly".into()
        }
    );
    assert_eq!(a.to_string(), "arn:aws:iam::123456789012:policy/ReadOnly");
    let a = policy_arn(
        "PolicyArn",
        "arn:aws:iam::aws:policy/service-role/AmazonS3Full",
    )
    .unwrap();
    assert_eq!(
        (a.account.as_str(), a.path.as_str(), a.name.as_str()),
        ("aws", "/service-role/", "AmazonS3Full")
    );
    assert_eq!(
        a.to_string(),
        "arn:aws:iam::aws:policy/service-role/AmazonS3Full"
    );
    // Under 20 characters: the model's length, ValidationError.
    let e = policy_arn("PolicyArn", "arn:aws:iam::1:p/x").unwrap_err();
    assert_eq!(e.code, "ValidationError");
    assert!(e.message.contains("at 'policyArn'"), "{}", e.message);
    assert_eq!(
        code(policy_arn_check(
            "PolicyArn",
            &format!("arn:aws:iam::123456789012:policy/{}", "a".repeat(2048))
        )),
        "ValidationError"
    );
    for bad in [
        "arn:aws:iam::12345678901:policy/P",
        "arn:aws:iam::1234567890123:policy/P",
        "arn:aws:iam::12345678901a:policy/P",
        "arn:aws:s3:::123456789012/policy/P",
        "arn:aws-cn:iam::123456789012:policy/P",
        "arn:aws:iam::123456789012:user/alice",
        "arn:aws:iam::123456789012:policy/",
        "arn:aws:iam::123456789012:policy/a//P",
        "arn:aws:iam::123456789012:policy/a b/P",
        "arn:aws:iam::123456789012:policyP",
        "arn:aws:iam::123456789012:policy/P!",
        "not an arn at all, but long",
    ] {
        let e = policy_arn("PolicyArn", bad).unwrap_err();
        assert_eq!(e.code, "InvalidInput", "{bad}");
        assert_eq!(e.message, format!("ARN {bad} is not valid."));
    }
    assert_eq!(
        user_arn("123456789012", "/a/", "bob"),
        "arn:aws:iam::123456789012:user/a/bob"
    );
    assert_eq!(
        group_arn("123456789012", "/", "devs"),
        "arn:aws:iam::123456789012:group/devs"
    );
}
