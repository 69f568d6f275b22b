//! Objects over GridFS buckets: the current object of a key is the newest revision of that
//! GridFS filename. Write, then publish: an upload's chunks are stored under a fresh file id and
//! the files document that makes it visible is written last; older revisions are reclaimed after
//! the new one is published, never under a reader that holds a lease (see `meta::leases`).

mod cat;
mod convert;
mod etag;
mod keyorder;
mod list;
mod meta;
mod multipart;
pub mod sealed;
mod settle;
mod versioned;

pub use cat::PartByReference;
pub use convert::Converted;
pub use keyorder::prefix_successor;
pub use list::{ListEntry, ListPage, ListQuery};
pub use meta::ObjectMeta;
pub use multipart::{CompleteStats, PartWrite, MULTIPART_CHUNK_SIZE};
pub use versioned::{
    DeleteCondition, DeleteOutcome, Lookup, VersionItem, VersionListQuery, VersionPage,
};

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
    pub async fn abort(self) -> Result<()> {
        self.upload.abort().await?;
        self.reg.done().await;
        Ok(())
    }
}

async fn release(lock: KeyLock) {
    if let Err(e) = lock.release().await {
        tracing::warn!(error = %e, "could not release a lock; it expires on its own");
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
        }
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
            .sort(doc! {"uploadDate": -1, "_id": -1})
            .await?;
        let Some(d) = found else { return Ok(None) };
        let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
        self.ensure_etag(bucket, &mut info, &d).await?;
        Ok(Some(info))
    }

    /// Writes back the attributes of a revision the caller looked up and changed (retention,
    /// legal hold), by its `_id`.
    pub async fn set_object_meta(&self, bucket: &str, info: ObjectInfo) -> Result<()> {
        self.write_meta(bucket, &info).await
    }

    /// Replaces the tags of a revision the caller looked up, by its `_id` (so never onto a
    /// newer revision).
    pub async fn set_object_tags(
        &self,
        bucket: &str,
        mut info: ObjectInfo,
        tags: &[(String, String)],
    ) -> Result<()> {
        info.meta.tags = tags.to_vec();
        self.write_meta(bucket, &info).await
    }

    /// Writes a revision's attributes back, by its `_id` (so never onto a newer revision), and
    /// in a versioned bucket the copies its version entry and master keep.
    async fn write_meta(&self, bucket: &str, info: &ObjectInfo) -> Result<()> {
        let metadata = info.meta.to_metadata();
        self.gridfs(bucket)
            .files()
            .update_one(
                doc! {"_id": info.file.id.clone()},
                doc! {"$set": {"metadata": metadata.clone()}},
            )
            .await?;
        if info.version_id.is_some() {
            let vid = info
                .meta
                .version_id
                .clone()
                .or(info.version_id.clone())
                .unwrap_or_default();
            let idx = self.versions(bucket);
            // The version's copies change under its key's lock, like the master's every write.
            self.under_lock(bucket, info.key(), async {
                let vid = match info.version_id.as_deref() {
                    Some("null") => match idx.entry(info.key(), "null").await? {
                        Some(e) => e.vid,
                        None => vid,
                    },
                    _ => vid,
                };
                idx.set_metadata(info.key(), &vid, metadata).await
            })
            .await?;
        }
        Ok(())
    }

    /// Replaces the ACL grants (empty: private) of a revision the caller looked up (and
    /// authorized), with one write.
    pub async fn set_object_acl(
        &self,
        bucket: &str,
        mut info: ObjectInfo,
        grants: Vec<(String, String)>,
    ) -> Result<()> {
        info.meta.acl = None;
        info.meta.grants = grants;
        self.write_meta(bucket, &info).await
    }

    /// Starts writing a new revision of `key` (invisible until [`ObjectStore::publish_if`]).
    /// The write is registered first, so that its chunks are reclaimed if this process dies.
    pub async fn open_upload(&self, bucket: &str, key: &str, sha256: bool) -> Result<ObjectWrite> {
        self.open_upload_sealed(bucket, key, sha256, None).await
    }

    /// [`ObjectStore::open_upload`] whose chunks are sealed with `codec` (server-side
    /// encryption).
    pub async fn open_upload_sealed(
        &self,
        bucket: &str,
        key: &str,
        sha256: bool,
        codec: Option<std::sync::Arc<dyn super::gridfs::ChunkCodec>>,
    ) -> Result<ObjectWrite> {
        // An encrypted object is never de-duplicated, even in a content-addressed bucket: it
        // is sealed under a data key of its own and stored as a GridFS file there (see
        // docs/storage-modes.md, "Storage modes").
        if codec.is_none() && self.storage_mode(bucket).await? == StorageMode::Content {
            // Large contents are staged as chunks of the blobs bucket under a registered id,
            // which also becomes the object's `_id`; small ones stay in memory.
            let blobs = content::blobs_name(bucket);
            let reg = self.meta.register_write(&blobs).await?;
            let id = Bson::ObjectId(reg.file_id());
            let upload = self
                .gridfs(&blobs)
                .open_upload_stream(
                    key,
                    UploadOptions {
                        id: Some(id),
                        sha256,
                        sha1: true,
                        hold_small: true,
                        ..Default::default()
                    },
                )
                .await?;
            return Ok(ObjectWrite {
                upload,
                reg,
                reference: None,
                content: true,
            });
        }
        let reg = self.meta.register_write(bucket).await?;
        let id = Bson::ObjectId(reg.file_id());
        let upload = self
            .gridfs(bucket)
            .open_upload_stream(
                key,
                UploadOptions {
                    id: Some(id),
                    sha256,
                    codec,
                    ..Default::default()
                },
            )
            .await?;
        Ok(ObjectWrite {
            upload,
            reg,
            reference: None,
            content: false,
        })
    }

    /// A copy of `src` as `key` of the same content-addressed bucket that points at the same
    /// content (published with [`ObjectStore::publish_if`] like any write), or `None` when the
    /// bucket is not content-addressed or the source has no content of its own to share.
    pub async fn open_reference_copy(
        &self,
        bucket: &str,
        key: &str,
        src: &ObjectInfo,
    ) -> Result<Option<(ObjectWrite, super::gridfs::Digests)>> {
        let Some(pointer) = src.file.content.as_ref().and_then(Pointer::of) else {
            return Ok(None);
        };
        // (A bucket being converted to GridFS still has objects with pointers: copies there
        // carry their bytes.)
        if self.storage_mode(bucket).await? != StorageMode::Content {
            return Ok(None);
        }
        let Some(md5) = content_md5(src) else {
            return Ok(None);
        };
        let sha1 = match &pointer {
            Pointer::Sha(s) => *s,
            Pointer::Inline(b) => {
                use sha1::Digest;
                sha1::Sha1::digest(b).into()
            }
        };
        let digests = super::gridfs::Digests {
            length: src.file.length,
            md5,
            sha256: None,
            sha1: Some(sha1),
        };
        let mut write = self.open_upload(bucket, key, false).await?;
        if !write.content {
            // Converted to GridFS meanwhile: the caller copies the bytes.
            write.abort().await?;
            return Ok(None);
        }
        write.reference = Some((pointer, digests.clone()));
        Ok(Some((write, digests)))
    }

    /// Evaluates a write condition against the current object.
    async fn blocked_by(
        &self,
        bucket: &str,
        key: &str,
        cond: &WriteCondition,
    ) -> Result<Option<Blocked>> {
        Ok(match cond {
            WriteCondition::Always => None,
            WriteCondition::IfAbsent => self
                .head(bucket, key)
                .await?
                .map(|_| Blocked::PreconditionFailed),
            WriteCondition::IfMatch(want) => match self.head(bucket, key).await? {
                None => Some(Blocked::NoSuchKey),
                Some(o) if etag_listed(o.etag(), want) => None,
                Some(_) => Some(Blocked::PreconditionFailed),
            },
            WriteCondition::IfNoneMatch(list) => match self.head(bucket, key).await? {
                Some(o) if etag_listed(o.etag(), list) => Some(Blocked::PreconditionFailed),
                _ => None,
            },
        })
    }

    /// Runs `f` holding the key's lock, after checking `cond` under it. Every publish goes
    /// through here, so a condition checked under the lock still holds when `f` publishes,
    /// whichever gateway instance the racing writer is on. The lock is released on every path
    /// (an error or a cancelled request drops it, which releases it).
    pub async fn with_key_locked<T, F, Fut>(
        &self,
        bucket: &str,
        key: &str,
        cond: &WriteCondition,
        f: F,
    ) -> Result<std::result::Result<T, Blocked>>
    where
        F: FnOnce(KeyLock) -> Fut,
        Fut: std::future::Future<Output = Result<(T, KeyLock)>>,
    {
        let Some(lock) = self.meta.lock_key(bucket, key).await? else {
            return Ok(Err(Blocked::Busy));
        };
        if let Some(b) = self.blocked_by(bucket, key, cond).await? {
            release(lock).await;
            return Ok(Err(b));
        }
        let (out, lock) = f(lock).await?;
        release(lock).await;
        Ok(Ok(out))
    }

    /// Runs `f` holding the key's lock (released on every path), for the version index's
    /// writes that need no fence; `Conflict` when the lock could not be had within the wait.
    pub(super) async fn under_lock<T>(
        &self,
        bucket: &str,
        key: &str,
        f: impl std::future::Future<Output = Result<T>>,
    ) -> Result<T> {
        let Some(lock) = self.meta.lock_key(bucket, key).await? else {
            return Err(GridFsError::Conflict(
                "another write of this key is in progress".into(),
            ));
        };
        let res = f.await;
        release(lock).await;
        res
    }

    /// Publishes a write if `cond` holds; otherwise removes its chunks.
    ///
    /// An unconditional write into an unversioned bucket takes no key lock: its revision is
    /// stamped after the newest one it finds, so a write that starts after another one ended
    /// always lands after it, and writes that overlap in time may land in either order, as in
    /// S3. What the lock would add is settled afterwards (see `settle`). A write with a
    /// condition, or into a versioned bucket, publishes under the key's lock.
    pub async fn publish_if(
        &self,
        bucket: &str,
        write: ObjectWrite,
        meta: ObjectMeta,
        cond: &WriteCondition,
    ) -> Result<std::result::Result<ObjectInfo, Blocked>> {
        if *cond == WriteCondition::Always && self.versioning(bucket).await?.0 == Versioning::Off {
            return Ok(Ok(self.publish(bucket, write, meta, None).await?));
        }
        let key = write.upload.filename().to_owned();
        let slot = std::sync::Mutex::new(Some(write));
        let res = self
            .with_key_locked(bucket, &key, cond, |lock| async {
                let w = slot.lock().expect("slot").take().expect("published once");
                // Boxed: this future is nested in the lock's, and the whole publish state
                // would otherwise be part of every caller's.
                let info = Box::pin(self.publish(bucket, w, meta, Some(&lock))).await?;
                Ok((info, lock))
            })
            .await;
        let unpublished = slot.lock().expect("slot").take();
        if let Some(w) = unpublished {
            w.abort().await?;
        }
        match res? {
            Ok(info) if *cond != WriteCondition::Always => {
                Ok(self.recheck_condition(bucket, info).await?)
            }
            other => Ok(other),
        }
    }

    /// After a conditional publish into an unversioned bucket: an unconditional write (which
    /// takes no lock) that published after the condition was checked and is stamped before
    /// this write means the condition may not have held when this write landed. This write then
    /// withdraws (409 ConditionalRequestConflict, which AWS also answers to racing writes);
    /// one stamped after it simply replaced it.
    async fn recheck_condition(
        &self,
        bucket: &str,
        info: ObjectInfo,
    ) -> Result<std::result::Result<ObjectInfo, Blocked>> {
        if info.meta.version_id.is_some() {
            return Ok(Ok(info));
        }
        let date = info.file.upload_date;
        let others: Vec<(Bson, DateTime)> = self
            .revisions(bucket, info.key())
            .await?
            .into_iter()
            .filter(|(id, _)| *id != info.file.id)
            .collect();
        if others.iter().any(|(_, d)| *d < date) {
            self.reclaim(bucket, &info.file.id).await?;
            return Ok(Err(Blocked::Conflict));
        }
        Ok(Ok(info))
    }

    /// Publishes a write as the current object of its key (the caller holds the key's lock,
    /// or takes none: see [`ObjectStore::publish_if`]), then reclaims older revisions. Crash
    /// points: before the files document is written the registration makes the janitor
    /// reclaim the chunks; after it, the object is complete and older revisions are hidden
    /// behind it until they are reclaimed (here, by settling, or by the next overwrite or
    /// delete).
    async fn publish(
        &self,
        bucket: &str,
        mut write: ObjectWrite,
        meta: ObjectMeta,
        lock: Option<&KeyLock>,
    ) -> Result<ObjectInfo> {
        if write.content {
            // Boxed: request futures are deep, and this one would add its whole state to them.
            return Box::pin(self.publish_content(bucket, write, meta, lock)).await;
        }
        write.upload.flush().await?;
        let key = write.upload.filename().to_owned();
        let mut meta = meta;
        let prepared = self
            .prepare_publish(bucket, &key, &write.upload.id().clone())
            .await?;
        meta.version_id = prepared.vid.clone();
        self.fence(lock, Some(&write.reg)).await?;
        let file = write
            .upload
            .publish_at(Some(meta.to_metadata()), prepared.date)
            .await?;
        // The registration ends only once the version is recorded: a crash before that has
        // the janitor finish the record (`index_file`).
        let info = self.finish_publish(bucket, prepared, file).await?;
        write.reg.done().await;
        Ok(info)
    }

    /// [`ObjectStore::publish`] in a content-addressed bucket (see `storage::content`): the
    /// content goes inside the object's document when it is small enough; otherwise it is
    /// referenced first, then stored unless the same bytes are stored already (a small one as
    /// a content document, a large one by adopting the chunks staged in the blobs bucket), and
    /// the object's document points at it by SHA-1.
    async fn publish_content(
        &self,
        bucket: &str,
        mut write: ObjectWrite,
        meta: ObjectMeta,
        lock: Option<&KeyLock>,
    ) -> Result<ObjectInfo> {
        let contents = self.contents(bucket);
        let id = write.upload.id().clone();
        if let Some((pointer, digests)) = write.reference.take() {
            // A copy: reference the content, and make sure it stays (or fail the copy).
            if let Pointer::Sha(sha) = &pointer {
                contents.reference(&id, sha).await?;
                if !contents.keep(sha, digests.length).await? {
                    return Err(GridFsError::FileNotFound);
                }
            }
            write.upload.take_small();
            return self
                .publish_pointer(bucket, write, meta, lock, pointer, digests.length)
                .await;
        }
        let digests = write.upload.flush().await?;
        let sha = digests
            .sha1
            .ok_or_else(|| GridFsError::Corrupt("a content upload without its SHA-1".into()))?;
        let pointer = match write.upload.take_small() {
            Some(bytes) if bytes.len() <= contents.settings().inline_max => Pointer::Inline(bytes),
            Some(bytes) => {
                contents.reference(&id, &sha).await?;
                contents
                    .store_small(&sha, &bytes, meta.content_type.as_deref())
                    .await?;
                Pointer::Sha(sha)
            }
            None => {
                contents.reference(&id, &sha).await?;
                // The staged chunks are the adoption's now: adopted, or deleted as a copy.
                write.upload.disarm();
                contents
                    .adopt_blob(
                        &id,
                        &sha,
                        digests.length,
                        write.upload.chunk_size(),
                        &write.reg,
                    )
                    .await?;
                Pointer::Sha(sha)
            }
        };
        self.publish_pointer(bucket, write, meta, lock, pointer, digests.length)
            .await
    }

    /// Writes a content-addressed object's document (pointing at its content), as the current
    /// object of its key.
    async fn publish_pointer(
        &self,
        bucket: &str,
        write: ObjectWrite,
        mut meta: ObjectMeta,
        lock: Option<&KeyLock>,
        pointer: Pointer,
        length: u64,
    ) -> Result<ObjectInfo> {
        let id = write.upload.id().clone();
        let key = write.upload.filename().to_owned();
        let prepared = self.prepare_publish(bucket, &key, &id).await?;
        meta.version_id = prepared.vid.clone();
        self.fence(lock, Some(&write.reg)).await?;
        let mut fields = pointer.fields();
        if let Some(ct) = &meta.content_type {
            fields.insert("contentType", ct.clone());
        }
        let file = FileDoc {
            id,
            length,
            chunk_size: self.chunk_size,
            upload_date: prepared.date,
            filename: Some(key),
            metadata: Some(meta.to_metadata()),
            content: Some(fields),
        };
        self.gridfs(bucket)
            .files()
            .insert_one(file.to_document())
            .await?;
        // (Where a test "crashes" a write between its object and its version entry.)
        crate::failpoint::hit("publish.recorded", bucket).await;
        let info = self.finish_publish(bucket, prepared, file).await?;
        write.reg.done().await;
        Ok(info)
    }

    /// The fence before a publishing write: the key lock (and the write's registration) must
    /// still be held, or nothing is published.
    async fn fence(&self, lock: Option<&KeyLock>, reg: Option<&WriteReg>) -> Result<()> {
        if let Some(lock) = lock {
            if !lock.fence().await? {
                return Err(GridFsError::Conflict("the key lock was lost".into()));
            }
        }
        if let Some(reg) = reg {
            if !reg.fence().await? {
                return Err(GridFsError::Conflict(
                    "the write registration expired and its chunks were reclaimed".into(),
                ));
            }
        }
        Ok(())
    }

    /// Every revision of `key`: `(_id, uploadDate)`.
    async fn revisions(&self, bucket: &str, key: &str) -> Result<Vec<(Bson, DateTime)>> {
        let docs: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": key})
            .projection(doc! {"_id": 1, "uploadDate": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|mut d| {
                let date = *d.get_datetime("uploadDate").ok()?;
                Some((d.remove("_id")?, date))
            })
            .collect())
    }

    /// The `uploadDate` of a new revision: the database's time, but always after every
    /// revision the key has, so a write that started after another one was published lands
    /// after it, whatever the clocks of the instances that wrote them.
    fn stamp(&self, older: &[(Bson, DateTime)]) -> DateTime {
        let now = self.meta.clock().now().timestamp_millis();
        let newest = older
            .iter()
            .map(|(_, d)| d.timestamp_millis() + 1)
            .max()
            .unwrap_or(i64::MIN);
        DateTime::from_millis(now.max(newest))
    }

    /// Reclaims the revisions a publish replaced; a failure leaves them hidden behind the new
    /// one (the next overwrite or delete finds them again).
    async fn reclaim_all(&self, bucket: &str, older: &[(Bson, DateTime)], new: &ObjectInfo) {
        for (id, _) in older {
            if *id == new.file.id {
                continue;
            }
            if let Err(e) = self.reclaim(bucket, id).await {
                tracing::warn!(bucket, key = new.key(), error = %e, "could not reclaim an older revision");
                return;
            }
        }
    }

    /// Removes one revision: record the intent, hide it (files document), and delete its
    /// chunks unless a reader holds a lease, in which case the janitor does it later.
    pub async fn reclaim(&self, bucket: &str, file_id: &Bson) -> Result<()> {
        self.reclaim_of(bucket, file_id, None).await
    }

    /// [`ObjectStore::reclaim`] of a version's data, whose entry (`entry`, its `_id` in the
    /// version index) goes right after the files document: the record names both, so a crash
    /// anywhere leaves the janitor to finish, never an entry naming data that is gone.
    pub(super) async fn reclaim_of(
        &self,
        bucket: &str,
        file_id: &Bson,
        entry: Option<&str>,
    ) -> Result<()> {
        let fs = self.gridfs(bucket);
        let record = self.meta.add_reclaim_of(bucket, file_id, entry).await?;
        fs.files().delete_one(doc! {"_id": file_id.clone()}).await?;
        if self.may_hold_contents(bucket).await? {
            self.contents(bucket).release(file_id).await?;
        }
        if let Some(e) = entry {
            self.versions(bucket).remove_id(e).await?;
        }
        if !self.meta.has_live_lease(bucket, file_id).await? {
            fs.chunks()
                .delete_many(doc! {"files_id": file_id.clone()})
                .await?;
            self.meta.remove_reclaim(record).await?;
        }
        Ok(())
    }

    /// Deletes every revision of many keys in a fixed number of round trips (six, whatever
    /// the number of keys): the same protocol as [`ObjectStore::reclaim`], batched. Record the
    /// intents, hide the files documents, look for leases once, delete the unleased files'
    /// chunks, drop their records; leased ones are left to the janitor.
    pub async fn delete_keys(&self, bucket: &str, keys: &[String]) -> Result<()> {
        let fs = self.gridfs(bucket);
        let ids =
            super::gridfs::ids_of(fs.files(), doc! {"filename": {"$in": keys.to_vec()}}).await?;
        if ids.is_empty() {
            return Ok(());
        }
        let records = self.meta.add_reclaims(bucket, &ids).await?;
        fs.files()
            .delete_many(doc! {"_id": {"$in": ids.clone()}})
            .await?;
        if self.may_hold_contents(bucket).await? {
            // One update per object (its references' document, keyed by the object's id).
            let contents = self.contents(bucket);
            for id in &ids {
                contents.release(id).await?;
            }
        }
        let leased = self.meta.leased_among(bucket, &ids).await?;
        let (free, done): (Vec<Bson>, Vec<ObjectId>) = ids
            .into_iter()
            .zip(records)
            .filter(|(id, _)| !leased.contains(id))
            .unzip();
        if !free.is_empty() {
            fs.chunks()
                .delete_many(doc! {"files_id": {"$in": free}})
                .await?;
        }
        self.meta.remove_reclaims(&done).await?;
        Ok(())
    }

    /// Deletes every revision of `key`; `false` when there was none.
    pub async fn delete(&self, bucket: &str, key: &str) -> Result<bool> {
        let fs = self.gridfs(bucket);
        let ids: Vec<Document> = fs
            .files()
            .find(doc! {"filename": key})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        for d in &ids {
            if let Some(id) = d.get("_id") {
                self.reclaim(bucket, id).await?;
            }
        }
        Ok(!ids.is_empty())
    }

    /// Streams bytes `[start, end)` of an object under a reader lease, renewed while the
    /// stream lives and released when it is dropped. `FileNotFound` when the revision was
    /// replaced or deleted before the lease was taken (the caller looks the key up again).
    pub async fn open_read(
        &self,
        bucket: &str,
        info: &ObjectInfo,
        start: u64,
        end: u64,
    ) -> Result<ByteStream> {
        crate::failpoint::hit("read.open", bucket).await;
        if let Some(p) = info.file.content.as_ref().and_then(Pointer::of) {
            return Box::pin(self.contents(bucket).read(&p, info.file.length, start, end)).await;
        }
        let fs = self.gridfs(bucket);
        let sealing = info.sealing()?;
        if start == end {
            return fs.download_sealed(&info.file, sealing.as_ref(), 0, start, end);
        }
        if end - start <= SMALL_READ {
            // One round trip reads it all: no reader lease is needed, because a reclaim that
            // overlaps the read shows as a missing chunk, and the caller looks the key up again.
            return match fs
                .read_sealed(&info.file, sealing.as_ref(), start, end)
                .await
            {
                Ok(b) => Ok(Box::pin(futures::stream::once(async move { Ok(b) }))),
                Err(GridFsError::ChunkMissing(n)) => {
                    // Reclaimed meanwhile (look again), converted to a content meanwhile (read
                    // that), or a file that lost a chunk (corrupt).
                    match self.converted(bucket, info).await? {
                        Now::Gone => Err(GridFsError::FileNotFound),
                        Now::Content(p) => {
                            Box::pin(self.contents(bucket).read(&p, info.file.length, start, end))
                                .await
                        }
                        Now::Same => Err(GridFsError::ChunkMissing(n)),
                    }
                }
                Err(e) => Err(e),
            };
        }
        let lease = self
            .meta
            .acquire_lease(bucket, &info.file.id, LEASE_TTL)
            .await?;
        // Still there, and still GridFS chunks (a conversion to a content deletes the chunks
        // only after the document points at the content, and only without a lease: a reader
        // that looked the object up before reads the content).
        match self.converted(bucket, info).await {
            Ok(Now::Same) => {}
            other => {
                let _ = self.meta.release_lease(&lease).await;
                return match other? {
                    Now::Content(p) => {
                        Box::pin(self.contents(bucket).read(&p, info.file.length, start, end)).await
                    }
                    _ => Err(GridFsError::FileNotFound),
                };
            }
        }
        let stream = fs.download_sealed(&info.file, sealing.as_ref(), 0, start, end)?;
        let meta = self.meta.clone();
        let renew_lease = lease.clone();
        let renew = crate::background::spawn("lease-heartbeat", async move {
            let mut tick = tokio::time::interval(LEASE_TTL / 3);
            tick.tick().await;
            loop {
                tick.tick().await;
                if let Err(e) = meta.renew_lease(&renew_lease, LEASE_TTL).await {
                    tracing::warn!(error = %e, "could not renew a reader lease");
                }
            }
        });
        let guard = LeaseGuard {
            meta: self.meta.clone(),
            lease,
            renew,
        };
        Ok(Box::pin(stream.map(move |item| {
            let _held = &guard;
            item
        })))
    }

    /// One janitor pass: re-measures the clock, purges expired leases, finishes reclaims whose
    /// readers are gone, and reaps the chunks of writes whose writers died. Returns how many
    /// files it reclaimed or reaped.
    pub async fn janitor_pass(&self) -> Result<usize> {
        self.meta.clock().calibrate(&self.db).await?;
        self.meta.purge_expired_leases().await?;
        let mut done = 0;
        for p in self.meta.pending_reclaims(1000).await? {
            // A conversion's record: only the chunks it names go, the document lives on.
            if p.chunks_only {
                if self.finish_chunk_reclaim(&p).await? {
                    done += 1;
                }
                continue;
            }
            let fs = self.gridfs(&p.bucket);
            if self.meta.part_uses_file(&p.file_id).await? {
                // A part replacement that crashed before it replaced the part record: the
                // part still needs its chunks.
                self.meta.remove_reclaim(p.id).await?;
                continue;
            }
            // Hide first (a crash may have left the files document), *then* look for leases:
            // a reader that found the document before it was hidden holds a lease by now.
            fs.files()
                .delete_one(doc! {"_id": p.file_id.clone()})
                .await?;
            // And its content's reference released (a reclaim that died between the hide and
            // the release would otherwise keep the content for ever).
            if self.may_hold_contents(&p.bucket).await? {
                self.contents(&p.bucket).release(&p.file_id).await?;
            }
            if let Some(e) = &p.entry {
                self.versions(&p.bucket).remove_id(e).await?;
            }
            if !self.meta.has_live_lease(&p.bucket, &p.file_id).await? {
                fs.chunks()
                    .delete_many(doc! {"files_id": p.file_id.clone()})
                    .await?;
                self.meta.remove_reclaim(p.id).await?;
                done += 1;
            }
        }
        // A write that raced a DeleteBucket may have recreated the bucket's collections:
        // the tombstone says they belong to nobody.
        // Only tombstones a minute old (racing writes have landed by then), checked again
        // right before the drop (a CreateBucket replaces the tombstone).
        let deleted = self.meta.deleted_buckets(Duration::from_secs(60)).await?;
        if !deleted.is_empty() {
            let existing = self.gridfs_bucket_names().await?;
            for name in deleted.iter().filter(|d| existing.contains(d)) {
                if !self.meta.is_tombstone(name).await? {
                    continue;
                }
                tracing::warn!(bucket = %name, "dropping collections recreated after the bucket was deleted");
                self.drop_bucket(name).await?;
            }
        }
        for w in self.meta.claim_dead_writes(1000).await? {
            done += self.reap_dead_write(&w).await?;
            self.meta.remove_write(w.id).await?;
        }
        for (b, retired) in self.meta.content_buckets().await? {
            let contents = self.contents(&b);
            done += contents.collect(self.gridfs(&b).files(), 1000).await?;
            // A bucket converted to GridFS: once no reference is left, neither is a content.
            if retired && contents.unreferenced().await? {
                contents.drop().await?;
                self.meta.contents_retired(&b).await?;
            }
        }
        Ok(done)
    }

    /// Reaps the file ids of a registration whose writer died: each published one is indexed
    /// (a writer that died between its publish and its version's record), each unpublished
    /// one loses its chunks. Point queries per id (some servers answer `$in` on `_id`, or `$in`
    /// beside another field, with a collection scan); a dead pool is rare. Returns how many
    /// writes lost chunks.
    async fn reap_dead_write(&self, w: &super::meta::DeadWrite) -> Result<usize> {
        let fs = self.gridfs(&w.bucket);
        // A content bucket's writes are registered in its blobs bucket (their chunks are
        // staged there), but the object they publish is a document of the bucket itself.
        // (No S3 bucket name holds `_`, so the suffix is never a bucket's own.)
        let objects_bucket = w.bucket.strip_suffix("._blobs").unwrap_or(&w.bucket);
        let objects = self.gridfs(objects_bucket);
        let mut unpublished = Vec::new();
        for id in &w.file_ids {
            let published = objects
                .files()
                .find_one(doc! {"_id": id.clone()})
                .projection(doc! {"_id": 1})
                .await?
                .is_some();
            if published {
                self.index_file(objects_bucket, id).await?;
            } else {
                unpublished.push(id.clone());
            }
        }
        if unpublished.is_empty() {
            return Ok(0);
        }
        let mut done = 0;
        for id in unpublished {
            if self.meta.part_uses_file(&id).await? {
                continue;
            }
            // Most of a pool's ids were never used: those deletes match nothing.
            let n = fs
                .chunks()
                .delete_many(doc! {"files_id": id.clone()})
                .await?
                .deleted_count;
            if n > 0 {
                tracing::info!(bucket = %w.bucket, file_id = %id, chunks = n, "reaped the chunks of a dead write");
                done += 1;
            }
        }
        Ok(done)
    }

    /// Whether the bucket holds no object (and, versioned, no version or delete marker).
    pub async fn is_empty(&self, bucket: &str) -> Result<bool> {
        let no_files = self
            .gridfs(bucket)
            .files()
            .find_one(doc! {})
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

/// An object as the lifecycle sees it: its current revision's attributes and every revision
/// it has (the ids a rule that expires it reclaims).
#[derive(Clone, Debug)]
pub struct LifecycleCandidate {
    /// Key.
    pub key: String,
    /// When the current revision was written.
    pub written: DateTime,
    /// Its size.
    pub size: u64,
    /// Its tags.
    pub tags: Vec<(String, String)>,
    /// Every revision's file id, the current one first.
    pub revisions: Vec<Bson>,
}

impl ObjectStore {
    /// The objects under `prefix`, with their revisions, from `after` on (exclusive), at most
    /// `limit` keys: one index-ordered scan of `{filename, uploadDate}`.
    pub async fn lifecycle_candidates(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<LifecycleCandidate>> {
        let mut filter = doc! {"$gte": prefix};
        if let Some(a) = after.filter(|a| *a >= prefix) {
            filter = doc! {"$gt": a};
        }
        let mut cursor = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": filter})
            .sort(doc! {"filename": 1, "uploadDate": -1, "_id": -1})
            .projection(doc! {"filename": 1, "uploadDate": 1, "length": 1, "metadata.tags": 1, "metadata.s3Sse": 1})
            .batch_size(1000)
            .await?;
        let mut out: Vec<LifecycleCandidate> = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            let Ok(key) = d.get_str("filename") else {
                continue;
            };
            if !key.starts_with(prefix) {
                break;
            }
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            if let Some(last) = out.last_mut().filter(|c| c.key == key) {
                last.revisions.push(id);
                continue;
            }
            if out.len() == limit {
                break;
            }
            let meta = ObjectMeta::from_metadata(d.get_document("metadata").ok());
            out.push(LifecycleCandidate {
                key: key.to_owned(),
                written: d
                    .get_datetime("uploadDate")
                    .copied()
                    .unwrap_or(DateTime::from_millis(0)),
                // An encrypted object's size is its plain text's.
                size: match (&meta.sse, d.get("length")) {
                    (Some(sse), _) => sse.size,
                    (None, Some(Bson::Int64(n))) => (*n).max(0) as u64,
                    (None, Some(Bson::Int32(n))) => (*n).max(0) as u64,
                    (None, Some(Bson::Double(n))) => n.max(0.0) as u64,
                    _ => 0,
                },
                tags: meta.tags.clone(),
                revisions: vec![id],
            });
        }
        Ok(out)
    }
}
