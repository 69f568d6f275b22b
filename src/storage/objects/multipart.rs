//! Multipart uploads. Parts are stored as GridFS chunks under a file id of their own, with the
//! completed object's chunk size; completing turns the parts' chunks into the object's chunks
//! in place (one `update_many` per part re-labels `files_id` and shifts `n`), so no data is
//! copied when the parts are multiples of the chunk size. Only parts from the first one that
//! is not are rewritten. Completion is idempotent, so a Complete interrupted by a crash can be
//! retried by the client.

use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime};

use super::{release, ObjectInfo, ObjectMeta, ObjectStore, ObjectWrite};
use crate::storage::gridfs::{FileDoc, GridFsError, Result, UploadOptions};
use crate::storage::meta::{is_duplicate_key, KeyLock, PartRecord, UploadRecord};

/// Chunk size of multipart parts and of the objects they complete: 1 MiB divides the common
/// part sizes (5, 8, 16, 64 MiB), so their chunks are adopted in place.
pub const MULTIPART_CHUNK_SIZE: u32 = 1024 * 1024;

/// What a completion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompleteStats {
    /// Parts whose chunks became the object's chunks in place.
    pub parts_adopted: usize,
    /// Bytes rewritten because a part was not a multiple of the chunk size.
    pub bytes_rewritten: u64,
}

impl ObjectStore {
    /// Starts an upload.
    pub async fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        owner: &str,
        meta: &ObjectMeta,
        checksum_algorithm: Option<String>,
    ) -> Result<UploadRecord> {
        self.gridfs(bucket).ensure_indexes().await?;
        let rec = UploadRecord {
            id: uuid::Uuid::new_v4().simple().to_string(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            initiated: self.meta.clock().now(),
            owner: owner.to_owned(),
            meta: meta.to_metadata(),
            file_id: ObjectId::new(),
            chunk_size: MULTIPART_CHUNK_SIZE,
            checksum_algorithm,
            completed: None,
            aborting: false,
        };
        self.meta.create_upload(&rec).await?;
        Ok(rec)
    }

    /// Opens the chunk writer of a new part, registered like any write.
    pub async fn open_part(&self, up: &UploadRecord) -> Result<ObjectWrite> {
        let id = Bson::ObjectId(ObjectId::new());
        let reg = self.meta.register_write(&up.bucket, &id, "part").await?;
        let upload = self
            .gridfs(&up.bucket)
            .open_upload_stream(
                &up.key,
                UploadOptions {
                    id: Some(id),
                    chunk_size: Some(up.chunk_size),
                    ..Default::default()
                },
            )
            .await?;
        Ok(ObjectWrite { upload, reg })
    }

    /// Takes an upload's lock, or fails with a conflict after the wait.
    async fn lock_upload(&self, up: &UploadRecord) -> Result<KeyLock> {
        self.meta
            .lock_upload(&up.id)
            .await?
            .ok_or_else(|| GridFsError::Conflict("the upload is busy".into()))
    }

    /// Keeps a written part, replacing an earlier part with the same number. `None` when the
    /// upload was completed or aborted meanwhile (the part's chunks are removed).
    ///
    /// Under the upload's lock: the upload is re-read (still open?), the replaced part's
    /// chunks are recorded for reclaim *before* the part record is replaced (a crash after
    /// that leaves a record the janitor finishes; one before it leaves the record, which the
    /// janitor drops because the part still uses those chunks), then the write's registration
    /// is fenced and the part record written.
    pub async fn commit_part(
        &self,
        up: &UploadRecord,
        number: i32,
        mut part: ObjectWrite,
        checksum: Option<(String, String)>,
    ) -> Result<Option<PartRecord>> {
        let file_id = match part.upload.id() {
            Bson::ObjectId(o) => *o,
            _ => unreachable!("parts get ObjectIds"),
        };
        let digests = part.upload.flush().await?;
        // Every chunk is stored. From here a drop (a cancelled request) leaves them to the
        // registration, so a part record written just before the drop never loses its chunks;
        // the explicit failure paths below delete them themselves.
        part.upload.disarm();
        let lock = self.lock_upload(up).await?;
        let still_open = self
            .meta
            .get_upload(&up.bucket, &up.id)
            .await?
            .is_some_and(|u| u.is_open());
        if !still_open {
            part.abort().await?;
            release(lock).await;
            return Ok(None);
        }
        let rec = PartRecord {
            upload_id: up.id.clone(),
            number,
            file_id,
            size: digests.length,
            md5_hex: hex::encode(digests.md5),
            last_modified: self.meta.clock().now(),
            checksum,
        };
        let replaced = self.meta.get_part(&up.id, number).await?;
        let reclaim = match &replaced {
            Some(old) => Some(
                self.meta
                    .add_reclaim(&up.bucket, &Bson::ObjectId(old.file_id))
                    .await?,
            ),
            None => None,
        };
        if !part.reg.fence().await? || !lock.fence().await? {
            return Err(GridFsError::Conflict(
                "the part's write registration or the upload's lock expired".into(),
            ));
        }
        self.meta.put_part(&rec).await?;
        let ObjectWrite { upload, reg } = part;
        upload.commit_chunks().await?;
        reg.done().await;
        if let (Some(old), Some(record)) = (replaced, reclaim) {
            self.gridfs(&up.bucket)
                .chunks()
                .delete_many(doc! {"files_id": old.file_id})
                .await?;
            self.meta.remove_reclaim(record).await?;
        }
        release(lock).await;
        Ok(Some(rec))
    }

    /// Removes an upload and everything it wrote. Order: mark it aborting (no part joins it
    /// after that), delete the parts' chunks and any chunks Complete had already moved under
    /// the object's id (only if that object was never published), the part records, the
    /// upload record. A crash anywhere leaves the mark, and the sweep finishes the job.
    pub async fn abort_multipart(&self, up: &UploadRecord) -> Result<()> {
        let lock = self.lock_upload(up).await?;
        let res = self.abort_locked(up).await;
        release(lock).await;
        res
    }

    async fn abort_locked(&self, up: &UploadRecord) -> Result<()> {
        let fs = self.gridfs(&up.bucket);
        let Some(current) = self.meta.get_upload(&up.bucket, &up.id).await? else {
            return Ok(());
        };
        if current.completed.is_some() || self.file_exists(&up.bucket, up.file_id).await? {
            // Published (a Complete crashed after its publish): only the leftovers go, and the
            // record becomes the completed tombstone the sweep drops later.
            self.finish_completed(&current).await?;
            if current.completed.is_none() {
                let etag = self
                    .completed_object(&current)
                    .await?
                    .map(|o| o.etag().to_owned())
                    .unwrap_or_default();
                self.meta
                    .mark_upload_completed(&up.id, doc! {"etag": etag})
                    .await?;
            }
            return Ok(());
        }
        self.meta.mark_upload_aborting(&up.id).await?;
        let parts = self.meta.list_parts(&up.id, 0, 0).await?;
        let mut ids: Vec<ObjectId> = parts.iter().map(|p| p.file_id).collect();
        ids.push(up.file_id);
        fs.chunks()
            .delete_many(doc! {"files_id": {"$in": ids}})
            .await?;
        self.meta.delete_parts(&up.id).await?;
        self.meta.delete_upload(&up.id).await?;
        Ok(())
    }

    async fn file_exists(&self, bucket: &str, id: ObjectId) -> Result<bool> {
        Ok(self
            .gridfs(bucket)
            .files()
            .find_one(doc! {"_id": id})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }

    /// After publication: deletes the chunks still under part ids (parts that were rewritten
    /// or not listed; adopted parts have none left) and the part records. Idempotent.
    async fn finish_completed(&self, up: &UploadRecord) -> Result<()> {
        let parts = self.meta.list_parts(&up.id, 0, 0).await?;
        if parts.is_empty() {
            return Ok(());
        }
        let ids: Vec<ObjectId> = parts.iter().map(|p| p.file_id).collect();
        self.gridfs(&up.bucket)
            .chunks()
            .delete_many(doc! {"files_id": {"$in": ids}})
            .await?;
        self.meta.delete_parts(&up.id).await?;
        Ok(())
    }

    /// The object a completed upload published (for a retried Complete), if it is still there.
    pub async fn completed_object(&self, up: &UploadRecord) -> Result<Option<ObjectInfo>> {
        let found = self
            .gridfs(&up.bucket)
            .files()
            .find_one(doc! {"_id": up.file_id})
            .await?;
        Ok(match found {
            Some(d) => Some(ObjectInfo::from_file(FileDoc::from_document(&d)?)),
            None => None,
        })
    }

    /// Completes an upload from `parts` (validated, in order) and publishes the object; the
    /// caller holds the key's lock. The upload's lock is taken here.
    ///
    /// Crash points, each finished by a retried Complete (or, if none comes, by the sweep's
    /// Abort, which deletes only what was never published):
    /// 1. parts' chunks re-labelled to the object's id (each `update_many` is idempotent: a
    ///    retry matches nothing for a part already moved);
    /// 2. the tail rewritten from the first part that is not chunk-aligned (a retry deletes
    ///    and rewrites it; the writer never deletes on drop, the upload record owns it);
    /// 3. the chunk count checked against the length: nothing is published short;
    /// 4. the files document inserted (the publish) after fencing the key and upload locks;
    /// 5. older revisions reclaimed; leftover part chunks and part records deleted;
    /// 6. the upload marked completed with its ETag (a retry answers from it; until then a
    ///    retry or the sweep recognises the publish by the object's id).
    ///
    /// `None` when the upload is no longer open (aborted, or completed with other parts).
    pub async fn complete_multipart(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        etag: &str,
        checksums: Vec<(String, String)>,
        key_lock: &KeyLock,
    ) -> Result<Option<(ObjectInfo, CompleteStats)>> {
        let lock = self.lock_upload(up).await?;
        let res = self
            .complete_locked(up, parts, etag, checksums, key_lock, &lock)
            .await;
        release(lock).await;
        res
    }

    async fn complete_locked(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        etag: &str,
        checksums: Vec<(String, String)>,
        key_lock: &KeyLock,
        upload_lock: &KeyLock,
    ) -> Result<Option<(ObjectInfo, CompleteStats)>> {
        let fs = self.gridfs(&up.bucket);
        let Some(current) = self.meta.get_upload(&up.bucket, &up.id).await? else {
            return Ok(None);
        };
        if current.aborting {
            return Ok(None);
        }
        if current.completed.is_some() || self.file_exists(&up.bucket, up.file_id).await? {
            // A retry of a Complete that published already.
            let done_etag = current
                .completed
                .as_ref()
                .and_then(|c| c.get_str("etag").ok().map(str::to_owned));
            if done_etag.as_deref().is_some_and(|e| e != etag) {
                return Ok(None);
            }
            self.finish_completed(&current).await?;
            if current.completed.is_none() {
                self.meta
                    .mark_upload_completed(&up.id, doc! {"etag": etag})
                    .await?;
            }
            return Ok(self
                .completed_object(up)
                .await?
                .map(|o| (o, CompleteStats::default())));
        }
        let cs = u64::from(up.chunk_size);
        let final_id = up.file_id;
        let mut stats = CompleteStats::default();
        let mut offset = 0u64;
        let mut i = 0;
        // Adopt in place while the part starts on a chunk boundary and holds whole chunks (or
        // is the last part, whose short last chunk is the file's last chunk).
        while i < parts.len()
            && offset % cs == 0
            && (parts[i].size % cs == 0 || i + 1 == parts.len())
        {
            fs.chunks()
                .update_many(
                    doc! {"files_id": parts[i].file_id},
                    doc! {"$set": {"files_id": final_id}, "$inc": {"n": (offset / cs) as i64}},
                )
                .await?;
            offset += parts[i].size;
            stats.parts_adopted += 1;
            i += 1;
        }
        if i < parts.len() {
            // Rewrite the tail from the first part that cannot be adopted. A retry after a crash
            // starts this again from scratch.
            let first = (offset / cs) as i64;
            fs.chunks()
                .delete_many(doc! {"files_id": final_id, "n": {"$gte": first}})
                .await?;
            let mut w = fs
                .open_upload_stream(
                    &up.key,
                    UploadOptions {
                        id: Some(Bson::ObjectId(final_id)),
                        chunk_size: Some(up.chunk_size),
                        first_chunk: first,
                        ..Default::default()
                    },
                )
                .await?;
            w.disarm();
            for p in &parts[i..] {
                let file = part_file(p, up.chunk_size);
                let mut s = fs.download_range(&file, 0, p.size)?;
                while let Some(b) = futures::TryStreamExt::try_next(&mut s).await? {
                    w.write(&b).await?;
                }
                stats.bytes_rewritten += p.size;
            }
            w.commit_chunks().await?;
        }
        let total: u64 = parts.iter().map(|p| p.size).sum();
        // Verify what was moved: exactly the chunks n = 0..count-1 (the unique index on
        // (files_id, n) makes the count of those equal the count of distinct n).
        let want = total.div_ceil(cs);
        let have = fs
            .chunks()
            .count_documents(doc! {"files_id": final_id, "n": {"$gte": 0, "$lt": want as i64}})
            .await?;
        let all = fs
            .chunks()
            .count_documents(doc! {"files_id": final_id})
            .await?;
        if have != want || all != want {
            return Err(GridFsError::Corrupt(format!(
                "multipart upload {}: {have} of {want} chunks in place ({all} in all); not published",
                up.id
            )));
        }
        let mut meta = ObjectMeta::from_metadata(Some(&up.meta));
        meta.etag = Some(etag.to_owned());
        meta.checksums = checksums;
        meta.parts = parts
            .iter()
            .map(|p| (p.size, p.checksum.as_ref().map(|c| c.1.clone())))
            .collect();
        let older = self.revisions(&up.bucket, &up.key).await?;
        self.fence(key_lock, None).await?;
        if !upload_lock.fence().await? {
            return Err(GridFsError::Conflict("the upload's lock was lost".into()));
        }
        let file = FileDoc {
            id: Bson::ObjectId(final_id),
            length: total,
            chunk_size: up.chunk_size,
            upload_date: self.stamp(&older),
            filename: Some(up.key.clone()),
            metadata: Some(meta.to_metadata()),
        };
        match fs.insert_file(&file).await {
            Ok(()) => {}
            Err(GridFsError::Mongo(e)) if is_duplicate_key(&e) => {}
            Err(e) => return Err(e),
        }
        // After the publish: leftovers first, then the mark (a crash in between is finished by
        // a retry or the sweep, which find the published object by its id).
        let info = ObjectInfo::from_file(file);
        self.reclaim_all(&up.bucket, &older, &info).await;
        self.finish_completed(&current).await?;
        self.meta
            .mark_upload_completed(&up.id, doc! {"etag": etag})
            .await?;
        Ok(Some((info, stats)))
    }

    /// Finishes what the sweep finds: aborts uploads initiated before `before` and uploads
    /// whose abort was interrupted, cleans up completed ones and drops their tombstones after
    /// [`COMPLETED_RETENTION`]. Returns how many uploads it aborted.
    pub async fn sweep_uploads(&self, before: DateTime) -> Result<usize> {
        let mut aborted = 0;
        let completed_before = self.meta.clock().before(COMPLETED_RETENTION);
        for up in self.meta.uploads_to_sweep(before, completed_before).await? {
            if up.completed.is_some() {
                let lock = self.lock_upload(&up).await?;
                let res = async {
                    self.finish_completed(&up).await?;
                    let done_at = self.meta.upload_completed_at(&up.id).await?;
                    let expired =
                        done_at.is_none_or(|t| t < self.meta.clock().before(COMPLETED_RETENTION));
                    if expired {
                        self.meta.delete_upload(&up.id).await?;
                    }
                    Ok::<_, GridFsError>(())
                }
                .await;
                release(lock).await;
                res?;
            } else {
                self.abort_multipart(&up).await?;
                aborted += 1;
            }
        }
        Ok(aborted)
    }
}

/// How long a completed upload's record stays, so that a retried Complete gets its answer.
pub const COMPLETED_RETENTION: std::time::Duration = std::time::Duration::from_secs(3600);

fn part_file(p: &PartRecord, chunk_size: u32) -> FileDoc {
    FileDoc {
        id: Bson::ObjectId(p.file_id),
        length: p.size,
        chunk_size,
        upload_date: p.last_modified,
        filename: None,
        metadata: None,
    }
}
