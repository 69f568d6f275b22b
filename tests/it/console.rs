//! The web console (issue 39), from outside: sessions, CSRF and the login throttle with raw
//! HTTP; the pages in headless Chromium (`console_browser.rs`).

use aws_sdk_s3::primitives::ByteStream;
use reqwest::header::{COOKIE, LOCATION, SET_COOKIE};

use crate::support::{self, Gateway};

/// A gateway with its console on an ephemeral port.
pub struct Console {
    pub gw: Gateway,
    pub addr: std::net::SocketAddr,
    server: tokio::task::AbortHandle,
}

impl Drop for Console {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Console {
    pub async fn start(tag: &str) -> Console {
        Self::start_with(tag, |_| {}).await
    }

    /// [`Console::start`] with the gateway's configuration adjusted by `tweak`.
    pub async fn start_with(tag: &str, tweak: impl FnOnce(&mut grids3::config::Config)) -> Console {
        // The console's address is known to the S3 listener (its CORS rule for uploads).
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let at = listener.local_addr().unwrap();
        let name = format!(
            "g_{tag}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| {
            tweak(c);
            c.console_listen = Some(at);
        })
        .await;
        // Share links and uploads point at this gateway's S3 listener.
        let mut state = gw.state.clone();
        let mut config = (*state.config).clone();
        config.console_s3_url = Some(gw.endpoint());
        state.config = std::sync::Arc::new(config);
        let (addr, server) =
            support::serve_router_on(listener, grids3::console::router(state)).await;
        Console { gw, addr, server }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn client() -> reqwest::Client {
        reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
    }

    /// Signs in; the session cookie (`name=value`) or the refusal's status.
    pub async fn login(&self, ak: &str, sk: &str) -> Result<String, u16> {
        let r = Self::client()
            .post(self.url("/login"))
            .form(&[("access_key", ak), ("secret", sk)])
            .send()
            .await
            .unwrap();
        if r.status() != 303 {
            return Err(r.status().as_u16());
        }
        let c = r.headers()[SET_COOKIE].to_str().unwrap().to_owned();
        assert!(c.contains("HttpOnly"), "{c}");
        assert!(c.contains("SameSite=Strict"), "{c}");
        Ok(c.split(';').next().unwrap().to_owned())
    }

    pub async fn get(&self, cookie: &str, path: &str) -> reqwest::Response {
        Self::client()
            .get(self.url(path))
            .header(COOKIE, cookie)
            .send()
            .await
            .unwrap()
    }

    pub async fn post(
        &self,
        cookie: &str,
        path: &str,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> reqwest::Response {
        let mut r = Self::client()
            .post(self.url(path))
            .header(COOKIE, cookie)
            .form(form);
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.send().await.unwrap()
    }

    /// The session's CSRF token, read from a page's form.
    pub async fn csrf(&self, cookie: &str) -> String {
        let page = self.get(cookie, "/").await.text().await.unwrap();
        let at = page
            .find("name=\"csrf\" value=\"")
            .expect("a form with the token")
            + 19;
        page[at..at + 64].to_owned()
    }
}

#[test]
fn sessions_csrf_and_the_login_throttle() {
    support::run(async {
        let c = Console::start("console").await;
        // Signed out: every page leads to the login.
        let r = c.get("", "/").await;
        assert_eq!(
            (r.status().as_u16(), r.headers()[LOCATION].to_str().unwrap()),
            (303, "/login")
        );
        // A wrong secret is refused; the right one makes a session.
        assert_eq!(c.login(support::AK, "wrong").await, Err(401));
        assert_eq!(c.login("nosuchkey", "x").await, Err(401));
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let page = c.get(&cookie, "/").await;
        assert_eq!(page.status(), 200);
        assert!(page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'"));
        assert!(page.text().await.unwrap().contains(support::AK));
        // A forged cookie (another id, or the signature changed) is no session.
        let (name, value) = cookie.split_once('=').unwrap();
        let (id, _) = value.split_once('.').unwrap();
        let forged = format!("{name}={id}.{}", "0".repeat(64));
        assert_eq!(c.get(&forged, "/").await.status(), 303);

        // CSRF: a state-changing request without the session's token, or from another
        // origin, is refused and changes nothing.
        let csrf = c.csrf(&cookie).await;
        let r = c
            .post(
                &cookie,
                "/buckets/create",
                &[("csrf", "nope"), ("name", "forged")],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        let r = c
            .post(
                &cookie,
                "/buckets/create",
                &[("csrf", &csrf), ("name", "forged")],
                Some("http://evil.example"),
            )
            .await;
        assert_eq!(r.status(), 403);
        let s3 = c.gw.sdk();
        assert!(s3.head_bucket().bucket("forged").send().await.is_err());
        // The same request from the console's own page goes through.
        let own = c.url("");
        let r = c
            .post(
                &cookie,
                "/buckets/create",
                &[("csrf", &csrf), ("name", "made-here"), ("versioning", "on")],
                Some(&own),
            )
            .await;
        assert_eq!(r.status(), 303);
        let v = s3
            .get_bucket_versioning()
            .bucket("made-here")
            .send()
            .await
            .unwrap();
        assert_eq!(v.status().map(|s| s.as_str()), Some("Enabled"));
        // A refusal shows AWS's reason.
        let r = c
            .post(
                &cookie,
                "/buckets/create",
                &[("csrf", &csrf), ("name", "Bad_Name")],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
        assert!(r.text().await.unwrap().contains("InvalidBucketName"));

        // An expired session leads to the login (its last request two hours ago: the idle
        // expiry is 30 minutes).
        let sessions =
            c.gw.db
                .collection::<mongodb::bson::Document>("__consoleSessions");
        let other = c.login(support::AK, support::SK).await.unwrap();
        let other_id = other
            .split_once('=')
            .unwrap()
            .1
            .split_once('.')
            .unwrap()
            .0
            .to_owned();
        let two_hours_ago = mongodb::bson::DateTime::from_millis(
            mongodb::bson::DateTime::now().timestamp_millis() - 2 * 3_600_000,
        );
        sessions
            .update_one(
                mongodb::bson::doc! {"_id": &other_id},
                mongodb::bson::doc! {"$set": {"seen": two_hours_ago}},
            )
            .await
            .unwrap();
        let r = c.get(&other, "/").await;
        assert_eq!(r.status(), 303, "an idle session ends");
        assert_eq!(
            sessions
                .count_documents(mongodb::bson::doc! {"_id": &other_id})
                .await
                .unwrap(),
            0,
            "and is removed"
        );

        // Logout ends the session everywhere: the same cookie, replayed, is no session.
        let r = c.post(&cookie, "/logout", &[("csrf", &csrf)], None).await;
        assert_eq!(r.status(), 303);
        assert!(r.headers()[SET_COOKIE]
            .to_str()
            .unwrap()
            .contains("Max-Age=0"));
        assert_eq!(c.get(&cookie, "/").await.status(), 303);

        // The throttle: after 10 failures from one address (2 above), even the right secret
        // is refused for a while (the failures are counted in the database, for every
        // instance).
        for _ in 0..8 {
            assert_eq!(c.login(support::AK, "wrong").await, Err(401));
        }
        assert_eq!(c.login(support::AK, support::SK).await, Err(429));
    });
}

#[test]
fn a_key_sees_only_what_its_policy_allows() {
    support::run(async {
        let c = Console::start("consolekey").await;
        let s3 = c.gw.sdk();
        for b in ["shared", "private"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
            s3.put_object()
                .bucket(b)
                .key("docs/readme.txt")
                .body(ByteStream::from_static(b"hello"))
                .send()
                .await
                .unwrap();
        }
        let (ak, sk) = crate::authz::new_key(&c.gw, "viewer").await;
        s3.put_bucket_policy()
            .bucket("shared")
            .policy(
                serde_json::json!({"Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": ak}, "Action": "s3:ListBucket",
                     "Resource": "arn:aws:s3:::shared"},
                    {"Effect": "Allow", "Principal": {"AWS": ak}, "Action": "s3:GetObject",
                     "Resource": "arn:aws:s3:::shared/*"}]})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        let cookie = c.login(&ak, &sk).await.unwrap();
        let page = c.get(&cookie, "/browse?bucket=shared&prefix=docs%2F").await;
        assert_eq!(page.status(), 200);
        let text = page.text().await.unwrap();
        assert!(text.contains("readme.txt"), "{text}");
        let page = c
            .get(&cookie, "/browse?bucket=private")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("AccessDenied"),
            "the refusal shows AWS's reason: {page}"
        );
        assert!(!page.contains("readme.txt"));
        let r = c
            .get(&cookie, "/download?bucket=shared&key=docs%2Freadme.txt")
            .await;
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("readme.txt"));
        assert_eq!(r.text().await.unwrap(), "hello");
        let r = c
            .get(&cookie, "/download?bucket=private&key=docs%2Freadme.txt")
            .await;
        assert_eq!(r.status(), 403);
        // It may not delete what the policy does not allow, and nothing is deleted.
        let csrf = c.csrf(&cookie).await;
        let r = c
            .post(
                &cookie,
                "/objects/delete",
                &[
                    ("csrf", &csrf),
                    ("bucket", "shared"),
                    ("key", "docs/readme.txt"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        assert!(s3
            .head_object()
            .bucket("shared")
            .key("docs/readme.txt")
            .send()
            .await
            .is_ok());
    });
}

#[test]
fn object_bytes_never_run_in_the_consoles_origin() {
    support::run(async {
        let c = Console::start("consolebytes").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("bytes").send().await.unwrap();
        // Stored types that would make the bytes a document or a script of the console.
        for (key, ct) in [
            ("a.html", "text/html"),
            ("b.svg", "image/SVG+xml"),
            ("c.png", "image/png, text/html"),
            ("d.pdf", "application/pdf; x=1, text/html"),
            ("e.js", "text/javascript"),
            ("f.png", "image/png"),
        ] {
            s3.put_object()
                .bucket("bytes")
                .key(key)
                .content_type(ct)
                .cache_control("public, max-age=31536000")
                .body(ByteStream::from_static(b"<script>alert(1)</script>"))
                .send()
                .await
                .unwrap();
        }
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        for (key, served) in [
            ("a.html", "text/plain; charset=utf-8"),
            ("b.svg", "text/plain; charset=utf-8"),
            ("c.png", "text/plain; charset=utf-8"),
            ("d.pdf", "text/plain; charset=utf-8"),
            ("e.js", "text/plain; charset=utf-8"),
            ("f.png", "image/png"),
        ] {
            let r = c
                .get(&cookie, &format!("/raw?bucket=bytes&key={key}"))
                .await;
            assert_eq!(r.status(), 200, "{key}");
            assert_eq!(r.headers()["content-type"], served, "{key}");
            assert_eq!(
                r.headers()["content-security-policy"],
                "sandbox; default-src 'none'",
                "{key}"
            );
            assert_eq!(r.headers()["cache-control"], "private, no-store", "{key}");
            let r = c
                .get(&cookie, &format!("/download?bucket=bytes&key={key}"))
                .await;
            assert_eq!(
                r.headers()["content-type"],
                "application/octet-stream",
                "{key}"
            );
            assert!(r.headers()["content-disposition"]
                .to_str()
                .unwrap()
                .starts_with("attachment"));
            assert_eq!(r.headers()["cache-control"], "private, no-store", "{key}");
        }
        // Two console cookies (one planted by another page of the same site): no session.
        let other = c.login(support::AK, support::SK).await.unwrap();
        let both = format!("{cookie}; {other}");
        assert_eq!(c.get(&both, "/").await.status(), 303);
        assert_eq!(c.get(&cookie, "/").await.status(), 200);
        // A key with a dot segment cannot be shared (a browser would rewrite the link).
        let csrf = c.csrf(&cookie).await;
        let r = c
            .post(
                &cookie,
                "/objects/share",
                &[
                    ("csrf", &csrf),
                    ("bucket", "bytes"),
                    ("key", "x/../f.png"),
                    ("expires", "3600"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
    });
}

#[test]
fn a_folder_is_deleted_with_everything_in_it_and_nothing_else() {
    support::run(async {
        let c = Console::start("consolefolder").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("tree").send().await.unwrap();
        for k in ["a/1", "a/2", "a/b/3", "a-sibling", "ab/4", "top"] {
            s3.put_object()
                .bucket("tree")
                .key(k)
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
        }
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let page = c
            .get(&cookie, "/browse?bucket=tree")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("Delete folder"), "{page}");
        let csrf = c.csrf(&cookie).await;
        // Not a folder (no slash): refused, nothing deleted.
        let r = c
            .post(
                &cookie,
                "/folders/delete",
                &[("csrf", &csrf), ("bucket", "tree"), ("folder", "a")],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
        let r = c
            .post(
                &cookie,
                "/folders/delete",
                &[
                    ("csrf", &csrf),
                    ("bucket", "tree"),
                    ("folder", "a/"),
                    ("prefix", ""),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 303);
        let left: Vec<String> = s3
            .list_objects_v2()
            .bucket("tree")
            .send()
            .await
            .unwrap()
            .contents()
            .iter()
            .map(|o| o.key().unwrap().to_owned())
            .collect();
        assert_eq!(left, ["a-sibling", "ab/4", "top"]);
    });
}

/// The storage writes the console adds, raced: the login throttle's reservation (logins at
/// once never get more than their slots) and the end of an expired session (compare and set
/// on the `seen` it read: a request recorded in between is not undone).
#[test]
fn throttle_slots_and_session_ends_hold_under_races() {
    support::run(async {
        let c = Console::start("consolerace").await;
        // 30 wrong logins at once from one address: exactly 10 are checked (401), the rest
        // find every slot taken (429), whatever the interleaving.
        let tries = (0..30).map(|_| c.login(support::AK, "wrong"));
        let answers = futures::future::join_all(tries).await;
        let checked = answers.iter().filter(|a| **a == Err(401)).count();
        let throttled = answers.iter().filter(|a| **a == Err(429)).count();
        assert_eq!((checked, throttled), (10, 20), "{answers:?}");

        // A session read as expired, then recorded by another request: the stale end removes
        // nothing; the end of what is there now does.
        let meta = c.gw.state.store.meta();
        let now = meta.clock().now();
        let s = grids3::storage::meta::ConsoleSession {
            id: "race".repeat(16),
            access_key: support::AK.into(),
            csrf: "c".repeat(64),
            created: now,
            seen: now,
            sso: None,
        };
        let expires = mongodb::bson::DateTime::from_millis(now.timestamp_millis() + 3_600_000);
        meta.session_create(&s, expires).await.unwrap();
        let later = mongodb::bson::DateTime::from_millis(now.timestamp_millis() + 1000);
        assert!(meta.session_seen(&s.id, s.seen, later).await.unwrap());
        assert!(
            !meta.session_end_if(&s.id, s.seen).await.unwrap(),
            "a stale end"
        );
        assert!(
            meta.session(&s.id).await.unwrap().is_some(),
            "the session lives on"
        );
        assert!(meta.session_end_if(&s.id, later).await.unwrap());
        assert!(meta.session(&s.id).await.unwrap().is_none());
    });
}
