//! A real browser: headless Chromium (Debian's `chromium`, installed by the test when it can
//! be) loads a page served from another loopback origin whose script `fetch()`es a presigned
//! GET, a Range GET and a presigned PUT (which preflights) against grids3, and a GET from a
//! bucket without CORS rules, then writes the outcomes into the DOM, read back with
//! `--dump-dom`.

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CorsConfiguration, CorsRule};

use crate::support;

/// Issue 35 item 10: under `CI=true` a missing Chromium fails the browser tests; elsewhere
/// they say SKIPPED.
#[test]
fn a_missing_browser_fails_in_ci_and_skips_elsewhere() {
    assert_eq!(support::required_in_ci(None, "chromium", false), None);
    let here = Some(std::path::PathBuf::from("/usr/bin/chromium"));
    assert_eq!(
        support::required_in_ci(here.clone(), "chromium", true),
        here
    );
    let in_ci = std::panic::catch_unwind(|| support::required_in_ci(None, "chromium", true));
    assert!(in_ci.is_err(), "a missing chromium under CI=true must fail");
}

#[test]
fn chromium_fetches_across_origins_only_where_cors_allows() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let gw = support::gateway("browser").await;
        let s3 = gw.sdk();
        for b in ["web", "closed"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
            s3.put_object()
                .bucket(b)
                .key("hello.txt")
                .body(ByteStream::from_static(b"hello browser"))
                .send()
                .await
                .unwrap();
        }
        let cfg = PresigningConfig::expires_in(std::time::Duration::from_secs(600)).unwrap();
        let get = s3
            .get_object()
            .bucket("web")
            .key("hello.txt")
            .presigned(cfg.clone())
            .await
            .unwrap();
        let put = s3
            .put_object()
            .bucket("web")
            .key("from-browser.txt")
            .presigned(cfg.clone())
            .await
            .unwrap();
        let closed = s3
            .get_object()
            .bucket("closed")
            .key("hello.txt")
            .presigned(cfg)
            .await
            .unwrap();
        let js = |s: &str| serde_json::to_string(s).unwrap();
        let html = format!(
            r#"<!doctype html><html><body><pre id="out">pending</pre><script>
const results = {{}};
async function run() {{
  try {{ const r = await fetch({get}); results.get = r.status + ':' + await r.text(); }}
  catch (e) {{ results.get = 'error:' + e; }}
  try {{ const r = await fetch({get}, {{headers: {{'Range': 'bytes=0-4'}}}});
        results.range = r.status + ':' + await r.text(); }}
  catch (e) {{ results.range = 'error:' + e; }}
  try {{ const r = await fetch({put}, {{method: 'PUT', body: 'from the browser',
                                         headers: {{'Content-Type': 'text/plain'}}}});
        results.put = r.status + ':' + (r.headers.get('ETag') || 'no-etag'); }}
  catch (e) {{ results.put = 'error:' + e; }}
  try {{ const r = await fetch({closed}); results.closed = 'status:' + r.status; }}
  catch (e) {{ results.closed = 'error:' + e; }}
  document.getElementById('out').textContent = 'RESULT ' + JSON.stringify(results);
}}
run();
</script></body></html>"#,
            get = js(get.uri()),
            put = js(put.uri()),
            closed = js(closed.uri()),
        );
        // The rule allows exactly the page's origin, known once it listens.
        let page = support::serve_page(html).await;
        let origin = format!("http://{page}");
        let rule = CorsRule::builder()
            .allowed_origins(&origin)
            .allowed_methods("GET")
            .allowed_methods("PUT")
            .allowed_headers("*")
            .expose_headers("ETag")
            .build()
            .unwrap();
        s3.put_bucket_cors()
            .bucket("web")
            .cors_configuration(
                CorsConfiguration::builder()
                    .cors_rules(rule)
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let dom = support::chromium_dom(&chromium, &format!("{origin}/page.html")).await;
        let result = dom
            .split_once("RESULT ")
            .and_then(|(_, r)| r.split_once("</pre>"))
            .map(|(r, _)| r.replace("&amp;", "&"))
            .unwrap_or_else(|| panic!("the page did not finish: {dom}"));
        println!("browser results: {result}");
        let v: serde_json::Value = serde_json::from_str(&result).unwrap();
        assert_eq!(v["get"], "200:hello browser");
        assert_eq!(v["range"], "206:hello");
        let put_result = v["put"].as_str().unwrap();
        assert!(put_result.starts_with("200:\""), "{put_result}");
        assert!(
            v["closed"].as_str().unwrap().starts_with("error:TypeError"),
            "a bucket without CORS rules must be unreadable cross-origin: {}",
            v["closed"]
        );
        let stored = s3
            .get_object()
            .bucket("web")
            .key("from-browser.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            stored.body.collect().await.unwrap().into_bytes().as_ref(),
            b"from the browser"
        );
    });
}

#[test]
fn chromium_uploads_with_a_plain_html_form() {
    use grids3::auth::sigv4;
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let gw = support::gateway("browserform").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("forms").send().await.unwrap();
        // The policy and its SigV4 signature, as a web backend makes them.
        let now = chrono::Utc::now();
        let date = now.format("%Y%m%d").to_string();
        let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
        let credential = format!("{}/{date}/us-east-1/s3/aws4_request", support::AK);
        let expiration = (now + chrono::Duration::minutes(10))
            .format("%Y-%m-%dT%H:%M:%S.000Z")
            .to_string();
        let policy = serde_json::json!({
            "expiration": expiration,
            "conditions": [
                {"bucket": "forms"},
                ["starts-with", "$key", "from-form/"],
                {"success_action_status": "201"},
                {"x-amz-algorithm": "AWS4-HMAC-SHA256"},
                {"x-amz-credential": credential},
                {"x-amz-date": amz_date},
                ["content-length-range", 1, 10000],
            ]
        });
        use base64::Engine;
        let policy_b64 =
            base64::engine::general_purpose::STANDARD.encode(policy.to_string().as_bytes());
        let key = sigv4::signing_key(support::SK, &date, "us-east-1", "s3");
        let signature = sigv4::sign(&key, &policy_b64);
        let html = format!(
            r#"<!doctype html><html><body>
<form id="f" action="http://{gw}/forms" method="post" enctype="multipart/form-data">
<input type="hidden" name="key" value="from-form/note.txt">
<input type="hidden" name="success_action_status" value="201">
<input type="hidden" name="x-amz-algorithm" value="AWS4-HMAC-SHA256">
<input type="hidden" name="x-amz-credential" value="{credential}">
<input type="hidden" name="x-amz-date" value="{amz_date}">
<input type="hidden" name="policy" value="{policy_b64}">
<input type="hidden" name="x-amz-signature" value="{signature}">
<textarea name="file">typed into a form</textarea>
</form>
<script>document.getElementById('f').submit();</script>
</body></html>"#,
            gw = gw.addr,
        );
        let page = support::serve_page(html).await;
        let dom = support::chromium_dom(&chromium, &format!("http://{page}/form.html")).await;
        assert!(
            dom.contains("from-form/note.txt"),
            "the browser did not show the PostResponse: {dom}"
        );
        let got = s3
            .get_object()
            .bucket("forms")
            .key("from-form/note.txt")
            .send()
            .await
            .unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            b"typed into a form"
        );
    });
}

#[test]
fn chromium_shows_a_public_read_image_and_not_a_private_one() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let gw = support::gateway("browserimg").await;
        let s3 = gw.sdk();
        s3.create_bucket()
            .bucket("pics")
            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
            .send()
            .await
            .unwrap();
        // A 1x1 PNG.
        let png: &[u8] = &[
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
            0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00,
            0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78,
            0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99,
            0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
        ];
        for (key, acl) in [
            (
                "public.png",
                Some(aws_sdk_s3::types::ObjectCannedAcl::PublicRead),
            ),
            ("private.png", None),
        ] {
            s3.put_object()
                .bucket("pics")
                .key(key)
                .content_type("image/png")
                .set_acl(acl)
                .body(ByteStream::from(png.to_vec()))
                .send()
                .await
                .unwrap();
        }
        let html = format!(
            r#"<!doctype html><html><body><pre id="out">pending</pre>
<script>
const results = {{}};
function load(name) {{
  return new Promise(done => {{
    const img = new Image();
    img.onload = () => {{ results[name] = 'loaded:' + img.naturalWidth; done(); }};
    img.onerror = () => {{ results[name] = 'error'; done(); }};
    img.src = 'http://{gw}/pics/' + name;
  }});
}}
Promise.all([load('public.png'), load('private.png')]).then(() => {{
  document.getElementById('out').textContent = 'RESULT ' + JSON.stringify(results);
}});
</script></body></html>"#,
            gw = gw.addr
        );
        let page = support::serve_page(html).await;
        let dom = support::chromium_dom(&chromium, &format!("http://{page}/img.html")).await;
        let result = dom
            .split_once("RESULT ")
            .and_then(|(_, r)| r.split_once("</pre>"))
            .map(|(r, _)| r.to_owned())
            .unwrap_or_else(|| panic!("the page did not finish: {dom}"));
        println!("image results: {result}");
        let v: serde_json::Value = serde_json::from_str(&result).unwrap();
        assert_eq!(v["public.png"], "loaded:1");
        assert_eq!(v["private.png"], "error");
    });
}
