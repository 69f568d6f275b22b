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
//! - each listener follows the outbox with a change stream filtered to its bucket's listen
//!   records, and the dispatcher removes listen records after a minute.
//!
//! Unlike configured notifications, listening is live only: changes made before the listener
//! registered (or within the second the registry is cached) are not replayed, as with MinIO. A
//! database without change streams cannot serve it: the request is refused with
//! `501 NotImplemented`.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use mongodb::bson::{doc, oid::ObjectId, Document};
use mongodb::Collection;

use super::Notifier;

/// The target name of listen records in the outbox.
pub const LISTEN: &str = "listen";
/// How long a listen record stays in the outbox.
pub const KEEP: Duration = Duration::from_secs(60);
/// How long a listener's registration lasts without renewal.
const LEASE: Duration = Duration::from_secs(30);
/// How long an instance trusts its reading of the registry.
const REGISTRY_TTL: Duration = Duration::from_secs(1);

/// The registry of listeners, and this instance's cached reading of it.
pub struct Listeners {
    coll: Collection<Document>,
    cache: Mutex<Option<(Instant, HashSet<String>)>>,
}

impl Listeners {
    /// The registry of `db`.
    pub fn new(db: &mongodb::Database) -> Self {
        Self {
            coll: db.collection("__notify_listeners"),
            cache: Mutex::new(None),
        }
    }
}

impl Notifier {
    /// Whether anyone listens to `bucket` (as read at most [`REGISTRY_TTL`] ago).
    pub(super) async fn listened(&self, bucket: &str) -> mongodb::error::Result<bool> {
        {
            let c = self
                .listeners
                .cache
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some((at, set)) = c.as_ref() {
                if at.elapsed() < REGISTRY_TTL {
                    return Ok(set.contains(bucket));
                }
            }
        }
        let now = self.clock.now();
        let docs: Vec<Document> = futures::TryStreamExt::try_collect(
            self.listeners
                .coll
                .find(doc! {"expires": {"$gt": now}})
                .projection(doc! {"b": 1})
                .await?,
        )
        .await?;
        let set: HashSet<String> = docs
            .iter()
            .filter_map(|d| d.get_str("b").ok().map(str::to_owned))
            .collect();
        let hit = set.contains(bucket);
        *self
            .listeners
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), set));
        Ok(hit)
    }

    /// Streams the records of `bucket`'s changes that match `events` (configured names, `*`
    /// wildcards; all when empty), `prefix` and `suffix`, one line each, with a blank line
    /// every `ping`. `Ok(None)` when the database has no change streams.
    pub async fn listen(
        self: &std::sync::Arc<Self>,
        bucket: &str,
        events: Vec<String>,
        prefix: String,
        suffix: String,
        ping: Duration,
    ) -> mongodb::error::Result<
        Option<impl Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static>,
    > {
        let pipeline = [doc! {"$match": {
            "operationType": "insert",
            "fullDocument.t": LISTEN,
            "fullDocument.b": bucket,
        }}];
        // Opened before the registration, so nothing recorded once others see it is missed.
        let changes = match self.outbox.queue.watch().pipeline(pipeline).await {
            Ok(s) => s,
            Err(e) => {
                tracing::debug!(error = %e, "no change streams: listening refused");
                return Ok(None);
            }
        };
        let id = ObjectId::new();
        self.listeners
            .coll
            .insert_one(doc! {"_id": id, "b": bucket, "expires": self.clock.after(LEASE)})
            .await?;
        let registration = Registration {
            coll: self.listeners.coll.clone(),
            id,
        };
        let me = self.clone();
        let renew_every = LEASE / 3;
        let state = (changes, registration, Instant::now(), me);
        let lines = futures::stream::unfold(state, move |(mut changes, reg, mut renewed, me)| {
            let (events, prefix, suffix) = (events.clone(), prefix.clone(), suffix.clone());
            async move {
                loop {
                    if renewed.elapsed() >= renew_every {
                        renewed = Instant::now();
                        let _ = reg
                            .coll
                            .update_one(
                                doc! {"_id": reg.id},
                                doc! {"$set": {"expires": me.clock.after(LEASE)}},
                            )
                            .await;
                    }
                    tokio::select! {
                        next = changes.next() => {
                            let ev = match next {
                                Some(Ok(ev)) => ev,
                                // The stream failed (the database away): the listener ends and
                                // the client reconnects, as with any dropped connection.
                                _ => return None,
                            };
                            let Some(d) = ev.full_document else { continue };
                            let (Ok(e), Ok(k), Ok(body)) = (d.get_str("e"), d.get_str("k"), d.get_str("body")) else {
                                continue;
                            };
                            let wanted = (events.is_empty()
                                || events.iter().any(|w| super::config::event_matches(w, e)))
                                && k.starts_with(prefix.as_str())
                                && k.ends_with(suffix.as_str());
                            if wanted {
                                let line = bytes::Bytes::from(format!("{body}\n"));
                                return Some((Ok(line), (changes, reg, renewed, me)));
                            }
                        }
                        _ = tokio::time::sleep(ping) => {
                            return Some((Ok(bytes::Bytes::from_static(b"\n")), (changes, reg, renewed, me)));
                        }
                    }
                }
            }
        });
        Ok(Some(lines))
    }
}

/// A listener's registration, removed when the stream that holds it is dropped (the client
/// went away); a removal that fails leaves it to expire.
struct Registration {
    coll: Collection<Document>,
    id: ObjectId,
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
