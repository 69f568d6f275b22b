//! Runs the GridFS specification's own tests (unified test format, schema 1.0) against the
//! engine. The JSON files are read from `../shared/gridfs-spec-tests/` (or
//! `GRIDFS_SPEC_TESTS`), not copied into the repository.
//!
//! Covered: `initialData`, every bucket and collection operation those files use,
//! `expectResult` (with the `$$type`, `$$exists`, `$$unsetOrMatches`, `$$matchesEntity` and
//! `$$matchesHexBytes` matchers), `expectError` and `outcome` (exact collection contents).
//! Skipped on purpose: `expectEvents` (command monitoring is the driver's concern, not the
//! engine's; none of these 39 cases has one anyway).

use std::collections::HashMap;
use std::path::PathBuf;

use futures::TryStreamExt;
use grids3::storage::gridfs::{BucketOptions, GridFsBucket, GridFsError, UploadOptions};
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, Document};
use mongodb::Database;

use crate::support;

const FILES: &[&str] = &[
    "upload.json",
    "upload-disableMD5.json",
    "download.json",
    "downloadByName.json",
    "delete.json",
    "deleteByName.json",
    "rename.json",
    "renameByName.json",
];

/// Where the spec's JSON files are: `GRIDFS_SPEC_TESTS`; else the workspace's
/// `../shared/gridfs-spec-tests/`; else (a machine without that folder, such as a bare CI clone)
/// the same files as the PyMongo source distribution ships them (`test/gridfs/`, identical to
/// the specification's), fetched from PyPI into `target/` at the version pinned in
/// `requirements-dev.txt`. Nothing is copied into the repository.
fn spec_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("GRIDFS_SPEC_TESTS") {
        return PathBuf::from(d);
    }
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/gridfs-spec-tests");
    if shared.join("upload.json").exists() {
        return shared;
    }
    let out = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/gridfs-spec-tests");
    if out.join("upload.json").exists() {
        return out;
    }
    let reqs =
        std::fs::read_to_string(grids3::devdb::project_dir().join("requirements-dev.txt")).unwrap();
    let pin = reqs
        .lines()
        .find(|l| l.starts_with("pymongo=="))
        .expect("pymongo pinned")
        .trim()
        .to_owned();
    let version = pin.trim_start_matches("pymongo==").to_owned();
    let script = format!(
        r#"
import glob, os, subprocess, sys, tarfile, tempfile
out = sys.argv[1]
tmp = tempfile.mkdtemp()
subprocess.run([sys.executable, "-m", "pip", "download", "{pin}", "--no-binary", ":all:", "--no-deps", "-q", "-d", tmp], check=True)
sdist = glob.glob(os.path.join(tmp, "pymongo-*.tar.gz"))[0]
os.makedirs(out, exist_ok=True)
with tarfile.open(sdist) as t:
    for m in t.getmembers():
        prefix = "pymongo-{version}/test/gridfs/"
        if m.name.startswith(prefix) and m.name.endswith(".json"):
            with open(os.path.join(out, os.path.basename(m.name)), "wb") as f:
                f.write(t.extractfile(m).read())
"#
    );
    let status = std::process::Command::new(support::python())
        .arg("-c")
        .arg(script)
        .arg(&out)
        .status()
        .expect("python");
    assert!(
        status.success(),
        "fetching the GridFS spec tests from the PyMongo sdist failed"
    );
    out
}

#[test]
fn gridfs_spec_conformance() {
    support::run(async {
        let dir = spec_dir();
        println!("GridFS spec tests from {}", dir.display());
        let mut total = 0;
        let mut failures = Vec::new();
        for file in FILES {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            let json: serde_json::Value = serde_json::from_str(&text).expect("json");
            let spec = match Bson::try_from(json).expect("extended json") {
                Bson::Document(d) => d,
                _ => panic!("{file}: not a document"),
            };
            for case in spec.get_array("tests").expect("tests") {
                let case = case.as_document().expect("test document");
                let desc = case.get_str("description").unwrap_or("?").to_owned();
                total += 1;
                if let Err(why) = run_case(&spec, case).await {
                    failures.push(format!("{file}: {desc}: {why}"));
                }
            }
        }
        println!(
            "GridFS spec tests: {} of {} cases passed",
            total - failures.len(),
            total
        );
        assert!(failures.is_empty(), "failures:\n{}", failures.join("\n"));
        assert_eq!(total, 39, "the spec's core GridFS suite has 39 cases");
    });
}

struct Ctx {
    db: Database,
    bucket: GridFsBucket,
    entities: HashMap<String, Bson>,
}

async fn run_case(spec: &Document, case: &Document) -> Result<(), String> {
    let db = support::fresh_db("spec").await;
    if let Ok(initial) = spec.get_array("initialData") {
        for coll in initial {
            let coll = coll.as_document().unwrap();
            let name = coll.get_str("collectionName").unwrap();
            let docs: Vec<Document> = coll
                .get_array("documents")
                .unwrap()
                .iter()
                .map(|d| d.as_document().unwrap().clone())
                .collect();
            if !docs.is_empty() {
                db.collection::<Document>(name)
                    .insert_many(docs)
                    .await
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    let mut ctx = Ctx {
        bucket: GridFsBucket::new(&db, BucketOptions::default()),
        db: db.clone(),
        entities: HashMap::new(),
    };
    let result = run_operations(&mut ctx, case).await;
    let result = match result {
        Ok(()) => check_outcome(&ctx, case).await,
        e => e,
    };
    let _ = db.drop().await;
    result
}

async fn run_operations(ctx: &mut Ctx, case: &Document) -> Result<(), String> {
    for (i, op) in case.get_array("operations").unwrap().iter().enumerate() {
        let op = op.as_document().unwrap();
        let name = op.get_str("name").unwrap();
        let object = op.get_str("object").unwrap();
        let empty = Document::new();
        let args = op.get_document("arguments").unwrap_or(&empty);
        let result = if object == "bucket0" {
            bucket_op(ctx, name, args).await
        } else {
            let coll = match object {
                "bucket0_files_collection" => "fs.files",
                "bucket0_chunks_collection" => "fs.chunks",
                other => return Err(format!("unknown object {other}")),
            };
            collection_op(ctx, coll, name, args)
                .await
                .map_err(OpError::Other)
        };
        let at = format!("operation {i} ({object}.{name})");
        match (result, op.get_document("expectError")) {
            (Ok(_), Ok(_)) => return Err(format!("{at}: expected an error, got success")),
            (Err(e), Err(_)) => return Err(format!("{at}: unexpected error {e:?}")),
            (Err(e), Ok(expect)) => {
                if expect.get_bool("isClientError").unwrap_or(false)
                    && !matches!(e, OpError::Client(_))
                {
                    return Err(format!("{at}: expected a client error, got {e:?}"));
                }
            }
            (Ok(value), Err(_)) => {
                if let Some(expected) = op.get("expectResult") {
                    matches(expected, Some(&value), true, &ctx.entities)
                        .map_err(|why| format!("{at}: result mismatch: {why}; got {value}"))?;
                }
                if let Ok(entity) = op.get_str("saveResultAsEntity") {
                    ctx.entities.insert(entity.to_owned(), value);
                }
            }
        }
    }
    Ok(())
}

// The payloads are read through `Debug` in failure messages, which dead-code analysis ignores.
#[allow(dead_code)]
#[derive(Debug)]
enum OpError {
    /// A GridFS-level error (not found, corrupt chunks): "isClientError" in the spec.
    Client(GridFsError),
    Other(String),
}

fn classify(e: GridFsError) -> OpError {
    match e {
        GridFsError::Mongo(m) => OpError::Other(m.to_string()),
        other => OpError::Client(other),
    }
}

async fn bucket_op(ctx: &mut Ctx, name: &str, args: &Document) -> Result<Bson, OpError> {
    let id = || args.get("id").cloned().expect("id argument");
    let bytes = |v: Vec<u8>| {
        Bson::Binary(Binary {
            subtype: BinarySubtype::Generic,
            bytes: v,
        })
    };
    match name {
        "upload" => {
            let source = args.get_document("source").expect("source");
            let data = hex::decode(source.get_str("$$hexBytes").expect("$$hexBytes")).unwrap();
            let opts = UploadOptions {
                chunk_size: args.get("chunkSizeBytes").and_then(num).map(|n| n as u32),
                metadata: args.get_document("metadata").ok().cloned(),
                ..Default::default()
            };
            // The engine never writes the deprecated `md5` field, so `disableMD5` needs nothing.
            let stream = futures::stream::iter([Ok::<_, std::io::Error>(data)]);
            let file = ctx
                .bucket
                .upload_from_stream(args.get_str("filename").unwrap(), stream, opts)
                .await
                .map_err(classify)?;
            Ok(file.id)
        }
        "download" => ctx
            .bucket
            .download_to_vec(&id())
            .await
            .map(bytes)
            .map_err(classify),
        "downloadByName" => {
            let revision = args.get("revision").and_then(num).unwrap_or(-1) as i32;
            let (file, stream) = ctx
                .bucket
                .open_download_stream_by_name(args.get_str("filename").unwrap(), revision)
                .await
                .map_err(classify)?;
            let data: Vec<bytes::Bytes> = stream.try_collect().await.map_err(classify)?;
            assert_eq!(
                data.iter().map(|b| b.len() as u64).sum::<u64>(),
                file.length
            );
            Ok(bytes(data.concat()))
        }
        "delete" => ctx
            .bucket
            .delete(&id())
            .await
            .map(|_| Bson::Null)
            .map_err(classify),
        "deleteByName" => ctx
            .bucket
            .delete_by_name(args.get_str("filename").unwrap())
            .await
            .map(|_| Bson::Null)
            .map_err(classify),
        "rename" => ctx
            .bucket
            .rename(&id(), args.get_str("newFilename").unwrap())
            .await
            .map(|_| Bson::Null)
            .map_err(classify),
        "renameByName" => ctx
            .bucket
            .rename_by_name(
                args.get_str("filename").unwrap(),
                args.get_str("newFilename").unwrap(),
            )
            .await
            .map(|_| Bson::Null)
            .map_err(classify),
        other => Err(OpError::Other(format!(
            "unsupported bucket operation {other}"
        ))),
    }
}

async fn collection_op(ctx: &Ctx, coll: &str, name: &str, args: &Document) -> Result<Bson, String> {
    let c = ctx.db.collection::<Document>(coll);
    let filter = || args.get_document("filter").cloned().unwrap_or_default();
    let e = |e: mongodb::error::Error| e.to_string();
    match name {
        "find" => {
            let mut find = c.find(filter());
            if let Ok(sort) = args.get_document("sort") {
                find = find.sort(sort.clone());
            }
            let docs: Vec<Document> = find.await.map_err(e)?.try_collect().await.map_err(e)?;
            Ok(Bson::Array(docs.into_iter().map(Bson::Document).collect()))
        }
        "deleteOne" => {
            let r = c.delete_one(filter()).await.map_err(e)?;
            Ok(Bson::Document(
                doc! {"deletedCount": r.deleted_count as i64},
            ))
        }
        "updateOne" => {
            let update = args.get_document("update").unwrap().clone();
            let r = c.update_one(filter(), update).await.map_err(e)?;
            Ok(Bson::Document(doc! {
                "matchedCount": r.matched_count as i64,
                "modifiedCount": r.modified_count as i64,
            }))
        }
        "bulkWrite" => {
            // Run the requests one by one, in order, and add up the counts.
            let (mut matched, mut modified, mut deleted) = (0u64, 0u64, 0u64);
            for req in args.get_array("requests").unwrap() {
                let req = req.as_document().unwrap();
                let (kind, body) = req.iter().next().unwrap();
                let body = body.as_document().unwrap();
                let f = body.get_document("filter").unwrap().clone();
                match kind.as_str() {
                    "updateOne" => {
                        let u = body.get_document("update").unwrap().clone();
                        let r = c.update_one(f, u).await.map_err(e)?;
                        matched += r.matched_count;
                        modified += r.modified_count;
                    }
                    "deleteOne" => deleted += c.delete_one(f).await.map_err(e)?.deleted_count,
                    other => return Err(format!("unsupported bulk request {other}")),
                }
            }
            Ok(Bson::Document(doc! {
                "matchedCount": matched as i64,
                "modifiedCount": modified as i64,
                "deletedCount": deleted as i64,
            }))
        }
        other => Err(format!("unsupported collection operation {other}")),
    }
}

async fn check_outcome(ctx: &Ctx, case: &Document) -> Result<(), String> {
    let Ok(outcome) = case.get_array("outcome") else {
        return Ok(());
    };
    for coll in outcome {
        let coll = coll.as_document().unwrap();
        let name = coll.get_str("collectionName").unwrap();
        let actual: Vec<Document> = ctx
            .db
            .collection::<Document>(name)
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .await
            .map_err(|e| e.to_string())?
            .try_collect()
            .await
            .map_err(|e| e.to_string())?;
        let actual = Bson::Array(actual.into_iter().map(Bson::Document).collect());
        let expected = Bson::Array(coll.get_array("documents").unwrap().clone());
        // Outcome documents must match exactly: no extra fields anywhere.
        matches(&expected, Some(&actual), false, &ctx.entities)
            .map_err(|why| format!("outcome of {name}: {why}; got {actual}"))?;
    }
    Ok(())
}

fn num(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.fract() == 0.0 => Some(*d as i64),
        _ => None,
    }
}

fn type_name(v: &Bson) -> &'static str {
    match v {
        Bson::ObjectId(_) => "objectId",
        Bson::DateTime(_) => "date",
        Bson::Int32(_) => "int",
        Bson::Int64(_) => "long",
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Binary(_) => "binData",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Boolean(_) => "bool",
        Bson::Null => "null",
        _ => "other",
    }
}

/// The unified test format's matching rules. `root` documents may carry extra fields
/// (a top-level result document, or the documents of a top-level result array); nested ones
/// may not.
fn matches(
    expected: &Bson,
    actual: Option<&Bson>,
    root: bool,
    entities: &HashMap<String, Bson>,
) -> Result<(), String> {
    if let Bson::Document(e) = expected {
        if e.len() == 1 {
            let (k, v) = e.iter().next().unwrap();
            match k.as_str() {
                "$$exists" => {
                    return if v.as_bool() == Some(actual.is_some()) {
                        Ok(())
                    } else {
                        Err(format!("$$exists {v} but actual is {actual:?}"))
                    }
                }
                "$$unsetOrMatches" => {
                    return match actual {
                        None => Ok(()),
                        some => matches(v, some, false, entities),
                    }
                }
                "$$type" => {
                    let a = actual.ok_or("missing value")?;
                    let ok = match v {
                        Bson::String(t) => t == type_name(a),
                        Bson::Array(ts) => ts.iter().any(|t| t.as_str() == Some(type_name(a))),
                        _ => false,
                    };
                    return if ok {
                        Ok(())
                    } else {
                        Err(format!("{a} is not of type {v}"))
                    };
                }
                "$$matchesEntity" => {
                    let want = entities
                        .get(v.as_str().unwrap())
                        .ok_or_else(|| format!("no entity {v}"))?;
                    return if actual == Some(want) {
                        Ok(())
                    } else {
                        Err(format!("{actual:?} is not entity {want}"))
                    };
                }
                "$$matchesHexBytes" => {
                    let want = hex::decode(v.as_str().unwrap()).unwrap();
                    return match actual {
                        Some(Bson::Binary(b)) if b.bytes == want => Ok(()),
                        other => Err(format!("{other:?} is not the bytes {v}")),
                    };
                }
                _ => {}
            }
        }
    }
    let actual = actual.ok_or_else(|| format!("missing value, expected {expected}"))?;
    match (expected, actual) {
        (Bson::Document(e), Bson::Document(a)) => {
            for (k, v) in e {
                matches(v, a.get(k), false, entities).map_err(|why| format!("{k}: {why}"))?;
            }
            if !root {
                if let Some(extra) = a.keys().find(|k| !e.contains_key(k.as_str())) {
                    return Err(format!("unexpected field {extra}"));
                }
            }
            Ok(())
        }
        (Bson::Array(e), Bson::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{} elements, expected {}", a.len(), e.len()));
            }
            for (i, (x, y)) in e.iter().zip(a).enumerate() {
                matches(x, Some(y), root, entities).map_err(|why| format!("[{i}]: {why}"))?;
            }
            Ok(())
        }
        (e, a) => match (num(e), num(a)) {
            (Some(x), Some(y)) if x == y => Ok(()),
            _ if e == a => Ok(()),
            _ => Err(format!("{a} != expected {e}")),
        },
    }
}
