//! Bucket event notifications: every change acknowledged to a client reaches each target its
//! bucket's configuration names, at least once, in order per key.
//!
//! The way an event goes:
//! 1. the request that made a change calls [`Notifier::record`] (the one door from the write
//!    path; it knows nothing of targets) after the change and before its answer. The bucket's
//!    configuration ([`config`]) picks the targets; for each, the record ([`record`]) is made in
//!    its final shape, with the principal, the client's address and the request id, which no
//!    change stream on the data could see;
//! 2. the events go into the outbox ([`outbox`]) with the database's write concern, group
//!    committed with those of concurrent requests (a target's events of one commit are one
//!    document); only then is the client answered. A
//!    request whose events could not be queued is answered `503 SlowDown` (the change was
//!    made, but the client is not told it succeeded, and retries);
//! 3. one instance, the holder of the fenced `notify` lead, dispatches ([`dispatch`]): per
//!    target, the queue's head in order, keys in parallel and each key's events one after the
//!    other, with retries and exponential backoff; delivered events are removed. Another
//!    instance takes the lead within its lifetime when the holder dies.
//!
//! So an acknowledged change's event is in the database before the acknowledgement, and leaves
//! it only once its target took it (or, past the age or size bound, into the dead letters,
//! counted). A consumer may see an event twice: when a dispatcher dies (or loses the lead)
//! between a delivery and the removal of the delivered events, the next holder sends those
//! events again, at most one round's window per target. Each event carries a
//! stable id (`x-grids3-event-id` on webhooks, `Nats-Msg-Id` on JetStream) to drop repeats by.
//!
//! Order per key follows the sequencer ([`sequencer`]): the database's time in milliseconds
//! (as this instance reads it, see `storage::meta::DbClock`) with a counter that keeps one
//! instance's events strictly increasing. A change takes it as its events join the outbox's
//! queue, under the lock the group commit takes them by, so one instance's events are
//! committed, and delivered, in sequencer order (taken earlier, when the records were made, a
//! request that stalled before queueing them was overtaken by a later one and its older
//! sequencer was delivered after the newer). Two writes of one key that overlap in time may
//! land in either order in S3, and their events are ordered by when they were queued, which
//! need not be the order the writes landed in; writes that do not overlap are in order.
//!
//! A change whose request dies between making it and queueing its event (a crash of the
//! gateway in that window, before any answer) may go without an event: the client was never
//! told it succeeded. Every acknowledged change has its event.

pub mod config;
pub mod dispatch;
pub mod door;
pub mod hold;
pub mod listen;
pub mod outbox;
pub mod record;
pub mod sequencer;
pub mod targets;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

use crate::storage::meta::{BucketInfo, DbClock};
pub use record::{Change, EventName, Origin};
use targets::TargetSpec;

/// Bounds and pacing of delivery.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Events older than this go to the dead letters.
    pub max_age: std::time::Duration,
    /// A target with more events queued than this has its oldest moved to the dead letters.
    pub max_queued: i64,
    /// The longest wait between two attempts at a target that fails.
    pub retry_max: std::time::Duration,
    /// The most ListenBucketNotification streams one instance serves at once.
    pub max_listeners: usize,
}

/// The notifier: the write path's door, and what the dispatcher reads.
pub struct Notifier {
    outbox: outbox::Outbox,
    env_targets: Vec<TargetSpec>,
    stored: targets::Stored,
    settings: Settings,
    /// Parsed configurations by bucket, with the XML they were parsed from.
    parsed: Mutex<HashMap<String, (String, Arc<config::Config>)>>,
    /// Sequencers of events (and of the outbox's groups).
    seq: Arc<sequencer::Sequencer>,
    /// Wakes this instance's dispatcher when it queued events.
    wake: tokio::sync::Notify,
    /// Who listens (ListenBucketNotification), see [`listen`].
    listeners: listen::Listeners,
}

impl std::fmt::Debug for Notifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifier")
            .field("env_targets", &self.env_targets)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    /// The notifier of `db`, with the targets of this instance's environment.
    pub fn new(
        db: &mongodb::Database,
        clock: DbClock,
        env_targets: Vec<TargetSpec>,
        settings: Settings,
    ) -> Self {
        let seq = Arc::new(sequencer::Sequencer::new(clock));
        Self {
            outbox: outbox::Outbox::new(db, seq.clone()),
            env_targets,
            stored: targets::Stored::new(db),
            settings,
            parsed: Mutex::default(),
            seq,
            wake: tokio::sync::Notify::new(),
            listeners: listen::Listeners::new(db),
        }
    }

    /// Creates the outbox's index.
    pub async fn ensure_indexes(&self) -> mongodb::error::Result<()> {
        self.outbox.ensure_indexes().await
    }

    /// The outbox.
    pub fn outbox(&self) -> &outbox::Outbox {
        &self.outbox
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The targets stored in the database (the admin API's).
    pub fn stored(&self) -> &targets::Stored {
        &self.stored
    }

    /// Every target: this instance's environment's, then the database's (an environment
    /// target wins over a stored one of the same name).
    pub async fn targets(&self) -> mongodb::error::Result<Vec<TargetSpec>> {
        let mut all = self.env_targets.clone();
        for t in self.stored.list().await? {
            if !all.iter().any(|e| e.name() == t.name()) {
                all.push(t);
            }
        }
        Ok(all)
    }

    /// Waits until this instance queues events (or a while passes).
    pub async fn queued(&self, at_most: std::time::Duration) {
        let _ = tokio::time::timeout(at_most, self.wake.notified()).await;
    }

    /// The database's clock, as this instance reads it.
    pub fn clock(&self) -> &DbClock {
        self.seq.clock()
    }

    fn config_of(&self, bucket: &BucketInfo) -> Option<Arc<config::Config>> {
        let xml = bucket.notification.as_deref()?;
        let mut cache = self.parsed.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((seen, c)) = cache.get(&bucket.name) {
            if seen == xml {
                return Some(c.clone());
            }
        }
        // Stored configurations were checked when they were put; one that no longer parses
        // (written by a newer version) notifies nobody rather than failing writes.
        let c = Arc::new(config::parse(xml.as_bytes()).ok()?);
        if cache.len() > 10_000 {
            cache.clear();
        }
        cache.insert(bucket.name.clone(), (xml.to_owned(), c.clone()));
        Some(c)
    }

    /// Records the events of changes a request made to objects of `bucket`, returning once
    /// they are durable in the outbox. Nothing is written when neither the bucket's
    /// configuration nor a listener wants them (the listener registry is read at most once a
    /// second).
    pub async fn record(
        &self,
        bucket: &BucketInfo,
        origin: &Origin,
        changes: &[Change],
    ) -> mongodb::error::Result<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let Some(plan) = self.plan(bucket).await? else {
            return Ok(());
        };
        let docs = self.docs(&plan, bucket, origin, changes);
        // A request that stalls here, its records made, is overtaken by another's: the
        // sequencers are taken as the records join the queue, so its come later (see
        // `outbox::Outbox::push`).
        crate::failpoint::hit("notify.recorded", &bucket.name).await;
        self.commit(docs).await
    }

    /// Who wants the events of `bucket` now: `None` when nobody does (no rule, no listener).
    async fn plan(&self, bucket: &BucketInfo) -> mongodb::error::Result<Option<Plan>> {
        let cfg = self.config_of(bucket).unwrap_or_default();
        let listened = self.listened(&bucket.name).await.is_some();
        if cfg.rules.is_empty() && !listened {
            return Ok(None);
        }
        let known = if cfg.rules.is_empty() {
            Arc::default()
        } else {
            self.known_targets().await?
        };
        Ok(Some(Plan {
            cfg,
            listened,
            known,
        }))
    }

    /// The names of the targets that exist for this instance: its environment's and the
    /// database's (read at most once a second, and again after this instance changed them).
    async fn known_targets(&self) -> mongodb::error::Result<Arc<HashSet<String>>> {
        let stored = self.stored.names().await?;
        if self.env_targets.is_empty() {
            return Ok(stored);
        }
        let mut all: HashSet<String> = (*stored).clone();
        all.extend(self.env_targets.iter().map(TargetSpec::name));
        Ok(Arc::new(all))
    }

    /// The outbox documents of `changes` as `plan` wants them. Each carries, as its `seq`,
    /// the index of its change: the outbox gives each change its sequencer as the documents
    /// join its queue.
    ///
    /// A rule whose target does not exist (stored with `x-amz-skip-destination-validation`,
    /// or whose target was removed since) makes no event: events are never queued for a name
    /// nothing serves yet, to be delivered to whatever target is created under it later (a
    /// bucket owner could otherwise queue a day of events, up to the size bound, for a target
    /// another owner creates).
    fn docs(
        &self,
        plan: &Plan,
        bucket: &BucketInfo,
        origin: &Origin,
        changes: &[Change],
    ) -> Vec<Document> {
        let (now, time, owner_id) = self.stamp(bucket);
        let facts = facts(bucket, &owner_id);
        let mut docs = Vec::new();
        for (i, change) in changes.iter().enumerate() {
            let seq = i as i64;
            for rule in plan.cfg.matching(change.event.configured(), &change.key) {
                let Some(target) = targets::name_of_arn(&rule.arn) else {
                    continue;
                };
                if !plan.known.contains(&target) {
                    tracing::debug!(bucket = %bucket.name, target = %target, "no event: the configuration names a target that does not exist");
                    continue;
                }
                let body = record::render(
                    change,
                    origin,
                    &facts,
                    (&rule.id, record::Naming::Aws),
                    &time,
                    record::UNSEQUENCED,
                );
                docs.push(event_doc(
                    &target,
                    seq,
                    &change.key,
                    &bucket.name,
                    now,
                    body,
                ));
            }
            if plan.listened {
                docs.push(listen_doc(
                    change,
                    origin,
                    (&facts, &bucket.incarnation()),
                    (now, &time),
                    seq,
                ));
            }
        }
        docs
    }

    /// Makes `docs` durable in the outbox, and wakes the dispatcher.
    async fn commit(&self, docs: Vec<Document>) -> mongodb::error::Result<()> {
        if docs.is_empty() {
            return Ok(());
        }
        // Listen records are the listeners' (they follow the outbox themselves): only events
        // for targets wake the dispatcher.
        let for_targets = docs
            .iter()
            .any(|d| d.get_str("t").is_ok_and(|t| t != listen::LISTEN));
        self.outbox.push(docs).await?;
        if for_targets {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// The time of records made now (as a date, and as AWS writes it), and the bucket owner's
    /// id as records name it.
    fn stamp(&self, bucket: &BucketInfo) -> (DateTime, String, String) {
        let now = self.clock().now();
        let time = now.to_chrono().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let owner_id = crate::auth::sigv4::sha256_hex(bucket.owner.as_bytes());
        (now, time, owner_id)
    }

    /// Records a read of an object (`s3:ObjectAccessed:*`) for the bucket's listeners, if it
    /// has any. Reads are not acknowledged changes: the record is best effort (a failure is
    /// logged), and the caller need not wait for it.
    pub async fn record_read(&self, bucket: &BucketInfo, origin: &Origin, change: &Change) {
        if self.listened(&bucket.name).await != Some(true) {
            return;
        }
        let (now, time, owner_id) = self.stamp(bucket);
        let d = listen_doc(
            change,
            origin,
            (&facts(bucket, &owner_id), &bucket.incarnation()),
            (now, &time),
            0,
        );
        if let Err(e) = self.outbox.push(vec![d]).await {
            tracing::debug!(error = %e, "could not record a read for listeners");
        }
    }

    /// Whether this instance knows, without asking the database, that no listener of
    /// `bucket` wants reads (its reading of the registry is fresh).
    pub fn surely_no_readers(&self, bucket: &str) -> bool {
        self.listeners.surely_without_readers(bucket)
    }

    /// Queues the `s3:TestEvent` of a configuration for each target it names.
    pub async fn test_events(
        &self,
        bucket: &str,
        targets: &[String],
        request_id: &str,
    ) -> mongodb::error::Result<()> {
        let now = self.clock().now();
        let time = now.to_chrono().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string();
        let mut docs = Vec::new();
        for (i, t) in targets.iter().enumerate() {
            let body = record::test_event(bucket, &time, request_id);
            docs.push(event_doc(t, i as i64, "", bucket, now, body));
        }
        self.outbox.push(docs).await?;
        self.wake.notify_one();
        Ok(())
    }
}

/// A bucket's facts as its records name it.
fn facts<'a>(bucket: &'a BucketInfo, owner_id: &'a str) -> record::BucketFacts<'a> {
    record::BucketFacts {
        name: &bucket.name,
        owner_id,
        region: &bucket.region,
    }
}

/// The outbox document of a listen record (see [`listen`]): every listener of the bucket
/// gets it, whatever the configuration; `e` is its type for their filters, `bi` the
/// incarnation of the bucket it was made in (`BucketInfo::incarnation`), so that a listener
/// of a bucket deleted since never gets the records of a new bucket of the same name.
fn listen_doc(
    change: &Change,
    origin: &Origin,
    (facts, incarnation): (&record::BucketFacts<'_>, &str),
    (now, time): (DateTime, &str),
    seq: i64,
) -> Document {
    let body = record::render(
        change,
        origin,
        facts,
        ("", record::Naming::Minio),
        time,
        record::UNSEQUENCED,
    );
    let mut d = event_doc(listen::LISTEN, seq, &change.key, facts.name, now, body);
    d.insert("e", change.event.configured());
    d.insert("bi", incarnation);
    d
}

/// Who wants a bucket's events at the moment (see [`Notifier::plan`]).
struct Plan {
    cfg: Arc<config::Config>,
    listened: bool,
    /// The targets that exist (empty when no rule needs them).
    known: Arc<HashSet<String>>,
}

fn event_doc(
    target: &str,
    seq: i64,
    key: &str,
    bucket: &str,
    at: DateTime,
    body: String,
) -> Document {
    doc! {
        "_id": ObjectId::new(),
        "t": target,
        "seq": seq,
        "k": key,
        "b": bucket,
        "at": at,
        "body": body,
    }
}
