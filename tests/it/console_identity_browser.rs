//! The console's identity pages in a real browser (issue 60): headless Chromium driven by
//! Playwright (`tests/py/console_identity_browser.py`) creates a user, a policy in the editor,
//! attaches it, creates a key and reads its secret from the page, then signs in as that user,
//! whose effective-permissions view must match what the user's real S3 calls get.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

fn refused<T, E: ProvideErrorMetadata>(r: Result<T, E>) -> bool {
    match r {
        Ok(_) => false,
        Err(e) => e.code() == Some("AccessDenied"),
    }
}

#[test]
fn chromium_makes_a_user_and_the_user_sees_what_it_may_do() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let c = Console::start("consoleidbrowser").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("photos").send().await.unwrap();
        s3.put_object()
            .bucket("photos")
            .key("a.jpg")
            .body(ByteStream::from_static(b"jpeg"))
            .send()
            .await
            .unwrap();
        let args = vec![
            c.url(""),
            support::AK.to_owned(),
            support::SK.to_owned(),
            chromium.display().to_string(),
        ];
        let r = support::py_result("console_identity_browser.py", args).await;
        assert_eq!(r["users"], serde_json::json!(["bob"]));
        assert!(
            r["malformed"]
                .as_str()
                .unwrap()
                .starts_with("MalformedPolicyDocument:"),
            "{}",
            r["malformed"]
        );
        assert_eq!(r["kept"], true);
        let arn = r["policy_arn"].as_str().unwrap();
        assert!(arn.ends_with(":policy/bob-read"), "{arn}");
        assert_eq!(r["attached"], serde_json::json!([arn]));
        assert_eq!(r["secret_after_reload"], false, "the secret is shown once");
        assert!(r["bob_identity_error"]
            .as_str()
            .unwrap()
            .starts_with("AccessDenied:"));
        assert!(r["bob_subject"]
            .as_str()
            .unwrap()
            .contains(r["bob_key"].as_str().unwrap()));
        assert!(r["root_subject"].as_str().unwrap().contains(":user/bob"));

        // Bob's view (and root's view of bob) is what bob's real calls get.
        let (ak, sk) = (
            r["bob_key"].as_str().unwrap(),
            r["bob_secret"].as_str().unwrap(),
        );
        let bob = c.gw.sdk_as(ak, sk);
        let real = [
            (
                "s3:ListBucket",
                refused(
                    bob.list_objects_v2()
                        .bucket("photos")
                        .prefix("a.jpg")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:GetObject",
                refused(bob.get_object().bucket("photos").key("a.jpg").send().await),
            ),
            (
                "s3:PutObject",
                refused(
                    bob.put_object()
                        .bucket("photos")
                        .key("a.jpg")
                        .body(ByteStream::from_static(b"x"))
                        .send()
                        .await,
                ),
            ),
            (
                "s3:DeleteObject",
                refused(
                    bob.delete_object()
                        .bucket("photos")
                        .key("a.jpg")
                        .send()
                        .await,
                ),
            ),
            (
                "s3:GetBucketPolicy",
                refused(bob.get_bucket_policy().bucket("photos").send().await),
            ),
            (
                "s3:ListAllMyBuckets",
                refused(bob.list_buckets().send().await),
            ),
        ];
        for (action, was_refused) in real {
            let want = if was_refused { "Denied" } else { "Allowed" };
            assert_eq!(r["bob_view"][action], want, "{action}");
            assert_eq!(r["root_view"][action], want, "{action}");
        }
        assert_eq!(r["bob_view"]["s3:GetObject"], "Allowed");
        assert_eq!(r["bob_view"]["s3:PutObject"], "Denied");
        assert_eq!(r["bob_view"], r["root_view"]);
    });
}
