//! Benchmark: a ListObjectsV2 page of 1,000 current keys in a versioned bucket against the
//! same page in an unversioned one (issue 12's target: at most 3x). The versioned bucket has
//! `BENCH_KEYS` keys (default 10,000) with 10 versions each, and 90% of them have a delete
//! marker as their latest version, so 1,000 keys are current; the unversioned bucket holds
//! 1,000 keys. Both are filled with documents shaped exactly as grids3 writes them (files
//! documents, version entries and masters, inserted in batches), then each page is timed
//! through the object layer (median of 5).
//!
//! Run: `cargo bench --bench versioned_listing`.

use std::time::Instant;

use grids3::devdb::{LocalDb, Storage};
use grids3::storage::gridfs::FileDoc;
use grids3::storage::meta::{BucketInfo, DbClock, MetaStore};
use grids3::storage::objects::{ListQuery, ObjectStore};
use grids3::storage::versions::{make_vid, VersionEntry, VersionIndex};
use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime, Document};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn bucket(name: &str) -> BucketInfo {
    BucketInfo::new(name, "bench", "us-east-1", DateTime::now())
}

fn file(key: &str, at: i64) -> FileDoc {
    FileDoc {
        id: Bson::ObjectId(ObjectId::new()),
        length: 0,
        chunk_size: 261_120,
        upload_date: DateTime::from_millis(at),
        filename: Some(key.to_owned()),
        metadata: Some(doc! {"etag": "\"d41d8cd98f00b204e9800998ecf8427e\""}),
        content: None,
    }
}

async fn flush(
    coll: &mongodb::Collection<Document>,
    batch: &mut Vec<Document>,
    at: usize,
) -> anyhow::Result<()> {
    if batch.len() >= at && !batch.is_empty() {
        coll.insert_many(std::mem::take(batch)).await?;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let keys: usize = std::env::var("BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let local = LocalDb::start(Storage::Ephemeral).await?;
    let client = grids3::metrics::mongodb_client(&local.uri).await?;
    let db = client.database("bench_versioned_listing");
    db.drop().await?;
    let meta = MetaStore::open(&db, DbClock::new(0)).await?;
    let store = ObjectStore::new(db.clone(), meta.clone(), 255 * 1024);
    meta.create_bucket(&bucket("plain")).await?;
    meta.create_bucket(&bucket("versioned")).await?;
    meta.set_bucket_versioning("versioned", "Enabled", &Default::default(), true)
        .await?;
    store.gridfs("plain").ensure_indexes().await?;
    store.gridfs("versioned").ensure_indexes().await?;
    let idx = VersionIndex::new(&db, "versioned");
    idx.ensure_indexes().await?;
    let t = Instant::now();
    let (plain_files, ver_files) = (
        store.gridfs("plain").files().clone(),
        store.gridfs("versioned").files().clone(),
    );
    let mut pf = Vec::new();
    for i in 0..keys / 10 {
        pf.push(file(&format!("k{:07}", i * 10), 1_000).to_document());
        flush(&plain_files, &mut pf, 5000).await?;
    }
    flush(&plain_files, &mut pf, 1).await?;
    let (mut files, mut entries) = (Vec::new(), Vec::new());
    let mut current = 0;
    for i in 0..keys {
        let key = format!("k{i:07}");
        let mut newest = None;
        for v in 0..10 {
            let f = file(&key, 1_000 + v);
            let e = VersionEntry {
                key: key.clone(),
                vid: make_vid(f.upload_date, &f.id),
                null: false,
                at: f.upload_date,
                owner: None,
                file: Some(f.clone()),
            };
            files.push(f.to_document());
            entries.push(e.to_document());
            newest = Some(e);
        }
        let newest = newest.expect("ten versions");
        if i % 10 == 0 {
            entries.push(newest.master_document().expect("data"));
            current += 1;
        } else {
            let at = DateTime::from_millis(2_000);
            entries.push(
                VersionEntry {
                    key: key.clone(),
                    vid: make_vid(at, &Bson::ObjectId(ObjectId::new())),
                    null: false,
                    at,
                    owner: Some("bench".into()),
                    file: None,
                }
                .to_document(),
            );
        }
        flush(&ver_files, &mut files, 5000).await?;
        flush(idx.collection(), &mut entries, 5000).await?;
    }
    flush(&ver_files, &mut files, 1).await?;
    flush(idx.collection(), &mut entries, 1).await?;
    println!(
        "filled: versioned bucket of {keys} keys x 10 versions, {current} current; unversioned bucket of {} keys; {:.1} s ({})",
        keys / 10,
        t.elapsed().as_secs_f64(),
        local.kind
    );
    let q = ListQuery {
        prefix: String::new(),
        delimiter: None,
        after: None,
        max: 1000,
    };
    let (mut plain, mut versioned) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        let p = store.list("plain", &q).await?;
        plain.push(t.elapsed().as_secs_f64());
        assert_eq!(p.entries.len(), 1000.min(keys / 10));
        let t = Instant::now();
        let p = store.list("versioned", &q).await?;
        versioned.push(t.elapsed().as_secs_f64());
        assert_eq!(p.entries.len(), 1000.min(current));
    }
    let (p, v) = (median(plain), median(versioned));
    println!(
        "ListObjectsV2 page of 1,000 current keys: unversioned {p:.3} s, versioned (10 versions a key, 90% deleted) {v:.3} s; ratio {:.2}",
        v / p
    );
    db.drop().await?;
    Ok(())
}
