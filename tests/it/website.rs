//! The website endpoint (issue 38): a bucket with a website configuration served as AWS's
//! website endpoint serves it, checked from outside with the AWS SDK (configuration,
//! objects) and raw HTTP requests carrying the Host a browser would send.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    Condition, ErrorDocument, IndexDocument, Redirect, RedirectAllRequestsTo, RoutingRule,
    WebsiteConfiguration,
};
use reqwest::header::HOST;

use crate::support::{self, Gateway};

/// The website domain of the test gateways: `<bucket>.web.test`.
pub const DOMAIN: &str = "web.test";

/// A gateway with its website endpoint (on its own ephemeral port).
pub struct Site {
    pub gw: Gateway,
    pub addr: std::net::SocketAddr,
    server: tokio::task::AbortHandle,
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl Site {
    pub async fn start(tag: &str) -> Site {
        let name = format!(
            "w_{tag}_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| c.website_domain = Some(DOMAIN.into())).await;
        let (addr, server) = support::serve_router(grids3::website::router(gw.state.clone())).await;
        Site { gw, addr, server }
    }

    /// A request to the website endpoint for `bucket` (Host `<bucket>.web.test:<port>`),
    /// redirects not followed.
    pub async fn send(
        &self,
        method: &str,
        bucket: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let host = format!("{bucket}.{DOMAIN}:{}", self.addr.port());
        self.send_host(method, &host, path, headers).await
    }

    /// A request with the Host header given as it is.
    pub async fn send_host(
        &self,
        method: &str,
        host: &str,
        path: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let mut r = client
            .request(
                method.parse().unwrap(),
                format!("http://{}{path}", self.addr),
            )
            .header(HOST, host);
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.send().await.unwrap()
    }

    pub async fn get(&self, bucket: &str, path: &str) -> reqwest::Response {
        self.send("GET", bucket, path, &[]).await
    }
}

/// A bucket anyone may read and list (a policy granting `s3:GetObject` and `s3:ListBucket`
/// to `*`: without the listing, a missing key is 403 to anonymous readers, as on AWS).
pub async fn public_bucket(s3: &aws_sdk_s3::Client, b: &str) {
    s3.create_bucket().bucket(b).send().await.unwrap();
    s3.put_bucket_policy()
        .bucket(b)
        .policy(format!(
            r#"{{"Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{b}/*"}},
               {{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::{b}"}}]}}"#
        ))
        .send()
        .await
        .unwrap();
}

async fn put(s3: &aws_sdk_s3::Client, b: &str, key: &str, body: &str, content_type: &str) {
    s3.put_object()
        .bucket(b)
        .key(key)
        .content_type(content_type)
        .body(ByteStream::from(body.as_bytes().to_vec()))
        .send()
        .await
        .unwrap();
}

fn index_and_error(
    error: Option<&str>,
) -> aws_sdk_s3::types::builders::WebsiteConfigurationBuilder {
    let mut c = WebsiteConfiguration::builder().index_document(
        IndexDocument::builder()
            .suffix("index.html")
            .build()
            .unwrap(),
    );
    if let Some(e) = error {
        c = c.error_document(ErrorDocument::builder().key(e).build().unwrap());
    }
    c
}

async fn configure(s3: &aws_sdk_s3::Client, b: &str, c: WebsiteConfiguration) {
    s3.put_bucket_website()
        .bucket(b)
        .website_configuration(c)
        .send()
        .await
        .unwrap();
}

fn location(r: &reqwest::Response) -> String {
    r.headers()
        .get("location")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default()
}

async fn html_error(r: reqwest::Response, status: u16, code: &str) -> String {
    assert_eq!(r.status(), status);
    let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(ct.starts_with("text/html"), "{ct}");
    assert!(r.headers().contains_key("x-amz-request-id"));
    let body = r.text().await.unwrap();
    assert!(
        body.starts_with("<html>"),
        "an HTML page, never XML: {body}"
    );
    assert!(body.contains(&format!("<li>Code: {code}</li>")), "{body}");
    assert!(body.contains("<li>RequestId: "), "{body}");
    body
}

#[test]
fn a_site_serves_index_documents_folders_and_errors() {
    support::run(async {
        let site = Site::start("basic").await;
        let s3 = site.gw.sdk();
        public_bucket(&s3, "site").await;
        put(&s3, "site", "index.html", "<h1>home</h1>", "text/html").await;
        put(&s3, "site", "docs/index.html", "<h1>docs</h1>", "text/html").await;
        put(&s3, "site", "docs/a b.html", "<p>spaced</p>", "text/html").await;
        put(&s3, "site", "404.html", "<h1>not here</h1>", "text/html").await;
        // Before any configuration: the bucket is no website.
        let r = site.get("site", "/").await;
        let body = html_error(r, 404, "NoSuchWebsiteConfiguration").await;
        assert!(body.contains("<li>BucketName: site</li>"), "{body}");
        // GetBucketWebsite says so too, on the S3 endpoint.
        let e = s3
            .get_bucket_website()
            .bucket("site")
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.into_service_error().meta().code(),
            Some("NoSuchWebsiteConfiguration")
        );
        configure(&s3, "site", index_and_error(Some("404.html")).build()).await;
        let got = s3.get_bucket_website().bucket("site").send().await.unwrap();
        assert_eq!(got.index_document().unwrap().suffix(), "index.html");
        assert_eq!(got.error_document().unwrap().key(), "404.html");

        // The index at the root and in a folder.
        let r = site.get("site", "/").await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-type"], "text/html");
        assert_eq!(r.text().await.unwrap(), "<h1>home</h1>");
        let r = site.get("site", "/docs/").await;
        assert_eq!(r.text().await.unwrap(), "<h1>docs</h1>");
        // A query string (a cache buster) does not change the key.
        let r = site.get("site", "/docs/?v=3").await;
        assert_eq!(r.text().await.unwrap(), "<h1>docs</h1>");
        let r = site.get("site", "/docs/a%20b.html").await;
        assert_eq!(r.text().await.unwrap(), "<p>spaced</p>");
        // The folder without its slash: 302 to it.
        let r = site.get("site", "/docs").await;
        assert_eq!(r.status(), 302);
        assert_eq!(location(&r), "/docs/");
        // A missing key: 404 with the error document's body (never its validators: they name
        // another resource).
        let r = site.get("site", "/missing.html").await;
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()["content-type"], "text/html");
        assert!(r.headers().get("etag").is_none());
        assert!(r.headers().get("last-modified").is_none());
        assert_eq!(r.text().await.unwrap(), "<h1>not here</h1>");
        // A HEAD of it: the status, the error in headers, no body.
        let r = site.send("HEAD", "site", "/missing.html", &[]).await;
        assert_eq!(r.status(), 404);
        assert_eq!(r.headers()["x-amz-error-code"], "NoSuchKey");
        assert_eq!(r.headers()["x-amz-error-detail-key"], "missing.html");
        assert!(r.headers().contains_key("x-amz-error-message"));
        assert!(r.bytes().await.unwrap().is_empty());

        // Without an error document: AWS's HTML page, naming the key.
        configure(&s3, "site", index_and_error(None).build()).await;
        let r = site.get("site", "/missing.html").await;
        let body = html_error(r, 404, "NoSuchKey").await;
        assert!(body.contains("<li>Key: missing.html</li>"), "{body}");
        // A key that would be markup is text on the page.
        let r = site.get("site", "/%3Cscript%3Ex%3C%2Fscript%3E").await;
        let body = html_error(r, 404, "NoSuchKey").await;
        assert!(!body.contains("<script>"), "{body}");
        assert!(body.contains("&lt;script&gt;"), "{body}");

        // A host naming no bucket.
        let r = site.get("nobucket", "/").await;
        html_error(r, 404, "NoSuchBucket").await;
        // A Host that is no host name is refused, never looked up or redirected to.
        let r = site
            .send_host("GET", "site.web.test:80@evil.example", "/docs", &[])
            .await;
        html_error(r, 400, "InvalidArgument").await;
        // HTTP/2 names the host in `:authority`, not in a Host header.
        let h2 = reqwest::Client::builder()
            .http2_prior_knowledge()
            .resolve(&format!("site.{DOMAIN}"), site.addr)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let r = h2
            .get(format!("http://site.{DOMAIN}:{}/docs/", site.addr.port()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.version(), reqwest::Version::HTTP_2);
        assert_eq!(r.text().await.unwrap(), "<h1>docs</h1>");
        // Only GET and HEAD: a PUT is 405 (and writes nothing).
        let r = site.send("PUT", "site", "/new.html", &[]).await;
        let allow = r.headers()["allow"].to_str().unwrap().to_owned();
        html_error(r, 405, "MethodNotAllowed").await;
        assert!(allow.contains("GET"), "{allow}");
        for m in ["POST", "DELETE"] {
            assert_eq!(site.send(m, "site", "/index.html", &[]).await.status(), 405);
        }
        assert!(s3
            .head_object()
            .bucket("site")
            .key("new.html")
            .send()
            .await
            .is_err());

        // DeleteBucketWebsite: the bucket is no website again.
        s3.delete_bucket_website()
            .bucket("site")
            .send()
            .await
            .unwrap();
        html_error(
            site.get("site", "/").await,
            404,
            "NoSuchWebsiteConfiguration",
        )
        .await;
    });
}

#[test]
fn a_private_bucket_answers_403_with_an_html_page() {
    support::run(async {
        let site = Site::start("private").await;
        let s3 = site.gw.sdk();
        s3.create_bucket().bucket("closed").send().await.unwrap();
        put(&s3, "closed", "index.html", "secret", "text/html").await;
        put(&s3, "closed", "err.html", "secret error page", "text/html").await;
        configure(&s3, "closed", index_and_error(Some("err.html")).build()).await;
        // Anonymous reads are refused, and the error document (private too) is not served:
        // AWS's page with the nested error instead.
        let r = site.get("closed", "/").await;
        let body = html_error(r, 403, "AccessDenied").await;
        assert!(!body.contains("secret"), "{body}");
        assert!(
            body.contains("An Error Occurred While Attempting to Retrieve a Custom Error Document"),
            "{body}"
        );
        // A missing key is 403 too: anonymous may not list the bucket.
        html_error(site.get("closed", "/missing").await, 403, "AccessDenied").await;
        // A public-read object in it is served (ACLs decide, as for an S3 GET).
        s3.put_bucket_ownership_controls()
            .bucket("closed")
            .ownership_controls(
                aws_sdk_s3::types::OwnershipControls::builder()
                    .rules(
                        aws_sdk_s3::types::OwnershipControlsRule::builder()
                            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        s3.put_object()
            .bucket("closed")
            .key("open.html")
            .acl(aws_sdk_s3::types::ObjectCannedAcl::PublicRead)
            .body(ByteStream::from_static(b"open"))
            .send()
            .await
            .unwrap();
        let r = site.get("closed", "/open.html").await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "open");
        // Block Public Access: the policy that made a bucket public no longer counts.
        public_bucket(&s3, "blocked").await;
        put(&s3, "blocked", "index.html", "hidden", "text/html").await;
        configure(&s3, "blocked", index_and_error(None).build()).await;
        assert_eq!(site.get("blocked", "/").await.status(), 200);
        s3.put_public_access_block()
            .bucket("blocked")
            .public_access_block_configuration(
                aws_sdk_s3::types::PublicAccessBlockConfiguration::builder()
                    .restrict_public_buckets(true)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let r = site.get("blocked", "/").await;
        let body = html_error(r, 403, "AccessDenied").await;
        assert!(!body.contains("hidden"));

        // The policy most sites use grants `s3:GetObject` alone: a missing key is then 403
        // (anonymous may not learn what is not there), served with the error document, and a
        // folder without its slash still redirects when its index is readable.
        s3.create_bucket().bucket("getonly").send().await.unwrap();
        s3.put_bucket_policy()
            .bucket("getonly")
            .policy(r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::getonly/*"}]}"#)
            .send()
            .await
            .unwrap();
        put(&s3, "getonly", "err.html", "custom error", "text/html").await;
        put(&s3, "getonly", "docs/index.html", "docs", "text/html").await;
        configure(&s3, "getonly", index_and_error(Some("err.html")).build()).await;
        let r = site.get("getonly", "/missing").await;
        assert_eq!(r.status(), 403);
        assert_eq!(r.text().await.unwrap(), "custom error");
        let r = site.get("getonly", "/docs").await;
        assert_eq!((r.status().as_u16(), location(&r)), (302, "/docs/".into()));
    });
}

#[test]
fn routing_rules_and_redirects_apply_as_aws_applies_them() {
    support::run(async {
        let site = Site::start("rules").await;
        let s3 = site.gw.sdk();
        public_bucket(&s3, "rules").await;
        put(&s3, "rules", "index.html", "home", "text/html").await;
        put(&s3, "rules", "documents/a.html", "moved doc", "text/html").await;
        let rule = |cond: Option<Condition>, redirect: Redirect| {
            let mut r = RoutingRule::builder().redirect(redirect);
            if let Some(c) = cond {
                r = r.condition(c);
            }
            r.build()
        };
        let conf = index_and_error(None)
            .routing_rules(rule(
                Some(Condition::builder().key_prefix_equals("docs/").build()),
                Redirect::builder()
                    .replace_key_prefix_with("documents/")
                    .build(),
            ))
            .routing_rules(rule(
                Some(Condition::builder().key_prefix_equals("old.html").build()),
                Redirect::builder()
                    .host_name("new.example")
                    .protocol(aws_sdk_s3::types::Protocol::Https)
                    .replace_key_with("new.html")
                    .http_redirect_code("302")
                    .build(),
            ))
            .routing_rules(rule(
                Some(
                    Condition::builder()
                        .http_error_code_returned_equals("404")
                        .build(),
                ),
                Redirect::builder()
                    .host_name("errors.example")
                    .replace_key_prefix_with("report-404/")
                    .build(),
            ))
            .build();
        configure(&s3, "rules", conf).await;
        let host = format!("rules.{DOMAIN}:{}", site.addr.port());
        // A key prefix: redirected before any object is read.
        let r = site.get("rules", "/docs/a.html").await;
        assert_eq!(r.status(), 301);
        assert_eq!(location(&r), format!("http://{host}/documents/a.html"));
        // A whole key, another host, protocol and code.
        let r = site.get("rules", "/old.html").await;
        assert_eq!(r.status(), 302);
        assert_eq!(location(&r), "https://new.example/new.html");
        // An error code: only once the read failed so.
        let r = site.get("rules", "/images/gone.png").await;
        assert_eq!(r.status(), 301);
        assert_eq!(
            location(&r),
            "http://errors.example/report-404/images/gone.png"
        );
        assert_eq!(site.get("rules", "/").await.status(), 200);

        // An object's own redirect: 301 to it on the website endpoint, and returned by the
        // S3 endpoint's HEAD and GET.
        for (key, to) in [
            ("go.html", "/index.html"),
            ("away", "https://example.org/x"),
        ] {
            s3.put_object()
                .bucket("rules")
                .key(key)
                .website_redirect_location(to)
                .body(ByteStream::from_static(b""))
                .send()
                .await
                .unwrap();
            let r = site.get("rules", &format!("/{key}")).await;
            assert_eq!(r.status(), 301, "{key}");
            assert_eq!(location(&r), to);
            let head = s3
                .head_object()
                .bucket("rules")
                .key(key)
                .send()
                .await
                .unwrap();
            assert_eq!(head.website_redirect_location(), Some(to));
            let get = s3
                .get_object()
                .bucket("rules")
                .key(key)
                .send()
                .await
                .unwrap();
            assert_eq!(get.website_redirect_location(), Some(to));
        }
        // A value that is neither a path nor an http(s) URL is refused, as AWS refuses it.
        let e = s3
            .put_object()
            .bucket("rules")
            .key("bad")
            .website_redirect_location("example.org")
            .body(ByteStream::from_static(b""))
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            e.into_service_error().meta().code(),
            Some("InvalidRedirectLocation")
        );
        // CopyObject stores the request's redirect (never the source's); a copy onto itself
        // that only sets one is allowed.
        s3.copy_object()
            .bucket("rules")
            .key("copied")
            .copy_source("rules/go.html")
            .send()
            .await
            .unwrap();
        let head = s3
            .head_object()
            .bucket("rules")
            .key("copied")
            .send()
            .await
            .unwrap();
        assert_eq!(head.website_redirect_location(), None, "not copied");
        s3.copy_object()
            .bucket("rules")
            .key("index.html")
            .copy_source("rules/index.html")
            .website_redirect_location("/documents/a.html")
            .send()
            .await
            .unwrap();
        let r = site.get("rules", "/").await;
        assert_eq!(r.status(), 301);
        assert_eq!(location(&r), "/documents/a.html");
        // CreateMultipartUpload keeps it for the completed object.
        let up = s3
            .create_multipart_upload()
            .bucket("rules")
            .key("mp")
            .website_redirect_location("/mp-target")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let part = s3
            .upload_part()
            .bucket("rules")
            .key("mp")
            .upload_id(id)
            .part_number(1)
            .body(ByteStream::from_static(b"part"))
            .send()
            .await
            .unwrap();
        s3.complete_multipart_upload()
            .bucket("rules")
            .key("mp")
            .upload_id(id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(part.e_tag().unwrap())
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let r = site.get("rules", "/mp").await;
        assert_eq!(
            (r.status().as_u16(), location(&r)),
            (301, "/mp-target".into())
        );

        // RedirectAllRequestsTo: everything, path and query kept.
        public_bucket(&s3, "moved").await;
        configure(
            &s3,
            "moved",
            WebsiteConfiguration::builder()
                .redirect_all_requests_to(
                    RedirectAllRequestsTo::builder()
                        .host_name("www.example.org")
                        .protocol(aws_sdk_s3::types::Protocol::Https)
                        .build()
                        .unwrap(),
                )
                .build(),
        )
        .await;
        let r = site.get("moved", "/a/b.html?x=1").await;
        assert_eq!(r.status(), 301);
        assert_eq!(location(&r), "https://www.example.org/a/b.html?x=1");
    });
}

#[test]
fn range_conditionals_and_cors_work_as_on_the_s3_endpoint() {
    support::run(async {
        let site = Site::start("range").await;
        let s3 = site.gw.sdk();
        public_bucket(&s3, "media").await;
        s3.put_object()
            .bucket("media")
            .key("clip.bin")
            .content_type("video/mp4")
            .cache_control("max-age=60")
            .content_encoding("identity")
            .body(ByteStream::from_static(b"0123456789"))
            .send()
            .await
            .unwrap();
        configure(&s3, "media", index_and_error(None).build()).await;
        let r = site
            .send("GET", "media", "/clip.bin", &[("range", "bytes=2-5")])
            .await;
        assert_eq!(r.status(), 206);
        assert_eq!(r.headers()["content-range"], "bytes 2-5/10");
        assert_eq!(r.headers()["content-type"], "video/mp4");
        assert_eq!(r.headers()["cache-control"], "max-age=60");
        assert_eq!(r.headers()["content-encoding"], "identity");
        let etag = r.headers()["etag"].to_str().unwrap().to_owned();
        let modified = r.headers()["last-modified"].to_str().unwrap().to_owned();
        assert_eq!(r.text().await.unwrap(), "2345");
        let r = site
            .send("GET", "media", "/clip.bin", &[("if-none-match", &etag)])
            .await;
        assert_eq!(r.status(), 304);
        let r = site
            .send(
                "GET",
                "media",
                "/clip.bin",
                &[("if-modified-since", &modified)],
            )
            .await;
        assert_eq!(r.status(), 304);
        let r = site.send("HEAD", "media", "/clip.bin", &[]).await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["content-length"], "10");
        // If-Range: the range only while the object is the one the client holds; a stale one
        // gets the whole object (as on the S3 endpoint), never bytes of two objects.
        let r = site
            .send(
                "GET",
                "media",
                "/clip.bin",
                &[("range", "bytes=2-5"), ("if-range", &etag)],
            )
            .await;
        assert_eq!(r.status(), 206);
        let r = site
            .send(
                "GET",
                "media",
                "/clip.bin",
                &[("range", "bytes=2-5"), ("if-range", "\"stale\"")],
            )
            .await;
        assert_eq!(r.status(), 200);
        assert_eq!(r.text().await.unwrap(), "0123456789");
        let s3_side = reqwest::Client::new()
            .get(format!("{}/media/clip.bin", site.gw.endpoint()))
            .header("range", "bytes=2-5")
            .header("if-range", "\"stale\"")
            .send()
            .await
            .unwrap();
        assert_eq!(s3_side.status(), 200);
        // A Range past the end is 416 with its Content-Range, never the error document.
        s3.put_object()
            .bucket("media")
            .key("404.html")
            .body(ByteStream::from_static(b"custom"))
            .send()
            .await
            .unwrap();
        configure(&s3, "media", index_and_error(Some("404.html")).build()).await;
        let r = site
            .send("GET", "media", "/clip.bin", &[("range", "bytes=100-200")])
            .await;
        assert_eq!(r.status(), 416);
        assert_ne!(r.text().await.unwrap(), "custom");

        // A policy's Referer condition (AWS's hotlink protection) sees the request's Referer.
        s3.create_bucket().bucket("hotlink").send().await.unwrap();
        s3.put_bucket_policy()
            .bucket("hotlink")
            .policy(r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::hotlink/*","Condition":{"StringLike":{"aws:Referer":"http://good.example/*"}}}]}"#)
            .send()
            .await
            .unwrap();
        put(&s3, "hotlink", "index.html", "linked", "text/html").await;
        configure(&s3, "hotlink", index_and_error(None).build()).await;
        let r = site
            .send(
                "GET",
                "hotlink",
                "/",
                &[("referer", "http://good.example/page")],
            )
            .await;
        assert_eq!(r.status(), 200);
        let r = site
            .send("GET", "hotlink", "/", &[("referer", "http://bad.example/")])
            .await;
        assert_eq!(r.status(), 403);

        // OPTIONS gets the bucket's CORS answer; GETs with an Origin its headers.
        let preflight = [
            ("origin", "https://app.example"),
            ("access-control-request-method", "GET"),
        ];
        let r = site.send("OPTIONS", "media", "/clip.bin", &preflight).await;
        assert_eq!(r.status(), 403, "no CORS rules yet");
        s3.put_bucket_cors()
            .bucket("media")
            .cors_configuration(
                aws_sdk_s3::types::CorsConfiguration::builder()
                    .cors_rules(
                        aws_sdk_s3::types::CorsRule::builder()
                            .allowed_origins("https://app.example")
                            .allowed_methods("GET")
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let r = site.send("OPTIONS", "media", "/clip.bin", &preflight).await;
        assert_eq!(r.status(), 200);
        assert_eq!(
            r.headers()["access-control-allow-origin"],
            "https://app.example"
        );
        let r = site
            .send(
                "GET",
                "media",
                "/clip.bin",
                &[("origin", "https://app.example")],
            )
            .await;
        assert_eq!(
            r.headers()["access-control-allow-origin"],
            "https://app.example"
        );
    });
}

#[test]
fn a_website_configuration_changes_no_s3_answer() {
    support::run(async {
        let site = Site::start("s3same").await;
        let s3 = site.gw.sdk();
        public_bucket(&s3, "same").await;
        put(&s3, "same", "index.html", "home", "text/html").await;
        configure(&s3, "same", index_and_error(Some("index.html")).build()).await;
        // On the S3 endpoint a missing key is still XML NoSuchKey (not the error document),
        // a folder is no index, and a key names its object.
        let anon = reqwest::Client::new();
        let r = anon
            .get(format!("{}/same/missing", site.gw.endpoint()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 404);
        assert_eq!(support::error_code(&r.text().await.unwrap()), "NoSuchKey");
        let r = anon
            .get(format!("{}/same/index.html", site.gw.endpoint()))
            .send()
            .await
            .unwrap();
        assert_eq!(r.text().await.unwrap(), "home");
        let r = anon
            .get(format!("{}/same/", site.gw.endpoint()))
            .send()
            .await
            .unwrap();
        assert_ne!(
            r.text().await.unwrap(),
            "home",
            "the S3 endpoint serves no index"
        );

        // Invalid configurations: AWS's errors, and the stored one is kept.
        let bad = |c: WebsiteConfiguration| {
            let s3 = s3.clone();
            async move {
                s3.put_bucket_website()
                    .bucket("same")
                    .website_configuration(c)
                    .send()
                    .await
                    .unwrap_err()
                    .into_service_error()
                    .meta()
                    .code()
                    .map(str::to_owned)
            }
        };
        let suffix = |s: &str| {
            WebsiteConfiguration::builder()
                .index_document(IndexDocument::builder().suffix(s).build().unwrap())
                .build()
        };
        assert_eq!(bad(suffix("")).await.as_deref(), Some("InvalidArgument"));
        assert_eq!(
            bad(suffix("a/index.html")).await.as_deref(),
            Some("InvalidArgument")
        );
        let both = index_and_error(None)
            .routing_rules(
                RoutingRule::builder()
                    .redirect(
                        Redirect::builder()
                            .replace_key_with("a")
                            .replace_key_prefix_with("b")
                            .build(),
                    )
                    .build(),
            )
            .build();
        assert_eq!(bad(both).await.as_deref(), Some("InvalidRequest"));
        let got = s3.get_bucket_website().bucket("same").send().await.unwrap();
        assert_eq!(got.error_document().unwrap().key(), "index.html");
        // Another key may not read or change it (owner-only, as the other bucket settings).
        let stranger = site.gw.sdk_as("nobody", "nothing");
        assert!(stranger
            .get_bucket_website()
            .bucket("same")
            .send()
            .await
            .is_err());
        assert!(stranger
            .delete_bucket_website()
            .bucket("same")
            .send()
            .await
            .is_err());
        assert!(s3.get_bucket_website().bucket("same").send().await.is_ok());
    });
}
