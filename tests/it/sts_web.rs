//! Issue 61: AssumeRoleWithWebIdentity against a real OpenID provider (node's
//! `oidc-provider` from npm, `tests/js/oidc_provider.mjs`): ID tokens got through the
//! provider's own login, credentials through boto3, awscli, botocore's web-identity provider
//! and minio-py (see `tests/py/sts_web_identity.py`).

use std::path::{Path, PathBuf};

use crate::support;

/// A running test provider: its issuer URL, the redirect URI its client accepts, and the
/// process (killed on drop).
pub struct Provider {
    pub issuer: String,
    pub redirect: String,
    child: std::process::Child,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `oidc-provider` installed under `target/npm-oidc` (once), and node; `None` where node and
/// npm cannot be had.
fn installed() -> Option<(PathBuf, PathBuf)> {
    let (node, npm) = (
        support::apt_tool("node", "nodejs")?,
        support::apt_tool("npm", "npm")?,
    );
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("target/npm-oidc");
    std::fs::create_dir_all(&dir).unwrap();
    if !dir.join("node_modules/oidc-provider/package.json").exists() {
        let out = std::process::Command::new(&npm)
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .arg("oidc-provider@8.8.1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "npm install oidc-provider: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // An ES module finds its packages beside it.
    let script = dir.join("oidc_provider.mjs");
    std::fs::copy(root.join("tests/js/oidc_provider.mjs"), &script).unwrap();
    Some((node, script))
}

/// Starts the provider on a free port with a new key of `alg` (`RS256` or `ES256`) in
/// `keys` (kept: start it again with the same file to keep its keys, another to rotate).
pub fn start(keys: &Path, alg: &str, redirect: &str) -> Option<Provider> {
    start_at(free_port(), keys, alg, redirect)
}

/// A port free now (for a provider whose URL must be known before it starts).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// [`start`] on `port`.
pub fn start_at(port: u16, keys: &Path, alg: &str, redirect: &str) -> Option<Provider> {
    let (node, script) = installed()?;
    let mut child = std::process::Command::new(node)
        .arg(script)
        .args([&port.to_string(), keys.to_str().unwrap(), alg, redirect])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // It prints "ready" once it listens.
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "the OpenID provider did not start");
    Some(Provider {
        issuer: format!("http://127.0.0.1:{port}"),
        redirect: redirect.to_owned(),
        child,
    })
}

/// The machine-to-machine flow and the clients (see `tests/py/sts_web_identity.py`).
#[test]
fn ci_jobs_trade_an_id_token_for_credentials_through_every_client() {
    support::run(async {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys.json");
        let Some(op) = start(&keys, "RS256", "http://127.0.0.1:9/cb") else {
            println!("SKIPPED: node and npm cannot be installed here");
            return;
        };
        // The provider is on a loopback address: allowed only by this setting (tests and
        // local use), as an issuer URL is an SSRF vector.
        let gw = support::gateway_with("stsweb", |c| c.oidc_allow_loopback = true).await;
        support::run_py_checks(
            &gw,
            "sts_web_identity.py",
            "sts_web_identity",
            &[&op.issuer, &op.redirect],
        )
        .await;
    });
}

/// The review finding F5, in its own file.
#[path = "sts_web_review.rs"]
mod review;
