//! The lifecycle pass: applies the buckets' lifecycle rules (`crate::lifecycle`). Exactly one
//! instance runs it at a time, elected through a lead document in `__infostore` (database
//! time); it works in batches of `--lifecycle-batch` (1,000) keys and records its position
//! after each (`progress:lifecycle`: the bucket, the step of its rules, the last key done),
//! under its lead's fence. A pass cut short (its lead's time ran out, a crash, a restart)
//! leaves the next pass, on whichever instance leads then, to resume there: every rule of
//! every bucket runs to the end however large the buckets are, and a pass that went round
//! starts again from the first bucket.
//!
//! An expired object is removed as a DELETE removes it: every revision it had when the pass
//! read it is reclaimed (never under a reader's lease), and a revision written since, which
//! is stamped later, is left alone. In a versioned bucket the delete marker is written only
//! if the current version is still the one the pass judged (a condition on its revision,
//! checked under the key's lock), so a PUT that lands meanwhile is never hidden.

use std::time::Duration;

use crate::lifecycle::{after_days, object_expiry};
use crate::notify::door as events;
use crate::state::AppState;

/// The job's name, for its lead and its position.
const JOB: &str = "lifecycle";

/// One step of a bucket's lifecycle work, in the order a pass takes them.
#[derive(Clone, Copy, Debug)]
enum Step {
    /// Expiration of current objects by rule `n`.
    Expire(usize),
    /// Noncurrent versions and expired delete markers by rule `n` (versioned buckets).
    Versions(usize),
    /// AbortIncompleteMultipartUpload by rule `n`.
    Abort(usize),
}

/// The steps of a bucket's rules.
fn steps(rules: &[crate::lifecycle::Rule], versioned: bool) -> Vec<Step> {
    let on = |r: &&crate::lifecycle::Rule| r.enabled;
    let mut v: Vec<Step> = Vec::new();
    for (i, r) in rules.iter().enumerate().filter(|(_, r)| on(r)) {
        if r.expiration.is_some() {
            v.push(Step::Expire(i));
        }
    }
    if versioned {
        for (i, r) in rules.iter().enumerate().filter(|(_, r)| on(r)) {
            if r.noncurrent_days.is_some() || r.expired_marker {
                v.push(Step::Versions(i));
            }
        }
    }
    for (i, r) in rules.iter().enumerate().filter(|(_, r)| on(r)) {
        if r.abort_days.is_some() {
            v.push(Step::Abort(i));
        }
    }
    v
}

/// A pass's lead and the position it keeps.
struct Run<'a> {
    st: &'a AppState,
    fence: i64,
}

impl Run<'_> {
    /// Records the position; an error when a newer run has taken over (this one stops).
    async fn save(&self, at: Option<crate::storage::meta::Progress>) -> anyhow::Result<()> {
        if !self
            .st
            .store
            .meta()
            .set_progress(JOB, at.as_ref(), self.fence)
            .await?
        {
            return Err(LostLead.into());
        }
        if let Some(p) = &at {
            crate::failpoint::hit("lifecycle.batch", &p.bucket).await;
        }
        Ok(())
    }
}

/// What a pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Whether this instance led the pass.
    pub led: bool,
    /// Objects expired.
    pub expired: usize,
    /// Multipart uploads aborted.
    pub aborted: usize,
}

/// Runs one lifecycle pass if this instance leads it.
pub async fn pass(st: &AppState, lead_for: Duration) -> anyhow::Result<Outcome> {
    let meta = st.store.meta();
    let Some(lead) = meta.take_lead("lifecycle", lead_for).await? else {
        return Ok(Outcome::default());
    };
    let out = led_pass(st, lead.fence()).await;
    // Given up at the end (a shortened test day runs the next pass a second later); a pass
    // that failed gives it up too, and the next tick tries again.
    lead.release_or_warn().await;
    out
}

/// This run lost its lead: it stops (a newer run goes on from its own position).
#[derive(Debug)]
struct LostLead;

impl std::fmt::Display for LostLead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a newer lifecycle run took over")
    }
}

impl std::error::Error for LostLead {}

/// What a recorded position of a bucket's steps is valid for: its rules and whether it was
/// versioned (which decide its steps). A position taken under other rules starts the bucket
/// over rather than apply a key of one step to another.
fn rules_tag(text: &str, versioned: bool) -> String {
    use md5::{Digest, Md5};
    let mut h = Md5::new();
    h.update(text.as_bytes());
    h.update([u8::from(versioned)]);
    hex::encode(h.finalize())
}

/// The pass itself, under the lead: from the recorded position to the end of the last
/// bucket, recording the position after every batch. A bucket whose work fails is logged and
/// passed over to the next (the next round tries it again), so one bucket never holds back
/// the others.
async fn led_pass(st: &AppState, fence: i64) -> anyhow::Result<Outcome> {
    let meta = st.store.meta();
    let mut out = Outcome {
        led: true,
        ..Default::default()
    };
    let run = Run { st, fence };
    let from = meta.progress(JOB).await?.unwrap_or_default();
    // Buckets in name order, from the one the last run stopped in.
    for b in meta
        .list_buckets()
        .await?
        .into_iter()
        .filter(|b| b.name >= from.bucket)
    {
        let Some(text) = b.lifecycle.clone() else {
            continue;
        };
        let Ok(rules) = crate::lifecycle::parse(text.as_bytes()) else {
            tracing::warn!(bucket = %b.name, "a stored lifecycle configuration does not parse");
            continue;
        };
        let tag = rules_tag(&text, b.versioning.is_some());
        let resume =
            (b.name == from.bucket && from.tag.as_deref() == Some(tag.as_str())).then_some(&from);
        match bucket_pass(&run, &b, &rules, &tag, resume, &mut out).await {
            Ok(()) => {}
            Err(e) if e.is::<LostLead>() => return Err(e),
            Err(e) => {
                tracing::warn!(bucket = %b.name, error = %e, "the lifecycle work of a bucket failed; the pass goes on with the next bucket");
                run.save(Some(crate::storage::meta::Progress {
                    bucket: b.name.clone(),
                    step: i64::MAX,
                    after: None,
                    tag: Some(tag),
                }))
                .await?;
            }
        }
    }
    // Round: the next pass starts again from the first bucket.
    run.save(None).await?;
    Ok(out)
}

/// Counts expirations and aborts as they happen, so that a pass cut short counts what it did.
fn counted(expired: usize, aborted: usize) {
    metrics::counter!("grids3_lifecycle_objects_expired_total").increment(expired as u64);
    metrics::counter!("grids3_lifecycle_uploads_aborted_total").increment(aborted as u64);
}

/// One bucket's steps, from `resume` (the recorded position, when it was taken under the
/// same rules) on.
async fn bucket_pass(
    run: &Run<'_>,
    b: &crate::storage::meta::BucketInfo,
    rules: &[crate::lifecycle::Rule],
    tag: &str,
    resume: Option<&crate::storage::meta::Progress>,
    out: &mut Outcome,
) -> anyhow::Result<()> {
    let st = run.st;
    let meta = st.store.meta();
    let day = st.config.lifecycle_day_secs;
    let batch_size = st.config.lifecycle_batch.max(1);
    let now = meta.clock().now().to_chrono();
    for (n, step) in steps(rules, b.versioning.is_some()).into_iter().enumerate() {
        let n = n as i64;
        if resume.is_some_and(|r| n < r.step) {
            continue;
        }
        let mut after = resume.filter(|r| r.step == n).and_then(|r| r.after.clone());
        let at = |after: Option<String>| crate::storage::meta::Progress {
            bucket: b.name.clone(),
            step: n,
            after,
            tag: Some(tag.to_owned()),
        };
        match step {
            Step::Expire(i) => {
                let rule = &rules[i];
                loop {
                    let batch = st
                        .store
                        .lifecycle_candidates(
                            &b.name,
                            &rule.filter.prefix,
                            after.as_deref(),
                            batch_size,
                        )
                        .await?;
                    let Some(last) = batch.last() else { break };
                    let last = last.key.clone();
                    let n = expire_batch(st, b, rule, day, now, &batch).await?;
                    counted(n, 0);
                    out.expired += n;
                    after = Some(last);
                    run.save(Some(at(after.clone()))).await?;
                    if batch.len() < batch_size {
                        break;
                    }
                }
            }
            Step::Versions(i) => {
                let n =
                    versions_pass(run, b, &rules[i], day, now, after, batch_size, at(None)).await?;
                counted(n, 0);
                out.expired += n;
            }
            Step::Abort(i) => {
                let days = rules[i].abort_days.unwrap_or_default();
                let mut uploads =
                    meta.list_uploads(&b.name, &rules[i].filter.prefix, None, st.store.posts());
                let mut due = Vec::new();
                loop {
                    let batch = uploads.next(1000).await?;
                    if batch.is_empty() {
                        break;
                    }
                    due.extend(
                        batch
                            .into_iter()
                            .filter(|up| after_days(up.initiated.to_chrono(), days, day) <= now),
                    );
                }
                for up in due {
                    st.store.abort_multipart(&up).await?;
                    counted(0, 1);
                    out.aborted += 1;
                }
            }
        }
        // The step is done: the next run goes on with the next one.
        let mut done = at(None);
        done.step = n + 1;
        run.save(Some(done)).await?;
    }
    Ok(())
}

/// Expires what is due in one batch of current objects.
async fn expire_batch(
    st: &AppState,
    b: &crate::storage::meta::BucketInfo,
    rule: &crate::lifecycle::Rule,
    day: u64,
    now: chrono::DateTime<chrono::Utc>,
    batch: &[crate::storage::objects::LifecycleCandidate],
) -> anyhow::Result<usize> {
    let mut expired = 0;
    for c in batch {
        let due = object_expiry(
            std::slice::from_ref(rule),
            &c.key,
            c.size,
            &c.tags,
            c.written.to_chrono(),
            day,
        )
        .is_some_and(|(at, _)| at <= now);
        if !due {
            continue;
        }
        if b.versioning.is_some() {
            // In a versioned bucket expiring the current version writes a delete marker, as
            // S3 does; no version is removed. Only if the current version is still the one
            // judged here (checked under the key's lock): a PUT that landed since, or a
            // marker already there, is left alone.
            crate::failpoint::hit("lifecycle.judged", &b.name).await;
            let cond = crate::storage::objects::DeleteCondition {
                revision: c.revisions.first().cloned(),
                ..Default::default()
            };
            let done = st
                .store
                .delete_object(&b.name, &c.key, None, &cond, &b.owner)
                .await?;
            let Ok(out) = done else {
                continue;
            };
            let change = events::expired(&c.key, out.version_id, true);
            record(st, &b.name, change).await?;
        } else {
            for id in &c.revisions {
                st.store.reclaim(&b.name, id).await?;
            }
            record(st, &b.name, events::expired(&c.key, None, false)).await?;
        }
        expired += 1;
    }
    Ok(expired)
}

/// Records the event of one expiration, right after it (a pass that dies loses no event of
/// what it removed before).
async fn record(st: &AppState, bucket: &str, change: crate::notify::Change) -> anyhow::Result<()> {
    let origin = events::lifecycle_origin();
    events::record(&st.notify, st.store.meta(), bucket, &origin, &[change])
        .await
        .map_err(|e| anyhow::anyhow!("{}: {}", e.code, e.message))
}

/// NoncurrentVersionExpiration and ExpiredObjectDeleteMarker in a versioned bucket: one scan of
/// the version index under the rule's prefix, a key at a time (its versions newest first), from
/// `after` (the last entry of a key whose versions were all judged). A version became
/// noncurrent when the next newer one was written; each removal is a DeleteObject of that
/// version, under the key's lock.
#[allow(clippy::too_many_arguments)]
async fn versions_pass(
    run: &Run<'_>,
    b: &crate::storage::meta::BucketInfo,
    rule: &crate::lifecycle::Rule,
    day: u64,
    now: chrono::DateTime<chrono::Utc>,
    after: Option<String>,
    batch_size: usize,
    at: crate::storage::meta::Progress,
) -> anyhow::Result<usize> {
    use crate::storage::versions::{entry_id, VersionEntry, VERSION};
    let st = run.st;
    let idx = st.store.versions(&b.name);
    let upper = crate::storage::objects::prefix_successor(&rule.filter.prefix)
        .map(|s| format!("{VERSION}{s}"));
    // Resumed after the last key whose versions were all judged.
    let mut from = match after {
        Some(a) => (a, false),
        None => (format!("{VERSION}{}", rule.filter.prefix), true),
    };
    let mut group: Vec<VersionEntry> = Vec::new();
    let mut removed = 0;
    loop {
        let batch = idx
            .scan(&from.0, from.1, upper.as_deref(), batch_size as i64)
            .await?;
        let last_batch = batch.len() < batch_size;
        let mut done_upto = None;
        for e in batch {
            from = (entry_id(&e.key, &e.vid), false);
            if group.first().is_some_and(|g| g.key != e.key) {
                let whole = std::mem::take(&mut group);
                done_upto = whole.last().map(|l| entry_id(&l.key, &l.vid));
                removed += expire_versions(st, b, rule, day, now, whole).await?;
            }
            group.push(e);
        }
        if let Some(upto) = done_upto {
            run.save(Some(crate::storage::meta::Progress {
                after: Some(upto),
                ..at.clone()
            }))
            .await?;
        }
        if last_batch {
            break;
        }
    }
    if !group.is_empty() {
        removed += expire_versions(st, b, rule, day, now, group).await?;
    }
    Ok(removed)
}

async fn expire_versions(
    st: &AppState,
    b: &crate::storage::meta::BucketInfo,
    rule: &crate::lifecycle::Rule,
    day: u64,
    now: chrono::DateTime<chrono::Utc>,
    versions: Vec<crate::storage::versions::VersionEntry>,
) -> anyhow::Result<usize> {
    let cond = crate::storage::objects::DeleteCondition::default();
    let mut removed = 0;
    let mut left = versions.len();
    if let Some(days) = rule.noncurrent_days {
        for pair in versions.windows(2) {
            let (newer, v) = (&pair[0], &pair[1]);
            let (size, tags) = match &v.file {
                Some(f) => {
                    let m = crate::storage::objects::ObjectMeta::from_metadata(f.metadata.as_ref());
                    (m.sse.as_ref().map_or(f.length, |s| s.size), m.tags)
                }
                None => (0, Vec::new()),
            };
            if !rule.filter.matches(&v.key, size, &tags)
                || after_days(newer.at.to_chrono(), days, day) > now
            {
                continue;
            }
            let done = st
                .store
                .delete_object(&b.name, &v.key, Some(v.version_id()), &cond, &b.owner)
                .await?;
            if done.is_ok() {
                removed += 1;
                left -= 1;
                let change = events::expired(&v.key, Some(v.version_id().to_owned()), false);
                record(st, &b.name, change).await?;
            }
        }
    }
    if rule.expired_marker && left == 1 && versions[0].is_marker() {
        let m = &versions[0];
        if rule.filter.matches(&m.key, 0, &[]) {
            let done = st
                .store
                .delete_object(&b.name, &m.key, Some(m.version_id()), &cond, &b.owner)
                .await?;
            if done.is_ok() {
                removed += 1;
                let change = events::expired(&m.key, Some(m.version_id().to_owned()), false);
                record(st, &b.name, change).await?;
            }
        }
    }
    Ok(removed)
}
