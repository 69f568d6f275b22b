//! Objects over GridFS buckets: the current object of a key is the newest revision of that
//! GridFS filename. Write, then publish: an upload's chunks are stored under a fresh file id and
//! the files document that makes it visible is written last; older revisions are reclaimed after
//! the new one is published, never under a reader that holds a lease (see `meta::leases`).

mod attrs;
mod cat;
mod convert;
mod etag;
mod first_chunk;
mod hints;
mod janitor;
mod keyorder;
mod lifecycle;
mod list;
mod markers;
mod meta;
mod meter;
mod multipart;
mod multipart_end;
mod publish;
pub mod quota;
mod quota_account;
mod search;
pub mod search_index;
mod search_indexed;
mod search_match;
pub mod search_plan;
pub use quota_check::UsageCheck;
mod quota_check;
mod quota_markers;
mod quota_parts;
mod read;
mod reclaim;
pub mod sealed;
mod settle;
mod small_cache;
mod usage;
mod version_list;
mod version_state;
mod versioned;

pub use attrs::AttrWrite;
pub use cat::PartByReference;
pub use convert::Converted;
pub use first_chunk::FirstChunk;
pub use keyorder::prefix_successor;
pub use lifecycle::LifecycleCandidate;
pub use list::{ListEntry, ListPage, ListQuery};
pub use meta::ObjectMeta;
pub use multipart::{CompleteStats, PartWrite, MULTIPART_CHUNK_SIZE};
pub use search::{Kept, SearchPage, SearchScan, VersionSearchPage};
pub use search_match::{Matcher, View};
pub use usage::BucketUsage;
pub use version_list::{VersionItem, VersionListQuery, VersionPage};
pub use versioned::{DeleteCondition, DeleteOutcome, Lookup};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use mongodb::Database;

use super::content::{self, ContentSettings, Contents, Pointer};
use super::gridfs::{
    BucketOptions, ByteStream, FileDoc, GridFsBucket, GridFsError, Result, Upload, UploadOptions,
};
use super::meta::{KeyLock, MetaStore, StorageMode, WriteReg};
use super::versions::Versioning;

/// Reads up to this size are fetched in one query, without a reader lease.
pub const SMALL_READ: u64 = 1024 * 1024;

/// How long a reader lease lasts without renewal; a streaming GET renews it every third of it.
pub const LEASE_TTL: Duration = Duration::from_secs(60);

/// A write in progress: the chunk writer and its registration (see `meta::writes`).
#[derive(Debug)]
pub struct ObjectWrite {
    upload: Upload,
    reg: WriteReg,
    /// A copy within a content-addressed bucket: the content it points at, and the bytes'
    /// digests (the upload then holds nothing).
    reference: Option<(Pointer, super::gridfs::Digests)>,
    /// Whether it is stored as a content (a content-addressed bucket's write in the clear);
    /// otherwise as a GridFS file, as every encrypted write is.
    content: bool,
    /// Its hold on the bucket's room, in a metered bucket (see `quota`).
    meter: Option<meter::Meter>,
    /// Logical bytes written (what a meter made at publish holds: see `publish`).
    written: i64,
}

impl std::ops::Deref for ObjectWrite {
    type Target = Upload;
    fn deref(&self) -> &Upload {
        &self.upload
    }
}

impl std::ops::DerefMut for ObjectWrite {
    fn deref_mut(&mut self) -> &mut Upload {
        &mut self.upload
    }
}

impl ObjectWrite {
    /// Deletes the chunks written so far and ends the registration.
    pub async fn abort(mut self) -> Result<()> {
        self.release_room().await;
        self.upload.abort().await?;
        self.reg.done().await;
        Ok(())
    }
}

/// An object: its files document and its S3 attributes.
#[derive(Clone, Debug)]
pub struct ObjectInfo {
    /// The GridFS files document of the current revision.
    pub file: FileDoc,
    /// S3 attributes from `metadata`.
    pub meta: ObjectMeta,
    /// The version id S3 shows (`null` included) in a versioned bucket; `None` in a bucket
    /// that never had versioning, where S3 shows none.
    pub version_id: Option<String>,
    /// The data key of an encrypted object, once the caller has opened it (see
    /// `crypto::Keys::data_key`); reads of an encrypted object need it.
    pub data_key: Option<DataKey>,
    /// Chunk 0, when a GET read it with the files document (see `first_chunk`).
    pub first_chunk: Option<FirstChunk>,
}

/// An object's data key, kept out of `Debug` output and zeroed when dropped.
#[derive(Clone)]
pub struct DataKey(pub crate::crypto::keys::Key);

impl DataKey {
    /// The chunk codec that seals and opens the object's chunks with this key.
    pub fn codec(&self) -> std::sync::Arc<dyn super::gridfs::ChunkCodec> {
        sealed::codec(&self.0)
    }
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

impl ObjectInfo {
    fn from_file(file: FileDoc) -> Self {
        let meta = ObjectMeta::from_metadata(file.metadata.as_ref());
        Self {
            file,
            meta,
            version_id: None,
            data_key: None,
            first_chunk: None,
        }
    }

    /// The object's size: its plain text's when it is encrypted (the files document counts the
    /// sealed bytes).
    pub fn size(&self) -> u64 {
        match &self.meta.sse {
            Some(s) => s.size,
            None => self.file.length,
        }
    }

    /// How to read its chunks: `None` in the clear; an error for an encrypted object whose
    /// data key was not opened (a handler that forgot to: never read ciphertext as data).
    pub fn sealing(&self) -> Result<Option<super::gridfs::Sealing>> {
        match (&self.meta.sse, &self.data_key) {
            (None, _) => Ok(None),
            (Some(m), Some(k)) => Ok(Some(sealed::sealing(m, &k.0))),
            (Some(_), None) => Err(GridFsError::Corrupt(
                "an encrypted object read without its data key".into(),
            )),
        }
    }

    /// The quoted ETag.
    pub fn etag(&self) -> &str {
        self.meta.etag.as_deref().unwrap_or("\"\"")
    }

    /// The key.
    pub fn key(&self) -> &str {
        self.file.filename.as_deref().unwrap_or_default()
    }
}

/// A precondition on a write (PutObject, CompleteMultipartUpload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteCondition {
    /// Unconditional.
    Always,
    /// `If-None-Match: *`: only if the key has no current object.
    IfAbsent,
    /// `If-Match: <etag>`: only if the current object has this ETag.
    IfMatch(String),
    /// `If-None-Match: <etag>[, <etag>]`: only if there is no current object or its ETag is
    /// none of these.
    IfNoneMatch(String),
}

/// The MD5 an ETag of a single-part object is (`"<32 hex>"`), if it is one.
fn etag_md5(etag: &str) -> Option<[u8; 16]> {
    let h = etag.trim_matches('"');
    if h.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// What a looked-up GridFS object is when it is read (see [`ObjectStore::converted`]).
enum Now {
    Gone,
    Content(Pointer),
    Same,
}

/// The MD5 of an object's bytes when it is known without reading them: the ETag of a
/// single-part object, or what a content bucket's multipart completion recorded (`md5`).
fn content_md5(o: &ObjectInfo) -> Option<[u8; 16]> {
    etag_md5(o.etag()).or_else(|| etag_md5(o.meta.other.get_str(cat::MD5_FIELD).ok()?))
}

/// Whether an ETag is one of a header's list (`"a", W/"b"`).
fn etag_listed(etag: &str, list: &str) -> bool {
    let have = etag.trim_matches('"');
    list.split(',')
        .map(|e| e.trim().trim_start_matches("W/").trim_matches('"'))
        .any(|e| e == have || e == "*")
}

/// Why a conditional write was not published.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// The condition did not hold.
    PreconditionFailed,
    /// `If-Match` on a key without an object.
    NoSuchKey,
    /// Another writer held the key for longer than the wait.
    Busy,
    /// Object Lock protects the version (retention in force, or a legal hold).
    Locked,
    /// A write without a condition landed while this conditional one was being published.
    Conflict,
}

/// The object layer. Cheap to clone.
#[derive(Clone, Debug)]
pub struct ObjectStore {
    db: Database,
    meta: MetaStore,
    chunk_size: u32,
    buckets: Arc<Mutex<HashMap<String, GridFsBucket>>>,
    /// Keys published without the key lock, to settle (see `settle`).
    settling: settle::Settling,
    /// How content-addressed buckets store contents.
    content_settings: ContentSettings,
    /// Where listings' range queries should end (see `storage::ranges`).
    posts: Arc<super::ranges::Posts>,
    /// Chunk 0 of small objects recently read or written (see `small_cache`).
    small: Arc<small_cache::SmallCache>,
}

/// The order in which a key's files documents come newest first: its current object first
/// (two revisions stamped in the same millisecond are told apart by `_id`).
pub(super) fn newest_first() -> Document {
    doc! {"uploadDate": -1, "_id": -1}
}

impl ObjectStore {
    /// An object store over `db`, writing new files with `chunk_size`.
    pub fn new(db: Database, meta: MetaStore, chunk_size: u32) -> Self {
        Self {
            db,
            meta,
            chunk_size,
            buckets: Arc::default(),
            settling: settle::Settling::default(),
            content_settings: ContentSettings::default(),
            posts: Arc::default(),
            small: Arc::default(),
        }
    }

    /// Keeps chunk 0 of small objects read or written, up to `bytes` (see `small_cache`).
    pub fn with_small_cache(mut self, bytes: usize) -> Self {
        self.small = Arc::new(small_cache::SmallCache::new(bytes));
        self
    }

    /// Where listings' range queries should end, as this instance has seen the key spaces.
    pub fn posts(&self) -> &super::ranges::Posts {
        &self.posts
    }

    /// Stores content-addressed buckets' contents as `settings` say.
    pub fn with_content_settings(mut self, settings: ContentSettings) -> Self {
        self.content_settings = settings;
        self
    }

    /// The contents of a content-addressed bucket (see `storage::content`).
    pub fn contents(&self, bucket: &str) -> Contents {
        Contents::new(
            &self.db,
            bucket,
            self.gridfs(&content::blobs_name(bucket)),
            self.meta.clone(),
            self.content_settings.clone(),
        )
    }

    /// The bucket's storage mode (cached like every bucket lookup).
    pub async fn storage_mode(&self, bucket: &str) -> Result<StorageMode> {
        Ok(self
            .meta
            .bucket_cached(bucket)
            .await?
            .map(|b| b.storage)
            .unwrap_or_default())
    }

    /// What a GridFS object a reader looked up is now: gone, converted to a content (a bucket
    /// conversion), or the same.
    async fn converted(&self, bucket: &str, info: &ObjectInfo) -> Result<Now> {
        let d = self
            .gridfs(bucket)
            .files()
            .find_one(doc! {"_id": info.file.id.clone()})
            .projection(doc! {"in": 1, "sha": 1})
            .await?;
        Ok(match d {
            None => Now::Gone,
            Some(d) => Pointer::of(&d).map_or(Now::Same, Now::Content),
        })
    }

    /// Whether objects of the bucket may point at contents: a content-addressed bucket, or one
    /// converted to GridFS whose contents are not all reclaimed yet (a deleted object's
    /// reference must be released there too).
    async fn may_hold_contents(&self, bucket: &str) -> Result<bool> {
        Ok(self
            .meta
            .bucket_cached(bucket)
            .await?
            .is_some_and(|b| b.storage == StorageMode::Content || b.retired_contents))
    }

    /// The database.
    pub fn db(&self) -> &Database {
        &self.db
    }

    /// The metastore.
    pub fn meta(&self) -> &MetaStore {
        &self.meta
    }

    /// The GridFS bucket behind an S3 bucket; one instance per bucket per process, so the
    /// index check runs once.
    pub fn gridfs(&self, bucket: &str) -> GridFsBucket {
        let mut map = self.buckets.lock().expect("bucket map");
        map.entry(bucket.to_owned())
            .or_insert_with(|| {
                GridFsBucket::new(
                    &self.db,
                    BucketOptions {
                        bucket_name: bucket.to_owned(),
                        chunk_size: self.chunk_size,
                        ..Default::default()
                    },
                )
            })
            .clone()
    }

    /// Forgets this process's handle of a bucket (the next use makes a fresh one, which checks
    /// the indexes again).
    pub fn forget_gridfs(&self, bucket: &str) {
        self.buckets.lock().expect("bucket map").remove(bucket);
    }

    /// The current object of `key`, or `None` (in a versioned bucket, also when its latest
    /// version is a delete marker).
    pub async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectInfo>> {
        Ok(match self.lookup(bucket, key, None).await? {
            Lookup::Object(o) => Some(*o),
            _ => None,
        })
    }

    /// The newest GridFS revision of `key` (the current object of an unversioned bucket).
    async fn head_revision(&self, bucket: &str, key: &str) -> Result<Option<ObjectInfo>> {
        let fs = self.gridfs(bucket);
        let found = fs
            .files()
            .find_one(doc! {"filename": key})
            .sort(newest_first())
            .await?;
        let Some(d) = found else { return Ok(None) };
        let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
        etag::ensure_etag(&mut info, &d);
        Ok(Some(info))
    }

    /// Whether the bucket holds no object (and, versioned, no version or delete marker).
    pub async fn is_empty(&self, bucket: &str) -> Result<bool> {
        // A reaped write's tombstone (`janitor::REAPED`) is no object.
        let no_files = self
            .gridfs(bucket)
            .files()
            .find_one(doc! {format!("metadata.{}", janitor::REAPED): {"$exists": false}})
            .projection(doc! {"_id": 1})
            .await?
            .is_none();
        if !no_files || self.versioning(bucket).await?.0 == Versioning::Off {
            return Ok(no_files);
        }
        Ok(self
            .versions(bucket)
            .collection()
            .find_one(doc! {"sk": {"$gte": crate::storage::versions::VERSION}})
            .projection(doc! {"_id": 1})
            .await?
            .is_none())
    }

    /// Shards a new bucket's collections (see `storage::sharding`).
    pub async fn shard_bucket(&self, bucket: &str) -> Result<()> {
        crate::storage::sharding::shard_bucket(&self.db, bucket).await?;
        Ok(())
    }

    /// Drops a bucket's collections.
    pub async fn drop_bucket(&self, bucket: &str) -> Result<()> {
        self.gridfs(bucket).drop().await?;
        // Whatever the mode was: a content-addressed bucket's contents and references.
        self.contents(bucket).drop().await?;
        self.buckets
            .lock()
            .expect("bucket map")
            .remove(&content::blobs_name(bucket));
        self.versions(bucket).drop().await?;
        // Hints only: a failure leaves posts that cost a later bucket of the name a query.
        if let Err(e) = self.meta.drop_posts(bucket).await {
            tracing::warn!(bucket, error = %e, "could not drop the bucket's listing posts");
        }
        self.buckets.lock().expect("bucket map").remove(bucket);
        Ok(())
    }

    /// Names of the GridFS buckets in the database (every `<name>.files` collection).
    pub async fn gridfs_bucket_names(&self) -> Result<Vec<String>> {
        let names = self.db.list_collection_names().await?;
        let mut out: Vec<String> = names
            .iter()
            .filter_map(|n| n.strip_suffix(".files"))
            .map(str::to_owned)
            .collect();
        out.sort();
        Ok(out)
    }
}

struct LeaseGuard {
    meta: MetaStore,
    lease: super::meta::Lease,
    renew: tokio::task::JoinHandle<()>,
}

impl Drop for LeaseGuard {
    fn drop(&mut self) {
        self.renew.abort();
        let (meta, lease) = (self.meta.clone(), self.lease.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = meta.release_lease(&lease).await {
                    tracing::warn!(error = %e, "could not release a reader lease; it expires on its own");
                }
            });
        }
    }
}
