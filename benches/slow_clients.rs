//! Benchmark: slow and hostile clients against default settings (issue 25 item 5). Starts its
//! own database and the real `grids3` binary (release, no flags), then at once: 1,200
//! connections that never finish their request head (each reconnects when closed), 4 PUTs
//! dripping a byte every 20 s, and 64 readers of a 64 MiB object at 512 KiB/s; beside them a
//! normal client makes 20 GETs, each on a new connection. Prints each figure:
//! the normal GETs answered within 2 s, how long each drip body lasted, and peak RSS.
//!
//! Run: `cargo bench --bench slow_clients` (env `BENCH_SLOW` (1200), `BENCH_READERS` (64)).

use std::sync::Arc;
use std::time::Duration;

use grids3::devdb::{free_port, LocalDb, Storage};

mod common;
mod slowload;
use common::{request, signed, start_gateway, status_kib};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |name: &str, default: usize| -> usize {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let db = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let (mut child, addr) = start_gateway(&db.uri).await?;
    let pid = child.id();
    let client = reqwest::Client::new();
    assert!(request(&client, &addr, "PUT", "/slow", None)
        .await
        .status()
        .is_success());
    let small = request(&client, &addr, "PUT", "/slow/small", Some((4096, 1))).await;
    assert!(small.status().is_success());
    let big = request(&client, &addr, "PUT", "/slow/big", Some((64 << 20, 2))).await;
    assert!(big.status().is_success());
    // The setup's own peak (the 64 MiB PUT), then the peak is reset (Linux's `clear_refs` 5)
    // after the gateway settles, so the figure below is the load's.
    let setup_peak = status_kib(pid, "VmHWM:");
    tokio::time::sleep(Duration::from_secs(5)).await;
    let idle = status_kib(pid, "VmRSS:");
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5")?;
    let host = addr.clone();
    let sign: slowload::Signer = Arc::new(move |m: &str, p: &str| signed(m, &host, p, ""));
    let load = slowload::Load {
        slow_headers: env("BENCH_SLOW", 1200),
        attacker: [127, 0, 0, 2].into(),
        readers_from: [127, 0, 0, 3].into(),
        drips_from: [127, 0, 0, 4].into(),
        reconnect_delay: Duration::ZERO,
        drips: 4,
        readers: env("BENCH_READERS", 64),
        reader_rate: 512 * 1024,
        normal_gets: 20,
        warmup: Duration::from_secs(15),
        small: "/slow/small".into(),
        big: "/slow/big".into(),
    };
    let f = slowload::run(&addr, &load, sign).await;
    let hwm = status_kib(pid, "VmHWM:");
    let mut ms: Vec<u128> = f.gets.iter().flatten().map(|d| d.as_millis()).collect();
    ms.sort_unstable();
    let within = f
        .gets
        .iter()
        .filter(|g| g.is_some_and(|d| d <= Duration::from_secs(2)))
        .count();
    println!(
        "load: {} slow-header connections (reconnecting: {} connects in all), {} drip bodies, {} readers at {} KiB/s",
        load.slow_headers,
        f.slow_connects,
        load.drips,
        load.readers,
        load.reader_rate / 1024
    );
    println!(
        "normal client: {within} of {} GETs answered within 2 s; median {} ms, slowest {} ms",
        f.gets.len(),
        ms.get(ms.len() / 2).copied().unwrap_or_default(),
        ms.last().copied().unwrap_or_default()
    );
    println!(
        "drip bodies cut after: {}",
        f.drips_cut_after
            .iter()
            .map(|d| d.map_or("not cut in 120 s".to_owned(), |d| format!(
                "{:.1} s",
                d.as_secs_f64()
            )))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "slow readers received {:.0} MiB; gateway RSS: setup (64 MiB PUT) peak {:.1} MiB, idle before the load {:.1} MiB, peak under the load {:.1} MiB",
        f.reader_bytes as f64 / 1048576.0,
        setup_peak as f64 / 1024.0,
        idle as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
