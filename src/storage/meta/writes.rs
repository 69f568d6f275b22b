//! Write registrations (`__writes`): every write in progress that puts chunks into a bucket
//! (PutObject, CopyObject, POST) writes them under a file id that a registration names, with
//! its bucket, the process that runs it and an expiry in the database's time that a heartbeat
//! extends. A registration that expired belongs to a writer that died (or lost the database
//! for longer than the lease): the janitor reaps it, deleting the chunks of each of its file
//! ids unless they were published (a files document or a part record with that id exists).
//!
//! **Pools.** One registration names [`POOL_SIZE`] file ids, registered together before any
//! of them is used: a process keeps a pool per bucket and hands its ids out to writes, so a
//! write costs no round trip of its own to register (a small PUT is two commands: the
//! revision lookup, then the chunk and files document together). One pool per bucket is
//! registered at a time: when a pool runs out under many concurrent writes, they wait for the one new pool
//! rather than each registering its own (32 writers once registered 32 pools of 64 ids, 31
//! of them orphaned, about one insert and one delete for every six small PUTs). A pool's document lives while it has ids to hand out
//! or writes in progress; it is removed (in a batch, within [`FLUSH_EVERY`]) once every id
//! was used and finished, or after [`POOL_IDLE`] without a write in progress. Until then it
//! names published files too, which is harmless: the janitor only reaps unpublished ids.
//!
//! Reaping and publishing exclude each other without transactions: the janitor first claims
//! an expired registration (`reaping: true`, set only while it is expired), and a writer
//! *fences* before it publishes, renewing its pool's registration only if it is not claimed.
//! A writer whose registration was claimed publishes nothing. A fence within half a lease of
//! the last renewal needs no round trip: this process's monotonic clock only has to measure
//! elapsed time, never agree with another instance's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

use super::MetaStore;

/// How often the registrations of finished pools are removed.
pub const FLUSH_EVERY: Duration = Duration::from_millis(100);
/// How many file ids one registration names.
pub const POOL_SIZE: usize = 64;
/// A pool without a write in progress for this long is retired (so that DeleteBucket, which
/// waits for live registrations, never waits on an idle one for long).
pub const POOL_IDLE: Duration = Duration::from_secs(1);

/// Registrations of finished pools waiting for their batch removal, and whether the task
/// that removes them runs.
#[derive(Clone, Debug, Default)]
pub(super) struct FinishedWrites(Arc<Mutex<(Vec<ObjectId>, bool)>>);

/// This process's registration pools, by bucket, and per bucket the gate its new pools are
/// registered through one at a time (see [`Gate`]).
#[derive(Clone, Debug, Default)]
pub(super) struct Pools(
    Arc<Mutex<HashMap<String, Arc<Pool>>>>,
    Arc<Mutex<HashMap<String, Gate>>>,
);

/// A bucket's pool registrations, one at a time, with the error of its last one that failed
/// and when.
type Gate = Arc<tokio::sync::Mutex<Option<(Instant, mongodb::error::Error)>>>;

/// One registration document and the ids it still has to hand out.
#[derive(Debug)]
struct Pool {
    /// The registration's `_id`.
    id: ObjectId,
    bucket: String,
    ttl: Duration,
    /// When the registration was last renewed (this process's monotonic clock).
    renewed: Mutex<Instant>,
    state: Mutex<PoolState>,
}

#[derive(Debug)]
struct PoolState {
    free: Vec<ObjectId>,
    in_use: usize,
    /// No id is handed out any more: the document is being removed, or the janitor claimed
    /// it (`lost`).
    retired: bool,
    lost: bool,
    /// A write was dropped unfinished: the registration is left to expire (after the pool's
    /// other writes end) so that the janitor reaps that write's chunks.
    abandoned: bool,
    idle_since: Instant,
}

/// A registered write. Call [`WriteReg::done`] once its chunks are published (or deleted);
/// dropping it unfinished leaves its id registered, for the janitor should this process die.
#[derive(Debug)]
pub struct WriteReg {
    file_id: ObjectId,
    pool: Arc<Pool>,
    meta: MetaStore,
    finished: bool,
}

/// A registration whose writer is gone.
#[derive(Clone, Debug)]
pub struct DeadWrite {
    /// The registration's id.
    pub id: ObjectId,
    /// Bucket.
    pub bucket: String,
    /// The file ids it names.
    pub file_ids: Vec<Bson>,
}

impl Pool {
    /// Hands out an id, unless the pool is spent or retired.
    fn take(&self) -> Option<ObjectId> {
        let mut s = self.state.lock().expect("pool");
        if s.retired {
            return None;
        }
        let id = s.free.pop()?;
        s.in_use += 1;
        Some(id)
    }

    /// A write ended; `true` when the pool is finished with (spent and idle): the caller
    /// removes its document.
    fn release(&self) -> bool {
        let mut s = self.state.lock().expect("pool");
        s.in_use -= 1;
        if s.in_use == 0 {
            s.idle_since = Instant::now();
            if s.free.is_empty() && !s.retired {
                s.retired = true;
                return true;
            }
        }
        false
    }

    /// Retires the pool if no write is in progress and it was idle for `idle`.
    fn retire_if_idle(&self, idle: Duration) -> bool {
        let mut s = self.state.lock().expect("pool");
        if s.retired || s.in_use > 0 || s.idle_since.elapsed() < idle {
            return false;
        }
        s.retired = true;
        true
    }

    /// Whether the heartbeat should stop: retired, except an abandoned pool whose other
    /// writes are still in progress (they need the registration alive).
    fn is_done(&self) -> bool {
        let s = self.state.lock().expect("pool");
        s.retired && !(s.abandoned && s.in_use > 0)
    }
}

impl MetaStore {
    /// Registers a write of chunks into `bucket`: an id from this process's pool for the
    /// bucket, registering a new pool (one round trip) when there is none with ids left.
    pub async fn register_write(&self, bucket: &str) -> mongodb::error::Result<WriteReg> {
        loop {
            if let Some(reg) = self.take_from_pool(bucket) {
                return Ok(reg);
            }
            let asked = Instant::now();
            crate::failpoint::hit("writes.pool_wait", bucket).await;
            let gate = self
                .pools
                .1
                .lock()
                .expect("gates")
                .entry(bucket.to_owned())
                .or_default()
                .clone();
            let outcome = self.at_gate(bucket, gate.clone(), asked).await;
            // Whoever leaves the gate last forgets it.
            drop(gate);
            self.prune_gate(bucket);
            match outcome? {
                Some(reg) => return Ok(reg),
                None => continue,
            }
        }
    }

    /// [`MetaStore::register_write`] through `bucket`'s gate: a registration from the pool
    /// another writer registered meanwhile, or `None` once this one registered a new pool.
    async fn at_gate(
        &self,
        bucket: &str,
        gate: Gate,
        asked: Instant,
    ) -> mongodb::error::Result<Option<WriteReg>> {
        let mut gate = gate.lock_owned().await;
        // Another writer may have registered one while this one waited.
        if let Some(reg) = self.take_from_pool(bucket) {
            return Ok(Some(reg));
        }
        // One that failed while this one waited: the same answer, not one more wait each
        // (a database that is down would otherwise hold every writer for a timeout in turn).
        if let Some((at, e)) = gate.as_ref() {
            if *at >= asked {
                return Err(e.clone());
            }
        }
        crate::failpoint::hit("writes.new_pool", bucket).await;
        match self.new_pool(bucket).await {
            Ok(()) => {
                *gate = None;
                Ok(None)
            }
            Err(e) => {
                *gate = Some((Instant::now(), e.clone()));
                Err(e)
            }
        }
    }

    /// Forgets `bucket`'s gate when no writer holds or waits for it (a process that wrote to
    /// many buckets keeps gates only for those being registered; a writer dropped while it
    /// waited leaves its bucket's to the next one through).
    fn prune_gate(&self, bucket: &str) {
        let mut gates = self.pools.1.lock().expect("gates");
        if gates.get(bucket).is_some_and(|g| Arc::strong_count(g) == 1) {
            gates.remove(bucket);
        }
    }

    /// A registration from this process's pool for `bucket`, if it has ids left.
    fn take_from_pool(&self, bucket: &str) -> Option<WriteReg> {
        let pool = self.pools.0.lock().expect("pools").get(bucket).cloned()?;
        let file_id = pool.take()?;
        Some(WriteReg {
            file_id,
            pool,
            meta: self.clone(),
            finished: false,
        })
    }

    /// Registers a pool of ids for `bucket` and makes it the one new writes take from.
    async fn new_pool(&self, bucket: &str) -> mongodb::error::Result<()> {
        let id = ObjectId::new();
        let ttl = self.write_ttl;
        let free: Vec<ObjectId> = (0..POOL_SIZE).map(|_| ObjectId::new()).collect();
        let at = Instant::now();
        self.writes
            .insert_one(doc! {
                "_id": id, "bucket": bucket, "fileIds": free.clone(),
                "process": self.process_id.as_ref(), "started": self.clock.now(),
                "expires": self.clock.after(ttl),
            })
            .await?;
        let pool = Arc::new(Pool {
            id,
            bucket: bucket.to_owned(),
            ttl,
            renewed: Mutex::new(at),
            state: Mutex::new(PoolState {
                free,
                in_use: 0,
                retired: false,
                lost: false,
                abandoned: false,
                idle_since: Instant::now(),
            }),
        });
        self.pools
            .0
            .lock()
            .expect("pools")
            .insert(bucket.to_owned(), pool.clone());
        let meta = self.clone();
        crate::background::spawn("write-pool", async move { meta.tend_pool(pool).await });
        Ok(())
    }

    /// A pool's heartbeat: renews its registration every third of a lease while it lives, and
    /// retires it once idle.
    async fn tend_pool(&self, pool: Arc<Pool>) {
        let tick = (pool.ttl / 3).min(POOL_IDLE / 4);
        loop {
            tokio::time::sleep(tick).await;
            if pool.is_done() {
                return;
            }
            if pool.retire_if_idle(POOL_IDLE) {
                self.drop_pool(&pool);
                return;
            }
            if pool.renewed.lock().expect("renewed").elapsed() < pool.ttl / 3 {
                continue;
            }
            // (A test stops the heartbeat here to let a registration expire under a write.)
            crate::failpoint::hit("writes.heartbeat", &pool.bucket).await;
            match self.renew_pool(&pool).await {
                Ok(true) => {}
                Ok(false) => {
                    // Claimed by the janitor: its unpublished writes publish nothing.
                    let mut s = pool.state.lock().expect("pool");
                    s.retired = true;
                    s.lost = true;
                    drop(s);
                    self.unmap_pool(&pool);
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "could not renew a write registration"),
            }
        }
    }

    /// Removes a retired pool from the map and queues its document's removal.
    fn drop_pool(&self, pool: &Arc<Pool>) {
        self.unmap_pool(pool);
        self.forget_write_later(pool.id);
    }

    fn unmap_pool(&self, pool: &Arc<Pool>) {
        let mut pools = self.pools.0.lock().expect("pools");
        if pools
            .get(&pool.bucket)
            .is_some_and(|p| Arc::ptr_eq(p, pool))
        {
            pools.remove(&pool.bucket);
        }
    }

    /// Retires this process's pool for `bucket` now if no write uses it, and removes its
    /// registration (DeleteBucket waits for live registrations).
    pub async fn retire_idle_pool(&self, bucket: &str) -> mongodb::error::Result<()> {
        let pool = self.pools.0.lock().expect("pools").get(bucket).cloned();
        if let Some(pool) = pool {
            if pool.retire_if_idle(Duration::ZERO) {
                self.unmap_pool(&pool);
                self.remove_write(pool.id).await?;
            }
        }
        Ok(())
    }

    /// Extends a pool's registration unless the janitor claimed it; `false` when it is gone.
    async fn renew_pool(&self, pool: &Pool) -> mongodb::error::Result<bool> {
        let at = Instant::now();
        let ok = self
            .writes
            .update_one(
                doc! {"_id": pool.id, "reaping": {"$ne": true}},
                doc! {"$set": {"expires": self.clock.after(pool.ttl)}},
            )
            .await?
            .matched_count
            == 1;
        if ok {
            *pool.renewed.lock().expect("renewed") = at;
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
        crate::background::spawn("finished-writes", async move {
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
            .projection(doc! {"fileIds": 1, "fileId": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().flat_map(file_ids_of).collect())
    }

    /// Registrations whose writer stopped heart-beating (for fsck).
    pub async fn stale_writes(&self) -> mongodb::error::Result<u64> {
        self.writes
            .count_documents(doc! {"expires": {"$lt": self.clock.now()}})
            .await
    }

    /// Whether the write of `file_id` may still be in progress: a registration
    /// that names it is alive (or not yet reaped).
    pub async fn write_in_progress(&self, file_id: &Bson) -> mongodb::error::Result<bool> {
        Ok(self
            .writes
            // The ids are fresh ObjectIds, so the id alone finds the registration (and one
            // indexed field keeps every server on the index).
            .find_one(doc! {"fileIds": file_id.clone()})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
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

/// The ids a registration names: a pool's `fileIds`, or the single `fileId` of a
/// registration written before pools (a rolling upgrade may leave some for the janitor).
fn file_ids_of(d: &Document) -> Vec<Bson> {
    match (d.get_array("fileIds"), d.get("fileId")) {
        (Ok(ids), _) => ids.clone(),
        (_, Some(id)) => vec![id.clone()],
        _ => Vec::new(),
    }
}

fn dead_from(d: &Document) -> Option<DeadWrite> {
    Some(DeadWrite {
        id: d.get_object_id("_id").ok()?,
        bucket: d.get_str("bucket").ok()?.to_owned(),
        file_ids: file_ids_of(d),
    })
}

impl WriteReg {
    /// The file id this write's chunks carry.
    pub fn file_id(&self) -> ObjectId {
        self.file_id
    }

    /// The fence before publishing: `true` while this registration is alive and unclaimed.
    /// Within half a lease of the last renewal it answers without a round trip.
    pub async fn fence(&self) -> mongodb::error::Result<bool> {
        if self.pool.state.lock().expect("pool").lost {
            return Ok(false);
        }
        if self.pool.renewed.lock().expect("renewed").elapsed() < self.pool.ttl / 2 {
            return Ok(true);
        }
        self.meta.renew_pool(&self.pool).await
    }

    /// Ends the write after it was published or its chunks deleted. The pool's document goes
    /// (in the next batch) once every id of it was used and finished.
    pub async fn done(mut self) {
        self.finished = true;
        if self.pool.release() {
            self.meta.drop_pool(&self.pool);
        }
    }
}

impl Drop for WriteReg {
    /// An unfinished write (an error or a cancelled request) leaves its chunks to the janitor:
    /// its pool hands out no more ids, and its registration is no longer renewed once the
    /// pool's other writes end, so it expires and is reaped.
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        let mut s = self.pool.state.lock().expect("pool");
        s.in_use -= 1;
        s.retired = true;
        s.abandoned = true;
        drop(s);
        self.meta.unmap_pool(&self.pool);
    }
}
