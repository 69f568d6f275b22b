//! Issue 25, item 8: native TLS. The AWS SDK for Rust, awscli and curl over https with a
//! certificate made here (rcgen), HTTP/2 by ALPN; a renewed certificate served without a
//! restart (file change, SIGHUP), a broken one never; SSE-C over plain HTTP refused unless
//! `--allow-insecure-sse-c`.

use base64::Engine;
use md5::{Digest, Md5};

use crate::support::{self, AK, SK};

/// A self-signed certificate for `localhost` and 127.0.0.1, and its key, as PEM.
fn pair() -> (String, String) {
    let c =
        rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    (c.cert.pem(), c.key_pair.serialize_pem())
}

/// Replaces `path` whole (a rename, as certificate tools do), so a reader never sees half.
fn replace(path: &std::path::Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Whether a fresh connection to `addr` completes a TLS handshake trusting only `ca_pem` (and
/// gets an answer).
async fn served_with(addr: std::net::SocketAddr, ca_pem: &str) -> bool {
    support::https_client(ca_pem)
        .get(format!("https://{addr}/_grids3/ready"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
}

/// An SDK client for an https endpoint whose certificate is `ca_pem`.
fn sdk_https(endpoint: &str, ca_pem: &str) -> aws_sdk_s3::Client {
    use aws_smithy_http_client::tls;
    let http = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::AwsLc,
        ))
        .tls_context(
            tls::TlsContext::builder()
                .with_trust_store(tls::TrustStore::empty().with_pem_certificate(ca_pem.as_bytes()))
                .build()
                .unwrap(),
        )
        .build_https();
    let creds = aws_credential_types::Credentials::new(AK, SK, None, None, "test");
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("us-east-1"))
        .endpoint_url(endpoint)
        .credentials_provider(creds)
        .force_path_style(true)
        .http_client(http)
        .build();
    aws_sdk_s3::Client::from_conf(conf)
}

/// SSE-C headers' values for a key: (key, its MD5), base64.
fn customer(key: &[u8; 32]) -> (String, String) {
    let b64 = base64::engine::general_purpose::STANDARD;
    (b64.encode(key), b64.encode(Md5::digest(key)))
}

/// A gateway serving HTTPS with a fresh pair written to `dir` (`cert.pem`, `key.pem`), its
/// files looked at every `reload_secs`; the pair's paths and its certificate (PEM).
async fn start_https(
    dir: &std::path::Path,
    tag: &str,
    reload_secs: &str,
) -> (
    support::Process,
    std::path::PathBuf,
    std::path::PathBuf,
    String,
) {
    let (cp, kp) = (dir.join("cert.pem"), dir.join("key.pem"));
    let (cert, key) = pair();
    std::fs::write(&cp, &cert).unwrap();
    std::fs::write(&kp, &key).unwrap();
    let db = support::fresh_db(tag).await;
    let p = support::Process::start_https(
        db.name(),
        &[
            ("GRIDS3_TLS_CERT", cp.to_str().unwrap()),
            ("GRIDS3_TLS_KEY", kp.to_str().unwrap()),
            ("GRIDS3_TLS_RELOAD_INTERVAL", reload_secs),
        ],
        &cert,
    )
    .await;
    (p, cp, kp, cert)
}

#[test]
fn https_serves_the_sdk_awscli_and_curl() {
    support::run(async {
        let dir = tempfile::tempdir().unwrap();
        let (p, cp, _, cert) = start_https(dir.path(), "tls", "10").await;
        let endpoint = format!("https://{}", p.addr);

        // The AWS SDK for Rust, with SSE-C (which needs TLS without the flag).
        let s3 = sdk_https(&endpoint, &cert);
        s3.create_bucket().bucket("tls").send().await.unwrap();
        s3.put_object()
            .bucket("tls")
            .key("a.txt")
            .body(b"over tls".to_vec().into())
            .send()
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("tls")
            .key("a.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"over tls"
        );
        let (k, k_md5) = customer(b"0123456789abcdef0123456789abcdef");
        s3.put_object()
            .bucket("tls")
            .key("secret")
            .body(b"customer keyed".to_vec().into())
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .expect("SSE-C over https");
        let got = s3
            .get_object()
            .bucket("tls")
            .key("secret")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap();
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"customer keyed"
        );

        // awscli, trusting the certificate through --ca-bundle.
        let aws = support::python().parent().unwrap().join("aws");
        let src = dir.path().join("cli.bin");
        let data = support::random_bytes(300_000, 25);
        std::fs::write(&src, &data).unwrap();
        let back = dir.path().join("back.bin");
        let cli = |args: Vec<String>| {
            let out = std::process::Command::new(&aws)
                .args([
                    "--endpoint-url",
                    &endpoint,
                    "--ca-bundle",
                    cp.to_str().unwrap(),
                ])
                .args(&args)
                .env("AWS_ACCESS_KEY_ID", AK)
                .env("AWS_SECRET_ACCESS_KEY", SK)
                .env("AWS_DEFAULT_REGION", "us-east-1")
                .env("AWS_CONFIG_FILE", "/dev/null")
                .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "aws {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let path = |p: &std::path::Path| p.to_str().unwrap().to_owned();
        tokio::task::block_in_place(|| {
            cli(vec![
                "s3".into(),
                "cp".into(),
                path(&src),
                "s3://tls/cli.bin".into(),
            ]);
            let ls = cli(vec!["s3".into(), "ls".into(), "s3://tls/".into()]);
            assert!(ls.contains("cli.bin") && ls.contains("a.txt"), "{ls}");
            cli(vec![
                "s3".into(),
                "cp".into(),
                "s3://tls/cli.bin".into(),
                path(&back),
            ]);
        });
        assert_eq!(std::fs::read(&back).unwrap(), data);

        // curl: HTTP/2 by ALPN, HTTP/1.1 when asked, a signed GET over h2, and no answer
        // without trusting the certificate.
        let curl = support::apt_tool("curl", "curl").expect("curl");
        let run = |args: &[&str]| {
            support::blocking(|| std::process::Command::new(&curl).args(args).output()).unwrap()
        };
        let ready = format!("{endpoint}/_grids3/ready");
        let ca = path(&cp);
        let fmt = "%{http_version} %{http_code}";
        let h2 = run(&["-sS", "--cacert", &ca, "-o", "/dev/null", "-w", fmt, &ready]);
        assert_eq!(String::from_utf8_lossy(&h2.stdout), "2 200");
        let h1 = run(&[
            "-sS",
            "--http1.1",
            "--cacert",
            &ca,
            "-o",
            "/dev/null",
            "-w",
            fmt,
            &ready,
        ]);
        assert_eq!(String::from_utf8_lossy(&h1.stdout), "1.1 200");
        let user = format!("{AK}:{SK}");
        let signed = run(&[
            "-sS",
            "--fail",
            "--cacert",
            &ca,
            "--aws-sigv4",
            "aws:amz:us-east-1:s3",
            "--user",
            &user,
            &format!("{endpoint}/tls/a.txt"),
        ]);
        assert!(
            signed.status.success(),
            "{}",
            String::from_utf8_lossy(&signed.stderr)
        );
        assert_eq!(signed.stdout, b"over tls");
        let untrusted = run(&["-sS", "-o", "/dev/null", &ready]);
        assert_eq!(
            untrusted.status.code(),
            Some(60),
            "curl's certificate error"
        );
    });
}

#[test]
fn a_renewed_certificate_is_served_without_a_restart() {
    support::run(async {
        let dir = tempfile::tempdir().unwrap();
        let (p, cp, kp, a_cert) = start_https(dir.path(), "tlsswap", "1").await;
        let (b_cert, b_key) = pair();
        assert!(!served_with(p.addr, &b_cert).await);
        // The key first, as a renewal tool may: the pair is then inconsistent for a moment,
        // and A stays in service until the certificate follows.
        replace(&kp, &b_key);
        assert!(served_with(p.addr, &a_cert).await);
        replace(&cp, &b_cert);
        assert!(
            support::eventually(15, || served_with(p.addr, &b_cert)).await,
            "the renewed certificate was not picked up"
        );
        assert!(!served_with(p.addr, &a_cert).await);
    });
}

#[test]
fn sighup_reloads_the_certificate_and_a_broken_one_is_never_served() {
    support::run(async {
        let dir = tempfile::tempdir().unwrap();
        // Files are looked at hourly: only the signal reloads here.
        let (p, cp, kp, a_cert) = start_https(dir.path(), "tlshup", "3600").await;
        let hup = || {
            let s = std::process::Command::new("kill")
                .args(["-HUP", &p.child.id().to_string()])
                .status()
                .unwrap();
            assert!(s.success());
        };
        let reloads = |result: &'static str| {
            let url = format!("https://{}/_grids3/metrics", p.addr);
            let client = support::https_client(&a_cert);
            async move {
                let text = match client.get(&url).send().await {
                    Ok(r) => r.text().await.unwrap_or_default(),
                    Err(_) => String::new(),
                };
                text.lines()
                    .find(|l| {
                        l.starts_with(&format!("grids3_tls_reloads_total{{result=\"{result}\"}}"))
                    })
                    .and_then(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
                    .unwrap_or(0)
            }
        };
        // A broken pair (a certificate without its key): the signal reloads, fails, and A is
        // still served.
        let (b_cert, b_key) = pair();
        replace(&cp, &b_cert);
        hup();
        assert!(
            support::eventually(10, || async { reloads("error").await == 1 }).await,
            "the failed reload was not reported"
        );
        assert!(served_with(p.addr, &a_cert).await);
        assert!(!served_with(p.addr, &b_cert).await);
        // The key follows; nothing happens until the signal.
        replace(&kp, &b_key);
        assert!(served_with(p.addr, &a_cert).await);
        hup();
        assert!(
            support::eventually(10, || served_with(p.addr, &b_cert)).await,
            "SIGHUP did not reload"
        );
        assert!(!served_with(p.addr, &a_cert).await);
    });
}

/// AWS refuses SSE-C over HTTP; so does grids3 unless `--allow-insecure-sse-c` (for TLS ended
/// at a proxy in front). Nothing is stored by a refused write.
#[test]
fn sse_c_over_plain_http_is_refused_unless_allowed() {
    support::run(async {
        let name = format!(
            "t_ssehttp_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let strict = support::gateway_with(&name, |c| c.allow_insecure_sse_c = false).await;
        let s3 = strict.sdk();
        s3.create_bucket().bucket("plain").send().await.unwrap();
        let (k, k_md5) = customer(b"0123456789abcdef0123456789abcdef");
        let e = s3
            .put_object()
            .bucket("plain")
            .key("secret")
            .body(b"x".to_vec().into())
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap_err();
        let raw = e.raw_response().expect("an answer");
        assert_eq!(raw.status().as_u16(), 400);
        let e = e.into_service_error();
        assert_eq!(e.meta().code(), Some("InvalidRequest"));
        assert!(
            e.meta()
                .message()
                .unwrap_or_default()
                .contains("secure connection"),
            "{e:?}"
        );
        assert_eq!(strict.file_count("plain").await, 0, "nothing stored");
        // A copy naming its source's key only, and a GET: refused alike.
        s3.put_object()
            .bucket("plain")
            .key("open")
            .body(b"y".to_vec().into())
            .send()
            .await
            .unwrap();
        let e = s3
            .copy_object()
            .bucket("plain")
            .key("copy")
            .copy_source("plain/open")
            .copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(&k)
            .copy_source_sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap_err()
            .into_service_error();
        assert_eq!(e.meta().code(), Some("InvalidRequest"));
        let e = s3
            .get_object()
            .bucket("plain")
            .key("open")
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .unwrap_err()
            .into_service_error();
        assert_eq!(e.meta().code(), Some("InvalidRequest"));
        drop(strict);
        // With the flag, the same PUT is stored.
        let allowed = support::gateway_with(&name, |c| c.allow_insecure_sse_c = true).await;
        allowed
            .sdk()
            .put_object()
            .bucket("plain")
            .key("secret")
            .body(b"x".to_vec().into())
            .sse_customer_algorithm("AES256")
            .sse_customer_key(&k)
            .sse_customer_key_md5(&k_md5)
            .send()
            .await
            .expect("allowed over http with the flag");
    });
}
