//! The storage side of the janitor pass: writes whose writer died, and what they left.

use super::*;

impl ObjectStore {
    /// One janitor pass: re-measures the clock, settles quota holds whose writers died,
    /// purges expired leases, finishes reclaims whose readers are gone, and reaps the chunks
    /// of writes whose writers died. Returns how many files or holds it dealt with.
    pub async fn janitor_pass(&self) -> Result<usize> {
        self.meta.clock().calibrate(&self.db).await?;
        // Quotas on their own, whatever the rest meets: a reclaim blocked by a dead gateway's
        // unfinished transaction must not keep a dead writer's hold from being settled.
        let quota = self.quota_pass().await;
        Ok(self.reclaim_pass().await? + quota)
    }

    /// Holds whose writers died, files of metered buckets not yet counted, and the gauges.
    /// Each step on its own: a dead gateway's unfinished transaction can keep a usage document
    /// locked until the database drops it, which must not stop the rest.
    async fn quota_pass(&self) -> usize {
        let mut done = 0;
        match self.settle_lapsed_holds().await {
            Ok(n) => done += n,
            Err(e) => tracing::warn!(error = %e, "settling lapsed quota holds failed"),
        }
        match self.fold_metered().await {
            Ok(n) => done += n as usize,
            Err(e) => tracing::warn!(error = %e, "counting uncounted files failed"),
        }
        match self.link_account_buckets().await {
            Ok(n) => done += n,
            Err(e) => {
                tracing::warn!(error = %e, "linking buckets to their account's limits failed")
            }
        }
        let mut samples = Vec::new();
        for (scope, all) in [
            ("bucket", self.meta.all_counted().await),
            ("account", self.meta.all_accounts_counted().await),
        ] {
            match all {
                Ok(all) => {
                    samples.extend(
                        all.into_iter()
                            .map(|(name, c)| crate::metrics::QuotaSample {
                                scope,
                                name,
                                used: c.used_bytes(),
                                stored: c.bytes,
                                parts: c.part_bytes,
                                objects: c.used_objects(),
                                limits: (c.limits.bytes, c.limits.objects),
                            }),
                    )
                }
                // Kept as they were: a failed read is not a deleted bucket.
                Err(e) => {
                    tracing::warn!(error = %e, "reading quota usage failed");
                    return done;
                }
            }
        }
        crate::metrics::set_quota_usage(self.db.name(), samples);
        done
    }

    /// Deferred reclaims, collections recreated after DeleteBucket, dead writes, and content
    /// references.
    async fn reclaim_pass(&self) -> Result<usize> {
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
            self.unpublish(&p.bucket, std::slice::from_ref(&p.file_id))
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
        self.purge_reap_tombstones().await?;
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
    pub(super) async fn reap_dead_write(
        &self,
        w: &crate::storage::meta::DeadWrite,
    ) -> Result<usize> {
        let fs = self.gridfs(&w.bucket);
        // A content bucket's writes are registered in its blobs bucket (their chunks are
        // staged there), but the object they publish is a document of the bucket itself.
        // (No S3 bucket name holds `_`, so the suffix is never a bucket's own.)
        let objects_bucket = w.bucket.strip_suffix("._blobs").unwrap_or(&w.bucket);
        let objects = self.gridfs(objects_bucket);
        let mut unpublished = Vec::new();
        for id in &w.file_ids {
            // A tombstone (an earlier try of this reap that stopped before the chunks went)
            // is no publish: its chunks are still to delete.
            let published = objects
                .files()
                .find_one(
                    doc! {"_id": id.clone(), format!("metadata.{REAPED}"): {"$exists": false}},
                )
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
            // The id is made unpublishable before its chunks go: a tombstone files document
            // under its `_id`, which the late publish of a writer that outlived its fence (a
            // failover with its insert in TCP retransmit) collides with, so that it fails
            // instead of publishing an object without data.
            if !self.tombstone_file(objects_bucket, &id).await? {
                // Published after all, between the check above and the tombstone.
                self.index_file(objects_bucket, &id).await?;
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

    /// Writes the tombstone of a dead write's file id into `bucket`'s files collection:
    /// `{_id, length: 0, uploadDate, metadata: {s3Reaped}}`, without a filename, so that no
    /// S3 lookup, listing, lifecycle scan or version index build sees it (a GridFS driver
    /// listing every file sees a nameless empty one until it is purged). `false` when a
    /// real files document took the id first (the write was published after all).
    pub(super) async fn tombstone_file(&self, bucket: &str, id: &Bson) -> Result<bool> {
        let files = self.gridfs(bucket).files().clone();
        let now = self.meta.clock().now();
        // Dated first, so a reap that stops after the tombstone still has it purged later.
        self.db
            .collection::<Document>(REAPED_COLL)
            .update_one(
                doc! {"_id": {"bucket": bucket, "file": id.clone()}},
                doc! {"$set": {"at": now}},
            )
            .upsert(true)
            .await?;
        let tombstone = doc! {
            "_id": id.clone(),
            "length": 0_i64,
            "chunkSize": self.chunk_size as i32,
            "uploadDate": now,
            "metadata": {REAPED: now},
        };
        match files.insert_one(tombstone).await {
            Ok(_) => {}
            Err(e) if crate::storage::meta::is_duplicate_key(&e) => {
                // Ours, from an earlier try of this reap, or a publish.
                let ours = files
                    .find_one(
                        doc! {"_id": id.clone(), format!("metadata.{REAPED}"): {"$exists": true}},
                    )
                    .projection(doc! {"_id": 1})
                    .await?
                    .is_some();
                if !ours {
                    self.db
                        .collection::<Document>(REAPED_COLL)
                        .delete_one(doc! {"_id": {"bucket": bucket, "file": id.clone()}})
                        .await?;
                    return Ok(false);
                }
            }
            Err(e) => return Err(e.into()),
        }
        Ok(true)
    }

    /// Removes the tombstones of reaped writes older than [`TOMBSTONE_KEEP`]: a writer stalled
    /// past its fence that long no longer publishes (its request timed out long before).
    async fn purge_reap_tombstones(&self) -> Result<()> {
        let coll = self.db.collection::<Document>(REAPED_COLL);
        let before = DateTime::from_millis(
            self.meta.clock().now().timestamp_millis() - TOMBSTONE_KEEP.as_millis() as i64,
        );
        let old: Vec<Document> = coll
            .find(doc! {"at": {"$lt": before}})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        for r in old {
            let (Ok(key), Some(at)) = (r.get_document("_id"), r.get("at")) else {
                continue;
            };
            let (Ok(bucket), Some(file)) = (key.get_str("bucket"), key.get("file")) else {
                continue;
            };
            // Chunks that a stalled write's late insert put under the tombstoned id (its chunk
            // and files document travel in one command for a small file, and the files part
            // collided): nothing can publish them while the tombstone holds the id. So they
            // go only when the tombstone is read there, and before it: a publish that lands
            // once the tombstone is gone (this record outliving an earlier purge) is an
            // object, and its chunks stay.
            let fs = self.gridfs(bucket);
            let tombstone =
                doc! {"_id": file.clone(), format!("metadata.{REAPED}"): {"$exists": true}};
            if fs
                .files()
                .find_one(tombstone.clone())
                .projection(doc! {"_id": 1})
                .await?
                .is_some()
            {
                fs.chunks()
                    .delete_many(doc! {"files_id": file.clone()})
                    .await?;
                fs.files().delete_one(tombstone).await?;
            }
            // As read: a reap that dated the record again since keeps it (and its tombstone).
            coll.delete_one(doc! {"_id": key.clone(), "at": at.clone()})
                .await?;
        }
        Ok(())
    }
}

/// The `metadata` field that marks a reaped write's tombstone.
pub(crate) const REAPED: &str = "s3Reaped";

/// The collection that dates the tombstones, for their purge.
const REAPED_COLL: &str = "__reaped";

/// How long a reaped write's tombstone stays.
const TOMBSTONE_KEEP: Duration = Duration::from_secs(3600);
