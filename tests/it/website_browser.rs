//! A real browser on the website endpoint (issue 38): a small site deployed with
//! `aws s3 sync` (an index.html loading CSS, JS and an image from subfolders, and a
//! client-side router whose deep links come back through the error document), loaded in
//! headless Chromium driven by Playwright (`tests/py/website_browser.py`).

use crate::support;
use crate::website::{public_bucket, Site, DOMAIN};

/// Gives `bucket` a website configuration: index document `index.html`, and `error` as the
/// error document.
async fn website(s3: &aws_sdk_s3::Client, bucket: &str, error: Option<&str>) {
    use aws_sdk_s3::types::{ErrorDocument, IndexDocument, WebsiteConfiguration};
    let index = IndexDocument::builder()
        .suffix("index.html")
        .build()
        .unwrap();
    let mut conf = WebsiteConfiguration::builder().index_document(index);
    if let Some(key) = error {
        conf = conf.error_document(ErrorDocument::builder().key(key).build().unwrap());
    }
    s3.put_bucket_website()
        .bucket(bucket)
        .website_configuration(conf.build())
        .send()
        .await
        .unwrap();
}

#[test]
fn chromium_renders_a_synced_site_and_its_deep_links() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let site = Site::start("browser").await;
        let s3 = site.gw.sdk();
        public_bucket(&s3, "www").await;
        // A single-page app: the error document is the app itself.
        website(&s3, "www", Some("index.html")).await;
        let url = format!("http://www.{DOMAIN}:{}", site.addr.port());
        let args = vec![
            site.gw.endpoint(),
            support::AK.to_owned(),
            support::SK.to_owned(),
            "www".to_owned(),
            url,
            chromium.display().to_string(),
        ];
        let r = support::py_result("website_browser.py", args).await;
        // Synced: every file is an object.
        for key in ["index.html", "css/site.css", "js/app.js", "img/logo.png"] {
            s3.head_object()
                .bucket("www")
                .key(key)
                .send()
                .await
                .unwrap();
        }
        let home = &r["home"];
        assert_eq!(
            home["view"], "route:home",
            "the script ran and wrote into the DOM"
        );
        assert_eq!(home["color"], "rgb(12, 34, 56)", "the stylesheet applied");
        assert_eq!(home["spacing"], "3px");
        assert_eq!(
            home["img_width"], 37,
            "the image decoded at its natural size"
        );
        assert_eq!(home["img_height"], 11);
        let deep = &r["deep"];
        assert_eq!(
            deep["view"], "route:settings/profile",
            "the deep link rendered through the fallback"
        );
        assert_eq!(deep["color"], "rgb(12, 34, 56)");
        assert_eq!(deep["img_width"], 37);
        let home = &r["home_statuses"];
        for path in ["/", "/css/site.css", "/js/app.js", "/img/logo.png"] {
            assert_eq!(home[path], 200, "{path}");
        }
        // The fallback keeps the error's status, as AWS serves an error document; the assets
        // the browser already holds are revalidated (304, If-None-Match) or fetched again.
        let deep = &r["deep_statuses"];
        assert_eq!(deep["/settings/profile"], 404);
        for path in ["/css/site.css", "/js/app.js", "/img/logo.png"] {
            let s = deep[path].as_u64();
            assert!(matches!(s, Some(200 | 304)), "{path}: {s:?}");
        }
        assert_eq!(r["failed"], serde_json::json!([]), "no request failed");
    });
}

/// Issue 59: the website address `grids3 --local-db` prints opens, as printed, in a browser
/// (before: `http://127.0.0.1:9002`, whose host named the bucket `127.0.0.1`), and the page
/// for an address that names no bucket says how the host chooses one.
#[test]
fn the_printed_local_website_address_serves_an_index_page_in_chromium() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let project = tempfile::tempdir().unwrap();
        let db = format!(
            "g_site_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let out = project.path().join("out.txt");
        let (_p, endpoint) = crate::newcomer::local_gateway(project.path(), &db, &out);
        crate::newcomer::ready(&endpoint).await;
        let printed = std::fs::read_to_string(&out).unwrap();
        let line = printed
            .lines()
            .find_map(|l| l.strip_prefix("websites: "))
            .unwrap_or_else(|| panic!("no website address printed: {printed}"));
        let template = line.split_whitespace().next().unwrap();
        assert!(
            template.starts_with("http://<bucket>.localhost:"),
            "printed: {line}"
        );
        let s3 = crate::newcomer::sdk(&endpoint);
        public_bucket(&s3, "www").await;
        website(&s3, "www", None).await;
        s3.put_object()
            .bucket("www")
            .key("index.html")
            .content_type("text/html")
            .body(aws_sdk_s3::primitives::ByteStream::from_static(
                b"<!doctype html><title>Local site</title><p>Served as printed.</p>",
            ))
            .send()
            .await
            .unwrap();
        let url = template.replace("<bucket>", "www") + "/";
        let args = vec![url, chromium.display().to_string()];
        let r = support::py_result("open_page.py", args).await;
        assert_eq!(r["status"], 200, "{r}");
        assert_eq!(r["title"], "Local site", "{r}");
        assert!(
            r["text"].as_str().unwrap().contains("Served as printed."),
            "{r}"
        );
        // The bare address names no bucket: its page says how the host chooses one.
        let port = template.rsplit(':').next().unwrap();
        let bare = reqwest::get(format!("http://127.0.0.1:{port}/"))
            .await
            .unwrap();
        assert_eq!(bare.status(), 404);
        let page = bare.text().await.unwrap();
        assert!(page.contains("<li>Code: NoSuchBucket</li>"), "{page}");
        assert!(
            page.contains(&format!("http://&lt;bucket&gt;.localhost:{port}/ serves")),
            "{page}"
        );
    });
}
