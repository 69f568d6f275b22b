//! Access keys through the admin API, and authorization: a second key is denied on the root
//! key's bucket for every operation family until it is granted access.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::{doc, Document};

use crate::support::{self, Gateway, Raw};

pub async fn admin(
    gw: &Gateway,
    method: &str,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let mut r = Raw::new(method, path);
    // Each call signs anew: the admin API refuses a signature it has seen.
    r.headers.push((
        "x-grids3-nonce".into(),
        uuid::Uuid::new_v4().simple().to_string(),
    ));
    if !body.is_null() {
        r.body = body.to_string().into_bytes();
    }
    let resp = r.send(gw).await;
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(serde_json::Value::Null),
    )
}

pub async fn new_key(gw: &Gateway, name: &str) -> (String, String) {
    let (status, v) = admin(
        gw,
        "POST",
        "/_grids3/admin/keys",
        serde_json::json!({"name": name}),
    )
    .await;
    assert_eq!(status, 201, "{v}");
    (
        v["accessKeyId"].as_str().unwrap().to_owned(),
        v["secretAccessKey"].as_str().unwrap().to_owned(),
    )
}

fn denied<T, E: ProvideErrorMetadata>(r: Result<T, E>, what: &str) {
    match r {
        Ok(_) => panic!("{what}: allowed, expected AccessDenied"),
        Err(e) => assert_eq!(e.code(), Some("AccessDenied"), "{what}"),
    }
}

#[test]
fn second_key_is_denied_until_granted() {
    support::run(async {
        let gw = support::gateway("authz").await;
        let root = gw.sdk();
        root.create_bucket().bucket("rootb").send().await.unwrap();
        root.put_object()
            .bucket("rootb")
            .key("k")
            .body(ByteStream::from_static(b"root data"))
            .send()
            .await
            .unwrap();
        let (ak, sk) = new_key(&gw, "app").await;
        let app = gw.sdk_as(&ak, &sk);

        // Every operation family on the root's bucket is denied.
        let names: Vec<String> = app
            .list_buckets()
            .send()
            .await
            .unwrap()
            .buckets()
            .iter()
            .filter_map(|b| b.name().map(str::to_owned))
            .collect();
        assert!(!names.contains(&"rootb".to_owned()), "{names:?}");
        // HEAD answers carry no body, so no error code: the status says it.
        let e = app.head_bucket().bucket("rootb").send().await.unwrap_err();
        assert_eq!(
            e.raw_response().map(|r| r.status().as_u16()),
            Some(403),
            "HeadBucket"
        );
        denied(
            app.list_objects_v2().bucket("rootb").send().await,
            "ListObjectsV2",
        );
        denied(
            app.list_object_versions().bucket("rootb").send().await,
            "ListObjectVersions",
        );
        denied(
            app.get_object().bucket("rootb").key("k").send().await,
            "GetObject",
        );
        denied(
            app.put_object()
                .bucket("rootb")
                .key("x")
                .body(ByteStream::from_static(b"x"))
                .send()
                .await,
            "PutObject",
        );
        denied(
            app.delete_object().bucket("rootb").key("k").send().await,
            "DeleteObject",
        );
        denied(
            app.copy_object()
                .bucket("rootb")
                .key("c")
                .copy_source("rootb/k")
                .send()
                .await,
            "CopyObject",
        );
        denied(
            app.create_multipart_upload()
                .bucket("rootb")
                .key("m")
                .send()
                .await,
            "CreateMultipartUpload",
        );
        denied(
            app.list_multipart_uploads().bucket("rootb").send().await,
            "ListMultipartUploads",
        );
        denied(
            app.get_object_tagging()
                .bucket("rootb")
                .key("k")
                .send()
                .await,
            "GetObjectTagging",
        );
        denied(
            app.get_bucket_tagging().bucket("rootb").send().await,
            "GetBucketTagging",
        );
        denied(
            app.delete_bucket().bucket("rootb").send().await,
            "DeleteBucket",
        );
        let e = app
            .create_bucket()
            .bucket("rootb")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("BucketAlreadyExists"));

        // Its own bucket works; copying out of the root's bucket needs read there.
        app.create_bucket().bucket("appb").send().await.unwrap();
        app.put_object()
            .bucket("appb")
            .key("mine")
            .body(ByteStream::from_static(b"app data"))
            .send()
            .await
            .unwrap();
        denied(
            app.copy_object()
                .bucket("appb")
                .key("c")
                .copy_source("rootb/k")
                .send()
                .await,
            "CopyObject from rootb",
        );
        let names: Vec<String> = app
            .list_buckets()
            .send()
            .await
            .unwrap()
            .buckets()
            .iter()
            .filter_map(|b| b.name().map(str::to_owned))
            .collect();
        assert_eq!(names, ["appb"]);

        // Grants: read, then write; owner operations stay denied.
        assert_eq!(
            admin(
                &gw,
                "PUT",
                "/_grids3/admin/buckets/rootb/grants",
                serde_json::json!({"accessKeyId": ak, "role": "read"})
            )
            .await
            .0,
            204
        );
        let got = app
            .get_object()
            .bucket("rootb")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"root data"
        );
        app.copy_object()
            .bucket("appb")
            .key("c")
            .copy_source("rootb/k")
            .send()
            .await
            .unwrap();
        denied(
            app.put_object()
                .bucket("rootb")
                .key("x")
                .body(ByteStream::from_static(b"x"))
                .send()
                .await,
            "PutObject with read",
        );
        assert_eq!(
            admin(
                &gw,
                "PUT",
                "/_grids3/admin/buckets/rootb/grants",
                serde_json::json!({"accessKeyId": ak, "role": "write"})
            )
            .await
            .0,
            204
        );
        app.put_object()
            .bucket("rootb")
            .key("x")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        denied(
            app.delete_bucket().bucket("rootb").send().await,
            "DeleteBucket with write",
        );

        // The root key sees and does everything.
        let names: Vec<String> = root
            .list_buckets()
            .send()
            .await
            .unwrap()
            .buckets()
            .iter()
            .filter_map(|b| b.name().map(str::to_owned))
            .collect();
        assert_eq!(names, ["appb", "rootb"]);
        root.get_object()
            .bucket("appb")
            .key("mine")
            .send()
            .await
            .unwrap();

        // Listing keys never returns secrets; a deleted key stops working.
        let (status, v) = admin(&gw, "GET", "/_grids3/admin/keys", serde_json::Value::Null).await;
        assert_eq!(status, 200);
        assert!(!v.to_string().contains(&sk));
        assert!(v["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["accessKeyId"] == ak.as_str()));
        let (status, _) = admin(
            &gw,
            "DELETE",
            &format!("/_grids3/admin/keys/{ak}"),
            serde_json::Value::Null,
        )
        .await;
        assert_eq!(status, 204);
        let e = app.list_buckets().send().await.unwrap_err();
        assert_eq!(e.code(), Some("InvalidAccessKeyId"));
    });
}

#[test]
fn admin_api_is_root_only_and_secrets_are_sealed_with_a_master_key() {
    support::run(async {
        let name = format!(
            "g_sealed_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| {
            c.master_key = Some("correct horse battery staple".into())
        })
        .await;
        let (ak, sk) = new_key(&gw, "sealed").await;
        let stored: Document = gw
            .db
            .collection("__accesskeys")
            .find_one(doc! {"_id": &ak})
            .await
            .unwrap()
            .unwrap();
        let secret = stored.get_str("secret").unwrap();
        assert!(
            secret.starts_with("v1:") && !secret.contains(&sk),
            "sealed at rest"
        );
        // The sealed key works, and it may not use the admin API.
        let app = gw.sdk_as(&ak, &sk);
        app.create_bucket().bucket("sealedb").send().await.unwrap();
        let mut r = Raw::new("GET", "/_grids3/admin/keys");
        r.access_key = &ak;
        r.secret = &sk;
        assert_eq!(r.send(&gw).await.status(), 403);
        let unsigned = reqwest::get(format!("{}/_grids3/admin/keys", gw.endpoint()))
            .await
            .unwrap();
        assert_eq!(unsigned.status(), 403);
    });
}

#[test]
fn admin_cli_calls_the_api() {
    support::run(async {
        let gw = support::gateway("cli").await;
        gw.sdk()
            .create_bucket()
            .bucket("clib")
            .send()
            .await
            .unwrap();
        let endpoint = gw.endpoint();
        let cli = move |args: &[&str]| support::admin_cli(&endpoint, args);
        let (created, listed, why) = tokio::task::spawn_blocking(move || {
            let created = cli(&["create-key", "--name", "from-cli"]);
            let id = created["accessKeyId"].as_str().unwrap().to_owned();
            let before = cli(&["access", &id, "clib", "k", "--action", "s3:GetObject"]);
            cli(&["grant", "clib", &id, "read"]);
            let read = cli(&["access", &id, "clib", "k"]);
            let write = cli(&["access", &id, "clib", "k", "--action", "s3:PutObject"]);
            let anon = cli(&["access", "anonymous", "clib"]);
            (created, cli(&["list-keys"]), [before, read, write, anon])
        })
        .await
        .unwrap();
        // "Why was this denied?": the decision and the rule that made it.
        let [before, read, write, anon] = why;
        assert_eq!(before["allowed"], false, "{before}");
        assert!(
            before["rule"].as_str().unwrap().contains("object's ACL"),
            "{before}"
        );
        assert_eq!(read["allowed"], true, "{read}");
        assert_eq!(read["inputs"]["role"], "read", "{read}");
        assert_eq!(write["allowed"], false, "{write}");
        assert!(
            write["rule"]
                .as_str()
                .unwrap()
                .contains("nothing allows it"),
            "{write}"
        );
        assert_eq!(anon["allowed"], false, "{anon}");
        assert_eq!(anon["action"], "s3:ListBucket", "{anon}");
        assert!(listed["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["name"] == "from-cli"));
        let app = gw.sdk_as(
            created["accessKeyId"].as_str().unwrap(),
            created["secretAccessKey"].as_str().unwrap(),
        );
        app.list_objects_v2().bucket("clib").send().await.unwrap();
    });
}

/// An AccessControlPolicy granting the owner FULL_CONTROL and, if given, READ to a group.
fn acl_policy(owner_id: &str, read_group: Option<&str>) -> aws_sdk_s3::types::AccessControlPolicy {
    use aws_sdk_s3::types::{Grant, Grantee, Owner, Permission, Type};
    let grant = |t: Type, id: Option<&str>, uri: Option<&str>, p: Permission| {
        Grant::builder()
            .grantee(
                Grantee::builder()
                    .r#type(t)
                    .set_id(id.map(str::to_owned))
                    .set_uri(uri.map(str::to_owned))
                    .build()
                    .unwrap(),
            )
            .permission(p)
            .build()
    };
    let mut b = aws_sdk_s3::types::AccessControlPolicy::builder()
        .owner(Owner::builder().id(owner_id).build())
        .grants(grant(
            Type::CanonicalUser,
            Some(owner_id),
            None,
            Permission::FullControl,
        ));
    if let Some(uri) = read_group {
        b = b.grants(grant(Type::Group, None, Some(uri), Permission::Read));
    }
    b.build()
}

#[test]
fn canned_acls_grants_and_public_buckets() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl, Permission};
    support::run(async {
        let gw = support::gateway("acl").await;
        let s3 = gw.sdk();
        // An ACL for a service grids3 does not have is refused, never accepted in silence.
        let e = s3
            .create_bucket()
            .bucket("logs")
            .acl(BucketCannedAcl::from("log-delivery-write"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NotImplemented"));
        assert!(s3.head_bucket().bucket("logs").send().await.is_err());
        s3.create_bucket()
            .bucket("aclb")
            .acl(BucketCannedAcl::Private)
            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
            .send()
            .await
            .unwrap();
        // Object ACLs that grids3 has are honoured: public-read opens an object to unsigned
        // requests, authenticated-read to any valid key; others stay closed.
        let anon = |path: &str| {
            let url = format!("http://{}{path}", gw.addr);
            async move { reqwest::get(url).await.unwrap() }
        };
        s3.put_object()
            .bucket("aclb")
            .key("pub")
            .acl(ObjectCannedAcl::PublicRead)
            .body(ByteStream::from_static(b"for everyone"))
            .send()
            .await
            .unwrap();
        let r = anon("/aclb/pub").await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.bytes().await.unwrap().as_ref(), b"for everyone");
        let e = s3
            .put_object()
            .bucket("aclb")
            .key("k")
            .acl(ObjectCannedAcl::AwsExecRead)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NotImplemented"));
        assert!(s3
            .head_object()
            .bucket("aclb")
            .key("k")
            .send()
            .await
            .is_err());
        // A grant header is honoured like the canned ACL it amounts to.
        s3.put_object()
            .bucket("aclb")
            .key("k")
            .grant_read("uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        assert_eq!(anon("/aclb/k").await.status(), 200);
        let r = anon("/aclb/missing").await;
        assert_eq!(
            r.status(),
            403,
            "an unsigned request learns nothing about other keys"
        );
        assert_eq!(anon("/aclb?list-type=2").await.status(), 403);
        for acl in [
            ObjectCannedAcl::Private,
            ObjectCannedAcl::BucketOwnerFullControl,
        ] {
            s3.put_object()
                .bucket("aclb")
                .key("k")
                .acl(acl)
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
        }
        // The ACLs say what is true: the owner, and the keys granted through the admin API.
        let (ak, _) = new_key(&gw, "reader").await;
        assert_eq!(
            admin(
                &gw,
                "PUT",
                "/_grids3/admin/buckets/aclb/grants",
                serde_json::json!({"accessKeyId": ak, "role": "read"})
            )
            .await
            .0,
            204
        );
        // (Bucket attributes are cached for up to a second.)
        tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
        let acl = s3.get_bucket_acl().bucket("aclb").send().await.unwrap();
        let owner_id = acl.owner().unwrap().id().unwrap().to_owned();
        let grants: Vec<(String, Permission)> = acl
            .grants()
            .iter()
            .map(|g| {
                (
                    g.grantee()
                        .unwrap()
                        .display_name()
                        .unwrap_or_default()
                        .to_owned(),
                    g.permission().unwrap().clone(),
                )
            })
            .collect();
        assert_eq!(
            grants,
            [
                (support::AK.to_owned(), Permission::FullControl),
                (ak.clone(), Permission::Read)
            ]
        );
        let oacl = s3
            .get_object_acl()
            .bucket("aclb")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(oacl.grants().len(), 2);
        assert_eq!(anon("/aclb/k").await.status(), 403, "a private object");
        let pacl = s3
            .get_object_acl()
            .bucket("aclb")
            .key("pub")
            .send()
            .await
            .unwrap();
        assert!(pacl.grants().iter().any(|g| {
            g.grantee().and_then(|x| x.uri())
                == Some("http://acs.amazonaws.com/groups/global/AllUsers")
                && g.permission() == Some(&Permission::Read)
        }));
        // authenticated-read: a key the bucket grants nothing may read it, unsigned requests
        // may not.
        let (other_ak, other_sk) = new_key(&gw, "stranger").await;
        s3.put_object_acl()
            .bucket("aclb")
            .key("pub")
            .acl(ObjectCannedAcl::AuthenticatedRead)
            .send()
            .await
            .unwrap();
        assert_eq!(anon("/aclb/pub").await.status(), 403);
        let stranger = gw.sdk_as(&other_ak, &other_sk);
        let got = stranger
            .get_object()
            .bucket("aclb")
            .key("pub")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"for everyone"
        );
        let e = stranger
            .get_object()
            .bucket("aclb")
            .key("k")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"));
        let e = s3
            .get_object_acl()
            .bucket("aclb")
            .key("missing")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NoSuchKey"));
        // PutBucketAcl: a public-read bucket may be listed unsigned, and a missing key is
        // then 404 rather than 403; private closes it again.
        s3.put_bucket_acl()
            .bucket("aclb")
            .acl(BucketCannedAcl::PublicRead)
            .send()
            .await
            .unwrap();
        assert_eq!(anon("/aclb?list-type=2").await.status(), 200);
        assert_eq!(anon("/aclb/missing").await.status(), 404);
        assert_eq!(
            anon("/aclb/k").await.status(),
            403,
            "objects keep their ACL"
        );
        s3.put_bucket_acl()
            .bucket("aclb")
            .acl(BucketCannedAcl::Private)
            .send()
            .await
            .unwrap();
        assert_eq!(anon("/aclb?list-type=2").await.status(), 403);
        let policy = acl_policy(&owner_id, None);
        // An ACL document that adds READ for AllUsers (what s3cmd setacl --acl-public sends)
        // makes the object public-read; one that grants only the owner, private again.
        let public = acl_policy(
            &owner_id,
            Some("http://acs.amazonaws.com/groups/global/AllUsers"),
        );
        s3.put_object_acl()
            .bucket("aclb")
            .key("pub")
            .access_control_policy(public)
            .send()
            .await
            .unwrap();
        assert_eq!(anon("/aclb/pub").await.status(), 200);
        // An ACL granting only the owner makes the object private again.
        s3.put_object_acl()
            .bucket("aclb")
            .key("pub")
            .access_control_policy(policy)
            .send()
            .await
            .unwrap();
        let e = stranger
            .get_object()
            .bucket("aclb")
            .key("pub")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"));
        // A group grant on the bucket by header, seen in GetBucketAcl.
        s3.put_bucket_acl()
            .bucket("aclb")
            .grant_read("uri=\"http://acs.amazonaws.com/groups/global/AuthenticatedUsers\"")
            .send()
            .await
            .unwrap();
        let listed = stranger
            .list_objects_v2()
            .bucket("aclb")
            .send()
            .await
            .unwrap();
        assert_eq!(listed.contents().len(), 2);
        assert_eq!(anon("/aclb?list-type=2").await.status(), 403);
        let acl = s3.get_bucket_acl().bucket("aclb").send().await.unwrap();
        assert!(acl.grants().iter().any(|g| {
            g.grantee().and_then(|x| x.uri())
                == Some("http://acs.amazonaws.com/groups/global/AuthenticatedUsers")
                && g.permission() == Some(&Permission::Read)
        }));
    });
}

#[test]
fn acls_with_s3cmd_boto3_and_curl() {
    support::run(async {
        let gw = support::gateway("aclpy").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "acl.py", "acl", &[&ak2, &sk2]).await;
    });
}

/// Issue 25 item 1: a bucket policy allowing `s3:*` to everyone let unsigned requests replace
/// the policy, change ownership and delete the bucket. Every owner-only operation (the table
/// the decision reads, `s3::rules::owner_only::OWNER_ONLY`) is now refused to an unsigned
/// request (403), while the same policy still lets both read objects. Issue 40, item 4b:
/// another key gets what AWS gives another account that the policy allows: 405 for the policy
/// operations, the operation itself for the rows AWS lets a policy grant across accounts (it
/// got 403 for all of them), 403 for grids3's own extension.
#[test]
fn owner_only_operations_ignore_a_public_policy() {
    support::run(async {
        let gw = support::gateway("owneronly").await;
        let (ak, sk) = new_key(&gw, "stranger").await;
        let root = gw.sdk();
        let b = "owner-only";
        root.create_bucket().bucket(b).send().await.unwrap();
        root.put_object()
            .bucket(b)
            .key("k")
            .body(ByteStream::from_static(b"public"))
            .send()
            .await
            .unwrap();
        let policy = serde_json::json!({
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:*",
                "Resource": [format!("arn:aws:s3:::{b}"), format!("arn:aws:s3:::{b}/*")]}]
        })
        .to_string();
        root.put_bucket_policy()
            .bucket(b)
            .policy(&policy)
            .send()
            .await
            .unwrap();
        // The policy is in force: both may read the object through it.
        let http = reqwest::Client::new();
        let url = |q: &str| {
            if q.is_empty() {
                format!("{}/{b}", gw.endpoint())
            } else {
                format!("{}/{b}?{q}", gw.endpoint())
            }
        };
        let got = http
            .get(format!("{}/{b}/k", gw.endpoint()))
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.status(),
            200,
            "an unsigned GET through the public policy"
        );
        let other = gw.sdk_as(&ak, &sk);
        assert!(other.get_object().bucket(b).key("k").send().await.is_ok());
        let deny_all = serde_json::json!({"Version": "2012-10-17", "Statement": [{"Effect": "Deny",
            "Principal": "*", "Action": "s3:*", "Resource": format!("arn:aws:s3:::{b}/*")}]})
        .to_string();
        let mut rows = 0;
        let mut granted = 0;
        for row in grids3::s3::rules::owner_only::OWNER_ONLY {
            let what = format!("{} ?{}", row.method, row.query);
            let body = if row.query == "policy" {
                deny_all.clone()
            } else {
                String::new()
            };
            let anon = http
                .request(row.method.parse().unwrap(), url(row.query))
                .body(body.clone())
                .send()
                .await
                .unwrap();
            let status = anon.status().as_u16();
            let text = anon.text().await.unwrap();
            assert_eq!(
                (status, support::error_code(&text).as_str()),
                (403, "AccessDenied"),
                "unsigned {what}: {text}"
            );
            let path = if row.query.is_empty() {
                format!("/{b}")
            } else {
                format!("/{b}?{}", row.query)
            };
            let mut signed = Raw::new(row.method, &path);
            signed.access_key = &ak;
            signed.secret = &sk;
            signed.body = body.into_bytes();
            let resp = signed.send(&gw).await;
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            use grids3::s3::rules::owner_only::Others;
            let code = support::error_code(&text);
            match row.others {
                Others::MethodNotAllowed => assert_eq!(
                    (status, code.as_str()),
                    (405, "MethodNotAllowed"),
                    "another key's {what}: {text}"
                ),
                Others::AccessDenied => assert_eq!(
                    (status, code.as_str()),
                    (403, "AccessDenied"),
                    "another key's {what}: {text}"
                ),
                // Authorized: the operation itself answers (an empty body is MalformedXML, a
                // bucket with an object is not empty, an unset configuration is missing).
                Others::Policy => {
                    assert!(
                        status != 403 && status != 405 && status < 500,
                        "another key's {what}, which the policy allows: {status} {text}"
                    );
                    granted += 1;
                }
            }
            rows += 1;
        }
        assert!(rows >= 30, "{rows} owner-only operations");
        assert!(
            granted >= 25,
            "{granted} rows granted to another key by the policy"
        );
        // Nothing changed: the bucket, its policy and its ownership are the owner's.
        let kept = root.get_bucket_policy().bucket(b).send().await.unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(kept.policy().unwrap()).unwrap(),
            serde_json::from_str::<serde_json::Value>(&policy).unwrap()
        );
        assert!(root.head_bucket().bucket(b).send().await.is_ok());
        // A key the admin API made an owner of the bucket may run them.
        let (status, v) = admin(
            &gw,
            "PUT",
            &format!("/_grids3/admin/buckets/{b}/grants"),
            serde_json::json!({"accessKeyId": ak, "role": "owner"}),
        )
        .await;
        assert!(status < 300, "{status} {v}");
        assert!(other.get_bucket_policy().bucket(b).send().await.is_ok());
    });
}
