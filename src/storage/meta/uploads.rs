//! Multipart uploads in progress (`__uploads`) and their parts (`__parts`). A part's data are
//! GridFS chunks in the bucket's chunks collection, staged under the file id the completed
//! object will have, at negative chunk numbers (`n = base + i`, a range of its own per part
//! attempt): completion renumbers them in place and never changes their `files_id`, the
//! chunks' shard key. No files document exists until completion, so they are not an object.
//! (Parts written by grids3 before this layout have a file id of their own and base 0.)

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

use super::txn::InTxn;
use super::MetaStore;

/// An upload in progress.
#[derive(Clone, Debug)]
pub struct UploadRecord {
    /// Upload id.
    pub id: String,
    /// Bucket.
    pub bucket: String,
    /// Key.
    pub key: String,
    /// When it was created.
    pub initiated: DateTime,
    /// Access key that created it.
    pub owner: String,
    /// The object's `metadata` (S3 attributes) to publish with.
    pub meta: Document,
    /// The id the completed file gets (fixed at creation so Complete can be retried).
    pub file_id: ObjectId,
    /// Chunk size of the parts and of the completed file.
    pub chunk_size: u32,
    /// `x-amz-checksum-algorithm` given at creation (lower-case name).
    pub checksum_algorithm: Option<String>,
    /// `x-amz-checksum-type` (`COMPOSITE` or `FULL_OBJECT`) with an algorithm.
    pub checksum_type: Option<String>,
    /// Set once Complete published the object: `{etag, parts: [part ETags]}`. The record stays
    /// a while as a tombstone, so that a retried Complete gets the same answer.
    pub completed: Option<Document>,
    /// The ETag of the part list a Complete started with (set before any chunk moves; another
    /// list is refused from then on). A retry compares its list with it while `completed` is
    /// not set yet.
    pub completing: Option<String>,
    /// Set when an Abort (or the sweep) started deleting the upload; it is finished by
    /// whoever sees it next (the sweep), whatever crashed meanwhile.
    pub aborting: bool,
    /// Whether its parts are stored as contents (the bucket was content-addressed when the
    /// upload began; a conversion meanwhile does not change how the upload completes).
    pub content: bool,
    /// Whether its parts are counted against its bucket's quota (the bucket was metered when
    /// the upload began): every part of it, or none, so a replaced or removed part is
    /// subtracted exactly when it was added (see `objects::quota_parts`).
    pub metered: bool,
}

impl UploadRecord {
    /// Whether parts may still be added and the upload completed.
    pub fn is_open(&self) -> bool {
        self.completed.is_none() && !self.aborting
    }
}

/// Chunk numbers reserved for each part attempt: 8,192 chunks of 1 MiB hold a part's maximum
/// of 5 GiB.
pub const PART_SPAN: i64 = 8192;

/// Part attempts per upload. Staging numbers stay within Int32 (the type of GridFS's `n`),
/// with room for the renumbering shift of a 5 TiB object (5,242,880 chunks of 1 MiB, below
/// 2^23), so that `$inc` keeps every `n` an Int32.
pub const MAX_PART_SLOTS: i64 = ((1 << 31) - (1 << 23)) / PART_SPAN;

impl PartRecord {
    /// The filter that selects this part's chunks in its bucket.
    pub fn chunk_filter(&self) -> Document {
        if self.base < 0 {
            doc! {"files_id": self.file_id, "n": {"$gte": self.base, "$lt": self.base + PART_SPAN}}
        } else {
            doc! {"files_id": self.file_id}
        }
    }
}

/// One uploaded part.
#[derive(Clone, Debug)]
pub struct PartRecord {
    /// Upload id.
    pub upload_id: String,
    /// Part number (1..=10000).
    pub number: i32,
    /// The id its chunks are stored under (the upload's file id).
    pub file_id: ObjectId,
    /// The `n` of its first chunk: a negative staging range of [`PART_SPAN`] numbers of its
    /// own (0 for a legacy part stored under a file id of its own).
    pub base: i64,
    /// Size in bytes.
    pub size: u64,
    /// MD5 hex of the part (its ETag without quotes).
    pub md5_hex: String,
    /// When it was uploaded.
    pub last_modified: DateTime,
    /// The part's verified additional checksum (algorithm, base64), if one was sent.
    pub checksum: Option<(String, String)>,
    /// In a content-addressed bucket: the SHA-1 of the part's content (stored as a content of
    /// its own, referenced by the part: `file_id` is the reference's owner).
    pub sha: Option<[u8; 20]>,
}

/// Open uploads read in bounded ranges (see [`MetaStore::list_uploads`]).
pub struct UploadPager<'p>(crate::storage::ranges::Ranger<'p>);

impl UploadPager<'_> {
    /// The next open uploads in order, about `want` of them; empty at the end.
    pub async fn next(&mut self, want: usize) -> mongodb::error::Result<Vec<UploadRecord>> {
        loop {
            let batch = self.0.next(want).await?;
            if batch.is_empty() {
                return Ok(Vec::new());
            }
            // Completed and aborting uploads are left out here rather than in the query, so
            // that the query is the index's own range (`{bucket, key, initiated}`).
            let open: Vec<UploadRecord> = batch
                .iter()
                .filter(|d| {
                    !d.contains_key("completed") && !d.get_bool("aborting").unwrap_or(false)
                })
                .filter_map(upload_from)
                .collect();
            if !open.is_empty() {
                return Ok(open);
            }
        }
    }

    /// Continues from `key` (past a common prefix).
    pub fn skip_to(&mut self, key: String) {
        self.0.skip_to(key);
    }
}

fn upload_from(d: &Document) -> Option<UploadRecord> {
    Some(UploadRecord {
        id: d.get_str("_id").ok()?.to_owned(),
        bucket: d.get_str("bucket").ok()?.to_owned(),
        key: d.get_str("key").ok()?.to_owned(),
        initiated: *d.get_datetime("initiated").ok()?,
        owner: d.get_str("owner").unwrap_or_default().to_owned(),
        meta: d.get_document("meta").cloned().unwrap_or_default(),
        file_id: d.get_object_id("fileId").ok()?,
        chunk_size: d.get_i32("chunkSize").ok()? as u32,
        checksum_algorithm: d.get_str("checksumAlgorithm").ok().map(str::to_owned),
        checksum_type: d.get_str("checksumType").ok().map(str::to_owned),
        completed: d.get_document("completed").ok().cloned(),
        completing: d.get_str("completing").ok().map(str::to_owned),
        aborting: d.get_bool("aborting").unwrap_or(false),
        content: d.get_bool("content").unwrap_or(false),
        metered: d.get_bool("metered").unwrap_or(false),
    })
}

fn part_from(d: &Document) -> Option<PartRecord> {
    Some(PartRecord {
        upload_id: d.get_str("uploadId").ok()?.to_owned(),
        number: d.get_i32("number").ok()?,
        file_id: d
            .get_object_id("fileId")
            .or_else(|_| d.get_object_id("stagedIn"))
            .ok()?,
        base: match d.get("base") {
            Some(mongodb::bson::Bson::Int64(b)) => *b,
            Some(mongodb::bson::Bson::Int32(b)) => i64::from(*b),
            _ => 0,
        },
        size: d.get_i64("size").ok()? as u64,
        md5_hex: d.get_str("md5").ok()?.to_owned(),
        last_modified: *d.get_datetime("lastModified").ok()?,
        checksum: match (d.get_str("checksumAlgorithm"), d.get_str("checksum")) {
            (Ok(a), Ok(v)) => Some((a.to_owned(), v.to_owned())),
            _ => None,
        },
        sha: d
            .get_binary_generic("sha")
            .ok()
            .and_then(|b| b.as_slice().try_into().ok()),
    })
}

fn part_doc(p: &PartRecord) -> Document {
    let mut record = doc! {
        "_id": part_key(&p.upload_id, p.number), "uploadId": &p.upload_id, "number": p.number,
        (if p.base < 0 { "stagedIn" } else { "fileId" }): p.file_id, "base": p.base, "size": p.size as i64, "md5": &p.md5_hex, "lastModified": p.last_modified,
        "checksumAlgorithm": p.checksum.as_ref().map(|c| c.0.clone()),
        "checksum": p.checksum.as_ref().map(|c| c.1.clone()),
    };
    if let Some(sha) = &p.sha {
        record.insert(
            "sha",
            mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: sha.to_vec(),
            },
        );
    }
    record
}

fn part_key(upload_id: &str, number: i32) -> String {
    format!("{upload_id}:{number:05}")
}

impl MetaStore {
    /// Records a new upload.
    pub async fn create_upload(&self, u: &UploadRecord) -> mongodb::error::Result<()> {
        self.uploads
            .insert_one(doc! {
                "_id": &u.id, "bucket": &u.bucket, "key": &u.key, "initiated": u.initiated,
                "owner": &u.owner, "meta": u.meta.clone(), "fileId": u.file_id, "chunkSize": u.chunk_size as i32,
                "checksumAlgorithm": u.checksum_algorithm.clone(),
                "checksumType": u.checksum_type.clone(),
                "content": u.content,
                "metered": u.metered,
            })
            .await?;
        Ok(())
    }

    /// An upload of a bucket.
    pub async fn get_upload(
        &self,
        bucket: &str,
        id: &str,
    ) -> mongodb::error::Result<Option<UploadRecord>> {
        // By `_id` alone (an index lookup on every server), the bucket checked here.
        Ok(self
            .uploads
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(upload_from)
            .filter(|u| u.bucket == bucket))
    }

    /// Open uploads of a bucket in (key, initiated, id) order, from a marker on, read in
    /// bounded ranges of keys (see `storage::ranges`); the caller stops when its page is full.
    pub fn list_uploads<'p>(
        &self,
        bucket: &str,
        prefix: &str,
        key_marker: Option<&str>,
        posts: &'p crate::storage::ranges::Posts,
    ) -> UploadPager<'p> {
        let lower = match key_marker {
            Some(m) if m >= prefix => m.to_owned(),
            _ => prefix.to_owned(),
        };
        let end = if prefix.is_empty() {
            None
        } else {
            crate::storage::objects::prefix_successor(prefix)
        };
        UploadPager(crate::storage::ranges::Ranger::new(
            self.uploads.clone(),
            "key",
            doc! {"bucket": bucket},
            doc! {"key": 1, "initiated": 1, "_id": 1},
            doc! {"initiated": 1, "_id": 1},
            (lower, true),
            end,
            posts,
            format!("uploads:{bucket}"),
        ))
    }

    /// Uploads the sweep has to finish: created before `before`, being aborted, or completed
    /// tombstones past their retention. (A completed upload is marked only after its leftovers
    /// were deleted, so tombstones need no cleaning before then.)
    pub async fn uploads_to_sweep(
        &self,
        before: DateTime,
        completed_before: DateTime,
    ) -> mongodb::error::Result<Vec<UploadRecord>> {
        // Three indexed queries rather than one `$or`.
        let mut out: Vec<UploadRecord> = Vec::new();
        for filter in [
            doc! {"aborting": true},
            doc! {"completedAt": {"$lt": completed_before}},
            doc! {"initiated": {"$lt": before}},
        ] {
            let docs: Vec<Document> = self
                .uploads
                .find(filter)
                .limit(100)
                .await?
                .try_collect()
                .await?;
            for u in docs.iter().filter_map(upload_from) {
                if !out.iter().any(|o| o.id == u.id) {
                    out.push(u);
                }
            }
        }
        Ok(out)
    }

    /// Marks an upload completed, with the answer a retried Complete gets.
    pub async fn mark_upload_completed(
        &self,
        id: &str,
        result: Document,
    ) -> mongodb::error::Result<()> {
        self.uploads
            .update_one(
                doc! {"_id": id},
                doc! {"$set": {"completed": result, "completedAt": self.clock.now()}},
            )
            .await?;
        Ok(())
    }

    /// When an upload was completed (for the tombstone's retention).
    pub async fn upload_completed_at(&self, id: &str) -> mongodb::error::Result<Option<DateTime>> {
        Ok(self
            .uploads
            .find_one(doc! {"_id": id})
            .projection(doc! {"completedAt": 1})
            .await?
            .and_then(|d| d.get_datetime("completedAt").ok().copied()))
    }

    /// Reserves a staging range for a new part attempt: the `n` of its first chunk. `None` when
    /// the upload is gone or no longer open; an error when it has used every range.
    pub async fn next_part_base(&self, upload_id: &str) -> mongodb::error::Result<Option<i64>> {
        let found = self
            .uploads
            .find_one_and_update(
                doc! {"_id": upload_id, "completed": null, "completing": null, "aborting": {"$ne": true}},
                doc! {"$inc": {"slots": 1_i64}},
            )
            .return_document(mongodb::options::ReturnDocument::After)
            .projection(doc! {"slots": 1})
            .await?;
        let Some(d) = found else {
            return Ok(None);
        };
        let slot = match d.get("slots") {
            Some(mongodb::bson::Bson::Int64(s)) => *s,
            Some(mongodb::bson::Bson::Int32(s)) => i64::from(*s),
            _ => 1,
        };
        if slot > MAX_PART_SLOTS {
            return Err(mongodb::error::Error::custom(format!(
                "upload {upload_id} used all of its {MAX_PART_SLOTS} part attempts"
            )));
        }
        Ok(Some(-slot * PART_SPAN))
    }

    /// Marks an upload as being completed with the ETag of `parts` (its part list): the
    /// chunks may be renumbered from then on, so a Complete with another list must fail.
    /// `false` when another list started completing it first.
    pub async fn mark_upload_completing(
        &self,
        id: &str,
        etag: &str,
    ) -> mongodb::error::Result<bool> {
        let r = self
            .uploads
            .update_one(
                doc! {"_id": id, "completing": {"$in": [mongodb::bson::Bson::Null, etag]}},
                doc! {"$set": {"completing": etag}},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// Records that a completion rewrote its tail (a retry need not do it again).
    pub async fn mark_upload_rewritten(&self, id: &str) -> mongodb::error::Result<()> {
        self.uploads
            .update_one(doc! {"_id": id}, doc! {"$set": {"tailRewritten": true}})
            .await?;
        Ok(())
    }

    /// Whether a completion already rewrote the upload's tail.
    pub async fn upload_tail_rewritten(&self, id: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .uploads
            .find_one(doc! {"_id": id})
            .projection(doc! {"tailRewritten": 1})
            .await?
            .is_some_and(|d| d.get_bool("tailRewritten").unwrap_or(false)))
    }

    /// Marks an upload as being aborted (no part can join it any more).
    pub async fn mark_upload_aborting(&self, id: &str) -> mongodb::error::Result<()> {
        self.uploads
            .update_one(doc! {"_id": id}, doc! {"$set": {"aborting": true}})
            .await?;
        Ok(())
    }

    /// One part of an upload.
    pub async fn get_part(
        &self,
        upload_id: &str,
        number: i32,
    ) -> mongodb::error::Result<Option<PartRecord>> {
        Ok(self
            .parts
            .find_one(doc! {"_id": part_key(upload_id, number)})
            .await?
            .as_ref()
            .and_then(part_from))
    }

    /// Whether a legacy part record (one with a file id of its own) holds chunks under
    /// `file_id`. Staged parts do not answer: they share the upload's file id (recorded as
    /// `stagedIn`, not `fileId`), and the upload record owns their ranges, never a write
    /// registration or a reclaim.
    pub async fn part_uses_file(
        &self,
        file_id: &mongodb::bson::Bson,
    ) -> mongodb::error::Result<bool> {
        Ok(self
            .parts
            .find_one(doc! {"fileId": file_id.clone()})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }

    /// Whether an upload that is neither completed nor aborting will publish its object
    /// under `file_id` (its completion may still be under way). Filtered in code: one indexed
    /// field per query.
    pub async fn upload_pending_for(
        &self,
        file_id: &mongodb::bson::Bson,
    ) -> mongodb::error::Result<bool> {
        Ok(self
            .uploads
            .find_one(doc! {"fileId": file_id.clone()})
            .projection(doc! {"completedAt": 1, "aborting": 1})
            .await?
            .is_some_and(|d| {
                !d.contains_key("completedAt") && !d.get_bool("aborting").unwrap_or(false)
            }))
    }

    /// Every part record (for fsck).
    pub async fn all_parts(&self) -> mongodb::error::Result<Vec<PartRecord>> {
        let docs: Vec<Document> = self.parts.find(doc! {}).await?.try_collect().await?;
        Ok(docs.iter().filter_map(part_from).collect())
    }

    /// Every upload record (for fsck).
    pub async fn all_uploads(&self) -> mongodb::error::Result<Vec<UploadRecord>> {
        let docs: Vec<Document> = self.uploads.find(doc! {}).await?.try_collect().await?;
        Ok(docs.iter().filter_map(upload_from).collect())
    }

    /// Forgets an upload (its parts must be gone first).
    pub async fn delete_upload(&self, id: &str) -> mongodb::error::Result<()> {
        self.uploads.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Records a part, replacing one with the same number; returns the replaced part.
    pub async fn put_part(&self, p: &PartRecord) -> mongodb::error::Result<Option<PartRecord>> {
        let old = self
            .parts
            .find_one_and_replace(doc! {"_id": part_key(&p.upload_id, p.number)}, part_doc(p))
            .upsert(true)
            .await?;
        Ok(old.as_ref().and_then(part_from))
    }

    /// [`Self::put_part`] in a transaction's session.
    pub async fn put_part_in(
        &self,
        s: &mut mongodb::ClientSession,
        p: &PartRecord,
    ) -> mongodb::error::Result<Option<PartRecord>> {
        let old = self
            .parts
            .on(s)
            .find_one_and_replace(doc! {"_id": part_key(&p.upload_id, p.number)}, part_doc(p))
            .upsert(true)
            .session(s)
            .await?;
        Ok(old.as_ref().and_then(part_from))
    }

    /// The bytes of an upload's parts, and deletes their records if `delete`, in a
    /// transaction's session.
    pub async fn part_bytes_in(
        &self,
        s: &mut mongodb::ClientSession,
        upload_id: &str,
        delete: bool,
    ) -> mongodb::error::Result<i64> {
        let parts = self.parts.on(s);
        let mut cur = parts
            .find(doc! {"uploadId": upload_id})
            .projection(doc! {"size": 1})
            .session(&mut *s)
            .await?;
        let mut bytes = 0;
        while let Some(d) = cur.next(&mut *s).await {
            bytes += d?.get_i64("size").unwrap_or(0);
        }
        if delete {
            parts
                .delete_many(doc! {"uploadId": upload_id})
                .session(&mut *s)
                .await?;
        }
        Ok(bytes)
    }

    /// Parts of an upload after `after`, by number, at most `limit` (0: all).
    pub async fn list_parts(
        &self,
        upload_id: &str,
        after: i32,
        limit: i64,
    ) -> mongodb::error::Result<Vec<PartRecord>> {
        let docs: Vec<Document> = self
            .parts
            .find(doc! {"uploadId": upload_id, "number": {"$gt": after}})
            .sort(doc! {"number": 1})
            .limit(limit)
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(part_from).collect())
    }

    /// Removes one part record (fsck --repair); how many were removed.
    pub async fn delete_part_record(&self, p: &PartRecord) -> mongodb::error::Result<u64> {
        Ok(self
            .parts
            .delete_many(doc! {"_id": part_key(&p.upload_id, p.number)})
            .await?
            .deleted_count)
    }

    /// Removes every part record of an upload.
    pub async fn delete_parts(&self, upload_id: &str) -> mongodb::error::Result<()> {
        self.parts.delete_many(doc! {"uploadId": upload_id}).await?;
        Ok(())
    }
}

impl MetaStore {
    /// Removes a deleted bucket's uploads and their parts' records.
    pub async fn forget_uploads(&self, bucket: &str) -> mongodb::error::Result<()> {
        let ids: Vec<String> = self
            .uploads
            .find(doc! {"bucket": bucket})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .iter()
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect();
        for chunk in ids.chunks(500) {
            self.parts
                .delete_many(doc! {"uploadId": {"$in": chunk}})
                .await?;
        }
        // Exactly the uploads read (an upload begun since, in a bucket created again under
        // the name, is not this bucket's and stays).
        for chunk in ids.chunks(500) {
            self.uploads
                .delete_many(doc! {"_id": {"$in": chunk}, "bucket": bucket})
                .await?;
        }
        Ok(())
    }

    /// The uploads of `bucket` that may still hold parts: not marked completed (aborting
    /// ones too, until their parts are gone): `(id, the object's file id, aborting)`.
    pub async fn uploads_holding_parts(
        &self,
        bucket: &str,
    ) -> mongodb::error::Result<Vec<(String, ObjectId, bool)>> {
        Ok(self
            .uploads
            .find(doc! {"bucket": bucket, "completed": {"$exists": false}})
            .projection(doc! {"_id": 1, "fileId": 1, "aborting": 1})
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .iter()
            .filter_map(|d| {
                Some((
                    d.get_str("_id").ok()?.to_owned(),
                    d.get_object_id("fileId").ok()?,
                    d.get_bool("aborting").unwrap_or(false),
                ))
            })
            .collect())
    }

    /// How many part records the uploads `ids` have, and their bytes.
    pub async fn part_totals(&self, ids: &[String]) -> mongodb::error::Result<(i64, i64)> {
        let (mut parts, mut bytes) = (0_i64, 0_i64);
        for chunk in ids.chunks(500) {
            let mut c = self
                .parts
                .find(doc! {"uploadId": {"$in": chunk}})
                .projection(doc! {"size": 1})
                .await?;
            while let Some(d) = c.try_next().await? {
                parts += 1;
                bytes += d.get_i64("size").unwrap_or(0);
            }
        }
        Ok((parts, bytes))
    }
}
