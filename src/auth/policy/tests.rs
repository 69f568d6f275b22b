use super::*;

const ME: &str = "AKME";
const ME_CANON: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn known(k: &str) -> bool {
    k == ME || k == "AKOTHER"
}

fn cx(who: Who, action: &'static str, resource: &str, vals: &[(&str, &str)]) -> Context {
    let mut values: HashMap<String, Vec<String>> = HashMap::new();
    for (k, v) in vals {
        values
            .entry(k.to_ascii_lowercase())
            .or_default()
            .push((*v).to_owned());
    }
    if let Who::Key { id, .. } = &who {
        values.insert("aws:username".into(), vec![id.clone()]);
    }
    Context {
        who,
        action,
        resource: format!("arn:aws:s3:::b/{resource}"),
        values,
    }
}

fn me() -> Who {
    Who::Key {
        id: ME.into(),
        canonical: ME_CANON.into(),
        account: "111111111111".into(),
    }
}

fn other() -> Who {
    Who::Key {
        id: "AKOTHER".into(),
        canonical: "f".repeat(64),
        account: "222222222222".into(),
    }
}

fn policy(statements: &str) -> Policy {
    parse(
        &format!(r#"{{"Version":"2012-10-17","Statement":[{statements}]}}"#),
        "b",
        &known,
    )
    .unwrap_or_else(|e| panic!("{}: {statements}", e.message))
}

#[test]
fn parse_errors_are_malformed_policy_with_a_reason() {
    let bad = [
        ("not json", "valid JSON"),
        (r#"{"Statement": []}"#, "Statement"),
        (
            r#"{"Version":"2012-10-17"}"#,
            "Missing required field Statement",
        ),
        (
            r#"{"Statement":{"Effect":"Maybe","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}}"#,
            "Invalid effect",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}}"#,
            "Principal",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:Fly","Resource":"arn:aws:s3:::b/*"}}"#,
            "invalid action",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other/*"}}"#,
            "invalid resource",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Principal":{"AWS":"nobody"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}}"#,
            "Invalid principal",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"StringFuzzy":{"s3:prefix":"a"}}}}"#,
            "Invalid Condition type",
        ),
        (
            r#"{"Statement":{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"300.1.1.1/8"}}}}"#,
            "Invalid value",
        ),
    ];
    for (text, reason) in bad {
        let e = parse(text, "b", &known).unwrap_err();
        assert_eq!(e.code, "MalformedPolicy", "{text}");
        assert!(e.message.contains(reason), "{text}: {}", e.message);
    }
    let big = format!(
        r#"{{"Statement":{{"Sid":"{}","Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}}}}"#,
        "x".repeat(MAX_POLICY_BYTES)
    );
    assert!(parse(&big, "b", &known)
        .unwrap_err()
        .message
        .contains("20 KB"));
}

#[test]
fn evaluation_table() {
    use Verdict::*;
    let public_prefix = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/public/*"}"#,
    );
    let read_only_prefix = policy(
        r#"{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:user/AKME"},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::b","arn:aws:s3:::b/reports/*"],"Condition":{"StringLikeIfExists":{"s3:prefix":"reports/*"}}}"#,
    );
    let deny_unencrypted = policy(
        r#"{"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*","Condition":{"Null":{"s3:x-amz-server-side-encryption":"true"}}},
           {"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::b/*"}"#,
    );
    let ip = policy(
        r#"{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::b","arn:aws:s3:::b/*"],"Condition":{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","::1/128"]}}}"#,
    );
    let not_principal = policy(
        r#"{"Effect":"Deny","NotPrincipal":{"AWS":"AKME"},"NotAction":"s3:Get*","Resource":"arn:aws:s3:::b/*"}"#,
    );
    let own_home = policy(
        r#"{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:*Object","Resource":"arn:aws:s3:::b/home/${aws:username}/*"}"#,
    );
    let tags = policy(
        r#"{"Effect":"Allow","Principal":{"CanonicalUser":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"StringEquals":{"s3:ExistingObjectTag/class":"open"}}},
           {"Effect":"Deny","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*","Condition":{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["secret","private"]}}}"#,
    );
    let numbers_dates = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b","Condition":{"NumericLessThanEquals":{"s3:max-keys":"100"},"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"},"Bool":{"aws:SecureTransport":"false"}}}"#,
    );
    let ignore_case = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"StringEqualsIgnoreCase":{"aws:Referer":"HTTPS://SITE.EXAMPLE/"},"StringNotLike":{"aws:UserAgent":"*bot*"}}}"#,
    );
    let cases: Vec<(&Policy, Context, Verdict)> = vec![
        (
            &public_prefix,
            cx(Who::Anonymous, "s3:GetObject", "public/a.png", &[]),
            Allow,
        ),
        (
            &public_prefix,
            cx(Who::Anonymous, "s3:GetObject", "private/a", &[]),
            Silent,
        ),
        (
            &public_prefix,
            cx(Who::Anonymous, "s3:PutObject", "public/a", &[]),
            Silent,
        ),
        (
            &read_only_prefix,
            cx(me(), "s3:GetObject", "reports/q1", &[]),
            Allow,
        ),
        (
            &read_only_prefix,
            cx(other(), "s3:GetObject", "reports/q1", &[]),
            Silent,
        ),
        (
            &read_only_prefix,
            cx(me(), "s3:PutObject", "reports/q1", &[]),
            Silent,
        ),
        (
            &read_only_prefix,
            Context {
                resource: "arn:aws:s3:::b".into(),
                ..cx(me(), "s3:ListBucket", "", &[("s3:prefix", "reports/2024")])
            },
            Allow,
        ),
        (
            &read_only_prefix,
            Context {
                resource: "arn:aws:s3:::b".into(),
                ..cx(me(), "s3:ListBucket", "", &[("s3:prefix", "secret/")])
            },
            Silent,
        ),
        (&deny_unencrypted, cx(me(), "s3:PutObject", "x", &[]), Deny),
        (
            &deny_unencrypted,
            cx(
                me(),
                "s3:PutObject",
                "x",
                &[("s3:x-amz-server-side-encryption", "AES256")],
            ),
            Allow,
        ),
        (&deny_unencrypted, cx(me(), "s3:GetObject", "x", &[]), Allow),
        (
            &ip,
            cx(me(), "s3:GetObject", "x", &[("aws:SourceIp", "10.1.2.3")]),
            Silent,
        ),
        (
            &ip,
            cx(me(), "s3:GetObject", "x", &[("aws:SourceIp", "::1")]),
            Silent,
        ),
        (
            &ip,
            cx(
                me(),
                "s3:GetObject",
                "x",
                &[("aws:SourceIp", "::ffff:10.0.0.1")],
            ),
            Silent,
        ),
        (
            &ip,
            cx(
                me(),
                "s3:GetObject",
                "x",
                &[("aws:SourceIp", "192.168.1.1")],
            ),
            Deny,
        ),
        (&not_principal, cx(other(), "s3:PutObject", "x", &[]), Deny),
        (
            &not_principal,
            cx(other(), "s3:GetObject", "x", &[]),
            Silent,
        ),
        (&not_principal, cx(me(), "s3:PutObject", "x", &[]), Silent),
        (
            &not_principal,
            cx(Who::Anonymous, "s3:DeleteObject", "x", &[]),
            Deny,
        ),
        (
            &own_home,
            cx(me(), "s3:PutObject", "home/AKME/f", &[]),
            Allow,
        ),
        (
            &own_home,
            cx(me(), "s3:GetObject", "home/AKOTHER/f", &[]),
            Silent,
        ),
        (
            &own_home,
            cx(Who::Anonymous, "s3:GetObject", "home//f", &[]),
            Silent,
        ),
        (
            &tags,
            cx(
                me(),
                "s3:GetObject",
                "t",
                &[("s3:ExistingObjectTag/class", "open")],
            ),
            Allow,
        ),
        (
            &tags,
            cx(
                me(),
                "s3:GetObject",
                "t",
                &[("s3:ExistingObjectTag/class", "closed")],
            ),
            Silent,
        ),
        (
            &tags,
            cx(
                me(),
                "s3:PutObject",
                "t",
                &[
                    ("s3:RequestObjectTagKeys", "a"),
                    ("s3:RequestObjectTagKeys", "secret"),
                ],
            ),
            Deny,
        ),
        (
            &tags,
            cx(
                me(),
                "s3:PutObject",
                "t",
                &[("s3:RequestObjectTagKeys", "a")],
            ),
            Silent,
        ),
        (&tags, cx(me(), "s3:PutObject", "t", &[]), Silent),
        (
            &numbers_dates,
            Context {
                resource: "arn:aws:s3:::b".into(),
                ..cx(
                    Who::Anonymous,
                    "s3:ListBucket",
                    "",
                    &[
                        ("s3:max-keys", "50"),
                        ("aws:CurrentTime", "2026-11-23T12:00:00Z"),
                        ("aws:SecureTransport", "false"),
                    ],
                )
            },
            Allow,
        ),
        (
            &numbers_dates,
            Context {
                resource: "arn:aws:s3:::b".into(),
                ..cx(
                    Who::Anonymous,
                    "s3:ListBucket",
                    "",
                    &[
                        ("s3:max-keys", "1000"),
                        ("aws:CurrentTime", "2026-11-23T12:00:00Z"),
                        ("aws:SecureTransport", "false"),
                    ],
                )
            },
            Silent,
        ),
        (
            &ignore_case,
            cx(
                Who::Anonymous,
                "s3:GetObject",
                "x",
                &[
                    ("aws:Referer", "https://site.example/"),
                    ("aws:UserAgent", "curl/8"),
                ],
            ),
            Allow,
        ),
        (
            &ignore_case,
            cx(
                Who::Anonymous,
                "s3:GetObject",
                "x",
                &[
                    ("aws:Referer", "https://site.example/"),
                    ("aws:UserAgent", "googlebot"),
                ],
            ),
            Silent,
        ),
        (
            &ignore_case,
            cx(Who::Anonymous, "s3:GetObject", "x", &[]),
            Silent,
        ),
    ];
    for (i, (p, c, want)) in cases.into_iter().enumerate() {
        assert_eq!(p.evaluate(&c), want, "case {i}: {c:?}");
    }
}

#[test]
fn public_policies() {
    let public = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#,
    );
    assert!(public.is_public());
    let pinned = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"IpAddress":{"aws:SourceIp":"10.0.0.0/8"}}}"#,
    );
    assert!(!pinned.is_public());
    let key = policy(
        r#"{"Effect":"Allow","Principal":{"AWS":"AKME"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*"}"#,
    );
    assert!(!key.is_public());
    assert!(!key.needs_object_tags());
    // What is public, in words: the public statements only.
    assert_eq!(
        public.public_grants(),
        ["everyone may s3:GetObject on arn:aws:s3:::b/*"]
    );
    assert!(pinned.public_grants().is_empty());
    assert!(key.public_grants().is_empty());
    let not = policy(
        r#"{"Effect":"Allow","NotPrincipal":{"AWS":"AKME"},"NotAction":["s3:DeleteObject","s3:PutObject"],"Resource":"arn:aws:s3:::b/*"}"#,
    );
    assert_eq!(
        not.public_grants(),
        ["everyone but the principals it names may every action except s3:DeleteObject, s3:PutObject on arn:aws:s3:::b/*"]
    );
}

#[test]
fn globs_and_variables() {
    assert!(glob("s3:Get*", "s3:GetObject", true));
    assert!(glob("s3:get*", "s3:GetObject", true));
    assert!(!glob("s3:Get*", "s3:PutObject", true));
    assert!(glob("b/a?c/*", "b/abc/d/e", false));
    assert!(!glob("b/a?c/*", "b/ac/d", false));
    assert!(glob("*", "", false));
    let mut vars = HashMap::new();
    vars.insert("aws:username".to_owned(), vec!["ak".to_owned()]);
    assert_eq!(
        substitute("home/${aws:username}/*", &vars).unwrap(),
        "home/ak/*"
    );
    assert_eq!(substitute("x/${aws:userid}", &vars), None);
    let star = substitute("a${*}", &vars).unwrap();
    assert!(glob_var(&star, "a*", false));
    assert!(!glob_var(&star, "ab", false));
}

/// Issue 40, item 2: the ARN operators parse (AWS's log-delivery policy names
/// `aws:SourceArn` under `ArnLike`) and match part by part.
#[test]
fn arn_operators() {
    use Verdict::*;
    let log_delivery = policy(
        r#"{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::b/*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:s3:::source-*"},"StringEquals":{"aws:SourceAccount":"123456789012"}}}"#,
    );
    // No grids3 request carries aws:SourceArn: the statement never applies to a key.
    assert_eq!(
        log_delivery.evaluate(&cx(me(), "s3:PutObject", "k", &[])),
        Silent
    );
    for (op, have, want) in [
        ("ArnLike", "arn:aws:s3:::source-logs", Allow),
        ("ArnEquals", "arn:aws:s3:::source-logs", Allow),
        ("ArnLike", "arn:aws:s3:::SOURCE-logs", Silent),
        ("ArnLike", "arn:aws:s3:::other", Silent),
        ("ArnLike", "not-an-arn", Silent),
        ("ArnNotLike", "arn:aws:s3:::other", Allow),
        ("ArnNotEquals", "arn:aws:s3:::source-logs", Silent),
    ] {
        let p = policy(&format!(
            r#"{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{{"{op}":{{"aws:SourceArn":"arn:aws:s3:::source-*"}}}}}}"#
        ));
        assert_eq!(
            p.evaluate(&cx(me(), "s3:GetObject", "k", &[("aws:SourceArn", have)])),
            want,
            "{op} {have}"
        );
    }
    // Each part on its own: a `*` in the resource part does not reach into the others.
    let p = policy(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::b/*","Condition":{"ArnLike":{"aws:SourceArn":"arn:aws:iam::*:user/a*"}}}"#,
    );
    let allow = |have| p.evaluate(&cx(me(), "s3:GetObject", "k", &[("aws:SourceArn", have)]));
    assert_eq!(allow("arn:aws:iam::123456789012:user/alice"), Allow);
    assert_eq!(allow("arn:aws:iam::123:456:user/alice"), Silent);
}
