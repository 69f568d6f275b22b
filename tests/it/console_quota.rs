//! The console's quota section (issue 62), from outside with raw HTTP: a bucket's limits are
//! set and cleared from its settings page, its usage is shown against them with a bar, and
//! the section is authorized as the admin API is. Every outcome is checked through S3 (a
//! write refused or accepted), never through the page alone.

use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

/// The text of the element whose id is `id`, up to the next `<`.
fn text_of(page: &str, id: &str) -> String {
    let marker = format!("id=\"{id}\"");
    let at = page
        .find(&marker)
        .unwrap_or_else(|| panic!("{id} not in the page"));
    let rest = &page[at..];
    let open = rest.find('>').unwrap() + 1;
    rest[open..open + rest[open..].find('<').unwrap()].to_owned()
}

#[test]
fn the_settings_page_sets_limits_and_shows_usage_against_them() {
    support::run(async {
        let c = Console::start("consolequota").await;
        let s3 = c.gw.sdk_once();
        s3.create_bucket().bucket("quota-q").send().await.unwrap();
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&cookie).await;
        let page = c
            .get(&cookie, "/settings?bucket=quota-q")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            text_of(&page, "quota-usage").contains("No limit has ever been set"),
            "{page}"
        );

        // 1 KiB and 3 objects, from the form.
        let r = c
            .post(
                &cookie,
                "/settings/quota",
                &[
                    ("csrf", &csrf),
                    ("bucket", "quota-q"),
                    ("bytes", "1 KiB"),
                    ("objects", "3"),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 303);
        c.gw.state.store.meta().forget_bucket("quota-q");
        let put = |k: &'static str, n: usize| {
            let s3 = s3.clone();
            async move {
                s3.put_object()
                    .bucket("quota-q")
                    .key(k)
                    .body(ByteStream::from(vec![b'x'; n]))
                    .send()
                    .await
            }
        };
        let refused = put("big", 2000).await.expect_err("past the byte limit");
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&refused),
            Some("XMinioAdminBucketQuotaExceeded")
        );
        put("a", 600).await.unwrap();
        let page = c
            .get(&cookie, "/settings?bucket=quota-q")
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(text_of(&page, "quota-used-bytes"), "600");
        assert_eq!(text_of(&page, "quota-limit-bytes"), "1024");
        assert_eq!(text_of(&page, "quota-used-objects"), "1");
        assert_eq!(text_of(&page, "quota-limit-objects"), "3");
        assert!(
            page.contains("id=\"quota-bar-bytes\" value=\"58\" max=\"100\""),
            "{page}"
        );
        assert!(page.contains("id=\"quota-bar-objects\" value=\"33\""));

        // A limit that is not a size is refused, and changes nothing.
        let r = c
            .post(
                &cookie,
                "/settings/quota",
                &[("csrf", &csrf), ("bucket", "quota-q"), ("bytes", "lots")],
                None,
            )
            .await;
        assert_eq!(r.status(), 400);
        assert!(r.text().await.unwrap().contains("Quota not set"));
        put("b", 500).await.expect_err("the limit still holds");

        // Another account neither reads nor sets this bucket's quota, and cannot lift a
        // quota the administrator put on its own bucket (a quota limits the account).
        let (ak, sk) = crate::authz::new_key(&c.gw, "other").await;
        let other_s3 = c.gw.sdk_as(&ak, &sk);
        other_s3
            .create_bucket()
            .bucket("quota-other")
            .send()
            .await
            .unwrap();
        let other = c.login(&ak, &sk).await.unwrap();
        let other_csrf = c.csrf(&other).await;
        let page = c
            .get(&other, "/settings?bucket=quota-q")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            text_of(&page, "quota-error").contains("NoSuchBucket"),
            "{page}"
        );
        let r = c
            .post(
                &cookie,
                "/settings/quota",
                &[
                    ("csrf", &csrf),
                    ("bucket", "quota-other"),
                    ("bytes", "1000"),
                ],
                None,
            )
            .await;
        assert_eq!(
            r.status(),
            303,
            "the administrator sets any account's quota"
        );
        c.gw.state.store.meta().forget_bucket("quota-other");
        let page = c
            .get(&other, "/settings?bucket=quota-other")
            .await
            .text()
            .await
            .unwrap();
        assert_eq!(
            text_of(&page, "quota-limit-bytes"),
            "1000",
            "its account reads it"
        );
        for bucket in ["quota-q", "quota-other"] {
            let r = c
                .post(
                    &other,
                    "/settings/quota",
                    &[("csrf", &other_csrf), ("bucket", bucket), ("bytes", "")],
                    None,
                )
                .await;
            assert_eq!(r.status(), 403, "{bucket}");
            assert!(r.text().await.unwrap().contains("AccessDenied"));
        }
        put("c", 500).await.expect_err("the limit still holds");
        let refused = other_s3
            .put_object()
            .bucket("quota-other")
            .key("big")
            .body(ByteStream::from(vec![b'x'; 2000]))
            .send()
            .await;
        assert!(refused.is_err(), "the account did not lift its quota");

        // Both empty clears the limits.
        let r = c
            .post(
                &cookie,
                "/settings/quota",
                &[
                    ("csrf", &csrf),
                    ("bucket", "quota-q"),
                    ("bytes", ""),
                    ("objects", ""),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 303);
        c.gw.state.store.meta().forget_bucket("quota-q");
        put("d", 5000).await.unwrap();
    });
}

/// The administration page sets an account's limits, which then bind across its buckets
/// (checked through S3), and shows the account's usage with a bar, there and on its
/// buckets' settings pages. Only the administrator sets them.
#[test]
fn the_administrator_sets_an_account_quota_and_its_buckets_show_it() {
    support::run(async {
        let c = Console::start("consoleacctquota").await;
        let (ak, sk) = crate::authz::new_key(&c.gw, "team").await;
        let account = grids3::storage::identity::account_id(&ak);
        let team = c.gw.sdk_as(&ak, &sk);
        for b in ["team-1", "team-2"] {
            team.create_bucket().bucket(b).send().await.unwrap();
        }
        let put = |b: &'static str, k: &'static str, n: usize| {
            let s3 = team.clone();
            async move {
                s3.put_object()
                    .bucket(b)
                    .key(k)
                    .body(ByteStream::from(vec![b'x'; n]))
                    .send()
                    .await
            }
        };
        put("team-1", "a", 300).await.unwrap();
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&cookie).await;
        let page = c.get(&cookie, "/admin").await.text().await.unwrap();
        assert!(
            page.contains(&format!("id=\"aq-form-{account}\"")),
            "a row per account: {page}"
        );
        let r = c
            .post(
                &cookie,
                "/admin/quota",
                &[
                    ("csrf", &csrf),
                    ("id", &ak),
                    ("bytes", "1 KiB"),
                    ("objects", ""),
                ],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        let page = r.text().await.unwrap();
        assert_eq!(
            text_of(&page, "done"),
            format!("Account {account}: quota saved")
        );
        assert_eq!(text_of(&page, &format!("aq-used-bytes-{account}")), "300");
        assert!(
            page.contains(&format!(
                "id=\"aq-bar-bytes-{account}\" value=\"29\" max=\"100\""
            )),
            "{page}"
        );
        // It binds across the buckets: 300 + 724 = 1024 fits, one byte more does not.
        let refused = put("team-2", "b", 725)
            .await
            .expect_err("past the account's");
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&refused),
            Some("XMinioAdminBucketQuotaExceeded")
        );
        put("team-2", "b", 724).await.unwrap();
        // The bucket's own settings page shows the account's bar to the account itself.
        let own = c.login(&ak, &sk).await.unwrap();
        let settled = support::eventually(10, || async {
            let page = c
                .get(&own, "/settings?bucket=team-2")
                .await
                .text()
                .await
                .unwrap();
            page.contains("id=\"quota-account-used-bytes\">1024<")
        })
        .await;
        let page = c
            .get(&own, "/settings?bucket=team-2")
            .await
            .text()
            .await
            .unwrap();
        assert!(settled, "{page}");
        assert_eq!(text_of(&page, "quota-account-limit-bytes"), "1024");
        assert!(page.contains("id=\"quota-account-bar-bytes\" value=\"100\""));
        // The account itself cannot lift it.
        let own_csrf = c.csrf(&own).await;
        let r = c
            .post(
                &own,
                "/admin/quota",
                &[("csrf", &own_csrf), ("id", &ak), ("bytes", "")],
                None,
            )
            .await;
        assert_eq!(r.status(), 403);
        put("team-1", "c", 1).await.expect_err("still limited");
        // Cleared by the administrator (both empty): writes fit again.
        let r = c
            .post(
                &cookie,
                "/admin/quota",
                &[("csrf", &csrf), ("id", &ak), ("bytes", ""), ("objects", "")],
                None,
            )
            .await;
        assert_eq!(r.status(), 200);
        put("team-1", "c", 1).await.unwrap();
    });
}
