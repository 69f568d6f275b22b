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

fn sdk(endpoint: &str) -> aws_sdk_s3::Client {
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
