//! Issue 59: a listen stream (ListenBucketNotification, and the console's live view, which
//! opens one) lasts only while its caller could still start it, and is bound to the bucket it
//! was authorized on, not to the bucket's name. Real gateways over the real database, signed
//! HTTP as `mc watch` and the browser send it.

use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use serde_json::Value;

use crate::authz::{admin, new_key};
use crate::console::Console;
use crate::support::{self, Gateway, Raw};

/// What a listener's stream sent: the records (their keys), and whether it ended.
struct Heard {
    keys: Vec<String>,
    ended: bool,
}

/// Reads a listener's stream until `done` holds for the keys of its records, it ends, or
/// `secs` pass.
async fn hear(resp: &mut reqwest::Response, secs: u64, done: impl Fn(&[String]) -> bool) -> Heard {
    let mut text = String::new();
    let deadline = Instant::now() + Duration::from_secs(secs);
    let keys = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"));
                v["Records"][0]["s3"]["object"]["key"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    };
    loop {
        // (Only whole lines: a chunk may end inside one.)
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        if done(&keys(whole)) {
            return Heard {
                keys: keys(whole),
                ended: false,
            };
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Heard {
                keys: keys(whole),
                ended: false,
            };
        }
        match tokio::time::timeout(left, resp.chunk()).await {
            Ok(Ok(Some(c))) => text.push_str(&String::from_utf8_lossy(&c)),
            Ok(_) => {
                return Heard {
                    keys: keys(&text),
                    ended: true,
                }
            }
            Err(_) => {}
        }
    }
}

/// Opens a listen stream (`path`: `/<bucket>?events=...`) signed by `ak`.
async fn listen(gw: &Gateway, ak: &str, sk: &str, path: &str) -> reqwest::Response {
    let mut raw = Raw::new("GET", path);
    raw.access_key = ak;
    raw.secret = sk;
    raw.send(gw).await
}

/// After the revocation: a write of `after.txt` into `bucket` reaches the open stream `resp`
/// no more, and the stream ends (`what` names it in the failure).
async fn hears_nothing_more(
    resp: &mut reqwest::Response,
    root: &aws_sdk_s3::Client,
    bucket: &str,
    what: &str,
) {
    put(root, bucket, "after.txt").await;
    let heard = hear(resp, 15, |k| k.iter().any(|k| k == "after.txt")).await;
    assert!(
        heard.keys.is_empty(),
        "records after the revocation: {:?}",
        heard.keys
    );
    assert!(heard.ended, "{what}");
}

async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from_static(b"12345"))
        .send()
        .await
        .unwrap();
}

/// Grants `role` (`none`: revokes) on `bucket` to `ak` through the admin API.
async fn grant(gw: &Gateway, bucket: &str, ak: &str, role: &str) {
    let (status, v) = admin(
        gw,
        "PUT",
        &format!("/_grids3/admin/buckets/{bucket}/grants"),
        serde_json::json!({"accessKeyId": ak, "role": role}),
    )
    .await;
    assert_eq!(status, 204, "{v}");
}

/// (Instances read the listener registry at most once a second: a change within a second of
/// a listener's start may go unrecorded for it.)
async fn registry_seen() {
    tokio::time::sleep(Duration::from_millis(1500)).await;
}

/// Key A owns a bucket and listens; A deletes it; the root key creates a new bucket of the
/// same name and writes into it. A, who may not list the new bucket, gets none of its
/// records, and its stream ends. Once with a keep-alive (and so a check) every second, once
/// with checks 10 s apart, where the binding of the stream to the bucket it was authorized on
/// keeps the new bucket's record out before any check comes.
#[test]
fn a_listener_never_crosses_to_a_new_bucket_of_the_same_name() {
    support::run(async {
        let gw = support::gateway("listenrecreate").await;
        let root = gw.sdk();
        let (ak, sk) = new_key(&gw, "a").await;
        let a = gw.sdk_as(&ak, &sk);
        for (bucket, ping) in [("payroll", 1), ("ledger", 3600)] {
            a.create_bucket().bucket(bucket).send().await.unwrap();
            let mut resp = listen(
                &gw,
                &ak,
                &sk,
                &format!("/{bucket}?events=s3:ObjectCreated:*&ping={ping}"),
            )
            .await;
            assert_eq!(resp.status(), 200, "{bucket}");
            registry_seen().await;
            // The stream works: A's own write reaches it.
            put(&a, bucket, "mine.txt").await;
            let heard = hear(&mut resp, 20, |k| k.iter().any(|k| k == "mine.txt")).await;
            assert_eq!(heard.keys, ["mine.txt"], "{bucket}");

            a.delete_object()
                .bucket(bucket)
                .key("mine.txt")
                .send()
                .await
                .unwrap();
            a.delete_bucket().bucket(bucket).send().await.unwrap();
            root.create_bucket().bucket(bucket).send().await.unwrap();
            put(&root, bucket, "hr/salaries-2026.xlsx").await;
            let e = a
                .list_objects_v2()
                .bucket(bucket)
                .send()
                .await
                .expect_err("A may not list the new bucket");
            assert_eq!(e.code(), Some("AccessDenied"), "{bucket}");

            let heard = hear(&mut resp, 15, |k| {
                k.iter().any(|k| k == "hr/salaries-2026.xlsx")
            })
            .await;
            assert!(
                !heard.keys.iter().any(|k| k == "hr/salaries-2026.xlsx"),
                "{bucket}: the new bucket's record reached the old bucket's listener: {:?}",
                heard.keys
            );
            assert!(heard.ended, "{bucket}: the stream outlived its bucket");
        }
    });
}

/// The root key grants A the owner role on its bucket; A listens; the root key revokes the
/// role. A's new listen is refused, and the open stream gets no later change and ends.
#[test]
fn a_listener_ends_when_its_role_is_revoked() {
    support::run(async {
        let gw = support::gateway("listenrevoke").await;
        let root = gw.sdk();
        let (ak, sk) = new_key(&gw, "a").await;
        root.create_bucket().bucket("roots").send().await.unwrap();
        grant(&gw, "roots", &ak, "owner").await;
        let mut resp = listen(&gw, &ak, &sk, "/roots?events=s3:ObjectCreated:*&ping=1").await;
        assert_eq!(resp.status(), 200);
        registry_seen().await;
        put(&root, "roots", "before.txt").await;
        let heard = hear(&mut resp, 20, |k| k.iter().any(|k| k == "before.txt")).await;
        assert_eq!(heard.keys, ["before.txt"]);

        grant(&gw, "roots", &ak, "none").await;
        let again = listen(&gw, &ak, &sk, "/roots?events=s3:ObjectCreated:*&ping=1").await;
        assert_eq!(again.status(), 403);
        hears_nothing_more(&mut resp, &root, "roots", "the stream outlived its role").await;
    });
}

/// The same across instances: the role is revoked through another instance than the one
/// that serves the stream. Once a new listen on the stream's instance is refused, the open
/// stream gets nothing more, and it ends.
#[test]
fn a_listener_ends_when_its_role_is_revoked_through_another_instance() {
    support::run(async {
        let db = format!(
            "g_listenrevoke2_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        let root = one.sdk();
        let (ak, sk) = new_key(&one, "a").await;
        root.create_bucket().bucket("roots").send().await.unwrap();
        grant(&one, "roots", &ak, "owner").await;
        // (Instance two reads buckets through its cache of a second.)
        assert!(
            support::eventually(5, || async {
                let r = listen(&two, &ak, &sk, "/roots?events=s3:ObjectCreated:*&ping=1").await;
                r.status() == 200
            })
            .await
        );
        let mut resp = listen(&two, &ak, &sk, "/roots?events=s3:ObjectCreated:*&ping=1").await;
        assert_eq!(resp.status(), 200);
        registry_seen().await;
        put(&root, "roots", "before.txt").await;
        let heard = hear(&mut resp, 20, |k| k.iter().any(|k| k == "before.txt")).await;
        assert_eq!(heard.keys, ["before.txt"]);

        grant(&one, "roots", &ak, "none").await;
        let revoked = Instant::now();
        assert!(
            support::eventually(5, || async {
                listen(&two, &ak, &sk, "/roots?events=s3:ObjectCreated:*&ping=1")
                    .await
                    .status()
                    == 403
            })
            .await,
            "a new listen on instance two is refused"
        );
        assert!(
            revoked.elapsed() < Duration::from_secs(3),
            "instance two saw the revocation after {:?}",
            revoked.elapsed()
        );
        hears_nothing_more(&mut resp, &root, "roots", "the stream outlived its role").await;
    });
}

/// The console's live view opens the same stream with a URL presigned as the signed-in key:
/// the role it was opened with revoked, it gets nothing more and ends.
#[test]
fn the_consoles_live_view_ends_with_the_role_it_was_opened_with() {
    support::run(async {
        let c = Console::start("livegrant").await;
        let root = c.gw.sdk();
        let (ak, sk) = new_key(&c.gw, "a").await;
        root.create_bucket().bucket("team").send().await.unwrap();
        grant(&c.gw, "team", &ak, "owner").await;
        let cookie = c.login(&ak, &sk).await.unwrap();
        let r = c.get(&cookie, "/live?bucket=team&prefix=").await;
        assert_eq!(r.status(), 200);
        let url: Value = serde_json::from_str(&r.text().await.unwrap()).unwrap();
        let url = url["url"].as_str().unwrap().to_owned();
        let mut resp = reqwest::get(&url).await.unwrap();
        assert_eq!(resp.status(), 200);
        registry_seen().await;
        put(&root, "team", "before.txt").await;
        let heard = hear(&mut resp, 20, |k| k.iter().any(|k| k == "before.txt")).await;
        assert_eq!(heard.keys, ["before.txt"]);

        grant(&c.gw, "team", &ak, "none").await;
        assert_eq!(reqwest::get(&url).await.unwrap().status(), 403);
        hears_nothing_more(
            &mut resp,
            &root,
            "team",
            "the live view's stream outlived its role",
        )
        .await;
    });
}

/// A key disabled or deleted through the admin API of one instance stops signing on another
/// instance within the credentials cache's stated bound (docs/access-control.md: the keys'
/// version counter, read at most once a second by each instance), not the 10 s of a timer.
/// Instance two has the key cached, by a request just before the change.
#[test]
fn a_disabled_or_deleted_key_stops_on_every_instance_within_a_second() {
    support::run(async {
        let db = format!(
            "g_keyversion_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        let (ak, sk) = new_key(&one, "a").await;
        // Clients that do not retry: each call is one request.
        let once = |c: aws_sdk_s3::Client| {
            aws_sdk_s3::Client::from_conf(
                c.config()
                    .to_builder()
                    .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
                    .build(),
            )
        };
        let as_a = once(two.sdk_as(&ak, &sk));
        let as_a_one = once(one.sdk_as(&ak, &sk));
        for change in ["disable", "delete"] {
            // Cached on both instances.
            as_a.list_buckets().send().await.unwrap();
            as_a_one.list_buckets().send().await.unwrap();
            let (status, v) = match change {
                "disable" => {
                    admin(
                        &one,
                        "POST",
                        &format!("/_grids3/admin/keys/{ak}/disable"),
                        Value::Null,
                    )
                    .await
                }
                _ => {
                    admin(
                        &one,
                        "DELETE",
                        &format!("/_grids3/admin/keys/{ak}"),
                        Value::Null,
                    )
                    .await
                }
            };
            assert_eq!(status, 204, "{change}: {v}");
            let changed = Instant::now();
            // At once on the instance that made the change.
            let e = as_a_one.list_buckets().send().await.expect_err(change);
            assert_eq!(e.code(), Some("InvalidAccessKeyId"), "{change} on one");
            // Within the bound (1 s, with room for a loaded machine) on the other.
            let mut refused_after = None;
            while changed.elapsed() < Duration::from_secs(5) {
                match as_a.list_buckets().send().await {
                    Ok(_) => tokio::time::sleep(Duration::from_millis(50)).await,
                    Err(e) => {
                        assert_eq!(e.code(), Some("InvalidAccessKeyId"), "{change} on two");
                        refused_after = Some(changed.elapsed());
                        break;
                    }
                }
            }
            let after = refused_after
                .unwrap_or_else(|| panic!("{change}: the key still signs on instance two"));
            assert!(
                after < Duration::from_millis(2500),
                "{change}: the key signed on instance two for {after:?}"
            );
            // And stays refused.
            let e = as_a.list_buckets().send().await.expect_err(change);
            assert_eq!(
                e.code(),
                Some("InvalidAccessKeyId"),
                "{change} on two, later"
            );
            if change == "disable" {
                let (status, v) = admin(
                    &one,
                    "POST",
                    &format!("/_grids3/admin/keys/{ak}/enable"),
                    Value::Null,
                )
                .await;
                assert_eq!(status, 204, "{v}");
                // Enabled again: it signs on instance two within the bound too.
                assert!(
                    support::eventually(3, || async { as_a.list_buckets().send().await.is_ok() })
                        .await,
                    "enabled again, the key signs on instance two"
                );
            }
        }
    });
}

/// A listener signed with a key whose secret is then replaced (the root key rotated: another
/// instance started with the same access key id and a new secret) hears nothing more, and its
/// stream ends: the old secret signs nothing new, so it keeps no stream open either.
#[test]
fn a_listener_ends_when_its_keys_secret_is_replaced() {
    support::run(async {
        let db = format!(
            "g_listenrotate_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let root = one.sdk();
        root.create_bucket().bucket("rotated").send().await.unwrap();
        let path = "/rotated?events=s3:ObjectCreated:*&ping=1";
        let mut resp = listen(&one, support::AK, support::SK, path).await;
        assert_eq!(resp.status(), 200);
        registry_seen().await;
        put(&root, "rotated", "before.txt").await;
        let heard = hear(&mut resp, 20, |k| k.iter().any(|k| k == "before.txt")).await;
        assert_eq!(heard.keys, ["before.txt"]);

        const NEW: &str = "testroot-rotated-secret";
        let two = support::gateway_with(&db, |c| c.root_secret_key = Some(NEW.into())).await;
        // Once instance one refuses the old secret, the open stream gets nothing more.
        assert!(
            support::eventually(5, || async {
                listen(&one, support::AK, support::SK, path).await.status() == 403
            })
            .await,
            "the old secret still signs on instance one"
        );
        hears_nothing_more(
            &mut resp,
            &two.sdk_as(support::AK, NEW),
            "rotated",
            "the stream outlived its secret",
        )
        .await;
    });
}

/// A slow database does not queue signed requests behind one reading of the keys' version
/// counter after another. Two readings each take longer than the counter's poll interval
/// (held at a fail point); the requests that waited through the second take its answer, as it
/// began after they arrived, instead of each reading again in turn (which, at a second or more
/// a reading, queued every waiter behind the others into the time limit and a 503, seen as
/// LISTs answered 503 by `benches/small_ab.sh`). Before the fix the third reading here
/// happened; now there is none, and every request succeeds.
#[test]
fn requests_waiting_for_a_slow_key_version_reading_take_the_next_one() {
    support::run(async {
        let db = format!(
            "g_keypoll_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let gw = support::gateway_on(&db).await;
        let first = grids3::failpoint::pause("credentials.poll", Some(&db));
        let second = grids3::failpoint::pause("credentials.poll", Some(&db));
        let more = grids3::failpoint::count("credentials.poll", Some(&db));
        let waiting = grids3::failpoint::count("credentials.wait", Some(&db));
        let call = |gw: &Gateway| {
            let s3 = gw.sdk_once();
            tokio::spawn(async move { s3.list_buckets().send().await.map(|_| ()) })
        };
        let mut calls = vec![call(&gw)];
        first.reached().await;
        // The four arrive more than a poll interval after the first reading began: they may
        // not take its answer, and queue behind it.
        tokio::time::sleep(grids3::auth::VERSION_POLL + Duration::from_millis(200)).await;
        calls.extend((0..4).map(|_| call(&gw)));
        // All four are waiting for the reading (the first request counted too).
        let since = Instant::now();
        while waiting.hits() < 5 {
            assert!(
                since.elapsed() < Duration::from_secs(30),
                "the requests never arrived"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        first.release();
        // One waiter reads again: the first reading began too long before it arrived.
        second.reached().await;
        tokio::time::sleep(grids3::auth::VERSION_POLL + Duration::from_millis(200)).await;
        second.release();
        for c in calls {
            c.await
                .unwrap()
                .expect("a signed request while the counter was slow");
        }
        assert_eq!(
            more.hits(),
            0,
            "readings after the one the waiters arrived before"
        );
    });
}
