//! Issue 61: roles and STS through real clients (boto3's `iam` and `sts`, botocore's
//! assume-role provider, awscli, minio-py's AssumeRoleProvider), temporary credentials on a
//! second instance, their expiry by the database's clock, and their cost.

use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;

use crate::authz::new_key;
use crate::iam::{iam_ok, xml_text};
use crate::support;

/// The whole round (see `tests/py/sts_boto3.py`).
#[test]
fn boto3_awscli_and_minio_assume_roles_and_s3_obeys_the_sessions() {
    support::run(async {
        let gw = support::gateway("sts").await;
        let (ak2, sk2) = new_key(&gw, "other account").await;
        support::run_py_checks(&gw, "sts_boto3.py", "sts_boto3", &[&ak2, &sk2]).await;
    });
}

/// One STS Query API call, signed for the `sts` service by the root key: status and body.
pub async fn sts_call(gw: &support::Gateway, params: &[(&str, &str)]) -> (u16, String) {
    let enc = |s: &str| grids3::percent::uri_encode(s, false);
    let mut form = String::from("Version=2011-06-15");
    for (k, v) in params {
        form.push_str(&format!("&{}={}", enc(k), enc(v)));
    }
    let mut raw = support::Raw::new("POST", "/");
    raw.service = "sts";
    raw.body = form.into_bytes();
    raw.headers.push((
        "content-type".into(),
        "application/x-www-form-urlencoded; charset=utf-8".into(),
    ));
    let r = raw.send(gw).await;
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// A role `name` that the account's root credentials may assume, allowed `s3:*` on `bucket`;
/// its ARN.
async fn role(gw: &support::Gateway, name: &str, bucket: &str) -> String {
    let who = sts_call(gw, &[("Action", "GetCallerIdentity")]).await.1;
    let account = xml_text(&who, "Account");
    let trust = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam::{account}:root"}},"Action":"sts:AssumeRole"}}]}}"#
    );
    iam_ok(
        gw,
        &[
            ("Action", "CreateRole"),
            ("RoleName", name),
            ("AssumeRolePolicyDocument", &trust),
        ],
    )
    .await;
    let policy = format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Action":"s3:*","Resource":["arn:aws:s3:::{bucket}","arn:aws:s3:::{bucket}/*"]}}]}}"#
    );
    iam_ok(
        gw,
        &[
            ("Action", "PutRolePolicy"),
            ("RoleName", name),
            ("PolicyName", "bucket"),
            ("PolicyDocument", &policy),
        ],
    )
    .await;
    format!("arn:aws:iam::{account}:role/{name}")
}

/// Temporary credentials of a session of `arn`: key, secret, token.
async fn assume(gw: &support::Gateway, arn: &str, session: &str) -> (String, String, String) {
    let (status, body) = sts_call(
        gw,
        &[
            ("Action", "AssumeRole"),
            ("RoleArn", arn),
            ("RoleSessionName", session),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    (
        xml_text(&body, "AccessKeyId"),
        xml_text(&body, "SecretAccessKey"),
        xml_text(&body, "SessionToken"),
    )
}

/// An SDK client signing with temporary credentials, without retries.
fn sdk_session(gw: &support::Gateway, c: &(String, String, String)) -> aws_sdk_s3::Client {
    let creds = aws_credential_types::Credentials::new(&c.0, &c.1, Some(c.2.clone()), None, "test");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .endpoint_url(gw.endpoint())
        .credentials_provider(creds)
        .force_path_style(true)
        .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

async fn get(c: &aws_sdk_s3::Client, bucket: &str) -> String {
    match c.get_object().bucket(bucket).key("f.txt").send().await {
        Ok(_) => "OK".to_owned(),
        Err(e) => e.code().unwrap_or("?").to_owned(),
    }
}

/// Credentials minted on one instance sign on another; deleting the role, or revoking its
/// sessions (AWS's `aws:TokenIssueTime` Deny), takes effect on the other within the keys'
/// version poll (1 s; 2.5 s allowed on a loaded machine), and at once on the first.
#[test]
fn sessions_work_on_another_instance_and_end_there_with_their_role() {
    support::run(async {
        let db = format!(
            "g_sts2_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        one.sdk()
            .create_bucket()
            .bucket("shared")
            .send()
            .await
            .unwrap();
        support::put_many(&one.sdk(), "shared", vec![("f.txt".into(), b"f".to_vec())]).await;
        let arn = role(&one, "deployer", "shared").await;
        let c = assume(&one, &arn, "s1").await;
        let (on_one, on_two) = (sdk_session(&one, &c), sdk_session(&two, &c));
        assert_eq!(
            get(&on_two, "shared").await,
            "OK",
            "minted on one, used on two"
        );
        assert_eq!(get(&on_one, "shared").await, "OK");
        let until = |want: &'static str, changed: Instant| {
            let on_two = on_two.clone();
            async move {
                while changed.elapsed() < Duration::from_secs(5) {
                    if get(&on_two, "shared").await == want {
                        return changed.elapsed();
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                panic!("instance two never answered {want}");
            }
        };
        // Revocation: a Deny on sessions issued before a time after this session's.
        let when = (chrono::Utc::now() + chrono::Duration::seconds(2))
            .format("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        let revoke = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Deny","Action":"*","Resource":"*","Condition":{{"DateLessThan":{{"aws:TokenIssueTime":"{when}"}}}}}}]}}"#
        );
        iam_ok(
            &one,
            &[
                ("Action", "PutRolePolicy"),
                ("RoleName", "deployer"),
                ("PolicyName", "AWSRevokeOlderSessions"),
                ("PolicyDocument", &revoke),
            ],
        )
        .await;
        let changed = Instant::now();
        assert_eq!(
            get(&on_one, "shared").await,
            "AccessDenied",
            "revoked at once on one"
        );
        let after = until("AccessDenied", changed).await;
        println!("revocation: refused on instance two after {after:?}");
        assert!(
            after < Duration::from_millis(2500),
            "revoked late: {after:?}"
        );
        iam_ok(
            &one,
            &[
                ("Action", "DeleteRolePolicy"),
                ("RoleName", "deployer"),
                ("PolicyName", "AWSRevokeOlderSessions"),
            ],
        )
        .await;
        let fresh = assume(&one, &arn, "s2").await;
        let (fresh_one, fresh_two) = (sdk_session(&one, &fresh), sdk_session(&two, &fresh));
        assert_eq!(get(&fresh_two, "shared").await, "OK");
        // Deleting the role ends every session of it.
        iam_ok(
            &one,
            &[
                ("Action", "DeleteRolePolicy"),
                ("RoleName", "deployer"),
                ("PolicyName", "bucket"),
            ],
        )
        .await;
        iam_ok(&one, &[("Action", "DeleteRole"), ("RoleName", "deployer")]).await;
        let changed = Instant::now();
        assert_eq!(
            get(&fresh_one, "shared").await,
            "InvalidAccessKeyId",
            "at once on one"
        );
        let on_two = fresh_two.clone();
        let mut after = None;
        while changed.elapsed() < Duration::from_secs(5) {
            if get(&on_two, "shared").await == "InvalidAccessKeyId" {
                after = Some(changed.elapsed());
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let after = after.expect("instance two kept the deleted role's session");
        println!("role deleted: refused on instance two after {after:?}");
        assert!(after < Duration::from_millis(2500), "ended late: {after:?}");
    });
}

/// Temporary credentials expire by the database's clock: once their stored expiration has
/// passed (set in the past here, as the database's time would pass it), every request is
/// `400 ExpiredToken`, on S3, IAM and STS alike.
#[test]
fn an_expired_session_is_answered_expired_token() {
    support::run(async {
        let gw = support::gateway("stsexp").await;
        gw.sdk().create_bucket().bucket("bkt").send().await.unwrap();
        support::put_many(&gw.sdk(), "bkt", vec![("f.txt".into(), b"f".to_vec())]).await;
        let arn = role(&gw, "short", "bkt").await;
        let c = assume(&gw, &arn, "s1").await;
        let s3 = sdk_session(&gw, &c);
        assert_eq!(get(&s3, "bkt").await, "OK");
        let past = mongodb::bson::DateTime::from_millis(
            gw.state.store.meta().clock().now().timestamp_millis() - 1000,
        );
        let keys = gw.db.collection::<mongodb::bson::Document>("__accesskeys");
        keys.update_one(
            mongodb::bson::doc! {"_id": &c.0},
            mongodb::bson::doc! {"$set": {"expiration": past}},
        )
        .await
        .unwrap();
        // Read back rather than trusting `modified_count`: the full suite once saw 0 for this
        // update, as the answer of a retried `$set` whose first attempt had landed would be.
        let stored = keys
            .find_one(mongodb::bson::doc! {"_id": &c.0})
            .await
            .unwrap()
            .expect("the session's key");
        assert_eq!(stored.get_datetime("expiration").ok(), Some(&past));
        // As a change through grids3 would: every instance's key cache follows the counter.
        gw.state.store.meta().keys_changed().await.unwrap();
        gw.state.creds.forget(&c.0);
        let e = s3
            .get_object()
            .bucket("bkt")
            .key("f.txt")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("ExpiredToken"), "{e:?}");
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(400));
        // STS and IAM answer it too.
        let mut raw = support::Raw::new("POST", "/");
        raw.service = "sts";
        raw.access_key = &c.0;
        raw.secret = &c.1;
        raw.headers
            .push(("x-amz-security-token".into(), c.2.clone()));
        raw.headers.push((
            "content-type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        raw.body = b"Action=GetCallerIdentity&Version=2011-06-15".to_vec();
        let r = raw.send(&gw).await;
        let status = r.status().as_u16();
        let body = r.text().await.unwrap();
        assert!(
            body.contains("<Code>ExpiredToken</Code>"),
            "{status} {body}"
        );
    });
}

/// In steady state a request signed with temporary credentials costs no database round trip
/// for identity: a session's GETs and PUTs send exactly the commands the account's own key's
/// send, and the session's key and role are read once, not per request.
#[test]
fn a_sessions_requests_cost_no_extra_round_trip() {
    use std::sync::atomic::Ordering;
    support::run(async {
        let (gw, counters) = support::gateway_counting_split("stsrt", |_| {}).await;
        let commands =
            || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let root = gw.sdk();
        root.create_bucket().bucket("rtb").send().await.unwrap();
        let arn = role(&gw, "rt", "rtb").await;
        let c = assume(&gw, &arn, "rt").await;
        let session = sdk_session(&gw, &c);
        let identity_reads = || {
            counters
                .log
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l.contains("__iam") || l.contains("__accesskeys"))
                .count()
        };
        let mut used = Vec::new();
        for (who, c) in [("root", &root), ("session", &session)] {
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
            assert!(
                reads <= 3,
                "{who}: {reads} reads of keys or identity for 20 requests"
            );
        }
        println!(
            "10 PUTs and 10 GETs: root {} commands, session {}",
            used[0], used[1]
        );
        assert_eq!(used[0], used[1], "a session's requests sent other commands");
    });
}

/// One STS call signed by `ak`/`sk` (with a session `token`, if any): status and body.
async fn sts_as(
    gw: &support::Gateway,
    (ak, sk, token): (&str, &str, Option<&str>),
    params: &[(&str, &str)],
) -> (u16, String) {
    let enc = |s: &str| grids3::percent::uri_encode(s, false);
    let mut form = String::from("Version=2011-06-15");
    for (k, v) in params {
        form.push_str(&format!("&{}={}", enc(k), enc(v)));
    }
    let mut raw = support::Raw::new("POST", "/");
    raw.service = "sts";
    raw.access_key = ak;
    raw.secret = sk;
    raw.body = form.into_bytes();
    raw.headers.push((
        "content-type".into(),
        "application/x-www-form-urlencoded".into(),
    ));
    if let Some(t) = token {
        raw.headers
            .push(("x-amz-security-token".into(), t.to_owned()));
    }
    let r = raw.send(gw).await;
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// The hostile review's findings (issue 61), each a check that failed before its fix:
/// sessions outliving their account's key or the key that made them, wildcard and
/// NotPrincipal principals accepted and never matching, a session policy ARN dropped by a gap
/// in its numbering, unknown parameters ignored, ExternalId unchecked, unsigned bucket
/// requests routed to STS, and an expired session told from its key id alone.
#[test]
fn the_reviews_findings_stay_fixed() {
    use crate::authz::admin;
    support::run(async {
        let gw = support::gateway("stsreview").await;
        let (ak, sk) = new_key(&gw, "account c").await;
        let c = gw.sdk_as(&ak, &sk);
        c.create_bucket().bucket("cbucket").send().await.unwrap();
        support::put_many(&c, "cbucket", vec![("f.txt".into(), b"f".to_vec())]).await;
        let who = sts_as(&gw, (&ak, &sk, None), &[("Action", "GetCallerIdentity")])
            .await
            .1;
        let account = xml_text(&who, "Account");
        let trust = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":{{"AWS":"arn:aws:iam::{account}:root"}},"Action":"sts:AssumeRole"}}]}}"#
        );
        let (st, body) = crate::iam::iam_call(
            &gw,
            &ak,
            &sk,
            &[
                ("Action", "CreateRole"),
                ("RoleName", "r"),
                ("AssumeRolePolicyDocument", &trust),
            ],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"}]}"#;
        let (st, body) = crate::iam::iam_call(
            &gw,
            &ak,
            &sk,
            &[
                ("Action", "PutRolePolicy"),
                ("RoleName", "r"),
                ("PolicyName", "all"),
                ("PolicyDocument", policy),
            ],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        let role_arn = format!("arn:aws:iam::{account}:role/r");
        let creds = |body: &str| {
            (
                xml_text(body, "AccessKeyId"),
                xml_text(body, "SecretAccessKey"),
                xml_text(body, "SessionToken"),
            )
        };
        let (st, body) = sts_as(
            &gw,
            (&ak, &sk, None),
            &[
                ("Action", "AssumeRole"),
                ("RoleArn", &role_arn),
                ("RoleSessionName", "s1"),
            ],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        let role_session = creds(&body);
        let (st, body) = sts_as(
            &gw,
            (&ak, &sk, None),
            &[("Action", "GetSessionToken"), ("DurationSeconds", "900")],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        let token_session = creds(&body);

        // A gap in PolicyArns' numbering drops no policy; a misspelt parameter is refused.
        let list_only = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:ListBucket","Resource":"*"}]}"#;
        let (st, body) = crate::iam::iam_call(
            &gw,
            &ak,
            &sk,
            &[
                ("Action", "CreatePolicy"),
                ("PolicyName", "listonly"),
                ("PolicyDocument", list_only),
            ],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        let list_arn = format!("arn:aws:iam::{account}:policy/listonly");
        let (st, body) = sts_as(
            &gw,
            (&ak, &sk, None),
            &[
                ("Action", "AssumeRole"),
                ("RoleArn", &role_arn),
                ("RoleSessionName", "gap"),
                ("PolicyArns.member.2.arn", &list_arn),
            ],
        )
        .await;
        assert_eq!(st, 200, "{body}");
        assert_eq!(
            get(&sdk_session(&gw, &creds(&body)), "cbucket").await,
            "AccessDenied",
            "PolicyArns.member.2 alone still cuts"
        );
        let (st, body) = sts_as(
            &gw,
            (&ak, &sk, None),
            &[
                ("Action", "AssumeRole"),
                ("RoleArn", &role_arn),
                ("RoleSessionName", "low"),
                ("policy", list_only),
            ],
        )
        .await;
        assert_eq!(st, 400, "a misspelt parameter: {body}");
        assert!(body.contains("<Code>ValidationError</Code>"), "{body}");
        let (st, body) = sts_as(
            &gw,
            (&ak, &sk, None),
            &[
                ("Action", "AssumeRole"),
                ("RoleArn", &role_arn),
                ("RoleSessionName", "ext"),
                ("ExternalId", "a"),
            ],
        )
        .await;
        assert_eq!(st, 400, "a one-character ExternalId: {body}");
        assert!(body.contains("<Code>ValidationError</Code>"), "{body}");

        // Wildcards in a principal's ARN, and NotPrincipal in a trust policy, are malformed.
        let wild = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Deny","Principal":{{"AWS":"arn:aws:sts::{account}:assumed-role/r/*"}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::cbucket/*"}}]}}"#
        );
        let e = c
            .put_bucket_policy()
            .bucket("cbucket")
            .policy(wild)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("MalformedPolicy"), "{e:?}");
        let not_principal = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","NotPrincipal":{{"AWS":"arn:aws:iam::{account}:root"}},"Action":"sts:AssumeRole"}}]}}"#
        );
        let (st, body) = crate::iam::iam_call(
            &gw,
            &ak,
            &sk,
            &[
                ("Action", "CreateRole"),
                ("RoleName", "np"),
                ("AssumeRolePolicyDocument", &not_principal),
            ],
        )
        .await;
        assert_eq!(st, 400, "{body}");
        assert!(body.contains("MalformedPolicyDocument"), "{body}");

        // An unsigned request to a bucket stays S3's, whatever its query.
        let r = reqwest::Client::new()
            .get(format!(
                "{}/cbucket?Action=AssumeRoleWithWebIdentity",
                gw.endpoint()
            ))
            .send()
            .await
            .unwrap();
        let text = r.text().await.unwrap();
        assert!(!text.contains("sts.amazonaws.com"), "routed to STS: {text}");

        // Both sessions work, until the account's own key is disabled: then neither signs.
        assert_eq!(get(&sdk_session(&gw, &role_session), "cbucket").await, "OK");
        assert_eq!(
            get(&sdk_session(&gw, &token_session), "cbucket").await,
            "OK"
        );
        let (st, v) = admin(
            &gw,
            "POST",
            &format!("/_grids3/admin/keys/{ak}/disable"),
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(st, 204, "{v}");
        assert_eq!(
            get(&sdk_session(&gw, &role_session), "cbucket").await,
            "InvalidAccessKeyId",
            "a role session of a disabled account"
        );
        assert_eq!(
            get(&sdk_session(&gw, &token_session), "cbucket").await,
            "InvalidAccessKeyId",
            "a session token of a disabled key"
        );
        let (st, body) = sts_as(
            &gw,
            (&token_session.0, &token_session.1, Some(&token_session.2)),
            &[
                ("Action", "AssumeRole"),
                ("RoleArn", &role_arn),
                ("RoleSessionName", "again"),
            ],
        )
        .await;
        assert_eq!(
            st, 403,
            "a disabled account's session makes no other: {body}"
        );

        // An expired session is told so only with its token.
        let (_, body) = sts_as(
            &gw,
            (support::AK, support::SK, None),
            &[("Action", "GetSessionToken"), ("DurationSeconds", "900")],
        )
        .await;
        let root_session = creds(&body);
        let past = mongodb::bson::DateTime::from_millis(
            gw.state.store.meta().clock().now().timestamp_millis() - 1000,
        );
        gw.db
            .collection::<mongodb::bson::Document>("__accesskeys")
            .update_one(
                mongodb::bson::doc! {"_id": &root_session.0},
                mongodb::bson::doc! {"$set": {"expiration": past}},
            )
            .await
            .unwrap();
        gw.state.creds.forget(&root_session.0);
        let wrong = (
            root_session.0.clone(),
            root_session.1.clone(),
            format!("{}x", root_session.2),
        );
        let e = sdk_session(&gw, &wrong)
            .get_object()
            .bucket("cbucket")
            .key("f.txt")
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.code(),
            Some("InvalidToken"),
            "an expired session's key id with another token"
        );
        let e = sdk_session(&gw, &root_session)
            .get_object()
            .bucket("cbucket")
            .key("f.txt")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("ExpiredToken"));
    });
}
