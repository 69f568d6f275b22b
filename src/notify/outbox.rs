//! The outbox (`__notify_outbox`): the durable queue of events, one document per event and
//! target, written before the request that made the change is answered.
//!
//! A document is `{_id, t: "<id>:<type>", seq, k: key, b: bucket, at, body}`:
//! - `_id` (an ObjectId) is the event's stable id, sent with it for deduplication;
//! - `seq` orders the events of one key (the record's sequencer, see [`crate::notify`]);
//! - `at` is the database's time when it was queued, for the age bound and the metrics;
//! - `body` is the record, already in its final JSON.
//!
//! Writes are group-committed: the events of requests that arrive while an insert is under
//! way wait for it and go together in the next `insert_many`, so that 32 concurrent PUTs pay
//! one or two inserts between them, not 32 (the throughput with notifications on stays near
//! the throughput with them off). An event is acknowledged to its request only once its
//! insert is, with the database's write concern.
//!
//! Undeliverable events (older than the age bound, past the size bound, or for a target that
//! no longer exists) move to `__notify_dead`, copied first and then removed by id, so a crash
//! between the two leaves a copy in both, never in neither.

use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::Collection;
use tokio::sync::oneshot;

/// Ids per `$in` when events are removed (all slices in one command): the local database
/// spent 0.14 ms of CPU per event removed in slices of 16, against 0.20 in slices of 64 and
/// 0.49 in one `$in` of 256 (a round's window). mongod takes up to 100,000 statements in one
/// command; a census sweep of 10,000 events sends 625.
const REMOVE_SLICE: usize = 16;

/// Events one insert carries at most.
const INSERT_BATCH: usize = 1000;

/// The outbox and its dead-letter collection.
#[derive(Clone)]
pub struct Outbox {
    /// The queue.
    pub queue: Collection<Document>,
    /// Where undeliverable events go.
    pub dead: Collection<Document>,
    pending: Arc<Mutex<Pending>>,
}

#[derive(Default)]
struct Pending {
    docs: Vec<Document>,
    waiters: Vec<oneshot::Sender<Result<(), String>>>,
    flushing: bool,
}

impl Outbox {
    /// The outbox of `db`.
    pub fn new(db: &mongodb::Database) -> Self {
        Self {
            queue: db.collection("__notify_outbox"),
            dead: db.collection("__notify_dead"),
            pending: Arc::default(),
        }
    }

    /// The index the dispatcher reads by (a target's events in order).
    pub async fn ensure_indexes(&self) -> mongodb::error::Result<()> {
        let idx = mongodb::IndexModel::builder()
            .keys(doc! {"t": 1, "seq": 1, "_id": 1})
            .build();
        self.queue.create_index(idx).await?;
        Ok(())
    }

    /// Queues events, returning once they are durable (or the insert failed). Concurrent
    /// calls share inserts (see the module documentation).
    pub async fn push(&self, docs: Vec<Document>) -> mongodb::error::Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            p.docs.extend(docs);
            p.waiters.push(tx);
            !std::mem::replace(&mut p.flushing, true)
        };
        if start {
            // A task of its own: once queued, the insert finishes even if the request that
            // started it is dropped (its client gone).
            let me = self.clone();
            tokio::spawn(async move { me.flush().await });
        }
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(mongodb::error::Error::custom(e)),
            Err(_) => Err(mongodb::error::Error::custom(
                "the outbox insert was dropped",
            )),
        }
    }

    async fn flush(&self) {
        loop {
            let (docs, waiters) = {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                if p.docs.is_empty() {
                    p.flushing = false;
                    return;
                }
                (std::mem::take(&mut p.docs), std::mem::take(&mut p.waiters))
            };
            let mut result = Ok(());
            for slice in docs.chunks(INSERT_BATCH) {
                if let Err(e) = self.queue.insert_many(slice.to_vec()).await {
                    result = Err(e.to_string());
                    break;
                }
            }
            crate::metrics::notify_outbox_insert(docs.len());
            for w in waiters {
                let _ = w.send(result.clone());
            }
        }
    }

    /// The first `limit` events of a target, in order.
    pub async fn head(&self, target: &str, limit: i64) -> mongodb::error::Result<Vec<Document>> {
        self.queue
            .find(doc! {"t": target})
            .sort(doc! {"t": 1, "seq": 1, "_id": 1})
            .limit(limit)
            .await?
            .try_collect()
            .await
    }

    /// The first `limit` events of a target, in order, leaving out the keys in `skip`
    /// (`(bucket, key)`, held back after a failure).
    pub async fn head_skipping(
        &self,
        target: &str,
        limit: i64,
        skip: &[(&str, &str)],
    ) -> mongodb::error::Result<Vec<Document>> {
        if skip.is_empty() {
            return self.head(target, limit).await;
        }
        let held: Vec<Document> = skip.iter().map(|(b, k)| doc! {"b": *b, "k": *k}).collect();
        self.queue
            .find(doc! {"t": target, "$nor": held})
            .sort(doc! {"t": 1, "seq": 1, "_id": 1})
            .limit(limit)
            .await?
            .try_collect()
            .await
    }

    /// Removes delivered events by id, in one command.
    pub async fn remove(&self, ids: &[Bson]) -> mongodb::error::Result<u64> {
        crate::storage::gridfs::batch::delete_in_slices(
            &self.queue,
            "_id",
            ids,
            &doc! {},
            REMOVE_SLICE,
        )
        .await
    }

    /// The targets that have events queued, with how many each has.
    pub async fn queued_by_target(&self) -> mongodb::error::Result<Vec<(String, i64)>> {
        let docs: Vec<Document> = self
            .queue
            .aggregate([doc! {"$group": {"_id": "$t", "n": {"$sum": 1}}}])
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|d| {
                let t = d.get_str("_id").ok()?.to_owned();
                let n = crate::storage::gridfs::as_i64(d.get("n")?)?;
                Some((t, n))
            })
            .collect())
    }

    /// Moves events to the dead letters, with the reason: copied, then removed by id.
    pub async fn bury(
        &self,
        events: Vec<Document>,
        reason: &str,
        now: DateTime,
    ) -> mongodb::error::Result<u64> {
        if events.is_empty() {
            return Ok(0);
        }
        let ids: Vec<Bson> = events
            .iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        let copies: Vec<Document> = events
            .into_iter()
            .map(|mut d| {
                d.insert("reason", reason);
                d.insert("dead_at", now);
                d
            })
            .collect();
        // A copy already there (a move cut short before its removal) is fine: unordered, and
        // duplicate keys are not failures here.
        if let Err(e) = self.dead.insert_many(copies).ordered(false).await {
            if !crate::storage::meta::is_duplicate_key(&e) {
                return Err(e);
            }
        }
        self.remove(&ids).await
    }

    /// A target's oldest events beyond `keep` (the size bound), or older than `before` (the
    /// age bound): at most `limit` of them.
    pub async fn overdue(
        &self,
        target: &str,
        before: DateTime,
        limit: i64,
    ) -> mongodb::error::Result<Vec<Document>> {
        // Through the sequencer, which is the time in its high bits: a range of the index, not
        // a scan of the target's whole queue.
        let seq_before = before.timestamp_millis() << 20;
        self.queue
            .find(doc! {"t": target, "seq": {"$lt": seq_before}})
            .sort(doc! {"t": 1, "seq": 1, "_id": 1})
            .limit(limit)
            .await?
            .try_collect()
            .await
    }

    /// The oldest `n` events of a target (for the size bound).
    pub async fn oldest(&self, target: &str, n: i64) -> mongodb::error::Result<Vec<Document>> {
        self.head(target, n).await
    }
}
