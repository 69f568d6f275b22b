//! The console's search box (issue 63): the bucket view lists the objects a metadata search
//! finds under its prefix, in pages like a folder's, with the caller's rights, and shows a
//! query that does not parse with the position S3 names.

use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

/// The keys a bucket page lists, and its next page's link.
fn rows(page: &str) -> (Vec<String>, Option<String>) {
    let keys = page
        .split("<tr class=\"object\" data-key=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap().to_owned())
        .collect();
    let next = page
        .split("id=\"next\" class=\"button\" href=\"")
        .nth(1)
        .map(|s| s.split('"').next().unwrap().replace("&amp;", "&"));
    (keys, next)
}

#[test]
fn the_bucket_view_searches_and_pages_its_results() {
    support::run(async {
        let c = Console::start("console_search").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("finds").send().await.unwrap();
        // 450 objects, every other one from customer 1: more than a page (200) matches.
        let puts = (0..450).map(|i| {
            let s3 = s3.clone();
            async move {
                s3.put_object()
                    .bucket("finds")
                    .key(format!("docs/k{i:03}"))
                    .metadata("customer", (i % 2).to_string())
                    .body(ByteStream::from_static(b"x"))
                    .send()
                    .await
                    .unwrap();
            }
        });
        futures::future::join_all(puts).await;
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let q = "/browse?bucket=finds&prefix=docs%2F&search=x-amz-meta-customer%20%3D%20%271%27";
        let page = c.get(&cookie, q).await.text().await.unwrap();
        assert!(
            page.contains(
                "id=\"search\" name=\"search\" value=\"x-amz-meta-customer = &#39;1&#39;\""
            ),
            "the box keeps the query: {page}"
        );
        let (first, next) = rows(&page);
        assert_eq!(first.len(), 200, "a page like a folder's");
        assert!(
            first
                .iter()
                .all(|k| k[6..].parse::<u32>().unwrap() % 2 == 1),
            "{first:?}"
        );
        assert!(page.contains("clear-search"));
        // No live updates for search results (they would take in objects that do not match).
        assert!(!page.contains("data-live="));
        let next = next.expect("the results go on");
        assert!(next.contains("search=x-amz-meta-customer"), "{next}");
        let page = c.get(&cookie, &next).await.text().await.unwrap();
        let (second, more) = rows(&page);
        assert_eq!(second.len(), 25);
        assert_eq!(more, None);
        let mut all = first;
        all.extend(second);
        let want: Vec<String> = (0..450)
            .filter(|i| i % 2 == 1)
            .map(|i| format!("docs/k{i:03}"))
            .collect();
        assert_eq!(all, want);

        // A query that does not parse: S3's reason, with the position, and no rows.
        let page = c
            .get(&cookie, "/browse?bucket=finds&search=size%20%3E%20ten")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("position 8"), "{page}");
        assert!(rows(&page).0.is_empty());

        // A key that may list but not read metadata finds nothing by it.
        let (ak, sk) = crate::authz::new_key(&c.gw, "lister").await;
        s3.put_bucket_policy()
            .bucket("finds")
            .policy(
                serde_json::json!({"Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": ak}, "Action": "s3:ListBucket",
                     "Resource": "arn:aws:s3:::finds"}]})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        let lister = c.login(&ak, &sk).await.unwrap();
        let page = c.get(&lister, q).await.text().await.unwrap();
        assert!(rows(&page).0.is_empty(), "{page}");
        let page = c
            .get(
                &lister,
                "/browse?bucket=finds&prefix=docs%2F&search=key%20LIKE%20%27k00%5B0-4%5D%24%27",
            )
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(rows(&page).0.len(), 5, "{page}");
    });
}
