//! A real browser on the website endpoint (issue 38): a small site deployed with
//! `aws s3 sync` (an index.html loading CSS, JS and an image from subfolders, and a
//! client-side router whose deep links come back through the error document), loaded in
//! headless Chromium driven by Playwright (`tests/py/website_browser.py`).

use crate::support;
use crate::website::{public_bucket, Site, DOMAIN};

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
        s3.put_bucket_website()
            .bucket("www")
            .website_configuration(
                aws_sdk_s3::types::WebsiteConfiguration::builder()
                    .index_document(
                        aws_sdk_s3::types::IndexDocument::builder()
                            .suffix("index.html")
                            .build()
                            .unwrap(),
                    )
                    .error_document(
                        aws_sdk_s3::types::ErrorDocument::builder()
                            .key("index.html")
                            .build()
                            .unwrap(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
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
