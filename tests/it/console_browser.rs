//! The web console in a real browser (issue 39): headless Chromium driven by Playwright
//! (`tests/py/console_browser.py`) signs in, pages through 2,000 keys, shows keys named as
//! markup as text, makes a share link that curl fetches before it expires and not after, and
//! signs out.

use crate::console::Console;
use crate::support;

#[test]
fn chromium_signs_in_browses_shares_and_signs_out() {
    support::run(async {
        let Some(chromium) = support::chromium() else {
            println!("SKIPPED: the browser test needs chromium, which cannot be installed here");
            return;
        };
        support::apt_tool("curl", "curl").expect("curl");
        let c = Console::start("consolebrowser").await;
        let s3 = c.gw.sdk();
        s3.create_bucket().bucket("many").send().await.unwrap();
        let objects = (0..2000)
            .map(|i| (format!("k{i:04}"), vec![b'x'; 10]))
            .collect();
        support::put_many(&s3, "many", objects).await;
        s3.create_bucket().bucket("xss").send().await.unwrap();
        let names = [
            "<img src=x onerror=alert(1)>",
            "\"><script>alert(1)</script>",
        ];
        for n in names {
            s3.put_object()
                .bucket("xss")
                .key(n)
                .body(aws_sdk_s3::primitives::ByteStream::from_static(b"markup"))
                .send()
                .await
                .unwrap();
        }
        // A bucket with an image and a text object with two versions.
        s3.create_bucket().bucket("media").send().await.unwrap();
        crate::versioning::enable(&s3, "media").await;
        s3.put_object()
            .bucket("media")
            .key("logo.png")
            .content_type("image/png")
            .body(aws_sdk_s3::primitives::ByteStream::from(png(23, 9)))
            .send()
            .await
            .unwrap();
        for text in ["first draft", "second draft"] {
            s3.put_object()
                .bucket("media")
                .key("notes.txt")
                .content_type("text/plain")
                .body(aws_sdk_s3::primitives::ByteStream::from(
                    text.as_bytes().to_vec(),
                ))
                .send()
                .await
                .unwrap();
        }
        // A Markdown object, with markup and a script link in it.
        s3.put_object()
            .bucket("media")
            .key("README.md")
            .content_type("text/markdown")
            .body(aws_sdk_s3::primitives::ByteStream::from_static(
                b"# Hello\n\nSee [the site](https://example.com) or [this](javascript:alert(1)).\n\n<img src=x onerror=alert(1)>\n",
            ))
            .send()
            .await
            .unwrap();
        // A key that the policy saved in the browser lets list and read `media` only.
        let (vk, vs) = crate::authz::new_key(&c.gw, "viewer").await;
        let args = vec![
            c.url(""),
            support::AK.to_owned(),
            support::SK.to_owned(),
            chromium.display().to_string(),
            vk.clone(),
            vs.clone(),
        ];
        // `GRIDS3_WRITE_DOCS=1` saves the main screens for docs/console.md.
        let mut args = args;
        if std::env::var("GRIDS3_WRITE_DOCS").is_ok_and(|v| v == "1") {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console");
            std::fs::create_dir_all(dir).unwrap();
            args.push(dir.to_owned());
        }
        let r = support::py_result("console_browser.py", args).await;
        assert_eq!(r["redirected_to_login"], true);
        assert!(r["wrong_secret"].as_str().unwrap().contains("do not match"));
        assert_eq!(r["buckets"], serde_json::json!(["many", "media", "xss"]));
        let paging = &r["paging"];
        assert_eq!(paging["keys"], 2000);
        assert_eq!(paging["distinct"], 2000);
        assert_eq!(paging["pages"], 10, "200 keys a page");
        assert_eq!(paging["first"], "k0000");
        assert_eq!(paging["last"], "k1999");
        assert_eq!(paging["ordered"], true);
        // The second name holds a slash: it shows as a folder and, inside, an object.
        assert_eq!(
            r["xss_names"],
            serde_json::json!([names[0]]),
            "names shown as text"
        );
        assert_eq!(
            r["xss_folders"],
            serde_json::json!(["\"><script>alert(1)</"])
        );
        assert_eq!(r["xss_in_folder"], serde_json::json!(["script>"]));
        assert!(r["xss_crumbs"]
            .as_str()
            .unwrap()
            .contains("\"><script>alert(1)<"));
        assert_eq!(r["xss_img_elements"], 0, "no element was made of a name");
        assert!(names.contains(&r["xss_object_title"].as_str().unwrap()));
        assert_eq!(r["dialogs"], serde_json::json!([]), "no dialog fired");
        assert_eq!(r["share"]["before"], "200");
        assert_eq!(r["share"]["after"], "403");
        assert!(r["share"]["after_body"]
            .as_str()
            .unwrap()
            .contains("AccessDenied"));
        assert_eq!(r["after_logout"], true);
        // Markdown rendered, inert.
        let md = &r["markdown"];
        assert_eq!(md["h1"], "Hello", "{md}");
        assert_eq!(
            md["links"],
            serde_json::json!(["https://example.com"]),
            "{md}"
        );
        assert_eq!(md["elements"], 0, "{md}");
        assert!(
            md["text"]
                .as_str()
                .unwrap()
                .contains("<img src=x onerror=alert(1)>"),
            "{md}"
        );
        // The viewer: media listed, `many` refused with AWS's reason, no administration.
        let v = &r["viewer"];
        assert_eq!(v["admin_link"], false, "{v}");
        assert!(
            v["media"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == "logo.png"),
            "{v}"
        );
        assert!(
            v["many_error"]
                .as_str()
                .unwrap()
                .starts_with("AccessDenied"),
            "{v}"
        );
        assert_eq!(v["many_keys"], 0, "{v}");
        assert!(
            v["admin_page"].as_str().unwrap().contains("AccessDenied"),
            "{v}"
        );
        assert_eq!(
            r["image_width"], 23,
            "the image previewed at its natural width"
        );
        assert_eq!(
            r["tags"],
            serde_json::json!(["team = web", "stage = draft"])
        );
        let tags = s3
            .get_object_tagging()
            .bucket("media")
            .key("logo.png")
            .send()
            .await
            .unwrap();
        assert_eq!(tags.tag_set().len(), 2, "the tags were stored");
        assert_eq!(r["text_before"], "second draft");
        assert_eq!(
            r["text_after"], "first draft",
            "the old version restored as latest"
        );
        assert_eq!(r["versions_after"], 3);
        // Settings: the versioning document, a policy's JSON error at its place, AWS's
        // refusal of a bad policy and of a bad CORS rule, and the good policy stored.
        assert!(r["versioning_doc"]
            .as_str()
            .unwrap()
            .contains("<Status>Enabled</Status>"));
        let je = &r["policy_json_error"];
        assert!(
            je["text"]
                .as_str()
                .unwrap()
                .starts_with("The policy is not JSON: line 3, column 3"),
            "{je}"
        );
        assert!(je["kept"].as_str().unwrap().contains("\"Statement\": []"));
        assert_eq!(je["focused"], "doc-policy");
        assert_eq!(je["cursor"], je["expected_cursor"], "{je}");
        assert!(
            r["policy_refused"]
                .as_str()
                .unwrap()
                .starts_with("Bucket policy: MalformedPolicy:"),
            "{}",
            r["policy_refused"]
        );
        assert_eq!(
            r["policy_asked"],
            serde_json::json!(["This makes bucket media public: bucket policy: everyone may s3:GetObject on arn:aws:s3:::media/logo.png. Apply it?"]),
            "a public statement is confirmed first"
        );
        assert_eq!(r["policy_saved"]["errors"], false, "{}", r["policy_saved"]);
        assert_eq!(r["policy_saved"]["shown"], "ReadLogo");
        let stored = s3.get_bucket_policy().bucket("media").send().await.unwrap();
        assert!(stored.policy().unwrap().contains("ReadLogo"));
        assert!(
            r["cors_refused"]
                .as_str()
                .unwrap()
                .starts_with("CORS: InvalidRequest:"),
            "{}",
            r["cors_refused"]
        );
    });
}

/// A solid PNG of the given size.
fn png(w: u32, h: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let mut body = kind.to_vec();
        body.extend(data);
        out.extend(&body);
        out.extend(crc32fast::hash(&body).to_be_bytes());
    }
    let mut row = vec![0u8];
    for _ in 0..w {
        row.extend([0x20, 0x80, 0xc0]);
    }
    let raw = row.repeat(h as usize);
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut z, &raw).unwrap();
    let mut ihdr = Vec::new();
    ihdr.extend(w.to_be_bytes());
    ihdr.extend(h.to_be_bytes());
    ihdr.extend([8, 2, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &z.finish().unwrap());
    chunk(&mut out, b"IEND", &[]);
    out
}
