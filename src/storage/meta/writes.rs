//! Write registrations (`__writes`): every write in progress that puts chunks into a bucket
//! (PutObject, CopyObject, UploadPart, UploadPartCopy) is registered, before its first chunk,
//! with its bucket, its file id, the process that runs it and an expiry in the database's time
//! that a heartbeat extends. A registration that expired belongs to a writer that died (or lost
//! the database for longer than the lease): the janitor reaps it, deleting its chunks unless
//! they were published (a files document or a part record with that id exists).
//!
//! Reaping and publishing exclude each other without transactions: the janitor first claims
//! an expired registration (`reaping: true`, set only while it is expired), and a writer
//! *fences* before it publishes, renewing its registration only if it is not claimed. A writer
//! whose registration was claimed publishes nothing. A fence within half a lease of the last
//! renewal needs no round trip: this process's monotonic clock only has to measure elapsed time,
//! never agree with another instance's.
//!
//! A finished write's registration is removed in a batch with others, within
//! [`FLUSH_EVERY`], not by a round trip of its own (a PUT costs one command less): until then
//! it names a published file, which is harmless (the janitor only drops such a record, and
//! DeleteBucket waits the moment it takes for the batch to go).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

use super::MetaStore;

/// How often the registrations of finished writes are removed.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);

/// Registrations of finished writes waiting for their batch removal, and whether the task
/// that removes them runs.
#[derive(Clone, Debug, Default)]
pub(super) struct FinishedWrites(Arc<Mutex<(Vec<ObjectId>, bool)>>);

/// A registered write. Call [`WriteReg::done`] once its chunks are published (or deleted);
/// dropping it unfinished stops the heartbeat and leaves the registration for the janitor.
#[derive(Debug)]
pub struct WriteReg {
    id: ObjectId,
    meta: MetaStore,
    ttl: Duration,
    renewed: Arc<Mutex<Instant>>,
    heartbeat: tokio::task::JoinHandle<()>,
}

/// A registration whose writer is gone.
#[derive(Clone, Debug)]
pub struct DeadWrite {
    /// The registration's id.
    pub id: ObjectId,
    /// Bucket.
    pub bucket: String,
    /// The file id its chunks carry.
    pub file_id: Bson,
}

impl MetaStore {
    /// Registers a write of chunks under `file_id` in `bucket`; `kind` names the operation.
    pub async fn register_write(
        &self,
        bucket: &str,
        file_id: &Bson,
        kind: &str,
    ) -> mongodb::error::Result<WriteReg> {
        let id = ObjectId::new();
        let ttl = self.write_ttl;
        let at = Instant::now();
        self.writes
            .insert_one(doc! {
                "_id": id, "bucket": bucket, "fileId": file_id.clone(), "kind": kind,
                "process": self.process_id.as_ref(), "started": self.clock.now(),
                "expires": self.clock.after(ttl),
            })
            .await?;
        let renewed = Arc::new(Mutex::new(at));
        let heartbeat = {
            let (meta, renewed) = (self.clone(), renewed.clone());
            tokio::spawn(async move {
                let mut tick = tokio::time::interval(ttl / 3);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    match meta.renew_write(id, ttl, &renewed).await {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            tracing::warn!(error = %e, "could not renew a write registration")
                        }
                    }
                }
            })
        };
        Ok(WriteReg {
            id,
            meta: self.clone(),
            ttl,
            renewed,
            heartbeat,
        })
    }

    /// Extends a registration unless the janitor claimed it; `false` when it is gone.
    async fn renew_write(
        &self,
        id: ObjectId,
        ttl: Duration,
        renewed: &Mutex<Instant>,
    ) -> mongodb::error::Result<bool> {
        let at = Instant::now();
        let ok = self
            .writes
            .update_one(
                doc! {"_id": id, "reaping": {"$ne": true}},
                doc! {"$set": {"expires": self.clock.after(ttl)}},
            )
            .await?
            .matched_count
            == 1;
        if ok {
            *renewed.lock().expect("renewed") = at;
        }
        Ok(ok)
    }

    /// Claims up to `limit` expired registrations for reaping (or ones a crashed janitor had
    /// claimed already).
    pub async fn claim_dead_writes(&self, limit: usize) -> mongodb::error::Result<Vec<DeadWrite>> {
        let now = self.clock.now();
        let me = self.process_id.as_ref();
        let mut out = Vec::new();
        // Two indexed queries rather than one `$or` (which some servers answer with a
        // collection scan): registrations a crashed janitor had claimed, then expired ones.
        for filter in [
            doc! {"reaping": true, "claimed": {"$ne": me}},
            doc! {"expires": {"$lt": now}, "claimed": {"$ne": me}},
        ] {
            while out.len() < limit {
                let Some(d) = self
                    .writes
                    .find_one_and_update(
                        filter.clone(),
                        doc! {"$set": {"reaping": true, "claimed": me}},
                    )
                    .await?
                else {
                    break;
                };
                if let Some(w) = dead_from(&d) {
                    out.push(w);
                }
            }
        }
        // Claimed by this pass: the next pass may claim them again if this one fails.
        if !out.is_empty() {
            let ids: Vec<ObjectId> = out.iter().map(|w| w.id).collect();
            self.writes
                .update_many(doc! {"_id": {"$in": ids}}, doc! {"$unset": {"claimed": ""}})
                .await?;
        }
        Ok(out)
    }

    /// Queues a finished write's registration for the next batch removal, starting the task
    /// that runs them if it is not running. The task ends when the queue is empty and no other
    /// handle on it is left (the metastore was dropped).
    fn forget_write_later(&self, id: ObjectId) {
        let mut q = self.finished_writes.0.lock().expect("finished writes");
        q.0.push(id);
        if q.1 {
            return;
        }
        q.1 = true;
        let (queue, writes) = (self.finished_writes.0.clone(), self.writes.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(FLUSH_EVERY).await;
                let batch = {
                    let mut q = queue.lock().expect("finished writes");
                    if q.0.is_empty() && Arc::strong_count(&queue) == 1 {
                        q.1 = false;
                        return;
                    }
                    std::mem::take(&mut q.0)
                };
                if batch.is_empty() {
                    continue;
                }
                if let Err(e) = writes
                    .delete_many(doc! {"_id": {"$in": batch.clone()}})
                    .await
                {
                    // Harmless if it never succeeds: the janitor drops these records once
                    // they expire, finding their files published.
                    tracing::warn!(error = %e, "could not remove finished write registrations");
                    let mut q = queue.lock().expect("finished writes");
                    if q.0.len() < 100_000 {
                        q.0.extend(batch);
                    }
                }
            }
        });
    }

    /// Forgets a registration.
    pub async fn remove_write(&self, id: ObjectId) -> mongodb::error::Result<()> {
        self.writes.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// The file ids of every registered write of a bucket (live or not yet reaped).
    pub async fn registered_file_ids(&self, bucket: &str) -> mongodb::error::Result<Vec<Bson>> {
        let docs: Vec<Document> = self
            .writes
            .find(doc! {"bucket": bucket})
            .projection(doc! {"fileId": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|mut d| d.remove("fileId"))
            .collect())
    }

    /// Registrations whose writer stopped heart-beating (for fsck).
    pub async fn stale_writes(&self) -> mongodb::error::Result<u64> {
        self.writes
            .count_documents(doc! {"expires": {"$lt": self.clock.now()}})
            .await
    }

    /// Whether a write into `bucket` is registered and alive.
    pub async fn has_live_writes(&self, bucket: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .writes
            .find_one(doc! {"bucket": bucket, "expires": {"$gte": self.clock.now()}, "reaping": {"$ne": true}})
            .await?
            .is_some())
    }
}

fn dead_from(d: &Document) -> Option<DeadWrite> {
    Some(DeadWrite {
        id: d.get_object_id("_id").ok()?,
        bucket: d.get_str("bucket").ok()?.to_owned(),
        file_id: d.get("fileId")?.clone(),
    })
}

impl WriteReg {
    /// The fence before publishing: `true` while this registration is alive and unclaimed.
    /// Within half a lease of the last renewal it answers without a round trip.
    pub async fn fence(&self) -> mongodb::error::Result<bool> {
        if self.renewed.lock().expect("renewed").elapsed() < self.ttl / 2 {
            return Ok(true);
        }
        self.meta
            .renew_write(self.id, self.ttl, &self.renewed)
            .await
    }

    /// Ends the registration after the write was published or its chunks deleted (the record
    /// goes with the next batch).
    pub async fn done(self) {
        self.heartbeat.abort();
        self.meta.forget_write_later(self.id);
    }
}

impl Drop for WriteReg {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}
