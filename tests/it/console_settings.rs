//! The console's settings page and first-hour rough edges (issue 59), from outside: raw HTTP
//! for the pages' content and the no-script path of a change that makes a bucket public;
//! headless Chromium (`tests/py/console_settings_browser.py`) for what the script does. Every
//! outcome is checked through S3 (and an anonymous GET), never through the page alone.

use aws_sdk_s3::primitives::ByteStream;

use crate::console::Console;
use crate::support;

/// The settings the page shows, by their sub-resource.
const SUBS: [&str; 11] = [
    "versioning",
    "policy",
    "cors",
    "publicAccessBlock",
    "ownershipControls",
    "lifecycle",
    "encryption",
    "object-lock",
    "notification",
    "website",
    "tagging",
];

/// The text of the element that starts at `marker`'s first match, up to `end`.
fn after<'a>(page: &'a str, marker: &str, end: &str) -> &'a str {
    let at = page
        .find(marker)
        .unwrap_or_else(|| panic!("{marker} not in {page}"))
        + marker.len();
    let rest = &page[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}

/// The content of a setting's editor.
fn editor(page: &str, sub: &str) -> String {
    let open = after(page, &format!("id=\"doc-{sub}\""), "</textarea>");
    html_unescape(&open[open.find('>').unwrap() + 1..])
}

/// Whether the page says a setting is set.
fn label(page: &str, sub: &str) -> String {
    after(page, &format!("id=\"title-{sub}\">"), "</h2>").to_owned()
}

/// Text of HTML with its character references (named and numeric) decoded.
fn html_unescape(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(end) = rest.find(';') else { break };
        let name = &rest[1..end];
        let c = match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "amp" => Some('&'),
            "apos" => Some('\''),
            n if n.starts_with("#x") => u32::from_str_radix(&n[2..], 16)
                .ok()
                .and_then(char::from_u32),
            n if n.starts_with('#') => n[1..].parse().ok().and_then(char::from_u32),
            _ => None,
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[end + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// An anonymous GET's status.
async fn anonymous(c: &Console, bucket: &str, key: &str) -> u16 {
    reqwest::get(format!("{}/{bucket}/{key}", c.gw.endpoint()))
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// What S3 says of a bucket's settings (each read's answer or error code), to compare.
async fn settings_of(s3: &aws_sdk_s3::Client, bucket: &str) -> Vec<String> {
    use aws_sdk_s3::error::ProvideErrorMetadata;
    fn show<T: std::fmt::Debug, E: ProvideErrorMetadata>(r: Result<T, E>) -> String {
        match r {
            Ok(v) => format!("{v:?}")
                .split("_request_id")
                .next()
                .unwrap()
                .to_owned(),
            Err(e) => e.code().unwrap_or("?").to_owned(),
        }
    }
    vec![
        show(s3.get_bucket_policy().bucket(bucket).send().await),
        show(s3.get_bucket_cors().bucket(bucket).send().await),
        show(
            s3.get_bucket_lifecycle_configuration()
                .bucket(bucket)
                .send()
                .await,
        ),
        show(s3.get_bucket_website().bucket(bucket).send().await),
        show(s3.get_bucket_tagging().bucket(bucket).send().await),
        show(s3.get_public_access_block().bucket(bucket).send().await),
        show(
            s3.get_bucket_ownership_controls()
                .bucket(bucket)
                .send()
                .await,
        ),
        show(s3.get_bucket_encryption().bucket(bucket).send().await),
        show(
            s3.get_object_lock_configuration()
                .bucket(bucket)
                .send()
                .await,
        ),
        format!(
            "{:?}",
            s3.get_bucket_versioning()
                .bucket(bucket)
                .send()
                .await
                .unwrap()
                .status()
        ),
        format!(
            "{:?}",
            s3.get_bucket_notification_configuration()
                .bucket(bucket)
                .send()
                .await
                .unwrap()
                .queue_configurations()
        ),
    ]
}

/// The bucket `fresh`, holding `private.txt`, which only its owner may read.
async fn fresh_with_a_private_object(s3: &aws_sdk_s3::Client) {
    s3.create_bucket().bucket("fresh").send().await.unwrap();
    s3.put_object()
        .bucket("fresh")
        .key("private.txt")
        .body(ByteStream::from_static(b"private"))
        .send()
        .await
        .unwrap();
}

const PUBLIC: &str = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::fresh/*"}]}"#;

#[test]
fn an_untouched_settings_page_saves_nothing_and_shows_only_what_is_set() {
    support::run(async {
        let c = Console::start("consolesettings").await;
        let s3 = c.gw.sdk();
        fresh_with_a_private_object(&s3).await;
        let before = settings_of(&s3, "fresh").await;
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let page = c
            .get(&cookie, "/settings?bucket=fresh")
            .await
            .text()
            .await
            .unwrap();
        // A fresh bucket has none of them but its ownership (set at creation, as in AWS); no
        // editor holds an example as its value.
        for sub in SUBS {
            let (want, doc) = if sub == "ownershipControls" {
                ("(set)", "BucketOwnerEnforced")
            } else {
                ("(not set)", "")
            };
            assert!(
                label(&page, sub).ends_with(&format!("<small>{want}</small>")),
                "{sub}: {}",
                label(&page, sub)
            );
            assert!(editor(&page, sub).contains(doc), "{sub}");
            if doc.is_empty() {
                assert_eq!(editor(&page, sub), "", "{sub}");
            }
        }
        assert!(
            html_unescape(&page).contains("placeholder=\"{\n  \"Version\""),
            "the example is a placeholder: {page}"
        );
        // Each Save of the untouched page sends nothing (an empty editor) or what is set.
        let csrf = c.csrf(&cookie).await;
        for sub in SUBS {
            let doc = editor(&page, sub);
            let r = c
                .post(
                    &cookie,
                    "/settings/save",
                    &[
                        ("csrf", &csrf),
                        ("bucket", "fresh"),
                        ("setting", sub),
                        ("doc", &doc),
                    ],
                    None,
                )
                .await;
            assert_eq!(r.status(), 200, "{sub}");
            let text = r.text().await.unwrap();
            let said = if sub == "ownershipControls" {
                "Object ownership: saved"
            } else {
                "nothing saved (the document is empty)"
            };
            assert!(text.contains(said), "{sub}: {text}");
        }
        assert_eq!(settings_of(&s3, "fresh").await, before);
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 403);

        // Set through S3, they show as set, with their document.
        crate::versioning::enable(&s3, "fresh").await;
        let page = c
            .get(&cookie, "/settings?bucket=fresh")
            .await
            .text()
            .await
            .unwrap();
        assert!(label(&page, "versioning").ends_with("<small>(set)</small>"));
        assert!(editor(&page, "versioning").contains("<Status>Enabled</Status>"));
        assert!(label(&page, "notification").ends_with("<small>(not set)</small>"));
    });
}

#[test]
fn making_a_bucket_public_waits_for_a_confirmation() {
    support::run(async {
        let c = Console::start("consolepublic").await;
        let s3 = c.gw.sdk();
        fresh_with_a_private_object(&s3).await;
        let cookie = c.login(support::AK, support::SK).await.unwrap();
        let csrf = c.csrf(&cookie).await;
        let save = |path: &'static str, sub: &'static str, doc: &str, ok: Option<&str>| {
            let mut form = vec![
                ("csrf", csrf.clone()),
                ("bucket", "fresh".to_owned()),
                ("setting", sub.to_owned()),
                ("doc", doc.to_owned()),
            ];
            if let Some(ok) = ok {
                form.push(("public_ok", ok.to_owned()));
            }
            let (c, cookie) = (&c, cookie.clone());
            async move {
                let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let r = c.post(&cookie, path, &form, None).await;
                (r.status().as_u16(), r.text().await.unwrap())
            }
        };
        let question = |page: &str| html_unescape(after(page, "name=\"public_ok\" value=\"", "\""));

        // Without the confirmation: the question, naming what becomes public; nothing stored.
        let (status, page) = save("/settings/save", "policy", PUBLIC, None).await;
        assert_eq!(status, 200);
        let q = question(&page);
        assert_eq!(
            q,
            "This makes bucket fresh public: bucket policy: everyone may s3:GetObject on arn:aws:s3:::fresh/*. Apply it?"
        );
        assert!(page.contains("id=\"confirm-public\""), "{page}");
        assert!(s3.get_bucket_policy().bucket("fresh").send().await.is_err());
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 403);
        // An answer to another question is no answer.
        let (_, page) = save("/settings/save", "policy", PUBLIC, Some("yes")).await;
        assert_eq!(question(&page), q);
        assert!(s3.get_bucket_policy().bucket("fresh").send().await.is_err());
        // Confirmed: applied.
        let (status, page) = save("/settings/save", "policy", PUBLIC, Some(&q)).await;
        assert_eq!(status, 200);
        assert!(page.contains("Bucket policy: saved"), "{page}");
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 200);
        // A policy that makes nothing public is saved without a question.
        let private = PUBLIC.replace(
            "\"Principal\":\"*\"",
            &format!("\"Principal\":{{\"AWS\":\"{}\"}}", support::AK),
        );
        let (_, page) = save("/settings/save", "policy", &private, None).await;
        assert!(page.contains("Bucket policy: saved"), "{page}");
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 403);
        // A public policy under RestrictPublicBuckets makes nothing public: no question...
        let restrict = "<PublicAccessBlockConfiguration><RestrictPublicBuckets>true</RestrictPublicBuckets></PublicAccessBlockConfiguration>";
        let (_, page) = save("/settings/save", "publicAccessBlock", restrict, None).await;
        assert!(page.contains("Block Public Access: saved"), "{page}");
        let (_, page) = save("/settings/save", "policy", PUBLIC, None).await;
        assert!(page.contains("Bucket policy: saved"), "{page}");
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 403);
        // ...but deleting the block does, and asks.
        let (_, page) = save("/settings/delete", "publicAccessBlock", "", None).await;
        let q = question(&page);
        assert!(
            q.contains("everyone may s3:GetObject on arn:aws:s3:::fresh/*"),
            "{q}"
        );
        assert!(
            page.contains("action=\"/settings/delete\" class=\"confirm\""),
            "{page}"
        );
        assert!(s3
            .get_public_access_block()
            .bucket("fresh")
            .send()
            .await
            .is_ok());
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 403);
        let (_, page) = save("/settings/delete", "publicAccessBlock", "", Some(&q)).await;
        assert!(page.contains("Block Public Access: deleted"), "{page}");
        assert_eq!(anonymous(&c, "fresh", "private.txt").await, 200);
    });
}

#[test]
fn first_hour_rough_edges() {
    support::run(async {
        let c = Console::start("consoleedges").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("plain").send().await.unwrap();
        s3.create_bucket()
            .bucket("locked")
            .object_lock_enabled_for_bucket(true)
            .send()
            .await
            .unwrap();
        for b in ["plain", "locked"] {
            s3.put_object()
                .bucket(b)
                .key("data.bin")
                .body(ByteStream::from(vec![7u8; 1536]))
                .send()
                .await
                .unwrap();
        }
        s3.put_object()
            .bucket("plain")
            .key("README.md")
            .content_type("text/markdown")
            .body(ByteStream::from_static(
                b"# Notes\n\n<!-- editors: do not publish -->\n\nVisible text.\n",
            ))
            .send()
            .await
            .unwrap();

        // A failed sign-in keeps the access key (never the secret).
        let r = reqwest::Client::new()
            .post(c.url("/login"))
            .form(&[("access_key", support::AK), ("secret", "wrong-secret")])
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401);
        let page = r.text().await.unwrap();
        assert!(
            page.contains(&format!("name=\"access_key\" value=\"{}\"", support::AK)),
            "{page}"
        );
        assert!(!page.contains("wrong-secret"));
        let cookie = c.login(support::AK, support::SK).await.unwrap();

        // Sizes as people read them, the exact bytes in a title.
        let page = c
            .get(&cookie, "/browse?bucket=plain")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("title=\"1536 bytes\">1.5 KiB</td>"), "{page}");
        let page = c
            .get(&cookie, "/object?bucket=plain&key=data.bin")
            .await
            .text()
            .await
            .unwrap();
        assert!(
            page.contains("id=\"size\" title=\"1536 bytes\">1.5 KiB</dd>"),
            "{page}"
        );

        // Object Lock's forms only where the bucket has it, the legal hold as it is.
        assert!(!page.contains("id=\"legal-hold\""), "{page}");
        assert!(!page.contains("id=\"retention\""), "{page}");
        assert!(page.contains("id=\"no-lock\""), "{page}");
        let page = c
            .get(&cookie, "/object?bucket=locked&key=data.bin")
            .await
            .text()
            .await
            .unwrap();
        assert!(page.contains("id=\"legal-hold\""), "{page}");
        assert!(
            page.contains("<option value=\"OFF\" selected>Off</option>"),
            "{page}"
        );

        // The README's HTML comment is not shown in its preview.
        let page = c
            .get(&cookie, "/object?bucket=plain&key=README.md")
            .await
            .text()
            .await
            .unwrap();
        let preview = after(&page, "id=\"preview-markdown\">", "</div>");
        assert!(preview.contains("Visible text."), "{preview}");
        assert!(!preview.contains("do not publish"), "{preview}");
        assert!(!preview.contains("&lt;!--"), "{preview}");

        // A document that is not XML, or not the schema: which setting, and where.
        let csrf = c.csrf(&cookie).await;
        let save = |doc: &'static str| {
            let (c, cookie, csrf) = (&c, cookie.clone(), csrf.clone());
            async move {
                let form = [
                    ("csrf", csrf.as_str()),
                    ("bucket", "plain"),
                    ("setting", "lifecycle"),
                    ("doc", doc),
                ];
                let r = c.post(&cookie, "/settings/save", &form, None).await;
                let status = r.status().as_u16();
                let page = r.text().await.unwrap();
                (
                    status,
                    html_unescape(after(&page, "id=\"error-lifecycle\">", "</p>")),
                )
            }
        };
        let (status, error) = save("<LifecycleConfiguration>\n  <Rule>\n    <ID>x</Id>\n  </Rule>\n</LifecycleConfiguration>").await;
        assert_eq!(status, 400);
        assert!(
            error.starts_with(
                "The Lifecycle rules document is not well-formed XML: line 3, column "
            ),
            "{error}"
        );
        let (status, error) = save("<LifecycleConfiguration><Rule><ID>x</ID><Status>Enabled</Status><Filter><Prefix>a/</Prefix></Filter><Expiration><Dayz>3</Dayz></Expiration></Rule></LifecycleConfiguration>").await;
        assert_eq!(status, 400);
        assert!(
            error.starts_with("Lifecycle rules: MalformedXML: "),
            "{error}"
        );
        assert!(error.contains("Dayz"), "{error}");
        let (_, error) = save("<CORSConfiguration/>").await;
        assert!(
            error.contains("the root element is <CORSConfiguration>, not <LifecycleConfiguration>"),
            "{error}"
        );
        assert!(s3
            .get_bucket_lifecycle_configuration()
            .bucket("plain")
            .send()
            .await
            .is_err());
    });
}

/// With the console on an unspecified address, presigned answers are readable by the console's
/// loopback origins on its port, never by any host on that port (issue 59's suspicion).
#[test]
fn a_console_on_an_unspecified_address_allows_no_wildcard_origin() {
    support::run(async {
        for listen in ["0.0.0.0:9001", "[::]:9001"] {
            let name = format!(
                "g_consolecors_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..12]
            );
            let gw = support::gateway_with(&name, |c| {
                c.console_listen = Some(listen.parse().unwrap());
            })
            .await;
            let s3 = gw.sdk();
            s3.create_bucket().bucket("upl").send().await.unwrap();
            s3.put_object()
                .bucket("upl")
                .key("a.txt")
                .body(ByteStream::from_static(b"a"))
                .send()
                .await
                .unwrap();
            let cfg = aws_sdk_s3::presigning::PresigningConfig::expires_in(
                std::time::Duration::from_secs(300),
            )
            .unwrap();
            let url = s3
                .get_object()
                .bucket("upl")
                .key("a.txt")
                .presigned(cfg)
                .await
                .unwrap()
                .uri()
                .to_owned();
            for (origin, allowed) in [
                ("http://attacker.example:9001", false),
                ("http://files.lan:9001", false),
                ("http://localhost:9001", true),
                ("http://127.0.0.1:9001", true),
                ("http://localhost:9002", false),
            ] {
                let r = reqwest::Client::new()
                    .get(&url)
                    .header("origin", origin)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200, "{listen} {origin}");
                let acao = r
                    .headers()
                    .get("access-control-allow-origin")
                    .map(|v| v.to_str().unwrap().to_owned());
                assert_eq!(
                    acao.as_deref(),
                    allowed.then_some(origin),
                    "{listen}: {origin}"
                );
            }
        }
    });
}

#[test]
fn chromium_saves_nothing_untouched_and_asks_before_making_public() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        let c = Console::start("consolesetbrowser").await;
        let s3 = c.gw.sdk();
        for b in ["fresh", "upl"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
        }
        s3.put_object()
            .bucket("fresh")
            .key("private.txt")
            .body(ByteStream::from_static(b"private"))
            .send()
            .await
            .unwrap();
        let before = settings_of(&s3, "fresh").await;
        let args = vec![
            c.url(""),
            support::AK.to_owned(),
            support::SK.to_owned(),
            chromium.display().to_string(),
            format!("{}/fresh/private.txt", c.gw.endpoint()),
        ];
        let r = support::py_result("console_settings_browser.py", args).await;
        assert_eq!(r["kept_access_key"], support::AK, "{r}");
        // (a) Every Save of the untouched page: nothing changed, nothing asked.
        assert_eq!(r["subs"].as_array().unwrap().len(), SUBS.len(), "{r}");
        assert_eq!(r["policy_editor"], "", "{r}");
        assert!(r["policy_placeholder"]
            .as_str()
            .unwrap()
            .contains("\"Principal\": \"*\""));
        for s in r["untouched_saved"].as_array().unwrap() {
            let s = s.as_str().unwrap();
            assert!(
                s.ends_with("nothing saved (the document is empty)")
                    || s == "Object ownership: saved",
                "{s}"
            );
        }
        assert_eq!(r["labels_before"], r["labels_after"], "{r}");
        // Only the ownership, set at creation, is set.
        let set: Vec<_> = r["labels_after"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| *l != "(not set)")
            .collect();
        assert_eq!(set, [&serde_json::json!("(set)")], "{r}");
        assert_eq!(r["untouched_dialogs"], serde_json::json!([]), "{r}");
        assert_eq!(r["anonymous_after_untouched"], 403, "{r}");
        assert_eq!(r["example_inserted"], true, "{r}");
        // (b) A public policy: asked, naming what becomes public; dismissed, nothing changed.
        let d = &r["dismissed"];
        assert_eq!(
            d["dialog"],
            "This makes bucket fresh public: bucket policy: everyone may s3:GetObject on arn:aws:s3:::fresh/*. Apply it?",
            "{r}"
        );
        assert_eq!(d["note"], "Not applied: nothing was changed.", "{r}");
        assert_eq!(d["label"], "(not set)", "{r}");
        assert_eq!(d["anonymous"], 403, "{r}");
        // Accepted: applied.
        let a = &r["accepted"];
        assert_eq!(a["asked"], 1, "{r}");
        assert_eq!(a["saved"], "Bucket policy: saved", "{r}");
        assert_eq!(a["label"], "(set)", "{r}");
        assert_eq!(a["anonymous"], 200, "{r}");
        let mut after = settings_of(&s3, "fresh").await;
        let policy = s3.get_bucket_policy().bucket("fresh").send().await.unwrap();
        assert!(policy.policy().unwrap().contains("\"Principal\": \"*\""));
        // Only the policy changed.
        after[0] = before[0].clone();
        assert_eq!(after, before);
        // Uploads: a finished one's Cancel is neither shown nor usable.
        let u = &r["upload"];
        assert_eq!(u["state"], "done", "{r}");
        assert_eq!(u["cancel_visible"], false, "{r}");
        assert_eq!(u["cancel_disabled"], true, "{r}");
        assert_eq!(u["total"], "1.5 MiB of 1.5 MiB", "{r}");
        let head = s3
            .head_object()
            .bucket("upl")
            .key("one.bin")
            .send()
            .await
            .unwrap();
        assert_eq!(head.content_length(), Some(1536 * 1024));
    });
}
