//! The local database: one mechanism that gives the run command, the tests, the benchmark and
//! CI a real MongoDB-compatible server on a machine that has none.
//!
//! 1. `MONGODB_URI` set: use it, start nothing.
//! 2. A `mongod` on `PATH`: start it on a free loopback port with a temporary dbpath as a
//!    single-node replica set.
//! 3. Otherwise: install SecantusDB (PyPI `secantusdb`, pinned in `requirements-dev.txt`) into
//!    the project's `.venv` and start it.
//!
//! A started server runs under a tiny shell watchdog that holds the read end of a pipe from this
//! process: when this process ends, however it ends, the pipe closes and the watchdog kills the
//! server by its pid. Dropping [`LocalDb`] closes the pipe too, and waits.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mongodb::bson::doc;

/// Where the server's data lives.
#[derive(Clone, Debug)]
pub enum Storage {
    /// In memory (a temporary directory removed at shutdown): tests.
    Ephemeral,
    /// A directory that survives restarts: the run command.
    Dir(PathBuf),
}

/// A database to connect to, and the server process when this process started one.
#[derive(Debug)]
pub struct LocalDb {
    /// Connection string for the database.
    pub uri: String,
    /// What is serving it, for the start-up message.
    pub kind: &'static str,
    watchdog: Option<Child>,
    server_pid: Option<u32>,
    _tmp: Option<tempdir::TempDir>,
}

impl LocalDb {
    /// Finds or starts a database, as the module documentation describes.
    pub async fn start(storage: Storage) -> Result<Self> {
        if let Ok(uri) = std::env::var("MONGODB_URI") {
            if !uri.is_empty() {
                return Ok(Self {
                    uri,
                    kind: "MONGODB_URI",
                    watchdog: None,
                    server_pid: None,
                    _tmp: None,
                });
            }
        }
        Self::start_server(free_port()?, storage).await
    }

    /// Starts a server of its own (never `MONGODB_URI`) on `port`: tests use it to stop a
    /// database and start it again on the same port and data directory.
    pub async fn start_server(port: u16, storage: Storage) -> Result<Self> {
        if let Some(mongod) = which("mongod") {
            return start_mongod(&mongod, port, storage).await;
        }
        start_secantus(port, storage).await
    }

    /// The port of the server this process started.
    pub fn port(&self) -> Option<u16> {
        self.uri
            .strip_prefix("mongodb://127.0.0.1:")
            .and_then(|r| r.split(['/', '?']).next())
            .and_then(|p| p.parse().ok())
    }

    /// The pid of the server this process started, if any.
    pub fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }
}

impl Drop for LocalDb {
    fn drop(&mut self) {
        if let Some(mut w) = self.watchdog.take() {
            // Closing the watchdog's stdin makes it kill the server by pid and exit.
            drop(w.stdin.take());
            let _ = w.wait();
        }
    }
}

/// The project's root directory (holds `requirements-dev.txt` and `.venv`).
pub fn project_dir() -> PathBuf {
    std::env::var_os("GRIDS3_PROJECT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The project virtualenv's Python, created and filled from `requirements-dev.txt` when it is
/// missing or the requirements changed since it was filled.
pub fn ensure_venv() -> Result<PathBuf> {
    let dir = project_dir();
    let venv = dir.join(".venv");
    let python = venv.join("bin/python");
    let reqs_path = dir.join("requirements-dev.txt");
    let reqs = std::fs::read_to_string(&reqs_path)
        .with_context(|| format!("reading {}", reqs_path.display()))?;
    let stamp = venv.join("grids3-requirements.txt");
    if python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&reqs) {
        return Ok(python);
    }
    eprintln!("grids3: installing Python tools into {}", venv.display());
    if !python.exists() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&reqs_path))?;
    std::fs::write(&stamp, reqs)?;
    Ok(python)
}

fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(bin))
            .find(|p| p.is_file())
    })
}

/// Starts `program args` under the watchdog; returns the watchdog and the server's pid.
fn spawn_watched(program: &Path, args: &[String], log: &Path) -> Result<(Child, u32)> {
    // Background jobs of a non-interactive sh read /dev/null, so the pipe is kept on fd 3. The
    // SIGCONT after the SIGTERM ends a server that a test left stopped (a stopped process
    // holds a SIGTERM until it is continued); a server still there 5 s later (SecantusDB's
    // graceful shutdown can wait on clients that stay connected) is killed.
    const SCRIPT: &str = r#"exec 3<&0
"$@" </dev/null &
pid=$!
echo "$pid"
( cat <&3 >/dev/null; kill "$pid" 2>/dev/null; kill -CONT "$pid" 2>/dev/null; sleep 5; kill -9 "$pid" 2>/dev/null ) &
wait "$pid""#;
    let log_file = std::fs::File::create(log)?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(SCRIPT)
        .arg("sh")
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .with_context(|| format!("starting {}", program.display()))?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("piped")).read_line(&mut line)?;
    let pid = line.trim().parse().context("reading the server's pid")?;
    Ok((child, pid))
}

async fn wait_ready(uri: &str, log: &Path, watchdog: &mut Child) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    let client = mongodb::Client::with_uri_str(uri).await?;
    loop {
        let ping = tokio::time::timeout(
            Duration::from_secs(2),
            client.database("admin").run_command(doc! {"ping": 1}),
        )
        .await;
        if matches!(ping, Ok(Ok(_))) {
            return Ok(());
        }
        if let Some(status) = watchdog.try_wait()? {
            let tail = std::fs::read_to_string(log).unwrap_or_default();
            bail!("the database server exited ({status}) before it was ready:\n{tail}");
        }
        if Instant::now() > deadline {
            bail!(
                "the database server did not answer within 120 s; see {}",
                log.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn start_secantus(port: u16, storage: Storage) -> Result<LocalDb> {
    let python = ensure_venv()?;
    let path = match &storage {
        Storage::Ephemeral => ":memory:".to_owned(),
        Storage::Dir(d) => {
            std::fs::create_dir_all(d)?;
            d.display().to_string()
        }
    };
    // WiredTiger's 1 GB default cache overflows (WT_CACHE_FULL) under a few 256 MiB uploads
    // in flight; these machines have RAM to spare.
    let cache = std::env::var("GRIDS3_DEVDB_CACHE").unwrap_or_else(|_| "4G".into());
    let args: Vec<String> = [
        "-m",
        "secantus",
        "--host",
        "127.0.0.1",
        "--port",
        &port.to_string(),
        "--storage-path",
        &path,
        "--log-level",
        "WARNING",
        "--cache-size",
        &cache,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut args = args;
    if matches!(storage, Storage::Dir(_)) {
        // Without it SecantusDB loses acknowledged writes when it is killed (see
        // ../shared/SECANTUSDB.md); a persistent database must keep them.
        args.push("--sync-on-commit".to_owned());
    }
    let log = std::env::temp_dir().join(format!("grids3-secantus-{port}.log"));
    let (mut watchdog, pid) = spawn_watched(&python, &args, &log)?;
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    let mut db = LocalDb {
        uri,
        kind: "SecantusDB",
        watchdog: None,
        server_pid: Some(pid),
        _tmp: None,
    };
    let ready = wait_ready(&db.uri, &log, &mut watchdog).await;
    db.watchdog = Some(watchdog);
    ready.map(|_| db)
}

async fn start_mongod(mongod: &Path, port: u16, storage: Storage) -> Result<LocalDb> {
    let (tmp, dbpath) = match storage {
        Storage::Ephemeral => {
            let t = tempdir::TempDir::new("grids3-mongod")?;
            let p = t.path().to_path_buf();
            (Some(t), p)
        }
        Storage::Dir(d) => {
            std::fs::create_dir_all(&d)?;
            (None, d)
        }
    };
    let args: Vec<String> = vec![
        "--port".into(),
        port.to_string(),
        "--bind_ip".into(),
        "127.0.0.1".into(),
        "--dbpath".into(),
        dbpath.display().to_string(),
        "--replSet".into(),
        "rs0".into(),
        "--quiet".into(),
    ];
    let log = std::env::temp_dir().join(format!("grids3-mongod-{port}.log"));
    let (mut watchdog, pid) = spawn_watched(mongod, &args, &log)?;
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    let mut db = LocalDb {
        uri,
        kind: "mongod",
        watchdog: None,
        server_pid: Some(pid),
        _tmp: tmp,
    };
    let ready = wait_ready(&db.uri, &log, &mut watchdog).await;
    db.watchdog = Some(watchdog);
    ready?;
    // A fresh dbpath needs the replica set initiated; a reused one answers AlreadyInitialized.
    let client = mongodb::Client::with_uri_str(&db.uri).await?;
    let admin = client.database("admin");
    let _ = admin
        .run_command(doc! {"replSetInitiate": {"_id": "rs0", "members": [{"_id": 0, "host": format!("127.0.0.1:{port}")}]}})
        .await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hello = admin.run_command(doc! {"hello": 1}).await?;
        if hello.get_bool("isWritablePrimary").unwrap_or(false) {
            return Ok(db);
        }
        if Instant::now() > deadline {
            bail!("mongod did not become primary within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

mod tempdir {
    //! A temporary directory removed on drop (for mongod's dbpath).
    use std::path::{Path, PathBuf};

    #[derive(Debug)]
    pub struct TempDir(PathBuf);

    impl TempDir {
        pub fn new(prefix: &str) -> std::io::Result<Self> {
            let p = std::env::temp_dir().join(format!("{prefix}-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&p)?;
            Ok(Self(p))
        }
        pub fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
