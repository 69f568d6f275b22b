//! Benchmark: content-addressed buckets (`x-grids3-storage-mode: content`) against GridFS
//! buckets, through the real `grids3` binary on one local database in one run:
//! 1. `BENCH_PUTS` PUTs of the same `BENCH_MIB` object: bytes stored (chunk and content
//!    documents' data, read back from the database) and PUT throughput, in both modes;
//! 2. CopyObject of a `BENCH_COPY_MIB` object: bytes stored by the copy, and its time;
//! 3. a corpus of JSON and text objects: the bytes gzip saved;
//! 4. GET throughput of the large object, and 4 KiB GETs per second with 32 clients;
//! 5. CompleteMultipartUpload of `BENCH_MP_MIB` made of 8 MiB + 1 byte parts, in both modes:
//!    its time, and the chunk bytes it wrote (chunk documents that were not there before).
//!
//! Run: `GRIDS3_DEVDB_CACHE=16G cargo bench --bench content` (env `BENCH_PUTS`, default 100;
//! `BENCH_MIB`, default 64; `BENCH_COPY_MIB`, default 1024; `BENCH_MP_MIB`, default 1024;
//! `BENCH_SECTIONS`, default `12345`: which of the sections above run, so that a large one can
//! run alone on a fresh database).

use std::time::Instant;

use futures::StreamExt;
use grids3::devdb::{free_port, LocalDb, Storage};
use mongodb::bson::doc;

mod common;
use common::{put_bytes, request, request_h, start_gateway};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Bytes of object data a bucket stores: its chunks' and content documents' binary fields.
async fn stored(db: &mongodb::Database, bucket: &str) -> u64 {
    let mut total = 0u64;
    for (coll, fields) in [
        (format!("{bucket}.chunks"), vec!["data"]),
        (format!("{bucket}._blobs.chunks"), vec!["data"]),
        (format!("{bucket}._content"), vec!["in", "zin"]),
        (format!("{bucket}.files"), vec!["in"]),
    ] {
        let mut cursor = db
            .collection::<mongodb::bson::RawDocumentBuf>(&coll)
            .find(doc! {})
            .await
            .unwrap();
        while let Some(d) = cursor.next().await {
            let d = d.unwrap();
            for f in &fields {
                if let Ok(b) = d.get_binary(f) {
                    total += b.bytes.len() as u64;
                }
            }
        }
    }
    total
}

/// The `_id`s of a bucket's chunk documents (both chunk collections).
async fn chunk_ids(db: &mongodb::Database, bucket: &str) -> Vec<mongodb::bson::Bson> {
    let mut ids = Vec::new();
    for coll in [
        format!("{bucket}.chunks"),
        format!("{bucket}._blobs.chunks"),
    ] {
        let mut cursor = db
            .collection::<mongodb::bson::Document>(&coll)
            .find(doc! {})
            .projection(doc! {"_id": 1})
            .await
            .unwrap();
        while let Some(d) = cursor.next().await {
            if let Some(id) = d.unwrap().get("_id") {
                ids.push(id.clone());
            }
        }
    }
    ids
}

/// Chunk documents of a bucket that are not among `before`: how many, and their data bytes.
async fn new_chunks(
    db: &mongodb::Database,
    bucket: &str,
    before: &[mongodb::bson::Bson],
) -> (u64, u64) {
    let before: std::collections::HashSet<String> = before.iter().map(|b| b.to_string()).collect();
    let (mut n, mut bytes) = (0, 0);
    for coll in [
        format!("{bucket}.chunks"),
        format!("{bucket}._blobs.chunks"),
    ] {
        let mut cursor = db
            .collection::<mongodb::bson::RawDocumentBuf>(&coll)
            .find(doc! {})
            .await
            .unwrap();
        while let Some(d) = cursor.next().await {
            let d = d.unwrap();
            let id = d
                .get("_id")
                .ok()
                .flatten()
                .and_then(|v| v.to_raw_bson().try_into().ok())
                .map(|b: mongodb::bson::Bson| b.to_string())
                .unwrap_or_default();
            if !before.contains(&id) {
                n += 1;
                bytes += d
                    .get_binary("data")
                    .map(|b| b.bytes.len() as u64)
                    .unwrap_or(0);
            }
        }
    }
    (n, bytes)
}

/// A signed POST with a query string and a body.
async fn post_q(
    http: &reqwest::Client,
    addr: &str,
    path: &str,
    query: &str,
    body: Vec<u8>,
) -> reqwest::Response {
    let mut rb = http.post(format!("http://{addr}{path}?{query}"));
    for (k, v) in common::signed("POST", addr, path, query) {
        rb = rb.header(k, v);
    }
    rb.body(body).send().await.expect("request")
}

async fn create(http: &reqwest::Client, addr: &str, bucket: &str, mode: &str) {
    let r = request_h(
        http,
        addr,
        "PUT",
        &format!("/{bucket}"),
        &[("x-grids3-storage-mode".into(), mode.into())],
        None,
    )
    .await;
    assert!(r.status().is_success(), "create {bucket}: {}", r.status());
}

async fn get_all(http: &reqwest::Client, addr: &str, path: &str) -> usize {
    let r = request(http, addr, "GET", path, None).await;
    assert!(r.status().is_success(), "GET {path}: {}", r.status());
    let mut n = 0;
    let mut s = r.bytes_stream();
    while let Some(b) = s.next().await {
        n += b.unwrap().len();
    }
    n
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let puts = env("BENCH_PUTS", 100);
    let mib = env("BENCH_MIB", 64);
    let copy_mib = env("BENCH_COPY_MIB", 1024);
    let sections = std::env::var("BENCH_SECTIONS").unwrap_or_else(|_| "12345".into());
    let run = |n: char| sections.contains(n);
    let local = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let (mut child, addr) = start_gateway(&local.uri).await?;
    let db = mongodb::Client::with_uri_str(&local.uri)
        .await?
        .database("grids3");
    let http = reqwest::Client::new();
    println!("server {}", local.kind);
    let size = mib * 1024 * 1024;
    let mb = size as f64 / 1e6;

    if run('1') {
        // 1. The same object PUT again and again (content: new keys; gridfs: new keys too, so
        // both modes keep every object; gridfs mode stops at 10 to bound the database).
        for (bucket, mode, n) in [
            ("dedup-cas", "content", puts),
            ("dedup-fs", "gridfs", puts.min(10)),
        ] {
            create(&http, &addr, bucket, mode).await;
            let mut rates = Vec::new();
            for i in 0..n {
                let t = Instant::now();
                let r = request(
                    &http,
                    &addr,
                    "PUT",
                    &format!("/{bucket}/o{i}"),
                    Some((size, 7)),
                )
                .await;
                assert!(r.status().is_success(), "PUT: {}", r.status());
                rates.push(mb / t.elapsed().as_secs_f64());
            }
            let first = rates[0];
            rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let kept = stored(&db, bucket).await;
            println!(
            "{mode}: {n} PUTs of the same {mib} MiB: median {:.1} MB/s (first {first:.1}); bytes stored {} = {:.2}x one copy",
            rates[rates.len() / 2],
            kept,
            kept as f64 / size as f64
        );
        }
    }
    if run('2') {
        // 2. CopyObject of a large object.
        let csize = copy_mib * 1024 * 1024;
        for (bucket, mode) in [("copy-cas", "content"), ("copy-fs", "gridfs")] {
            create(&http, &addr, bucket, mode).await;
            let r = request(
                &http,
                &addr,
                "PUT",
                &format!("/{bucket}/src"),
                Some((csize, 3)),
            )
            .await;
            assert!(r.status().is_success());
            let before = stored(&db, bucket).await;
            let t = Instant::now();
            let r = request_h(
                &http,
                &addr,
                "PUT",
                &format!("/{bucket}/dst"),
                &[("x-amz-copy-source".into(), format!("/{bucket}/src"))],
                None,
            )
            .await;
            assert!(r.status().is_success(), "copy: {}", r.status());
            let secs = t.elapsed().as_secs_f64();
            let written = stored(&db, bucket).await - before;
            println!(
            "{mode}: CopyObject of {copy_mib} MiB: {secs:.2} s, {written} bytes stored by the copy"
        );
            let t = Instant::now();
            let n = get_all(&http, &addr, &format!("/{bucket}/dst")).await;
            assert_eq!(n, csize);
            println!(
                "{mode}: GET of the {copy_mib} MiB copy: {:.1} MB/s",
                csize as f64 / 1e6 / t.elapsed().as_secs_f64()
            );
        }
    }
    if run('3') {
        // 3. A corpus of JSON and text.
        create(&http, &addr, "corpus", "content").await;
        let mut plain = 0usize;
        for i in 0..200usize {
            let (body, ct) = if i % 2 == 0 {
                let items: Vec<String> = (0..(50 + i * 7))
                .map(|j| format!(r#"{{"id":{j},"name":"item {j} of {i}","tags":["a","b","c"],"price":{}.{:02},"active":{}}}"#, j * 3 + i, j % 100, j % 2 == 0))
                .collect();
                (
                    format!("[{}]", items.join(",")).into_bytes(),
                    "application/json",
                )
            } else {
                let text: String = (0..(40 + i * 5))
                    .map(|j| {
                        format!(
                        "{i}:{j} It was the best of times, it was the worst of times; line {j}.\n"
                    )
                    })
                    .collect();
                (text.into_bytes(), "text/plain")
            };
            plain += body.len();
            let r = put_bytes(
                &http,
                &addr,
                &format!("/corpus/doc{i}"),
                &[("content-type".into(), ct.into())],
                body,
            )
            .await;
            assert!(r.status().is_success());
        }
        let kept = stored(&db, "corpus").await as usize;
        println!(
        "corpus of 200 JSON and text objects: {plain} bytes, {kept} stored ({:.1} % saved by gzip)",
        100.0 * (1.0 - kept as f64 / plain as f64)
    );
    }
    if run('4') {
        // 4. Small objects: 4 KiB GETs per second with 32 clients, both modes.
        for (bucket, mode) in [("small-cas", "content"), ("small-fs", "gridfs")] {
            create(&http, &addr, bucket, mode).await;
            for i in 0..64 {
                let r = request(
                    &http,
                    &addr,
                    "PUT",
                    &format!("/{bucket}/k{i}"),
                    Some((4096, i)),
                )
                .await;
                assert!(r.status().is_success());
            }
            let t = Instant::now();
            let secs = 10.0;
            let mut tasks = Vec::new();
            for c in 0..32usize {
                let (http, addr, bucket) = (http.clone(), addr.clone(), bucket.to_owned());
                tasks.push(tokio::spawn(async move {
                    let mut n = 0usize;
                    while t.elapsed().as_secs_f64() < secs {
                        assert_eq!(
                            get_all(&http, &addr, &format!("/{bucket}/k{}", (c + n) % 64)).await,
                            4096
                        );
                        n += 1;
                    }
                    n
                }));
            }
            let mut total = 0;
            for t in tasks {
                total += t.await.unwrap();
            }
            println!(
                "{mode}: 4 KiB GETs, 32 clients: {:.0}/s",
                total as f64 / t.elapsed().as_secs_f64()
            );
        }
    }
    if run('5') {
        // 5. Multipart completion: parts of 8 MiB + 1 byte, so no part is chunk-aligned.
        let mp_mib = env("BENCH_MP_MIB", 1024);
        let total = mp_mib * 1024 * 1024;
        let part = 8 * 1024 * 1024 + 1;
        let nparts = total.div_ceil(part);
        for (bucket, mode) in [("mp-cas", "content"), ("mp-fs", "gridfs")] {
            create(&http, &addr, bucket, mode).await;
            let path = format!("/{bucket}/big");
            let r = post_q(&http, &addr, &path, "uploads", Vec::new()).await;
            let text = r.text().await?;
            let id = text
                .split("<UploadId>")
                .nth(1)
                .and_then(|s| s.split("</UploadId>").next())
                .expect("an upload id")
                .to_owned();
            let mut xml = String::from("<CompleteMultipartUpload>");
            for n in 1..=nparts {
                let len = if n == nparts {
                    total - part * (nparts - 1)
                } else {
                    part
                };
                let r = common::request_q(
                    &http,
                    &addr,
                    "PUT",
                    &path,
                    &format!("partNumber={n}&uploadId={id}"),
                    Some((len, n)),
                )
                .await;
                assert!(r.status().is_success(), "part {n}: {}", r.status());
                let etag = r.headers()["etag"].to_str()?.to_owned();
                xml.push_str(&format!(
                    "<Part><PartNumber>{n}</PartNumber><ETag>{etag}</ETag></Part>"
                ));
            }
            xml.push_str("</CompleteMultipartUpload>");
            let before = chunk_ids(&db, bucket).await;
            let t = Instant::now();
            let r = post_q(
                &http,
                &addr,
                &path,
                &format!("uploadId={id}"),
                xml.into_bytes(),
            )
            .await;
            let ok = r.status().is_success();
            let answer = r.text().await?;
            assert!(ok && answer.contains("<ETag>"), "complete: {answer}");
            let secs = t.elapsed().as_secs_f64();
            let (n, bytes) = new_chunks(&db, bucket, &before).await;
            println!(
            "{mode}: CompleteMultipartUpload of {mp_mib} MiB in {nparts} parts of 8 MiB + 1 byte: {secs:.2} s; {bytes} bytes written in {n} new chunk documents"
        );
            let t = Instant::now();
            assert_eq!(get_all(&http, &addr, &path).await, total);
            println!(
                "{mode}: GET of the multipart object: {:.1} MB/s",
                total as f64 / 1e6 / t.elapsed().as_secs_f64()
            );
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
