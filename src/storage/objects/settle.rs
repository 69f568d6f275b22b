//! Settling keys that were published without the key lock.
//!
//! An unconditional write into an unversioned bucket publishes without taking the key's lock
//! (see [`ObjectStore::publish_if`]): it looks the key's revisions up, stamps its own after the
//! newest, writes its files document and reclaims the revisions it saw. Two such writes of one
//! key that overlap in time each miss the other's revision, so the older of the two would stay
//! behind the newer one, hidden but never reclaimed. Every publish into an unversioned bucket
//! therefore queues its key here, and a background task looks at the queued keys of each
//! bucket in one query per [`SETTLE_EVERY`] and reclaims every revision but a key's current
//! one (the newest, and of two stamped in the same millisecond the one readers pick). That is
//! what an overwrite does anyway; it never touches the current revision, and a reader that
//! holds a lease on an older one keeps it (`reclaim` defers to the janitor).

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};

use super::{ObjectStore, Result};
use crate::storage::versions::Versioning;

/// How often queued keys are settled.
pub const SETTLE_EVERY: Duration = Duration::from_millis(100);

/// Keys waiting to be settled, by bucket.
type Queued = HashMap<String, BTreeSet<String>>;

/// The queued keys, and whether the task that settles them runs.
#[derive(Clone, Debug, Default)]
pub(super) struct Settling(Arc<Mutex<(Queued, bool)>>);

impl ObjectStore {
    /// Queues `key` for settling, starting the task if it is not running. The task ends when
    /// nothing is queued and no other handle on the queue is left.
    pub(super) fn settle_later(&self, bucket: &str, key: &str) {
        let mut q = self.settling.0.lock().expect("settling");
        q.0.entry(bucket.to_owned())
            .or_default()
            .insert(key.to_owned());
        if q.1 {
            return;
        }
        q.1 = true;
        let (queue, store) = (self.settling.0.clone(), self.clone());
        crate::background::spawn("settle", async move {
            loop {
                tokio::time::sleep(SETTLE_EVERY).await;
                let batch = {
                    let mut q = queue.lock().expect("settling");
                    // Two handles: this task's and `store`'s own.
                    if q.0.is_empty() && Arc::strong_count(&queue) <= 2 {
                        q.1 = false;
                        return;
                    }
                    std::mem::take(&mut q.0)
                };
                for (bucket, keys) in batch {
                    if let Err(e) = store.settle(&bucket, keys).await {
                        // Harmless: the next overwrite or delete of those keys reclaims what
                        // was left.
                        tracing::warn!(bucket, error = %e, "could not settle keys");
                    }
                }
            }
        });
    }

    /// Reclaims every revision of `keys` but its key's current one. Returns how many.
    pub async fn settle(&self, bucket: &str, keys: BTreeSet<String>) -> Result<usize> {
        if self.versioning(bucket).await?.0 != Versioning::Off {
            // Revisions are versions there; nothing is published without the lock.
            return Ok(0);
        }
        let keys: Vec<String> = keys.into_iter().collect();
        // Each key's revisions newest first, in the order readers pick the current one by
        // (`newest_first`): the database orders `_id`s of any type the same way for both, so
        // two revisions stamped in the same millisecond (overlapping writes that found the
        // same newest revision) are settled to the one every GET already returns.
        let mut sort = doc! {"filename": 1};
        sort.extend(super::newest_first());
        let docs: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": {"$in": keys}})
            .projection(doc! {"_id": 1, "filename": 1, "uploadDate": 1})
            .sort(sort)
            .await?
            .try_collect()
            .await?;
        let mut reclaimed = 0;
        let mut current: Option<String> = None;
        for mut d in docs {
            // A files document without a date is no revision grids3 wrote: left alone.
            let (Ok(name), Ok(_)) = (d.get_str("filename"), d.get_datetime("uploadDate")) else {
                continue;
            };
            // The first of a key's revisions is its current one, kept.
            if current.as_deref() != Some(name) {
                current = Some(name.to_owned());
                continue;
            }
            if let Some(id) = d.remove("_id") {
                self.reclaim(bucket, &id).await?;
                reclaimed += 1;
            }
        }
        Ok(reclaimed)
    }
}
