//! Writes and their publication: uploads, the key lock, conditional publishes and the
//! fence that keeps a stale writer from publishing.

use super::*;

impl ObjectStore {
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
        codec: Option<std::sync::Arc<dyn crate::storage::gridfs::ChunkCodec>>,
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
            let meter = self.meter_for(bucket, &reg.file_id()).await?;
            return Ok(ObjectWrite {
                upload,
                reg,
                reference: None,
                content: true,
                meter,
                written: 0,
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
        let meter = self.meter_for(bucket, &reg.file_id()).await?;
        // (Where a test knows a write began, metered or not.)
        crate::failpoint::hit("objects.opened", bucket).await;
        Ok(ObjectWrite {
            upload,
            reg,
            reference: None,
            content: false,
            meter,
            written: 0,
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
    ) -> Result<Option<(ObjectWrite, crate::storage::gridfs::Digests)>> {
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
        let digests = crate::storage::gridfs::Digests {
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
    pub(super) async fn blocked_by(
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
            lock.release_or_warn().await;
            return Ok(Err(b));
        }
        let (out, lock) = f(lock).await?;
        lock.release_or_warn().await;
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
            return Err(GridFsError::Busy(
                "another write of this key is in progress".into(),
            ));
        };
        let res = f.await;
        lock.release_or_warn().await;
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
    pub(super) async fn recheck_condition(
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
    pub(super) async fn publish(
        &self,
        bucket: &str,
        mut write: ObjectWrite,
        meta: ObjectMeta,
        lock: Option<&KeyLock>,
    ) -> Result<ObjectInfo> {
        let mut meta = meta;
        // A write that began before its bucket was metered (a first limit set meanwhile)
        // holds its whole size now, before it is published, or is refused and leaves nothing:
        // otherwise a limit set while it was in flight could be passed by it, the fold that
        // precedes the limit having run before it was published. (Free for an unmetered
        // bucket: the bucket's lookup is cached.)
        if write.meter.is_none() && self.is_metered(bucket).await? {
            write.meter = self.meter_for(bucket, &write.reg.file_id()).await?;
            write.late_meter();
        }
        if write.content {
            if let Err(e) = write.before_publish(&mut meta).await {
                if let Err(abort) = write.abort().await {
                    tracing::warn!(error = %abort, "could not abort a refused upload");
                }
                return Err(e);
            }
            // Boxed: request futures are deep, and this one would add its whole state to them.
            return Box::pin(self.publish_content(bucket, write, meta, lock)).await;
        }
        let key = write.upload.filename().to_owned();
        let id = write.upload.id().clone();
        // The revision lookup (a read) goes while a metered write's hold is stored, if it is
        // still on its way (see `meter`); nothing is sent to be stored before both are done.
        let (held, prepared) = tokio::join!(
            write.before_publish(&mut meta),
            self.prepare_publish(bucket, &key, &id)
        );
        if let Err(e) = held {
            // Refused (or failed) before anything was stored: ended here, so that its
            // registration is done with rather than left to expire.
            if let Err(abort) = write.abort().await {
                tracing::warn!(error = %abort, "could not abort a refused upload");
            }
            return Err(e);
        }
        let prepared = prepared?;
        write.upload.end().await?;
        // Kept for the GET that often follows (see `small_cache`): a copy of a small chunk.
        let sole = if self.small_cache_on() {
            write.upload.sole_chunk()
        } else {
            None
        };
        let versioned = prepared.mode != Versioning::Off;
        meta.version_id = prepared.vid.clone();
        self.fence(lock, Some(&write.reg)).await?;
        crate::failpoint::hit("publish.fenced", bucket).await;
        write.sending();
        let mut meter = write.meter.take();
        let file = write
            .upload
            .publish_at(Some(meta.to_metadata()), prepared.date)
            .await
            .map_err(outlived)?;
        // The registration ends only once the version is recorded: a crash before that has
        // the janitor finish the record (`index_file`).
        if let Some(m) = &mut meter {
            m.published().await;
        }
        let info = self.finish_publish(bucket, prepared, file).await?;
        write.reg.done().await;
        if let Some(chunk) = sole {
            self.keep_written(bucket, &key, versioned, &info.file, chunk);
        }
        Ok(info)
    }

    /// [`ObjectStore::publish`] in a content-addressed bucket (see `storage::content`): the
    /// content goes inside the object's document when it is small enough; otherwise it is
    /// referenced first, then stored unless the same bytes are stored already (a small one as
    /// a content document, a large one by adopting the chunks staged in the blobs bucket), and
    /// the object's document points at it by SHA-1.
    pub(super) async fn publish_content(
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
        let pointer = place_content(
            &contents,
            &id,
            &id,
            &mut write.upload,
            sha,
            digests.length,
            meta.content_type.as_deref(),
            &write.reg,
        )
        .await?;
        self.publish_pointer(bucket, write, meta, lock, pointer, digests.length)
            .await
    }

    /// Writes a content-addressed object's document (pointing at its content), as the current
    /// object of its key.
    pub(super) async fn publish_pointer(
        &self,
        bucket: &str,
        mut write: ObjectWrite,
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
        let fields = pointer_fields(&pointer, meta.content_type.as_deref());
        let file = FileDoc {
            id,
            length,
            chunk_size: self.chunk_size,
            upload_date: prepared.date,
            filename: Some(key),
            metadata: Some(meta.to_metadata()),
            content: Some(fields),
        };
        write.sending();
        self.gridfs(bucket)
            .files()
            .insert_one(file.to_document())
            .await
            .map_err(|e| outlived(e.into()))?;
        // (Where a test "crashes" a write between its object and its version entry.)
        crate::failpoint::hit("publish.recorded", bucket).await;
        write.published().await;
        let info = self.finish_publish(bucket, prepared, file).await?;
        write.reg.done().await;
        Ok(info)
    }

    /// The fence before a publishing write: the key lock (and the write's registration) must
    /// still be held, or nothing is published.
    pub(super) async fn fence(&self, lock: Option<&KeyLock>, reg: Option<&WriteReg>) -> Result<()> {
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
}

/// Where a content-addressed object's bytes go, by size: inside its own document (at most
/// `inline_max` bytes), a content document of their own (a small upload), or the chunks the
/// upload staged, adopted as the content's blob. `owner` references the content first, so no
/// reclaim takes it between storing and publishing. The one routine of new writes and
/// conversions.
#[allow(clippy::too_many_arguments)]
pub(super) async fn place_content(
    contents: &Contents,
    owner: &Bson,
    staged: &Bson,
    up: &mut Upload,
    sha: [u8; 20],
    length: u64,
    content_type: Option<&str>,
    reg: &WriteReg,
) -> Result<Pointer> {
    Ok(match up.take_small() {
        Some(bytes) if bytes.len() <= contents.settings().inline_max => Pointer::Inline(bytes),
        Some(bytes) => {
            contents.reference(owner, &sha).await?;
            contents.store_small(&sha, &bytes, content_type).await?;
            Pointer::Sha(sha)
        }
        None => {
            contents.reference(owner, &sha).await?;
            // The staged chunks are the adoption's now: adopted, or deleted as a copy.
            up.disarm();
            contents
                .adopt_blob(staged, &sha, length, up.chunk_size(), reg)
                .await?;
            Pointer::Sha(sha)
        }
    })
}

/// The fields of a content-addressed object's document that say where its bytes are, with its
/// content type (v7files keeps it beside the pointer).
pub(super) fn pointer_fields(pointer: &Pointer, content_type: Option<&str>) -> Document {
    let mut fields = pointer.fields();
    if let Some(ct) = content_type {
        fields.insert("contentType", ct);
    }
    fields
}

/// A publish whose files document collides with its own id: the reaper took the write for
/// dead (its registration expired while it stalled after its fence), deleted its chunks and
/// left a tombstone under the id. The write fails (`409 OperationAborted`, retryable) rather
/// than publishing an object without data.
fn outlived(e: GridFsError) -> GridFsError {
    match &e {
        GridFsError::Mongo(m) if crate::storage::meta::is_duplicate_key(m) => {
            GridFsError::Conflict(
                "the write outlived its registration: its chunks were reaped".into(),
            )
        }
        _ => e,
    }
}
