//! The local database: one mechanism that gives the run command, the tests, the benchmark and
//! CI a real MongoDB-compatible server on a machine that has none.
//!
//! 1. `MONGODB_URI` set: use it, start nothing.
//! 2. A `mongod` on `PATH`: start it on a free loopback port with a temporary dbpath as a
//!    single-node replica set.
//! 3. Otherwise: install SecantusDB (PyPI `secantusdb`, pinned in `requirements.txt`) into
//!    the project's `.venv` and start it.
//!
//! A started server runs under a tiny shell watchdog that holds the read end of a pipe from this
//! process: when this process ends, however it ends, the pipe closes and the watchdog kills the
//! server by its pid. Dropping [`LocalDb`] closes the pipe too, and waits.

use std::fs::File;
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
    /// The data directory's lock, held while this process serves it.
    _lock: Option<std::fs::File>,
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
                    _lock: None,
                });
            }
        }
        Self::start_server(free_port()?, storage).await
    }

    /// Starts a server of its own (never `MONGODB_URI`) on `port`: tests use it to stop a
    /// database and start it again on the same port and data directory.
    pub async fn start_server(port: u16, storage: Storage) -> Result<Self> {
        let lock = match &storage {
            Storage::Dir(d) => Some(lock_dir(d)?),
            Storage::Ephemeral => None,
        };
        let mut db = match which("mongod") {
            Some(mongod) => start_mongod(&mongod, port, storage, lock.as_ref()).await?,
            None => start_secantus(port, storage, lock.as_ref()).await?,
        };
        db._lock = lock;
        Ok(db)
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

/// Takes `dir`'s lock file (`grids3.lock`, holding the pid), so that a second `--local-db`
/// start on the same directory ends with one line naming the process that serves it, instead
/// of the database server's own lock error. The lock is the kernel's (`flock`): it goes with
/// the process, however it ends, so a crash leaves nothing stale behind.
fn lock_dir(dir: &Path) -> Result<std::fs::File> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("grids3.lock");
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim().to_owned();
            let alive = process_alive(&holder);
            // A grids3 that is gone leaves its database server stopping (it holds the lock
            // until it has): wait for that, as a restart right after a stop would.
            let deadline = Instant::now() + Duration::from_secs(20);
            let mut free = false;
            while !alive && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
                if file.try_lock().is_ok() {
                    free = true;
                    break;
                }
            }
            if !free {
                let who = match (holder.is_empty(), alive) {
                    (true, _) => "another process".to_owned(),
                    (false, true) => format!("another grids3 (pid {holder})"),
                    (false, false) => {
                        format!("the database server of a stopped grids3 (pid {holder})")
                    }
                };
                bail!(
                    "{} is in use by {who}: stop it first, or use that one",
                    display_dir(dir)
                );
            }
        }
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("locking {}", path.display()))
        }
    }
    use std::io::{Seek, Write};
    file.set_len(0)?;
    file.seek(std::io::SeekFrom::Start(0))?;
    write!(file, "{}", std::process::id())?;
    Ok(file)
}

/// Whether a process with this pid runs (`kill -0`, which works where there is no `/proc`).
pub fn process_alive(pid: &str) -> bool {
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        // The shell's builtin: a minimal image may have no /bin/kill.
        && Command::new("sh")
            .args(["-c", &format!("kill -0 {pid}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// `dir` relative to the working directory when it is under it (`./data/db`), as a user
/// typed nothing longer.
fn display_dir(dir: &Path) -> String {
    std::env::current_dir()
        .ok()
        .and_then(|cwd| {
            dir.strip_prefix(cwd)
                .ok()
                .map(|r| format!("./{}", r.display()))
        })
        .unwrap_or_else(|| dir.display().to_string())
}

/// The project's root directory (holds `requirements.txt`, `requirements-dev.txt` and `.venv`).
pub fn project_dir() -> PathBuf {
    std::env::var_os("GRIDS3_PROJECT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// Which Python packages the project's `.venv` must hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tools {
    /// What the run command needs: the local database (`requirements.txt`, about 145 MB).
    Server,
    /// Everything the tests drive as well (`requirements-dev.txt`, which includes the server's
    /// file): pymongo, boto3, awscli, Playwright, the NATS server...
    Dev,
}

impl Tools {
    fn files(self) -> &'static [&'static str] {
        match self {
            Tools::Server => &["requirements.txt"],
            Tools::Dev => &["requirements.txt", "requirements-dev.txt"],
        }
    }

    fn stamp(self) -> &'static str {
        match self {
            Tools::Server => "grids3-server.txt",
            Tools::Dev => "grids3-dev.txt",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Tools::Server => "the local database (SecantusDB)",
            Tools::Dev => "the test tools (pymongo, boto3, awscli, Playwright, NATS)",
        }
    }
}

/// The project virtualenv's Python with every test tool installed ([`Tools::Dev`]).
pub fn ensure_venv() -> Result<PathBuf> {
    ensure_venv_for(Tools::Dev)
}

/// The project virtualenv's Python, created and filled with `tools` when it is missing or the
/// requirements changed since it was filled. The run command asks for [`Tools::Server`] only
/// (issue 59: a first start installed the whole test toolset, 624 MB, with 100 lines of pip
/// output); the test command for [`Tools::Dev`]. One line says what is installing; pip's own
/// output is shown only when it fails. Callers in several threads or processes take turns (a
/// lock file beside the venv), so pip never runs twice at once on one venv.
pub fn ensure_venv_for(tools: Tools) -> Result<PathBuf> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let dir = project_dir();
    let venv = dir.join(".venv");
    let python = venv.join("bin/python");
    let mut reqs = String::new();
    for f in tools.files() {
        let path = dir.join(f);
        reqs.push_str(
            &std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?,
        );
    }
    let stamp = venv.join(tools.stamp());
    let ready =
        || python.exists() && std::fs::read_to_string(&stamp).ok().as_deref() == Some(&reqs);
    if ready() {
        return Ok(python);
    }
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let lock = File::create(dir.join(".venv.lock"))
        .with_context(|| format!("creating {}", dir.join(".venv.lock").display()))?;
    lock.lock().context("locking .venv.lock")?;
    if ready() {
        return Ok(python);
    }
    eprintln!(
        "grids3: installing {} into {} (the first time takes a minute or two)...",
        tools.what(),
        venv.display()
    );
    let started = Instant::now();
    if !python.exists() {
        run_quiet(Command::new("python3").arg("-m").arg("venv").arg(&venv))?;
    }
    let main_file = dir.join(tools.files().last().expect("a requirements file"));
    run_quiet(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--progress-bar",
                "off",
                "-r",
            ])
            .arg(&main_file),
    )?;
    std::fs::write(&stamp, &reqs)?;
    if tools == Tools::Dev {
        // requirements-dev.txt includes requirements.txt: the server's tools are in too.
        let server: String = Tools::Server
            .files()
            .iter()
            .map(|f| std::fs::read_to_string(dir.join(f)).unwrap_or_default())
            .collect();
        std::fs::write(venv.join(Tools::Server.stamp()), server)?;
    }
    eprintln!(
        "grids3: installed in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(python)
}

/// Runs `cmd` with its output captured, shown only when it fails.
fn run_quiet(cmd: &mut Command) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
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

/// Starts `program args` under the watchdog; returns the watchdog and the server's pid. With
/// `hold`, the server holds a copy of that file (the data directory's lock, on its fd 4) for
/// as long as it runs: a directory stays locked until its server has stopped, even when this
/// process is gone first.
fn spawn_watched(
    program: &Path,
    args: &[String],
    log: &Path,
    hold: Option<&File>,
) -> Result<(Child, u32)> {
    // Background jobs of a non-interactive sh read /dev/null, so the pipe is kept on fd 3. The
    // SIGCONT after the SIGTERM ends a server that a test left stopped (a stopped process
    // holds a SIGTERM until it is continued); a server still there 5 s later (SecantusDB's
    // graceful shutdown can wait on clients that stay connected) is killed.
    // The held file comes in as stderr, moves to fd 4 (which the server inherits) and the
    // shell lets go of it once the server is started, so that only the server holds it.
    const SCRIPT: &str = r#"exec 3<&0
if [ -n "$GRIDS3_WATCH_LOG" ]; then exec 4>&2 2>"$GRIDS3_WATCH_LOG"; fi
"$@" </dev/null &
pid=$!
exec 4>&-
echo "$pid"
( cat <&3 >/dev/null; kill "$pid" 2>/dev/null; kill -CONT "$pid" 2>/dev/null; sleep 5; kill -9 "$pid" 2>/dev/null ) &
wait "$pid""#;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(SCRIPT)
        .arg("sh")
        .arg(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    match hold {
        Some(f) => cmd.env("GRIDS3_WATCH_LOG", log).stderr(f.try_clone()?),
        None => cmd
            .env_remove("GRIDS3_WATCH_LOG")
            .stderr(std::fs::File::create(log)?),
    };
    let mut child = cmd
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

async fn start_secantus(port: u16, storage: Storage, hold: Option<&File>) -> Result<LocalDb> {
    let python = ensure_venv_for(Tools::Server)?;
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
    let (mut watchdog, pid) = spawn_watched(&python, &args, &log, hold)?;
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    let mut db = LocalDb {
        uri,
        kind: "SecantusDB",
        watchdog: None,
        server_pid: Some(pid),
        _tmp: None,
        _lock: None,
    };
    let ready = wait_ready(&db.uri, &log, &mut watchdog).await;
    db.watchdog = Some(watchdog);
    ready.map(|_| db)
}

async fn start_mongod(
    mongod: &Path,
    port: u16,
    storage: Storage,
    hold: Option<&File>,
) -> Result<LocalDb> {
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
    let (mut watchdog, pid) = spawn_watched(mongod, &args, &log, hold)?;
    let uri = format!("mongodb://127.0.0.1:{port}/?directConnection=true");
    let mut db = LocalDb {
        uri,
        kind: "mongod",
        watchdog: None,
        server_pid: Some(pid),
        _tmp: tmp,
        _lock: None,
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
