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
