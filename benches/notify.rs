//! Benchmark: event notifications' cost and speed. Starts its own database, a webhook receiver
//! in this process, and the real `grids3` binary (release) with that webhook as a target; then,
//! `BENCH_REPS` times (default 3), interleaved:
//! - `BENCH_SECS` seconds (default 10) of 4 KiB PUTs from `BENCH_CONCURRENCY` clients (default
//!   32) into a bucket without notifications ("off");
//! - the same into a bucket whose configuration sends every ObjectCreated event to the
//!   webhook ("on"), noting when each PUT was acknowledged.
//!
//! Prints the PUT throughput off and on and their ratio (median of the repetitions), the events
//! the webhook received per second, and the latency from a PUT's acknowledgement to its
//! event's receipt (p50, p99), both clocks this process's.
//!
//! It also prints the CPU time each process spent per PUT (the gateway, the database, this
//! process with its webhook receiver), off and on. An "on" phase's CPU is counted until its
//! last event arrived (the dispatcher's work after the phase included), so the difference is
//! the whole cost of an event.
//!
//! Run: `cargo bench --bench notify`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grids3::devdb::{free_port, LocalDb, Storage};

mod common;
use common::{cpu_secs, put_bytes, request, start_gateway_env};

/// CPU seconds so far of the gateway, the database and this process.
fn cpus(gateway: u32, db: Option<u32>) -> [f64; 3] {
    [
        cpu_secs(gateway),
        db.map(cpu_secs).unwrap_or(0.0),
        cpu_secs(std::process::id()),
    ]
}

/// CPU milliseconds per PUT of each process between `a` and `b`.
fn per_put(a: [f64; 3], b: [f64; 3], puts: usize) -> [f64; 3] {
    let n = puts.max(1) as f64;
    [0, 1, 2].map(|i| (b[i] - a[i]) * 1000.0 / n)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

type Receipts = Arc<Mutex<HashMap<String, Instant>>>;

/// A webhook receiver noting when each object key's event arrived.
async fn receiver() -> anyhow::Result<(String, Receipts)> {
    let got: Receipts = Arc::default();
    let g = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |body: axum::body::Bytes| {
            let g = g.clone();
            async move {
                let at = Instant::now();
                if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) {
                    if let Some(k) = v["Records"][0]["s3"]["object"]["key"].as_str() {
                        g.lock().unwrap().insert(k.to_owned(), at);
                    }
                }
                axum::http::StatusCode::OK
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((url, got))
}

/// `secs` of PUTs from `clients` clients into `bucket`; the acknowledgement time of each key.
async fn put_phase(
    addr: &str,
    bucket: &str,
    clients: usize,
    secs: u64,
    tag: &str,
) -> Vec<(String, Instant)> {
    let body = vec![7u8; 4096];
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for w in 0..clients {
        let (addr, bucket, body, tag) = (
            addr.to_owned(),
            bucket.to_owned(),
            body.clone(),
            tag.to_owned(),
        );
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut acks = Vec::new();
            let mut i = 0;
            while Instant::now() < deadline {
                let key = format!("{tag}-{w}-{i}");
                let r = put_bytes(
                    &client,
                    &addr,
                    &format!("/{bucket}/{key}"),
                    &[],
                    body.clone(),
                )
                .await;
                assert!(r.status().is_success(), "PUT: {}", r.status());
                acks.push((key, Instant::now()));
                i += 1;
            }
            acks
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |n: &str, d: u64| -> u64 {
        std::env::var(n)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (reps, secs, clients) = (
        env("BENCH_REPS", 3),
        env("BENCH_SECS", 10),
        env("BENCH_CONCURRENCY", 32) as usize,
    );
    let (url, receipts) = receiver().await?;
    let db = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let (mut child, addr) =
        start_gateway_env(&db.uri, &[("GRIDS3_NOTIFY_WEBHOOK_BENCH", url.as_str())]).await?;
    let client = reqwest::Client::new();
    for b in ["/notify-off", "/notify-on"] {
        assert!(request(&client, &addr, "PUT", b, None)
            .await
            .status()
            .is_success());
    }
    let config = "<NotificationConfiguration><QueueConfiguration><Id>bench</Id><Queue>arn:grids3:sqs::bench:webhook</Queue><Event>s3:ObjectCreated:*</Event></QueueConfiguration></NotificationConfiguration>";
    let mut rb = client.put(format!("http://{addr}/notify-on?notification"));
    for (k, v) in common::signed("PUT", &addr, "/notify-on", "notification") {
        rb = rb.header(k, v);
    }
    let r = rb.body(config).send().await?;
    anyhow::ensure!(
        r.status().is_success(),
        "configuration: {}",
        r.text().await?
    );
    let (gw_pid, db_pid) = (child.id(), db.server_pid());
    let (mut off, mut on, mut acks) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cpu_off, mut cpu_on) = (Vec::new(), Vec::new());
    for rep in 0..reps {
        let c0 = cpus(gw_pid, db_pid);
        let t = Instant::now();
        let n = put_phase(&addr, "notify-off", clients, secs, &format!("off{rep}"))
            .await
            .len();
        off.push(n as f64 / t.elapsed().as_secs_f64());
        cpu_off.push(per_put(c0, cpus(gw_pid, db_pid), n));
        let c0 = cpus(gw_pid, db_pid);
        let t = Instant::now();
        let a = put_phase(&addr, "notify-on", clients, secs, &format!("on{rep}")).await;
        on.push(a.len() as f64 / t.elapsed().as_secs_f64());
        acks.extend(a.iter().cloned());
        // The phase's events arrive before its CPU is read (and before the next phase).
        let drain = Instant::now();
        while a
            .iter()
            .any(|(k, _)| !receipts.lock().unwrap().contains_key(k))
            && drain.elapsed() < Duration::from_secs(120)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cpu_on.push(per_put(c0, cpus(gw_pid, db_pid), a.len()));
        println!(
            "rep {rep}: off {:.1} PUT/s, on {:.1} PUT/s; CPU ms per PUT (gateway/database/bench) off {:.2}/{:.2}/{:.2}, on with its delivery {:.2}/{:.2}/{:.2}; drained in {:.1} s",
            off.last().unwrap(),
            on.last().unwrap(),
            cpu_off.last().unwrap()[0],
            cpu_off.last().unwrap()[1],
            cpu_off.last().unwrap()[2],
            cpu_on.last().unwrap()[0],
            cpu_on.last().unwrap()[1],
            cpu_on.last().unwrap()[2],
            drain.elapsed().as_secs_f64(),
        );
    }
    // Every event arrives (the last ones after the last phase ended).
    let wait = Instant::now();
    while receipts.lock().unwrap().len() < acks.len() && wait.elapsed() < Duration::from_secs(300) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = receipts.lock().unwrap().clone();
    let mut lat: Vec<f64> = acks
        .iter()
        .filter_map(|(k, at)| {
            got.get(k)
                .map(|r| r.saturating_duration_since(*at).as_secs_f64() * 1000.0)
        })
        .collect();
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let first_ack = acks.iter().map(|(_, t)| *t).min().unwrap();
    let last_receipt = got.values().copied().max().unwrap();
    let (off_m, on_m) = (median(off), median(on));
    println!(
        "notify bench: {clients} clients, 4 KiB PUTs, {reps} x {secs} s per side, interleaved"
    );
    println!("PUT/s notifications off (median): {off_m:.1}");
    println!("PUT/s notifications on  (median): {on_m:.1}");
    println!("ratio on/off: {:.2}", on_m / off_m);
    let med = |v: &[[f64; 3]], i: usize| median(v.iter().map(|c| c[i]).collect());
    for (i, who) in ["gateway", "database", "bench + receiver"]
        .iter()
        .enumerate()
    {
        println!(
            "CPU ms per PUT, {who}: off {:.2}, on {:.2} (+{:.2} per event)",
            med(&cpu_off, i),
            med(&cpu_on, i),
            med(&cpu_on, i) - med(&cpu_off, i)
        );
    }
    println!(
        "events delivered: {} of {} acknowledged; {:.1} events/s from the first acknowledgement to the last receipt",
        lat.len(),
        acks.len(),
        lat.len() as f64 / last_receipt.duration_since(first_ack).as_secs_f64()
    );
    println!(
        "acknowledgement to receipt: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0)
    );
    // How well concurrent PUTs shared the outbox: events per document inserted.
    let metrics = client
        .get(format!("http://{addr}/_grids3/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let counter = |name: &str| -> f64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    let (events, docs) = (
        counter("grids3_notify_queued_events_total"),
        counter("grids3_notify_queued_documents_total"),
    );
    println!(
        "outbox: {events} events in {docs} documents ({:.1} events per document)",
        events / docs.max(1.0)
    );
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
