//! Benchmark: throughput against the database's own floor, in one run on one server.
//! 1. Small objects: 32 clients PUT, then GET, 4 KiB objects through the real `grids3` binary
//!    (signed HTTP), against 32 tasks doing the raw driver operations a round trip costs
//!    (`insert_one` of a 4 KiB document, `find_one` by `_id`) on the same server.
//! 2. Scaling: aggregate GET throughput of one 256 MiB object read by 1, 4 and 16 concurrent
//!    streams.
//! 3. Listing page by page (ListObjectsV2, 1,000 keys a page) of a bucket of `BENCH_LIST_KEYS`
//!    keys, against the raw driver's sorted `find` of the same pages.
//!
//! Run: `GRIDS3_DEVDB_CACHE=10G cargo bench --bench throughput` (env `BENCH_SECS`, default 10
//! per small-object phase; `BENCH_LIST_KEYS`, default 100000; `BENCH_LIST_SAMPLE`, unset:
//! time that many pages at five positions of the key range and estimate the whole pass, for
//! buckets too large to page through here; `BENCH_PARTS`, default "small,scaling,listing").

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use grids3::devdb::{free_port, LocalDb, Storage};
use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary, Document};

mod common;
use common::{request, request_q, start_gateway};

const CLIENTS: usize = 32;

/// Runs `f(client index, iteration)` on `CLIENTS` tasks for `secs`; operations per second.
async fn rate<F, Fut>(secs: u64, f: F) -> f64
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let f = Arc::new(f);
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(secs);
    let t = Instant::now();
    let tasks: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (f, done) = (f.clone(), done.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while Instant::now() < until {
                    f(c, i).await;
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / t.elapsed().as_secs_f64()
}

async fn small_objects(addr: &str, db: &mongodb::Database, secs: u64) {
    let http = reqwest::Client::new();
    assert!(request(&http, addr, "PUT", "/small", None)
        .await
        .status()
        .is_success());
    let written: Arc<Vec<AtomicU64>> = Arc::new((0..CLIENTS).map(|_| AtomicU64::new(0)).collect());
    let (h, a, w) = (http.clone(), addr.to_owned(), written.clone());
    let put = rate(secs, move |c, i| {
        let (h, a, w) = (h.clone(), a.clone(), w.clone());
        async move {
            let r = request(&h, &a, "PUT", &format!("/small/c{c}/{i}"), Some((4096, c))).await;
            assert!(r.status().is_success(), "PUT {}", r.status());
            w[c].fetch_max(i + 1, Ordering::Relaxed);
        }
    })
    .await;
    let (h, a, w) = (http.clone(), addr.to_owned(), written.clone());
    let get = rate(secs, move |c, i| {
        let (h, a) = (h.clone(), a.clone());
        let k = i % w[c].load(Ordering::Relaxed).max(1);
        async move {
            let r = request(&h, &a, "GET", &format!("/small/c{c}/{k}"), None).await;
            assert!(r.status().is_success(), "GET {}", r.status());
            assert_eq!(r.bytes().await.unwrap().len(), 4096);
        }
    })
    .await;
    let coll = db.collection::<Document>("raw_small");
    let data = vec![7u8; 4096];
    let ids: Arc<std::sync::Mutex<Vec<ObjectId>>> = Arc::default();
    let (c2, d2, ids2) = (coll.clone(), data.clone(), ids.clone());
    let insert = rate(secs, move |_, _| {
        let (c, d, ids) = (c2.clone(), d2.clone(), ids2.clone());
        async move {
            let id = ObjectId::new();
            c.insert_one(
                doc! {"_id": id, "data": Binary { subtype: BinarySubtype::Generic, bytes: d }},
            )
            .await
            .unwrap();
            ids.lock().unwrap().push(id);
        }
    })
    .await;
    let ids: Arc<Vec<ObjectId>> = Arc::new(ids.lock().unwrap().clone());
    let c3 = coll.clone();
    let find = rate(secs, move |c, i| {
        let (coll, ids) = (c3.clone(), ids.clone());
        async move {
            let id = ids[(c * 7919 + i as usize) % ids.len()];
            assert!(coll.find_one(doc! {"_id": id}).await.unwrap().is_some());
        }
    })
    .await;
    // The same reads as a GET makes, from the driver: the newest revision of a key, then its
    // chunk (the gateway's own files, so the data and indexes are the same).
    let (f4, ch4) = (
        db.collection::<Document>("small.files"),
        db.collection::<Document>("small.chunks"),
    );
    let w4 = written.clone();
    let pair = rate(secs, move |c, i| {
        let (files, chunks) = (f4.clone(), ch4.clone());
        let k = i % w4[c].load(Ordering::Relaxed).max(1);
        async move {
            let f = files
                .find_one(doc! {"filename": format!("c{c}/{k}")})
                .sort(doc! {"uploadDate": -1, "_id": -1})
                .await
                .unwrap()
                .expect("written");
            let id = f.get("_id").unwrap().clone();
            let n = chunks
                .find(doc! {"files_id": id, "n": {"$gte": 0, "$lt": 1}})
                .sort(doc! {"n": 1})
                .await
                .unwrap()
                .count()
                .await;
            assert_eq!(n, 1);
        }
    })
    .await;
    println!("small objects (4 KiB, {CLIENTS} clients, {secs} s a phase):");
    println!(
        "  raw files+chunks lookup pair (a GET's two queries) {pair:.0}/s, ratio to raw find_one {:.2}; grids3 GET / pair {:.2}",
        pair / find,
        get / pair
    );
    println!(
        "  grids3 PUT {put:.0}/s, raw insert_one {insert:.0}/s, ratio {:.2}",
        put / insert
    );
    println!(
        "  grids3 GET {get:.0}/s, raw find_one {find:.0}/s, ratio {:.2}",
        get / find
    );
}

async fn scaling(addr: &str) {
    let http = reqwest::Client::new();
    assert!(request(&http, addr, "PUT", "/scale", None)
        .await
        .status()
        .is_success());
    let size = 256 * 1024 * 1024;
    let r = request(&http, addr, "PUT", "/scale/big", Some((size, 3))).await;
    assert!(r.status().is_success());
    println!("GET scaling (one 256 MiB object, concurrent streams):");
    for streams in [1usize, 4, 16] {
        let t = Instant::now();
        let tasks: Vec<_> = (0..streams)
            .map(|_| {
                let (h, a) = (http.clone(), addr.to_owned());
                tokio::spawn(async move {
                    let r = request(&h, &a, "GET", "/scale/big", None).await;
                    assert!(r.status().is_success());
                    let mut body = r.bytes_stream();
                    let mut n = 0;
                    while let Some(b) = body.next().await {
                        n += b.unwrap().len();
                    }
                    assert_eq!(n, 256 * 1024 * 1024);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        let secs = t.elapsed().as_secs_f64();
        println!(
            "  {streams:>2} streams: {secs:.1} s, aggregate {:.0} MB/s",
            (streams * size) as f64 / 1e6 / secs
        );
    }
}

/// Creates bucket `paged` and writes `keys` files documents into it directly (as the listing
/// bench does): what is measured is the listing, not 100,000 PUTs.
async fn fill(http: &reqwest::Client, addr: &str, db: &mongodb::Database, keys: usize) {
    assert!(request(http, addr, "PUT", "/paged", None)
        .await
        .status()
        .is_success());
    let files = db.collection::<Document>("paged.files");
    let t = Instant::now();
    for batch in (0..keys).collect::<Vec<_>>().chunks(10_000) {
        let docs: Vec<Document> = batch
            .iter()
            .map(|i| {
                doc! {"_id": ObjectId::new(), "filename": format!("k/{i:08}"), "length": 0_i64,
                "chunkSize": 261120, "uploadDate": mongodb::bson::DateTime::now(),
                "metadata": {"etag": "\"d41d8cd98f00b204e9800998ecf8427e\""}}
            })
            .collect();
        files.insert_many(docs).await.unwrap();
    }
    println!(
        "listing: filled {keys} keys in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

/// One ListObjectsV2 page of 1,000 keys after `start_after` (`""`: the first): its keys and
/// its continuation token.
async fn api_page(
    http: &reqwest::Client,
    addr: &str,
    start_after: &str,
    token: Option<&str>,
) -> (usize, Option<String>) {
    let mut q = String::from("list-type=2&max-keys=1000");
    if let Some(tok) = token {
        q.push_str(&format!(
            "&continuation-token={}",
            grids3::auth::sigv4::uri_encode(tok, false)
        ));
    } else if !start_after.is_empty() {
        q.push_str(&format!(
            "&start-after={}",
            grids3::auth::sigv4::uri_encode(start_after, false)
        ));
    }
    let r = request_q(http, addr, "GET", "/paged", &q, None).await;
    assert!(r.status().is_success());
    let body = r.text().await.unwrap();
    let token = body
        .split_once("<NextContinuationToken>")
        .and_then(|(_, rest)| rest.split_once("</NextContinuationToken>"))
        .map(|(t, _)| t.to_owned());
    (body.matches("<Key>").count(), token)
}

/// The driver's own page of 1,000 filenames after `marker`; the last one.
async fn raw_page(files: &mongodb::Collection<Document>, marker: &str) -> Option<String> {
    let page: Vec<Document> = files
        .find(doc! {"filename": {"$gt": marker}})
        .sort(doc! {"filename": 1, "uploadDate": 1})
        .limit(1000)
        .await
        .unwrap()
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(|d| d.unwrap())
        .collect();
    Some(page.last()?.get_str("filename").unwrap().to_owned())
}

/// Paging through a bucket too large to page through here (SecantusDB reads the rest of the
/// key range for every page, so a whole pass is quadratic): `sample` consecutive pages timed at
/// five positions of the key range, for ListObjectsV2 and for the driver, and the whole pass
/// estimated from them (each position's mean page time over its fifth of the pages).
async fn listing_sampled(addr: &str, db: &mongodb::Database, keys: usize, sample: usize) {
    let http = reqwest::Client::new();
    fill(&http, addr, db, keys).await;
    let files = db.collection::<Document>("paged.files");
    let pages = keys.div_ceil(1000);
    let (mut api_total, mut raw_total) = (0.0, 0.0);
    for at in [0.0, 0.25, 0.5, 0.75, 0.99] {
        let first = ((keys as f64 * at) as usize).min(keys - 1);
        let start = if first == 0 {
            String::new()
        } else {
            format!("k/{:08}", first - 1)
        };
        let t = Instant::now();
        let (mut token, mut seen) = (None, 0);
        for _ in 0..sample {
            let (n, next) = api_page(&http, addr, &start, token.as_deref()).await;
            seen += n;
            token = next;
            if token.is_none() {
                break;
            }
        }
        let api = t.elapsed().as_secs_f64() / sample as f64;
        assert!(seen > 0);
        let t = Instant::now();
        let mut marker = start.clone();
        for _ in 0..sample {
            match raw_page(&files, &marker).await {
                Some(m) => marker = m,
                None => break,
            }
        }
        let raw = t.elapsed().as_secs_f64() / sample as f64;
        println!(
            "listing {keys} keys, {sample} pages from key {first}: ListObjectsV2 {api:.3} s a page, raw find {raw:.3} s a page"
        );
        api_total += api * pages as f64 / 5.0;
        raw_total += raw * pages as f64 / 5.0;
    }
    println!(
        "listing {keys} keys page by page, estimated from the samples: ListObjectsV2 {pages} pages in about {api_total:.0} s; raw sorted find about {raw_total:.0} s; ratio {:.2}",
        api_total / raw_total
    );
}

async fn listing(addr: &str, db: &mongodb::Database, keys: usize) {
    let http = reqwest::Client::new();
    fill(&http, addr, db, keys).await;
    let files = db.collection::<Document>("paged.files");
    let t = Instant::now();
    let (mut pages, mut seen, mut token): (usize, usize, Option<String>) = (0, 0, None);
    loop {
        let (n, next) = api_page(&http, addr, "", token.as_deref()).await;
        seen += n;
        pages += 1;
        token = next;
        if token.is_none() {
            break;
        }
    }
    let api = t.elapsed().as_secs_f64();
    assert_eq!(seen, keys);
    let t = Instant::now();
    let (mut marker, mut raw_pages) = (String::new(), 0);
    while let Some(m) = raw_page(&files, &marker).await {
        marker = m;
        raw_pages += 1;
    }
    let raw = t.elapsed().as_secs_f64();
    assert_eq!(raw_pages, keys.div_ceil(1000));
    println!(
        "listing {keys} keys page by page: ListObjectsV2 {pages} pages in {api:.1} s; raw sorted find of the same pages {raw:.1} s; ratio {:.2}",
        api / raw
    );
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let secs: u64 = std::env::var("BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let keys: usize = std::env::var("BENCH_LIST_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let parts = std::env::var("BENCH_PARTS").unwrap_or_else(|_| "small,scaling,listing".into());
    let local = LocalDb::start_server(free_port()?, Storage::Ephemeral).await?;
    let (mut child, addr) = start_gateway(&local.uri).await?;
    let client = mongodb::Client::with_uri_str(&local.uri).await?;
    let db = client.database("grids3");
    println!("server {}", local.kind);
    if parts.contains("small") {
        small_objects(&addr, &db, secs).await;
    }
    if parts.contains("scaling") {
        scaling(&addr).await;
    }
    if parts.contains("listing") {
        match std::env::var("BENCH_LIST_SAMPLE")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            Some(sample) => listing_sampled(&addr, &db, keys, sample).await,
            None => listing(&addr, &db, keys).await,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}
