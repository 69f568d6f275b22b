//! Issue 60: IAM users, groups and identity policies through real clients (boto3's `iam`
//! client, awscli's `aws iam`), and what they then allow a user's S3 calls, against a real
//! gateway over the real database.

use crate::authz::new_key;
use crate::support;

/// The whole round: users, groups, managed and inline policies, keys, AWS's evaluation cases
/// (identity Allow alone, a bucket policy naming the user alone, across accounts both, a
/// group's Deny over a user's Allow, NotAction/NotResource, tag and username conditions, the
/// home-folder policy), a user's attempts to grant itself more, another account's reach, and
/// awscli (see `tests/py/iam_boto3.py`).
#[test]
fn boto3_and_awscli_manage_identity_and_s3_obeys_it() {
    support::run(async {
        let gw = support::gateway("iam").await;
        let (ak2, sk2) = new_key(&gw, "other account").await;
        support::run_py_checks(&gw, "iam_boto3.py", "iam_boto3", &[&ak2, &sk2]).await;
    });
}

/// One IAM Query API call, signed for the `iam` service by `ak`/`sk`: status and body.
pub async fn iam_call(
    gw: &support::Gateway,
    ak: &str,
    sk: &str,
    params: &[(&str, &str)],
) -> (u16, String) {
    let enc = |s: &str| grids3::percent::uri_encode(s, false);
    let mut form = String::from("Version=2010-05-08");
    for (k, v) in params {
        form.push_str(&format!("&{}={}", enc(k), enc(v)));
    }
    let mut raw = support::Raw::new("POST", "/");
    raw.service = "iam";
    raw.access_key = ak;
    raw.secret = sk;
    raw.body = form.into_bytes();
    raw.headers.push((
        "content-type".into(),
        "application/x-www-form-urlencoded; charset=utf-8".into(),
    ));
    let r = raw.send(gw).await;
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// [`iam_call`] as the root key, asserting success.
pub async fn iam_ok(gw: &support::Gateway, params: &[(&str, &str)]) -> String {
    let (status, body) = iam_call(gw, support::AK, support::SK, params).await;
    assert_eq!(status, 200, "{params:?}: {body}");
    body
}

/// The text of the first `<tag>` element of an XML answer.
pub fn xml_text(body: &str, tag: &str) -> String {
    let open = format!("<{tag}>");
    let start = body
        .find(&open)
        .unwrap_or_else(|| panic!("no {tag} in {body}"))
        + open.len();
    let end = body[start..].find('<').unwrap() + start;
    body[start..end].to_owned()
}

/// A user `name` in group `g` with a managed policy allowing GetObject on `bucket/*`
/// attached to the group, and a key: its id and secret, and the policy's ARN.
async fn reader(gw: &support::Gateway, name: &str, bucket: &str) -> (String, String, String) {
    iam_ok(gw, &[("Action", "CreateUser"), ("UserName", name)]).await;
    iam_ok(gw, &[("Action", "CreateGroup"), ("GroupName", "readers")]).await;
    iam_ok(
        gw,
        &[
            ("Action", "AddUserToGroup"),
            ("GroupName", "readers"),
            ("UserName", name),
        ],
    )
    .await;
    let doc = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::{bucket}/*"}}]}}"#
    );
    let created = iam_ok(
        gw,
        &[
            ("Action", "CreatePolicy"),
            ("PolicyName", "Read"),
            ("PolicyDocument", &doc),
        ],
    )
    .await;
    let arn = xml_text(&created, "Arn");
    iam_ok(
        gw,
        &[
            ("Action", "AttachGroupPolicy"),
            ("GroupName", "readers"),
            ("PolicyArn", &arn),
        ],
    )
    .await;
    let key = iam_ok(gw, &[("Action", "CreateAccessKey"), ("UserName", name)]).await;
    (
        xml_text(&key, "AccessKeyId"),
        xml_text(&key, "SecretAccessKey"),
        arn,
    )
}

/// Detaching a policy, removing a user from a group, and deactivating or deleting a key
/// through one instance take effect on another within the stated bound (the keys' version
/// counter, read at most once a second by each instance; 1 s, with room for a loaded
/// machine), and at once on the instance that made the change. Instance two has the user's
/// rights cached by a request just before each change.
#[test]
fn identity_changes_reach_another_instance_within_a_second() {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    use std::time::{Duration, Instant};
    support::run(async {
        let db = format!(
            "g_iamtwo_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        let root = one.sdk();
        root.create_bucket().bucket("shared").send().await.unwrap();
        support::put_many(&root, "shared", vec![("f.txt".into(), b"f".to_vec())]).await;
        let (ak, sk, arn) = reader(&one, "ursula", "shared").await;
        let no_retry = |c: aws_sdk_s3::Client| {
            aws_sdk_s3::Client::from_conf(
                c.config()
                    .to_builder()
                    .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
                    .build(),
            )
        };
        let on_one = no_retry(one.sdk_as(&ak, &sk));
        let on_two = no_retry(two.sdk_as(&ak, &sk));
        let get = |c: &aws_sdk_s3::Client| {
            let c = c.clone();
            async move {
                match c.get_object().bucket("shared").key("f.txt").send().await {
                    Ok(_) => "OK".to_owned(),
                    Err(e) => e.code().unwrap_or("?").to_owned(),
                }
            }
        };
        // Waits until instance two answers `want`; how long that took after the change.
        let until = |want: &'static str, changed: Instant| {
            let on_two = on_two.clone();
            async move {
                while changed.elapsed() < Duration::from_secs(5) {
                    if get(&on_two).await == want {
                        return changed.elapsed();
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                panic!("instance two never answered {want}");
            }
        };
        type Change<'a> = (
            &'static str,
            Vec<(&'a str, &'a str)>,
            &'static str,
            Vec<(&'a str, &'a str)>,
        );
        let changes: [Change<'_>; 4] = [
            (
                "detach the group's policy",
                vec![
                    ("Action", "DetachGroupPolicy"),
                    ("GroupName", "readers"),
                    ("PolicyArn", &arn),
                ],
                "AccessDenied",
                vec![
                    ("Action", "AttachGroupPolicy"),
                    ("GroupName", "readers"),
                    ("PolicyArn", &arn),
                ],
            ),
            (
                "remove the user from the group",
                vec![
                    ("Action", "RemoveUserFromGroup"),
                    ("GroupName", "readers"),
                    ("UserName", "ursula"),
                ],
                "AccessDenied",
                vec![
                    ("Action", "AddUserToGroup"),
                    ("GroupName", "readers"),
                    ("UserName", "ursula"),
                ],
            ),
            (
                "deactivate the key",
                vec![
                    ("Action", "UpdateAccessKey"),
                    ("UserName", "ursula"),
                    ("AccessKeyId", &ak),
                    ("Status", "Inactive"),
                ],
                "InvalidAccessKeyId",
                vec![
                    ("Action", "UpdateAccessKey"),
                    ("UserName", "ursula"),
                    ("AccessKeyId", &ak),
                    ("Status", "Active"),
                ],
            ),
            (
                "delete the key",
                vec![
                    ("Action", "DeleteAccessKey"),
                    ("UserName", "ursula"),
                    ("AccessKeyId", &ak),
                ],
                "InvalidAccessKeyId",
                vec![],
            ),
        ];
        for (what, change, refused, undo) in changes {
            // Cached on both instances.
            assert_eq!(get(&on_two).await, "OK", "{what}: before");
            assert_eq!(get(&on_one).await, "OK", "{what}: before, on one");
            iam_ok(&one, &change).await;
            let changed = Instant::now();
            assert_eq!(get(&on_one).await, refused, "{what}: at once on one");
            let after = until(refused, changed).await;
            println!("{what}: refused on instance two after {after:?}");
            assert!(
                after < Duration::from_millis(2500),
                "{what}: instance two allowed it for {after:?}"
            );
            assert_eq!(get(&on_two).await, refused, "{what}: and stays refused");
            if !undo.is_empty() {
                iam_ok(&one, &undo).await;
                until("OK", Instant::now()).await;
            }
        }
    });
}

/// In steady state an IAM user's request costs no database round trip for identity: a user's
/// GETs and PUTs send exactly the commands the account's own key's send (cache refreshes,
/// which happen at most once a second whoever asks, counted apart), and reading the user,
/// its groups and its policies happens once, not per request.
#[test]
fn a_users_requests_cost_no_extra_round_trip() {
    use std::sync::atomic::Ordering;
    support::run(async {
        let (gw, counters) = support::gateway_counting_split("iamrt", |_| {}).await;
        let commands =
            || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let root = gw.sdk();
        root.create_bucket().bucket("rtb").send().await.unwrap();
        let (ak, sk, _) = reader(&gw, "ravi", "rtb").await;
        // PutObject too, for the PUT half.
        iam_ok(
            &gw,
            &[
                ("Action", "PutUserPolicy"),
                ("UserName", "ravi"),
                ("PolicyName", "Write"),
                (
                    "PolicyDocument",
                    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:PutObject","Resource":"arn:aws:s3:::rtb/*"}]}"#,
                ),
            ],
        )
        .await;
        let user = gw.sdk_as(&ak, &sk);
        let identity_reads = || {
            counters
                .log
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l.contains("__iam"))
                .count()
        };
        let mut used = Vec::new();
        for (who, c) in [("root", &root), ("user", &user)] {
            // Warm: the key, the principal, the bucket are cached.
            c.put_object()
                .bucket("rtb")
                .key("warm")
                .body(b"w".to_vec().into())
                .send()
                .await
                .unwrap();
            support::quiesce(&counters.all).await;
            let (before, reads_before) = (commands(), identity_reads());
            for i in 0..10 {
                c.put_object()
                    .bucket("rtb")
                    .key(format!("{who}{i}"))
                    .body(vec![b'x'; 4096].into())
                    .send()
                    .await
                    .unwrap();
                c.get_object()
                    .bucket("rtb")
                    .key(format!("{who}{i}"))
                    .send()
                    .await
                    .unwrap()
                    .body
                    .collect()
                    .await
                    .unwrap();
            }
            used.push(commands() - before);
            let reads = identity_reads() - reads_before;
            // At most a refresh (the principal is cached 10 s, and again after any identity
            // change), never one per request.
            assert!(
                reads <= 3,
                "{who}: {reads} reads of identity for 20 requests"
            );
        }
        println!(
            "10 PUTs and 10 GETs: root {} commands, user {}",
            used[0], used[1]
        );
        assert_eq!(
            used[0], used[1],
            "a user's requests sent other commands than the root key's"
        );
    });
}

/// The hostile review's findings, each a check that failed before its fix (see
/// `tests/py/iam_review.py`), with two more accounts.
#[test]
fn the_reviews_findings_stay_fixed() {
    support::run(async {
        let gw = support::gateway("iamreview").await;
        let (bk, bs) = new_key(&gw, "account b").await;
        let (ck, cs) = new_key(&gw, "account c").await;
        support::run_py_checks(&gw, "iam_review.py", "iam_review", &[&bk, &bs, &ck, &cs]).await;
    });
}

/// A request signed for IAM by a key that does not exist costs its headers and nothing more:
/// it is refused before its body is read, however large it says the body is (before, up to
/// 512 KiB were read, with no time limit, from anyone).
#[test]
fn an_unknown_key_is_refused_before_its_body_is_read() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    support::run(async {
        let gw = support::gateway("iambody").await;
        let mut s = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        let head = format!(
            "POST / HTTP/1.1\r\nhost: {}\r\ncontent-type: application/x-www-form-urlencoded\r\n\
             content-length: 524000\r\nx-amz-date: 20261206T000000Z\r\n\
             authorization: AWS4-HMAC-SHA256 Credential=NOSUCHKEY/20261206/us-east-1/iam/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature={}\r\n\r\nAction=Cre",
            gw.addr,
            "0".repeat(64)
        );
        s.write_all(head.as_bytes()).await.unwrap();
        let mut buf = vec![0u8; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), s.read(&mut buf))
            .await
            .expect("answered without waiting for the body")
            .unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.starts_with("HTTP/1.1 403"), "{text}");
        assert!(text.contains("InvalidClientTokenId"), "{text}");
    });
}

/// The review finding F4 (OpenID Connect providers), in its own file.
#[path = "iam_oidc.rs"]
mod oidc;
