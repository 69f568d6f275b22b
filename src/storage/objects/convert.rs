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
//! leaves the mark; the janitor resumes the conversion (one instance at a time, by a lead),
//! and objects already converted no longer match. Multipart uploads complete the way they
//! began. Encrypted objects stay GridFS files (a content-addressed bucket stores every
//! encrypted object that way, never de-duplicated).

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

use super::ObjectStore;
use crate::storage::content::{self, Pointer};
use crate::storage::gridfs::{FileDoc, GridFsError, Result, UploadOptions};
use crate::storage::meta::StorageMode;

/// How long a conversion's lead lasts; renewed after every batch.
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
        let to = b.storage;
        let lead = format!("convert\u{0}{bucket}");
        if !self.meta.lead(&lead, CONVERT_LEAD).await? {
            return Ok(None);
        }
        match to {
            StorageMode::Content => self.contents(bucket).ensure_indexes().await?,
            StorageMode::Gridfs => self.gridfs(bucket).ensure_indexes().await?,
        }
        let old_way = match to {
            StorageMode::Content => doc! {"in": {"$exists": false}, "sha": {"$exists": false}},
            StorageMode::Gridfs => {
                doc! {"$or": [{"in": {"$exists": true}}, {"sha": {"$exists": true}}]}
            }
        };
        let mut done = Converted::default();
        let mut after: Option<Bson> = None;
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
                let converted = match to {
                    StorageMode::Content => self.object_to_content(bucket, &file).await?,
                    StorageMode::Gridfs => self.object_to_gridfs(bucket, &file).await?,
                };
                if converted {
                    done.objects += 1;
                    done.bytes += file.length;
                }
            }
            if !self.meta.lead(&lead, CONVERT_LEAD).await? {
                return Ok(None);
            }
            // Converted the other way meanwhile: that conversion's run takes over.
            let still = self.meta.get_bucket(bucket).await?;
            if !still.is_some_and(|b| b.converting && b.storage == to) {
                return Ok(None);
            }
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
        let pointer = match up.take_small() {
            Some(small) if small.len() <= contents.settings().inline_max => Pointer::Inline(small),
            Some(small) => {
                contents.reference(&file.id, &sha).await?;
                contents
                    .store_small(&sha, &small, meta.content_type.as_deref())
                    .await?;
                Pointer::Sha(sha)
            }
            None => {
                contents.reference(&file.id, &sha).await?;
                up.disarm();
                contents
                    .adopt_blob(&staged, &sha, digests.length, up.chunk_size())
                    .await?;
                Pointer::Sha(sha)
            }
        };
        reg.done().await;
        let mut fields = pointer.fields();
        if let Some(ct) = &meta.content_type {
            fields.insert("contentType", ct.clone());
        }
        let set = doc! {"$set": fields};
        // By `_id` alone (with another predicate SecantusDB scans the collection): only this
        // conversion's leader gives an object a pointer, and a deleted object matches nothing.
        let updated = self
            .gridfs(bucket)
            .files()
            .update_one(doc! {"_id": file.id.clone()}, set.clone())
            .await?
            .matched_count
            == 1;
        if !updated {
            if matches!(pointer, Pointer::Sha(_)) {
                contents.release(&file.id).await?;
            }
            return Ok(false);
        }
        self.versions(bucket)
            .update_file(&key, &file.id, set)
            .await?;
        // The chunks go once no reader streams them (a GET that found the document before
        // the update holds a lease).
        let record = self.meta.add_chunk_reclaim(bucket, &file.id).await?;
        if !self.meta.has_live_lease(bucket, &file.id).await? {
            self.gridfs(bucket)
                .chunks()
                .delete_many(doc! {"files_id": file.id.clone()})
                .await?;
            self.meta.remove_reclaim(record).await?;
        }
        Ok(true)
    }

    /// Writes a content object's bytes as GridFS chunks under its own `_id` and removes its
    /// pointer; `false` when the object was gone or converted already.
    async fn object_to_gridfs(&self, bucket: &str, file: &FileDoc) -> Result<bool> {
        let Some(pointer) = file.content.as_ref().and_then(Pointer::of) else {
            return Ok(false);
        };
        let key = file.filename.clone().unwrap_or_default();
        let fs = self.gridfs(bucket);
        // Chunks of an attempt that crashed.
        fs.chunks()
            .delete_many(doc! {"files_id": file.id.clone()})
            .await?;
        let contents = self.contents(bucket);
        let mut bytes = contents.read(&pointer, file.length, 0, file.length).await?;
        let mut up = fs
            .open_upload_stream(
                &key,
                UploadOptions {
                    id: Some(file.id.clone()),
                    chunk_size: Some(file.chunk_size.max(1)),
                    ..Default::default()
                },
            )
            .await?;
        while let Some(b) = bytes.try_next().await? {
            up.write(&b).await?;
        }
        up.commit_chunks().await?;
        let unset = doc! {"$unset": {"in": "", "sha": "", "contentType": ""}};
        let updated = fs
            .files()
            .update_one(doc! {"_id": file.id.clone()}, unset.clone())
            .await?
            .matched_count
            == 1;
        if !updated {
            // Deleted meanwhile: its new chunks go too.
            if !self.file_exists(bucket, &file.id).await? {
                fs.chunks()
                    .delete_many(doc! {"files_id": file.id.clone()})
                    .await?;
            }
            return Ok(false);
        }
        self.versions(bucket)
            .update_file(&key, &file.id, unset)
            .await?;
        if matches!(pointer, Pointer::Sha(_)) {
            contents.release(&file.id).await?;
        }
        Ok(true)
    }
}
