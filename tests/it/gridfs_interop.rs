//! Interoperability of the engine with PyMongo's `gridfs.GridFSBucket`, both directions.

use std::io::Write;
use std::process::{Command, Stdio};

use grids3::storage::gridfs::{BucketOptions, GridFsBucket, UploadOptions, DEFAULT_CHUNK_SIZE};

use crate::support;

const CS: usize = DEFAULT_CHUNK_SIZE as usize;
const SIZES: &[usize] = &[0, 1, CS - 1, CS, CS + 1, 10 * 1024 * 1024 + 7];

/// Runs PyMongo's GridFSBucket with `commands`; returns its JSON answer.
pub fn pymongo_gridfs(db: &str, bucket: &str, commands: serde_json::Value) -> serde_json::Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/gridfs_tool.py");
    let mut child = Command::new(support::python())
        .arg(script)
        .args([&support::db().uri, db, bucket])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(commands.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "gridfs_tool.py failed");
    serde_json::from_slice(&out.stdout).expect("json from gridfs_tool.py")
}

#[test]
fn engine_files_read_by_pymongo_and_back() {
    support::run(async {
        let db = support::fresh_db("interop").await;
        let bucket = GridFsBucket::new(&db, BucketOptions::default());
        let tmp = tempfile::tempdir().unwrap();
        let mut commands = Vec::new();
        let mut inputs = Vec::new();
        for (i, &size) in SIZES.iter().enumerate() {
            let data = support::random_bytes(size, i as u64 + 1);
            // grids3 writes "g3-<size>", in uneven pieces to exercise chunk cutting.
            let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
                data.chunks(100_003).map(|c| Ok(c.to_vec())).collect();
            bucket
                .upload_from_stream(
                    &format!("g3-{size}"),
                    futures::stream::iter(pieces),
                    UploadOptions::default(),
                )
                .await
                .unwrap();
            let input = tmp.path().join(format!("in-{size}"));
            std::fs::write(&input, &data).unwrap();
            commands.push(
                serde_json::json!({"op": "get", "name": format!("g3-{size}"),
                "path": tmp.path().join(format!("py-read-{size}"))}),
            );
            commands.push(
                serde_json::json!({"op": "put", "name": format!("py-{size}"), "path": input}),
            );
            inputs.push((size, data));
        }
        // A ranged read through PyMongo across the boundary of chunks 0 and 1 of a grids3 file.
        let (start, end) = (CS - 10, CS + 90);
        commands.push(
            serde_json::json!({"op": "get_range", "name": format!("g3-{}", 10 * 1024 * 1024 + 7),
            "start": start, "end": end, "path": tmp.path().join("py-range")}),
        );
        let db_name = db.name().to_owned();
        let cmds = serde_json::Value::Array(commands);
        tokio::task::spawn_blocking(move || pymongo_gridfs(&db_name, "fs", cmds))
            .await
            .unwrap();

        for (size, data) in &inputs {
            let read_by_py = std::fs::read(tmp.path().join(format!("py-read-{size}"))).unwrap();
            assert!(
                read_by_py == *data,
                "PyMongo read grids3's {size}-byte file differently"
            );
            let f = bucket
                .find_revision(&format!("py-{size}"), -1)
                .await
                .unwrap();
            assert_eq!(f.length, *size as u64);
            let read_by_engine = bucket.download_to_vec(&f.id).await.unwrap();
            assert!(
                read_by_engine == *data,
                "the engine read PyMongo's {size}-byte file differently"
            );
        }
        let big = &inputs.last().unwrap().1;
        assert_eq!(
            std::fs::read(tmp.path().join("py-range")).unwrap(),
            big[start..end]
        );

        // And a ranged read by the engine across a chunk boundary of a PyMongo file: only the
        // two chunks holding it are fetched.
        let f = bucket
            .find_revision(&format!("py-{}", big.len()), -1)
            .await
            .unwrap();
        let stream = bucket.download_range(&f, start as u64, end as u64).unwrap();
        let parts: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(stream).await.unwrap();
        assert_eq!(parts.len(), 2, "a range over two chunks yields two pieces");
        assert_eq!(parts.concat(), big[start..end]);
        let _ = db.drop().await;
    });
}
