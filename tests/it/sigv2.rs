//! Signature Version 2 with real clients (tests/py/sigv2.py): boto3 signing with SigV2,
//! boto3's and awscli's default presigned URLs fetched with plain HTTP and curl, and
//! `--disable-sigv2`.

use crate::support;

#[test]
fn boto3_and_awscli_sigv2_requests_and_presigned_urls() {
    support::run(async {
        let gw = support::gateway("sigv2").await;
        support::run_py_checks(&gw, "sigv2.py", "sigv2", &[]).await;
    });
}

#[test]
fn sigv2_can_be_turned_off() {
    support::run(async {
        let name = format!(
            "g_nov2_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| c.disable_sigv2 = true).await;
        support::run_py_checks(&gw, "sigv2.py", "sigv2", &["disabled"]).await;
    });
}

/// Issue 25 item 2: SigV2 signs a fixed list of sub-resources, and the router acted on more.
/// A presigned PUT URL for `k` with `&retention` appended (and a COMPLIANCE body) set a
/// retention no one signed for. Every sub-resource SigV2 cannot sign (`grids3::subresource`,
/// the router's own list) is now refused, in a query signature and in a header one; and a
/// SigV2 `Expires` more than 7 days ahead is refused.
#[test]
fn sigv2_refuses_sub_resources_it_does_not_sign() {
    support::run(async {
        use grids3::auth::sigv2;
        let gw = support::gateway("sigv2subs").await;
        let s3 = gw.sdk();
        let b = "sigv2-subs";
        s3.create_bucket()
            .bucket(b)
            .object_lock_enabled_for_bucket(true)
            .send()
            .await
            .unwrap();
        let http = reqwest::Client::new();
        let now = chrono::Utc::now().timestamp();
        let presign = |method: &str, expires: i64| {
            let sts = sigv2::string_to_sign(
                method,
                &axum::http::HeaderMap::new(),
                &expires.to_string(),
                &sigv2::canonical_resource(None, &format!("/{b}/k"), &[]),
            );
            let sig = sigv2::sign(support::SK, &sts);
            format!(
                "{}/{b}/k?AWSAccessKeyId={}&Expires={expires}&Signature={}",
                gw.endpoint(),
                support::AK,
                percent_encoding::utf8_percent_encode(&sig, percent_encoding::NON_ALPHANUMERIC)
            )
        };
        let retention = r#"<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>2030-01-01T00:00:00Z</RetainUntilDate></Retention>"#;
        // The URL as signed works (the positive control).
        let put = presign("PUT", now + 300);
        let r = http.put(&put).body("signed").send().await.unwrap();
        assert_eq!(r.status(), 200, "{}", r.text().await.unwrap());
        let mut refused = 0;
        for (word, signed) in grids3::subresource::ALL {
            if *signed {
                continue;
            }
            let r = http
                .put(format!("{put}&{word}"))
                .body(retention)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let text = r.text().await.unwrap();
            assert_eq!(
                (status, support::error_code(&text).as_str()),
                (403, "AccessDenied"),
                "a SigV2 URL with &{word}: {text}"
            );
            refused += 1;
        }
        assert!(refused >= 10, "{refused}");
        // The header form too.
        let date = httpdate::fmt_http_date(std::time::SystemTime::now());
        let mut h = axum::http::HeaderMap::new();
        h.insert("date", date.parse().unwrap());
        h.insert("content-type", "application/xml".parse().unwrap());
        let sts = sigv2::string_to_sign(
            "PUT",
            &h,
            &date,
            &sigv2::canonical_resource(None, &format!("/{b}/k"), &[]),
        );
        let r = http
            .put(format!("{}/{b}/k?legal-hold", gw.endpoint()))
            .header("date", &date)
            .header("content-type", "application/xml")
            .header(
                "authorization",
                format!("AWS {}:{}", support::AK, sigv2::sign(support::SK, &sts)),
            )
            .body("<LegalHold><Status>ON</Status></LegalHold>")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403, "{}", r.text().await.unwrap());
        // Neither retention nor legal hold was set: the object deletes.
        let head = s3.head_object().bucket(b).key("k").send().await.unwrap();
        assert!(
            head.object_lock_mode().is_none() && head.object_lock_legal_hold_status().is_none()
        );
        let v = head.version_id().unwrap().to_owned();
        s3.delete_object()
            .bucket(b)
            .key("k")
            .version_id(v)
            .send()
            .await
            .unwrap();
        // Expires: up to a week ahead, not more.
        let r = http
            .put(presign("PUT", now + 7 * 24 * 3600 - 60))
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let r = http
            .put(presign("PUT", now + 8 * 24 * 3600))
            .body("x")
            .send()
            .await
            .unwrap();
        let text = r.text().await.unwrap();
        assert!(
            text.contains("AccessDenied") && text.contains("week"),
            "{text}"
        );
    });
}
