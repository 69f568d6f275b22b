//! An object's Object Lock from the console (issue 39), with raw HTTP: the legal hold and
//! the retention are the key's own S3 requests, so S3's refusals (no Object Lock on the
//! bucket, shortening a governance retention without the bypass) show with AWS's reason.

use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

#[test]
fn legal_hold_and_retention_are_set_as_s3_allows() {
    support::run(async {
        let c = Console::start("consolelock").await;
        let s3 = c.gw.sdk();
        s3.create_bucket()
            .bucket("locked")
            .object_lock_enabled_for_bucket(true)
            .send()
            .await
            .unwrap();
        s3.create_bucket().bucket("plain").send().await.unwrap();
        for b in ["locked", "plain"] {
            s3.put_object()
                .bucket(b)
                .key("doc.txt")
                .body(ByteStream::from_static(b"keep me"))
                .send()
                .await
                .unwrap();
        }
        let root = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&root).await;
        let post = |bucket: &'static str, fields: Vec<(&'static str, &'static str)>| {
            let mut form = vec![
                ("csrf", csrf.as_str()),
                ("bucket", bucket),
                ("key", "doc.txt"),
            ];
            form.extend(fields);
            let c = &c;
            let root = root.clone();
            async move {
                let r = c.post(&root, "/objects/lock", &form, None).await;
                (r.status().as_u16(), r.text().await.unwrap())
            }
        };

        // The legal hold, on.
        let (status, _) = post("locked", vec![("what", "legal-hold"), ("status", "ON")]).await;
        assert_eq!(status, 303);
        let hold = s3
            .get_object_legal_hold()
            .bucket("locked")
            .key("doc.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(hold.legal_hold().unwrap().status().unwrap().as_str(), "ON");

        // A governance retention, then shortened: refused without the bypass, done with it.
        let (status, _) = post(
            "locked",
            vec![
                ("what", "retention"),
                ("mode", "GOVERNANCE"),
                ("until", "2040-01-01"),
            ],
        )
        .await;
        assert_eq!(status, 303);
        let ret = s3
            .get_object_retention()
            .bucket("locked")
            .key("doc.txt")
            .send()
            .await
            .unwrap();
        let until = ret.retention().unwrap().retain_until_date().unwrap();
        assert_eq!(until.secs(), 2_208_988_800, "2040-01-01T00:00:00Z");
        let (status, page) = post(
            "locked",
            vec![
                ("what", "retention"),
                ("mode", "GOVERNANCE"),
                ("until", "2035-01-01"),
            ],
        )
        .await;
        assert_eq!(status, 403, "{page}");
        assert!(page.contains("AccessDenied"), "{page}");
        let (status, _) = post(
            "locked",
            vec![
                ("what", "retention"),
                ("mode", "GOVERNANCE"),
                ("until", "2035-01-01T06:30"),
                ("bypass", "on"),
            ],
        )
        .await;
        assert_eq!(status, 303);
        let ret = s3
            .get_object_retention()
            .bucket("locked")
            .key("doc.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            ret.retention().unwrap().retain_until_date().unwrap().secs(),
            2_051_245_800,
            "2035-01-01T06:30:00Z"
        );

        // A bucket without Object Lock: S3's refusal, shown.
        let (status, page) = post("plain", vec![("what", "legal-hold"), ("status", "ON")]).await;
        assert_eq!(status, 400, "{page}");
        assert!(page.contains("InvalidRequest"), "{page}");
        // A bad date never reaches S3.
        let (status, page) = post(
            "locked",
            vec![
                ("what", "retention"),
                ("mode", "GOVERNANCE"),
                ("until", "soon"),
            ],
        )
        .await;
        assert_eq!(status, 400, "{page}");
    });
}

/// Root converts a bucket's storage mode from its settings page; the page shows the mode and,
/// while it runs, the conversion's progress; the objects read the same after. Not root: no.
#[test]
fn root_converts_a_bucket_from_its_settings() {
    support::run(async {
        let c = Console::start_with("consoleconvert", |c| {
            c.master_key = Some("console convert test master".into())
        })
        .await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("conv").send().await.unwrap();
        for i in 0..5 {
            s3.put_object()
                .bucket("conv")
                .key(format!("k{i}"))
                .body(ByteStream::from(format!("body {i}").into_bytes()))
                .send()
                .await
                .unwrap();
        }
        let root = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&root).await;
        let page = c
            .get(&root, "/settings?bucket=conv")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("id=\"storage-mode\">gridfs<"), "{page}");
        let r = c
            .post(
                &root,
                "/settings/convert",
                &[("csrf", &csrf), ("bucket", "conv"), ("to", "content")],
                None,
            )
            .await;
        // To the settings page (a GET, which the progress reloads).
        assert_eq!(r.status(), 303);
        assert_eq!(r.headers()["location"], "/settings?bucket=conv");
        let mut page = String::new();
        for _ in 0..100 {
            page = c
                .get(&root, "/settings?bucket=conv")
                .await
                .text()
                .await
                .unwrap();
            if page.contains("id=\"storage-mode\">content<") && !page.contains("id=\"converting\"")
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert!(page.contains("id=\"storage-mode\">content<"), "{page}");
        assert!(
            !page.contains("id=\"converting\""),
            "the conversion finished: {page}"
        );
        for i in 0..5 {
            let got = s3
                .get_object()
                .bucket("conv")
                .key(format!("k{i}"))
                .send()
                .await
                .unwrap();
            let body = got.body.collect().await.unwrap().into_bytes();
            assert_eq!(&body[..], format!("body {i}").as_bytes());
        }
        let files = c
            .gw
            .db
            .collection::<mongodb::bson::Document>("conv.files")
            .count_documents(
                mongodb::bson::doc! {"$or": [{"sha": {"$exists": true}}, {"in": {"$exists": true}}]},
            )
            .await
            .unwrap();
        assert_eq!(files, 5, "stored content-addressed");

        // Another key sees no storage section and cannot convert.
        let (ak, sk) = crate::authz::new_key(&c.gw, "viewer").await;
        let user = c.login(&ak, &sk).await.unwrap();
        let user_csrf = c.csrf(&user).await;
        let r = c
            .post(
                &user,
                "/settings/convert",
                &[("csrf", &user_csrf), ("bucket", "conv"), ("to", "gridfs")],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        let page = c
            .get(&user, "/settings?bucket=conv")
            .await
            .text()
            .await
            .unwrap();
        assert!(!page.contains("id=\"storage\""));
    });
}
