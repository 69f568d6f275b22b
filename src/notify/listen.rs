//! Listening without configuring: MinIO's ListenBucketNotification
//! (`GET /<bucket>?events=...&prefix=...&suffix=...`), which `mc watch` and the console use.
//! The answer streams one JSON document (`{"Records":[...]}`) per line while the connection
//! lasts, with a blank line every `ping` seconds to keep it open.
//!
//! Listeners may be on any instance and changes on any other, so both meet in the database:
//! - a listener registers in `__notify_listeners` (`{_id, b: bucket, expires}`), renewed
//!   while it streams and removed when it ends (or left to expire if its instance dies);
//! - an instance recording a change to a bucket someone listens to (it reads the registry at
//!   most once a second) writes the record into the outbox as `t: "listen"`;
//! - each instance follows the outbox's listen records with one change stream, opened by its
//!   first listener and shared by all of them (each takes its bucket's records, and a listener
//!   that falls [`LAG`] records behind is ended); the dispatcher removes listen records after a
//!   minute.
//!
//! An instance serves at most `Settings::max_listeners` listeners (`503 SlowDown` beyond).
//!
//! Unlike configured notifications, listening is live only: changes made before the listener
//! registered (or within the second the registry is cached) are not replayed, as with MinIO. A
//! database without change streams cannot serve it: the request is refused with
//! `501 NotImplemented`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mongodb::bson::{doc, oid::ObjectId, Document};
use mongodb::Collection;
use tokio::sync::broadcast;

use super::Notifier;

/// The target name of listen records in the outbox.
pub const LISTEN: &str = "listen";
/// How long a listen record stays in the outbox.
pub const KEEP: Duration = Duration::from_secs(60);
/// How long a listener's registration lasts without renewal.
const LEASE: Duration = Duration::from_secs(30);
/// How long an instance trusts its reading of the registry.
const REGISTRY_TTL: Duration = Duration::from_secs(1);

/// How many records the shared change stream holds for a listener that has not taken them
/// yet; a listener further behind is ended (its client reconnects, as with MinIO).
const LAG: usize = 4096;

/// The registry of listeners, this instance's cached reading of it, and the one change stream
/// this instance's listeners share.
pub struct Listeners {
    coll: Collection<Document>,
    /// Buckets listened to, each with whether a listener wants reads (`s3:ObjectAccessed:*`).
    cache: Mutex<Option<(Instant, HashMap<String, bool>)>>,
    /// Whether a reading of the registry is under way: the requests that find the cached
    /// reading expired meanwhile use it a moment longer rather than each reading the registry
    /// (32 concurrent writers once read it up to 32 times a second).
    refreshing: Arc<std::sync::atomic::AtomicBool>,
    /// The shared change stream's fan-out, while one runs. One stream for every listener:
    /// a stream per listener would hold a connection of the driver's pool each, and a dozen
    /// listeners would starve every request of connections.
    hub: HubSlot,
    /// Listeners streaming on this instance, against `Settings::max_listeners`.
    live: Arc<AtomicUsize>,
}

impl Listeners {
    /// The registry of `db`.
    pub fn new(db: &mongodb::Database) -> Self {
        Self {
            coll: db.collection("__notify_listeners"),
            cache: Mutex::new(None),
            refreshing: Arc::default(),
            hub: HubSlot::default(),
            live: Arc::default(),
        }
    }
}

impl Listeners {
    /// Whether the cached reading of the registry is fresh and has nobody on `bucket` who
    /// wants reads.
    pub(super) fn surely_without_readers(&self, bucket: &str) -> bool {
        let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.as_ref().is_some_and(|(at, map)| {
            at.elapsed() < REGISTRY_TTL && !map.get(bucket).copied().unwrap_or(false)
        })
    }
}

/// The shared change stream's sender, while one runs.
type HubSlot = Arc<tokio::sync::Mutex<Option<broadcast::Sender<Arc<Document>>>>>;

/// Why a listener could not start.
#[derive(Debug)]
pub enum Refused {
    /// The database has no change streams.
    NoChangeStreams,
    /// This instance serves as many listeners as it may.
    TooMany(usize),
    /// The database failed.
    Db(mongodb::error::Error),
}

impl From<mongodb::error::Error> for Refused {
    fn from(e: mongodb::error::Error) -> Self {
        Refused::Db(e)
    }
}

impl Notifier {
    /// Whether anyone listens to `bucket`, and whether one of them wants reads (as read at
    /// most [`REGISTRY_TTL`] ago); `None` when nobody does. A registry that cannot be read
    /// counts as nobody listening: listening is live and best effort, and must not fail the
    /// writes it watches.
    pub(super) async fn listened(&self, bucket: &str) -> Option<bool> {
        {
            let c = self
                .listeners
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some((at, map)) = c.as_ref() {
                // (While another request reads it, for at most one more TTL: a reading that
                // hangs does not keep every request on an old one.)
                if at.elapsed() < REGISTRY_TTL
                    || (at.elapsed() < 2 * REGISTRY_TTL
                        && self.listeners.refreshing.load(Ordering::SeqCst))
                {
                    return map.get(bucket).copied();
                }
            }
        }
        // Cleared when this reading ends, or is dropped unfinished; only by the request that
        // set it.
        struct Reading(Option<Arc<std::sync::atomic::AtomicBool>>);
        impl Drop for Reading {
            fn drop(&mut self) {
                if let Some(flag) = &self.0 {
                    flag.store(false, Ordering::SeqCst);
                }
            }
        }
        let flag = &self.listeners.refreshing;
        let _reading = Reading(
            flag.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
                .then(|| flag.clone()),
        );
        let now = self.clock().now();
        let started = Instant::now();
        let read = async {
            futures::TryStreamExt::try_collect::<Vec<Document>>(
                self.listeners
                    .coll
                    .find(doc! {"expires": {"$gt": now}})
                    .projection(doc! {"b": 1, "r": 1})
                    .await?,
            )
            .await
        };
        let mut map: HashMap<String, bool> = HashMap::new();
        // (Bounded: a registry that does not answer counts as nobody listening, as one that
        // fails does, rather than holding the write that asked.)
        match tokio::time::timeout(REGISTRY_TTL, read)
            .await
            .map_err(|_| "timed out".to_owned())
            .and_then(|r| r.map_err(|e| e.to_string()))
        {
            Ok(docs) => {
                for d in &docs {
                    if let Ok(b) = d.get_str("b") {
                        let reads = d.get_bool("r").unwrap_or(false);
                        *map.entry(b.to_owned()).or_default() |= reads;
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not read the listener registry; no listen records for a second");
            }
        }
        let hit = map.get(bucket).copied();
        let mut c = self
            .listeners
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        // A reading that started before the one cached (a slow one) does not replace it.
        if c.as_ref().is_none_or(|(at, _)| *at < started) {
            *c = Some((started, map));
        }
        hit
    }

    /// A receiver of every listen record inserted into the outbox, from this instance's shared
    /// change stream (opened by the first listener, closed when the last one leaves).
    async fn subscribe(&self) -> Result<broadcast::Receiver<Arc<Document>>, Refused> {
        let mut hub = self.listeners.hub.lock().await;
        if let Some(tx) = hub.as_ref() {
            return Ok(tx.subscribe());
        }
        let pipeline = [doc! {"$match": {
            "operationType": "insert",
            "fullDocument.t": LISTEN,
        }}];
        let mut changes = match self.outbox.queue.watch().pipeline(pipeline).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "no change streams: listening refused");
                return Err(Refused::NoChangeStreams);
            }
        };
        let (tx, rx) = broadcast::channel(LAG);
        *hub = Some(tx.clone());
        let hub_slot = self.listeners.hub.clone();
        crate::background::spawn("listen", async move {
            loop {
                tokio::select! {
                    next = changes.next() => match next {
                        Some(Ok(ev)) => {
                            if let Some(d) = ev.full_document {
                                let _ = tx.send(Arc::new(d));
                            }
                        }
                        // The stream failed (the database away): every listener ends, and
                        // its client reconnects, as with any dropped connection.
                        _ => break,
                    },
                    _ = tokio::time::sleep(Duration::from_secs(5)) => {}
                }
                // The last listener left: checked again under the lock, which a new listener
                // holds while it subscribes, so none is given a stream that is closing.
                if tx.receiver_count() == 0 {
                    let mut slot = hub_slot.lock().await;
                    if tx.receiver_count() == 0 {
                        if slot.as_ref().is_some_and(|s| s.same_channel(&tx)) {
                            *slot = None;
                        }
                        return;
                    }
                }
            }
            let mut slot = hub_slot.lock().await;
            if slot.as_ref().is_some_and(|s| s.same_channel(&tx)) {
                *slot = None;
            }
        });
        Ok(rx)
    }

    /// Streams the records of `bucket`'s changes that match `events` (configured names, `*`
    /// wildcards; all when empty), `prefix` and `suffix`, one line each, with a blank line
    /// every `ping`. Only changes of the bucket's incarnation `incarnation`
    /// (`BucketInfo::incarnation`, the one the caller was authorized on) are streamed: the
    /// registry follows names, and a bucket deleted and created again under its name is
    /// another bucket, which the listener may not be allowed to see.
    pub async fn listen(
        self: &Arc<Self>,
        bucket: &str,
        incarnation: String,
        events: Vec<String>,
        prefix: String,
        suffix: String,
        ping: Duration,
    ) -> Result<impl Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static, Refused> {
        let max = self.settings.max_listeners;
        let slot = Slot::take(&self.listeners.live, max).ok_or(Refused::TooMany(max))?;
        // Subscribed before the registration, so nothing recorded once others see it is missed.
        let records = self.subscribe().await?;
        let id = ObjectId::new();
        // Whether it takes reads: instances record GETs and HEADs only for such listeners.
        let reads = events.is_empty()
            || events
                .iter()
                .any(|w| super::config::event_matches(w, "s3:ObjectAccessed:Get"));
        self.listeners
            .coll
            .insert_one(
                doc! {"_id": id, "b": bucket, "r": reads, "expires": self.clock().after(LEASE)},
            )
            .await?;
        let registration = Registration {
            coll: self.listeners.coll.clone(),
            id,
            _slot: slot,
        };
        let me = self.clone();
        let filter = Filter {
            bucket: bucket.to_owned(),
            incarnation,
            events,
            prefix,
            suffix,
        };
        // Keep-alive lines and the lease's renewal on their own clocks: records that are not
        // this listener's (other buckets', other types) must delay neither. A client that went
        // away is noticed at the next keep-alive line at the latest, which ends the stream and
        // gives back its place.
        let ticker = |every: Duration| {
            let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            t
        };
        let state = (
            records,
            registration,
            ticker(ping),
            ticker(LEASE / 3),
            me,
            filter,
        );
        let lines = futures::stream::unfold(state, move |state| async move {
            let (mut records, reg, mut ping, mut renew, me, filter) = state;
            let line = loop {
                tokio::select! {
                    next = records.recv() => match next {
                        Ok(d) => {
                            if let Some(body) = filter.wanted(&d) {
                                break bytes::Bytes::from(format!("{body}\n"));
                            }
                        }
                        // Too far behind, or the shared stream ended: the listener ends.
                        Err(_) => return None,
                    },
                    _ = ping.tick() => break bytes::Bytes::from_static(b"\n"),
                    _ = renew.tick() => {
                        let _ = reg
                            .coll
                            .update_one(
                                doc! {"_id": reg.id},
                                doc! {"$set": {"expires": me.clock().after(LEASE)}},
                            )
                            .await;
                    }
                }
            };
            Some((Ok(line), (records, reg, ping, renew, me, filter)))
        });
        Ok(lines)
    }
}

/// What one listener asked for.
struct Filter {
    bucket: String,
    /// The incarnation of the bucket it was authorized on.
    incarnation: String,
    events: Vec<String>,
    prefix: String,
    suffix: String,
}

impl Filter {
    /// The record's body when it is one the listener wants.
    fn wanted<'d>(&self, d: &'d Document) -> Option<&'d str> {
        let (Ok(b), Ok(e), Ok(k), Ok(body)) = (
            d.get_str("b"),
            d.get_str("e"),
            d.get_str("k"),
            d.get_str("body"),
        ) else {
            return None;
        };
        // A record without the bucket's incarnation (an older grids3 wrote it) is not
        // delivered: nothing tells which bucket of the name it came from.
        let ok = b == self.bucket
            && d.get_str("bi") == Ok(self.incarnation.as_str())
            && (self.events.is_empty()
                || self
                    .events
                    .iter()
                    .any(|w| super::config::event_matches(w, e)))
            && k.starts_with(self.prefix.as_str())
            && k.ends_with(self.suffix.as_str());
        ok.then_some(body)
    }
}

/// A place among this instance's listeners, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(live: &Arc<AtomicUsize>, max: usize) -> Option<Self> {
        live.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
            (n < max).then_some(n + 1)
        })
        .ok()?;
        Some(Slot(live.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A listener's registration, removed when the stream that holds it is dropped (the client
/// went away); a removal that fails leaves it to expire.
struct Registration {
    coll: Collection<Document>,
    id: ObjectId,
    _slot: Slot,
}

impl Drop for Registration {
    fn drop(&mut self) {
        let (coll, id) = (self.coll.clone(), self.id);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let _ = coll.delete_one(doc! {"_id": id}).await;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A listener takes the records of its bucket's incarnation only: a bucket deleted and
    /// created again under the name is another bucket; a record that names none (an older
    /// grids3 wrote it) is not taken either.
    #[test]
    fn a_listener_takes_its_own_bucket_incarnations_records_only() {
        let filter = Filter {
            bucket: "b".into(),
            incarnation: "one".into(),
            events: vec!["s3:ObjectCreated:*".into()],
            prefix: "hr/".into(),
            suffix: String::new(),
        };
        let record = |bucket: &str, bi: Option<&str>, e: &str, k: &str| {
            let mut d = doc! {"b": bucket, "e": e, "k": k, "body": "{}"};
            if let Some(bi) = bi {
                d.insert("bi", bi);
            }
            d
        };
        let cases = [
            (
                record("b", Some("one"), "s3:ObjectCreated:Put", "hr/x"),
                true,
            ),
            (
                record("b", Some("two"), "s3:ObjectCreated:Put", "hr/x"),
                false,
            ),
            (record("b", None, "s3:ObjectCreated:Put", "hr/x"), false),
            (
                record("c", Some("one"), "s3:ObjectCreated:Put", "hr/x"),
                false,
            ),
            (
                record("b", Some("one"), "s3:ObjectRemoved:Delete", "hr/x"),
                false,
            ),
            (record("b", Some("one"), "s3:ObjectCreated:Put", "x"), false),
        ];
        for (i, (d, want)) in cases.iter().enumerate() {
            assert_eq!(filter.wanted(d).is_some(), *want, "case {i}: {d}");
        }
    }
}
