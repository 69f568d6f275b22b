//! The console's identity pages (issue 60), over HTTP with cookies: users, keys (the secret
//! shown once), groups, managed and inline policies, the validator's refusals on the page, a
//! user without IAM rights refused as the IAM API refuses it, and the effective-permissions
//! view checked against the same user's real S3 calls.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

/// What `alice`'s managed policy lets her do: list `data` and all buckets, read, write and tag
/// objects under `docs/`, never delete in `data`.
const POLICY: &str = r#"{"Version": "2012-10-17", "Statement": [
  {"Sid": "Lists", "Effect": "Allow", "Action": ["s3:ListBucket", "s3:GetBucketLocation"], "Resource": "arn:aws:s3:::data"},
  {"Sid": "AllBuckets", "Effect": "Allow", "Action": "s3:ListAllMyBuckets", "Resource": "arn:aws:s3:::*"},
  {"Sid": "Docs", "Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:GetObjectTagging"], "Resource": "arn:aws:s3:::data/docs/*"},
  {"Sid": "NoDelete", "Effect": "Deny", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::data/*"}
]}"#;

/// The text of the element with `id` (its first text run; entities as sent).
pub fn by_id(page: &str, id: &str) -> Option<String> {
    let at = page.find(&format!("id=\"{id}\""))?;
    let rest = &page[at..];
    let start = rest.find('>')? + 1;
    let end = rest[start..].find('<')? + start;
    Some(rest[start..end].trim().to_owned())
}

/// The `value` of the input with `id`.
pub fn value_of(page: &str, id: &str) -> Option<String> {
    let at = page.find(&format!("id=\"{id}\""))?;
    let rest = &page[at..];
    let v = rest.find("value=\"")? + 7;
    let end = rest[v..].find('"')? + v;
    Some(rest[v..end].to_owned())
}

/// The effective-permissions table: (action, allowed, why).
pub fn decisions(page: &str) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    for part in page.split("<tr data-action=\"").skip(1) {
        let action = part[..part.find('"').unwrap()].to_owned();
        let allowed = part.contains("data-allowed=\"true\"")
            && part.find("data-allowed=\"true\"") < part.find('>');
        let cells: Vec<&str> = part.split("<td>").collect();
        let why = cells
            .last()
            .and_then(|c| c.split("</td>").next())
            .unwrap_or("")
            .to_owned();
        out.push((action, allowed, why));
    }
    out
}

fn decision<'a>(d: &'a [(String, bool, String)], action: &str) -> &'a (String, bool, String) {
    d.iter()
        .find(|(a, _, _)| a == action)
        .unwrap_or_else(|| panic!("no row for {action}"))
}

/// Whether a real S3 call was refused with AccessDenied (any other outcome: it was let in).
pub fn refused<T, E: ProvideErrorMetadata>(r: Result<T, E>) -> bool {
    match r {
        Ok(_) => false,
        Err(e) => e.code() == Some("AccessDenied"),
    }
}

#[test]
fn identity_through_the_console_as_the_iam_api_allows() {
    support::run(async {
        let c = Console::start("consoleid").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("data").send().await.unwrap();
        s3.put_object()
            .bucket("data")
            .key("docs/a.txt")
            .body(ByteStream::from_static(b"hello"))
            .send()
            .await
            .unwrap();
        let root = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&root).await;

        // The section is there for whoever signs in.
        let home = c.get(&root, "/").await.text().await.unwrap();
        assert!(home.contains("href=\"/identity\""), "identity link");

        // A form without the session's token changes nothing.
        let r = c
            .post(
                &root,
                "/identity/users",
                &[("csrf", "nope"), ("action", "create"), ("name", "forged")],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);

        // A user, with a path and tags.
        let r = c
            .post(
                &root,
                "/identity/users",
                &[
                    ("csrf", &csrf),
                    ("action", "create"),
                    ("name", "alice"),
                    ("path", "/team/"),
                    ("tags", "dept=eng\nrole = writer"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert_eq!(by_id(&page, "done").as_deref(), Some("User alice created"));
        assert!(page.contains("data-user=\"alice\""));
        assert!(
            !page.contains("data-user=\"forged\""),
            "the forged form did nothing"
        );
        // The same name again: IAM's refusal, on the page.
        let r = c
            .post(
                &root,
                "/identity/users",
                &[("csrf", &csrf), ("action", "create"), ("name", "alice")],
                None,
            )
            .await;
        assert_eq!(r.status(), 409);
        assert!(by_id(&r.text().await.unwrap(), "error")
            .unwrap()
            .starts_with("EntityAlreadyExists:"));
        let page = c
            .get(&root, "/identity/user?name=alice")
            .await
            .text()
            .await
            .unwrap();
        let arn = by_id(&page, "user-arn").unwrap();
        assert!(
            arn.starts_with("arn:aws:iam::") && arn.ends_with(":user/team/alice"),
            "{arn}"
        );
        assert_eq!(
            by_id(&page, "user-tags").as_deref(),
            Some("dept=eng, role=writer")
        );

        // Policies: the validator's refusals are shown above the editor, which keeps the text.
        let no_resource =
            r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject"}]}"#;
        for (doc, status, code) in [
            ("{not json", 400, "MalformedPolicyDocument:"),
            (no_resource, 400, "MalformedPolicyDocument:"),
        ] {
            let r = c
                .post(
                    &root,
                    "/identity/policies",
                    &[
                        ("csrf", &csrf),
                        ("action", "create"),
                        ("name", "bad"),
                        ("doc", doc),
                    ],
                    None,
                )
                .await;
            assert_eq!(r.status(), status, "{doc}");
            let page = r.text().await.unwrap();
            let shown = by_id(&page, "editor-error").unwrap();
            assert!(shown.starts_with(code), "{doc}: {shown}");
            assert!(
                page.contains(&html_escape(doc)),
                "the editor keeps the document: {doc}"
            );
        }
        let big = format!(
            r#"{{"Version":"2012-10-17","Statement":[{}]}}"#,
            (0..120)
                .map(|i| format!(
                    r#"{{"Sid":"S{i}","Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::data/k{i}"}}"#
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        let r = c
            .post(
                &root,
                "/identity/policies",
                &[
                    ("csrf", &csrf),
                    ("action", "create"),
                    ("name", "big"),
                    ("doc", &big),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 409);
        let shown = by_id(&r.text().await.unwrap(), "editor-error").unwrap();
        assert_eq!(
            shown,
            "LimitExceeded: Cannot exceed quota for PolicySize: 6144"
        );
        let r = c
            .post(
                &root,
                "/identity/policies",
                &[
                    ("csrf", &csrf),
                    ("action", "create"),
                    ("name", "docs"),
                    ("description", "read and write docs/"),
                    ("doc", POLICY),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert!(page.contains("data-policy=\"docs\""));
        assert!(!page.contains("data-policy=\"bad\"") && !page.contains("data-policy=\"big\""));
        let policy_arn = format!("{}:policy/docs", arn.split(":user/").next().unwrap());
        let r = c
            .post(
                &root,
                "/identity/user",
                &[
                    ("csrf", &csrf),
                    ("name", "alice"),
                    ("action", "attach"),
                    ("arn", &policy_arn),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        assert!(r
            .text()
            .await
            .unwrap()
            .contains(&format!("data-arn=\"{policy_arn}\"")));

        // A key: the secret is on the page that created it, and never again.
        let r = c
            .post(
                &root,
                "/identity/user",
                &[("csrf", &csrf), ("name", "alice"), ("action", "create-key")],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        let ak = value_of(&page, "new-key-id").unwrap();
        let sk = value_of(&page, "new-key-secret").unwrap();
        assert_eq!(sk.len(), 40, "{sk}");
        let again = c
            .get(&root, "/identity/user?name=alice")
            .await
            .text()
            .await
            .unwrap();
        assert!(again.contains(&format!("data-key=\"{ak}\"")));
        assert!(!again.contains(&sk), "the secret is shown once");
        assert!(!again.contains("new-key-secret"));

        // Signed in with that key, the user has no IAM rights: every identity page and action
        // is IAM's AccessDenied, and nothing changes.
        let alice = c.login(&ak, &sk).await.unwrap();
        let alice_csrf = c.csrf(&alice).await;
        let r = c.get(&alice, "/identity").await;
        assert_eq!(r.status(), 403);
        let page = r.text().await.unwrap();
        assert!(
            by_id(&page, "error")
                .unwrap()
                .starts_with("AccessDenied: User: "),
            "{page}"
        );
        assert!(!page.contains("data-user=\"alice\""), "no list shown");
        for (path, form) in [
            (
                "/identity/users",
                vec![("action", "create"), ("name", "mallory")],
            ),
            (
                "/identity/user",
                vec![("action", "create-key"), ("name", "alice")],
            ),
            (
                "/identity/user",
                vec![
                    ("action", "attach"),
                    ("name", "alice"),
                    ("arn", "arn:aws:iam::aws:policy/AdministratorAccess"),
                ],
            ),
            (
                "/identity/policies",
                vec![("action", "create"), ("name", "mine"), ("doc", POLICY)],
            ),
            (
                "/identity/groups",
                vec![("action", "create"), ("name", "club")],
            ),
        ] {
            let mut f = form.clone();
            f.push(("csrf", &alice_csrf));
            let r = c.post(&alice, path, &f, None).await;
            assert_eq!(r.status(), 403, "{path} {form:?}");
            let page = r.text().await.unwrap();
            assert!(
                by_id(&page, "error").unwrap().starts_with("AccessDenied:"),
                "{path} {form:?}"
            );
        }
        let list = c.get(&root, "/identity").await.text().await.unwrap();
        assert!(!list.contains("data-user=\"mallory\""));
        let keys = c
            .get(&root, "/identity/user?name=alice")
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(keys.matches("<tr data-key=").count(), 1, "no second key");
        // Another user's view needs iam:SimulatePrincipalPolicy, which alice lacks.
        let r = c
            .get(&alice, "/identity/access?user=alice&bucket=data")
            .await;
        assert_eq!(r.status(), 403);
        assert!(by_id(&r.text().await.unwrap(), "error")
            .unwrap()
            .contains("iam:SimulatePrincipalPolicy"));

        // Her own view, and root's view of her, agree with each other and with what her real
        // S3 calls get.
        let q = "bucket=data&key=docs%2Fa.txt";
        let own = c.get(&alice, &format!("/identity/access?{q}")).await;
        assert_eq!(own.status(), 200);
        let own = decisions(&own.text().await.unwrap());
        let seen = decisions(
            &c.get(&root, &format!("/identity/access?user=alice&{q}"))
                .await
                .text()
                .await
                .unwrap(),
        );
        assert!(own.len() > 50, "{}", own.len());
        let flags = |d: &[(String, bool, String)]| -> Vec<(String, bool)> {
            d.iter().map(|(a, b, _)| (a.clone(), *b)).collect()
        };
        assert_eq!(flags(&own), flags(&seen));
        let as_alice = c.gw.sdk_as(&ak, &sk);
        let real = [
            (
                "s3:ListBucket",
                refused(
                    as_alice
                        .list_objects_v2()
                        .bucket("data")
                        .prefix("docs/a.txt")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:ListBucketVersions",
                refused(
                    as_alice
                        .list_object_versions()
                        .bucket("data")
                        .prefix("docs/a.txt")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:GetBucketLocation",
                refused(as_alice.get_bucket_location().bucket("data").send().await),
            ),
            (
                "s3:GetObject",
                refused(
                    as_alice
                        .get_object()
                        .bucket("data")
                        .key("docs/a.txt")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:GetObjectTagging",
                refused(
                    as_alice
                        .get_object_tagging()
                        .bucket("data")
                        .key("docs/a.txt")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:PutObject",
                refused(
                    as_alice
                        .put_object()
                        .bucket("data")
                        .key("docs/a.txt")
                        .body(ByteStream::from_static(b"hello again"))
                        .send()
                        .await,
                ),
            ),
            (
                "s3:DeleteObject",
                refused(
                    as_alice
                        .delete_object()
                        .bucket("data")
                        .key("docs/a.txt")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:GetBucketTagging",
                refused(as_alice.get_bucket_tagging().bucket("data").send().await),
            ),
            (
                "s3:GetBucketPolicy",
                refused(as_alice.get_bucket_policy().bucket("data").send().await),
            ),
            (
                "s3:ListAllMyBuckets",
                refused(as_alice.list_buckets().send().await),
            ),
            (
                "s3:CreateBucket",
                refused(as_alice.create_bucket().bucket("data").send().await),
            ),
        ];
        let expected_allowed = [
            "s3:ListBucket",
            "s3:GetBucketLocation",
            "s3:GetObject",
            "s3:GetObjectTagging",
            "s3:PutObject",
            "s3:ListAllMyBuckets",
        ];
        for (action, was_refused) in real {
            let (_, allowed, why) = decision(&own, action);
            assert_eq!(
                *allowed, !was_refused,
                "{action}: the view says {allowed} ({why})"
            );
            assert_eq!(
                *allowed,
                expected_allowed.contains(&action),
                "{action}: {why}"
            );
        }
        // The rule names the identity policy's deciding statement.
        assert!(
            decision(&own, "s3:DeleteObject").2.contains("NoDelete"),
            "{:?}",
            decision(&own, "s3:DeleteObject")
        );
        assert!(
            decision(&own, "s3:GetObject").2.contains("Docs"),
            "{:?}",
            decision(&own, "s3:GetObject")
        );
        assert!(decision(&own, "s3:ListAllMyBuckets")
            .2
            .contains("AllBuckets"));
        // A bucket that does not exist is S3's NoSuchBucket, not a table of guesses.
        let r = c.get(&alice, "/identity/access?bucket=nosuchbucket").await;
        assert_eq!(r.status(), 404);
        assert!(by_id(&r.text().await.unwrap(), "error")
            .unwrap()
            .starts_with("NoSuchBucket:"));

        // Groups: create, members, policies.
        for form in [vec![("action", "create"), ("name", "readers")]] {
            let mut f = form.clone();
            f.push(("csrf", &csrf));
            assert_eq!(
                c.post(&root, "/identity/groups", &f, None).await.status(),
                200
            );
        }
        let inline = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Tags","Effect":"Allow","Action":"s3:GetBucketTagging","Resource":"arn:aws:s3:::data"}]}"#;
        for form in [
            vec![("action", "add-member"), ("user", "alice")],
            vec![("action", "attach"), ("arn", policy_arn.as_str())],
            vec![
                ("action", "put-inline"),
                ("policy", "tags"),
                ("doc", inline),
            ],
        ] {
            let mut f = form.clone();
            f.push(("csrf", &csrf));
            f.push(("name", "readers"));
            let r = c.post(&root, "/identity/group", &f, None).await;
            assert_eq!(r.status(), 200, "{form:?}");
        }
        let page = c
            .get(&root, "/identity/group?name=readers")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("data-user=\"alice\""));
        assert!(page.contains(&format!("data-arn=\"{policy_arn}\"")));
        assert!(page.contains("data-inline=\"tags\""));
        // The group's inline policy now lets alice read the bucket's tags: the view says so.
        let now = decisions(
            &c.get(&alice, &format!("/identity/access?{q}"))
                .await
                .text()
                .await
                .unwrap(),
        );
        let (_, allowed, why) = decision(&now, "s3:GetBucketTagging");
        assert!(*allowed && why.contains("Tags"), "{why}");
        assert!(!refused(
            as_alice.get_bucket_tagging().bucket("data").send().await
        ));
        // The inline editor's refusal is the validator's.
        let r = c
            .post(
                &root,
                "/identity/group",
                &[
                    ("csrf", &csrf),
                    ("name", "readers"),
                    ("action", "put-inline"),
                    ("policy", "broken"),
                    ("doc", no_resource),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
        assert!(by_id(&r.text().await.unwrap(), "editor-error")
            .unwrap()
            .starts_with("MalformedPolicyDocument:"));

        // Versions: a new default, back to v1, v2 deleted; a policy still attached is not
        // deleted (IAM's DeleteConflict).
        let enc = urlencode(&policy_arn);
        let r = c
            .post(
                &root,
                "/identity/policy",
                &[
                    ("csrf", &csrf),
                    ("arn", &policy_arn),
                    ("action", "new-version"),
                    ("doc", inline),
                    ("default", "true"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert_eq!(by_id(&page, "default-version").as_deref(), Some("v2"));
        assert!(page.contains("data-version=\"v1\"") && page.contains("data-version=\"v2\""));
        for (action, version) in [("set-default", "v1"), ("delete-version", "v2")] {
            let r = c
                .post(
                    &root,
                    "/identity/policy",
                    &[
                        ("csrf", &csrf),
                        ("arn", &policy_arn),
                        ("action", action),
                        ("version", version),
                    ],
                    None,
                )
                .await;
            assert_eq!(r.status(), 200, "{action}");
        }
        let page = c
            .get(&root, &format!("/identity/policy?arn={enc}"))
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(by_id(&page, "default-version").as_deref(), Some("v1"));
        assert!(!page.contains("data-version=\"v2\""));
        assert_eq!(by_id(&page, "attachments").as_deref(), Some("2"));
        let r = c
            .post(
                &root,
                "/identity/policy",
                &[("csrf", &csrf), ("arn", &policy_arn), ("action", "delete")],
                None,
            )
            .await;
        assert_eq!(r.status(), 409);
        assert!(by_id(&r.text().await.unwrap(), "error")
            .unwrap()
            .starts_with("DeleteConflict:"));

        // Keys: deactivated, the key signs nothing (her console session ends with it).
        let r = c
            .post(
                &root,
                "/identity/user",
                &[
                    ("csrf", &csrf),
                    ("name", "alice"),
                    ("action", "deactivate-key"),
                    ("key", &ak),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        assert!(r.text().await.unwrap().contains("Inactive"));
        let e = as_alice.list_buckets().send().await.unwrap_err();
        assert_eq!(e.code(), Some("InvalidAccessKeyId"));
        assert_eq!(
            c.get(&alice, "/identity/access?bucket=data").await.status(),
            303
        );
    });
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&#34;")
        .replace('\'', "&#39;")
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}
