//! The dispatcher: one per deployment, the holder of the fenced `notify` lead, delivers the
//! outbox's events to their targets.
//!
//! Per target, a round reads the head of its queue ([`BATCH`] events, in sequencer order),
//! groups it by key, and delivers the keys in parallel (at most [`PARALLEL_KEYS`]), each key's
//! events one after the other, stopping a key at its first failure: a later event of a key is
//! never sent before an earlier one was taken. Delivered events are removed; the rest stay at
//! the head, and the target waits (exponential backoff, doubling from 100 ms to
//! `Settings::retry_max`) before it is tried again. Targets are served side by side, so one
//! that is down delays no other.
//!
//! The lead is renewed before every round and the loop stops when it is lost; the removal of
//! delivered events needs no fence (removing what was delivered is right whoever removes it).
//! A new holder starts from the queue as it is: at most the last round's delivered events of
//! each target are sent again.
//!
//! Between rounds the dispatcher sleeps until an event is queued: by this instance (an
//! in-process wake-up), or by another one (a change stream on the outbox, when the database
//! has them), or at the latest [`IDLE_POLL`] later. The change stream only wakes; what to send
//! is always read from the queue, so a lost wake-up delays an event by at most one poll.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mongodb::bson::{Bson, Document};

use super::targets::{self, Sender, TargetSpec};
use super::Notifier;
use crate::storage::meta::MetaStore;

/// Events one round reads per target.
pub const BATCH: i64 = 256;
/// Keys delivered at once per target.
pub const PARALLEL_KEYS: usize = 16;
/// The longest sleep between rounds with nothing to do.
pub const IDLE_POLL: Duration = Duration::from_millis(500);
/// How long the lead lasts without renewal.
const LEAD_TTL: Duration = Duration::from_secs(10);
/// How often the queue sizes (and the bounds) are checked.
const CENSUS_EVERY: Duration = Duration::from_secs(5);

/// A target's sender and its retry state.
struct Live {
    spec: TargetSpec,
    sender: Box<dyn Sender>,
    failures: u32,
    next_try: Instant,
}

/// Runs the dispatcher for as long as the process lives: takes the lead when it is free,
/// delivers while it holds it.
pub async fn run(notifier: Arc<Notifier>, meta: MetaStore) {
    if let Err(e) = notifier.ensure_indexes().await {
        tracing::warn!(error = %e, "could not create the notification outbox's index");
    }
    loop {
        match meta.take_lead("notify", LEAD_TTL).await {
            Ok(Some(lead)) => {
                tracing::debug!(
                    fence = lead.fence(),
                    "took the notification dispatcher's lead"
                );
                if let Err(e) = lead_rounds(&notifier, &lead).await {
                    tracing::warn!(error = %e, "notification dispatch stopped; retrying");
                }
                lead.release_or_warn().await;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not take the notification lead"),
        }
        tokio::time::sleep(LEAD_TTL / 4).await;
    }
}

/// Rounds while the lead is held.
async fn lead_rounds(
    notifier: &Arc<Notifier>,
    lead: &crate::storage::meta::Lead,
) -> mongodb::error::Result<()> {
    let mut live: HashMap<String, Live> = HashMap::new();
    let mut last_census = Instant::now() - CENSUS_EVERY;
    let (wake_tx, mut wake_rx) = tokio::sync::mpsc::channel::<()>(1);
    let watcher = tokio::spawn(watch_outbox(notifier.clone(), wake_tx));
    let _stop_watcher = AbortOnDrop(watcher);
    loop {
        if !lead.renew().await? {
            return Ok(());
        }
        refresh_targets(notifier, &mut live).await?;
        if last_census.elapsed() >= CENSUS_EVERY {
            last_census = Instant::now();
            census(notifier, &live).await?;
        }
        let now = Instant::now();
        let rounds: Vec<futures::future::BoxFuture<'_, mongodb::error::Result<bool>>> = live
            .values_mut()
            .filter(|l| l.next_try <= now)
            .map(|l| Box::pin(round(notifier, l)) as _)
            .collect();
        let results = futures::future::join_all(rounds).await;
        let mut progress = false;
        for r in results {
            progress |= r?;
        }
        if !progress {
            let soonest = live
                .values()
                .filter(|l| l.failures > 0)
                .map(|l| l.next_try.saturating_duration_since(Instant::now()))
                .min()
                .unwrap_or(IDLE_POLL)
                .min(IDLE_POLL);
            tokio::select! {
                _ = notifier.queued(soonest) => {}
                _ = wake_rx.recv() => {}
            }
        }
    }
}

/// Aborts a task when dropped (the change stream's watcher ends with the lead).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Wakes the dispatcher on every insert into the outbox (another instance's events). Without
/// change streams (or when the stream fails) the dispatcher polls instead.
async fn watch_outbox(notifier: Arc<Notifier>, wake: tokio::sync::mpsc::Sender<()>) {
    let pipeline = [mongodb::bson::doc! {"$match": {"operationType": "insert"}}];
    loop {
        match notifier
            .outbox()
            .queue
            .watch()
            .pipeline(pipeline.clone())
            .await
        {
            Ok(mut stream) => {
                while let Some(ev) = stream.next().await {
                    if ev.is_err() {
                        break;
                    }
                    let _ = wake.try_send(());
                }
            }
            Err(e) => {
                tracing::debug!(error = %e, "no change stream on the outbox; polling");
            }
        }
        tokio::time::sleep(IDLE_POLL * 4).await;
    }
}

/// Brings the live targets in line with the configured ones (a changed endpoint gets a new
/// sender; a removed target's events wait, up to the age bound).
async fn refresh_targets(
    notifier: &Notifier,
    live: &mut HashMap<String, Live>,
) -> mongodb::error::Result<()> {
    let specs = notifier.targets().await?;
    live.retain(|name, l| specs.iter().any(|s| s.name() == *name && s == &l.spec));
    for spec in specs {
        live.entry(spec.name()).or_insert_with(|| Live {
            sender: targets::sender(&spec),
            spec,
            failures: 0,
            next_try: Instant::now(),
        });
    }
    Ok(())
}

/// One round at one target; whether anything was delivered.
async fn round(notifier: &Notifier, l: &mut Live) -> mongodb::error::Result<bool> {
    let name = l.spec.name();
    let head = notifier.outbox().head(&name, BATCH).await?;
    let Some(first) = head.first() else {
        crate::metrics::notify_oldest(&name, 0.0);
        return Ok(false);
    };
    if let Ok(at) = first.get_datetime("at") {
        let age = notifier.clock.now().timestamp_millis() - at.timestamp_millis();
        crate::metrics::notify_oldest(&name, age.max(0) as f64 / 1000.0);
    }
    // Keys in the order their first event comes, each with its events in order.
    let mut keys: Vec<(String, Vec<&Document>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for d in &head {
        let k = d.get_str("k").unwrap_or_default().to_owned();
        let i = *index.entry(k.clone()).or_insert_with(|| {
            keys.push((k, Vec::new()));
            keys.len() - 1
        });
        keys[i].1.push(d);
    }
    let sender = &*l.sender;
    type Outcome = (Vec<Bson>, Option<targets::SendError>);
    // Boxed as `Send` futures first: a stream of unboxed ones borrowing the batch trips the
    // compiler's higher-ranked `Send` check when the dispatcher is spawned.
    let deliveries: Vec<futures::future::BoxFuture<'_, Outcome>> = keys
        .iter()
        .map(|(_, events)| Box::pin(deliver_key(sender, events)) as _)
        .collect();
    let outcomes: Vec<Outcome> = futures::stream::iter(deliveries)
        .buffer_unordered(PARALLEL_KEYS)
        .collect()
        .await;
    let mut delivered = Vec::new();
    let mut failure = None;
    for (ids, err) in outcomes {
        delivered.extend(ids);
        if err.is_some() {
            failure = err;
        }
    }
    if !delivered.is_empty() {
        notifier.outbox().remove(&delivered).await?;
        crate::metrics::notify_delivered(&name, delivered.len() as u64);
    }
    match failure {
        None => {
            l.failures = 0;
            l.next_try = Instant::now();
        }
        Some(e) => {
            crate::metrics::notify_failed(&name);
            l.failures = l.failures.saturating_add(1);
            let wait = Duration::from_millis(100)
                .saturating_mul(1 << l.failures.min(16))
                .min(notifier.settings().retry_max);
            l.next_try = Instant::now() + wait;
            if l.failures == 1 || l.failures % 20 == 0 {
                tracing::warn!(target = %name, error = %e, failures = l.failures, retry_in = ?wait, "could not deliver an event notification");
            }
        }
    }
    Ok(!delivered.is_empty())
}

/// Delivers one key's events in order, stopping at the first failure: the ids delivered, and
/// the failure if there was one.
async fn deliver_key(
    sender: &dyn Sender,
    events: &[&Document],
) -> (Vec<Bson>, Option<targets::SendError>) {
    let mut done = Vec::new();
    for d in events {
        let (Some(id), Ok(body)) = (d.get_object_id("_id").ok(), d.get_str("body")) else {
            continue;
        };
        match sender.send(&id.to_hex(), body.as_bytes()).await {
            Ok(()) => done.push(Bson::ObjectId(id)),
            Err(e) => return (done, Some(e)),
        }
    }
    (done, None)
}

/// Counts each target's queue and holds the bounds: events older than the age bound, and a
/// queue's oldest events beyond the size bound, go to the dead letters.
async fn census(notifier: &Notifier, live: &HashMap<String, Live>) -> mongodb::error::Result<()> {
    let now = notifier.clock.now();
    let too_old = mongodb::bson::DateTime::from_millis(
        now.timestamp_millis() - notifier.settings().max_age.as_millis() as i64,
    );
    // Listen records are live only: a minute is more than any listener lags.
    let stale = mongodb::bson::DateTime::from_millis(
        now.timestamp_millis() - super::listen::KEEP.as_millis() as i64,
    );
    notifier
        .outbox()
        .queue
        .delete_many(mongodb::bson::doc! {"t": super::listen::LISTEN, "at": {"$lt": stale}})
        .await?;
    for (target, n) in notifier.outbox().queued_by_target().await? {
        if target == super::listen::LISTEN {
            continue;
        }
        crate::metrics::notify_queued(&target, n as f64);
        let out = notifier.outbox();
        // A target this instance does not know may be one of another instance's environment
        // (every instance should have the same ones, but a rolling change has them differ for
        // a while): its events wait for an instance that knows it, up to the age bound.
        let (events, reason) = if live.contains_key(&target) && n > notifier.settings().max_queued {
            let over = (n - notifier.settings().max_queued).min(10_000);
            (out.oldest(&target, over).await?, "queue full")
        } else {
            (out.overdue(&target, too_old, 1000).await?, "too old")
        };
        let buried = out.bury(events, reason, now).await?;
        if buried > 0 {
            crate::metrics::notify_dead(&target, buried);
            tracing::warn!(target = %target, events = buried, reason, "event notifications moved to the dead letters");
        }
    }
    for name in live.keys() {
        if !notifier.outbox().head(name, 1).await?.is_empty() {
            continue;
        }
        crate::metrics::notify_queued(name, 0.0);
    }
    Ok(())
}
