//! The console's identity pages (issue 60) for a user with some IAM rights, and the
//! effective-permissions view of a user without a key, over HTTP with cookies.

use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::console_identity::{by_id, decisions, refused, value_of};
use crate::support;

/// A user with some IAM rights (an inline policy allowing `iam:ListUsers`, `iam:GetUser` and
/// `iam:SimulatePrincipalPolicy` on the account's users) may do exactly those through the
/// console and nothing more; a user without a key has a view too, which is the one its key
/// gets once it has one.
#[test]
fn partial_iam_rights_and_a_keyless_users_view() {
    support::run(async {
        let c = Console::start("consoleid2").await;
        c.gw.sdk()
            .create_bucket()
            .bucket("data")
            .send()
            .await
            .unwrap();
        let root = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&root).await;
        for name in ["carol", "dave"] {
            let r = c
                .post(
                    &root,
                    "/identity/users",
                    &[("csrf", &csrf), ("action", "create"), ("name", name)],
                    None,
                )
                .await;
            assert_eq!(r.status(), 200, "{name}");
        }
        let carol_policy = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Look","Effect":"Allow","Action":["iam:ListUsers","iam:GetUser","iam:SimulatePrincipalPolicy"],"Resource":"*"}]}"#;
        let dave_policy = r#"{"Version":"2012-10-17","Statement":[{"Sid":"Versions","Effect":"Allow","Action":["s3:ListBucketVersions","s3:PutObject"],"Resource":["arn:aws:s3:::data","arn:aws:s3:::data/*"]}]}"#;
        for (user, doc) in [("carol", carol_policy), ("dave", dave_policy)] {
            let r = c
                .post(
                    &root,
                    "/identity/user",
                    &[
                        ("csrf", &csrf),
                        ("name", user),
                        ("action", "put-inline"),
                        ("policy", "p"),
                        ("doc", doc),
                    ],
                    None,
                )
                .await;
            assert_eq!(r.status(), 200, "{user}");
            assert!(r.text().await.unwrap().contains("data-inline=\"p\""));
        }
        // Dave has no key: his view is his policies' (no key of his owns or holds anything).
        let q = "/identity/access?user=dave&bucket=data&key=x";
        let keyless = decisions(&c.get(&root, q).await.text().await.unwrap());
        let allowed: Vec<&str> = keyless
            .iter()
            .filter(|(_, a, _)| *a)
            .map(|(a, _, _)| a.as_str())
            .collect();
        assert_eq!(allowed, ["s3:ListBucketVersions", "s3:PutObject"]);
        // Carol's key.
        let r = c
            .post(
                &root,
                "/identity/user",
                &[("csrf", &csrf), ("name", "carol"), ("action", "create-key")],
                None,
            )
            .await;
        let page = r.text().await.unwrap();
        let ak = value_of(&page, "new-key-id").unwrap();
        let sk = value_of(&page, "new-key-secret").unwrap();
        let carol = c.login(&ak, &sk).await.unwrap();
        let carol_csrf = c.csrf(&carol).await;
        // She may list users and look at one, and at another's effective permissions...
        let r = c.get(&carol, "/identity").await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert!(page.contains("data-user=\"dave\"") && page.contains("data-user=\"carol\""));
        let r = c.get(&carol, "/identity/user?name=dave").await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert!(by_id(&page, "user-arn").unwrap().ends_with(":user/dave"));
        // ... whose sections she may not read say so (IAM's refusal of ListAccessKeys).
        assert!(by_id(&page, "keys-error")
            .unwrap()
            .contains("iam:ListAccessKeys"));
        let r = c.get(&carol, q).await;
        assert_eq!(r.status(), 200);
        assert_eq!(decisions(&r.text().await.unwrap()), keyless);
        // ... but change nothing.
        let r = c
            .post(
                &carol,
                "/identity/users",
                &[
                    ("csrf", &carol_csrf),
                    ("action", "delete"),
                    ("name", "dave"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        assert!(by_id(&r.text().await.unwrap(), "error")
            .unwrap()
            .contains("iam:DeleteUser"));
        let r = c.get(&carol, "/identity/groups").await;
        assert_eq!(r.status(), 403, "ListGroups is not hers");
        // Dave's view once he has a key is the same as before, and his real calls agree.
        let r = c
            .post(
                &root,
                "/identity/user",
                &[("csrf", &csrf), ("name", "dave"), ("action", "create-key")],
                None,
            )
            .await;
        let page = r.text().await.unwrap();
        let (dk, ds) = (
            value_of(&page, "new-key-id").unwrap(),
            value_of(&page, "new-key-secret").unwrap(),
        );
        let keyed = decisions(&c.get(&root, q).await.text().await.unwrap());
        let flags = |d: &[(String, bool, String)]| -> Vec<(String, bool)> {
            d.iter().map(|(a, b, _)| (a.clone(), *b)).collect()
        };
        assert_eq!(flags(&keyed), flags(&keyless));
        let dave = c.gw.sdk_as(&dk, &ds);
        assert!(!refused(
            dave.list_object_versions()
                .bucket("data")
                .prefix("x")
                .send()
                .await
        ));
        assert!(!refused(
            dave.put_object()
                .bucket("data")
                .key("x")
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
        ));
        assert!(refused(
            dave.list_objects_v2()
                .bucket("data")
                .prefix("x")
                .send()
                .await
        ));
        assert!(refused(
            dave.get_object().bucket("data").key("x").send().await
        ));
    });
}
