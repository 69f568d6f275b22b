//! Issue 26: every `sh` and `python` block of the README and the docs pages runs, in order, in
//! one shell, as a reader would paste them, against a fresh `grids3 --local-db`. A block
//! followed by `<!-- expect: TEXT -->` must print TEXT; a block preceded by `<!-- not run: why
//! -->` is skipped (starting the gateway or the suite itself, Docker, files under /etc).
//!
//! Two mechanical substitutions, and nothing else: the port (the examples say 9000; this
//! gateway listens on a free one, beside the rest of the suite), and `cargo run [-q] --release
//! --` (the binary the suite built, instead of building a release one).

use crate::support;

/// The pages whose blocks run, in this order (the README's tour sets the shell up).
const PAGES: &[&str] = &[
    "README.md",
    "docs/access-control.md",
    "docs/browsers.md",
    "docs/storage-modes.md",
    "docs/tls.md",
    "docs/deployment.md",
    "docs/search.md",
];

/// One block to run: where it is, its language, its text, and what it must print.
struct Block {
    at: String,
    lang: String,
    text: String,
    expect: Vec<String>,
}

/// The runnable blocks of a page.
fn blocks(page: &str, text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let lang = lines[i].strip_prefix("```").map(str::trim).unwrap_or("");
        if lines[i].starts_with("```") && !lang.is_empty() {
            let start = i;
            let mut body = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].starts_with("```") {
                body.push(lines[i]);
                i += 1;
            }
            let skipped = start > 0
                && lines[..start]
                    .iter()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .is_some_and(|l| l.starts_with("<!-- not run"));
            let mut expect = Vec::new();
            let mut j = i + 1;
            while j < lines.len() {
                let l = lines[j].trim();
                if l.is_empty() {
                    j += 1;
                    continue;
                }
                match l
                    .strip_prefix("<!-- expect: ")
                    .and_then(|r| r.strip_suffix(" -->"))
                {
                    Some(e) => {
                        expect.push(e.to_owned());
                        j += 1;
                    }
                    None => break,
                }
            }
            if matches!(lang, "sh" | "python") && !skipped {
                out.push(Block {
                    at: format!("{page}:{}", start + 1),
                    lang: lang.to_owned(),
                    text: body.join("\n"),
                    expect,
                });
            }
        }
        i += 1;
    }
    out
}

#[test]
fn every_readme_and_docs_example_runs_as_written() {
    support::run(async {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let exe = env!("CARGO_BIN_EXE_grids3");
        // A project directory of its own: the venv the suite made, the README the tour
        // uploads, and data/local.env written by this gateway.
        let project = tempfile::tempdir().unwrap();
        crate::newcomer::link_venv(project.path());
        std::fs::copy(root.join("README.md"), project.path().join("README.md")).unwrap();
        let out = project.path().join("gateway.log");
        let db = format!(
            "g_readme_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let (_gateway, endpoint) = crate::newcomer::local_gateway(project.path(), &db, &out);
        crate::newcomer::ready(&endpoint).await;
        let port = endpoint.rsplit(':').next().unwrap().to_owned();
        let mut script = String::from("set -eo pipefail\nshopt -s expand_aliases\n");
        let mut all = Vec::new();
        for page in PAGES {
            let text = std::fs::read_to_string(root.join(page)).unwrap();
            all.extend(blocks(page, &text));
        }
        assert!(all.len() >= 8, "{} runnable blocks", all.len());
        for (n, b) in all.iter().enumerate() {
            let text = b
                .text
                .replace("127.0.0.1:9000", &format!("127.0.0.1:{port}"))
                .replace("localhost:9000", &format!("localhost:{port}"))
                .replace("cargo run -q --release --", exe)
                .replace("cargo run --release --", exe);
            script.push_str(&format!("echo '@@ block {n} @@'\n"));
            match b.lang.as_str() {
                "python" => script.push_str(&format!(
                    ".venv/bin/python - <<'GRIDS3_PYTHON_BLOCK'\n{text}\nGRIDS3_PYTHON_BLOCK\n"
                )),
                _ => script.push_str(&format!("{text}\n")),
            }
        }
        script.push_str("echo '@@ end @@'\n");
        support::apt_tool("curl", "curl").expect("curl");
        let path = project.path().to_owned();
        let result = tokio::task::spawn_blocking(move || {
            std::process::Command::new("bash")
                .arg("-c")
                .arg(&script)
                .current_dir(&path)
                // A reader's shell: none of the suite's settings.
                .env_remove("AWS_ACCESS_KEY_ID")
                .env_remove("AWS_SECRET_ACCESS_KEY")
                .env_remove("GRIDS3_ENDPOINT")
                .env("AWS_CONFIG_FILE", "/dev/null")
                .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                .env("GRIDS3_PROJECT_DIR", &path)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        let stdout = String::from_utf8_lossy(&result.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&result.stderr);
        // Which block failed: the last marker printed.
        let last = stdout
            .lines()
            .rev()
            .filter_map(|l| l.strip_prefix("@@ block ")?.strip_suffix(" @@"))
            .find_map(|n| n.parse::<usize>().ok());
        assert!(
            result.status.success() && stdout.contains("@@ end @@"),
            "the example at {} failed:\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
            last.map_or("(before the first)".to_owned(), |n| all[n].at.clone())
        );
        // Issue 40, item 7: the examples leave nothing in the project but `scratch/` (which
        // .gitignore names) and what the start made (data/, and the suite's own files); they
        // left upload.html, cors.json, logo.png, index.html and public.json in the root.
        let mut left: Vec<String> = std::fs::read_dir(project.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| {
                ![".venv", "README.md", "gateway.log", "data", "scratch"].contains(&n.as_str())
            })
            .collect();
        left.sort();
        assert!(
            left.is_empty(),
            "the examples left files in the project's root: {left:?}"
        );
        let ignored = std::fs::read_to_string(root.join(".gitignore")).unwrap();
        assert!(ignored.lines().any(|l| l == "/scratch/"), "{ignored}");
        // The commands the gateway printed at start-up work as printed (item 9: they named an
        // `aws` that is not on PATH, and no admin binary).
        let printed = std::fs::read_to_string(&out).unwrap();
        for prefix in ["try: ", "admin: "] {
            let line = printed
                .lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix:?} line at start-up:\n{printed}"))
                .to_owned();
            let dir = project.path().to_owned();
            let ran = tokio::task::spawn_blocking(move || {
                std::process::Command::new("bash")
                    .arg("-c")
                    .arg(&line)
                    .current_dir(&dir)
                    .env_remove("AWS_ACCESS_KEY_ID")
                    .env_remove("AWS_SECRET_ACCESS_KEY")
                    .env_remove("GRIDS3_ENDPOINT")
                    .env_remove("GRIDS3_ROOT_ACCESS_KEY")
                    .env_remove("GRIDS3_ROOT_SECRET_KEY")
                    .env("AWS_CONFIG_FILE", "/dev/null")
                    .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
                    .env("GRIDS3_PROJECT_DIR", &dir)
                    .output()
                    .unwrap()
            })
            .await
            .unwrap();
            assert!(
                ran.status.success(),
                "the printed {prefix:?} command failed: {}",
                String::from_utf8_lossy(&ran.stderr)
            );
        }
        // The tour's browser step, in a real Chromium: the form the tour wrote, with a file
        // put into its file input as a picker would (headless Chromium has no picker), and
        // submitted; the object must then be there under the picked file's name.
        if let Some(chromium) = support::chromium() {
            let form = std::fs::read_to_string(project.path().join("scratch/upload.html"))
                .expect("the tour writes scratch/upload.html");
            let input = r#"<input type="file" name="file">"#;
            assert!(
                form.contains(input),
                "no file input in upload.html:\n{form}"
            );
            let page = project.path().join("scratch/picked.html");
            let pick = "<script>const t = new DataTransfer(); \
                t.items.add(new File(['picked in a browser'], 'hello.txt')); \
                const i = document.querySelector('input[type=file]'); i.files = t.files; \
                i.form.submit();</script>\n";
            std::fs::write(&page, format!("{form}{pick}")).unwrap();
            let dom = support::chromium_dom(&chromium, &format!("file://{}", page.display())).await;
            assert!(
                dom.contains("uploads/hello.txt"),
                "the browser did not show the PostResponse for uploads/hello.txt: {dom}"
            );
            let got = std::process::Command::new("curl")
                .args(["-s", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user"])
                .arg("grids3dev:grids3devsecret")
                .arg(format!("{endpoint}/demo/uploads/hello.txt"))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&got.stdout), "picked in a browser");
        } else {
            println!("SKIPPED the tour's browser step: chromium cannot be installed here");
        }
        // What each block printed, between its marker and the next.
        for (n, b) in all.iter().enumerate() {
            let from = stdout.find(&format!("@@ block {n} @@")).unwrap();
            let rest = &stdout[from..];
            let to = rest[3..].find("@@ ").map_or(rest.len(), |i| i + 3);
            let printed = &rest[..to];
            for e in &b.expect {
                assert!(
                    printed.contains(e.as_str()),
                    "the example at {} did not print {e:?}; it printed:\n{printed}\n--- stderr\n{stderr}",
                    b.at
                );
            }
        }
    });
}
