//! A GET of a small object in one query: the newest files document of the key (in a
//! versioned bucket, its master or the version named) and, when the file is one chunk, that
//! chunk, joined by `$lookup` (standard GridFS: the chunk is found by `files_id` and `n`, as
//! any driver wrote it).
//!
//! The lookup is guarded by the file's length: a file of several chunks, or larger than a
//! small read, joins nothing, so a server that reads every chunk of the file for the join
//! (the local database does) reads one at most, and a large GET reads no chunk twice.

use super::versioned::entry_lookup;
use super::*;
use crate::storage::versions::Master;
use mongodb::bson::RawDocumentBuf;

/// Where the aggregation puts chunk 0.
const FIRST_CHUNK: &str = "__grids3Chunk0";

/// Set once the database refuses the join (see [`ObjectStore::lookup_to_read`]).
static JOIN_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the database refused the join as a pipeline it does not know (not a passing
/// error, such as a stepdown, which fails this GET only).
fn join_unsupported(e: &mongodb::error::Error) -> bool {
    // FailedToParse, InvalidPipelineOperator, CommandNotFound, the `$lookup` argument checks
    // of servers before 5.0, and a `$lookup` into a sharded collection before 5.1 (28769).
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c)
        if matches!(c.code, 9 | 59 | 168 | 28769 | 40321 | 40324 | 51047))
}

/// Chunk 0 of an object, read with its files document (see [`ObjectStore::lookup_to_read`]).
#[derive(Clone)]
pub struct FirstChunk(pub RawDocumentBuf);

impl std::fmt::Debug for FirstChunk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FirstChunk({} bytes)", self.0.as_bytes().len())
    }
}

impl ObjectStore {
    /// [`ObjectStore::lookup`] for a GET: the current object (or, in a versioned bucket, the
    /// version named) comes with its chunk when it has one chunk, so the whole read is one
    /// query. What this does not cover (a bucket whose version index is being built, a
    /// placeholder, the null version, a key with no current object) is looked up as
    /// [`ObjectStore::lookup`] does.
    pub async fn lookup_to_read(
        &self,
        bucket: &str,
        key: &str,
        version: Option<&str>,
    ) -> Result<Lookup> {
        if JOIN_REFUSED.load(std::sync::atomic::Ordering::Relaxed) {
            return self.lookup(bucket, key, version).await;
        }
        let (mode, indexed) = self.versioning(bucket).await?;
        if mode == Versioning::Off {
            if version.is_some_and(|v| v != "null") {
                return self.lookup(bucket, key, version).await;
            }
            let found = self
                .joined(
                    bucket,
                    self.gridfs(bucket).files(),
                    doc! {"filename": key},
                    "_id",
                    small_cache::slot(bucket, 'f', key),
                )
                .await?;
            let Some(Some((d, chunk))) = found else {
                return match found {
                    None => self.lookup(bucket, key, version).await,
                    Some(_) => Ok(Lookup::Missing),
                };
            };
            let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
            super::etag::ensure_etag(&mut info, &d);
            info.first_chunk = chunk;
            return Ok(Lookup::Object(Box::new(info)));
        }
        let id = match version {
            _ if !indexed => return self.lookup(bucket, key, version).await,
            None => crate::storage::versions::master_id(key),
            Some("null") => return self.lookup(bucket, key, version).await,
            Some(v) => crate::storage::versions::entry_id(key, v),
        };
        let idx = self.versions(bucket);
        let slot = small_cache::slot(bucket, 'v', &id);
        let found = self
            .joined(bucket, idx.collection(), doc! {"_id": id}, "fileId", slot)
            .await?;
        let Some(found) = found else {
            return self.lookup(bucket, key, version).await;
        };
        if version.is_some() {
            // A version named: its entry, as `lookup` reads it.
            let Some((d, chunk)) = found else {
                return Ok(Lookup::Missing);
            };
            let Some(e) = crate::storage::versions::VersionEntry::from_document(&d) else {
                return Ok(Lookup::Missing);
            };
            let mut l = entry_lookup(&e);
            if let Lookup::Object(o) = &mut l {
                o.first_chunk = chunk;
            }
            return Ok(l);
        }
        // The current object: its master, as `VersionIndex::master` reads it; no master or a
        // placeholder go on as `lookup` does, without reading the master again.
        let (master, chunk) = match found {
            None => (None, None),
            Some((d, _)) if crate::storage::versions::index::is_placeholder(&d) => {
                (Some(Master::Placeholder), None)
            }
            Some((d, chunk)) => (
                crate::storage::versions::index::master_entry(&d, key)
                    .map(|e| Master::Current(Box::new(e))),
                chunk,
            ),
        };
        let mut l = self.lookup_current(bucket, key, master, indexed).await?;
        if let Lookup::Object(o) = &mut l {
            o.first_chunk = chunk;
        }
        Ok(l)
    }

    /// The first document of `coll` matching `filter` (the newest by `uploadDate` for files
    /// documents), with chunk 0 of the file its `id_field` names when that file is one chunk
    /// of at most [`SMALL_READ`] bytes: `Some(None)` when nothing matches, `None` when the
    /// database refuses the join (it is then not tried again). A document whose chunk this
    /// instance keeps (see `small_cache`, where `slot` names it) is read without the join.
    async fn joined(
        &self,
        bucket: &str,
        coll: &mongodb::Collection<Document>,
        filter: Document,
        id_field: &str,
        slot: String,
    ) -> Result<Option<Option<(Document, Option<FirstChunk>)>>> {
        if let Some(known) = self.small.get(&slot) {
            return self
                .found_known(bucket, coll, filter, id_field, &slot, known)
                .await
                .map(Some);
        }
        let mut pipeline = vec![doc! {"$match": filter}];
        if id_field == "_id" {
            pipeline.push(doc! {"$sort": newest_first()});
        }
        pipeline.extend([
            doc! {"$limit": 1},
            // The file's id when it is one small chunk, else MinKey (which no chunk's
            // `files_id` is).
            // (MinKey, not null: a missing or null `localField` would look for chunks without
            // a `files_id`. Delete markers and placeholders have no file: no join.)
            doc! {"$addFields": {FIRST_CHUNK: {"$cond": [
                {"$and": [
                    {"$ne": [{"$type": format!("${id_field}")}, "missing"]},
                    {"$ne": [{"$type": "$length"}, "missing"]},
                    {"$lte": ["$length", "$chunkSize"]},
                    // A file another driver wrote in larger chunks: read as large files are.
                    {"$lte": ["$length", SMALL_READ as i64]},
                ]},
                format!("${id_field}"),
                Bson::MinKey,
            ]}}},
            doc! {"$lookup": {
                "from": self.gridfs(bucket).chunks().name(),
                "localField": FIRST_CHUNK,
                "foreignField": "files_id",
                "pipeline": [{"$match": {"n": 0}}],
                "as": FIRST_CHUNK,
            }},
        ]);
        let mut cursor = match coll.aggregate(pipeline).await {
            Ok(c) => c,
            // A server before MongoDB 5.0 refuses `$lookup` with both `localField` and
            // `pipeline`: GETs then look up as HEAD does, and read the chunk apart.
            Err(e) if join_unsupported(&e) => {
                tracing::warn!(error = %e, "the database refused the one-query small GET; GETs take two queries");
                JOIN_REFUSED.store(true, std::sync::atomic::Ordering::Relaxed);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let Some(mut d) = cursor.try_next().await? else {
            return Ok(Some(None));
        };
        let chunk = match d.remove(FIRST_CHUNK) {
            Some(Bson::Array(mut a)) if a.len() == 1 => match a.pop() {
                Some(Bson::Document(c)) => RawDocumentBuf::from_document(&c).ok().map(FirstChunk),
                _ => None,
            },
            _ => None,
        };
        if let (Some(c), Some((id, stamp))) = (&chunk, one_small_chunk(&d, id_field)) {
            self.small
                .put(&slot, id, stamp, std::sync::Arc::new(c.0.clone()));
        }
        Ok(Some(Some((d, chunk))))
    }

    /// [`ObjectStore::joined`] of a document whose chunk 0 this instance keeps: a `find` of
    /// the document alone, and the chunk kept when the document still names the same file
    /// (else chunk 0 of the file it names now, read and kept for the next GET).
    async fn found_known(
        &self,
        bucket: &str,
        coll: &mongodb::Collection<Document>,
        filter: Document,
        id_field: &str,
        slot: &str,
        known: small_cache::Entry,
    ) -> Result<Option<(Document, Option<FirstChunk>)>> {
        let find = coll.find_one(filter);
        let find = if id_field == "_id" {
            find.sort(newest_first())
        } else {
            find
        };
        let Some(d) = find.await? else {
            self.small.forget(slot);
            return Ok(None);
        };
        let Some((id, stamp)) = one_small_chunk(&d, id_field) else {
            self.small.forget(slot);
            return Ok(Some((d, None)));
        };
        if id == known.file_id && stamp == known.file {
            return Ok(Some((d, Some(FirstChunk((*known.chunk).clone())))));
        }
        // Replaced since (here or by another instance): its chunk, as the join would read it.
        let chunk = self
            .gridfs(bucket)
            .chunks()
            .clone_with_type::<RawDocumentBuf>()
            .find_one(doc! {"files_id": id.clone(), "n": 0})
            .await?;
        match &chunk {
            Some(c) => self
                .small
                .put(slot, id, stamp, std::sync::Arc::new(c.clone())),
            None => self.small.forget(slot),
        }
        Ok(Some((d, chunk.map(FirstChunk))))
    }

    /// Remembers chunk 0 of a small object just published as `key` (see `small_cache`), so
    /// that the GET that often follows a write needs no join.
    pub(super) fn keep_written(
        &self,
        bucket: &str,
        key: &str,
        versioned: bool,
        file: &FileDoc,
        chunk: RawDocumentBuf,
    ) {
        let slot = if versioned {
            small_cache::slot(bucket, 'v', &crate::storage::versions::master_id(key))
        } else {
            small_cache::slot(bucket, 'f', key)
        };
        let stamp = small_cache::FileStamp {
            upload_date: file.upload_date.timestamp_millis(),
            length: file.length as i64,
            chunk_size: i64::from(file.chunk_size),
        };
        self.small
            .put(&slot, file.id.clone(), stamp, std::sync::Arc::new(chunk));
    }

    /// Whether the small cache is on and used (a write then keeps its chunk 0 for it): GETs
    /// of a database that refused the join look up as HEAD does and never ask the cache.
    pub(super) fn small_cache_on(&self) -> bool {
        self.small.enabled() && !JOIN_REFUSED.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The file id (and what tells the file from a later one under the same id) a files document
/// or version entry names when the file is one non-empty chunk of at most [`SMALL_READ`]
/// bytes stored as GridFS chunks: the join's condition (see [`ObjectStore::joined`]).
fn one_small_chunk(d: &Document, id_field: &str) -> Option<(Bson, small_cache::FileStamp)> {
    let id = d.get(id_field)?;
    let num = |f: &str| match d.get(f) {
        Some(Bson::Int32(v)) => Some(i64::from(*v)),
        Some(Bson::Int64(v)) => Some(*v),
        Some(Bson::Double(v)) if v.fract() == 0.0 => Some(*v as i64),
        _ => None,
    };
    let (length, chunk_size) = (num("length")?, num("chunkSize")?);
    // A content-addressed object's document points at its content (`in` or `sha`: see
    // `FileDoc::content`): no chunks of its own.
    let pointer = d.contains_key("in") || d.contains_key("sha");
    let upload_date = d.get_datetime("uploadDate").ok()?.timestamp_millis();
    (length > 0 && length <= chunk_size && length <= SMALL_READ as i64 && !pointer).then(|| {
        (
            id.clone(),
            small_cache::FileStamp {
                upload_date,
                length,
                chunk_size,
            },
        )
    })
}
