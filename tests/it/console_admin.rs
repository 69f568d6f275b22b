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
            if page.contains(other.state.store.meta().process_id()) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let (me, them) = (
            c.gw.state.store.meta().process_id(),
            other.state.store.meta().process_id(),
        );
        assert_ne!(me, them, "each instance reports as itself");
        assert!(page.contains(me), "{page}");
        assert!(page.contains(them), "{page}");
        let table = &page[page.find("id=\"instances\"").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr class=\"live\">").count(), 2, "{table}");
        assert_eq!(table.matches("(this one)").count(), 1, "{table}");
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

/// Reads a streaming answer to its end; `true` when it ended within `secs`.
async fn ends_within(mut resp: reqwest::Response, secs: u64) -> bool {
    let ended = async { while let Ok(Some(_)) = resp.chunk().await {} };
    tokio::time::timeout(std::time::Duration::from_secs(secs), ended)
        .await
        .is_ok()
}

/// A listen stream lasts no longer than what authorized it: it ends when its key is disabled
/// (checked each ping) and when its presigned URL expires.
#[test]
fn listen_streams_end_with_their_key_and_their_url() {
    support::run(async {
        let gw = support::gateway("listenguard").await;
        let (ak, sk) = crate::authz::new_key(&gw, "watcher").await;
        gw.sdk_as(&ak, &sk)
            .create_bucket()
            .bucket("watched")
            .send()
            .await
            .unwrap();
        let path = "/watched?events=s3:ObjectCreated:*&ping=1";
        let mut raw = support::Raw::new("GET", path);
        raw.access_key = &ak;
        raw.secret = &sk;
        let resp = raw.send(&gw).await;
        assert_eq!(resp.status(), 200);
        let meta = gw.state.store.meta();
        assert!(meta.set_key_disabled(&ak, true).await.unwrap());
        gw.state.creds.forget(&ak);
        assert!(
            ends_within(resp, 5).await,
            "the disabled key's stream ended"
        );
        assert!(meta.set_key_disabled(&ak, false).await.unwrap());
        gw.state.creds.forget(&ak);

        // Presigned for 5 seconds: the stream ends then, not an hour later. The signed date is
        // whole seconds, so the URL expires 4-5 s after `signed` (with 2 s, a loaded machine
        // took most of the URL's life to open the stream).
        let now = gw.state.store.meta().clock().now().to_chrono();
        let signed = std::time::Instant::now();
        let query = grids3::auth::sigv4::presign_query(&grids3::auth::sigv4::Presign {
            access_key: &ak,
            secret: &sk,
            region: &gw.state.config.region,
            host: &gw.addr.to_string(),
            method: "GET",
            path: "/watched",
            amz_date: &now.format("%Y%m%dT%H%M%SZ").to_string(),
            expires: 5,
            extra: &[
                ("events".into(), "s3:ObjectCreated:*".into()),
                ("ping".into(), "1".into()),
            ],
        });
        let resp = reqwest::get(format!("{}/watched?{query}", gw.endpoint()))
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        assert!(ends_within(resp, 10).await, "the stream ended at expiry");
        assert!(
            signed.elapsed() >= std::time::Duration::from_millis(3500),
            "the stream lasted until its expiry ({:?})",
            signed.elapsed()
        );

        // SigV2, valid 5 seconds, with SigV4 expiry parameters added (SigV2 does not sign
        // them): the signed `Expires` decides.
        use grids3::auth::sigv2;
        let expires = gw.state.store.meta().clock().now().timestamp_millis() / 1000 + 5;
        let sts = sigv2::string_to_sign(
            "GET",
            &axum::http::HeaderMap::new(),
            &expires.to_string(),
            &sigv2::canonical_resource(None, "/watched", &[]),
        );
        let sig = sigv2::sign(&sk, &sts);
        let url = format!(
            "{}/watched?events=s3:ObjectCreated:*&ping=1&AWSAccessKeyId={ak}&Expires={expires}&Signature={}&X-Amz-Date=29991231T000000Z&X-Amz-Expires=604800",
            gw.endpoint(),
            percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC)
        );
        let resp = reqwest::get(url).await.unwrap();
        assert_eq!(resp.status(), 200);
        assert!(
            ends_within(resp, 10).await,
            "the SigV2 stream ended at its Expires"
        );
    });
}

/// A key that becomes the root key is enabled whatever it was: the configured root key always
/// signs in (a restart with a root key disabled earlier would otherwise lock everyone out).
#[test]
fn the_root_key_is_never_disabled() {
    support::run(async {
        let gw = support::gateway("rootenabled").await;
        let meta = gw.state.store.meta();
        let (ak, sk) = crate::authz::new_key(&gw, "future-root").await;
        assert!(meta.set_key_disabled(&ak, true).await.unwrap());
        assert!(meta.secret_of(&ak).await.unwrap().is_none());
        // As the start-up makes the configured key root.
        meta.put_access_key(&ak, &sk, true, "root").await.unwrap();
        let s = meta
            .secret_of(&ak)
            .await
            .unwrap()
            .expect("the root key works");
        assert!(s.root);
        assert!(!meta.set_key_disabled(&ak, true).await.unwrap());
        let keys = meta.list_access_keys().await.unwrap();
        assert!(!keys.iter().find(|k| k.id == ak).unwrap().disabled);

        // A former root key disabled after it lost root (it leaked) stays disabled when it is
        // configured as root again: closed, not open.
        let (next, next_secret) = crate::authz::new_key(&gw, "next-root").await;
        meta.put_access_key(&next, &next_secret, true, "root")
            .await
            .unwrap();
        meta.retire_other_roots(&next, false).await.unwrap();
        assert!(meta.set_key_disabled(&ak, true).await.unwrap());
        meta.put_access_key(&ak, &sk, true, "root").await.unwrap();
        assert!(
            meta.secret_of(&ak).await.unwrap().is_none(),
            "the leaked key stays disabled"
        );
    });
}

/// The console's CORS rule is for presigned requests only, and grants no credentials.
#[test]
fn the_consoles_cors_rule_covers_presigned_requests_only() {
    support::run(async {
        let c = Console::start("consolecors").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("corsed").send().await.unwrap();
        let origin = format!("http://{}", c.addr);
        let preflight = |query: &'static str| {
            let url = format!("{}/corsed/k?{query}", c.gw.endpoint());
            let origin = origin.clone();
            async move {
                reqwest::Client::new()
                    .request(reqwest::Method::OPTIONS, url)
                    .header("origin", origin)
                    .header("access-control-request-method", "PUT")
                    .send()
                    .await
                    .unwrap()
            }
        };
        let plain = preflight("x=1").await;
        assert_eq!(plain.status(), 403, "no rule for an unsigned request");
        let signed = preflight("partNumber=1&uploadId=u&X-Amz-Signature=abc").await;
        assert_eq!(signed.status(), 200);
        let h = signed.headers();
        assert_eq!(h["access-control-allow-origin"], origin.as_str());
        assert!(h.get("access-control-allow-credentials").is_none());
        // Another origin gets nothing, presigned or not.
        let other = reqwest::Client::new()
            .request(
                reqwest::Method::OPTIONS,
                format!("{}/corsed/k?X-Amz-Signature=abc", c.gw.endpoint()),
            )
            .header("origin", "http://evil.example")
            .header("access-control-request-method", "PUT")
            .send()
            .await
            .unwrap();
        assert_eq!(other.status(), 403);
    });
}

/// The status reports' one delete: instances silent for a day go, in the delete's own filter
/// (`seen` older than a day, evaluated by the database per document), so an instance whose
/// report landed first is never removed, whatever order the two writes meet in.
#[test]
fn a_silent_instance_goes_and_one_that_reported_stays() {
    support::run(async {
        use mongodb::bson::{doc, DateTime, Document};
        let gw = support::gateway("instancesgone").await;
        let meta = gw.state.store.meta();
        let coll = gw.db.collection::<Document>("__instances");
        let two_days_ago =
            DateTime::from_millis(meta.clock().now().timestamp_millis() - 2 * 86_400_000);
        for id in ["silent", "back"] {
            support::plant(
                &coll,
                doc! {"_id": id, "version": "0", "listen": "x", "started": two_days_ago, "seen": two_days_ago},
            )
            .await;
        }
        // "back" reports (its seen becomes now) before another instance's report cleans up.
        meta.instance_report("back", "0", "x", two_days_ago, None)
            .await
            .unwrap();
        meta.instance_report("other", "0", "y", two_days_ago, None)
            .await
            .unwrap();
        let ids: Vec<String> = meta
            .instances_seen()
            .await
            .unwrap()
            .into_iter()
            .map(|i| i.id)
            .collect();
        assert!(ids.contains(&"back".to_owned()), "{ids:?}");
        assert!(ids.contains(&"other".to_owned()), "{ids:?}");
        assert!(!ids.contains(&"silent".to_owned()), "{ids:?}");
    });
}
