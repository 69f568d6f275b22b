//! `grids3 bench`: a load generator in the spirit of MinIO's warp. It drives a running gateway
//! with signed S3 requests (PUT, GET, HEAD, LIST, DELETE, DeleteObjects, or a mix) from many
//! keep-alive connections for a set time, and prints operations/s, MB/s and latency
//! quantiles, with a progress line while it runs. With `--baseline` it then does the same
//! shape of work with the raw driver on the gateway's database ([`raw`]), so that each figure
//! is also printed as a ratio to the database's own floor. It reports its own CPU, so that a
//! reader can see it was not the limit, and the gateway's when given its process id.

pub mod http;
pub mod raw;
pub mod stats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use base64::Engine;
use bytes::Bytes;
use futures::future::BoxFuture;
use rand::Rng;

use crate::config::BenchArgs;
use http::{Conn, Signer};
use stats::Phase;

/// What one operation did: bytes moved and keys touched.
#[derive(Clone, Copy, Default)]
struct Done {
    bytes: u64,
    keys: u64,
}

/// One step of a worker: `Ok(None)` when there is nothing left to do.
type Step = Arc<dyn Fn(usize, u64) -> BoxFuture<'static, Result<Option<Done>>> + Send + Sync>;

/// Keys that exist, to read and delete.
#[derive(Default)]
struct Population {
    names: Mutex<Vec<String>>,
}

impl Population {
    fn add(&self, n: String) {
        self.names.lock().unwrap_or_else(|e| e.into_inner()).push(n);
    }
    fn pick(&self) -> Option<String> {
        let g = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if g.is_empty() {
            return None;
        }
        Some(g[rand::thread_rng().gen_range(0..g.len())].clone())
    }
    fn take(&self, n: usize) -> Vec<String> {
        let mut g = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let at = g.len().saturating_sub(n);
        g.split_off(at)
    }
    fn len(&self) -> usize {
        self.names.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
    fn sorted(&self) -> Vec<String> {
        let mut v = self.names.lock().unwrap_or_else(|e| e.into_inner()).clone();
        v.sort();
        v
    }
}

/// CPU seconds (user + system) of a process (`self` or a pid).
fn cpu_secs(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs `step` on `conc` workers for `dur` (or until a worker has nothing left), with a
/// progress line on stderr.
async fn drive(label: &str, conc: usize, dur: Duration, step: Step) -> Phase {
    let count = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let ticker = {
        let (count, stop, label) = (count.clone(), stop.clone(), label.to_owned());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let n = count.load(Ordering::Relaxed);
                let t = start.elapsed().as_secs_f64();
                eprint!(
                    "\r\x1b[K{label}: {t:.0}/{} s, {n} ops, {:.0}/s",
                    dur.as_secs(),
                    n as f64 / t.max(1e-9)
                );
            }
        })
    };
    let tasks: Vec<_> = (0..conc)
        .map(|w| {
            let (step, count) = (step.clone(), count.clone());
            tokio::spawn(async move {
                let mut p = Phase::default();
                let mut i = 0;
                while start.elapsed() < dur {
                    let t = Instant::now();
                    match step(w, i).await {
                        Ok(Some(d)) => {
                            p.micros.push(t.elapsed().as_micros() as u64);
                            p.bytes += d.bytes;
                            p.keys += d.keys;
                            count.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(None) => break,
                        Err(e) => {
                            if p.errors == 0 {
                                tracing::warn!(error = %e, "an operation failed");
                            }
                            p.errors += 1;
                        }
                    }
                    i += 1;
                }
                p
            })
        })
        .collect();
    let mut all = Phase::default();
    for t in tasks {
        if let Ok(p) = t.await {
            all.absorb(p);
        }
    }
    all.wall = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    ticker.abort();
    eprint!("\r\x1b[K");
    all
}

/// The operations a run can measure.
const OPS: [&str; 7] = [
    "put",
    "get",
    "head",
    "list",
    "delete",
    "multidelete",
    "mixed",
];

/// The S3 side of a run.
struct S3Side {
    conns: Arc<Vec<tokio::sync::Mutex<Conn>>>,
    bucket: String,
    prefix: String,
    body: Bytes,
    pop: Arc<Population>,
    next: Arc<AtomicU64>,
    tokens: Arc<Vec<Mutex<Option<String>>>>,
}

fn count(body: &[u8], tag: &str) -> u64 {
    let (b, t) = (body, tag.as_bytes());
    b.windows(t.len()).filter(|w| *w == t).count() as u64
}

fn between<'a>(body: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let s = body.find(open)? + open.len();
    let e = body[s..].find(close)? + s;
    Some(&body[s..e])
}

impl S3Side {
    fn key(&self) -> String {
        format!(
            "{}{:010}",
            self.prefix,
            self.next.fetch_add(1, Ordering::Relaxed)
        )
    }

    /// One operation `op` by worker `w`.
    async fn op(self: Arc<Self>, op: &'static str, w: usize) -> Result<Option<Done>> {
        let mut c = self.conns[w].lock().await;
        let b = &self.bucket;
        match op {
            "put" => {
                let k = self.key();
                let a = c
                    .send(
                        "PUT",
                        &format!("/{b}/{k}"),
                        "",
                        self.body.clone(),
                        &[],
                        false,
                    )
                    .await?;
                if a.status != 200 {
                    bail!("PUT answered {}", a.status);
                }
                self.pop.add(k);
                Ok(Some(Done {
                    bytes: self.body.len() as u64,
                    keys: 1,
                }))
            }
            "get" | "head" => {
                let Some(k) = self.pop.pick() else {
                    return Ok(None);
                };
                let method = if op == "get" { "GET" } else { "HEAD" };
                let a = c
                    .send(method, &format!("/{b}/{k}"), "", Bytes::new(), &[], false)
                    .await?;
                if a.status != 200 || (op == "get" && a.body.len() != self.body.len()) {
                    bail!("{method} answered {} with {} bytes", a.status, a.body.len());
                }
                Ok(Some(Done {
                    bytes: a.body.len() as u64,
                    keys: 1,
                }))
            }
            "list" => {
                let token = self.tokens[w]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .clone();
                let mut q = format!(
                    "list-type=2&max-keys=1000&prefix={}",
                    crate::percent::uri_encode(&self.prefix, false)
                );
                if let Some(t) = token {
                    q = format!("continuation-token={t}&{q}");
                }
                let a = c
                    .send("GET", &format!("/{b}"), &q, Bytes::new(), &[], false)
                    .await?;
                if a.status != 200 {
                    bail!("LIST answered {}", a.status);
                }
                let text = String::from_utf8_lossy(&a.body);
                let next = if text.contains("<IsTruncated>true</IsTruncated>") {
                    between(&text, "<NextContinuationToken>", "</NextContinuationToken>")
                        .map(|t| crate::percent::uri_encode(t, false))
                } else {
                    None
                };
                *self.tokens[w].lock().unwrap_or_else(|e| e.into_inner()) = next;
                Ok(Some(Done {
                    bytes: 0,
                    keys: count(&a.body, "<Key>"),
                }))
            }
            "delete" => {
                let Some(k) = self.pop.take(1).pop() else {
                    return Ok(None);
                };
                let a = c
                    .send("DELETE", &format!("/{b}/{k}"), "", Bytes::new(), &[], false)
                    .await?;
                if a.status != 204 {
                    bail!("DELETE answered {}", a.status);
                }
                Ok(Some(Done { bytes: 0, keys: 1 }))
            }
            "multidelete" => {
                let keys = self.pop.take(1000);
                if keys.is_empty() {
                    return Ok(None);
                }
                let mut xml = String::from("<Delete><Quiet>false</Quiet>");
                for k in &keys {
                    xml.push_str(&format!("<Object><Key>{k}</Key></Object>"));
                }
                xml.push_str("</Delete>");
                let md5 = base64::engine::general_purpose::STANDARD
                    .encode(<md5::Md5 as md5::Digest>::digest(xml.as_bytes()));
                let a = c
                    .send(
                        "POST",
                        &format!("/{b}"),
                        "delete=",
                        Bytes::from(xml),
                        &[("content-md5", md5)],
                        true,
                    )
                    .await?;
                let deleted = count(&a.body, "<Deleted>");
                if a.status != 200 || deleted != keys.len() as u64 {
                    bail!(
                        "DeleteObjects answered {}, {deleted} of {} deleted",
                        a.status,
                        keys.len()
                    );
                }
                Ok(Some(Done {
                    bytes: 0,
                    keys: deleted,
                }))
            }
            _ => unreachable!("checked"),
        }
    }
}

/// The raw side of a run.
struct RawSide {
    raw: raw::Raw,
    pop: Population,
    next: AtomicU64,
    sorted: Vec<String>,
    pages: AtomicU64,
}

impl RawSide {
    async fn op(self: Arc<Self>, op: &'static str) -> Result<Option<Done>> {
        let size = |b: u64| Done { bytes: b, keys: 1 };
        match op {
            "put" => {
                let k = format!("raw{:010}", self.next.fetch_add(1, Ordering::Relaxed));
                let b = self.raw.put(&k).await?;
                self.pop.add(k);
                Ok(Some(size(b)))
            }
            "get" | "head" => {
                let Some(k) = self.pop.pick() else {
                    return Ok(None);
                };
                let b = if op == "get" {
                    self.raw.get(&k).await?
                } else {
                    self.raw.head(&k).await?
                };
                Ok(Some(size(b)))
            }
            "list" => {
                let pages = self.sorted.len().div_ceil(1000).max(1) as u64;
                let i = (self.pages.fetch_add(1, Ordering::Relaxed) % pages) as usize * 1000;
                let (Some(first), Some(last)) = (
                    self.sorted.get(i),
                    self.sorted
                        .get((i + 999).min(self.sorted.len().saturating_sub(1))),
                ) else {
                    return Ok(None);
                };
                let n = self.raw.page(first, last).await?;
                Ok(Some(Done { bytes: 0, keys: n }))
            }
            "delete" => {
                let Some(k) = self.pop.take(1).pop() else {
                    return Ok(None);
                };
                self.raw.delete(&k).await?;
                Ok(Some(size(0)))
            }
            "multidelete" => {
                let keys = self.pop.take(1000);
                if keys.is_empty() {
                    return Ok(None);
                }
                let n = self.raw.delete_many(&keys).await?;
                Ok(Some(Done { bytes: 0, keys: n }))
            }
            _ => unreachable!("checked"),
        }
    }
}

/// warp's mix: 45 % GET, 30 % HEAD, 15 % PUT, 10 % DELETE.
fn mixed_op() -> &'static str {
    match rand::thread_rng().gen_range(0..100) {
        0..45 => "get",
        45..75 => "head",
        75..90 => "put",
        _ => "delete",
    }
}

/// The same target signed with temporary credentials from STS's GetSessionToken of `signer`'s
/// key (`--session`).
async fn session_signer(signer: Signer) -> Result<Signer> {
    let sts = Arc::new(Signer {
        service: "sts",
        session_token: None,
        ..signer
    });
    let body =
        Bytes::from_static(b"Action=GetSessionToken&Version=2011-06-15&DurationSeconds=3600");
    let a = Conn::new(sts.clone())
        .send(
            "POST",
            "/",
            "",
            body,
            &[(
                "content-type",
                "application/x-www-form-urlencoded".to_owned(),
            )],
            true,
        )
        .await
        .context("GetSessionToken")?;
    let text = String::from_utf8_lossy(&a.body).into_owned();
    let field = |tag: &str| -> Result<String> {
        let open = format!("<{tag}>");
        let start = text
            .find(&open)
            .ok_or_else(|| anyhow::anyhow!("GetSessionToken answered {}: {text}", a.status))?
            + open.len();
        let end = text[start..].find('<').unwrap_or(0) + start;
        Ok(text[start..end].to_owned())
    };
    let sts = Arc::try_unwrap(sts).map_err(|_| anyhow::anyhow!("signer in use"))?;
    Ok(Signer {
        access_key: field("AccessKeyId")?,
        secret_key: crate::config::Secret::from(field("SecretAccessKey")?),
        session_token: Some(field("SessionToken")?),
        service: "s3",
        ..sts
    })
}

fn needs_population(op: &str) -> bool {
    op != "put"
}

/// Runs the benchmark `args` against `signer`'s gateway; `db` is the gateway's database for
/// the baseline.
pub async fn run(args: &BenchArgs, signer: Signer, db: Option<mongodb::Database>) -> Result<()> {
    for op in &args.ops {
        if !OPS.contains(&op.as_str()) {
            bail!("unknown operation {op:?}: use {}", OPS.join(", "));
        }
    }
    let size = stats::parse_size(&args.size).map_err(anyhow::Error::msg)? as usize;
    // One body is held in memory and each worker may hold an answer as large.
    if size > 1 << 30 {
        bail!("--size is at most 1 GiB");
    }
    if args.concurrency > 1024 {
        bail!("--concurrency is at most 1024");
    }
    let conc = args.concurrency.max(1);
    let dur = Duration::from_secs(args.duration.max(1));
    let signer = Arc::new(if args.session {
        session_signer(signer).await?
    } else {
        signer
    });
    let run_id = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let side = Arc::new(S3Side {
        conns: Arc::new(
            (0..conc)
                .map(|_| tokio::sync::Mutex::new(Conn::new(signer.clone())))
                .collect(),
        ),
        bucket: args.bucket.clone(),
        prefix: format!("bench-{run_id}/"),
        body: Bytes::from(vec![0x5a; size]),
        pop: Arc::default(),
        next: Arc::default(),
        tokens: Arc::new((0..conc).map(|_| Mutex::new(None)).collect()),
    });
    {
        let mut c = side.conns[0].lock().await;
        let a = c
            .send(
                "PUT",
                &format!("/{}", args.bucket),
                "",
                Bytes::new(),
                &[],
                false,
            )
            .await
            .context("creating the bucket")?;
        if a.status != 200 && a.status != 409 {
            bail!(
                "creating bucket {} answered {}: {}",
                args.bucket,
                a.status,
                String::from_utf8_lossy(&a.body)
            );
        }
    }
    let raw_side = match (&db, args.baseline) {
        (Some(db), true) => Some(Arc::new(RawSide {
            raw: raw::Raw::open(db, run_id, size).await?,
            pop: Population::default(),
            next: AtomicU64::new(0),
            sorted: Vec::new(),
            pages: AtomicU64::new(0),
        })),
        (None, true) => bail!("--baseline needs the database: set MONGODB_URI (and GRIDS3_DATABASE), or run a gateway with --local-db"),
        _ => None,
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    println!(
        "grids3 bench: {} on {}, {} B objects, {conc} workers, {} s each, {} objects, {}",
        args.ops.join(","),
        signer.target.host(),
        size,
        dur.as_secs(),
        args.objects,
        if raw_side.is_some() {
            "with the raw-driver baseline"
        } else {
            "no baseline"
        }
    );
    println!(
        "{:<12} {:>10} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>10} {:>7} {:>8} {:>10}",
        "op",
        "ops/s",
        "MB/s",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "errors",
        "keys/s",
        "raw ops/s",
        "ratio",
        "gen CPU",
        "gw CPU s/GiB"
    );
    let mut raw_side = raw_side;
    let result = phases(args, &side, &mut raw_side, conc, dur, cores).await;
    if let Some(r) = &raw_side {
        r.raw.drop().await?;
    }
    result
}

/// Every phase of a run, in order.
async fn phases(
    args: &BenchArgs,
    side: &Arc<S3Side>,
    raw_side: &mut Option<Arc<RawSide>>,
    conc: usize,
    dur: Duration,
    cores: f64,
) -> Result<()> {
    for op in args.ops.clone() {
        let op: &'static str = OPS.iter().find(|o| **o == op).expect("checked");
        if needs_population(op) && side.pop.len() < args.objects {
            let missing = args.objects - side.pop.len();
            let left = Arc::new(AtomicU64::new(missing as u64));
            let s = side.clone();
            let step: Step = Arc::new(move |w, _| {
                let (s, left) = (s.clone(), left.clone());
                Box::pin(async move {
                    if left
                        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                        .is_err()
                    {
                        return Ok(None);
                    }
                    s.op("put", w).await
                })
            });
            let p = drive("preparing", conc, Duration::from_secs(24 * 3600), step).await;
            if p.errors > 0 {
                bail!("{} PUTs failed while preparing", p.errors);
            }
        }
        let gw_before = args.gateway_pid.map(|p| cpu_secs(&p.to_string()));
        let me_before = cpu_secs("self");
        let s = side.clone();
        let step: Step = Arc::new(move |w, _| {
            let s = s.clone();
            let op = if op == "mixed" { mixed_op() } else { op };
            Box::pin(s.op(op, w))
        });
        let p = drive(op, conc, dur, step).await;
        let me = cpu_secs("self") - me_before;
        let gw = args
            .gateway_pid
            .zip(gw_before)
            .map(|(pid, b)| cpu_secs(&pid.to_string()) - b);
        let raw = match raw_side.as_mut() {
            Some(r) => {
                let r = Arc::get_mut(r).context("a raw phase still running")?;
                if needs_population(op) && r.pop.len() < args.objects {
                    let names: Vec<String> = (r.pop.len()..args.objects)
                        .map(|_| format!("raw{:010}", r.next.fetch_add(1, Ordering::Relaxed)))
                        .collect();
                    r.raw.fill(&names).await?;
                    for n in names {
                        r.pop.add(n);
                    }
                }
                r.sorted = r.pop.sorted();
                let rs = raw_side.clone().expect("some");
                let step: Step = Arc::new(move |_, _| {
                    let rs = rs.clone();
                    let op = if op == "mixed" { mixed_op() } else { op };
                    Box::pin(rs.op(op))
                });
                Some(drive(&format!("{op} (raw)"), conc, dur, step).await)
            }
            None => None,
        };
        let moved_gib = p.bytes as f64 / (1u64 << 30) as f64;
        println!(
            "{:<12} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7} {:>10.0} {:>10} {:>7} {:>7.0}% {:>10}",
            op,
            p.ops(),
            p.mbps(),
            p.quantile_ms(0.5),
            p.quantile_ms(0.99),
            p.quantile_ms(0.999),
            p.errors,
            p.keys_per_sec(),
            raw.as_ref().map_or("-".into(), |r| format!("{:.1}", r.ops())),
            raw.as_ref().map_or("-".into(), |r| {
                // LIST and DeleteObjects are compared by keys, the rest by operations.
                let (a, b) = if op == "list" || op == "multidelete" {
                    (p.keys_per_sec(), r.keys_per_sec())
                } else {
                    (p.ops(), r.ops())
                };
                format!("{:.2}", a / b.max(1e-9))
            }),
            100.0 * me / (p.wall.as_secs_f64() * cores),
            gw.filter(|_| moved_gib > 0.0)
                .map_or("-".into(), |g| format!("{:.2}", g / moved_gib)),
        );
        if let Some(r) = &raw {
            println!(
                "{:<12} {:>10.1} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>7} {:>10.0}",
                format!("  raw {op}"),
                r.ops(),
                r.mbps(),
                r.quantile_ms(0.5),
                r.quantile_ms(0.99),
                r.quantile_ms(0.999),
                r.errors,
                r.keys_per_sec()
            );
        }
    }
    Ok(())
}
