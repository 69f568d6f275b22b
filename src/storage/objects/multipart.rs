//! Multipart uploads. A part's chunks are written from the start under the file id the
//! completed object will have, at negative chunk numbers of a range of its own (`n = base + i`,
//! see `meta::uploads`). Completing renumbers them in place (one `update_many` per part, several
//! in flight, shifting `n` only), so no data is copied when the parts are multiples of the chunk
//! size, and no chunk's `files_id` ever changes: the chunks collection can be sharded on
//! `{files_id: 1}` or `{files_id: "hashed"}`. Only parts from the first one that is not aligned
//! are rewritten. Every staged chunk belongs to the upload record: Complete deletes the ones no
//! listed part uses, Abort and the sweep delete them all. Completion is idempotent, so a
//! Complete interrupted by a crash can be retried by the client.

use futures::StreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson};

use std::sync::Arc;

use super::{DataKey, ObjectInfo, ObjectMeta, ObjectStore};
use crate::storage::gridfs::{
    ChunkCodec, FileDoc, GridFsError, Result, Sealing, Upload, UploadOptions,
};
use crate::storage::meta::StorageMode;
use crate::storage::meta::{KeyLock, PartRecord, UploadRecord, PART_SPAN};

/// Chunk size of multipart parts and of the objects they complete: 1 MiB divides the common
/// part sizes (5, 8, 16, 64 MiB), so their chunks are adopted in place.
pub const MULTIPART_CHUNK_SIZE: u32 = 1024 * 1024;

/// Renumbering updates in flight at once.
const RENUMBER_IN_FLIGHT: usize = 8;

/// What a completion did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompleteStats {
    /// Parts whose chunks became the object's chunks in place.
    pub parts_adopted: usize,
    /// Bytes rewritten because a part was not a multiple of the chunk size.
    pub bytes_rewritten: u64,
}

/// A part being written: its chunk writer, staged at `base`. In a content-addressed bucket
/// the part is staged in the blobs bucket under a registered id of its own (`reg`), and
/// becomes a content (see `cat`).
#[derive(Debug)]
pub struct PartWrite {
    pub(super) upload: Upload,
    pub(super) base: i64,
    pub(super) reg: Option<crate::storage::meta::WriteReg>,
    /// Its hold on the bucket's room, in a metered upload (see `quota_parts`).
    pub(super) meter: Option<super::meter::Meter>,
}

impl std::ops::Deref for PartWrite {
    type Target = Upload;
    fn deref(&self) -> &Upload {
        &self.upload
    }
}

impl std::ops::DerefMut for PartWrite {
    fn deref_mut(&mut self) -> &mut Upload {
        &mut self.upload
    }
}

impl PartWrite {
    /// Deletes the chunks written so far (only this attempt's range).
    pub async fn abort(mut self) -> Result<()> {
        if let Some(m) = &mut self.meter {
            m.release().await;
        }
        let res = self.upload.abort().await;
        if let Some(reg) = self.reg {
            reg.done().await;
        }
        res
    }
}

impl ObjectStore {
    /// Starts an upload.
    pub async fn create_multipart(
        &self,
        bucket: &str,
        key: &str,
        owner: &str,
        meta: &ObjectMeta,
        checksum: Option<(String, String)>,
    ) -> Result<UploadRecord> {
        self.gridfs(bucket).ensure_indexes().await?;
        // Encrypted uploads are GridFS files in every bucket (never de-duplicated), and so
        // are uploads into a metered bucket (whose parts are counted as GridFS parts; see
        // `quota_parts`).
        // Read afresh, not from the cache: an upload lives long, and one that began unmetered
        // just after a limit was set elsewhere would be metered later anyway (`meter_upload`).
        let metered = self
            .meta
            .get_bucket(bucket)
            .await?
            .is_some_and(|b| b.metered);
        let content = !metered
            && self.storage_mode(bucket).await? == StorageMode::Content
            && meta.sse.is_none();
        let rec = UploadRecord {
            id: uuid::Uuid::new_v4().simple().to_string(),
            bucket: bucket.to_owned(),
            key: key.to_owned(),
            initiated: self.meta.clock().now(),
            owner: owner.to_owned(),
            meta: meta.to_metadata(),
            file_id: ObjectId::new(),
            chunk_size: MULTIPART_CHUNK_SIZE,
            checksum_algorithm: checksum.as_ref().map(|(a, _)| a.clone()),
            checksum_type: checksum.map(|(_, t)| t),
            completed: None,
            completing: None,
            aborting: false,
            content,
            metered,
        };
        self.meta.create_upload(&rec).await?;
        Ok(rec)
    }

    /// Opens the chunk writer of a new part attempt, staged in a range reserved for it (no
    /// write registration: the upload record owns every staged chunk). `None` when the upload
    /// is no longer open.
    /// An encrypted upload's parts are sealed with `codec` as they arrive (each part attempt
    /// its own segment, so that its chunks can be adopted in place at completion).
    pub async fn open_part(
        &self,
        up: &UploadRecord,
        codec: Option<Arc<dyn ChunkCodec>>,
    ) -> Result<Option<PartWrite>> {
        let metered;
        let up = if !up.metered && !up.content && self.bucket_metered(&up.bucket).await? {
            metered = self.meter_upload(up).await?;
            &metered
        } else {
            up
        };
        let Some(base) = self.meta.next_part_base(&up.id).await? else {
            return Ok(None);
        };
        if up.content {
            return self.open_content_part(up, codec).await.map(Some);
        }
        let upload = self
            .gridfs(&up.bucket)
            .open_upload_stream(
                &up.key,
                UploadOptions {
                    id: Some(Bson::ObjectId(up.file_id)),
                    chunk_size: Some(up.chunk_size),
                    first_chunk: base,
                    codec,
                    ..Default::default()
                },
            )
            .await?;
        let meter = self.part_meter(up, base);
        // (Where a test knows a part began, metered or not.)
        crate::failpoint::hit("parts.opened", &up.bucket).await;
        Ok(Some(PartWrite {
            upload,
            base,
            reg: None,
            meter,
        }))
    }

    /// Takes an upload's lock, or fails with a conflict after the wait.
    pub(super) async fn lock_upload(&self, up: &UploadRecord) -> Result<KeyLock> {
        self.meta
            .lock_upload(&up.id)
            .await?
            .ok_or_else(|| GridFsError::Busy("the upload is busy".into()))
    }

    /// Keeps a written part, replacing an earlier part with the same number. `None` when the
    /// upload was completed or aborted meanwhile (the part's chunks are removed). `etag_of`
    /// makes the part's ETag (hex, unquoted) from its MD5.
    ///
    /// Under the upload's lock: the upload is re-read (still open?), the lock fenced, the part
    /// record written, then the replaced attempt's chunks deleted. A crash before the record
    /// leaves chunks that no part names, and one after it leaves the replaced attempt's: the
    /// upload record owns both, and Complete, Abort or the sweep delete them.
    pub async fn commit_part(
        &self,
        up: &UploadRecord,
        number: i32,
        mut part: PartWrite,
        checksum: Option<(String, String)>,
        etag_of: impl FnOnce(&[u8; 16]) -> String,
    ) -> Result<Option<PartRecord>> {
        let digests = part.upload.flush().await?;
        // Every chunk is stored. From here a drop (a cancelled request) leaves them to the
        // upload record, so a part record written just before the drop never loses its
        // chunks; the explicit failure paths below delete them themselves.
        part.upload.disarm();
        if let Some(reg) = part.reg.take() {
            return self
                .commit_content_part(up, number, part, reg, digests, checksum, etag_of)
                .await;
        }
        if digests.length.div_ceil(u64::from(up.chunk_size)) > PART_SPAN as u64 {
            part.abort().await?;
            return Err(GridFsError::Corrupt(
                "a part larger than its staging range".into(),
            ));
        }
        // An upload whose bucket was metered while this part was in flight is metered now
        // (its parts so far counted), so that this part is held below like any metered part
        // and refused if it does not fit.
        let metered_now;
        let up = if !up.metered && self.bucket_metered(&up.bucket).await? {
            metered_now = self.meter_upload(up).await?;
            &metered_now
        } else {
            up
        };
        // Between the attempt's last chunk and its record: where two attempts of one part
        // overtake each other (the test of "the last to finish wins" pauses here).
        crate::failpoint::hit("part.commit", &up.bucket).await;
        let lock = self.lock_upload(up).await?;
        let current = self.meta.get_upload(&up.bucket, &up.id).await?;
        let still_open = current.as_ref().is_some_and(|u| u.is_open());
        // Metered since this attempt began (its bucket got a limit): counted without a hold,
        // its bytes being stored already.
        let metered = current.as_ref().is_some_and(|u| u.metered);
        if !still_open {
            part.abort().await?;
            lock.release_or_warn().await;
            return Ok(None);
        }
        let rec = PartRecord {
            upload_id: up.id.clone(),
            number,
            file_id: up.file_id,
            base: part.base,
            size: digests.length,
            md5_hex: etag_of(&digests.md5),
            last_modified: self.meta.clock().now(),
            checksum,
            sha: None,
        };
        if !lock.fence().await? {
            return Err(GridFsError::Conflict("the upload's lock expired".into()));
        }
        // A part that began before its upload was metered holds its size now, like one
        // that began metered, or is refused (its chunks deleted): counted without a hold, it
        // could pass a limit set while it was in flight.
        if part.meter.is_none() && metered {
            part.meter = current.as_ref().and_then(|u| self.part_meter(u, part.base));
        }
        let replaced = match part.meter.as_mut() {
            Some(m) => match self.put_metered_part(up, &rec, m).await {
                Ok(r) => r,
                Err(e) => {
                    if let Err(abort) = part.abort().await {
                        tracing::warn!(error = %abort, "could not delete a refused part's chunks");
                    }
                    lock.release_or_warn().await;
                    return Err(e);
                }
            },
            None => self.meta.put_part(&rec).await?,
        };
        if let Some(old) = replaced.filter(|o| o.base != rec.base || o.file_id != rec.file_id) {
            self.gridfs(&up.bucket)
                .chunks()
                .delete_many(old.chunk_filter())
                .await?;
        }
        lock.release_or_warn().await;
        Ok(Some(rec))
    }

    /// Whether the files document `id` of `bucket` exists.
    pub(super) async fn file_exists(&self, bucket: &str, id: &Bson) -> Result<bool> {
        Ok(self
            .gridfs(bucket)
            .files()
            .find_one(doc! {"_id": id.clone()})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }

    /// After publication: deletes the staged chunks still under the object's id (negative
    /// `n`: parts that were rewritten or not listed, or a part written while it completed;
    /// adopted parts have none left), the chunks of legacy parts, and the part records.
    /// Idempotent.
    pub(super) async fn finish_completed(&self, up: &UploadRecord) -> Result<()> {
        let fs = self.gridfs(&up.bucket);
        fs.chunks()
            .delete_many(doc! {"files_id": up.file_id, "n": {"$lt": 0}})
            .await?;
        let parts = self.meta.list_parts(&up.id, 0, 0).await?;
        if parts.is_empty() {
            return Ok(());
        }
        self.release_part_contents(&up.bucket, &parts).await?;
        let ids = legacy_ids(&parts);
        if !ids.is_empty() {
            fs.chunks()
                .delete_many(doc! {"files_id": {"$in": ids}})
                .await?;
        }
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
            Some(d) => {
                let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
                if let Some(vid) = info.meta.version_id.clone() {
                    // The id S3 showed: `null` when the entry says it is the null version.
                    let e = self.versions(&up.bucket).entry(&up.key, &vid).await?;
                    info.version_id = Some(match e {
                        Some(e) => e.version_id().to_owned(),
                        None => vid,
                    });
                }
                Some(info)
            }
            None => None,
        })
    }

    /// Completes an upload from `parts` (validated, in order) and publishes the object; the
    /// caller holds the key's lock. The upload's lock is taken here.
    ///
    /// Crash points, each finished by a retried Complete with the same parts (or, if none
    /// comes, by the sweep's Abort, which deletes only what was never published):
    /// 0. the upload marked completing with this part list's ETag (from here another list
    ///    is refused: chunks may have been renumbered);
    /// 1. parts' chunks renumbered from their staging ranges (each `update_many` is
    ///    idempotent: a retry matches nothing for a part already renumbered);
    /// 2. the tail rewritten from the first part that is not chunk-aligned (a retry deletes
    ///    and rewrites it until the upload records that it is done);
    /// 3. staged chunks no listed part uses deleted;
    /// 4. the chunk count checked against the length: nothing is published short;
    /// 5. the files document inserted (the publish) after fencing the key and upload locks;
    /// 6. older revisions reclaimed; leftovers and part records deleted;
    /// 7. the upload marked completed with its ETag (a retry answers from it; until then a
    ///    retry or the sweep recognises the publish by the object's id).
    ///
    /// `None` when the upload is no longer open (aborted, or completing with other parts).
    pub async fn complete_multipart(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        etag: &str,
        checksums: Vec<(String, String)>,
        key_lock: &KeyLock,
        data_key: Option<&DataKey>,
    ) -> Result<Option<(ObjectInfo, CompleteStats)>> {
        // (Where a test holds a completion to see how many run at once.)
        crate::failpoint::hit("complete.start", &up.bucket).await;
        if !up.metered && !up.content && self.bucket_metered(&up.bucket).await? {
            self.meter_upload(up).await?;
        }
        let lock = self.lock_upload(up).await?;
        let res = self
            .complete_locked(up, parts, etag, checksums, (key_lock, &lock), data_key)
            .await;
        lock.release_or_warn().await;
        res
    }

    async fn complete_locked(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        etag: &str,
        checksums: Vec<(String, String)>,
        (key_lock, upload_lock): (&KeyLock, &KeyLock),
        data_key: Option<&DataKey>,
    ) -> Result<Option<(ObjectInfo, CompleteStats)>> {
        let fs = self.gridfs(&up.bucket);
        let mut meta = ObjectMeta::from_metadata(Some(&up.meta));
        // An encrypted upload: its parts were sealed as segments of their own; the tail
        // rewrite opens them and seals the tail as one more segment (and needs the data key).
        let codec = data_key.filter(|_| meta.sse.is_some()).map(DataKey::codec);
        let Some(current) = self.meta.get_upload(&up.bucket, &up.id).await? else {
            return Ok(None);
        };
        if current.aborting {
            return Ok(None);
        }
        if current.completed.is_some()
            || self
                .file_exists(&up.bucket, &Bson::ObjectId(up.file_id))
                .await?
        {
            // A retry of a Complete that published already.
            let done_etag = current
                .completed
                .as_ref()
                .and_then(|c| c.get_str("etag").ok().map(str::to_owned));
            if done_etag.as_deref().is_some_and(|e| e != etag) {
                return Ok(None);
            }
            // A versioned publish that crashed before its version was recorded is recorded
            // now (a no-op when it was).
            self.index_file_held(&up.bucket, &Bson::ObjectId(up.file_id))
                .await?;
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
        if !self.meta.mark_upload_completing(&up.id, etag).await? {
            return Ok(None);
        }
        if current.content {
            meta.etag = Some(etag.to_owned());
            meta.checksums = checksums;
            return self
                .complete_content(&current, parts, meta, (key_lock, upload_lock))
                .await;
        }
        let cs = u64::from(up.chunk_size);
        let final_id = up.file_id;
        let mut stats = CompleteStats::default();
        let mut offset = 0u64;
        let mut i = 0;
        // Adopt in place while the part is staged under the object's id, starts on a chunk
        // boundary and holds whole chunks (or is the last part, whose short last chunk is the
        // file's last chunk).
        let mut shifts = Vec::new();
        let mut segments: Vec<(i64, i64)> = Vec::new();
        while i < parts.len()
            && parts[i].base < 0
            && parts[i].file_id == final_id
            && offset.is_multiple_of(cs)
            && (parts[i].size.is_multiple_of(cs) || i + 1 == parts.len())
        {
            // Fits in an Int32 (see `MAX_PART_SLOTS`), so `$inc` keeps `n` an Int32.
            let shift = i32::try_from((offset / cs) as i64 - parts[i].base).map_err(|_| {
                GridFsError::Corrupt("a part's staging range is out of bounds".into())
            })?;
            shifts.push((parts[i].chunk_filter(), shift));
            segments.push((parts[i].base, parts[i].size.div_ceil(cs) as i64));
            offset += parts[i].size;
            stats.parts_adopted += 1;
            i += 1;
        }
        // One `$inc` of `n` per part, several in flight. (Tried against one pipeline update
        // per 256 parts with a `$switch` on the staging ranges: fewer round trips, but 2.3x
        // slower on SecantusDB, which evaluates the expression per chunk; see BENCHMARKS.md.)
        let chunks = fs.chunks().clone();
        let mut renumbered = futures::stream::iter(shifts)
            .map(move |(filter, shift)| {
                let chunks = chunks.clone();
                async move {
                    chunks
                        .update_many(filter, doc! {"$inc": {"n": shift}})
                        .await
                }
            })
            .buffer_unordered(RENUMBER_IN_FLIGHT);
        let mut moved = 0u64;
        while let Some(r) = renumbered.next().await {
            moved += r?.modified_count;
        }
        drop(renumbered);
        // This attempt moved every chunk of the adopted head (a retry after a crash finds
        // some moved already, and counts below instead).
        let mut verified = moved == offset.div_ceil(cs);
        if i < parts.len() {
            for p in &parts[i..] {
                stats.bytes_rewritten += p.size;
            }
            let first = (offset / cs) as i64;
            let tail: u64 = parts[i..].iter().map(|p| p.size).sum();
            segments.push((first, tail.div_ceil(cs) as i64));
            if self.meta.upload_tail_rewritten(&up.id).await? {
                verified = false;
            } else if meta.sse.is_some() && codec.is_none() {
                return Err(GridFsError::Corrupt(
                    "an encrypted upload's unaligned parts cannot be re-sealed without its key"
                        .into(),
                ));
            } else {
                self.rewrite_tail(up, &parts[i..], first, codec.clone())
                    .await?;
                self.meta.mark_upload_rewritten(&up.id).await?;
            }
        }
        // Staged chunks no listed part uses (replaced or unlisted parts, rewritten parts).
        fs.chunks()
            .delete_many(doc! {"files_id": final_id, "n": {"$lt": 0}})
            .await?;
        let total: u64 = parts.iter().map(|p| p.size).sum();
        // Verify what is in place: exactly the chunks n = 0..count-1 (the unique index on
        // (files_id, n) makes the count of those equal the count of distinct n). A part
        // written concurrently may still stage chunks below 0; the cleanup after the publish
        // removes them.
        let want = total.div_ceil(cs);
        if !verified {
            let have = fs
                .chunks()
                .count_documents(doc! {"files_id": final_id, "n": {"$gte": 0, "$lt": want as i64}})
                .await?;
            let all = fs
                .chunks()
                .count_documents(doc! {"files_id": final_id, "n": {"$gte": 0}})
                .await?;
            if have != want || all != want {
                return Err(GridFsError::Corrupt(format!(
                    "multipart upload {}: {have} of {want} chunks in place ({all} in all); not published",
                    up.id
                )));
            }
        }
        meta.etag = Some(etag.to_owned());
        meta.checksums = checksums;
        meta.parts = part_list(parts);
        let prepared = self
            .prepare_publish(&up.bucket, &up.key, &Bson::ObjectId(final_id))
            .await?;
        meta.version_id = prepared.vid.clone();
        self.fence(Some(key_lock), None).await?;
        if !upload_lock.fence().await? {
            return Err(GridFsError::Conflict("the upload's lock was lost".into()));
        }
        // A sealed object's files document counts the sealed bytes (a well-formed GridFS file
        // of ciphertext); its plain-text geometry and segments are in `s3Sse`.
        let (length, chunk_size) = match &mut meta.sse {
            Some(sse) => {
                sse.size = total;
                sse.chunk = up.chunk_size;
                sse.segments = segments;
                let over = crate::crypto::cipher::TAG_LEN as u64;
                (total + want * over, up.chunk_size + over as u32)
            }
            None => (total, up.chunk_size),
        };
        if current.metered {
            super::meter::mark_counted(&mut meta);
        }
        let file = FileDoc {
            id: Bson::ObjectId(final_id),
            length,
            chunk_size,
            upload_date: prepared.date,
            filename: Some(up.key.clone()),
            metadata: Some(meta.to_metadata()),
            content: None,
        };
        if current.metered {
            self.publish_metered_upload(&current, &file, total as i64)
                .await?;
        } else {
            match fs.insert_file(&file).await {
                Ok(()) => {}
                Err(GridFsError::Mongo(e)) if crate::storage::meta::is_duplicate_key(&e) => {}
                Err(e) => return Err(e),
            }
        }
        // After the publish: the older revisions reclaimed or the version recorded, then
        // leftovers, then the mark (a crash in between is finished by a retry or the sweep,
        // which find the published object by its id).
        let info = self.finish_publish(&up.bucket, prepared, file).await?;
        self.finish_completed(&current).await?;
        // (Where a test holds a completion that published, and deleted its part records, but
        // has not marked the upload completed yet.)
        crate::failpoint::hit("complete.mark", &up.bucket).await;
        self.meta
            .mark_upload_completed(&up.id, doc! {"etag": etag})
            .await?;
        Ok(Some((info, stats)))
    }

    /// Rewrites the object's chunks from chunk `first` on out of `parts` (which cannot be
    /// adopted in place). A retry after a crash starts it again from scratch; the writer never
    /// deletes on drop, the upload record owns what it wrote.
    async fn rewrite_tail(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        first: i64,
        codec: Option<Arc<dyn ChunkCodec>>,
    ) -> Result<()> {
        let fs = self.gridfs(&up.bucket);
        fs.chunks()
            .delete_many(doc! {"files_id": up.file_id, "n": {"$gte": first}})
            .await?;
        let mut w = fs
            .open_upload_stream(
                &up.key,
                UploadOptions {
                    id: Some(Bson::ObjectId(up.file_id)),
                    chunk_size: Some(up.chunk_size),
                    first_chunk: first,
                    codec: codec.clone(),
                    ..Default::default()
                },
            )
            .await?;
        w.disarm();
        for p in parts {
            let file = part_file(p, up.chunk_size);
            let sealing = codec
                .as_ref()
                .map(|c| Sealing::single(c.clone(), p.size, up.chunk_size, p.base));
            let mut s = fs.download_sealed(&file, sealing.as_ref(), p.base, 0, p.size)?;
            while let Some(b) = futures::TryStreamExt::try_next(&mut s).await? {
                w.write(&b).await?;
            }
        }
        w.commit_chunks().await?;
        Ok(())
    }
}

/// What an object's metadata says of its parts (sizes and checksums).
pub(super) fn part_list(parts: &[PartRecord]) -> Vec<(u64, Option<String>)> {
    parts
        .iter()
        .map(|p| (p.size, p.checksum.as_ref().map(|c| c.1.clone())))
        .collect()
}

/// File ids of legacy parts (stored under ids of their own, before parts were staged under
/// their upload's file id).
pub(super) fn legacy_ids(parts: &[PartRecord]) -> Vec<ObjectId> {
    parts
        .iter()
        .filter(|p| p.base >= 0 && p.sha.is_none())
        .map(|p| p.file_id)
        .collect()
}

fn part_file(p: &PartRecord, chunk_size: u32) -> FileDoc {
    FileDoc {
        id: Bson::ObjectId(p.file_id),
        length: p.size,
        chunk_size,
        upload_date: p.last_modified,
        filename: None,
        metadata: None,
        content: None,
    }
}
