//! The GridFS engine: a GridFS-spec implementation on the driver's collection API.
//!
//! The driver ships its own `GridFsBucket`, but it cannot read a byte range without walking the
//! file from chunk 0 and it writes one `insert_many` at a time. grids3 needs ranged reads (S3
//! `Range`), pipelined writes, and the ability to write chunks without publishing the files
//! document yet (write, then publish), so the engine is written here against the GridFS
//! specification, and checked against the spec's own tests (`tests/it/gridfs_spec.rs`).

pub mod batch;
pub mod budget;
mod codec;
mod download;
mod file;
mod indexes;
mod ops;
mod pool;
mod upload;

pub use codec::{id_bytes, ChunkBinding, ChunkCodec, Sealing};
pub use download::ByteStream;
pub(crate) use file::as_i64;
pub use file::FileDoc;
pub use ops::ids_of;
pub use upload::{Digests, Upload, UploadOptions};

use std::sync::Arc;

use mongodb::bson::Document;
use mongodb::options::{CollectionOptions, ReadConcern, SelectionCriteria, WriteConcern};
use mongodb::{Collection, Database};
use tokio::sync::OnceCell;

/// How long one chunk insert or one chunk read may wait for the database. The driver has no
/// socket timeout, so without it a server that accepts connections but stops answering would
/// hang an upload or a download forever.
pub const OP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

/// The default GridFS chunk size, 255 KiB, as the specification sets it.
pub const DEFAULT_CHUNK_SIZE: u32 = 255 * 1024;

/// Errors of the GridFS engine.
#[derive(Debug, thiserror::Error)]
pub enum GridFsError {
    /// No files document matches the id or name.
    #[error("file not found")]
    FileNotFound,
    /// The name exists but has fewer revisions than asked for.
    #[error("revision {0} of the file not found")]
    RevisionNotFound(i32),
    /// A chunk that the files document's length requires is absent.
    #[error("chunk {0} is missing")]
    ChunkMissing(i64),
    /// A chunk's data is longer or shorter than the files document's length implies.
    #[error("chunk {n} has {actual} bytes, expected {expected}")]
    ChunkWrongSize {
        /// The chunk's index.
        n: i64,
        /// The size the files document implies.
        expected: usize,
        /// The size found.
        actual: usize,
    },
    /// A sealed chunk that does not open: tampered with, moved, replayed or cut short (or the
    /// wrong key).
    #[error("chunk {0} failed authentication")]
    Unauthentic(i64),
    /// A chunks or files document is not shaped as GridFS requires.
    #[error("corrupt GridFS document: {0}")]
    Corrupt(String),
    /// A byte range that does not lie within the file.
    #[error("range {start}..{end} outside a file of {length} bytes")]
    InvalidRange {
        /// First byte asked for.
        start: u64,
        /// One past the last byte asked for.
        end: u64,
        /// The file's length.
        length: u64,
    },
    /// The upload's source stream failed; the chunks written so far were removed.
    #[error("upload source failed: {0}")]
    Source(String),
    /// Another writer holds, or took over, what this operation needed (a key or upload lock,
    /// a write registration); nothing was published. Retrying is safe.
    #[error("conflict: {0}")]
    Conflict(String),
    /// A lock stayed held by one holder for the whole wait (the database is overloaded, or a
    /// long Complete holds the upload): nothing was done, and retrying later is safe. Answered
    /// `503`, which every SDK retries with backoff; AWS never fails these requests for
    /// contention, so a `409` the SDKs do not retry would turn overload into failure.
    #[error("busy: {0}")]
    Busy(String),
    /// The write would pass its bucket's quota (see `storage::objects::quota`): nothing of it
    /// is kept. The text gives the limit and the usage.
    #[error("quota exceeded: {0}")]
    QuotaExceeded(String),
    /// The database did not answer within [`OP_TIMEOUT`].
    #[error("the database did not answer {0} in time")]
    Timeout(&'static str),
    /// The database reported an error.
    #[error(transparent)]
    Mongo(#[from] mongodb::error::Error),
}

/// Result type of the engine.
pub type Result<T> = std::result::Result<T, GridFsError>;

/// Options of a bucket, with the specification's defaults.
#[derive(Clone, Debug)]
pub struct BucketOptions {
    /// Bucket name: collections `<name>.files` and `<name>.chunks` (default `fs`).
    pub bucket_name: String,
    /// Chunk size for new files (default 255 KiB).
    pub chunk_size: u32,
    /// Write concern for every write (default: the database's).
    pub write_concern: Option<WriteConcern>,
    /// Read concern for every read (default: the database's).
    pub read_concern: Option<ReadConcern>,
    /// Read preference for every read (default: the database's).
    pub selection_criteria: Option<SelectionCriteria>,
}

impl Default for BucketOptions {
    fn default() -> Self {
        Self {
            bucket_name: "fs".into(),
            chunk_size: DEFAULT_CHUNK_SIZE,
            write_concern: None,
            read_concern: None,
            selection_criteria: None,
        }
    }
}

/// A GridFS bucket. Cheap to clone; clones share the "indexes checked" state, so keep one
/// instance per bucket for the life of the process.
#[derive(Clone, Debug)]
pub struct GridFsBucket {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    chunk_size: u32,
    files: Collection<Document>,
    chunks: Collection<Document>,
    indexes_checked: OnceCell<()>,
}

impl GridFsBucket {
    /// Opens the bucket `options.bucket_name` in `db`. No I/O happens until first use.
    pub fn new(db: &Database, options: BucketOptions) -> Self {
        let coll_opts = CollectionOptions::builder()
            .write_concern(options.write_concern.clone())
            .read_concern(options.read_concern.clone())
            .selection_criteria(options.selection_criteria.clone())
            .build();
        let files = db
            .collection_with_options(&format!("{}.files", options.bucket_name), coll_opts.clone());
        let chunks =
            db.collection_with_options(&format!("{}.chunks", options.bucket_name), coll_opts);
        Self {
            inner: Arc::new(Inner {
                name: options.bucket_name,
                chunk_size: options.chunk_size,
                files,
                chunks,
                indexes_checked: OnceCell::new(),
            }),
        }
    }

    /// The bucket's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The chunk size new files get unless an upload asks for another.
    pub fn chunk_size(&self) -> u32 {
        self.inner.chunk_size
    }

    /// The `<name>.files` collection.
    pub fn files(&self) -> &Collection<Document> {
        &self.inner.files
    }

    /// The `<name>.chunks` collection.
    pub fn chunks(&self) -> &Collection<Document> {
        &self.inner.chunks
    }
}
