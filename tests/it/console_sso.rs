//! Issue 61: single sign-on to the console through a real OpenID provider (node's
//! `oidc-provider`, `tests/js/oidc_provider.mjs`): headless Chromium through the provider's
//! own login and consent pages, the HTTP-level attacks on the flow, and the session's end
//! with its credentials, its role and its logout (`tests/py/console_sso.py`).

use crate::console::Console;
use crate::{sts_web, support};

/// The console's single sign-on settings for the test provider at `issuer`.
fn sso(issuer: &str, account: &str) -> grids3::config::ConsoleSso {
    grids3::config::ConsoleSso {
        console_oidc_issuer: Some(issuer.to_owned()),
        console_oidc_client_id: Some("grids3-console".into()),
        console_oidc_client_secret: Some("grids3-console-secret".into()),
        // `nobody` first: a person gets the first role whose trust admits them.
        console_oidc_roles: vec![
            format!("arn:aws:iam::{account}:role/nobody"),
            format!("arn:aws:iam::{account}:role/docs-reader"),
        ],
        console_oidc_name: Some("Test IdP".into()),
        console_oidc_scopes: "openid email".into(),
    }
}

#[test]
fn people_sign_in_through_their_provider_and_act_as_their_role() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let port = sts_web::free_port();
        let issuer = format!("http://127.0.0.1:{port}");
        let account = grids3::storage::identity::account_id(support::AK);
        let c = Console::start_with("consolesso", |cfg| {
            cfg.oidc_allow_loopback = true;
            cfg.console_sso = sso(&issuer, &account);
        })
        .await;
        let dir = tempfile::tempdir().unwrap();
        let callback = c.url(grids3::console::sso::CALLBACK);
        let Some(_op) = sts_web::start_at(port, &dir.path().join("keys.json"), "RS256", &callback)
        else {
            println!("SKIPPED: node and npm cannot be installed here");
            return;
        };
        let args = |mode: &str| {
            vec![
                mode.to_owned(),
                c.url(""),
                c.gw.endpoint(),
                support::AK.to_owned(),
                support::SK.to_owned(),
                issuer.clone(),
            ]
        };
        let r = support::py_result("console_sso.py", args("setup")).await;
        assert_eq!(r["account"], account.as_str());

        // The person's flow, in Chromium.
        let mut a = args("browser");
        a.push(chromium.display().to_string());
        let r = support::py_result("console_sso.py", a).await;
        let who = r["who"].as_str().unwrap();
        assert!(
            who.contains(&format!(
                "arn:aws:sts::{account}:assumed-role/docs-reader/ann"
            )),
            "{r}"
        );
        assert_eq!(r["buckets"], serde_json::json!(["payroll", "team-docs"]));
        assert_eq!(r["objects"], serde_json::json!(["readme.txt"]));
        assert!(
            r["payroll"].as_str().unwrap().starts_with("AccessDenied:"),
            "{r}"
        );
        assert_eq!(r["link_has_token"], true);
        assert_eq!(
            r["link_before"],
            serde_json::json!([200, "docs for the team"])
        );
        assert!(r["after_logout_url"].as_str().unwrap().ends_with("/login"));
        assert!(r["home_after_logout"].as_str().unwrap().ends_with("/login"));
        // Logout ended the credentials: the link they signed is refused.
        assert_eq!(r["link_after"][0], 403, "{r}");
        assert_eq!(r["link_after"][1], "InvalidAccessKeyId", "{r}");

        // The flow's attacks, over HTTP.
        let r = support::py_result("console_sso.py", args("http")).await;
        assert_eq!(r["button"], "Sign in with Test IdP");
        assert_eq!(r["no_bind"], 400, "{r}");
        assert_eq!(
            r["callback_page"],
            serde_json::json!([200, true, false]),
            "{r}"
        );
        assert_eq!(r["no_cookie"], 400, "{r}");
        assert_eq!(r["bogus_posts"], serde_json::json!([400]), "{r}");
        assert_eq!(r["foreign_state"], serde_json::json!([400, null]), "{r}");
        // Login CSRF by a planted pending cookie: the victim's tab posts its own bind.
        assert_eq!(r["tossed_cookie"][0], 400, "{r}");
        assert_eq!(r["tossed_cookie"][1], serde_json::Value::Null, "{r}");
        assert!(
            r["tossed_cookie"][2]
                .as_str()
                .unwrap()
                .contains("browser tab"),
            "{r}"
        );
        assert_eq!(r["cross_origin"], 400, "{r}");
        assert_eq!(r["own_callback"], serde_json::json!([303, "/"]), "{r}");
        assert_eq!(r["who"][0], 200, "{r}");
        assert!(
            r["who"][1]
                .as_str()
                .unwrap()
                .ends_with("assumed-role/docs-reader/ann"),
            "{r}"
        );
        assert_eq!(r["replay"][0], 400, "{r}");
        assert!(
            r["replay"][1].as_str().unwrap().contains("used already"),
            "{r}"
        );
        assert_eq!(r["again"], 303, "{r}");
        assert_eq!(
            r["previous_after_again"], 303,
            "the previous session ended: {r}"
        );
        assert_eq!(r["mallory"][0], 403, "{r}");
        assert!(r["mallory"][1].as_str().unwrap().contains("no role"), "{r}");

        // A session that lapses idle takes its credentials with it, though nobody comes
        // back to it: the janitor (every second here) ends both.
        let meta = c.gw.state.store.meta();
        let idle = r["ann_cookie2"].as_str().unwrap().to_owned();
        let idle_id = idle.split('.').next().unwrap().to_owned();
        let idle_key = meta.session(&idle_id).await.unwrap().unwrap().access_key;
        let long_ago =
            mongodb::bson::DateTime::from_millis(meta.clock().now().timestamp_millis() - 7_200_000);
        c.gw.db
            .collection::<mongodb::bson::Document>("__consoleSessions")
            .update_one(
                mongodb::bson::doc! {"_id": &idle_id},
                mongodb::bson::doc! {"$set": {"seen": long_ago}},
            )
            .await
            .unwrap();
        let keys =
            c.gw.db
                .collection::<mongodb::bson::Document>("__accesskeys");
        let mut left = 1;
        for _ in 0..100 {
            left = keys
                .count_documents(mongodb::bson::doc! {"_id": &idle_key})
                .await
                .unwrap();
            if left == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(left, 0, "a lapsed session's credentials end with it");
        assert!(meta.session(&idle_id).await.unwrap().is_none());

        // ann's session ends when its credentials expire (their stored expiration set in the
        // past, as the database's time would pass it).
        let cookie = r["ann_cookie"].as_str().unwrap().to_owned();
        let home = || async {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap()
                .get(c.url("/"))
                .header("cookie", format!("grids3_console={cookie}"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        };
        assert_eq!(home().await, 200);
        let id = cookie.split('.').next().unwrap();
        let key = meta.session(id).await.unwrap().unwrap().access_key;
        assert!(key.starts_with("ASIA"), "{key}");
        let past =
            mongodb::bson::DateTime::from_millis(meta.clock().now().timestamp_millis() - 1000);
        let changed =
            c.gw.db
                .collection::<mongodb::bson::Document>("__accesskeys")
                .update_one(
                    mongodb::bson::doc! {"_id": &key},
                    mongodb::bson::doc! {"$set": {"expiration": past}},
                )
                .await
                .unwrap();
        assert_eq!(changed.modified_count, 1);
        meta.keys_changed().await.unwrap();
        c.gw.state.creds.forget(&key);
        assert_eq!(
            home().await,
            303,
            "an expired session's page sends to the login"
        );
        assert!(
            meta.session(id).await.unwrap().is_none(),
            "and the session is gone"
        );

        // A deleted role ends its sessions.
        let r = support::py_result("console_sso.py", args("delete")).await;
        assert_eq!(r["signed_in"], 303, "{r}");
        assert_eq!(r["home_before"], 200, "{r}");
        assert_eq!(
            r["home_after_delete"],
            serde_json::json!([303, "/login"]),
            "{r}"
        );
    });
}

/// Without single sign-on configured, its routes are not there and the page offers none.
#[test]
fn without_settings_there_is_no_single_sign_on() {
    support::run(async {
        let c = Console::start("consolenosso").await;
        let page = reqwest::get(c.url("/login"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!page.contains("id=\"sso\""));
        let r = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .get(c.url("/login/sso"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 404);
    });
}

/// The janitor's sweep of lapsed single sign-on sessions ends one only as it read it: a
/// request recorded between the sweep's read and its end keeps the session and its
/// credentials (fail point `console.lapsed_read`); with no such request, both end.
#[test]
fn the_lapsed_session_sweep_spares_a_session_seen_meanwhile() {
    use grids3::failpoint;
    use grids3::storage::meta::{ConsoleSession, NewSession, SessionKind, SsoSession};
    support::run(async {
        let gw = support::gateway("ssosweep").await;
        let meta = gw.state.store.meta();
        let keys = gw.db.collection::<mongodb::bson::Document>("__accesskeys");
        let make = |id: &str| {
            let id = id.to_owned();
            async move {
                let minted = meta
                    .insert_session(NewSession {
                        kind: SessionKind::SessionToken,
                        account_key: support::AK,
                        role: None,
                        user: None,
                        parent: Some(support::AK),
                        policies: vec![],
                        duration: std::time::Duration::from_secs(3600),
                    })
                    .await
                    .unwrap();
                let now = meta.clock().now();
                let long_ago =
                    mongodb::bson::DateTime::from_millis(now.timestamp_millis() - 7_200_000);
                let s = ConsoleSession {
                    id: id.repeat(64 / id.len()),
                    access_key: minted.access_key.clone(),
                    csrf: "c".repeat(64),
                    created: now,
                    seen: long_ago,
                    sso: Some(SsoSession {
                        token: minted.token.to_string(),
                        arn: "arn:aws:sts::000000000000:assumed-role/r/s".into(),
                        expires: minted.expiration,
                    }),
                };
                let ends = mongodb::bson::DateTime::from_millis(now.timestamp_millis() + 3_600_000);
                meta.session_create(&s, ends).await.unwrap();
                s
            }
        };
        let count = |k: String| {
            let keys = keys.clone();
            async move {
                keys.count_documents(mongodb::bson::doc! {"_id": k})
                    .await
                    .unwrap()
            }
        };

        // Seen between the sweep's read and its end: spared.
        let stop = failpoint::pause("console.lapsed_read", Some(&"ab".repeat(32)));
        let seen = make("ab").await;
        stop.reached().await;
        assert!(meta
            .session_seen(&seen.id, seen.seen, meta.clock().now())
            .await
            .unwrap());
        stop.release();
        drop(stop);
        // The sweep's next passes find it live: wait for one that ends another session.
        let lapsed = make("cd").await;
        let mut gone = 1;
        for _ in 0..100 {
            gone = count(lapsed.access_key.clone()).await;
            if gone == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(gone, 0, "a lapsed session's credentials end");
        assert!(meta.session(&lapsed.id).await.unwrap().is_none());
        assert!(
            meta.session(&seen.id).await.unwrap().is_some(),
            "the session seen meanwhile lives on"
        );
        assert_eq!(
            count(seen.access_key.clone()).await,
            1,
            "and so do its credentials"
        );
    });
}
