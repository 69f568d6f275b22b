//! The dispatcher: one per deployment, the holder of the fenced `notify` lead, delivers the
//! outbox's events to their targets.
//!
//! Per target, a round reads the head of its queue (a few dozen of the outbox's documents,
//! each a group of events, in order: see `outbox`), groups its events by key, and delivers the keys in parallel (at most [`PARALLEL_KEYS`]), each key's
//! events one after the other, stopping a key at its first failure: a later event of a key is
//! never sent before an earlier one was taken. Delivered events are removed; the rest stay at
//! the head. A target that took nothing in a round while something failed waits as a whole
//! (exponential backoff, doubling from 100 ms to `Settings::retry_max`) before it is tried
//! again; when other keys went through, only the failing key waits, and it is left out of the
//! rounds meanwhile, so one bad event holds up nothing but the events after it on its key.
//! An event the target rejects for good (an HTTP 4xx other than 408 and 429) goes to the dead
//! letters after `targets::REJECTED_TRIES` tries. Targets are served side by side, so one that
//! is down delays no other.
//!
//! The lead is checked before every send and every move to the dead letters, and renewed
//! there when half its lifetime is gone (see `hold`): a round longer than the lead's lifetime
//! keeps it, and a run that stalled past the expiry and was taken over sends nothing more, so
//! two instances never send at once. The removal of delivered events needs no fence (removing
//! what was delivered is right whoever removes it). A new holder starts from the queue as it
//! is: at most the last round's delivered events of each target are sent again.
//!
//! Between rounds the dispatcher sleeps until this instance queues an event (an in-process
//! wake-up), or at the latest [`IDLE_POLL`]: events queued by other instances wait at most
//! that long after the round under way ends (a round waits for its slowest target, up to
//! one send timeout). What to send is always read from the queue, so a lost wake-up delays an event
//! by at most one poll.
//!
//! No change stream wakes it for other instances' events, although the database may offer
//! them: measured on the local database, one change stream open on the outbox made each
//! event's insert cost 1.52 ms of the database's CPU instead of 0.54 (every write then pays
//! for it, on the write path), while a poll of an empty queue every [`IDLE_POLL`] is one
//! indexed `find`. On mongod the stream would cost less, but a poll that often costs little
//! there too.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use mongodb::bson::{Bson, Document};

use super::outbox::key_of;

use super::hold::Hold;
use super::targets::{self, Sender, TargetSpec};
use super::Notifier;
use crate::storage::meta::MetaStore;

/// Outbox documents one round reads per target (each a group of up to 256 events, see
/// `outbox`; a deployment's concurrent writes make groups of a few to a few dozen).
pub const WINDOW: i64 = 32;
/// Keys delivered at once per target.
pub const PARALLEL_KEYS: usize = 16;
/// How long the dispatcher waits after a round that found less than a window.
const LINGER: Duration = Duration::from_millis(100);
/// The longest sleep between rounds with nothing to do (how long another instance's event
/// may wait before the dispatcher looks): one indexed `find` per target each time.
pub const IDLE_POLL: Duration = Duration::from_millis(200);
/// How often the targets are read while there are none (a target added through the admin API
/// is served within this), and while there are some.
const IDLE_NO_TARGETS: Duration = Duration::from_secs(5);
const TARGETS_EVERY: Duration = Duration::from_secs(1);
/// How long the lead lasts without renewal. It is renewed while a round sends, whenever half
/// of it is gone (see `hold`), so a send, bounded by what is left less a margin, always has at
/// least 12 s, more than `targets::SEND_TIMEOUT` (tests shorten it with the fail point limit
/// `notify.lead`, for the database's name).
const LEAD_TTL: Duration = Duration::from_secs(30);
/// How often the queue sizes (and the bounds) are checked, at the most.
const CENSUS_EVERY: Duration = Duration::from_secs(5);
/// The most events one census moves to the dead letters per target.
const SWEEP: i64 = 10_000;

/// The most keys of one target held back at once (see [`Live::held`]); beyond it the target
/// as a whole waits.
const MAX_HELD_KEYS: usize = 1000;

/// A target's sender and its retry state.
struct Live {
    spec: TargetSpec,
    sender: Box<dyn Sender>,
    /// Rounds in a row in which the target took nothing while something failed (it is down,
    /// or refuses everything): the target as a whole waits.
    failures: u32,
    next_try: Instant,
    /// Keys whose next event failed while others' went through: each waits on its own, and
    /// is left out of the rounds meanwhile, so that one key's failing event neither holds up
    /// the other keys nor fills the rounds' window with its backlog.
    held: HashMap<String, Held>,
    /// When the target last took an event.
    last_taken: Option<Instant>,
}

/// A key held back after its next event failed.
struct Held {
    /// The event that failed, and how often in a row.
    event: mongodb::bson::oid::ObjectId,
    tries: u32,
    until: Instant,
    /// When that event first failed.
    since: Instant,
}

/// The wait after the `n`th failure in a row: doubling from 100 ms up to `max`.
fn backoff(n: u32, max: Duration) -> Duration {
    Duration::from_millis(100)
        .saturating_mul(1 << n.min(16))
        .min(max)
}

/// Runs the dispatcher for as long as the process lives: takes the lead when it is free,
/// delivers while it holds it.
pub async fn run(notifier: Arc<Notifier>, meta: MetaStore) {
    if let Err(e) = notifier.ensure_indexes().await {
        tracing::warn!(error = %e, "could not create the notification outbox's index");
    }
    let db = notifier.outbox().queue.namespace().db;
    loop {
        let ttl = crate::failpoint::limit("notify.lead", &db, LEAD_TTL);
        let asked = Instant::now();
        match meta.take_lead("notify", ttl).await {
            Ok(Some(lead)) => {
                tracing::debug!(
                    fence = lead.fence(),
                    "took the notification dispatcher's lead"
                );
                let hold = Hold::new(&lead, ttl, asked, meta.process_id());
                if let Err(e) = lead_rounds(&notifier, &hold).await {
                    tracing::warn!(error = %e, "notification dispatch stopped; retrying");
                }
                // A lost lead is not given up (another run holds it): only this run's is.
                lead.release_or_warn().await;
                crate::failpoint::hit("notify.lead_ended", meta.process_id()).await;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "could not take the notification lead"),
        }
        tokio::time::sleep(ttl / 4).await;
    }
}

/// Rounds while the lead is held.
///
/// A deployment without targets pays little for the dispatcher: the lead renewed every
/// half of its lifetime, the targets read every [`IDLE_NO_TARGETS`], and the census once a
/// minute while the outbox is empty.
async fn lead_rounds(notifier: &Arc<Notifier>, hold: &Hold<'_>) -> mongodb::error::Result<()> {
    let mut live: HashMap<String, Live> = HashMap::new();
    let mut last_census = Instant::now() - CENSUS_EVERY;
    let mut census_pause = CENSUS_EVERY;
    let mut targets_read = Instant::now() - IDLE_NO_TARGETS;
    loop {
        if hold.time_left().await.is_none() {
            return Ok(());
        }
        let targets_every = if live.is_empty() {
            IDLE_NO_TARGETS
        } else {
            TARGETS_EVERY
        };
        if targets_read.elapsed() >= targets_every {
            targets_read = Instant::now();
            refresh_targets(notifier, &mut live).await?;
        }
        if last_census.elapsed() >= census_pause {
            last_census = Instant::now();
            census_pause = census(notifier, &live, hold).await?;
        }
        let now = Instant::now();
        let rounds: Vec<futures::future::BoxFuture<'_, mongodb::error::Result<Round>>> = live
            .values_mut()
            .filter(|l| l.next_try <= now)
            .map(|l| Box::pin(round(notifier, l, hold)) as _)
            .collect();
        let results = futures::future::join_all(rounds).await;
        if hold.lost() {
            return Ok(());
        }
        let (mut progress, mut full) = (false, false);
        for r in results {
            let r = r?;
            progress |= r.progress;
            full |= r.full;
        }
        if progress && !full {
            // A round that found less than a window waits a moment for more: the outbox is
            // read and cleared once per window instead of once per event or two, which leaves
            // the database to the writes (a busy target's events come in windows, not one by
            // one).
            tokio::time::sleep(LINGER).await;
        }
        if !progress {
            let idle = if live.is_empty() {
                IDLE_NO_TARGETS
            } else {
                IDLE_POLL
            };
            let soonest = live
                .values()
                .filter(|l| l.next_try > Instant::now())
                .map(|l| l.next_try.saturating_duration_since(Instant::now()))
                .min()
                .unwrap_or(idle)
                .min(idle)
                .min(hold.renewal_due().await);
            notifier.queued(soonest).await;
        }
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
            held: HashMap::new(),
            last_taken: None,
        });
    }
    Ok(())
}

/// One round at one target; whether anything was delivered (or buried).
async fn round(
    notifier: &Notifier,
    l: &mut Live,
    hold: &Hold<'_>,
) -> mongodb::error::Result<Round> {
    let name = l.spec.name();
    let now = Instant::now();
    let skip: std::collections::HashSet<String> = l
        .held
        .iter()
        .filter(|(_, h)| h.until > now)
        .map(|(bk, _)| bk.clone())
        .collect();
    let window = notifier.outbox().head(&name, WINDOW, &skip).await?;
    drop(skip);
    // Everything that leaves the window this round (delivered, or copied to the dead letters)
    // is removed in one go at its end: see `Outbox::copy_to_dead`.
    let mut gone: Vec<Bson> = Vec::new();
    // An event that cannot be sent (a damaged document) would otherwise hold up its key for
    // good: to the dead letters.
    if !window.damaged.is_empty() {
        if hold.time_left().await.is_none() {
            return Ok(Round::default());
        }
        let ids = notifier
            .outbox()
            .copy_to_dead(window.damaged.clone(), "damaged", notifier.clock().now())
            .await?;
        crate::metrics::notify_dead(&name, ids.len() as u64);
        tracing::warn!(target = %name, events = ids.len(), "damaged event notifications moved to the dead letters");
        gone.extend(ids);
    }
    let head = &window.events;
    // A held key is forgotten when its next event goes through; one whose wait has long been
    // over without it coming up again (its events were buried by the bounds) is forgotten too.
    l.held.retain(|bk, h| {
        h.until + Duration::from_secs(600) > now || head.iter().any(|d| key_of(d) == *bk)
    });
    let Some(first) = head.first() else {
        // The damaged events, and groups found empty (left by a removal cut short): gone, so
        // that they cannot fill the window.
        if notifier.outbox().remove(&window, &gone).await? > 0 {
            return Ok(Round {
                progress: true,
                full: window.full,
            });
        }
        // Nothing to send but held keys: the target's next try is when the first of them is
        // due (not at once, which would query the queue in a loop while it is down).
        if let Some(due) = l.held.values().map(|h| h.until).filter(|u| *u > now).min() {
            l.next_try = due;
        } else {
            crate::metrics::notify_oldest(&name, 0.0);
        }
        return Ok(Round::default());
    };
    if let Ok(at) = first.get_datetime("at") {
        let age = notifier.clock().now().timestamp_millis() - at.timestamp_millis();
        crate::metrics::notify_oldest(&name, age.max(0) as f64 / 1000.0);
    }
    // Keys in the order their first event comes, each with its events in order.
    let mut keys: Vec<(String, Vec<&Document>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for d in head {
        let k = key_of(d);
        let i = *index.entry(k.clone()).or_insert_with(|| {
            keys.push((k, Vec::new()));
            keys.len() - 1
        });
        keys[i].1.push(d);
    }
    let sender = &*l.sender;
    type Outcome<'d> = (Vec<Bson>, Option<(&'d Document, targets::SendError)>);
    // Boxed as `Send` futures first: a stream of unboxed ones borrowing the batch trips the
    // compiler's higher-ranked `Send` check when the dispatcher is spawned.
    // The first key that finds the target unreachable ends the round for the keys not yet
    // started: a target that does not answer costs a round one send timeout, not one per key.
    let unreachable = std::sync::atomic::AtomicBool::new(false);
    let deliveries: Vec<futures::future::BoxFuture<'_, Outcome<'_>>> = keys
        .iter()
        .map(|(_, events)| Box::pin(deliver_key(sender, events, &unreachable, hold)) as _)
        .collect();
    let outcomes: Vec<Outcome<'_>> = futures::stream::iter(deliveries)
        .buffered(PARALLEL_KEYS)
        .collect()
        .await;
    if outcomes.iter().any(|(ids, _)| !ids.is_empty()) {
        l.last_taken = Some(Instant::now());
    }
    let mut delivered = Vec::new();
    let mut rejected = Vec::new();
    let mut failed_keys = Vec::new();
    let mut failure = None;
    for ((key, _), (ids, err)) in keys.iter().zip(outcomes) {
        delivered.extend(ids);
        let Some((event, e)) = err else {
            l.held.remove(key);
            continue;
        };
        let id = event.get_object_id("_id").unwrap_or_default();
        let held = l.held.entry(key.clone()).or_insert(Held {
            event: id,
            tries: 0,
            until: now,
            since: now,
        });
        if held.event != id {
            (held.event, held.tries, held.since) = (id, 0, now);
        }
        held.tries += 1;
        held.until = Instant::now() + backoff(held.tries, notifier.settings().retry_max);
        // A rejection is this event's only when the target took others since it first
        // failed: one that rejects everything (a rotated token, a proxy's 404 while it
        // deploys) is as good as down, and its events wait instead of going to the dead
        // letters one by one.
        let takes_others = l.last_taken.is_some_and(|t| t >= held.since);
        if matches!(e, targets::SendError::Rejected(_))
            && held.tries >= targets::REJECTED_TRIES
            && takes_others
        {
            // The target will never take it: to the dead letters, and the key goes on.
            rejected.push((event.clone(), e.to_string()));
            l.held.remove(key);
        } else {
            failed_keys.push(key);
        }
        failure = Some(e);
    }
    if !rejected.is_empty() && hold.time_left().await.is_none() {
        // Not this run's to bury any more: the holder tries them again.
        rejected.clear();
    }
    let buried = rejected.len();
    for (event, why) in rejected {
        let ids = notifier
            .outbox()
            .copy_to_dead(vec![event], &why, notifier.clock().now())
            .await?;
        crate::metrics::notify_dead(&name, ids.len() as u64);
        tracing::warn!(target = %name, reason = %why, "an event notification its target rejected moved to the dead letters");
        gone.extend(ids);
    }
    gone.extend(delivered.iter().cloned());
    notifier.outbox().remove(&window, &gone).await?;
    if !delivered.is_empty() {
        crate::metrics::notify_delivered(&name, delivered.len() as u64);
    }
    // Too many keys failing one by one: the target is as good as down.
    let too_many_held = l.held.len() > MAX_HELD_KEYS;
    if too_many_held {
        l.held.clear();
    }
    let progress = (!delivered.is_empty() || buried > 0) && !too_many_held;
    match failure {
        Some(e) if !progress => {
            crate::metrics::notify_failed(&name);
            l.failures = l.failures.saturating_add(1);
            let wait = backoff(l.failures, notifier.settings().retry_max);
            l.next_try = Instant::now() + wait;
            // The keys that failed wait beyond the target's pause: the round after it tries
            // the other keys first, so a window full of one failing key's backlog does not
            // come back as it was (if they fail too, the target is down after all).
            for key in failed_keys {
                if let Some(h) = l.held.get_mut(key) {
                    h.until = l.next_try + backoff(h.tries, notifier.settings().retry_max);
                }
            }
            if l.failures == 1 || l.failures.is_multiple_of(20) {
                tracing::warn!(target = %name, error = %e, failures = l.failures, retry_in = ?wait, "could not deliver an event notification");
            }
        }
        Some(e) => {
            crate::metrics::notify_failed(&name);
            tracing::debug!(target = %name, error = %e, "an event notification failed; its key waits");
            l.failures = 0;
            l.next_try = Instant::now();
        }
        None => {
            l.failures = 0;
            l.next_try = Instant::now();
        }
    }
    Ok(Round {
        progress: !delivered.is_empty() || buried > 0,
        full: window.full,
    })
}

/// What a round did.
#[derive(Default)]
struct Round {
    /// Events were delivered or buried.
    progress: bool,
    /// It read a whole window (more may be waiting).
    full: bool,
}

/// Delivers one key's events in order, stopping at the first failure: the ids delivered, and
/// the event that failed with its failure.
///
/// Each send starts only while this run surely holds the lead, and is given at most the time
/// it still does (see `hold`): once the lead is lost the key stops, its event not sent.
async fn deliver_key<'d>(
    sender: &dyn Sender,
    events: &[&'d Document],
    unreachable: &std::sync::atomic::AtomicBool,
    hold: &Hold<'_>,
) -> (Vec<Bson>, Option<(&'d Document, targets::SendError)>) {
    use std::sync::atomic::Ordering;
    let mut done = Vec::new();
    for d in events {
        if unreachable.load(Ordering::Relaxed) {
            break;
        }
        // The window holds only events with both (see `outbox::window`).
        let (Some(id), Ok(body)) = (d.get_object_id("_id").ok(), d.get_str("body")) else {
            continue;
        };
        crate::failpoint::hit("notify.send", hold.holder()).await;
        let Some(left) = hold.time_left().await else {
            break;
        };
        let sent = tokio::time::timeout(left, sender.send(&id.to_hex(), body.as_bytes()))
            .await
            .unwrap_or_else(|_| {
                Err(targets::SendError::Unreachable(format!(
                    "no answer within the {left:?} the dispatcher's lead is still sure to last"
                )))
            });
        match sent {
            Ok(()) => done.push(Bson::ObjectId(id)),
            Err(e) => {
                if matches!(e, targets::SendError::Unreachable(_)) {
                    unreachable.store(true, Ordering::Relaxed);
                }
                return (done, Some((*d, e)));
            }
        }
    }
    (done, None)
}

/// Counts each target's queue and holds the bounds: events older than the age bound, and a
/// queue's oldest events beyond the size bound, go to the dead letters.
///
/// The count reads the whole outbox, so the census comes less often as the outbox grows: the
/// number of events it held over 20,000 in seconds, from [`CENSUS_EVERY`] up to a minute (a
/// minute too when it was empty and there are no targets). What it returns is that pause.
async fn census(
    notifier: &Notifier,
    live: &HashMap<String, Live>,
    hold: &Hold<'_>,
) -> mongodb::error::Result<Duration> {
    let now = notifier.clock().now();
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
    let queued = notifier.outbox().queued_by_target().await?;
    let total: i64 = queued.iter().map(|(_, n)| *n).sum();
    for (target, n) in queued {
        if target == super::listen::LISTEN {
            continue;
        }
        crate::metrics::notify_queued(&target, n as f64);
        let out = notifier.outbox();
        // A target this instance does not know may be one of another instance's environment
        // (every instance should have the same ones, but a rolling change has them differ for
        // a while): its events wait for an instance that knows it, up to the age bound.
        // The size bound holds for those too: it protects the database.
        let (window, reason) = if n > notifier.settings().max_queued {
            let over = (n - notifier.settings().max_queued).min(SWEEP);
            (out.oldest(&target, over as usize).await?, "queue full")
        } else {
            (
                out.overdue(&target, too_old, SWEEP as usize).await?,
                "too old",
            )
        };
        // Burying is the holder's alone: a stale run could bury what the holder is sending.
        if hold.time_left().await.is_none() {
            return Ok(CENSUS_EVERY);
        }
        let buried = out
            .bury(&window, window.events.clone(), reason, now)
            .await?;
        if buried > 0 {
            crate::metrics::notify_dead(&target, buried);
            tracing::warn!(target = %target, events = buried, reason, "event notifications moved to the dead letters");
        }
    }
    for name in live.keys() {
        if notifier.outbox().any(name).await? {
            continue;
        }
        crate::metrics::notify_queued(name, 0.0);
    }
    // An empty outbox without targets has nothing to bound: the next look is a minute away.
    if total == 0 && live.is_empty() {
        return Ok(Duration::from_secs(60));
    }
    let pause = Duration::from_secs((total / 20_000).max(0) as u64);
    Ok(pause.clamp(CENSUS_EVERY, Duration::from_secs(60)))
}
