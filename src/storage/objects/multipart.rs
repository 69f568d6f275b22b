//! Multipart uploads. Parts are stored as GridFS chunks under a file id of their own, with the
//! completed object's chunk size; completing turns the parts' chunks into the object's chunks
//! in place (one `update_many` per part re-labels `files_id` and shifts `n`), so no data is
//! copied when the parts are multiples of the chunk size. Only parts from the first one that
//! is not are rewritten. Completion is idempotent, so a Complete interrupted by a crash can be
//! retried by the client.

use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime};

use super::{ObjectInfo, ObjectMeta, ObjectStore};
use crate::storage::gridfs::{FileDoc, GridFsError, Result, Upload, UploadOptions};
use crate::storage::meta::{is_duplicate_key, PartRecord, UploadRecord};

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
            initiated: DateTime::now(),
            owner: owner.to_owned(),
            meta: meta.to_metadata(),
            file_id: ObjectId::new(),
            chunk_size: MULTIPART_CHUNK_SIZE,
            checksum_algorithm,
        };
        self.meta.create_upload(&rec).await?;
        Ok(rec)
    }

    /// Opens the chunk writer of a new part.
    pub async fn open_part(&self, up: &UploadRecord) -> Result<Upload> {
        self.gridfs(&up.bucket)
            .open_upload_stream(
                &up.key,
                UploadOptions {
                    id: Some(Bson::ObjectId(ObjectId::new())),
                    chunk_size: Some(up.chunk_size),
                    ..Default::default()
                },
            )
            .await
    }

    /// Keeps a written part, replacing an earlier part with the same number. `None` when the
    /// upload was aborted meanwhile (the part's chunks are removed).
    pub async fn commit_part(
        &self,
        up: &UploadRecord,
        number: i32,
        part: Upload,
        checksum: Option<(String, String)>,
    ) -> Result<Option<PartRecord>> {
        let file_id = match part.id() {
            Bson::ObjectId(o) => *o,
            _ => unreachable!("parts get ObjectIds"),
        };
        let digests = part.commit_chunks().await?;
        let rec = PartRecord {
            upload_id: up.id.clone(),
            number,
            file_id,
            size: digests.length,
            md5_hex: hex::encode(digests.md5),
            last_modified: DateTime::now(),
            checksum,
        };
        let chunks = self.gridfs(&up.bucket).chunks().clone();
        let old = self.meta.put_part(&rec).await?;
        if let Some(old) = old {
            chunks.delete_many(doc! {"files_id": old.file_id}).await?;
        }
        if self.meta.get_upload(&up.bucket, &up.id).await?.is_none() {
            chunks.delete_many(doc! {"files_id": file_id}).await?;
            self.meta.delete_parts(&up.id).await?;
            return Ok(None);
        }
        Ok(Some(rec))
    }

    /// Removes an upload and everything it wrote.
    pub async fn abort_multipart(&self, up: &UploadRecord) -> Result<()> {
        let fs = self.gridfs(&up.bucket);
        self.meta.delete_upload(&up.id).await?;
        let parts = self.meta.list_parts(&up.id, 0, 0).await?;
        let ids: Vec<ObjectId> = parts.iter().map(|p| p.file_id).collect();
        fs.chunks()
            .delete_many(doc! {"files_id": {"$in": ids}})
            .await?;
        self.meta.delete_parts(&up.id).await?;
        Ok(())
    }

    /// Completes an upload from `parts` (validated, in order) and publishes the object.
    pub async fn complete_multipart(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        etag: &str,
        checksums: Vec<(String, String)>,
    ) -> Result<(ObjectInfo, CompleteStats)> {
        let fs = self.gridfs(&up.bucket);
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
        let mut meta = ObjectMeta::from_metadata(Some(&up.meta));
        meta.etag = Some(etag.to_owned());
        meta.checksums = checksums;
        meta.parts = parts
            .iter()
            .map(|p| (p.size, p.checksum.as_ref().map(|c| c.1.clone())))
            .collect();
        let file = FileDoc {
            id: Bson::ObjectId(final_id),
            length: total,
            chunk_size: up.chunk_size,
            upload_date: DateTime::now(),
            filename: Some(up.key.clone()),
            metadata: Some(meta.to_metadata()),
        };
        match fs.insert_file(&file).await {
            Ok(()) => {}
            // A retried Complete whose first attempt published already.
            Err(GridFsError::Mongo(e)) if is_duplicate_key(&e) => {}
            Err(e) => return Err(e),
        }
        let info = ObjectInfo::from_file(file);
        if let Err(e) = self.reclaim_older(&up.bucket, &info.file).await {
            tracing::warn!(error = %e, "could not reclaim older revisions");
        }
        // Chunks of rewritten parts, and of parts the Complete did not list, go now.
        let listed: Vec<i32> = parts[..i].iter().map(|p| p.number).collect();
        let leftovers: Vec<ObjectId> = self
            .meta
            .list_parts(&up.id, 0, 0)
            .await?
            .into_iter()
            .filter(|p| !listed.contains(&p.number))
            .map(|p| p.file_id)
            .collect();
        fs.chunks()
            .delete_many(doc! {"files_id": {"$in": leftovers}})
            .await?;
        self.meta.delete_parts(&up.id).await?;
        self.meta.delete_upload(&up.id).await?;
        Ok((info, stats))
    }

    /// Aborts uploads initiated before `before`; returns how many.
    pub async fn sweep_uploads(&self, before: DateTime) -> Result<usize> {
        let old = self.meta.uploads_before(before).await?;
        for up in &old {
            self.abort_multipart(up).await?;
        }
        Ok(old.len())
    }
}

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
