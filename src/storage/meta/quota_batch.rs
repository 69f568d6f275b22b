//! Group commit of quota holds and their conversions (issue 62's cost): every metered write
//! takes a hold on its bucket's usage document and converts it when it publishes, two
//! updates of one document. Sent one by one, they doubled what a small PUT costs the
//! database. Here, the holds (and, apart, the conversions) that wait for one bucket while
//! an update is in flight go together in the next one: one conditional update for all of
//! them, which takes effect for all or for none.
//!
//! - **Holds:** one update pushes every waiting hold if the room fits them all. When it does
//!   not, each is tried on its own, in arrival order, so a write that fits alone is never
//!   refused for the company it kept.
//! - **Conversions:** one update settles every waiting hold if each is stored as its writer
//!   knows it (bytes and objects); else each is settled on its own (`settle_hold`, which
//!   reads what is stored).
//!
//! A batch runs in a task of its own, not in a request's future, so a client that goes away
//! cannot stall the others. A hold taken for a request that went away meanwhile is given
//! back at once. A lone request costs what it did before: its own update, no waiting.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Bson, Document};
use tokio::sync::oneshot;

use super::quota::{hold_lease, room, Hold};
use super::*;

type Reply = oneshot::Sender<mongodb::error::Result<bool>>;
/// A hold's answer: the hold as stored, `None` when it did not fit.
type HoldReply = oneshot::Sender<mongodb::error::Result<Option<Hold>>>;
/// A hold sent with its bucket's next batch, and its answer to come.
pub type PendingHold = oneshot::Receiver<mongodb::error::Result<Option<Hold>>>;

/// The waiting holds and conversions, by bucket.
#[derive(Clone, Default)]
pub(super) struct UsageBatches(Arc<Mutex<HashMap<String, Queues>>>);

impl std::fmt::Debug for UsageBatches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UsageBatches")
    }
}

#[derive(Default)]
struct Queues {
    holds: Vec<(Hold, HoldReply)>,
    holding: bool,
    /// Holds to settle, with the bytes and objects they publish.
    settles: Vec<(Hold, i64, i64, Reply)>,
    settling: bool,
}

impl MetaStore {
    /// [`MetaStore::hold`], sent together with the other holds waiting for the bucket.
    pub async fn hold_batched(
        &self,
        bucket: &str,
        id: &str,
        bytes: i64,
        objects: i64,
    ) -> mongodb::error::Result<Option<Hold>> {
        let rx = self.hold_queued(bucket, id, bytes, objects).await;
        rx.await.unwrap_or_else(|_| Err(gone()))
    }

    /// [`MetaStore::hold_batched`] without waiting for its answer: the hold is sent with the
    /// next batch whether or not the receiver is ever awaited. A receiver dropped before its
    /// answer gives the hold back (see `answer_hold`).
    pub async fn hold_queued(
        &self,
        bucket: &str,
        id: &str,
        bytes: i64,
        objects: i64,
    ) -> PendingHold {
        let (tx, rx) = oneshot::channel();
        // (Its lease is set when its batch goes.)
        let hold = Hold::new(id, bytes, objects, mongodb::bson::DateTime::now());
        let lead = {
            let mut all = self.usage_batches.0.lock().expect("usage batches");
            let q = all.entry(bucket.to_owned()).or_default();
            q.holds.push((hold, tx));
            !std::mem::replace(&mut q.holding, true)
        };
        // (Where a test counts the holds that wait for a batch in flight.)
        crate::failpoint::hit("quota.hold_queued", bucket).await;
        if lead {
            let (me, b) = (self.clone(), bucket.to_owned());
            crate::background::spawn("quota-holds", async move { me.drain_holds(&b).await });
        }
        rx
    }

    /// [`MetaStore::settle_hold`], sent together with the other settles waiting for the
    /// bucket, without waiting for it: a published write's conversion, which changes no
    /// figure a limit is checked against (the hold already counts as used), so its request
    /// need not wait. Should it fail or the process die first, the hold lapses
    /// and the janitor counts the object.
    pub async fn settle_later(&self, bucket: &str, hold: &Hold, bytes: i64, objects: i64) {
        drop(self.queue_settle(bucket, hold, bytes, objects).await);
    }

    async fn queue_settle(
        &self,
        bucket: &str,
        hold: &Hold,
        bytes: i64,
        objects: i64,
    ) -> oneshot::Receiver<mongodb::error::Result<bool>> {
        let (tx, rx) = oneshot::channel();
        let lead = {
            let mut all = self.usage_batches.0.lock().expect("usage batches");
            let q = all.entry(bucket.to_owned()).or_default();
            q.settles.push((hold.clone(), bytes, objects, tx));
            !std::mem::replace(&mut q.settling, true)
        };
        crate::failpoint::hit("quota.settle_queued", bucket).await;
        if lead {
            let (me, b) = (self.clone(), bucket.to_owned());
            crate::background::spawn("quota-settles", async move { me.drain_settles(&b).await });
        }
        rx
    }

    async fn drain_holds(&self, bucket: &str) {
        loop {
            let batch = {
                let mut all = self.usage_batches.0.lock().expect("usage batches");
                let q = all.entry(bucket.to_owned()).or_default();
                if q.holds.is_empty() {
                    q.holding = false;
                    if !q.settling && q.settles.is_empty() {
                        all.remove(bucket);
                    }
                    return;
                }
                std::mem::take(&mut q.holds)
            };
            // (Where a test holds a batch in flight while others queue.)
            crate::failpoint::hit("quota.hold_batch", bucket).await;
            self.apply_holds(bucket, batch).await;
        }
    }

    async fn drain_settles(&self, bucket: &str) {
        loop {
            // Under load, conversions wait a little for company: each update of the usage
            // document costs the database about what a small PUT does (the local one), and
            // a conversion changes no figure a limit is checked against.
            if self.writes_in_flight(bucket) >= 2 && self.settles_waiting(bucket) < SETTLE_BATCH {
                tokio::time::sleep(SETTLE_LINGER).await;
            }
            let batch = {
                let mut all = self.usage_batches.0.lock().expect("usage batches");
                let q = all.entry(bucket.to_owned()).or_default();
                if q.settles.is_empty() {
                    q.settling = false;
                    if !q.holding && q.holds.is_empty() {
                        all.remove(bucket);
                    }
                    return;
                }
                std::mem::take(&mut q.settles)
            };
            crate::failpoint::hit("quota.settle_batch", bucket).await;
            self.apply_settles(bucket, batch).await;
        }
    }

    async fn apply_holds(&self, bucket: &str, mut batch: Vec<(Hold, HoldReply)>) {
        if batch.len() > 1 {
            let (mut bytes, mut objects) = (0, 0);
            let exp = self.clock.after(hold_lease(bucket));
            batch = batch
                .into_iter()
                .map(|(h, tx)| (Hold::new(&h.id, h.bytes, h.objects, exp), tx))
                .collect();
            let mut pushed = Vec::new();
            for (h, _) in &batch {
                bytes += h.bytes;
                objects += h.objects;
                pushed.push(h.stored.clone());
            }
            let filter = doc! {"holds": {"$nin": pushed.clone()}};
            let update = doc! {
                "$inc": {"reservedBytes": bytes, "reservedObjects": objects},
                "$push": {"holds": {"$each": pushed}},
            };
            match self
                .change_usage(bucket, filter, Some(room(bytes, objects)), update)
                .await
            {
                Ok(true) => {
                    for (h, tx) in batch {
                        self.answer_hold(bucket, tx, Ok(Some(h)));
                    }
                    return;
                }
                // Not all of them fit: each on its own.
                Ok(false) => {}
                Err(e) => {
                    for (_, tx) in batch {
                        self.answer_hold(bucket, tx, Err(e.clone()));
                    }
                    return;
                }
            }
        }
        for (h, tx) in batch {
            let r = self.hold(bucket, &h.id, h.bytes, h.objects).await;
            self.answer_hold(bucket, tx, r);
        }
    }

    /// Answers a hold's request; one taken for a request that went away is given back.
    fn answer_hold(&self, bucket: &str, tx: HoldReply, r: mongodb::error::Result<Option<Hold>>) {
        if let Err(Ok(Some(h))) = tx.send(r) {
            let (me, b) = (self.clone(), bucket.to_owned());
            crate::background::spawn("quota-release", async move {
                if let Err(e) = me.settle_hold(&b, &h, 0, 0).await {
                    tracing::warn!(bucket = b, error = %e, "could not release a quota hold; it lapses");
                }
            });
        }
    }

    async fn apply_settles(&self, bucket: &str, batch: Vec<(Hold, i64, i64, Reply)>) {
        if batch.len() > 1 {
            let (mut held, mut held_objects, mut bytes, mut objects) = (0, 0, 0, 0);
            let mut each: Vec<Bson> = Vec::new();
            for (h, b, o, _) in &batch {
                held += h.bytes;
                held_objects += h.objects;
                bytes += b;
                objects += o;
                each.push(h.stored.clone());
            }
            let filter: Document = doc! {"holds": {"$all": each.clone()}};
            let update = doc! {
                "$pullAll": {"holds": each},
                "$inc": {"reservedBytes": -held, "reservedObjects": -held_objects,
                         "bytes": bytes, "objects": objects},
            };
            match self.change_usage(bucket, filter, None, update).await {
                Ok(true) => {
                    for (.., tx) in batch {
                        let _ = tx.send(Ok(true));
                    }
                    return;
                }
                // One of them is not as its writer knows it (grown by an update whose
                // answer was lost, or settled by the janitor): each on its own.
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(bucket, error = %e, "could not count published writes; the janitor will");
                    for (.., tx) in batch {
                        let _ = tx.send(Err(e.clone()));
                    }
                    return;
                }
            }
        }
        for (h, b, o, tx) in batch {
            let r = self.settle_hold(bucket, &h, b, o).await;
            if let Err(e) = &r {
                tracing::warn!(bucket, error = %e, "could not count a published write; the janitor will");
            }
            let _ = tx.send(r);
        }
    }
}

/// How long conversions wait for others under load, unless [`SETTLE_BATCH`] are waiting.
const SETTLE_LINGER: std::time::Duration = std::time::Duration::from_millis(100);
/// Conversions that go at once without waiting.
const SETTLE_BATCH: usize = 32;

impl MetaStore {
    fn settles_waiting(&self, bucket: &str) -> usize {
        let all = self.usage_batches.0.lock().expect("usage batches");
        all.get(bucket).map_or(0, |q| q.settles.len())
    }
}

/// The answer of a batch that ended without answering (its task panicked).
pub fn gone() -> mongodb::error::Error {
    mongodb::error::Error::custom("a quota batch ended without an answer")
}
