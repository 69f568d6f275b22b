//! Issue 25: key material never reaches a log, the admin API refuses replays, SigV4 signs
//! `host`, and metrics take a bearer token.

use base64::Engine;
use md5::{Digest, Md5};

use crate::support::{self, Raw};

/// Item 3: on a signature mismatch the canonical request was logged at debug level with the
/// SSE-C key in clear. A gateway logging at trace level gets a mismatched SSE-C PUT (and a
/// SigV2 one) and a good SSE-C PUT and GET; its log names the mismatch and never the key.
#[test]
fn logs_never_hold_an_sse_c_key() {
    support::run(async {
        let db = support::fresh_db("seclog").await;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("grids3.log");
        let p = support::Process::start_logging(
            db.name(),
            &[
                ("RUST_LOG", "trace"),
                ("GRIDS3_MASTER_KEY", "test-master-key-for-logs"),
                ("GRIDS3_ALLOW_INSECURE_SSE_C", "true"),
            ],
            Some(&log),
        )
        .await;
        let endpoint = format!("http://{}", p.addr);
        let key: [u8; 32] = *b"0123456789abcdefTHE-SECRET-KEY!!";
        let b64 = base64::engine::general_purpose::STANDARD.encode(key);
        let md5 = base64::engine::general_purpose::STANDARD.encode(Md5::digest(key));
        let peer = support::gateway_on(db.name()).await;
        let gw = p.as_gateway(&peer);
        let s3 = gw.sdk();
        s3.create_bucket().bucket("seclog").send().await.unwrap();
        let sse = vec![
            (
                "x-amz-server-side-encryption-customer-algorithm".to_owned(),
                "AES256".to_owned(),
            ),
            (
                "x-amz-server-side-encryption-customer-key".to_owned(),
                b64.clone(),
            ),
            (
                "x-amz-server-side-encryption-customer-key-md5".to_owned(),
                md5.clone(),
            ),
        ];
        let mut bad = Raw::new("PUT", "/seclog/k");
        bad.secret = "not-the-secret";
        bad.headers = sse.clone();
        bad.body = b"secret bytes".to_vec();
        let r = bad.send(&gw).await;
        assert_eq!(r.status(), 403);
        // SigV2, with a wrong signature.
        let r = reqwest::Client::new()
            .put(format!("{endpoint}/seclog/k2"))
            .header(
                "date",
                httpdate::fmt_http_date(std::time::SystemTime::now()),
            )
            .header(
                "authorization",
                format!("AWS {}:AAAAAAAAAAAAAAAAAAAAAAAAAAA=", support::AK),
            )
            .header(&sse[0].0, &sse[0].1)
            .header(&sse[1].0, &sse[1].1)
            .header(&sse[2].0, &sse[2].1)
            .body("x")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 403);
        let mut good = Raw::new("PUT", "/seclog/k");
        good.headers = sse.clone();
        good.body = b"secret bytes".to_vec();
        assert_eq!(good.send(&gw).await.status(), 200);
        let mut get = Raw::new("GET", "/seclog/k");
        get.headers = sse.clone();
        let r = get.send(&gw).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.bytes().await.unwrap().as_ref(), b"secret bytes");
        drop(gw);
        drop(peer);
        drop(p);
        let text = std::fs::read_to_string(&log).unwrap();
        assert!(
            text.contains("signature mismatch"),
            "the log names the mismatch"
        );
        assert!(text.contains("SigV2 signature mismatch"));
        for (what, form) in [
            ("base64", b64.clone()),
            ("hex", hex::encode(key)),
            ("raw", String::from_utf8_lossy(&key).into_owned()),
            ("raw, escaped", "THE-SECRET-KEY".to_owned()),
        ] {
            assert!(
                !text.contains(&form),
                "the log holds the SSE-C key ({what})"
            );
        }
        assert!(text.contains("<redacted>"));
        // Its MD5 may appear (it identifies the key without revealing it).
        println!("log: {} bytes at trace level, no key", text.len());
    });
}
