//! Converting a bucket between storage modes (`grids3 admin convert-bucket NAME --to
//! content|gridfs`), online and resumable.
//!
//! Starting a conversion switches the bucket's mode and marks it `converting` in one update:
//! from then on new objects (and new multipart uploads) are stored the new way, while every
//! read already goes by the object itself (a document with `in`/`sha` reads its content, one
//! without reads its GridFS chunks), so a bucket holding both kinds serves every object. The
//! conversion then takes the objects stored the old way one at a time, in `_id` order:
//! - to `content`: the object's bytes are read from its chunks and stored as a content
//!   (de-duplicated, inline, gzipped, or adopted as a blob, as a PUT's), referenced by the
//!   object, then the files document gets its pointer in one update (matching only while it
//!   has none) and its chunks go through a reclaim record that waits for readers' leases;
//! - to `gridfs`: the content's bytes are written as chunks under the object's own `_id`, then
//!   one update removes the pointer, and the object's reference is released (its content goes
//!   after the grace period, so a reader streaming it meanwhile finishes).
//!
//! Version entries repeat their file's fields; they are updated with it. An object deleted
//! meanwhile makes the update match nothing: what was written for it is undone. A crash
//! leaves the mark; the janitor resumes the conversion, and objects already converted no
//! longer match. Multipart uploads complete the way they began. Encrypted objects stay GridFS
//! files (a content-addressed bucket stores every encrypted object that way, never
//! de-duplicated).
//!
//! Two runs never lose an object to each other:
//! - one run at a time holds the bucket's conversion lead ([`crate::storage::meta::Lead`],
//!   a token per run): a second start (the admin API again, or the janitor's resume) joins the
//!   running one instead of running beside it;
//! - every publishing update is compare-and-set on what the run read: to content only while
//!   the document has no pointer, to GridFS only while it has the pointer the run read;
//! - no step deletes chunks a document may point at: the conversion to GridFS never deletes
//!   chunks (a crashed or stalled attempt's chunks are the same bytes under the same chunk
//!   size, so it writes only the chunks that are missing), and the chunks the conversion to
//!   content leaves behind are reclaimed by their `_id`s, so chunks written for the file
//!   later are never among them. A conversion back to GridFS waits for that reclaim.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

use super::ObjectStore;
use crate::storage::content::{self, Pointer};
use crate::storage::gridfs::{FileDoc, GridFsError, Result, UploadOptions};
use crate::storage::meta::StorageMode;

/// How long a conversion's lead lasts; renewed before every object.
const CONVERT_LEAD: std::time::Duration = std::time::Duration::from_secs(120);

/// Objects converted between lead renewals.
const BATCH: i64 = 100;

/// What a conversion pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Converted {
    /// Objects converted.
    pub objects: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl ObjectStore {
    /// Marks `bucket` converting to `to` and starts the conversion in the background (the
    /// admin API's and the console's one way to start one); the bucket as it stands after,
    /// or `None` when there is no such bucket. Nothing starts when it is in that mode already.
    pub async fn begin_conversion(
        &self,
        bucket: &str,
        to: StorageMode,
    ) -> Result<Option<crate::storage::meta::BucketInfo>> {
        let Some(b) = self.meta.get_bucket(bucket).await? else {
            return Ok(None);
        };
        if b.storage == to && !b.converting {
            return Ok(Some(b));
        }
        if !self.meta.start_conversion(bucket, to).await? {
            return Ok(None);
        }
        let store = self.clone();
        let name = bucket.to_owned();
        crate::background::spawn("convert", async move {
            match store.run_conversion(&name).await {
                Ok(Some(c)) => {
                    tracing::info!(bucket = %name, objects = c.objects, bytes = c.bytes, "bucket converted")
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(bucket = %name, error = %e, "bucket conversion stopped; the janitor resumes it")
                }
            }
        });
        Ok(Some(self.meta.get_bucket(bucket).await?.unwrap_or(b)))
    }

    /// How many objects of `bucket` are still stored the other way than `to`, and how many
    /// files it holds: a conversion's progress.
    pub async fn conversion_left(&self, bucket: &str, to: StorageMode) -> Result<(u64, u64)> {
        let fs = self.gridfs(bucket);
        let files = fs.files();
        let left = files.count_documents(old_way(to)).await?;
        // Reaped writes' tombstones are no objects (as in `old_way`).
        let all = files
            .count_documents(doc! {"metadata.s3Reaped": {"$exists": false}})
            .await?;
        Ok((left, all))
    }

    /// Converts the objects of a bucket marked `converting` that are stored the other way,
    /// then clears the mark. Returns `None` when another instance leads the conversion (or
    /// there is none).
    pub async fn run_conversion(&self, bucket: &str) -> Result<Option<Converted>> {
        let Some(b) = self.meta.get_bucket(bucket).await? else {
            return Ok(None);
        };
        if !b.converting {
            return Ok(None);
        }
        let Some(lead) = self
            .meta
            .take_lead(&format!("convert\u{0}{bucket}"), CONVERT_LEAD)
            .await?
        else {
            return Ok(None);
        };
        let run = self.led_conversion(bucket, b.storage, &lead).await;
        // Given up whatever happened: the janitor's next resume need not wait for it.
        lead.release_or_warn().await;
        run
    }

    /// The conversion itself, under its lead.
    async fn led_conversion(
        &self,
        bucket: &str,
        to: StorageMode,
        lead: &crate::storage::meta::Lead,
    ) -> Result<Option<Converted>> {
        match to {
            StorageMode::Content => self.contents(bucket).ensure_indexes().await?,
            StorageMode::Gridfs => self.gridfs(bucket).ensure_indexes().await?,
        }
        let old_way = old_way(to);
        let mut done = Converted::default();
        let mut after: Option<Bson> = None;
        // Objects whose old chunks a reader still holds (to GridFS): the mark stays, and the
        // janitor's next resume converts them.
        let mut deferred = 0;
        loop {
            let mut filter = old_way.clone();
            if let Some(a) = &after {
                filter.insert("_id", doc! {"$gt": a.clone()});
            }
            let batch: Vec<Document> = self
                .gridfs(bucket)
                .files()
                .find(filter)
                .sort(doc! {"_id": 1})
                .limit(BATCH)
                .await?
                .try_collect()
                .await?;
            let Some(last) = batch.last() else {
                break;
            };
            after = last.get("_id").cloned();
            for d in &batch {
                let file = FileDoc::from_document(d)?;
                crate::failpoint::hit("convert.object", bucket).await;
                // A run that outlived its lead stops before it writes anything more.
                if !lead.check().await? {
                    return Ok(None);
                }
                let converted = match to {
                    StorageMode::Content => self.object_to_content(bucket, &file).await?,
                    StorageMode::Gridfs => match self.object_to_gridfs(bucket, &file).await? {
                        ToGridfs::Done => true,
                        ToGridfs::Skipped => false,
                        ToGridfs::Later => {
                            deferred += 1;
                            false
                        }
                    },
                };
                if converted {
                    done.objects += 1;
                    done.bytes += file.length;
                }
            }
            if !lead.renew().await? {
                return Ok(None);
            }
            // Converted the other way meanwhile: that conversion's run takes over.
            let still = self.meta.get_bucket(bucket).await?;
            if !still.is_some_and(|b| b.converting && b.storage == to) {
                return Ok(None);
            }
        }
        if deferred > 0 {
            tracing::info!(
                bucket,
                deferred,
                "objects wait for readers of their old chunks; the janitor resumes the conversion"
            );
            return Ok(None);
        }
        self.meta.finish_conversion(bucket, to).await?;
        Ok(Some(done))
    }

    /// Resumes the conversions whose instance stopped (for the janitor); how many finished.
    pub async fn resume_conversions(&self) -> Result<usize> {
        let mut n = 0;
        for b in self.meta.converting_buckets().await? {
            if self.run_conversion(&b.name).await?.is_some() {
                n += 1;
            }
        }
        Ok(n)
    }

    /// Stores a GridFS object's bytes as a content and points its document at it; `false`
    /// when the object was gone or converted already.
    async fn object_to_content(&self, bucket: &str, file: &FileDoc) -> Result<bool> {
        let key = file.filename.clone().unwrap_or_default();
        let meta = super::ObjectMeta::from_metadata(file.metadata.as_ref());
        if meta.sse.is_some() {
            // Encrypted objects stay GridFS files in a content-addressed bucket.
            return Ok(false);
        }
        let blobs = content::blobs_name(bucket);
        let reg = self.meta.register_write(&blobs).await?;
        let staged = Bson::ObjectId(reg.file_id());
        let mut up = self
            .gridfs(&blobs)
            .open_upload_stream(
                &key,
                UploadOptions {
                    id: Some(staged.clone()),
                    sha1: true,
                    hold_small: true,
                    ..Default::default()
                },
            )
            .await?;
        let mut bytes = match self
            .gridfs(bucket)
            .download_sealed(file, None, 0, 0, file.length)
        {
            Ok(s) => s,
            Err(GridFsError::FileNotFound) => return Ok(false),
            Err(e) => return Err(e),
        };
        let read: Result<()> = async {
            while let Some(b) = bytes.try_next().await? {
                up.write(&b).await?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = read {
            up.abort().await?;
            reg.done().await;
            // Deleted meanwhile (its chunks went): nothing to convert.
            if !self.file_exists(bucket, &file.id).await? {
                return Ok(false);
            }
            return Err(e);
        }
        let digests = up.flush().await?;
        let sha = digests
            .sha1
            .ok_or_else(|| GridFsError::Corrupt("a conversion without its SHA-1".into()))?;
        let contents = self.contents(bucket);
        let pointer = super::publish::place_content(
            &contents,
            &file.id,
            &staged,
            &mut up,
            sha,
            digests.length,
            meta.content_type.as_deref(),
            &reg,
        )
        .await?;
        reg.done().await;
        let fields = super::publish::pointer_fields(&pointer, meta.content_type.as_deref());
        let set = doc! {"$set": fields};
        crate::failpoint::hit("convert.to_content.publish", bucket).await;
        // Compare-and-set: only while the document has no pointer (a run that lost its lead
        // and published first leaves nothing to do), and a deleted object matches nothing.
        let updated = self
            .gridfs(bucket)
            .files()
            .update_one(
                doc! {"_id": file.id.clone(), "in": {"$exists": false}, "sha": {"$exists": false}},
                set.clone(),
            )
            .await?
            .matched_count
            == 1;
        if !updated {
            if matches!(pointer, Pointer::Sha(_)) {
                // Only a reference this run made: another run's publish referenced the same
                // owner first, and keeps it (the release is a compare-and-set on the pointer).
                if !self.points_at(bucket, &file.id, &pointer).await? {
                    contents.release(&file.id).await?;
                }
            }
            return Ok(false);
        }
        self.versions(bucket)
            .update_file(&key, &file.id, set)
            .await?;
        // The chunks go once no reader streams them (a GET that found the document before
        // the update holds a lease). By their `_id`s, read now: chunks written for this file
        // later (a conversion back to GridFS) are never among them.
        let ids = crate::storage::gridfs::ids_of(
            self.gridfs(bucket).chunks(),
            doc! {"files_id": file.id.clone()},
        )
        .await?;
        let record = self.meta.add_chunk_reclaim(bucket, &file.id, ids).await?;
        self.finish_chunk_reclaim(&record).await?;
        Ok(true)
    }

    /// Whether the object's document points at `pointer` now.
    async fn points_at(&self, bucket: &str, id: &Bson, pointer: &Pointer) -> Result<bool> {
        Ok(self
            .gridfs(bucket)
            .files()
            .find_one(doc! {"_id": id.clone()})
            .projection(doc! {"in": 1, "sha": 1})
            .await?
            .is_some_and(|d| Pointer::of(&d).as_ref() == Some(pointer)))
    }

    /// Deletes the chunks a chunks-only reclaim names, unless a reader holds a lease on the
    /// file; whether it did (the record is gone then).
    pub(super) async fn finish_chunk_reclaim(
        &self,
        p: &crate::storage::meta::PendingReclaim,
    ) -> Result<bool> {
        if self.meta.has_live_lease(&p.bucket, &p.file_id).await? {
            return Ok(false);
        }
        crate::failpoint::hit("reclaim.chunks_only", &p.bucket).await;
        let chunks = self.gridfs(&p.bucket).chunks().clone();
        match &p.chunks {
            Some(ids) => {
                for batch in ids.chunks(1000) {
                    chunks
                        .delete_many(doc! {"_id": {"$in": batch.to_vec()}})
                        .await?;
                }
            }
            None => {
                // A record of an older version, without the chunks' ids: by file id, only
                // while the document still points at a content (or is gone for good).
                let points = self
                    .gridfs(&p.bucket)
                    .files()
                    .find_one(doc! {"_id": p.file_id.clone()})
                    .projection(doc! {"in": 1, "sha": 1})
                    .await?
                    .is_none_or(|d| Pointer::of(&d).is_some());
                if points {
                    chunks
                        .delete_many(doc! {"files_id": p.file_id.clone()})
                        .await?;
                }
            }
        }
        self.meta.remove_reclaim(p.id).await?;
        Ok(true)
    }

    /// Writes a content object's bytes as GridFS chunks under its own `_id` and removes its
    /// pointer.
    async fn object_to_gridfs(&self, bucket: &str, file: &FileDoc) -> Result<ToGridfs> {
        let Some(pointer) = file.content.as_ref().and_then(Pointer::of) else {
            return Ok(ToGridfs::Skipped);
        };
        let key = file.filename.clone().unwrap_or_default();
        let fs = self.gridfs(bucket);
        // The file's old chunks (converted to content before) must be gone first: they may
        // be another chunk size, and their reclaim deletes them by `_id`.
        for p in self.meta.chunk_reclaims_of(bucket, &file.id).await? {
            if !self.finish_chunk_reclaim(&p).await? {
                return Ok(ToGridfs::Later);
            }
        }
        let contents = self.contents(bucket);
        let bytes = contents.read(&pointer, file.length, 0, file.length).await?;
        crate::failpoint::hit("convert.to_gridfs.write", bucket).await;
        write_missing_chunks(fs.chunks(), &file.id, file.chunk_size.max(1), bytes).await?;
        let field = match &pointer {
            Pointer::Inline(_) => "in",
            Pointer::Sha(_) => "sha",
        };
        // The pointer as stored (another writer's hex `sha` stays a string there).
        let value = file
            .content
            .as_ref()
            .and_then(|c| c.get(field).cloned())
            .unwrap_or(Bson::Null);
        let unset = doc! {"$unset": {"in": "", "sha": "", "contentType": ""}};
        crate::failpoint::hit("convert.to_gridfs.publish", bucket).await;
        // Compare-and-set on the pointer this run read.
        let updated = fs
            .files()
            .update_one(doc! {"_id": file.id.clone(), field: value}, unset.clone())
            .await?
            .matched_count
            == 1;
        if !updated {
            // Deleted meanwhile: its `_id` is never used again, so its new chunks go too.
            // (Converted by another run: its chunks are these, and stay.)
            if !self.file_exists(bucket, &file.id).await? {
                fs.chunks()
                    .delete_many(doc! {"files_id": file.id.clone()})
                    .await?;
            }
            return Ok(ToGridfs::Skipped);
        }
        self.versions(bucket)
            .update_file(&key, &file.id, unset)
            .await?;
        if matches!(pointer, Pointer::Sha(_)) {
            contents.release(&file.id).await?;
        }
        Ok(ToGridfs::Done)
    }
}

/// What converting one object to GridFS did.
enum ToGridfs {
    /// Converted.
    Done,
    /// Gone, or converted already.
    Skipped,
    /// Its old chunks wait for a reader: the next run converts it.
    Later,
}

/// Writes the chunks of `bytes` under `files_id` that are not there yet. Chunks that are there
/// were written by an attempt that crashed or a run that lost its lead, from the same content
/// under the same chunk size: the same bytes, so they are kept, never deleted and rewritten
/// (a delete could take chunks another run has just published).
async fn write_missing_chunks(
    chunks: &mongodb::Collection<Document>,
    files_id: &Bson,
    chunk_size: u32,
    mut bytes: crate::storage::gridfs::ByteStream,
) -> Result<()> {
    use mongodb::bson::{oid::ObjectId, spec::BinarySubtype, Binary};
    let have: std::collections::HashSet<i64> = chunks
        .find(doc! {"files_id": files_id.clone()})
        .projection(doc! {"n": 1, "_id": 0})
        .await?
        .try_collect::<Vec<Document>>()
        .await?
        .iter()
        .filter_map(|d| d.get("n").and_then(crate::storage::gridfs::as_i64))
        .collect();
    let size = chunk_size as usize;
    let mut buf: Vec<u8> = Vec::with_capacity(size);
    let mut batch: Vec<Document> = Vec::new();
    let mut batch_bytes = 0usize;
    let mut n: i64 = 0;
    let flush = |batch: Vec<Document>| async move {
        if batch.is_empty() {
            return Ok(());
        }
        match chunks.insert_many(batch).ordered(false).await {
            Ok(_) => Ok(()),
            // Written meanwhile by a run that lost its lead: the same bytes.
            Err(e) if only_duplicates(&e) => Ok(()),
            Err(e) => Err(GridFsError::from(e)),
        }
    };
    loop {
        let next = bytes.try_next().await?;
        let done = next.is_none();
        if let Some(b) = next {
            buf.extend_from_slice(&b);
        }
        while buf.len() >= size || (done && !buf.is_empty()) {
            let take = buf.len().min(size);
            let data: Vec<u8> = buf.drain(..take).collect();
            if !have.contains(&n) {
                batch_bytes += data.len();
                batch.push(doc! {
                    "_id": ObjectId::new(), "files_id": files_id.clone(), "n": n,
                    "data": Binary { subtype: BinarySubtype::Generic, bytes: data },
                });
            }
            n += 1;
            if batch_bytes >= 8 * 1024 * 1024 {
                flush(std::mem::take(&mut batch)).await?;
                batch_bytes = 0;
            }
        }
        if done {
            break;
        }
    }
    flush(batch).await
}

/// Whether a write error is made of duplicate-key errors only.
fn only_duplicates(e: &mongodb::error::Error) -> bool {
    match e.kind.as_ref() {
        mongodb::error::ErrorKind::InsertMany(f) => {
            f.write_concern_error.is_none()
                && f.write_errors
                    .as_ref()
                    .is_some_and(|w| w.iter().all(|e| e.code == 11000))
        }
        _ => crate::storage::meta::is_duplicate_key(e),
    }
}

/// The files of a bucket stored the other way than `to`.
fn old_way(to: StorageMode) -> Document {
    match to {
        // Reaped writes' tombstones are no objects to convert.
        StorageMode::Content => {
            doc! {"in": {"$exists": false}, "sha": {"$exists": false}, "metadata.s3Reaped": {"$exists": false}}
        }
        StorageMode::Gridfs => {
            doc! {"$or": [{"in": {"$exists": true}}, {"sha": {"$exists": true}}]}
        }
    }
}
