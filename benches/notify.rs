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
//! Run: `cargo bench --bench notify`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use grids3::devdb::{free_port, LocalDb, Storage};

mod common;
use common::{put_bytes, request, start_gateway_env};

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
    let (mut off, mut on, mut acks) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let t = Instant::now();
        let n = put_phase(&addr, "notify-off", clients, secs, &format!("off{rep}"))
            .await
            .len();
        off.push(n as f64 / t.elapsed().as_secs_f64());
        let t = Instant::now();
        let a = put_phase(&addr, "notify-on", clients, secs, &format!("on{rep}")).await;
        on.push(a.len() as f64 / t.elapsed().as_secs_f64());
        println!(
            "rep {rep}: off {:.1} PUT/s, on {:.1} PUT/s",
            off.last().unwrap(),
            on.last().unwrap()
        );
        acks.extend(a);
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
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
