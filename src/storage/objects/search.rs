//! Metadata search's scan (issue 63): the current objects of a bucket under a prefix, in key
//! order, that a caller's test keeps, a page at a time within a time budget.
//!
//! The scan is the listing's (`list.rs`: bounded key ranges, the current object of each key
//! whatever the bucket's versioning), read up to [`BATCH`] keys at a time; each batch goes to the
//! caller's test (the query, evaluated as `search_match` says, with what the caller may
//! read of each object). The database is never handed the query: see `search_match`.
//!
//! A page ends when it is full, when the prefix is read, or when its budget is spent after
//! a batch; then it says where the scan got to, as a marker after which the next page
//! starts, so a search that finds little still answers in bounded time and makes progress.

use std::future::Future;
use std::time::{Duration, Instant};

use super::{GridFsError, ListEntry, ListQuery, ObjectInfo, ObjectStore};

/// Keys one read of the listing examines, at most.
pub const BATCH: usize = 1000;
/// Keys the first read of a page examines: reads grow from it while they are quick, so that
/// a page whose keys are slow to read (a bucket whose version index is being built checks
/// each key against it) still ends near its budget.
const FIRST_BATCH: usize = 100;

/// What to search.
#[derive(Clone, Debug)]
pub struct SearchScan {
    /// Only keys starting with this.
    pub prefix: String,
    /// Start strictly after this key.
    pub after: Option<String>,
    /// At most this many objects.
    pub max: usize,
    /// Time the page may take (checked after each batch).
    pub budget: Duration,
    /// The declared index to read by, when the query's shape allows (`search_plan`).
    pub driver: Option<super::search_plan::Driver>,
}

/// A page of results.
#[derive(Debug, Default)]
pub struct SearchPage {
    /// Matching current objects, in key order.
    pub objects: Vec<ObjectInfo>,
    /// More may follow.
    pub truncated: bool,
    /// Where the next page starts (strictly after), when truncated.
    pub next_marker: Option<String>,
    /// Keys examined.
    pub examined: usize,
}

impl ObjectStore {
    /// One page of a search: the objects of each batch the scan reads that `keep` keeps.
    pub async fn search<E, K, F>(
        &self,
        bucket: &str,
        s: &SearchScan,
        mut keep: K,
    ) -> std::result::Result<SearchPage, E>
    where
        E: From<GridFsError>,
        K: FnMut(Vec<ObjectInfo>) -> F,
        F: Future<Output = std::result::Result<Kept, E>>,
    {
        if s.max == 0 {
            // Nothing asked for: as a listing with max-keys=0, an empty page, not truncated.
            return Ok(SearchPage::default());
        }
        if let Some(d) = &s.driver {
            // Read by the index, unless the bucket's first version index is being built
            // (its keys are then known only by the listing's checks).
            let (mode, indexed) = self.versioning(bucket).await?;
            let versioned = mode != crate::storage::versions::Versioning::Off;
            if !versioned || indexed {
                return self.search_indexed(bucket, s, d, versioned, keep).await;
            }
        }
        let started = Instant::now();
        let mut after = s.after.clone();
        let mut page = SearchPage::default();
        let mut batch = FIRST_BATCH;
        loop {
            let q = ListQuery {
                prefix: s.prefix.clone(),
                delimiter: None,
                after: after.clone(),
                max: batch,
            };
            let read = Instant::now();
            let listed = self.list(bucket, &q).await?;
            batch = if read.elapsed() * 8 < s.budget {
                (batch * 2).min(BATCH)
            } else {
                (batch / 2).max(10)
            };
            page.examined += listed.entries.len();
            let last = listed.entries.last().map(|e| e.name().to_owned());
            let objects: Vec<ObjectInfo> = listed
                .entries
                .into_iter()
                .filter_map(|e| match e {
                    ListEntry::Object(o) => Some(*o),
                    ListEntry::Prefix(_) => None,
                })
                .collect();
            let keys: Vec<String> = objects.iter().map(|o| o.key().to_owned()).collect();
            let kept = keep(objects).await?;
            page.objects.extend(kept.objects);
            if page.objects.len() > s.max {
                return Ok(full_page(page, s.max));
            }
            if kept.examined < keys.len() {
                // The test ran out of time where a key ended: the next page starts after it.
                page.truncated = true;
                page.next_marker = kept
                    .examined
                    .checked_sub(1)
                    .map(|i| keys[i].clone())
                    .or(after);
                return Ok(page);
            }
            if !listed.truncated || last.is_none() {
                return Ok(page);
            }
            after = last;
            if started.elapsed() >= s.budget {
                // Every key up to `after` was examined: the next page starts after it.
                page.truncated = true;
                page.next_marker = after;
                return Ok(page);
            }
        }
    }
}

/// What a search's test kept of a batch.
#[derive(Debug, Default)]
pub struct Kept {
    /// The objects that match, in order.
    pub objects: Vec<ObjectInfo>,
    /// How many of the batch's objects it examined: all, unless the page's time ran out;
    /// then it stopped where a key ended, having examined at least the first key's objects.
    pub examined: usize,
}

/// A page of the first `max` of more objects found: the next starts after its last.
fn full_page(mut page: SearchPage, max: usize) -> SearchPage {
    page.objects.truncate(max);
    page.truncated = true;
    page.next_marker = page.objects.last().map(|o| o.key().to_owned());
    page
}

/// A page of a search of versions: matching versions in the order ListObjectVersions gives
/// (key, then newest first), each with whether it is its key's latest.
#[derive(Debug, Default)]
pub struct VersionSearchPage {
    /// Matching versions, and whether each is the latest of its key.
    pub versions: Vec<(ObjectInfo, bool)>,
    /// More may follow.
    pub truncated: bool,
    /// Where the next page starts (strictly after this key's version
    /// [`VersionSearchPage::next_version_marker`]), when truncated.
    pub next_key_marker: Option<String>,
    /// The version the next page starts after.
    pub next_version_marker: Option<String>,
}

impl ObjectStore {
    /// One page of a search of the versions of a bucket with a version index: every version
    /// that is data (a delete marker is no object, and is never found), read as
    /// ListObjectVersions reads them, up to [`BATCH`] at a time, kept as `keep` decides. The scan's
    /// `after` is the key marker, `version_marker` the version of it to start after.
    pub async fn search_versions<E, K, F>(
        &self,
        bucket: &str,
        s: &SearchScan,
        version_marker: Option<String>,
        mut keep: K,
    ) -> std::result::Result<VersionSearchPage, E>
    where
        E: From<GridFsError>,
        K: FnMut(Vec<ObjectInfo>) -> F,
        F: Future<Output = std::result::Result<Kept, E>>,
    {
        let mut page = VersionSearchPage::default();
        if s.max == 0 {
            return Ok(page);
        }
        let started = Instant::now();
        let (mut key_marker, mut version_marker) = (s.after.clone(), version_marker);
        let mut batch = FIRST_BATCH;
        loop {
            let q = super::VersionListQuery {
                prefix: s.prefix.clone(),
                delimiter: None,
                key_marker: key_marker.clone(),
                version_marker: version_marker.clone(),
                max: batch,
            };
            let read = Instant::now();
            let listed = self.list_versions(bucket, &q).await?;
            batch = if read.elapsed() * 8 < s.budget {
                (batch * 2).min(BATCH)
            } else {
                (batch / 2).max(10)
            };
            let mut last = None;
            let mut latest = std::collections::HashSet::new();
            let mut objects = Vec::new();
            let mut ids = Vec::new();
            for item in listed.items {
                let super::VersionItem::Version(e, is_latest) = item else {
                    continue;
                };
                last = Some((e.key.clone(), e.version_id().to_owned()));
                if let Some(o) = super::versioned::info_of(&e) {
                    if is_latest {
                        latest.insert((e.key.clone(), e.version_id().to_owned()));
                    }
                    ids.push((e.key.clone(), e.version_id().to_owned()));
                    objects.push(o);
                }
            }
            let kept = keep(objects).await?;
            for o in kept.objects {
                let id = (o.key().to_owned(), o.version_id.clone().unwrap_or_default());
                let is_latest = latest.contains(&id);
                page.versions.push((o, is_latest));
            }
            if page.versions.len() > s.max {
                page.versions.truncate(s.max);
                page.truncated = true;
                let (o, _) = page.versions.last().expect("max > 0");
                page.next_key_marker = Some(o.key().to_owned());
                page.next_version_marker = o.version_id.clone();
                return Ok(page);
            }
            if kept.examined < ids.len() {
                // Out of time: the next page starts after the last version examined.
                page.truncated = true;
                if let Some((k, v)) = kept.examined.checked_sub(1).map(|i| ids[i].clone()) {
                    (key_marker, version_marker) = (Some(k), Some(v));
                }
                page.next_key_marker = key_marker;
                page.next_version_marker = version_marker;
                return Ok(page);
            }
            let Some((k, v)) = last.filter(|_| listed.truncated) else {
                return Ok(page);
            };
            (key_marker, version_marker) = (Some(k), Some(v));
            if started.elapsed() >= s.budget {
                page.truncated = true;
                page.next_key_marker = key_marker;
                page.next_version_marker = version_marker;
                return Ok(page);
            }
        }
    }
}
