//! Benchmark: server-side encryption's cost. Starts its own database and the real `grids3`
//! binary (release) with a master key, then PUTs and GETs one `BENCH_MIB` MiB object per mode
//! (plain, SSE-S3, SSE-KMS, SSE-C), `BENCH_REPS` times each, interleaved, and prints the median
//! throughput, its ratio to plain, and the gateway's CPU seconds per GiB from `/proc`.
//!
//! Run: `GRIDS3_DEVDB_CACHE=10G cargo bench --bench encryption` (env `BENCH_MIB`, default 256;
//! `BENCH_REPS`, default 5).

use std::time::Instant;

use base64::Engine;
use futures::StreamExt;
use grids3::devdb::{free_port, LocalDb, Storage};
use md5::{Digest, Md5};

mod common;
use common::{cpu_secs, request, request_h, start_gateway_env};

/// Headers of a request.
type Headers = Vec<(String, String)>;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |n: &str, d: usize| -> usize {
        std::env::var(n)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (mib, reps) = (env("BENCH_MIB", 256), env("BENCH_REPS", 5));
    let db = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let (mut child, addr) =
        start_gateway_env(&db.uri, &[("GRIDS3_MASTER_KEY", "bench master key")]).await?;
    let pid = child.id();
    let client = reqwest::Client::new();
    assert!(request(&client, &addr, "PUT", "/enc", None)
        .await
        .status()
        .is_success());
    let b64 = base64::engine::general_purpose::STANDARD;
    let key = [42u8; 32];
    let ssec = vec![
        (
            "x-amz-server-side-encryption-customer-algorithm".to_owned(),
            "AES256".to_owned(),
        ),
        (
            "x-amz-server-side-encryption-customer-key".to_owned(),
            b64.encode(key),
        ),
        (
            "x-amz-server-side-encryption-customer-key-md5".to_owned(),
            b64.encode(Md5::digest(key)),
        ),
    ];
    let sse = |v: &str| vec![("x-amz-server-side-encryption".to_owned(), v.to_owned())];
    let modes: Vec<(&str, Headers, Headers)> = vec![
        ("plain", vec![], vec![]),
        ("SSE-S3", sse("AES256"), vec![]),
        ("SSE-KMS", sse("aws:kms"), vec![]),
        ("SSE-C", ssec.clone(), ssec),
    ];
    let len = mib * 1024 * 1024;
    let gib = mib as f64 / 1024.0;
    // (put MB/s, get MB/s, put CPU s/GiB, get CPU s/GiB) per mode, per repetition.
    let mut results: Vec<Vec<(f64, f64, f64, f64)>> = vec![Vec::new(); modes.len()];
    for rep in 0..reps {
        for (i, (name, put_h, get_h)) in modes.iter().enumerate() {
            let path = format!("/enc/{name}");
            let (c0, t) = (cpu_secs(pid), Instant::now());
            let r = request_h(&client, &addr, "PUT", &path, put_h, Some((len, rep))).await;
            assert!(r.status().is_success(), "PUT {name}: {}", r.status());
            let put_s = t.elapsed().as_secs_f64();
            let (c1, t) = (cpu_secs(pid), Instant::now());
            let r = request_h(&client, &addr, "GET", &path, get_h, None).await;
            assert!(r.status().is_success(), "GET {name}: {}", r.status());
            let mut body = r.bytes_stream();
            let mut n = 0;
            while let Some(b) = body.next().await {
                n += b.unwrap().len();
            }
            assert_eq!(n, len);
            let get_s = t.elapsed().as_secs_f64();
            let c2 = cpu_secs(pid);
            let mb = len as f64 / 1e6;
            results[i].push((mb / put_s, mb / get_s, (c1 - c0) / gib, (c2 - c1) / gib));
        }
    }
    let med =
        |i: usize, f: fn(&(f64, f64, f64, f64)) -> f64| median(results[i].iter().map(f).collect());
    let (plain_put, plain_get) = (med(0, |r| r.0), med(0, |r| r.1));
    println!("{mib} MiB objects, median of {reps} (interleaved), gateway CPU from /proc:");
    for (i, (name, _, _)) in modes.iter().enumerate() {
        let (put, get) = (med(i, |r| r.0), med(i, |r| r.1));
        println!(
            "{name:8} PUT {put:6.0} MB/s ({:.2}x plain), CPU {:.2} s/GiB | GET {get:6.0} MB/s ({:.2}x plain), CPU {:.2} s/GiB",
            put / plain_put,
            med(i, |r| r.2),
            get / plain_get,
            med(i, |r| r.3)
        );
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
