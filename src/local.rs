//! The local development setup's file, `data/local.env` in the project directory: what
//! `grids3 --local-db` serves with (endpoint, root key, a master key it generated once) in
//! `KEY=value` lines, so that `grids3 admin` (run with `cargo run -- admin`, or installed with
//! `cargo install --path .`) and a shell (`set -a; . data/local.env; set +a`) find them
//! without typing them in. It holds secrets, so it is written readable by its owner only; it
//! is for development, never a deployment.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::config::{Config, Secret};

/// Where the file is.
pub fn path() -> PathBuf {
    crate::devdb::project_dir().join("data/local.env")
}

/// The file's `KEY=value` pairs (empty when there is no file).
pub fn read() -> BTreeMap<String, String> {
    std::fs::read_to_string(path())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// For `--local-db`: the master key is the configured one, else the one kept in the file,
/// else 32 fresh random bytes (hex), so that SSE-S3 and SSE-KMS work from the first start and
/// what they sealed still opens after a restart.
pub fn master_key(config: &Config) -> Secret {
    if let Some(k) = config.master_key.clone().filter(|k| !k.is_empty()) {
        return k;
    }
    if let Some(k) = read().get("GRIDS3_MASTER_KEY").filter(|k| !k.is_empty()) {
        return k.as_str().into();
    }
    let mut fresh = zeroize::Zeroizing::new([0u8; 32]);
    rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut *fresh);
    hex::encode(*fresh).into()
}

/// Writes the file for a gateway serving at `endpoint` with `config`'s keys.
pub fn write(config: &Config, endpoint: &str, mongodb_uri: &str) -> Result<PathBuf> {
    let p = path();
    let get = |s: &Option<Secret>| s.as_deref().unwrap_or_default().to_owned();
    let ak = config.root_access_key.clone().unwrap_or_default();
    let sk = get(&config.root_secret_key);
    let text = zeroize::Zeroizing::new(format!(
        "# Written by `grids3 --local-db` for `grids3 admin` and for your shell:\n\
         #   set -a; . {}; set +a\n\
         # Development only: it holds the root secret and the master key.\n\
         GRIDS3_ENDPOINT={endpoint}\n\
         GRIDS3_ROOT_ACCESS_KEY={ak}\n\
         GRIDS3_ROOT_SECRET_KEY={sk}\n\
         GRIDS3_MASTER_KEY={}\n\
         AWS_ACCESS_KEY_ID={ak}\n\
         AWS_SECRET_ACCESS_KEY={sk}\n\
         AWS_DEFAULT_REGION={}\n\
         AWS_ENDPOINT_URL={endpoint}\n\
         # The database this start used (not MONGODB_URI: a later --local-db would take it).\n\
         LOCAL_MONGODB_URI={mongodb_uri}\n\
         LOCAL_DATABASE={}\n",
        p.display(),
        get(&config.master_key),
        config.region,
        config.database,
    ));
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    // Created owner-only before the secrets go in.
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&p)
        .with_context(|| format!("writing {}", p.display()))?;
    f.write_all(text.as_bytes())?;
    Ok(p)
}

/// For `grids3 admin`: the root key from the file when none was given, and the endpoint from
/// it when none was given either. Returns the endpoint to call.
pub fn fill_admin(config: &mut Config, endpoint: Option<&str>) -> String {
    let file = read();
    if config.root_access_key.is_none() && config.root_secret_key.is_none() {
        config.root_access_key = file.get("GRIDS3_ROOT_ACCESS_KEY").cloned();
        config.root_secret_key = file
            .get("GRIDS3_ROOT_SECRET_KEY")
            .map(|s| s.as_str().into());
    }
    endpoint
        .map(str::to_owned)
        .or_else(|| file.get("GRIDS3_ENDPOINT").cloned())
        .unwrap_or_else(|| "http://127.0.0.1:9000".to_owned())
}
