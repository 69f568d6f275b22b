//! Benchmark: grids3's GridFS engine against the mongodb driver's own `GridFsBucket`, on the
//! same local server in the same run. Prints medians in MB/s and the engine/driver ratios.
//!
//! Run: `cargo bench --bench gridfs_engine` (env `BENCH_MIB`, default 256; `BENCH_REPS`,
//! default 3). Uses `MONGODB_URI` when set, else starts the local database like the tests do.

use std::time::Instant;

use anyhow::Context;

use futures::{AsyncReadExt, AsyncWriteExt, StreamExt, TryStreamExt};
use std::future::IntoFuture;

mod common;
use grids3::devdb::{LocalDb, Storage};
use grids3::storage::gridfs::{BucketOptions, GridFsBucket, UploadOptions};
use mongodb::bson::Bson;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mib: usize = std::env::var("BENCH_MIB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256);
    let reps: usize = std::env::var("BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let size = mib * 1024 * 1024;
    let local = LocalDb::start(Storage::Ephemeral).await?;
    let client = mongodb::Client::with_uri_str(&local.uri).await?;
    let db = client.database("bench_gridfs");
    db.drop().await?;
    let engine = GridFsBucket::new(
        &db,
        BucketOptions {
            bucket_name: "engine".into(),
            ..Default::default()
        },
    );
    let driver = db.gridfs_bucket(
        mongodb::options::GridFsBucketOptions::builder()
            .bucket_name("driver".to_owned())
            .build(),
    );
    let data: Vec<u8> = (0..size)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    // Files are not deleted between repetitions: SecantusDB deletes a 256 MiB file in one
    // WiredTiger transaction that overflows its cache. The database is dropped at the end.
    // Both sides get the body in the same 1 MiB writes, as an HTTP body would arrive.
    const PIECE: usize = 1024 * 1024;
    let mb = size as f64 / 1e6;
    let (mut eu, mut ed, mut du, mut dd) = (vec![], vec![], vec![], vec![]);
    // The database's own floor for an upload: the object's chunk documents built beforehand
    // (not timed) and sent in 4 MiB `insert_many` batches, three in flight, as the engine
    // sends its own. Neither GridFS implementation can upload faster than this.
    // With the unique `{files_id, n}` index that every GridFS chunks collection has.
    let raw_chunks = db.collection::<mongodb::bson::RawDocumentBuf>("raw.chunks");
    raw_chunks
        .create_index(
            mongodb::IndexModel::builder()
                .keys(mongodb::bson::doc! {"files_id": 1, "n": 1})
                .options(
                    mongodb::options::IndexOptions::builder()
                        .unique(true)
                        .build(),
                )
                .build(),
        )
        .await?;
    let mut ru = vec![];
    let mut em = vec![];
    println!(
        "object {mib} MiB, {reps} repetitions, server {} ({})",
        local.kind, local.uri
    );
    for rep in 0..reps {
        // engine upload / download
        let t = Instant::now();
        // Without MD5, as the driver writes (the spec deprecated it); grids3's PUT adds it.
        let mut up = engine
            .open_upload_stream(
                "obj",
                UploadOptions {
                    skip_md5: true,
                    ..Default::default()
                },
            )
            .await?;
        for piece in data.chunks(PIECE) {
            up.write(piece).await.context("engine write")?;
        }
        let file = up.finish().await.context("engine finish")?;
        eu.push(mb / t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut n = 0usize;
        let mut s = engine.download_range(&file, 0, file.length)?;
        while let Some(b) = s.try_next().await.context("engine read")? {
            n += b.len();
        }
        assert_eq!(n, size);
        ed.push(mb / t.elapsed().as_secs_f64());

        // driver upload / download
        let t = Instant::now();
        let mut up = driver.open_upload_stream("obj").await?;
        for piece in data.chunks(PIECE) {
            up.write_all(piece).await.context("driver write")?;
        }
        up.close().await.context("driver close")?;
        let id: Bson = up.id().clone();
        du.push(mb / t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut down = driver.open_download_stream(id.clone()).await?;
        let mut buf = Vec::with_capacity(size);
        down.read_to_end(&mut buf).await.context("driver read")?;
        assert_eq!(buf.len(), size);
        dd.push(mb / t.elapsed().as_secs_f64());
        // The engine as grids3's PUT uses it: with the MD5 an ETag needs.
        let t = Instant::now();
        let mut up = engine
            .open_upload_stream("obj", UploadOptions::default())
            .await?;
        for piece in data.chunks(PIECE) {
            up.write(piece).await.context("engine write")?;
        }
        up.finish().await.context("engine finish")?;
        em.push(mb / t.elapsed().as_secs_f64());

        let id = mongodb::bson::oid::ObjectId::new();
        let batches: Vec<Vec<mongodb::bson::RawDocumentBuf>> = data
            .chunks(255 * 1024)
            .enumerate()
            .map(|(n, c)| common::chunk_doc(id, n as i32, c))
            .collect::<Vec<_>>()
            .chunks(16)
            .map(<[_]>::to_vec)
            .collect();
        let t = Instant::now();
        futures::stream::iter(batches)
            .map(|b| raw_chunks.insert_many(b).into_future())
            .buffer_unordered(3)
            .try_collect::<Vec<_>>()
            .await
            .context("raw insert")?;
        ru.push(mb / t.elapsed().as_secs_f64());
        println!(
            "rep {rep}: engine up {:.1} down {:.1} MB/s; driver up {:.1} down {:.1} MB/s; engine up with MD5 {:.1} MB/s; raw insert_many {:.1} MB/s",
            eu[rep], ed[rep], du[rep], dd[rep], em[rep], ru[rep]
        );
    }
    let (eu, ed, du, dd, ru) = (median(eu), median(ed), median(du), median(dd), median(ru));
    let em = median(em);
    println!(
        "median upload with MD5 (grids3's PUT): engine {em:.1} MB/s, ratio to the driver {:.2}",
        em / du
    );
    println!(
        "median raw insert_many (the database's floor): {ru:.1} MB/s; engine / floor {:.2}, driver / floor {:.2}, floor / driver {:.2}",
        eu / ru,
        du / ru,
        ru / du
    );
    println!(
        "median upload:   engine {eu:.1} MB/s, driver {du:.1} MB/s, ratio {:.2}",
        eu / du
    );
    println!(
        "median download: engine {ed:.1} MB/s, driver {dd:.1} MB/s, ratio {:.2}",
        ed / dd
    );
    db.drop().await?;
    Ok(())
}
