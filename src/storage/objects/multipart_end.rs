//! The end of multipart uploads that are not completed: Abort, and the sweep that finishes
//! what stale, interrupted or completed uploads left (split from `multipart`, which creates,
//! fills and completes them).

use mongodb::bson::{doc, Bson, DateTime};

use super::multipart::legacy_ids;
use super::ObjectStore;
use crate::storage::gridfs::{GridFsError, Result};
use crate::storage::meta::UploadRecord;

impl ObjectStore {
    /// Removes an upload and everything it wrote. Order: mark it aborting (no part joins it
    /// after that), delete every chunk under the object's id (it was never published: that is
    /// checked first) and those of legacy parts, the part records, the upload record. A crash
    /// anywhere leaves the mark, and the sweep finishes the job.
    pub async fn abort_multipart(&self, up: &UploadRecord) -> Result<()> {
        let lock = self.lock_upload(up).await?;
        let res = self.abort_locked(up).await;
        lock.release_or_warn().await;
        res
    }

    async fn abort_locked(&self, up: &UploadRecord) -> Result<()> {
        let fs = self.gridfs(&up.bucket);
        let Some(current) = self.meta.get_upload(&up.bucket, &up.id).await? else {
            return Ok(());
        };
        if current.completed.is_some()
            || self
                .file_exists(&up.bucket, &Bson::ObjectId(up.file_id))
                .await?
        {
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
        self.release_part_contents(&up.bucket, &parts).await?;
        let mut ids = legacy_ids(&parts);
        ids.push(up.file_id);
        fs.chunks()
            .delete_many(doc! {"files_id": {"$in": ids}})
            .await?;
        if current.metered {
            self.delete_metered_parts(&current).await?;
        } else {
            self.meta.delete_parts(&up.id).await?;
        }
        self.meta.delete_upload(&up.id).await?;
        Ok(())
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
                lock.release_or_warn().await;
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
