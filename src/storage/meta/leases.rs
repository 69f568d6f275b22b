//! Reader leases and deferred reclaims, so that a GET streaming a revision is never cut off by
//! an overwrite or delete on any gateway instance.
//!
//! Protocol (single-document operations only, no transactions):
//! - a reader inserts a lease `{bucket, file_id, expires}`, *then* checks that the files
//!   document still exists, and renews the lease while it streams;
//! - a reclaimer records the file in `__reclaim`, deletes the files document, *then* looks for
//!   a live lease; with none it deletes the chunks and the record, otherwise it leaves the record
//!   for the janitor.
//!
//! If the reader's check found the files document, its lease was written before the files
//! document was deleted, so the reclaimer's later lease lookup sees it.

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

use super::MetaStore;
use crate::storage::gridfs::batch;

/// A reader lease on one file.
#[derive(Clone, Debug)]
pub struct Lease {
    /// The lease document's id.
    pub id: ObjectId,
}

/// A pending reclaim: a file whose files document is gone and whose chunks wait for readers.
#[derive(Clone, Debug)]
pub struct PendingReclaim {
    /// The record's id.
    pub id: ObjectId,
    /// Bucket.
    pub bucket: String,
    /// The file's id.
    pub file_id: Bson,
    /// The version entry that names the file, when a version is removed (its `_id` in the
    /// bucket's version index): the janitor removes it too.
    pub entry: Option<String>,
    /// Only the chunks go: the files document lives on, its content stored another way (a
    /// storage-mode conversion).
    pub chunks_only: bool,
    /// For a chunks-only reclaim, the `_id`s of the chunks it removes: only those, never
    /// chunks written for the file later (a conversion back to GridFS writes new ones).
    /// `None` in records of older versions.
    pub chunks: Option<Vec<Bson>>,
}

impl MetaStore {
    /// Takes a lease on a file for `ttl`.
    pub async fn acquire_lease(
        &self,
        bucket: &str,
        file_id: &Bson,
        ttl: std::time::Duration,
    ) -> mongodb::error::Result<Lease> {
        let id = ObjectId::new();
        self.leases
            .insert_one(doc! {"_id": id, "bucket": bucket, "file_id": file_id.clone(), "expires": self.clock.after(ttl)})
            .await?;
        Ok(Lease { id })
    }

    /// Extends a lease.
    pub async fn renew_lease(
        &self,
        lease: &Lease,
        ttl: std::time::Duration,
    ) -> mongodb::error::Result<()> {
        self.leases
            .update_one(
                doc! {"_id": lease.id},
                doc! {"$set": {"expires": self.clock.after(ttl)}},
            )
            .await?;
        Ok(())
    }

    /// Gives a lease back.
    pub async fn release_lease(&self, lease: &Lease) -> mongodb::error::Result<()> {
        self.leases.delete_one(doc! {"_id": lease.id}).await?;
        Ok(())
    }

    /// Whether any unexpired lease holds the file.
    pub async fn has_live_lease(
        &self,
        bucket: &str,
        file_id: &Bson,
    ) -> mongodb::error::Result<bool> {
        Ok(self
            .leases
            .find_one(doc! {"bucket": bucket, "file_id": file_id.clone(), "expires": {"$gt": self.clock.now()}})
            .await?
            .is_some())
    }

    /// Records the intent to reclaim a file (written before its files document is deleted, so
    /// a crash in between leaves a record for the janitor rather than orphaned chunks).
    pub async fn add_reclaim(
        &self,
        bucket: &str,
        file_id: &Bson,
    ) -> mongodb::error::Result<ObjectId> {
        self.add_reclaim_of(bucket, file_id, None).await
    }

    /// Records the intent to reclaim a file, and with `entry` the version entry that names it
    /// (a version removed for good: both go, whoever finishes).
    pub async fn add_reclaim_of(
        &self,
        bucket: &str,
        file_id: &Bson,
        entry: Option<&str>,
    ) -> mongodb::error::Result<ObjectId> {
        let id = ObjectId::new();
        let mut d = doc! {"_id": id, "bucket": bucket, "file_id": file_id.clone(), "since": self.clock.now()};
        if let Some(e) = entry {
            d.insert("entry", e);
        }
        self.reclaim.insert_one(d).await?;
        Ok(id)
    }

    /// Records the intent to delete the chunks `chunks` (by `_id`) of a file but not its
    /// files document (its content was converted to another storage mode): the janitor
    /// deletes them once no reader holds a lease.
    pub async fn add_chunk_reclaim(
        &self,
        bucket: &str,
        file_id: &Bson,
        chunks: Vec<Bson>,
    ) -> mongodb::error::Result<PendingReclaim> {
        let id = ObjectId::new();
        self.reclaim
            .insert_one(doc! {"_id": id, "bucket": bucket, "file_id": file_id.clone(), "since": self.clock.now(), "chunksOnly": true, "chunks": chunks.clone()})
            .await?;
        Ok(PendingReclaim {
            id,
            bucket: bucket.to_owned(),
            file_id: file_id.clone(),
            entry: None,
            chunks_only: true,
            chunks: Some(chunks),
        })
    }

    /// The pending chunks-only reclaims of a file (a conversion back to GridFS waits for
    /// them before it writes the file's chunks again).
    pub async fn chunk_reclaims_of(
        &self,
        bucket: &str,
        file_id: &Bson,
    ) -> mongodb::error::Result<Vec<PendingReclaim>> {
        let docs: Vec<Document> = self
            .reclaim
            .find(doc! {"file_id": file_id.clone()})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(pending)
            .filter(|p| p.chunks_only && p.bucket == bucket)
            .collect())
    }

    /// Records the intent to reclaim many files of one bucket (one insert); the record ids in
    /// the order of `file_ids`.
    pub async fn add_reclaims(
        &self,
        bucket: &str,
        file_ids: &[Bson],
    ) -> mongodb::error::Result<Vec<ObjectId>> {
        let ids: Vec<ObjectId> = file_ids.iter().map(|_| ObjectId::new()).collect();
        let now = self.clock.now();
        let docs: Vec<Document> = ids
            .iter()
            .zip(file_ids)
            .map(|(id, f)| doc! {"_id": id, "bucket": bucket, "file_id": f.clone(), "since": now})
            .collect();
        if !docs.is_empty() {
            self.reclaim.insert_many(docs).await?;
        }
        Ok(ids)
    }

    /// Which of `file_ids` an unexpired lease holds (one query). The `$in` is not cut into
    /// slices (see `gridfs::batch`): the query runs on the `expires` index, so only live
    /// leases, few at any time, are matched against the list.
    pub async fn leased_among(
        &self,
        bucket: &str,
        file_ids: &[Bson],
    ) -> mongodb::error::Result<Vec<Bson>> {
        let docs: Vec<Document> = self
            .leases
            .find(doc! {"bucket": bucket, "file_id": {"$in": file_ids.to_vec()}, "expires": {"$gt": self.clock.now()}})
            .projection(doc! {"file_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|mut d| d.remove("file_id"))
            .collect())
    }

    /// Removes many reclaim records (one delete command).
    pub async fn remove_reclaims(&self, ids: &[ObjectId]) -> mongodb::error::Result<()> {
        let ids: Vec<Bson> = ids.iter().map(|i| Bson::ObjectId(*i)).collect();
        batch::delete_in(&self.reclaim, "_id", &ids, &doc! {}).await?;
        Ok(())
    }

    /// Removes a reclaim record once the chunks are gone.
    pub async fn remove_reclaim(&self, id: ObjectId) -> mongodb::error::Result<()> {
        self.reclaim.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Every pending reclaim (oldest first, at most `limit`).
    pub async fn pending_reclaims(
        &self,
        limit: i64,
    ) -> mongodb::error::Result<Vec<PendingReclaim>> {
        let docs: Vec<Document> = self
            .reclaim
            .find(doc! {})
            .sort(doc! {"_id": 1})
            .limit(limit)
            .await?
            .try_collect()
            .await?;
        Ok(docs.into_iter().filter_map(pending).collect())
    }

    /// Expired leases (for fsck).
    pub async fn expired_leases(&self) -> mongodb::error::Result<u64> {
        self.leases
            .count_documents(doc! {"expires": {"$lte": self.clock.now()}})
            .await
    }

    /// Deletes expired leases (left by readers that died).
    pub async fn purge_expired_leases(&self) -> mongodb::error::Result<u64> {
        Ok(self
            .leases
            .delete_many(doc! {"expires": {"$lte": self.clock.now()}})
            .await?
            .deleted_count)
    }
}

/// A reclaim record as stored.
fn pending(mut d: Document) -> Option<PendingReclaim> {
    Some(PendingReclaim {
        id: d.get_object_id("_id").ok()?,
        bucket: d.get_str("bucket").ok()?.to_owned(),
        file_id: d.remove("file_id")?,
        entry: d.get_str("entry").ok().map(str::to_owned),
        chunks_only: d.get_bool("chunksOnly").unwrap_or(false),
        chunks: d.get_array("chunks").ok().cloned(),
    })
}
