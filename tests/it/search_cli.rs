//! `grids3 search BUCKET QUERY` (issue 63): the subcommand pages through a search as the key
//! it is given, prints one line per object, and passes on the gateway's refusals.

use aws_sdk_s3::primitives::ByteStream;

use crate::support;

fn search(endpoint: &str, keys: (&str, &str), args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
        .arg("search")
        .args(args)
        .env("GRIDS3_ENDPOINT", endpoint)
        .env("AWS_ACCESS_KEY_ID", keys.0)
        .env("AWS_SECRET_ACCESS_KEY", keys.1)
        .env_remove("GRIDS3_ROOT_ACCESS_KEY")
        .env_remove("GRIDS3_ROOT_SECRET_KEY")
        .output()
        .unwrap()
}

fn keys_of(out: &std::process::Output) -> Vec<String> {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect()
}

#[test]
fn the_search_subcommand_pages_through_results_with_the_callers_rights() {
    support::run(async {
        let gw = support::gateway("searchcli").await;
        let s3 = gw.sdk();
        let b = "found";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for (i, color) in ["red", "blue", "red", "red", "green", "red", "red"]
            .iter()
            .enumerate()
        {
            s3.put_object()
                .bucket(b)
                .key(format!("k{i}"))
                .metadata("color", *color)
                .body(ByteStream::from(vec![b'x'; i * 10]))
                .send()
                .await
                .unwrap();
        }
        let root = (support::AK, support::SK);
        let gw2 = gw.endpoint();
        let (all, paged, limited, json, bad) = tokio::task::spawn_blocking(move || {
            let q = "x-amz-meta-color = 'red'";
            (
                search(&gw2, root, &[b, q]),
                search(&gw2, root, &["--page-size", "2", b, q]),
                search(&gw2, root, &["--page-size", "2", "--max", "3", b, q]),
                search(&gw2, root, &["--json", b, "size >= 50 AND key LIKE 'k'"]),
                search(&gw2, root, &[b, "colour = red"]),
            )
        })
        .await
        .unwrap();
        let red = ["k0", "k2", "k3", "k5", "k6"];
        assert_eq!(keys_of(&all), red);
        assert_eq!(keys_of(&paged), red, "followed through three pages of two");
        assert_eq!(keys_of(&limited), red[..3]);
        let first = String::from_utf8_lossy(&all.stdout)
            .lines()
            .next()
            .unwrap()
            .to_owned();
        let cols: Vec<&str> = first.split('\t').collect();
        assert_eq!(cols.len(), 3, "{first}");
        assert_eq!(cols[1], "0");
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&json.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0]["key"], "k5");
        assert_eq!(lines[0]["size"], 50);
        assert_eq!(lines[1]["key"], "k6");
        assert_eq!(lines[1]["etag"].as_str().unwrap().len(), 32);
        assert!(!bad.status.success());
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(
            err.contains("400") && err.contains("InvalidArgument") && err.contains("position 1"),
            "{err}"
        );
        // A key that may not list the bucket is refused, and says so.
        let gw3 = gw.endpoint();
        let denied = tokio::task::spawn_blocking(move || {
            search(&gw3, ("nobody-key", "nobody-secret-key"), &[b, "size > 0"])
        })
        .await
        .unwrap();
        assert!(!denied.status.success());
        let err = String::from_utf8_lossy(&denied.stderr);
        assert!(err.contains("403"), "{err}");
    });
}
