//! Benchmark: completing a multipart upload of 1 GiB in 8 MiB parts. Prints the time the
//! Complete took, how many parts were adopted in place and how many bytes were rewritten, and
//! the same for a misaligned layout (parts of 8 MiB + 1 byte) for contrast.
//!
//! Also prints the database's floor for the aligned case: one raw `update_many` that shifts
//! `n` of as many 1 MiB chunk documents (what any in-place completion has to make the server
//! do), timed in the same run.
//!
//! Run: `cargo bench --bench multipart_complete` (env `BENCH_MIB`, default 1024; `BENCH_REPS`,
//! default 3; `BENCH_MISALIGNED=0` skips the misaligned layout). Uses `MONGODB_URI` when set,
//! else starts the local database like the tests do.

use std::time::Instant;

use grids3::devdb::{LocalDb, Storage};
use grids3::storage::meta::MetaStore;
use grids3::storage::objects::{ObjectMeta, ObjectStore, MULTIPART_CHUNK_SIZE};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

async fn run(
    store: &ObjectStore,
    bucket: &str,
    total: usize,
    part: usize,
) -> anyhow::Result<(f64, f64, usize, u64)> {
    let piece: Vec<u8> = (0..1024 * 1024)
        .map(|i: usize| (i.wrapping_mul(2654435761) >> 11) as u8)
        .collect();
    let up = store
        .create_multipart(bucket, "obj", "bench", &ObjectMeta::default(), None)
        .await?;
    let t = Instant::now();
    let mut parts = Vec::new();
    let mut left = total;
    let mut n = 1;
    while left > 0 {
        let size = part.min(left);
        let mut w = store.open_part(&up, None).await?.expect("upload open");
        let mut remaining = size;
        while remaining > 0 {
            let k = remaining.min(piece.len());
            w.write(&piece[..k]).await?;
            remaining -= k;
        }
        parts.push(
            store
                .commit_part(&up, n, w, None, |m: &[u8; 16]| hex::encode(m))
                .await?
                .expect("upload exists"),
        );
        left -= size;
        n += 1;
    }
    let upload_secs = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let lock = store
        .meta()
        .lock_key(&up.bucket, &up.key)
        .await?
        .expect("key lock");
    let (_, stats) = store
        .complete_multipart(&up, &parts, "\"bench\"", Vec::new(), &lock, None)
        .await?
        .expect("upload open");
    lock.release().await?;
    Ok((
        upload_secs,
        t.elapsed().as_secs_f64(),
        stats.parts_adopted,
        stats.bytes_rewritten,
    ))
}

/// Times one `update_many` that shifts `n` of `count` 1 MiB chunk documents of one file.
async fn raw_floor(db: &mongodb::Database, count: usize) -> anyhow::Result<f64> {
    use mongodb::bson::{doc, oid::ObjectId, spec::BinarySubtype, Binary};
    let chunks = db.collection::<mongodb::bson::Document>("floor.chunks");
    chunks
        .create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"files_id": 1, "n": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await?;
    let id = ObjectId::new();
    let data: Vec<u8> = (0..1024 * 1024).map(|i: usize| (i * 7) as u8).collect();
    for batch in (0..count).collect::<Vec<_>>().chunks(4) {
        let docs: Vec<_> = batch
            .iter()
            .map(|&n| {
                doc! {"files_id": id, "n": -(n as i32) - 1, "data": Binary {
                subtype: BinarySubtype::Generic, bytes: data.clone() }}
            })
            .collect();
        chunks.insert_many(docs).await?;
    }
    let t = Instant::now();
    chunks
        .update_many(doc! {"files_id": id}, doc! {"$inc": {"n": count as i32}})
        .await?;
    Ok(t.elapsed().as_secs_f64())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mib: usize = std::env::var("BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let reps: usize = std::env::var("BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let local = LocalDb::start(Storage::Ephemeral).await?;
    let client = mongodb::Client::with_uri_str(&local.uri).await?;
    let db = client.database("bench_multipart");
    db.drop().await?;
    let meta = MetaStore::open(&db, grids3::storage::meta::DbClock::new(0)).await?;
    let store = ObjectStore::new(db.clone(), meta, 255 * 1024);
    let total = mib * 1024 * 1024;
    println!(
        "object {mib} MiB, chunk size {} KiB, {reps} repetitions, server {}",
        MULTIPART_CHUNK_SIZE / 1024,
        local.kind
    );
    let misaligned = std::env::var("BENCH_MISALIGNED").map_or(true, |v| v != "0");
    let mut layouts = vec![("8 MiB parts", 8 * 1024 * 1024)];
    if misaligned {
        layouts.push(("8 MiB + 1 byte parts", 8 * 1024 * 1024 + 1));
    }
    let mut aligned_median = 0.0;
    for (label, part) in layouts {
        let mut completes = Vec::new();
        for rep in 0..reps {
            // A bucket per repetition: SecantusDB deletes large files in one transaction that
            // can overflow its cache, so nothing is deleted in between; the database is dropped.
            let bucket = format!("b{rep}{}", part % 2);
            let (up, complete, adopted, rewritten) = run(&store, &bucket, total, part).await?;
            println!(
                "{label}, rep {rep}: parts uploaded in {up:.1} s; complete {complete:.3} s, {adopted} parts adopted in place, {rewritten} bytes rewritten"
            );
            completes.push(complete);
        }
        let m = median(completes);
        if part % 2 == 0 {
            aligned_median = m;
        }
        println!("{label}: median complete {m:.3} s");
    }
    let floor = raw_floor(&db, mib).await?;
    println!(
        "floor: one raw update_many shifting n of {mib} chunk documents of 1 MiB: {floor:.3} s; completion / floor {:.2}",
        aligned_median / floor
    );
    db.drop().await?;
    Ok(())
}
