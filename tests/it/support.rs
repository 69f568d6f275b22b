//! Test support: one database server and one async runtime for the whole test binary, a
//! fresh database name per test.

use std::future::Future;
use std::sync::OnceLock;

use grids3::devdb::{LocalDb, Storage};
use tokio::runtime::Runtime;

/// The shared multi-thread runtime. Tests call [`run`] instead of `#[tokio::test]` so that
/// the shared MongoDB client (whose tasks live on the runtime that made it) outlives tests.
pub fn runtime() -> &'static Runtime {
    static RT: OnceLock<Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(4)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// Runs a test body on the shared runtime.
pub fn run<F: Future<Output = ()> + Send + 'static>(f: F) {
    runtime().block_on(async move { tokio::spawn(f).await.expect("test task panicked") });
}

/// The database server, started once per test run; the watchdog stops it when the test
/// process exits.
pub fn db() -> &'static LocalDb {
    static DB: OnceLock<LocalDb> = OnceLock::new();
    DB.get_or_init(|| {
        std::thread::spawn(|| {
            Runtime::new()
                .expect("runtime")
                .block_on(LocalDb::start(Storage::Ephemeral))
                .expect("starting the local database")
        })
        .join()
        .expect("db start thread")
    })
}

/// The shared client (one connection pool per process).
pub async fn client() -> mongodb::Client {
    static CLIENT: tokio::sync::OnceCell<mongodb::Client> = tokio::sync::OnceCell::const_new();
    CLIENT
        .get_or_init(|| async {
            let uri = db().uri.clone();
            mongodb::Client::with_uri_str(&uri).await.expect("client")
        })
        .await
        .clone()
}

/// A database of its own for one test.
pub async fn fresh_db(tag: &str) -> mongodb::Database {
    let name = format!(
        "t_{}_{}",
        tag,
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    client().await.database(&name)
}

/// The project's virtualenv Python (pymongo, boto3, awscli installed).
pub fn python() -> std::path::PathBuf {
    grids3::devdb::ensure_venv().expect("virtualenv")
}

/// Deterministic pseudo-random bytes.
pub fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}
