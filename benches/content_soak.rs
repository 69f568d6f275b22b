//! Soak of the content store (issue 24): two gateway instances in this process over one local
//! database, each with its janitor every second and a content grace of 2 s, for `SOAK_SECS`
//! (default 120) seconds:
//! - a content bucket and a GridFS bucket of `KEYS` keys each, converted to the other mode
//!   every `SOAK_CONVERT_SECS` (default 5) seconds, alternately, by one instance or the other
//!   (the other instance's janitor resumes conversions too);
//! - writers overwrite keys (inline, small-content and blob sizes; a third of the bodies are
//!   shared between keys, so contents are de-duplicated), deleters delete them, readers read
//!   them, and slow readers read blob-sized objects at a trickle;
//! - every body names itself, so each GET is checked byte for byte against the body it names,
//!   which must be one some write of that key started; a 404 must follow a DELETE of the key
//!   (or come before its first acknowledged write).
//!
//! Then traffic stops, conversions finish, the janitor runs past the grace, and fsck checks
//! the database. It prints its figures; it exits non-zero if any check failed.
//!
//! Run: `cargo bench --bench content_soak` (env `SOAK_SECS`, `SOAK_CONVERT_SECS`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use grids3::devdb::{free_port, LocalDb, Storage};
use grids3::storage::meta::StorageMode;
use mongodb::bson::{doc, Document};

const AK: &str = "soakroot";
const SK: &str = "soakroot-secret-key";
const KEYS: usize = 8;
const BUCKETS: [&str; 2] = ["soak-content", "soak-gridfs"];
/// Bodies shared between keys (de-duplicated in the content bucket).
const SHARED: u64 = 6;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Body number `n`: a header naming it, then bytes derived from it. Sizes cycle through
/// inline (under 16 KiB), small-content (under a chunk) and blob sizes.
fn body(n: u64) -> Vec<u8> {
    let len = match n % 3 {
        0 => 500 + (n * 7919) % 10_000,
        1 => 20_000 + (n * 104_729) % 200_000,
        _ => 300_000 + (n * 15_485_863) % 1_200_000,
    } as usize;
    let mut b = format!("b{n}:").into_bytes();
    let mut x = n.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    b.extend((0..len).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    }));
    b
}

fn body_number(b: &[u8]) -> Option<u64> {
    let rest = b.get(..b.len().min(24))?.strip_prefix(b"b")?;
    let i = rest.iter().position(|&c| c == b':')?;
    std::str::from_utf8(&rest[..i]).ok()?.parse().ok()
}

/// What happened to one key, in the order of a global operation counter.
#[derive(Default)]
struct KeyLog {
    /// Bodies a PUT of the key started (with the counter when it started).
    started: HashMap<u64, u64>,
    /// The counter when the first PUT of the key was acknowledged.
    first_ack: Option<u64>,
    /// The counter when the first DELETE of the key started.
    first_delete: Option<u64>,
}

#[derive(Default)]
struct Figures {
    puts: AtomicU64,
    deletes: AtomicU64,
    gets_verified: AtomicU64,
    slow_reads: AtomicU64,
    not_found_after_delete: AtomicU64,
    wrong_bytes: AtomicU64,
    unexpected_404: AtomicU64,
    slow_down: AtomicU64,
    errors: AtomicU64,
    conversions: AtomicU64,
    failures: Mutex<Vec<String>>,
}

impl Figures {
    fn fail(&self, what: String) {
        let mut f = self.failures.lock().unwrap();
        if f.len() < 20 {
            f.push(what);
        }
    }
}

struct World {
    clock: AtomicU64,
    log: Mutex<HashMap<(usize, usize), KeyLog>>,
    figures: Figures,
    stop: AtomicBool,
}

impl World {
    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
}

async fn instance(
    client: &mongodb::Client,
    db: &str,
) -> anyhow::Result<(grids3::AppState, String)> {
    let mut c = grids3::config::Config::for_tests(AK, SK);
    c.database = db.to_owned();
    c.janitor_interval = 1;
    c.content_grace = 2;
    let state = grids3::start(c, client.clone()).await?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = grids3::app(state.clone());
    tokio::spawn(async move {
        let _ = axum::serve(
            listener,
            app.into_make_service_with_connect_info::<std::net::SocketAddr>(),
        )
        .await;
    });
    Ok((state, format!("http://{addr}")))
}

fn sdk(endpoint: &str) -> aws_sdk_s3::Client {
    let creds = aws_credential_types::Credentials::new(AK, SK, None, None, "soak");
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

fn key(k: usize) -> String {
    format!("k{k}")
}

async fn writer(w: Arc<World>, s3: aws_sdk_s3::Client, id: u64) {
    let mut seq = 0u64;
    while !w.stop.load(Ordering::SeqCst) {
        seq += 1;
        let b = (seq + id) as usize % 2;
        let k = ((seq * 7 + id * 3) % KEYS as u64) as usize;
        // A third shared between keys; the rest unique to this write.
        let n = if seq.is_multiple_of(3) {
            seq % SHARED
        } else {
            1_000_000 * (id + 1) + seq
        };
        let started = w.tick();
        w.log
            .lock()
            .unwrap()
            .entry((b, k))
            .or_default()
            .started
            .entry(n)
            .or_insert(started);
        let r = s3
            .put_object()
            .bucket(BUCKETS[b])
            .key(key(k))
            .body(ByteStream::from(body(n)))
            .send()
            .await;
        match r {
            Ok(_) => {
                let acked = w.tick();
                w.figures.puts.fetch_add(1, Ordering::Relaxed);
                let mut log = w.log.lock().unwrap();
                let e = log.entry((b, k)).or_default();
                e.first_ack.get_or_insert(acked);
            }
            Err(e) => note_error(&w, "PUT", &e),
        }
    }
}

fn note_error<E: ProvideErrorMetadata + std::fmt::Debug>(w: &World, op: &str, e: &E) {
    if e.code() == Some("SlowDown") {
        w.figures.slow_down.fetch_add(1, Ordering::Relaxed);
        return;
    }
    w.figures.errors.fetch_add(1, Ordering::Relaxed);
    w.figures
        .fail(format!("{op}: {:?} {:?}", e.code(), e.message()));
}

async fn deleter(w: Arc<World>, s3: aws_sdk_s3::Client) {
    let mut i = 0usize;
    while !w.stop.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(700)).await;
        i += 1;
        let (b, k) = (i % 2, (i * 5) % KEYS);
        let started = w.tick();
        w.log
            .lock()
            .unwrap()
            .entry((b, k))
            .or_default()
            .first_delete
            .get_or_insert(started);
        match s3
            .delete_object()
            .bucket(BUCKETS[b])
            .key(key(k))
            .send()
            .await
        {
            Ok(_) => {
                w.figures.deletes.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => note_error(&w, "DELETE", &e),
        }
    }
}

/// Checks a body read from `(b, k)`, the read having started at `from` and ended at `to`.
fn verify(w: &World, (b, k): (usize, usize), got: &[u8], to: u64) {
    let Some(n) = body_number(got) else {
        w.figures.wrong_bytes.fetch_add(1, Ordering::Relaxed);
        w.figures.fail(format!(
            "{}/{}: a body naming no write ({} bytes)",
            BUCKETS[b],
            key(k),
            got.len()
        ));
        return;
    };
    let started = w
        .log
        .lock()
        .unwrap()
        .get(&(b, k))
        .and_then(|l| l.started.get(&n).copied());
    if got != body(n).as_slice() || started.is_none_or(|s| s > to) {
        w.figures.wrong_bytes.fetch_add(1, Ordering::Relaxed);
        w.figures.fail(format!(
            "{}/{}: body b{n} ({} bytes) is not a write of this key",
            BUCKETS[b],
            key(k),
            got.len()
        ));
    } else {
        w.figures.gets_verified.fetch_add(1, Ordering::Relaxed);
    }
}

fn not_found(w: &World, (b, k): (usize, usize), from: u64, to: u64) {
    let log = w.log.lock().unwrap();
    let l = log.get(&(b, k));
    let deleted = l.and_then(|l| l.first_delete).is_some_and(|d| d <= to);
    let never_written = l.and_then(|l| l.first_ack).is_none_or(|a| a >= from);
    if deleted {
        w.figures
            .not_found_after_delete
            .fetch_add(1, Ordering::Relaxed);
    } else if !never_written {
        w.figures.unexpected_404.fetch_add(1, Ordering::Relaxed);
        w.figures.fail(format!(
            "{}/{}: 404 though never deleted",
            BUCKETS[b],
            key(k)
        ));
    }
}

async fn reader(w: Arc<World>, s3: aws_sdk_s3::Client, id: usize, slow: bool) {
    let mut i = id;
    while !w.stop.load(Ordering::SeqCst) {
        i += 1;
        let (b, k) = (i % 2, (i * 3) % KEYS);
        let from = w.tick();
        match s3.get_object().bucket(BUCKETS[b]).key(key(k)).send().await {
            Ok(o) => {
                let mut got = Vec::new();
                let mut body = o.body.into_async_read();
                let mut buf = vec![0u8; 64 * 1024];
                let ok = loop {
                    match tokio::io::AsyncReadExt::read(&mut body, &mut buf).await {
                        Ok(0) => break true,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                        Err(e) => {
                            w.figures.errors.fetch_add(1, Ordering::Relaxed);
                            w.figures.fail(format!("GET body: {e}"));
                            break false;
                        }
                    }
                    if slow {
                        tokio::time::sleep(Duration::from_millis(150)).await;
                    }
                };
                if ok {
                    verify(&w, (b, k), &got, w.tick());
                    if slow {
                        w.figures.slow_reads.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Err(e) if e.code() == Some("NoSuchKey") => not_found(&w, (b, k), from, w.tick()),
            Err(e) => note_error(&w, "GET", &e),
        }
    }
}

async fn converter(
    w: Arc<World>,
    stores: Vec<grids3::storage::objects::ObjectStore>,
    every: Duration,
) {
    let mut i = 0usize;
    while !w.stop.load(Ordering::SeqCst) {
        tokio::time::sleep(every).await;
        i += 1;
        let bucket = BUCKETS[i % 2];
        let store = &stores[i % stores.len()];
        let meta = store.meta();
        let Ok(Some(info)) = meta.get_bucket(bucket).await else {
            continue;
        };
        let to = match info.storage {
            StorageMode::Content => StorageMode::Gridfs,
            StorageMode::Gridfs => StorageMode::Content,
        };
        if meta.start_conversion(bucket, to).await.unwrap_or(false) {
            w.figures.conversions.fetch_add(1, Ordering::Relaxed);
            let store = store.clone();
            tokio::spawn(async move {
                let _ = store.run_conversion(bucket).await;
            });
        }
    }
}

fn main() -> anyhow::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .thread_stack_size(8 << 20)
        .enable_all()
        .build()?
        .block_on(run())
}

async fn run() -> anyhow::Result<()> {
    let secs = env("SOAK_SECS", 120);
    let convert_every = Duration::from_secs(env("SOAK_CONVERT_SECS", 5));
    let local = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let client = mongodb::Client::with_uri_str(&local.uri).await?;
    let db_name = "soak";
    let (a, a_url) = instance(&client, db_name).await?;
    let (b, b_url) = instance(&client, db_name).await?;
    let (sa, sb) = (sdk(&a_url), sdk(&b_url));
    sa.create_bucket()
        .bucket(BUCKETS[0])
        .customize()
        .mutate_request(|r| {
            r.headers_mut().insert("x-grids3-storage-mode", "content");
        })
        .send()
        .await?;
    sa.create_bucket().bucket(BUCKETS[1]).send().await?;
    let w = Arc::new(World {
        clock: AtomicU64::new(0),
        log: Mutex::new(HashMap::new()),
        figures: Figures::default(),
        stop: AtomicBool::new(false),
    });
    let t0 = Instant::now();
    let mut tasks = Vec::new();
    for id in 0..4u64 {
        let s3 = if id % 2 == 0 { sa.clone() } else { sb.clone() };
        tasks.push(tokio::spawn(writer(w.clone(), s3, id)));
    }
    tasks.push(tokio::spawn(deleter(w.clone(), sb.clone())));
    for id in 0..4usize {
        let s3 = if id % 2 == 0 { sb.clone() } else { sa.clone() };
        tasks.push(tokio::spawn(reader(w.clone(), s3, id, id >= 2)));
    }
    tasks.push(tokio::spawn(converter(
        w.clone(),
        vec![a.store.clone(), b.store.clone()],
        convert_every,
    )));
    tokio::time::sleep(Duration::from_secs(secs)).await;
    w.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        let _ = t.await;
    }
    let traffic = t0.elapsed();

    // Conversions finish (whichever instance leads), then the janitor runs past the grace.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let mut converting = false;
        for bucket in BUCKETS {
            if a.store
                .meta()
                .get_bucket(bucket)
                .await?
                .is_some_and(|b| b.converting)
            {
                converting = true;
                let _ = a.store.run_conversion(bucket).await;
            }
        }
        if !converting || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        a.store.janitor_pass().await?;
    }
    // Every key still holding an object reads back as one of its writes.
    let mut final_reads = 0;
    for (bi, bucket) in BUCKETS.iter().enumerate() {
        for k in 0..KEYS {
            match sa.get_object().bucket(*bucket).key(key(k)).send().await {
                Ok(o) => {
                    let got = o.body.collect().await?.into_bytes();
                    verify(&w, (bi, k), &got, u64::MAX);
                    final_reads += 1;
                }
                Err(e) if e.code() == Some("NoSuchKey") => not_found(&w, (bi, k), 0, u64::MAX),
                Err(e) => note_error(&w, "final GET", &e),
            }
        }
    }
    let report = grids3::janitor::fsck::run(&a.store, false).await?;
    let db = client.database(db_name);
    let now = mongodb::bson::DateTime::now();
    let mut refs_due = 0;
    let mut orphan_blobs = 0;
    for bucket in BUCKETS {
        refs_due += db
            .collection::<Document>(&format!("{bucket}._refs"))
            .count_documents(doc! {"purge": {"$lt": now}})
            .await?;
        let blobs: HashSet<String> = db
            .collection::<Document>(&format!("{bucket}._blobs.chunks"))
            .distinct("files_id", doc! {})
            .await?
            .iter()
            .map(|b| b.to_string())
            .collect();
        let files: HashSet<String> = db
            .collection::<Document>(&format!("{bucket}._blobs.files"))
            .distinct("_id", doc! {})
            .await?
            .iter()
            .map(|b| b.to_string())
            .collect();
        orphan_blobs += blobs.difference(&files).count();
    }
    let f = &w.figures;
    let modes: Vec<String> = {
        let mut v = Vec::new();
        for bucket in BUCKETS {
            let m = a.store.meta().get_bucket(bucket).await?.map(|b| b.storage);
            v.push(format!("{bucket}: {m:?}"));
        }
        v
    };
    println!(
        "content soak: {:.0} s of traffic, two instances, janitor 1 s, content grace 2 s",
        traffic.as_secs_f64()
    );
    println!(
        "  PUTs {}, DELETEs {}, GETs verified byte for byte {} (slow reads {}), 404 after a DELETE {}",
        f.puts.load(Ordering::Relaxed),
        f.deletes.load(Ordering::Relaxed),
        f.gets_verified.load(Ordering::Relaxed),
        f.slow_reads.load(Ordering::Relaxed),
        f.not_found_after_delete.load(Ordering::Relaxed)
    );
    println!(
        "  conversions started {} (modes at the end: {})",
        f.conversions.load(Ordering::Relaxed),
        modes.join(", ")
    );
    println!(
        "  wrong bytes {}, unexpected 404 {}, errors {}, SlowDown (retryable) {}",
        f.wrong_bytes.load(Ordering::Relaxed),
        f.unexpected_404.load(Ordering::Relaxed),
        f.errors.load(Ordering::Relaxed),
        f.slow_down.load(Ordering::Relaxed)
    );
    println!(
        "  afterwards: {final_reads} keys read back; fsck problems {}, orphan chunk file ids {}, orphan blob chunks {orphan_blobs}, references still due {refs_due}",
        report.problems(),
        report.orphan_chunks.len()
    );
    if report.problems() > 0 {
        print!("{}", report.render());
    }
    for line in f.failures.lock().unwrap().iter() {
        println!("  failure: {line}");
    }
    let failed = f.wrong_bytes.load(Ordering::Relaxed)
        + f.unexpected_404.load(Ordering::Relaxed)
        + f.errors.load(Ordering::Relaxed)
        + report.problems() as u64
        + orphan_blobs as u64
        + refs_due;
    drop(local);
    if failed > 0 {
        anyhow::bail!("the soak found {failed} problems");
    }
    Ok(())
}
