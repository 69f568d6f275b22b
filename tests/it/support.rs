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
            // As the binary's runtime (`WORKER_STACK` in main.rs): request futures are deep.
            .thread_stack_size(8 << 20)
            .enable_all()
            .build()
            .expect("runtime")
    })
}

/// Runs a test body on the shared runtime, and fails it if it runs past [`TEST_LIMIT`]: a
/// hang then names itself and the fail points it waits at, instead of holding the run until
/// CI's own limit ends it with nothing said (stop 72).
pub fn run<F: Future<Output = ()> + Send + 'static>(f: F) {
    log_answer_errors();
    let name = std::thread::current().name().unwrap_or("a test").to_owned();
    let limit = test_limit();
    runtime().block_on(async move {
        let task = tokio::spawn(f);
        let abort = task.abort_handle();
        match tokio::time::timeout(limit, task).await {
            Ok(done) => done.expect("test task panicked"),
            Err(_) => {
                abort.abort();
                let armed = grids3::failpoint::armed();
                eprintln!("HANG: {name} ran past {limit:?}; fail points armed: {armed:?}");
                panic!("{name} ran past {limit:?} and was stopped; fail points armed: {armed:?}");
            }
        }
    });
}

/// How long one test may run: 15 minutes (the longest, the search brute force, take a few
/// minutes on a 2-core machine), or `GRIDS3_TEST_LIMIT_SECS`.
fn test_limit() -> std::time::Duration {
    let secs = std::env::var("GRIDS3_TEST_LIMIT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(900);
    std::time::Duration::from_secs(secs)
}

/// Runs the blocking `f` (a subprocess) from a test. On the shared runtime it runs in
/// `block_in_place`, which hands this worker's queued tasks to another first: the worker's
/// LIFO slot cannot be stolen (tokio#4941), so a gateway task parked there would wait for
/// the subprocess that waits for it.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// Why a gateway answered 409 OperationAborted, 500 or 503 (the `grids3::error` warnings),
/// on the test process's stderr, which the test harness does not capture: a test that fails
/// on such an answer on a loaded machine (CI) then shows its cause in the run's output. Races
/// that tests provoke on purpose print a few lines too.
fn log_answer_errors() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                std::env::var("GRIDS3_TEST_LOG").unwrap_or_else(|_| "grids3::error=warn".into()),
            ))
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .try_init();
    });
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
            // With command monitoring, which `s3_raw::health_readiness_and_metrics` checks;
            // the gateways started as processes (`Process`) run without it, the default.
            grids3::metrics::mongodb_client_with_timeout(
                &uri,
                std::time::Duration::from_secs(3),
                true,
            )
            .await
            .expect("client")
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

/// Root credentials of test gateways.
pub const AK: &str = "testroot";
/// Root secret of test gateways.
pub const SK: &str = "testroot-secret-key";

/// A gateway serving on an ephemeral port, over a database of its own.
#[derive(Clone)]
pub struct Gateway {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// Its state.
    pub state: grids3::AppState,
    /// Its database.
    pub db: mongodb::Database,
    /// The server task of a gateway this handle started: dropping the handle stops it and
    /// the gateway's janitor, so that the idle gateways of finished tests do not keep the
    /// shared database busy for the rest of the run. `None` for a handle onto another's.
    pub owned: Option<tokio::task::AbortHandle>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(server) = self.owned.take() {
            server.abort();
            self.state.stop_background();
        }
    }
}

impl Gateway {
    /// `http://127.0.0.1:port`.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// An AWS SDK client for it (path-style), as the root key.
    pub fn sdk(&self) -> aws_sdk_s3::Client {
        self.sdk_as(AK, SK)
    }

    /// An SDK client whose every call gives up after `secs` (for tests that take the database
    /// away: a call stuck on a dead connection then fails instead of hanging the test).
    pub fn sdk_bounded(&self, secs: u64) -> aws_sdk_s3::Client {
        let conf = self
            .sdk()
            .config()
            .to_builder()
            .timeout_config(
                aws_sdk_s3::config::timeout::TimeoutConfig::builder()
                    .operation_timeout(std::time::Duration::from_secs(secs))
                    .build(),
            )
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// An SDK client that never retries: for tests where a retry whose first attempt did (or
    /// did not) land would change what they check.
    pub fn sdk_once(&self) -> aws_sdk_s3::Client {
        let conf = self
            .sdk()
            .config()
            .to_builder()
            .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// An AWS SDK client signing with other credentials.
    pub fn sdk_as(&self, ak: &str, sk: &str) -> aws_sdk_s3::Client {
        let creds = aws_credential_types::Credentials::new(ak, sk, None, None, "test");
        let conf = aws_sdk_s3::Config::builder()
            .behavior_version(aws_sdk_s3::config::BehaviorVersion::latest())
            .region(aws_sdk_s3::config::Region::new("us-east-1"))
            .endpoint_url(self.endpoint())
            .credentials_provider(creds)
            .force_path_style(true)
            .build();
        aws_sdk_s3::Client::from_conf(conf)
    }

    /// Chunk documents in `<bucket>.chunks`.
    pub async fn chunk_count(&self, bucket: &str) -> u64 {
        self.db
            .collection::<mongodb::bson::Document>(&format!("{bucket}.chunks"))
            .count_documents(mongodb::bson::doc! {})
            .await
            .unwrap()
    }

    /// Files documents in `<bucket>.files`.
    pub async fn file_count(&self, bucket: &str) -> u64 {
        self.db
            .collection::<mongodb::bson::Document>(&format!("{bucket}.files"))
            .count_documents(mongodb::bson::doc! {})
            .await
            .unwrap()
    }
}

/// Starts a gateway on a fresh database (`db_name` to share one between instances).
pub async fn gateway_on(db_name: &str) -> Gateway {
    gateway_with(db_name, |_| {}).await
}

/// Starts a gateway with a configuration adjusted by `tweak`.
pub async fn gateway_with(
    db_name: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> Gateway {
    // As the binary runs: transactions on a client of their own (`storage::meta::txn`), so
    // that every test runs each transaction's statements on the client that began it.
    gateway_with_client(client().await, db_name, |c| {
        c.mongodb_uri = Some(db().uri.clone());
        tweak(c)
    })
    .await
}

/// Starts a gateway over `client`'s server.
pub async fn gateway_with_client(
    client: mongodb::Client,
    db_name: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> Gateway {
    let mut config = grids3::config::Config::for_tests(AK, SK);
    config.janitor_interval = 1;
    // These gateways serve plain HTTP, and the SSE-C tests send keys over it; `tls.rs` tests
    // the refusal without the flag, and SSE-C over HTTPS.
    config.allow_insecure_sse_c = true;
    tweak(&mut config);
    config.database = db_name.to_owned();
    // As the binary does (main.rs, "waiting for MongoDB"): a start-up that meets a transient
    // database error (under the suite's load, the driver's server monitor timing out) tries
    // again instead of failing the test.
    let mut tries = 0;
    let state = loop {
        match grids3::start(config.clone(), client.clone()).await {
            Ok(s) => break s,
            Err(e) if tries < 5 => {
                tries += 1;
                eprintln!("gateway start-up failed ({e:#}); trying again");
                tokio::time::sleep(std::time::Duration::from_millis(500 * tries)).await;
            }
            Err(e) => panic!("gateway state: {e:?}"),
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = grids3::app(state.clone());
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap();
    });
    Gateway {
        addr,
        state,
        db: client.database(db_name),
        owned: Some(server.abort_handle()),
    }
}

/// Starts a gateway on a fresh database.
pub async fn gateway(tag: &str) -> Gateway {
    let name = format!(
        "g_{}_{}",
        tag,
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    gateway_on(&name).await
}

/// A SigV4-signed raw request (for what the SDK will not send). `payload_hash` defaults to the
/// body's SHA-256; `date` defaults to now.
pub struct Raw<'a> {
    pub method: &'a str,
    pub path_and_query: &'a str,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub payload_hash: Option<String>,
    pub date: Option<chrono::DateTime<chrono::Utc>>,
    pub secret: &'a str,
    pub access_key: &'a str,
    pub host: Option<String>,
    /// The service the credential scope names (`s3`; `iam` for the IAM Query API).
    pub service: &'a str,
}

impl<'a> Raw<'a> {
    pub fn new(method: &'a str, path_and_query: &'a str) -> Self {
        Self {
            method,
            path_and_query,
            headers: vec![],
            body: vec![],
            payload_hash: None,
            date: None,
            secret: SK,
            access_key: AK,
            host: None,
            service: "s3",
        }
    }

    /// The headers to send, including Authorization.
    pub fn signed_headers(&self, gw: &Gateway) -> Vec<(String, String)> {
        use grids3::auth::sigv4;
        let date = self.date.unwrap_or_else(chrono::Utc::now);
        let amz_date = date.format("%Y%m%dT%H%M%SZ").to_string();
        let hash = self
            .payload_hash
            .clone()
            .unwrap_or_else(|| sigv4::sha256_hex(&self.body));
        let mut headers = self.headers.clone();
        headers.push((
            "host".into(),
            self.host.clone().unwrap_or_else(|| gw.addr.to_string()),
        ));
        headers.push(("x-amz-date".into(), amz_date.clone()));
        headers.push(("x-amz-content-sha256".into(), hash.clone()));
        headers.sort();
        let (path, query) = self
            .path_and_query
            .split_once('?')
            .unwrap_or((self.path_and_query, ""));
        let signed: Vec<String> = headers.iter().map(|(k, _)| k.clone()).collect();
        let signed = signed.join(";");
        let cr = sigv4::canonical_request(
            self.method,
            &sigv4::canonical_uri(path),
            &sigv4::canonical_query(&sigv4::parse_query(Some(query))),
            &headers,
            &signed,
            &hash,
        );
        let scope = format!("{}/us-east-1/{}/aws4_request", &amz_date[..8], self.service);
        let key = sigv4::signing_key(self.secret, &amz_date[..8], "us-east-1", self.service);
        let sig = sigv4::sign(&key, &sigv4::string_to_sign(&amz_date, &scope, &cr));
        headers.push((
            "authorization".into(),
            format!(
                "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={signed}, Signature={sig}",
                self.access_key
            ),
        ));
        headers
    }

    /// Sends it with reqwest.
    pub async fn send(&self, gw: &Gateway) -> reqwest::Response {
        let client = reqwest::Client::new();
        let mut rb = client.request(
            self.method.parse().unwrap(),
            format!("{}{}", gw.endpoint(), self.path_and_query),
        );
        for (k, v) in self.signed_headers(gw) {
            if k != "host" || self.host.is_some() {
                rb = rb.header(k, v);
            }
        }
        rb.body(self.body.clone()).send().await.unwrap()
    }
}

/// The `<Code>` of an S3 error body.
pub fn error_code(body: &str) -> String {
    body.split("<Code>")
        .nth(1)
        .and_then(|s| s.split("</Code>").next())
        .unwrap_or("")
        .to_owned()
}

/// Runs `tests/py/<script>` with the gateway's endpoint and the root credentials followed by
/// `extra`, asserts it succeeded and printed `<tag>: all checks passed`, and returns stdout.
pub async fn run_py_checks(gw: &Gateway, script: &str, tag: &str, extra: &[&str]) -> String {
    // The scripts also drive curl; a machine without it gets it here, like chromium.
    apt_tool("curl", "curl").expect("curl is needed by the Python checks");
    let mut args = vec![gw.endpoint(), AK.to_owned(), SK.to_owned()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let stdout = run_py(script, args).await;
    println!("{stdout}");
    assert!(
        stdout.contains(&format!("{tag}: all checks passed")),
        "{script} did not finish its checks; its last lines:\n{}",
        last_lines(&stdout, 15)
    );
    stdout
}

/// The last `n` lines of `text`.
fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `tests/py/<script>` with `args` off the async workers, asserts it succeeded, and
/// returns its stdout.
pub async fn run_py(script: &str, args: Vec<String>) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/py")
        .join(script);
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .arg(path)
            .args(args)
            .output()
            .expect("python")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    // stderr (the failed check, or a traceback) first: CI shows only the head and the tail of
    // a long panic message, and a script's stdout is hundreds of "ok:" lines.
    assert!(
        out.status.success(),
        "{script} failed:\n{}\n--- its last lines of stdout:\n{}",
        String::from_utf8_lossy(&out.stderr),
        last_lines(&stdout, 15)
    );
    stdout
}

/// A gateway over a database server of its own (`uri`), with its own client whose
/// server-selection timeout is short, so an outage shows quickly.
pub async fn gateway_on_uri(
    uri: &str,
    db_name: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> Gateway {
    let client =
        grids3::metrics::mongodb_client_with_timeout(uri, std::time::Duration::from_secs(2), true)
            .await
            .expect("client");
    gateway_with_client(client, db_name, tweak).await
}

/// A gateway whose MongoDB client counts the commands it sends to its database (command
/// monitoring), with the janitor slowed down so that only requests issue commands.
pub async fn gateway_counting(
    tag: &str,
) -> (Gateway, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    gateway_counting_with(tag, |_| {}).await
}

/// [`gateway_counting`] with a configuration adjusted by `tweak`.
pub async fn gateway_counting_with(
    tag: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> (Gateway, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    let (gw, counters) = gateway_counting_split(tag, tweak).await;
    (gw, counters.all)
}

/// Command counters of a [`gateway_counting_split`] gateway.
pub struct Counters {
    /// Every command the requests sent to the gateway's database (background tasks aside).
    pub all: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Amortized commands: cache refreshes (`find` on `__metastore`, the bucket cache, on
    /// `__keyring`, the key cache, on `__accesskeys`, the access-key cache, and on
    /// `__notify_listeners`, the listener registry) and new pools of write registrations (`insert` into
    /// `__writes`). Caches last a second from their refresh and a pool retires after a second
    /// without writes, so a count catches one or not depending on when that second ran out,
    /// whatever the request.
    pub lookups: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// The `__keyring` finds alone, so that a test can check the key cache is used at all.
    pub keyring: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Commands of background tasks (settling, pool and lock heartbeats, the janitor), which
    /// `all` leaves out.
    pub background: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Reads of chunks (`find` and `getMore` on a `.chunks` collection), counted in `all` too:
    /// a streaming GET reads its next chunks as its client takes the body, whenever that is.
    pub chunk_reads: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Every command counted in `all`, as `name collection` (for a failing count's message).
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

/// [`gateway_counting_with`] that also counts cache refreshes apart (see [`Counters`]).
pub async fn gateway_counting_split(
    tag: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> (Gateway, Counters) {
    use mongodb::event::command::CommandEvent;
    use std::sync::atomic::{AtomicU64, Ordering};
    let name = format!(
        "g_{}_{}",
        tag,
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let count = std::sync::Arc::new(AtomicU64::new(0));
    let lookups = std::sync::Arc::new(AtomicU64::new(0));
    let keyring = std::sync::Arc::new(AtomicU64::new(0));
    let background = std::sync::Arc::new(AtomicU64::new(0));
    let bg = background.clone();
    let chunk_reads = std::sync::Arc::new(AtomicU64::new(0));
    let cr = chunk_reads.clone();
    let log: std::sync::Arc<std::sync::Mutex<Vec<String>>> = std::sync::Arc::default();
    let lg = log.clone();
    let mut opts = mongodb::options::ClientOptions::parse(&db().uri)
        .await
        .unwrap();
    let (c, l, k, db_name) = (
        count.clone(),
        lookups.clone(),
        keyring.clone(),
        name.clone(),
    );
    opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
        move |ev: CommandEvent| {
            if let CommandEvent::Started(e) = ev {
                // Only the requests' own commands: the driver reports a command from the
                // task that sends it, and background work (janitor, settling, pool and lock
                // heartbeats) runs in tasks that `grids3::background` names.
                // `bulkWrite` (a small PUT's chunk and files document) is sent to `admin`;
                // this client serves this gateway alone, so every one is its own.
                let ours = e.db == db_name || e.command_name == "bulkWrite";
                // The notification dispatcher's and listeners' own pacing (the lead, the
                // targets, the change streams) is counted nowhere: no request queues it.
                let job = grids3::background::current();
                let ours = ours && !matches!(job, Some("notify" | "listen"));
                if ours && job.is_some() {
                    bg.fetch_add(1, Ordering::SeqCst);
                } else if ours {
                    c.fetch_add(1, Ordering::SeqCst);
                    let target = ["find", "insert", "update", "delete", "aggregate", "getMore"]
                        .iter()
                        .find_map(|k| e.command.get(*k).map(|v| v.to_string()))
                        .unwrap_or_default();
                    lg.lock()
                        .unwrap()
                        .push(format!("{} {target}", e.command_name));
                    let read_of = e
                        .command
                        .get_str("find")
                        .or_else(|_| e.command.get_str("collection"));
                    if read_of.is_ok_and(|c| c.ends_with(".chunks")) {
                        cr.fetch_add(1, Ordering::SeqCst);
                    }
                    let find = e.command.get_str("find");
                    // A new pool of write registrations (one per 64 writes, or after a
                    // second without writes: a slow machine's pause between two PUTs).
                    let pool = e.command.get_str("insert") == Ok("__writes");
                    let cache = [
                        "__metastore",
                        "__keyring",
                        "__accesskeys",
                        "__notify_listeners",
                        // The credentials cache's principals (an IAM user, its groups, its
                        // policies), refreshed like keys.
                        "__iamusers",
                        "__iamgroups",
                        "__iampolicies",
                    ]
                    .iter()
                    .any(|c| find == Ok(*c));
                    // The credentials cache's reading of the keys' version counter (at most
                    // once a second, by whichever request finds the last reading older).
                    let keys_version = find == Ok("__infostore")
                        && e.command
                            .get_document("filter")
                            .is_ok_and(|f| f.get_str("_id") == Ok("access-keys-version"));
                    if cache || pool || keys_version {
                        l.fetch_add(1, Ordering::SeqCst);
                    }
                    if find == Ok("__keyring") {
                        k.fetch_add(1, Ordering::SeqCst);
                    }
                    if std::env::var_os("GRIDS3_TEST_PRINT_COMMANDS").is_some() {
                        eprintln!(
                            "command {} {:?}",
                            e.command_name,
                            e.command
                                .get("find")
                                .or(e.command.get("update"))
                                .or(e.command.get("insert"))
                                .or(e.command.get("delete"))
                        );
                    }
                }
            }
        },
    ));
    let client = mongodb::Client::with_options(opts).unwrap();
    let gw = gateway_with_client(client, &name, |c| {
        c.janitor_interval = 3600;
        tweak(c);
    })
    .await;
    (
        gw,
        Counters {
            all: count,
            lookups,
            keyring,
            background,
            chunk_reads,
            log,
        },
    )
}

/// The real `grids3` binary, serving on a free port over the test database `db_name`.
pub struct Process {
    /// The child process.
    pub child: std::process::Child,
    /// Where it listens.
    pub addr: std::net::SocketAddr,
}

impl Process {
    /// Starts the binary with extra environment variables and waits until it is ready.
    pub async fn start(db_name: &str, env: &[(&str, &str)]) -> Process {
        Self::start_logging(db_name, env, None).await
    }

    /// [`Process::start`], with its stdout and stderr (the log) written to `log`.
    pub async fn start_logging(
        db_name: &str,
        env: &[(&str, &str)],
        log: Option<&std::path::Path>,
    ) -> Process {
        let (mut cmd, addr) = Self::command(db_name, env);
        if let Some(log) = log {
            let f = std::fs::File::create(log).unwrap();
            cmd.stdout(f.try_clone().unwrap()).stderr(f);
        }
        // Owned by `Process` at once, so that it is killed and waited for on every path.
        let p = Process {
            child: cmd.spawn().expect("grids3 binary"),
            addr,
        };
        p.wait_ready(&reqwest::Client::new(), "http").await;
        p
    }

    /// [`Process::start`] of a gateway serving HTTPS (GRIDS3_TLS_CERT / GRIDS3_TLS_KEY in
    /// `env`), waiting for it with a client that trusts only `ca_pem`.
    pub async fn start_https(db_name: &str, env: &[(&str, &str)], ca_pem: &str) -> Process {
        let (mut cmd, addr) = Self::command(db_name, env);
        let p = Process {
            child: cmd.spawn().expect("grids3 binary"),
            addr,
        };
        p.wait_ready(&https_client(ca_pem), "https").await;
        p
    }

    /// The binary's command line on a free port, over the shared database.
    fn command(
        db_name: &str,
        env: &[(&str, &str)],
    ) -> (std::process::Command, std::net::SocketAddr) {
        let port = grids3::devdb::free_port().unwrap();
        let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"));
        cmd.env("MONGODB_URI", &db().uri)
            .env("GRIDS3_DATABASE", db_name)
            .env("GRIDS3_LISTEN", addr.to_string())
            .env("GRIDS3_ROOT_ACCESS_KEY", AK)
            .env("GRIDS3_ROOT_SECRET_KEY", SK)
            .env("GRIDS3_JANITOR_INTERVAL", "1")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        (cmd, addr)
    }

    async fn wait_ready(&self, client: &reqwest::Client, scheme: &str) {
        let url = format!("{scheme}://{}/_grids3/ready", self.addr);
        for _ in 0..300 {
            if let Ok(r) = client.get(&url).send().await {
                if r.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("grids3 did not become ready");
    }

    /// A gateway handle for clients (its state is the in-process `peer`'s, for the database).
    pub fn as_gateway(&self, peer: &Gateway) -> Gateway {
        Gateway {
            addr: self.addr,
            state: peer.state.clone(),
            db: peer.db.clone(),
            owned: None,
        }
    }

    /// SIGKILL, and wait for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `f` every 100 ms until it is true or `secs` pass; returns whether it became true.
pub async fn eventually<F, Fut>(secs: u64, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if f().await {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    f().await
}

/// A command-line tool the tests drive (chromium, curl): found on PATH, or installed from
/// Debian's `package` when this runs as root with apt (as on CI). `None`, with the reason
/// printed, only where it cannot be installed.
pub fn apt_tool(binary: &str, package: &str) -> Option<std::path::PathBuf> {
    type Found = std::collections::HashMap<String, Option<std::path::PathBuf>>;
    static FOUND: std::sync::Mutex<Option<Found>> = std::sync::Mutex::new(None);
    let mut found = FOUND.lock().unwrap_or_else(|e| e.into_inner());
    let found = found.get_or_insert_with(Found::new);
    if let Some(f) = found.get(binary) {
        return f.clone();
    }
    let which = |name: &str| {
        std::env::var_os("PATH").and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|c| c.is_file())
        })
    };
    let mut got = which(binary);
    if got.is_none() {
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
        if !root || which("apt-get").is_none() {
            println!(
                "{binary} is not installed and cannot be installed here (needs root and apt-get)"
            );
        } else {
            let install = || {
                std::process::Command::new("apt-get")
                    .args(["install", "-y", "-q", package])
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .output()
                    .is_ok_and(|o| o.status.success())
            };
            let ok = install()
                || (std::process::Command::new("apt-get")
                    .args(["update", "-q"])
                    .output()
                    .is_ok_and(|o| o.status.success())
                    && install());
            if !ok {
                println!("apt-get install {package} failed");
            }
            got = which(binary);
        }
    }
    found.insert(binary.to_owned(), got.clone());
    got
}

/// Headless Chromium for the browser tests (see [`apt_tool`]); the caller says it skips when
/// this is `None`. Under `CI=true` a missing Chromium fails the test instead: CI must run the
/// browser checks, never pass them by skipping.
pub fn chromium() -> Option<std::path::PathBuf> {
    required_in_ci(
        apt_tool("chromium", "chromium"),
        "chromium",
        must_not_skip(),
    )
}

/// `found`, or a panic when it is missing and `in_ci`: a test that needs a tool fails in CI
/// rather than skipping.
pub fn required_in_ci(
    found: Option<std::path::PathBuf>,
    tool: &str,
    in_ci: bool,
) -> Option<std::path::PathBuf> {
    if found.is_none() && in_ci {
        panic!("CI=true: {tool} is missing and could not be installed; the tests that need it must run in CI, not skip");
    }
    found
}

/// Whether this run may not skip a test for a missing tool (`CI=true`, as CI sets it).
pub fn must_not_skip() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1")
}

/// Serves one HTML page on a free loopback port (every path gets it), for browser tests.
pub async fn serve_page(html: String) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let html = std::sync::Arc::new(html);
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = listener.accept().await else {
                return;
            };
            let html = html.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    html.len()
                );
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(html.as_bytes()).await;
            });
        }
    });
    addr
}

/// Loads `url` in headless Chromium, lets its scripts run, and returns the DOM it ends with.
pub async fn chromium_dom(chromium: &std::path::Path, url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(chromium)
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-dev-shm-usage",
            "--virtual-time-budget=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .await
        .expect("chromium runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until no MongoDB command has been counted for 1.6 s: the gateway's start-up janitor
/// pass, the settling of published keys and the retirement of an idle write registration
/// pool (`POOL_IDLE` plus a heartbeat tick and a batch) are over, so a count taken next holds
/// only what the request being measured causes.
pub async fn quiesce(commands: &std::sync::atomic::AtomicU64) {
    use std::sync::atomic::Ordering;
    for _ in 0..100 {
        let a = commands.load(Ordering::SeqCst);
        tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
        if commands.load(Ordering::SeqCst) == a {
            return;
        }
    }
}

/// Runs `cmd`, which must succeed (what it printed to stderr is the failure's message); what
/// it printed to stdout.
pub fn stdout_of(cmd: &mut std::process::Command) -> Vec<u8> {
    let out = blocking(|| cmd.output()).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// Runs `grids3 admin <args>` against `endpoint` as the root key; its JSON answer.
pub fn admin_cli(endpoint: &str, args: &[&str]) -> serde_json::Value {
    let out = stdout_of(
        std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
            .arg("admin")
            .args(args)
            .env("GRIDS3_ENDPOINT", endpoint)
            .env("GRIDS3_ROOT_ACCESS_KEY", AK)
            .env("GRIDS3_ROOT_SECRET_KEY", SK),
    );
    serde_json::from_slice(&out).unwrap()
}

/// Runs `grids3 admin ARGS`, which must fail; returns what it printed (stdout, then stderr).
pub fn admin_cli_failure(endpoint: &str, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"));
    cmd.arg("admin")
        .args(args)
        .env("GRIDS3_ENDPOINT", endpoint)
        .env("GRIDS3_ROOT_ACCESS_KEY", AK)
        .env("GRIDS3_ROOT_SECRET_KEY", SK);
    let out = blocking(|| cmd.output()).unwrap();
    assert!(!out.status.success(), "grids3 admin {args:?} succeeded");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// An HTTPS client that trusts only `ca_pem` (no system roots).
pub fn https_client(ca_pem: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca_pem.as_bytes()).unwrap())
        .build()
        .unwrap()
}

/// Puts `objects` (key, body) into `bucket`, eight at a time.
pub async fn put_many(s3: &aws_sdk_s3::Client, bucket: &str, objects: Vec<(String, Vec<u8>)>) {
    use futures::StreamExt;
    futures::stream::iter(objects)
        .for_each_concurrent(8, |(k, body)| async move {
            s3.put_object()
                .bucket(bucket)
                .key(k)
                .body(aws_sdk_s3::primitives::ByteStream::from(body))
                .send()
                .await
                .unwrap();
        })
        .await;
}

/// Turns versioning on for `bucket`.
pub async fn enable_versioning(s3: &aws_sdk_s3::Client, bucket: &str) {
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// DeleteObjects of `keys` (each without a version) in `bucket`.
pub async fn delete_objects(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    keys: &[String],
) -> aws_sdk_s3::operation::delete_objects::DeleteObjectsOutput {
    let objects = keys
        .iter()
        .map(|k| {
            aws_sdk_s3::types::ObjectIdentifier::builder()
                .key(k)
                .build()
                .unwrap()
        })
        .collect();
    s3.delete_objects()
        .bucket(bucket)
        .delete(
            aws_sdk_s3::types::Delete::builder()
                .set_objects(Some(objects))
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap()
}

/// Serves `app` (the website endpoint's or the console's router) on an ephemeral loopback
/// port, with the peer's address known to it; aborting the handle stops it.
pub async fn serve_router(app: axum::Router) -> (std::net::SocketAddr, tokio::task::AbortHandle) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_router_on(listener, app).await
}

/// [`serve_router`] on a listener bound beforehand.
pub async fn serve_router_on(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> (std::net::SocketAddr, tokio::task::AbortHandle) {
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await
        .unwrap();
    });
    (addr, server.abort_handle())
}

/// Runs `tests/py/<script>` with `args` and returns the JSON of its `RESULT {...}` line,
/// failing with its output when it fails or prints none.
pub async fn py_result(script: &str, args: Vec<String>) -> serde_json::Value {
    let stdout = run_py(script, args).await;
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| panic!("{script} printed no result:\n{stdout}"));
    println!("{script}: {line}");
    serde_json::from_str(line).unwrap()
}

/// Inserts `doc` (which names its `_id`) straight into `coll`, as a test plants a document.
/// A duplicate-key refusal counts as done only when the document there is this very one: the
/// driver retries a write whose answer was lost (the database reports itself a replica set,
/// so writes are retryable), and the retry then meets the first attempt's document.
pub async fn plant(
    coll: &mongodb::Collection<mongodb::bson::Document>,
    doc: mongodb::bson::Document,
) {
    match coll.insert_one(doc.clone()).await {
        Ok(_) => {}
        Err(e) if grids3::storage::meta::is_duplicate_key(&e) => {
            let id = doc
                .get("_id")
                .expect("a planted document names its _id")
                .clone();
            let there = coll
                .find_one(mongodb::bson::doc! {"_id": id})
                .await
                .unwrap();
            assert_eq!(
                there.as_ref(),
                Some(&doc),
                "a different document was there: {e}"
            );
        }
        Err(e) => panic!("planting into {}: {e}", coll.name()),
    }
}

/// The update documents a started command sends to database `db`'s usage documents
/// (`__usage`, issue 62): an `update`'s, or a `bulkWrite`'s, which is how grids3 sends them
/// where the server has the command. Empty for any other command.
pub fn usage_updates(
    name: &str,
    db: &str,
    command: &mongodb::bson::Document,
) -> Vec<mongodb::bson::Document> {
    match name {
        "update"
            if command.get_str("$db").map_or(true, |d| d == db)
                && command.get_str("update") == Ok("__usage") =>
        {
            command
                .get_array("updates")
                .map(|us| {
                    us.iter()
                        .filter_map(|u| u.as_document()?.get_document("u").ok().cloned())
                        .collect()
                })
                .unwrap_or_default()
        }
        "bulkWrite" => {
            let ns = format!("{db}.__usage");
            let Ok(infos) = command.get_array("nsInfo") else {
                return Vec::new();
            };
            let Some(at) = infos.iter().position(|i| {
                i.as_document().and_then(|d| d.get_str("ns").ok()) == Some(ns.as_str())
            }) else {
                return Vec::new();
            };
            command
                .get_array("ops")
                .map(|ops| {
                    ops.iter()
                        .filter_map(|o| {
                            let o = o.as_document()?;
                            let i = o.get_i32("update").ok()? as usize;
                            (i == at).then(|| o.get_document("updateMods").ok().cloned())?
                        })
                        .collect()
                })
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}
