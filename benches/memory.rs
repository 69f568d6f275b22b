//! Benchmark: the gateway's memory under concurrent uploads and downloads, and the time an
//! outage takes to surface. Starts its own database and the real `grids3` binary (release), runs
//! `streams` concurrent PUTs of `object MiB` each (UNSIGNED-PAYLOAD, streamed from a generator),
//! then as many concurrent GETs, sampling the gateway's RSS; prints peak RSS (VmHWM) after each
//! phase, RSS 15 s after the load, then kills the database and times a request's 503.
//!
//! Run: `GRIDS3_DEVDB_CACHE=10G cargo bench --bench memory` (env `BENCH_STREAMS`, default
//! "16,64"; `BENCH_OBJECT_MIB`, default "64,16", one per stream count).

use std::time::{Duration, Instant};

use futures::StreamExt;
use grids3::devdb::{free_port, LocalDb, Storage};

mod common;
use common::{cpu_secs, request, start_gateway, status_kib};

/// The gateway's allocator, so that the floors below are measured as the gateway would pay
/// them (with glibc's malloc the same run measured the driver's insert at 2.62 s/GiB and its
/// read at 1.97, against 1.59 and 0.76 with mimalloc).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

async fn phase(streams: usize, mib: usize, addr: &str, pid: u32, put: bool) -> (f64, u64) {
    let client = reqwest::Client::new();
    let t = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..streams {
        let (client, addr) = (client.clone(), addr.to_owned());
        tasks.push(tokio::spawn(async move {
            let path = format!("/mem/obj{i}");
            if put {
                let r = request(&client, &addr, "PUT", &path, Some((mib * 1024 * 1024, i))).await;
                assert!(r.status().is_success(), "PUT {}", r.status());
            } else {
                let r = request(&client, &addr, "GET", &path, None).await;
                assert!(r.status().is_success(), "GET {}", r.status());
                let mut body = r.bytes_stream();
                let mut n = 0;
                while let Some(b) = body.next().await {
                    n += b.unwrap().len();
                }
                assert_eq!(n, mib * 1024 * 1024);
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    (t.elapsed().as_secs_f64(), status_kib(pid, "VmHWM:"))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let list = |name: &str, default: &str| -> Vec<usize> {
        std::env::var(name)
            .unwrap_or_else(|_| default.into())
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect()
    };
    let streams = list("BENCH_STREAMS", "16,64");
    let sizes = list("BENCH_OBJECT_MIB", "64,16");
    for (&n, &mib) in streams.iter().zip(sizes.iter()) {
        let db = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
        let (mut child, addr) = start_gateway(&db.uri).await?;
        let pid = child.id();
        let client = reqwest::Client::new();
        let r = request(&client, &addr, "PUT", "/mem", None).await;
        assert!(r.status().is_success());
        let idle = status_kib(pid, "VmRSS:");
        let c0 = cpu_secs(pid);
        let (put_s, put_hwm) = phase(n, mib, &addr, pid, true).await;
        let c1 = cpu_secs(pid);
        let (get_s, get_hwm) = phase(n, mib, &addr, pid, false).await;
        let c2 = cpu_secs(pid);
        let gib = (n * mib) as f64 / 1024.0;
        println!(
            "{n} streams x {mib} MiB: gateway CPU per GiB: PUT {:.2} s, GET {:.2} s",
            (c1 - c0) / gib,
            (c2 - c1) / gib
        );
        tokio::time::sleep(Duration::from_secs(15)).await;
        let after = status_kib(pid, "VmRSS:");
        let total_mib = (n * mib) as f64;
        println!(
            "{n} streams x {mib} MiB: idle RSS {:.1} MiB; PUT {:.1} s ({:.0} MB/s), peak RSS {:.1} MiB; GET {:.1} s ({:.0} MB/s), peak RSS {:.1} MiB; RSS 15 s after the load {:.1} MiB",
            idle as f64 / 1024.0,
            put_s,
            total_mib * 1.048576 / put_s,
            put_hwm as f64 / 1024.0,
            get_s,
            total_mib * 1.048576 / get_s,
            get_hwm as f64 / 1024.0,
            after as f64 / 1024.0
        );
        // Outage: the database is killed; how long until a request gets its 503?
        let dbpid = db.server_pid().expect("own server");
        std::process::Command::new("kill")
            .args(["-9", &dbpid.to_string()])
            .status()?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let t = Instant::now();
        let r = request(&client, &addr, "GET", "/mem/obj0", None).await;
        println!(
            "outage: GET answered {} after {:.2} s (Retry-After: {:?})",
            r.status().as_u16(),
            t.elapsed().as_secs_f64(),
            r.headers().get("retry-after")
        );
        let _ = child.kill();
        let _ = child.wait();
        if std::env::var("BENCH_FLOOR").map_or(true, |v| v != "0") {
            let db = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
            floors(&db.uri, n * mib).await?;
        }
        drop(db);
    }
    Ok(())
}

/// What the same bytes cost this process without the gateway, per GiB: MD5 alone, as one
/// message (the `md-5` crate, what a lone upload uses) and in 16 busy lanes (what the
/// gateway's MD5 engine costs at best, where the CPU has AVX-512F); the mongodb driver
/// inserting them as 255 KiB chunk documents in 4 MiB batches, each document built once and
/// shared with the driver (`insert_many_shared`, as the gateway inserts them: what a PUT must
/// at least do besides hashing); and the driver reading them back as raw replies, each
/// chunk's data looked at in place (what a GET must at least do: the gateway reads chunks
/// the same way and sends slices of the replies). The gateway's CPU per GiB above is compared
/// with these floors.
async fn floors(uri: &str, mib: usize) -> anyhow::Result<()> {
    use md5::{Digest, Md5};
    use mongodb::bson::{doc, RawDocumentBuf};
    const CHUNK: usize = 255 * 1024;
    let me = std::process::id();
    let total = mib * 1024 * 1024;
    let gib = mib as f64 / 1024.0;
    let piece: Vec<u8> = (0..4 * 1024 * 1024)
        .map(|i| (i * 7 + i / 13) as u8)
        .collect();
    let c0 = common::cpu_secs(me);
    let mut h = Md5::new();
    for _ in 0..total / piece.len() {
        h.update(&piece);
    }
    std::hint::black_box(h.finalize());
    let md5_s = (common::cpu_secs(me) - c0) / gib;
    let lanes_s = if grids3::hashing::md5::lanes::available() {
        use grids3::hashing::md5::lanes::{compress16, LANES};
        // The same bytes as 16 messages side by side, 64 KiB of each per call.
        let mut states = [[0u32; 4]; LANES];
        let per = 64 * 1024;
        let c0 = common::cpu_secs(me);
        for i in 0..total / (per * LANES) {
            let data: [&[u8]; LANES] =
                std::array::from_fn(|l| &piece[((i + l) * per) % (piece.len() - per)..][..per]);
            compress16(&mut states, data, per / 64);
        }
        std::hint::black_box(states);
        format!("{:.2} s", (common::cpu_secs(me) - c0) / gib)
    } else {
        "not available (no AVX-512F)".to_owned()
    };
    let client = mongodb::Client::with_uri_str(uri).await?;
    let chunks = client
        .database("floor")
        .collection::<RawDocumentBuf>("f.chunks");
    chunks
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"files_id": 1, "n": 1})
                .build(),
        )
        .await?;
    let id = mongodb::bson::oid::ObjectId::new();
    let c0 = common::cpu_secs(me);
    let (mut n, mut batch, mut batch_bytes) = (0i32, Vec::new(), 0usize);
    let mut left = total;
    while left > 0 {
        let len = left.min(CHUNK);
        let at = (n as usize * CHUNK) % (piece.len() - CHUNK);
        batch.push(common::chunk_doc(id, n, &piece[at..at + len]));
        batch_bytes += len;
        left -= len;
        n += 1;
        if batch_bytes >= 4 * 1024 * 1024 || left == 0 {
            chunks
                .insert_many_shared(std::mem::take(&mut batch).into_iter().map(Into::into))
                .await?;
            batch_bytes = 0;
        }
    }
    let insert_s = (common::cpu_secs(me) - c0) / gib;
    let c0 = common::cpu_secs(me);
    let mut cursor = chunks
        .find(doc! {"files_id": id})
        .sort(doc! {"n": 1})
        .batch()
        .await?;
    let mut read = 0usize;
    while let Some(batch) = cursor.next().await {
        for d in batch?.doc_slices()? {
            if let Some(b) = d?.as_document().and_then(|d| d.get_binary("data").ok()) {
                read += std::hint::black_box(b.bytes).len();
            }
        }
    }
    assert_eq!(read, total);
    let read_s = (common::cpu_secs(me) - c0) / gib;
    println!(
        "floors, this process's CPU per GiB: MD5 as one message {md5_s:.2} s, in 16 busy lanes \
         {lanes_s}; driver insert of 255 KiB chunk documents {insert_s:.2} s; driver read of \
         the chunks as raw replies, data in place, {read_s:.2} s (GET floor)"
    );
    Ok(())
}
