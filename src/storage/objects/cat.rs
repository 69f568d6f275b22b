//! Multipart uploads in content-addressed buckets (see `storage::content`). Each part is
//! stored as a content of its own, referenced by the part (the owner of its reference is the
//! part record's `fileId`); completion publishes an object that points at a `cat` content
//! listing the parts' contents as its `base`, so no byte is moved or rewritten whatever the
//! part sizes are. The whole object's SHA-1 is not derivable from the parts' digests, so
//! completion reads the parts once to compute it (reads only; see BENCHMARKS.md for what that
//! costs); an upload of one part points at that part's content directly.
//!
//! Crash points, each finished by a retried Complete or by the sweep's Abort:
//! - a part whose content is stored but whose record is not: its reference is tentative (a
//!   `purge` date one grace period ahead) and the janitor reclaims the content;
//! - a completion that stored the `cat` content but did not publish: the object's reference
//!   is tentative too, so the `cat` content is reclaimed, which releases its `refBase` and,
//!   once the parts' references are released by the Abort, the parts' contents;
//! - after the publish: as in a GridFS bucket, the upload's record finds its object by id.

use futures::TryStreamExt;
use mongodb::bson::Bson;
use sha1::{Digest, Sha1};

use super::multipart::{part_list, CompleteStats, PartWrite};
use super::{ObjectInfo, ObjectMeta, ObjectStore};
use crate::storage::content::{self, Pointer};
use crate::storage::gridfs::{Digests, FileDoc, GridFsError, Result, UploadOptions};
use crate::storage::meta::{KeyLock, PartRecord, UploadRecord, WriteReg};

/// The metadata field in which a content bucket's multipart object keeps the MD5 of its bytes
/// (lowercase hex; its ETag is the multipart one).
pub const MD5_FIELD: &str = "md5";

/// What [`ObjectStore::reference_part`] did.
#[derive(Debug)]
pub enum PartByReference {
    /// The source cannot be shared (not a stored content, or its MD5 is unknown): copy it.
    NotApplicable,
    /// The upload is no longer open.
    UploadClosed,
    /// The part was recorded, pointing at the source's content.
    Done(PartRecord),
}

impl ObjectStore {
    /// UploadPartCopy of a whole object of the same content-addressed bucket: the part
    /// references the source's content (no byte read or written). `FileNotFound` when the
    /// content was reclaimed meanwhile (the source was replaced: the caller looks again).
    pub async fn reference_part(
        &self,
        up: &UploadRecord,
        number: i32,
        src: &ObjectInfo,
    ) -> Result<PartByReference> {
        if !up.content {
            return Ok(PartByReference::NotApplicable);
        }
        let Some(Pointer::Sha(sha)) = src.file.content.as_ref().and_then(Pointer::of) else {
            return Ok(PartByReference::NotApplicable);
        };
        let Some(md5) = super::content_md5(src) else {
            return Ok(PartByReference::NotApplicable);
        };
        // The part's owner is a registered write until its record is written: the reference
        // is tentative, and the upload's lock may keep the record waiting for longer than the
        // grace period, during which the janitor keeps a registered owner's contents.
        let reg = self
            .meta
            .register_write(&content::blobs_name(&up.bucket))
            .await?;
        let owner = reg.file_id();
        let contents = self.contents(&up.bucket);
        contents.reference(&Bson::ObjectId(owner), &sha).await?;
        if !contents.keep(&sha, src.file.length).await? {
            contents.release(&Bson::ObjectId(owner)).await?;
            reg.done().await;
            return Err(GridFsError::FileNotFound);
        }
        let rec = PartRecord {
            upload_id: up.id.clone(),
            number,
            file_id: owner,
            base: 0,
            size: src.file.length,
            md5_hex: hex::encode(md5),
            last_modified: self.meta.clock().now(),
            checksum: None,
            sha: Some(sha),
        };
        let recorded = self.record_content_part(up, rec, &reg).await;
        reg.done().await;
        Ok(match recorded? {
            Some(rec) => PartByReference::Done(rec),
            None => PartByReference::UploadClosed,
        })
    }

    /// Records a content part under the upload's lock: the upload is read again (still
    /// open?), the lock fenced, the record written, and the part it replaced released.
    /// `None`, with the part's own reference released, when the upload is no longer open.
    async fn record_content_part(
        &self,
        up: &UploadRecord,
        rec: PartRecord,
        reg: &WriteReg,
    ) -> Result<Option<PartRecord>> {
        let owner = Bson::ObjectId(rec.file_id);
        crate::failpoint::hit("part.record", &up.bucket).await;
        let lock = self.lock_upload(up).await?;
        let res = async {
            let still_open = self
                .meta
                .get_upload(&up.bucket, &up.id)
                .await?
                .is_some_and(|u| u.is_open());
            if !still_open {
                self.contents(&up.bucket).release(&owner).await?;
                return Ok(None);
            }
            if !lock.fence().await? {
                return Err(GridFsError::Conflict("the upload's lock expired".into()));
            }
            // Still registered: the janitor has kept the part's content (a write that
            // stalled past its lease may have lost it).
            if !reg.fence().await? {
                return Err(GridFsError::Conflict(
                    "the part's write registration expired".into(),
                ));
            }
            let replaced = self.meta.put_part(&rec).await?;
            if let Some(old) = replaced.filter(|o| o.file_id != rec.file_id) {
                self.release_part_contents(&up.bucket, &[old]).await?;
            }
            Ok(Some(rec))
        }
        .await;
        lock.release_or_warn().await;
        res
    }

    /// Opens a part's writer in a content-addressed bucket: staged in the blobs bucket under
    /// a registered id (reaped by the janitor if this process dies), hashed with SHA-1.
    pub(super) async fn open_content_part(
        &self,
        up: &UploadRecord,
        codec: Option<std::sync::Arc<dyn crate::storage::gridfs::ChunkCodec>>,
    ) -> Result<PartWrite> {
        if codec.is_some() {
            return Err(GridFsError::Conflict(
                "content-addressed buckets do not encrypt".into(),
            ));
        }
        let blobs = content::blobs_name(&up.bucket);
        let reg = self.meta.register_write(&blobs).await?;
        let upload = self
            .gridfs(&blobs)
            .open_upload_stream(
                &up.key,
                UploadOptions {
                    id: Some(Bson::ObjectId(reg.file_id())),
                    sha1: true,
                    ..Default::default()
                },
            )
            .await?;
        Ok(PartWrite {
            upload,
            base: 0,
            reg: Some(reg),
            // Content uploads are never metered (a metered bucket's are GridFS uploads).
            meter: None,
        })
    }

    /// [`ObjectStore::commit_part`] in a content-addressed bucket: the part's content is
    /// referenced (tentatively) by the part, stored unless the same bytes are stored already
    /// (adopting the staged chunks in place), then the part record is written under the
    /// upload's lock. A replaced part's reference is released.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn commit_content_part(
        &self,
        up: &UploadRecord,
        number: i32,
        part: PartWrite,
        reg: WriteReg,
        digests: Digests,
        checksum: Option<(String, String)>,
        etag_of: impl FnOnce(&[u8; 16]) -> String,
    ) -> Result<Option<PartRecord>> {
        let sha = digests
            .sha1
            .ok_or_else(|| GridFsError::Corrupt("a content part without its SHA-1".into()))?;
        let owner = part.upload.id().clone();
        let contents = self.contents(&up.bucket);
        contents.reference(&owner, &sha).await?;
        contents
            .adopt_blob(&owner, &sha, digests.length, part.upload.chunk_size(), &reg)
            .await?;
        let rec = PartRecord {
            upload_id: up.id.clone(),
            number,
            file_id: reg.file_id(),
            base: 0,
            size: digests.length,
            md5_hex: etag_of(&digests.md5),
            last_modified: self.meta.clock().now(),
            checksum,
            sha: Some(sha),
        };
        let res = self.record_content_part(up, rec, &reg).await;
        reg.done().await;
        res
    }

    /// Releases the references of content parts (their contents go after the grace period
    /// unless something else references them, such as a completed object's `cat` content).
    pub(super) async fn release_part_contents(
        &self,
        bucket: &str,
        parts: &[PartRecord],
    ) -> Result<()> {
        let owners: Vec<Bson> = parts
            .iter()
            .filter(|p| p.sha.is_some())
            .map(|p| Bson::ObjectId(p.file_id))
            .collect();
        if owners.is_empty() {
            return Ok(());
        }
        let contents = self.contents(bucket);
        for owner in &owners {
            contents.release(owner).await?;
        }
        Ok(())
    }

    /// Completes an upload of a content-addressed bucket (after `complete_locked` marked it
    /// completing): the object points at a `cat` content of the parts' contents (or at the
    /// one part's content), referenced before it is looked up, as a PUT's content is.
    pub(super) async fn complete_content(
        &self,
        up: &UploadRecord,
        parts: &[PartRecord],
        mut meta: ObjectMeta,
        (key_lock, upload_lock): (&KeyLock, &KeyLock),
    ) -> Result<Option<(ObjectInfo, CompleteStats)>> {
        let contents = self.contents(&up.bucket);
        let bases = parts
            .iter()
            .map(|p| {
                p.sha
                    .map(|s| (s, p.size))
                    .ok_or_else(|| GridFsError::Corrupt("a part without its content".into()))
            })
            .collect::<Result<Vec<_>>>()?;
        let total: u64 = bases.iter().map(|(_, l)| l).sum();
        // The whole object's SHA-1 names its content, and its MD5 lets a later copy by
        // reference give the copy its single-part ETag without reading the bytes.
        let (whole, md5) = match (bases.as_slice(), parts) {
            ([(sha, _)], [p]) if p.md5_hex.len() == 32 => (*sha, p.md5_hex.clone()),
            _ => {
                // The parts are read once, in order; nothing is written.
                let (mut h, mut m) = (Sha1::new(), md5::Md5::new());
                for (sha, len) in &bases {
                    let mut s = contents.read(&Pointer::Sha(*sha), *len, 0, *len).await?;
                    while let Some(b) = s.try_next().await? {
                        h.update(&b);
                        m.update(&b);
                    }
                }
                let md5: [u8; 16] = m.finalize().into();
                (h.finalize().into(), hex::encode(md5))
            }
        };
        meta.other.insert(MD5_FIELD, md5);
        let owner = Bson::ObjectId(up.file_id);
        contents.reference(&owner, &whole).await?;
        if !contents.keep(&whole, total).await? {
            contents.store_cat(&whole, total, &bases).await?;
        }
        meta.parts = part_list(parts);
        let prepared = self.prepare_publish(&up.bucket, &up.key, &owner).await?;
        meta.version_id = prepared.vid.clone();
        self.fence(Some(key_lock), None).await?;
        if !upload_lock.fence().await? {
            return Err(GridFsError::Conflict("the upload's lock was lost".into()));
        }
        let mut fields = Pointer::Sha(whole).fields();
        if let Some(ct) = &meta.content_type {
            fields.insert("contentType", ct.clone());
        }
        let file = FileDoc {
            id: owner,
            length: total,
            chunk_size: self.chunk_size,
            upload_date: prepared.date,
            filename: Some(up.key.clone()),
            metadata: Some(meta.to_metadata()),
            content: Some(fields),
        };
        match self
            .gridfs(&up.bucket)
            .files()
            .insert_one(file.to_document())
            .await
        {
            Ok(_) => {}
            Err(e) if crate::storage::meta::is_duplicate_key(&e) => {}
            Err(e) => return Err(e.into()),
        }
        let info = self.finish_publish(&up.bucket, prepared, file).await?;
        self.finish_completed(up).await?;
        self.meta
            .mark_upload_completed(
                &up.id,
                mongodb::bson::doc! {"etag": meta.etag.clone().unwrap_or_default()},
            )
            .await?;
        Ok(Some((
            info,
            CompleteStats {
                parts_adopted: parts.len(),
                bytes_rewritten: 0,
            },
        )))
    }
}
