//! The outbox (`__notify_outbox`): the durable queue of events, written before the request
//! that made the change is answered.
//!
//! Writes are group-committed: the events of requests that arrive while an insert is under
//! way wait for it, and go together in the next insert as **one document per target**:
//! `{_id, t: "<id>:<type>", seq, at, ev: [{i, s, k: key, b: bucket, at, body}]}`, where
//! - `i` (an ObjectId) is the event's stable id, sent with it for deduplication;
//! - `s` is the event's sequencer (see [`crate::notify`]), which orders the events of a key,
//!   taken as the event joins the queue of the group commit (see [`Outbox::push`]);
//! - `at` is the database's time when it was queued, for the age bound and the metrics;
//! - `body` is the record, already in its final JSON;
//! - the group's own `seq` is taken when it is written, after every event in it got its
//!   sequencer, so a group written later sorts later: an event acknowledged before another
//!   request made its change is in an earlier group than that change's event.
//!
//! Why groups: on the local database an insert, a read and a removal cost about the same per
//! document whatever its size, and each `insert` statement has a fixed cost of its own.
//! One document per event (each in its own statement, or riding in the object's
//! `bulkWrite`) cost the database about 2 ms of CPU per event against 3.2 ms for the 4 KiB
//! PUT itself; a group of events costs one document and one statement between them. An event
//! is acknowledged to its request only once its group's insert is, with the database's write
//! concern. Delivered events leave a group by `$pull`, and a group with none left is removed
//! (see [`window`]). Listen records stay one document each (listeners follow them by change
//! stream, see `notify::listen`), and a single-event document written by an earlier version
//! is still read and delivered.
//!
//! Undeliverable events (older than the age bound, past the size bound, or for a target that
//! no longer exists) move to `__notify_dead`, copied first and then removed by id, so a crash
//! between the two leaves a copy in both, never in neither.

pub mod window;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime, Document};
use mongodb::Collection;
use tokio::sync::oneshot;

use super::sequencer::Sequencer;
pub use window::Window;

/// Ids per `$in` when events are removed (all slices in one command): the local database
/// spent 0.14 ms of CPU per event removed in slices of 16, against 0.20 in slices of 64 and
/// 0.49 in one `$in` of 256 (a round's window). mongod takes up to 100,000 statements in one
/// command; a census sweep of 10,000 events sends 625.
const REMOVE_SLICE: usize = 16;

/// The longest a group commit waits for more requests' events (see `Outbox::flush`).
const LINGER_MAX: std::time::Duration = std::time::Duration::from_millis(20);

/// The events after which a window of the queue takes no further document.
pub const WINDOW_EVENTS: usize = 256;

/// Documents one insert carries at most.
const INSERT_BATCH: usize = 1000;

/// Events one group holds at most, and the most bytes of records (a group is one document,
/// which the database caps at 16 MiB).
const GROUP_EVENTS: usize = 256;
const GROUP_BYTES: usize = 4 << 20;

/// The order of a queue.
fn order() -> Document {
    doc! {"t": 1, "seq": 1, "_id": 1}
}

/// The outbox and its dead-letter collection.
#[derive(Clone)]
pub struct Outbox {
    /// The queue.
    pub queue: Collection<Document>,
    /// Where undeliverable events go.
    pub dead: Collection<Document>,
    pending: Arc<Mutex<Pending>>,
    seq: Arc<Sequencer>,
}

#[derive(Default)]
struct Pending {
    docs: Vec<Document>,
    waiters: Vec<oneshot::Sender<Result<(), String>>>,
    flushing: bool,
}

impl Outbox {
    /// The outbox of `db`; groups are stamped by `seq`.
    pub fn new(db: &mongodb::Database, seq: Arc<Sequencer>) -> Self {
        Self {
            queue: db.collection("__notify_outbox"),
            dead: db.collection("__notify_dead"),
            pending: Arc::default(),
            seq,
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

    /// Queues events (one document each, as `notify::event_doc` makes them), returning once
    /// they are durable (or the insert failed). Concurrent calls share inserts, and a target's
    /// events go in groups (see the module documentation).
    ///
    /// Each document comes with the index of its change among this call's as its `seq` (the
    /// documents of one change, one per target, share it), and its record rendered with
    /// `record::UNSEQUENCED`. Each change is given its sequencer here, under the lock the
    /// group commit takes the queued documents by, and it is written into the records: so a
    /// change sequenced before another is never in a later insert, and the queue's order (the
    /// inserts', then the sequencers' within one) is the sequencers' order. Taken before, a
    /// request that stalled between making its records and queueing them had its older
    /// sequencer committed, and delivered, after a newer one of the same key.
    pub async fn push(&self, docs: Vec<Document>) -> mongodb::error::Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            let mut seqs: Vec<i64> = Vec::new();
            for mut d in docs {
                let change = usize::try_from(d.get_i64("seq").unwrap_or(0)).unwrap_or(0);
                while seqs.len() <= change {
                    seqs.push(self.seq.next());
                }
                let seq = seqs[change];
                d.insert("seq", seq);
                if let Some(Bson::String(body)) = d.get_mut("body") {
                    super::record::set_sequencer(body, seq);
                }
                p.docs.push(d);
            }
            p.waiters.push(tx);
            !std::mem::replace(&mut p.flushing, true)
        };
        if start {
            // A task of its own: once queued, the insert finishes even if the request that
            // started it is dropped (its client gone).
            let me = self.clone();
            tokio::spawn(async move { me.flush().await });
        }
        crate::failpoint::hit("notify.outbox_queued", &self.queue.namespace().db).await;
        match rx.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(mongodb::error::Error::custom(e)),
            Err(_) => Err(mongodb::error::Error::custom(
                "the outbox insert was dropped",
            )),
        }
    }

    async fn flush(&self) {
        // How long the last insert took, when it carried more than one request's events.
        let mut busy: Option<std::time::Duration> = None;
        loop {
            if let Some(d) = busy {
                // Requests are arriving faster than inserts finish: let the next group gather
                // for about one more insert's time (up to LINGER_MAX). Each document costs the
                // database about the same to insert and to remove whatever its size, so twice
                // the events per group is half the outbox's cost per event; a request writing
                // alone never waits here.
                tokio::time::sleep(d.min(LINGER_MAX)).await;
            }
            let (docs, waiters) = {
                let mut p = self.pending.lock().unwrap_or_else(|e| e.into_inner());
                if p.docs.is_empty() {
                    p.flushing = false;
                    return;
                }
                (std::mem::take(&mut p.docs), std::mem::take(&mut p.waiters))
            };
            crate::failpoint::hit("notify.outbox_insert", &self.queue.namespace().db).await;
            let events = docs.len();
            let docs = self.grouped(docs);
            let started = std::time::Instant::now();
            let mut result = Ok(());
            for slice in docs.chunks(INSERT_BATCH) {
                if let Err(e) = self.queue.insert_many(slice.to_vec()).await {
                    result = Err(e.to_string());
                    break;
                }
            }
            if result.is_ok() {
                crate::metrics::notify_outbox_insert(events, docs.len());
            }
            busy = (waiters.len() > 1).then(|| started.elapsed());
            for w in waiters {
                let _ = w.send(result.clone());
            }
        }
    }

    /// The documents to insert for `docs`: each target's events in groups (in the order they
    /// came), listen records as they are. Each group is stamped with a sequencer taken now,
    /// after its events took theirs.
    fn grouped(&self, mut docs: Vec<Document>) -> Vec<Document> {
        let mut out = Vec::new();
        let mut groups: Vec<(String, Vec<Document>, usize)> = Vec::new();
        // In sequencer order (requests queue theirs in whatever order they reach the lock),
        // also across the groups one target's events are split into.
        docs.sort_by_key(|d| d.get_i64("seq").unwrap_or(i64::MAX));
        for d in docs {
            let t = d.get_str("t").unwrap_or_default().to_owned();
            if t == super::listen::LISTEN {
                out.push(d);
                continue;
            }
            let size =
                d.get_str("body").map_or(0, str::len) + 2 * d.get_str("k").map_or(0, str::len);
            match groups.iter_mut().rev().find(|(gt, ..)| *gt == t) {
                Some((_, evs, bytes))
                    if evs.len() < GROUP_EVENTS && *bytes + size <= GROUP_BYTES =>
                {
                    evs.push(window::element(&d));
                    *bytes += size;
                }
                _ => groups.push((t, vec![window::element(&d)], size)),
            }
        }
        let at = self.seq.clock().now();
        for (t, evs, _) in groups {
            out.push(doc! {
                "_id": ObjectId::new(),
                "t": t,
                "seq": self.seq.next(),
                "at": at,
                "ev": evs,
            });
        }
        out
    }

    /// The first `limit` documents of a target's queue, in order, leaving out the events of
    /// the keys in `held` (as [`key_of`] names them, held back after a failure): documents
    /// that hold nothing else are not read, so a held key's backlog cannot fill the window.
    pub async fn head(
        &self,
        target: &str,
        limit: i64,
        held: &HashSet<String>,
    ) -> mongodb::error::Result<Window> {
        let mut filter = doc! {"t": target};
        if !held.is_empty() {
            let pairs: Vec<Document> = held
                .iter()
                .filter_map(|bk| bk.split_once('\n'))
                .map(|(b, k)| doc! {"b": b, "k": k})
                .collect();
            let keys: Vec<&String> = held.iter().collect();
            filter.insert(
                "$or",
                vec![
                    doc! {"ev": {"$exists": false}, "$nor": pairs},
                    doc! {"ev": {"$elemMatch": {"bk": {"$nin": keys}}}},
                ],
            );
        }
        // Read in batches of 16 (one command for the usual round of a few groups): a window
        // takes whole documents only up to about
        // `WINDOW_EVENTS` (a round, and the repeats after a failover, stay a few hundred events
        // however large the groups), and what it does not take is not read.
        let mut cursor = self
            .queue
            .find(filter)
            .sort(order())
            .limit(limit)
            .batch_size(16)
            .await?;
        let mut w = Window::default();
        let mut read = 0;
        while w.events.len() < WINDOW_EVENTS {
            let Some(d) = cursor.try_next().await? else {
                break;
            };
            read += 1;
            w.add(d, |e| held.is_empty() || !held.contains(&key_of(e)));
        }
        w.full = read >= limit || w.events.len() >= WINDOW_EVENTS;
        Ok(w)
    }

    /// Whether a target has anything queued.
    pub async fn any(&self, target: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .queue
            .find_one(doc! {"t": target})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }

    /// Removes the events `gone` of `window` (delivered, or copied to the dead letters): the
    /// documents all of whose events went are deleted (in one command), and the rest lose those
    /// events (one more command, only when a round left some of a group behind).
    pub async fn remove(&self, window: &Window, gone: &[Bson]) -> mongodb::error::Result<u64> {
        let r = window.removal(gone);
        if r == window::Removal::default() {
            return Ok(0);
        }
        let mut n = 0;
        if !r.whole.is_empty() {
            crate::storage::gridfs::batch::delete_in_slices(
                &self.queue,
                "_id",
                &r.whole,
                &doc! {},
                REMOVE_SLICE,
            )
            .await?;
            n += r.whole.len() as u64;
        }
        if !r.partial.is_empty() {
            self.queue
                .update_many(
                    doc! {"_id": {"$in": r.partial.clone()}},
                    doc! {"$pull": {"ev": {"i": {"$in": r.pulled.clone()}}}},
                )
                .await?;
            // A group that another removal emptied meanwhile (a dispatcher that lost its lead
            // and has not noticed yet): nothing is left in it to lose.
            self.queue
                .delete_many(doc! {"_id": {"$in": r.partial}, "ev": {"$size": 0}})
                .await?;
            n += r.pulled.len() as u64;
        }
        Ok(n)
    }
    /// The targets that have events queued, with how many events each has.
    pub async fn queued_by_target(&self) -> mongodb::error::Result<Vec<(String, i64)>> {
        let docs: Vec<Document> = self
            .queue
            .aggregate([doc! {"$group": {"_id": "$t", "n": {"$sum": {
                "$cond": [{"$isArray": "$ev"}, {"$size": "$ev"}, 1]
            }}}}])
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

    /// Moves `events` of `window` to the dead letters, with the reason: copied, then removed
    /// from the queue.
    pub async fn bury(
        &self,
        window: &Window,
        events: Vec<Document>,
        reason: &str,
        now: DateTime,
    ) -> mongodb::error::Result<u64> {
        let ids = self.copy_to_dead(events, reason, now).await?;
        self.remove(window, &ids).await?;
        Ok(ids.len() as u64)
    }

    /// The first half of a move to the dead letters: copies `events` there with the reason,
    /// returning their ids for the removal that must follow (one removal for everything a
    /// round took out of a window: removals of a window one after the other would each `$pull`
    /// from what was read, and could leave an emptied group behind).
    pub async fn copy_to_dead(
        &self,
        events: Vec<Document>,
        reason: &str,
        now: DateTime,
    ) -> mongodb::error::Result<Vec<Bson>> {
        if events.is_empty() {
            return Ok(Vec::new());
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
        Ok(ids)
    }

    /// A target's events queued before `before` (the age bound), oldest first: at most `limit`
    /// of them.
    pub async fn overdue(
        &self,
        target: &str,
        before: DateTime,
        limit: usize,
    ) -> mongodb::error::Result<Window> {
        // Through the sequencer, which is the time in its high bits: a range of the index, not
        // a scan of the target's whole queue (a group's is later than its events').
        let seq_before = before.timestamp_millis() << 20;
        let mut taken = 0;
        self.collect(doc! {"t": target, "seq": {"$lt": seq_before}}, limit, |e| {
            let old = e.get_datetime("at").is_ok_and(|at| *at < before);
            taken += usize::from(old);
            old && taken <= limit
        })
        .await
    }

    /// The oldest `n` events of a target (for the size bound).
    pub async fn oldest(&self, target: &str, n: usize) -> mongodb::error::Result<Window> {
        let mut taken = 0;
        self.collect(doc! {"t": target}, n, |_| {
            taken += 1;
            taken <= n
        })
        .await
    }

    /// The documents of `filter` in queue order, read until `keep` accepted `limit` events.
    async fn collect(
        &self,
        filter: Document,
        limit: usize,
        mut keep: impl FnMut(&Document) -> bool,
    ) -> mongodb::error::Result<Window> {
        let mut w = Window::default();
        let mut cursor = self.queue.find(filter).sort(order()).await?;
        while w.events.len() + w.damaged.len() < limit {
            let Some(d) = cursor.try_next().await? else {
                break;
            };
            w.add(d, &mut keep);
        }
        // Damaged events go with the rest.
        let damaged = std::mem::take(&mut w.damaged);
        w.events.extend(damaged);
        Ok(w)
    }
}

/// An event's key as the dispatcher holds it back: `<bucket>\n<key>` (a bucket name has no
/// line break).
pub fn key_of(event: &Document) -> String {
    format!(
        "{}\n{}",
        event.get_str("b").unwrap_or_default(),
        event.get_str("k").unwrap_or_default()
    )
}
