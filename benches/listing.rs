//! Benchmark: listings of a bucket with many keys. Fills a bucket with `BENCH_KEYS` keys
//! (default 100,000) under `BENCH_PREFIXES` top-level prefixes (default 100), as files
//! documents inserted in batches, then times (median of 3 each):
//! - the root listing with delimiter `/` (every common prefix, page of 1,000), as
//!   `aws s3 ls s3://bucket/` asks for it;
//! - a 1,000-key page in the middle of the bucket (ListObjectsV2 without delimiter);
//! - a raw `find` of the same 1,000 filenames through the driver, bounded on both sides (the
//!   database's floor for a page), for the ratio;
//! - a full listing of every key in pages of 1,000 (keys/s, and this process's resident
//!   memory before and after), on a fresh store that has learned nothing of the bucket.
//!
//! The first root listing is also timed alone, on a store that has never listed the bucket
//! (no fence posts), as "cold".
//!
//! Run: `cargo bench --bench listing`. Uses `MONGODB_URI` when set, else starts the local
//! database like the tests do.

use std::time::Instant;

use futures::TryStreamExt;
use grids3::devdb::{LocalDb, Storage};
use grids3::storage::meta::{DbClock, MetaStore};
use grids3::storage::objects::{ListQuery, ObjectStore};
use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

/// A page of 1,000 from the top of the bucket, with or without delimiter `/`, after `after`.
fn query(delimiter: bool, after: Option<String>) -> ListQuery {
    ListQuery {
        prefix: String::new(),
        delimiter: delimiter.then(|| "/".into()),
        after,
        max: 1000,
    }
}

/// This process's resident memory in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let keys = env("BENCH_KEYS", 100_000);
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let prefixes = env("BENCH_PREFIXES", 100);
    let local = LocalDb::start(Storage::Ephemeral).await?;
    let client = grids3::metrics::mongodb_client(&local.uri).await?;
    let db = client.database("bench_listing");
    db.drop().await?;
    let meta = MetaStore::open(&db, DbClock::new(0)).await?;
    let store = ObjectStore::new(db.clone(), meta, 255 * 1024);
    let fs = store.gridfs("big");
    fs.ensure_indexes().await?;
    let t = Instant::now();
    let mut batch = Vec::with_capacity(5000);
    for i in 0..keys {
        let name = format!("p{:03}/k{:07}", i % prefixes, i);
        batch.push(doc! {
            "_id": ObjectId::new(), "length": 0i64, "chunkSize": 261120,
            "uploadDate": DateTime::now(), "filename": name,
            "metadata": {"etag": "\"d41d8cd98f00b204e9800998ecf8427e\""},
        });
        if batch.len() == 5000 {
            fs.files().insert_many(std::mem::take(&mut batch)).await?;
        }
    }
    if !batch.is_empty() {
        fs.files().insert_many(batch).await?;
    }
    println!(
        "filled {keys} keys under {prefixes} prefixes in {:.1} s ({})",
        t.elapsed().as_secs_f64(),
        local.kind
    );
    // The posts PUTs of these keys would have recorded (`storage::meta::posts`); with
    // BENCH_NO_POSTS, none, as for a bucket another GridFS writer filled.
    if std::env::var_os("BENCH_NO_POSTS").is_none() {
        let posts: Vec<String> = (0..keys)
            .map(|i| format!("p{:03}/k{:07}", i % prefixes, i))
            .filter(|k| grids3::storage::ranges::posts::is_post(k))
            .collect();
        store.meta().record_posts("big", &posts).await?;
        println!("recorded {} posts, as PUTs would", posts.len());
    } else {
        println!("no posts recorded (BENCH_NO_POSTS)");
    }
    let list_all = |store: ObjectStore| async move {
        let mut after: Option<String> = None;
        let mut n = 0usize;
        let mut peak = rss_kib();
        loop {
            let p = store.list("big", &query(false, after.clone())).await?;
            n += p.entries.len();
            peak = peak.max(rss_kib());
            if !p.truncated {
                break;
            }
            after = p.entries.last().map(|e| e.name().to_owned());
        }
        anyhow::Ok((n, peak))
    };
    let cold = ObjectStore::new(
        db.clone(),
        MetaStore::open(&db, DbClock::new(0)).await?,
        255 * 1024,
    );
    let t = Instant::now();
    let p = cold.list("big", &query(true, None)).await?;
    let cold_root = t.elapsed().as_secs_f64();
    assert_eq!(p.entries.len(), prefixes.min(1000));
    let full = ObjectStore::new(
        db.clone(),
        MetaStore::open(&db, DbClock::new(0)).await?,
        255 * 1024,
    );
    let rss_before = rss_kib();
    let t = Instant::now();
    let (listed, peak) = list_all(full).await?;
    let full_secs = t.elapsed().as_secs_f64();
    assert_eq!(listed, keys);
    let mut root = Vec::new();
    let mut page = Vec::new();
    let mut raw = Vec::new();
    let mut scan = Vec::new();
    let middle = format!("p{:03}/", prefixes / 2);
    // BENCH_FULL_ONLY: the cold root listing and the full pass only.
    let full_only = std::env::var_os("BENCH_FULL_ONLY").is_some();
    for _ in 0..if full_only { 0 } else { 3 } {
        let t = Instant::now();
        let p = store.list("big", &query(true, None)).await?;
        root.push(t.elapsed().as_secs_f64());
        assert_eq!(p.entries.len(), prefixes.min(1000));
        let t = Instant::now();
        let p = store
            .list("big", &query(false, Some(middle.clone())))
            .await?;
        page.push(t.elapsed().as_secs_f64());
        assert_eq!(p.entries.len(), 1000);
        let last = p.entries.last().unwrap().name().to_owned();
        let t = Instant::now();
        let docs: Vec<Document> = fs
            .files()
            .find(doc! {"filename": {"$gt": &middle, "$lte": &last}})
            .sort(doc! {"filename": 1})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        raw.push(t.elapsed().as_secs_f64());
        assert_eq!(docs.len(), 1000);
        // The floor of a root listing on a server whose sorted range query costs the whole
        // range: one raw sorted find over every key.
        let t = Instant::now();
        let n = fs
            .files()
            .find(doc! {"filename": {"$gte": ""}})
            .sort(doc! {"filename": 1, "uploadDate": 1})
            .batch_size(1000)
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .len();
        scan.push(t.elapsed().as_secs_f64());
        assert_eq!(n, keys);
    }
    if !full_only {
        let scan = median(scan);
        let (root, page, raw) = (median(root), median(page), median(raw));
        println!(
            "root listing with delimiter ({prefixes} common prefixes): {root:.3} s; raw sorted find of all {keys} keys: {scan:.3} s; ratio {:.2}",
            root / scan
        );
        println!(
            "1,000-key page: {page:.3} s; raw find of the same 1,000 keys: {raw:.3} s; ratio {:.2}",
            page / raw
        );
    }
    println!(
        "cold root listing with delimiter (a store that never listed the bucket): {cold_root:.3} s"
    );
    println!(
        "full listing of {keys} keys in pages of 1,000 (fresh store): {full_secs:.1} s, {:.0} keys/s; resident memory {} MiB before, peak {} MiB",
        keys as f64 / full_secs,
        rss_before / 1024,
        peak / 1024
    );
    db.drop().await?;
    Ok(())
}
