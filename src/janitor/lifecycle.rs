//! The lifecycle pass: applies the buckets' lifecycle rules (`crate::lifecycle`). Exactly one
//! instance runs it at a time, elected through a lead document in `__infostore` (database
//! time); it works in batches of 1,000 keys, and a crash midway leaves nothing to repair: the
//! next pass (by whichever instance leads then) finds what is still due.
//!
//! An expired object is removed as a DELETE removes it: every revision it had when the pass
//! read it is reclaimed (never under a reader's lease), and a revision written since, which
//! is stamped later, is left alone.

use std::time::Duration;

use crate::lifecycle::{after_days, object_expiry};
use crate::state::AppState;

/// Keys read per batch.
const BATCH: usize = 1000;

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
    let out = led_pass(st).await;
    // Given up at the end (a shortened test day runs the next pass a second later); a pass
    // that failed gives it up too, and the next tick tries again.
    lead.release_or_warn().await;
    out
}

/// The pass itself, under the lead.
async fn led_pass(st: &AppState) -> anyhow::Result<Outcome> {
    let meta = st.store.meta();
    let mut out = Outcome {
        led: true,
        ..Default::default()
    };
    let day = st.config.lifecycle_day_secs;
    for b in meta.list_buckets().await? {
        let Some(text) = &b.lifecycle else { continue };
        let Ok(rules) = crate::lifecycle::parse(text.as_bytes()) else {
            tracing::warn!(bucket = %b.name, "a stored lifecycle configuration does not parse");
            continue;
        };
        let now = meta.clock().now().to_chrono();
        for rule in rules.iter().filter(|r| r.enabled && r.expiration.is_some()) {
            let mut after: Option<String> = None;
            loop {
                let batch = st
                    .store
                    .lifecycle_candidates(&b.name, &rule.filter.prefix, after.as_deref(), BATCH)
                    .await?;
                let Some(last) = batch.last() else { break };
                after = Some(last.key.clone());
                for c in &batch {
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
                        // In a versioned bucket expiring the current version writes a delete
                        // marker, as S3 does; no version is removed. A key whose latest
                        // version is a marker already is left alone.
                        let current = st.store.head(&b.name, &c.key).await?;
                        if current.is_none_or(|o| Some(&o.file.id) != c.revisions.first()) {
                            continue;
                        }
                        let cond = crate::storage::objects::DeleteCondition::default();
                        let done = st
                            .store
                            .delete_object(&b.name, &c.key, None, &cond, &b.owner)
                            .await?;
                        if done.is_err() {
                            continue;
                        }
                    } else {
                        for id in &c.revisions {
                            st.store.reclaim(&b.name, id).await?;
                        }
                    }
                    out.expired += 1;
                }
                if batch.len() < BATCH {
                    break;
                }
            }
        }
        if b.versioning.is_some() {
            for rule in rules
                .iter()
                .filter(|r| r.enabled && (r.noncurrent_days.is_some() || r.expired_marker))
            {
                out.expired += versions_pass(st, &b, rule, day, now).await?;
            }
        }
        for rule in rules.iter().filter(|r| r.enabled && r.abort_days.is_some()) {
            let days = rule.abort_days.unwrap_or_default();
            let mut uploads = meta
                .list_uploads(&b.name, &rule.filter.prefix, None)
                .await?;
            let mut due = Vec::new();
            while let Some(up) = futures::TryStreamExt::try_next(&mut uploads).await? {
                if after_days(up.initiated.to_chrono(), days, day) <= now {
                    due.push(up);
                }
            }
            for up in due {
                st.store.abort_multipart(&up).await?;
                out.aborted += 1;
            }
        }
    }
    if out.expired + out.aborted > 0 {
        metrics::counter!("grids3_lifecycle_objects_expired_total").increment(out.expired as u64);
        metrics::counter!("grids3_lifecycle_uploads_aborted_total").increment(out.aborted as u64);
    }
    Ok(out)
}

/// NoncurrentVersionExpiration and ExpiredObjectDeleteMarker in a versioned bucket: one scan of
/// the version index under the rule's prefix, a key at a time (its versions newest first). A
/// version became noncurrent when the next newer one was written; each removal is a
/// DeleteObject of that version, under the key's lock.
async fn versions_pass(
    st: &AppState,
    b: &crate::storage::meta::BucketInfo,
    rule: &crate::lifecycle::Rule,
    day: u64,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<usize> {
    use crate::storage::versions::{entry_id, VersionEntry, VERSION};
    let idx = st.store.versions(&b.name);
    let upper = crate::storage::objects::prefix_successor(&rule.filter.prefix)
        .map(|s| format!("{VERSION}{s}"));
    let mut from = (format!("{VERSION}{}", rule.filter.prefix), true);
    let mut group: Vec<VersionEntry> = Vec::new();
    let mut removed = 0;
    loop {
        let batch = idx
            .scan(&from.0, from.1, upper.as_deref(), BATCH as i64)
            .await?;
        let last_batch = batch.len() < BATCH;
        for e in batch {
            from = (entry_id(&e.key, &e.vid), false);
            if group.first().is_some_and(|g| g.key != e.key) {
                removed +=
                    expire_versions(st, b, rule, day, now, std::mem::take(&mut group)).await?;
            }
            group.push(e);
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
            }
        }
    }
    Ok(removed)
}
