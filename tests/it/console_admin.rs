//! Console administration (issue 39), from outside with raw HTTP: only the root key sees it;
//! a key created there works at once with the AWS SDK (its secret shown once), is refused
//! while disabled (by S3 and by the console's login) and works again when enabled, and is
//! gone when deleted; KMS keys are created and disabled there and the keyring shows it.

use crate::console::Console;
use crate::support;

/// The value of the input `id` in a page.
fn input(page: &str, id: &str) -> Option<String> {
    let needle = format!("id=\"{id}\" readonly value=\"");
    let at = page.find(&needle)? + needle.len();
    Some(page[at..at + page[at..].find('"')?].to_owned())
}

#[test]
fn root_administers_keys_and_kms_keys_and_no_one_else_does() {
    support::run(async {
        let c = Console::start_with("consoleadmin", |c| {
            c.master_key = Some("console admin test master".into())
        })
        .await;
        let root = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&root).await;
        let home = c.get(&root, "/").await.text().await.unwrap();
        assert!(
            home.contains("id=\"admin-link\""),
            "root sees administration"
        );

        // Create: the secret is on the answer only.
        let r = c
            .post(
                &root,
                "/admin/keys",
                &[
                    ("csrf", &csrf),
                    ("action", "create"),
                    ("name", "<b>app</b>"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        let id = input(&page, "new-key-id").expect("the new key's id");
        let secret = input(&page, "new-key-secret").expect("its secret, shown once");
        assert!(
            page.contains("app") && !page.contains("<b>app</b>"),
            "the name is text"
        );
        let listing = c.get(&root, "/admin").await.text().await.unwrap();
        assert!(listing.contains(&id));
        assert!(
            !listing.contains(&secret),
            "the secret is never shown again"
        );

        // The key works at once (it owns nothing yet: ListBuckets is empty).
        let s3 = c.gw.sdk_as(&id, &secret);
        assert!(s3.list_buckets().send().await.unwrap().buckets().is_empty());

        // Not root: no administration.
        let user = c.login(&id, &secret).await.unwrap();
        let page = c.get(&user, "/").await.text().await.unwrap();
        assert!(!page.contains("admin-link"));
        assert_eq!(c.get(&user, "/admin").await.status(), 403);
        let user_csrf = c.csrf(&user).await;
        let r = c
            .post(
                &user,
                "/admin/keys",
                &[("csrf", &user_csrf), ("action", "create"), ("name", "x")],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        assert!(r.text().await.unwrap().contains("AccessDenied"));

        // Disabled: S3 refuses it, its session ends, and it cannot sign in.
        let r = c
            .post(
                &root,
                "/admin/keys",
                &[("csrf", &csrf), ("action", "disable"), ("id", &id)],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let e = s3.list_buckets().send().await.unwrap_err();
        assert_eq!(
            e.into_service_error().meta().code(),
            Some("InvalidAccessKeyId")
        );
        assert_eq!(c.get(&user, "/").await.status(), 303, "its session ended");
        assert!(c.login(&id, &secret).await.is_err());
        let listing = c.get(&root, "/admin").await.text().await.unwrap();
        assert!(listing.contains("disabled"));

        // Enabled again: it works.
        c.post(
            &root,
            "/admin/keys",
            &[("csrf", &csrf), ("action", "enable"), ("id", &id)],
            None,
        )
        .await;
        assert!(s3.list_buckets().send().await.is_ok());

        // The root key is never disabled or deleted from here.
        let r = c
            .post(
                &root,
                "/admin/keys",
                &[("csrf", &csrf), ("action", "disable"), ("id", support::AK)],
                None,
            )
            .await;
        assert_eq!(r.status(), 404);
        assert!(c.gw.sdk().list_buckets().send().await.is_ok());

        // Deleted.
        c.post(
            &root,
            "/admin/keys",
            &[("csrf", &csrf), ("action", "delete"), ("id", &id)],
            None,
        )
        .await;
        assert!(s3.list_buckets().send().await.is_err());
        assert!(!c
            .get(&root, "/admin")
            .await
            .text()
            .await
            .unwrap()
            .contains(&id));

        // KMS keys: created with an alias, then disabled; a bad alias refused.
        let r = c
            .post(
                &root,
                "/admin/kms",
                &[
                    ("csrf", &csrf),
                    ("action", "create"),
                    ("alias", "alias/app"),
                ],
                None,
            )
            .await;
        let page = r.text().await.unwrap();
        assert!(page.contains("id=\"done\""), "{page}");
        assert!(page.contains("<td>alias/app</td>"), "{page}");
        let kms = c.gw.state.keys.keyring().list().await.unwrap();
        assert_eq!(kms.len(), 1);
        assert!(kms[0].enabled);
        c.post(
            &root,
            "/admin/kms",
            &[("csrf", &csrf), ("action", "disable"), ("id", &kms[0].id)],
            None,
        )
        .await;
        assert!(!c.gw.state.keys.keyring().list().await.unwrap()[0].enabled);
        let r = c
            .post(
                &root,
                "/admin/kms",
                &[("csrf", &csrf), ("action", "create"), ("alias", "aws/x")],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
    });
}

/// Server status: every instance on the database (each reports itself), the last hour's
/// requests as charts, the database and the background jobs; root only.
#[test]
fn server_status_shows_every_instance_and_the_last_hour() {
    support::run(async {
        let c = Console::start("consolestatus").await;
        // A second instance on the same database.
        let other = support::gateway_on(c.gw.db.name()).await;
        let root = c.login(support::AK, support::SK).await.unwrap();
        // A minute's sample of this process's requests, as the reporter writes it.
        let mut reporter = grids3::janitor::status::Reporter::new(&c.gw.state);
        reporter.report(&c.gw.state).await.unwrap();
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("counted").send().await.unwrap();
        for i in 0..25 {
            s3.put_object()
                .bucket("counted")
                .key(format!("k{i}"))
                .body(aws_sdk_s3::primitives::ByteStream::from_static(b"12345"))
                .send()
                .await
                .unwrap();
        }
        assert!(s3
            .get_object()
            .bucket("counted")
            .key("nope")
            .send()
            .await
            .is_err());
        reporter.report(&c.gw.state).await.unwrap();

        // Both instances report (the other one at its start, asynchronously).
        let mut page = String::new();
        for _ in 0..100 {
            page = c.get(&root, "/status").await.text().await.unwrap();
            if page.contains(&other.state.instance_id) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(page.contains(&c.gw.state.instance_id), "{page}");
        assert!(page.contains(&other.state.instance_id), "{page}");
        assert!(page.contains("(this one)"));
        // The charts: six, the requests chart's last minute holds at least those 27.
        assert_eq!(page.matches("<polyline").count(), 6);
        let value = |title: &str| -> f64 {
            let needle = format!("{title}: <strong>");
            let at = page.find(&needle).unwrap() + needle.len();
            page[at..at + page[at..].find(' ').unwrap()]
                .parse()
                .unwrap()
        };
        let last = value("Requests a minute");
        assert!(last >= 27.0, "requests this minute: {last}");
        let refused = value("Refusals (4xx) a minute");
        assert!(refused >= 1.0, "the 404 counted: {refused}");
        assert!(page.contains("Server version"));
        assert!(page.contains("id=\"leads\""));

        // Not root: refused.
        let (ak, sk) = crate::authz::new_key(&c.gw, "viewer").await;
        let user = c.login(&ak, &sk).await.unwrap();
        assert_eq!(c.get(&user, "/status").await.status(), 403);
    });
}
