//! A GET of a small object in one query: the newest files document of the key and, when the
//! file is one chunk, that chunk, joined by `$lookup` (standard GridFS: the chunk is found by
//! `files_id` and `n`, as any driver wrote it).
//!
//! The lookup is guarded by the file's length: a file of several chunks, or larger than a
//! small read, joins nothing, so a server that reads every chunk of the file for the join
//! (the local database does) reads one at most, and a large GET reads no chunk twice.

use super::*;
use mongodb::bson::RawDocumentBuf;

/// Where the aggregation puts chunk 0.
const FIRST_CHUNK: &str = "__grids3Chunk0";

/// Set once the database refuses the join (see [`ObjectStore::lookup_to_read`]).
static JOIN_REFUSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the database refused the join as a pipeline it does not know (not a passing
/// error, such as a stepdown, which fails this GET only).
fn join_unsupported(e: &mongodb::error::Error) -> bool {
    // FailedToParse, InvalidPipelineOperator, CommandNotFound, and the `$lookup` argument
    // checks of servers before 5.0.
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c)
        if matches!(c.code, 9 | 59 | 168 | 40321 | 40324 | 51047))
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
    /// [`ObjectStore::lookup`] for a GET: the current object of an unversioned bucket comes
    /// with its chunk when it has one chunk (one query for the whole read). Anything else is
    /// looked up as [`ObjectStore::lookup`] does.
    pub async fn lookup_to_read(
        &self,
        bucket: &str,
        key: &str,
        version: Option<&str>,
    ) -> Result<Lookup> {
        if version.is_some_and(|v| v != "null")
            || self.versioning(bucket).await?.0 != Versioning::Off
        {
            return self.lookup(bucket, key, version).await;
        }
        let found = if JOIN_REFUSED.load(std::sync::atomic::Ordering::Relaxed) {
            self.head_revision(bucket, key).await?
        } else {
            match self.head_revision_with_chunk(bucket, key).await {
                Ok(found) => found,
                // A server before MongoDB 5.0 refuses `$lookup` with both `localField` and
                // `pipeline`: GETs then look up as HEAD does, and read the chunk apart.
                Err(GridFsError::Mongo(e)) if join_unsupported(&e) => {
                    tracing::warn!(error = %e, "the database refused the one-query small GET; GETs take two queries");
                    JOIN_REFUSED.store(true, std::sync::atomic::Ordering::Relaxed);
                    self.head_revision(bucket, key).await?
                }
                Err(e) => return Err(e),
            }
        };
        Ok(match found {
            Some(o) => Lookup::Object(Box::new(o)),
            None => Lookup::Missing,
        })
    }

    async fn head_revision_with_chunk(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<ObjectInfo>> {
        let fs = self.gridfs(bucket);
        let pipeline = vec![
            doc! {"$match": {"filename": key}},
            doc! {"$sort": {"uploadDate": -1, "_id": -1}},
            doc! {"$limit": 1},
            // The file's id when it is one chunk, else null (which no chunk's `files_id` is).
            doc! {"$addFields": {FIRST_CHUNK: {"$cond": [
                {"$and": [
                    {"$lte": ["$length", "$chunkSize"]},
                    // A file another driver wrote in larger chunks: read as large files are.
                    {"$lte": ["$length", SMALL_READ as i64]},
                ]},
                "$_id",
                Bson::Null,
            ]}}},
            doc! {"$lookup": {
                "from": fs.chunks().name(),
                "localField": FIRST_CHUNK,
                "foreignField": "files_id",
                "pipeline": [{"$match": {"n": 0}}],
                "as": FIRST_CHUNK,
            }},
        ];
        let mut cursor = fs.files().aggregate(pipeline).await?;
        let Some(mut d) = cursor.try_next().await? else {
            return Ok(None);
        };
        let chunk = match d.remove(FIRST_CHUNK) {
            Some(Bson::Array(mut a)) if a.len() == 1 => match a.pop() {
                Some(Bson::Document(c)) => RawDocumentBuf::from_document(&c).ok(),
                _ => None,
            },
            _ => None,
        };
        let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
        self.ensure_etag(bucket, &mut info, &d).await?;
        info.first_chunk = chunk.map(FirstChunk);
        Ok(Some(info))
    }
}
