//! Metadata search's scan (issue 63): the current objects of a bucket under a prefix, in key
//! order, whose document matches a filter (compiled by `storage::search` from a typed query,
//! never taken from a request), a page at a time within a time budget.
//!
//! The scan reads key ranges bounded on both sides (a width of key space that grows while
//! ranges come back short and shrinks when one is cut or runs out of time), so no single
//! query reads without end on a server that applies a limit only after reading its whole
//! range (the local database; see `storage::ranges`). Each query also carries the time
//! left (`maxTimeMS`): one that runs out is retried narrower. A page ends when it is full,
//! when the range is read, or when its budget is spent; then it says where the scan got to,
//! as a marker after which the next page starts, so a search that finds little still
//! answers in bounded time and makes progress.
//!
//! The current object of a key: in a bucket with a version index, its master (one per key
//! whose latest version is data); elsewhere its newest revision, checked against every
//! revision of the key, since an older one may match where the newest does not.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

use super::keyorder::prefix_successor;
use super::{ObjectInfo, ObjectStore, Result};
use crate::storage::ranges::{top, Width};

/// Rows beyond the ones asked for, so that a key's revisions rarely straddle a limit.
const MARGIN: usize = 8;
/// The shortest time one query is given.
const MIN_QUERY_TIME: Duration = Duration::from_millis(50);

/// What to search.
#[derive(Clone, Debug)]
pub struct SearchScan {
    /// The filter the current object's document must match.
    pub filter: Document,
    /// Only keys starting with this.
    pub prefix: String,
    /// Start strictly after this key.
    pub after: Option<String>,
    /// At most this many objects.
    pub max: usize,
    /// Time the page may take.
    pub budget: Duration,
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
}

/// Where the scan is: every key below (or at, when not inclusive) `lower` was examined.
struct Position {
    lower: String,
    inclusive: bool,
}

impl ObjectStore {
    /// One page of a search.
    pub async fn search(&self, bucket: &str, s: &SearchScan) -> Result<SearchPage> {
        let started = Instant::now();
        let (mode, indexed) = self.versioning(bucket).await?;
        let masters = mode != crate::storage::versions::Versioning::Off && indexed;
        let indexing = mode != crate::storage::versions::Versioning::Off && !indexed;
        let source = if masters {
            self.versions(bucket).collection().clone()
        } else {
            self.gridfs(bucket).files().clone()
        };
        let end = match s.prefix.as_str() {
            "" => top(),
            p => prefix_successor(p).unwrap_or_else(top),
        };
        let mut at = match &s.after {
            Some(a) if *a >= s.prefix => Position {
                lower: a.clone(),
                inclusive: false,
            },
            _ => Position {
                lower: s.prefix.clone(),
                inclusive: true,
            },
        };
        let want = s.max + 1;
        // The first range: about a page of keys by the fence posts this instance knows (the
        // listing's), else a first guess; then wider while ranges come back short.
        let space = format!("{}:{bucket}", if masters { "masters" } else { "files" });
        self.seed_posts(bucket, &space).await;
        let posts = ((want as u64) / crate::storage::ranges::posts::SPACING).max(1) as usize;
        let mut width = self
            .posts
            .bound(&space, &at.lower, posts)
            .and_then(|(b, _)| Width::between(&at.lower, &b))
            .unwrap_or_else(|| Width::first_guess(&at.lower));
        let mut found: Vec<ObjectInfo> = Vec::new();
        let mut exhausted = false;
        while found.len() < want {
            if at.lower >= end {
                exhausted = true;
                break;
            }
            let left = s.budget.saturating_sub(started.elapsed());
            if left.is_zero() {
                break;
            }
            let upper = width
                .upper(&at.lower)
                .filter(|u| *u < end)
                .unwrap_or_else(|| end.clone());
            let limit = want - found.len() + MARGIN;
            let mut range = Document::new();
            range.insert(if at.inclusive { "$gte" } else { "$gt" }, &at.lower);
            range.insert("$lt", &upper);
            let read = source
                .find(both(&s.filter, doc! {"filename": range}))
                .sort(doc! {"filename": 1})
                .limit(limit as i64)
                .max_time(left.max(MIN_QUERY_TIME))
                .await;
            let docs: Vec<Document> = match read {
                Ok(c) => match c.try_collect().await {
                    Ok(d) => d,
                    Err(e) if timed_out(&e) => {
                        width = width.scaled(0.25).unwrap_or(width);
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                },
                Err(e) if timed_out(&e) => {
                    width = width.scaled(0.25).unwrap_or(width);
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let docs: Vec<Document> = docs
                .into_iter()
                .filter(|d| d.get_str("filename").is_ok())
                .collect();
            let cut = docs.len() >= limit;
            let (whole, next) = if cut {
                // The last key's documents may go on past the limit: it is read again.
                let last = docs
                    .last()
                    .and_then(|d| d.get_str("filename").ok())
                    .unwrap_or_default()
                    .to_owned();
                let whole: Vec<Document> = docs
                    .into_iter()
                    .filter(|d| d.get_str("filename").ok() != Some(last.as_str()))
                    .collect();
                width = width.scaled(0.5).unwrap_or(width);
                (
                    whole,
                    Position {
                        lower: last,
                        inclusive: true,
                    },
                )
            } else {
                if docs.len() * 4 < want {
                    width = width.scaled(4.0).unwrap_or_else(Width::widest);
                }
                (
                    docs,
                    Position {
                        lower: upper,
                        inclusive: true,
                    },
                )
            };
            found.extend(
                self.current_of(bucket, (masters, indexing), whole, &s.filter)
                    .await?,
            );
            at = next;
        }
        if found.len() > s.max {
            return Ok(full_page(found, s.max));
        }
        if exhausted {
            return Ok(SearchPage {
                objects: found,
                truncated: false,
                next_marker: None,
            });
        }
        // Out of time: the key the scan stands at is examined alone, so that the marker (which
        // a next page starts strictly after) passes nothing unread.
        if at.inclusive {
            let exact = both(&s.filter, doc! {"filename": &at.lower});
            let docs: Vec<Document> = source.find(exact).await?.try_collect().await?;
            found.extend(
                self.current_of(bucket, (masters, indexing), docs, &s.filter)
                    .await?,
            );
            if found.len() > s.max {
                return Ok(full_page(found, s.max));
            }
        }
        Ok(SearchPage {
            objects: found,
            truncated: true,
            next_marker: Some(at.lower),
        })
    }

    /// Of documents that matched (sorted by key), the current objects: a master (a
    /// placeholder's key is looked up), or the newest revision of its key (while a version
    /// index is being built, only where the index has no newer word on the key).
    async fn current_of(
        &self,
        bucket: &str,
        (masters, indexing): (bool, bool),
        docs: Vec<Document>,
        filter: &Document,
    ) -> Result<Vec<ObjectInfo>> {
        if masters {
            let mut out = Vec::new();
            for d in docs {
                let key = d.get_str("filename").unwrap_or_default().to_owned();
                if !crate::storage::versions::index::is_placeholder(&d) {
                    if let Some(o) = crate::storage::versions::index::master_entry(&d, &key)
                        .as_ref()
                        .and_then(super::versioned::info_of)
                    {
                        out.push(o);
                    }
                    continue;
                }
                // A delete that did not finish: the key's newest version answers, if it is
                // data and its document matches.
                self.repair_later(bucket, &key);
                let Some(e) = self.versions(bucket).latest(&key).await? else {
                    continue;
                };
                let Some(f) = e.file.as_ref().filter(|_| !e.is_marker()) else {
                    continue;
                };
                let check = both(filter, doc! {"_id": f.id.clone()});
                let files = self.gridfs(bucket).files().clone();
                if files.find_one(check).await?.is_some() {
                    out.extend(super::versioned::info_of(&e));
                }
            }
            return Ok(out);
        }
        // The newest matching revision of each key, then only where it is the key's newest.
        let mut newest: Vec<Document> = Vec::new();
        for d in docs {
            match newest.last_mut() {
                Some(p) if p.get_str("filename").ok() == d.get_str("filename").ok() => {
                    if p.get_datetime("uploadDate").ok() < d.get_datetime("uploadDate").ok() {
                        *p = d;
                    }
                }
                _ => newest.push(d),
            }
        }
        if newest.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<&str> = newest
            .iter()
            .filter_map(|d| d.get_str("filename").ok())
            .collect();
        let revisions: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": {"$in": keys}})
            .projection(doc! {"_id": 1, "filename": 1, "uploadDate": 1})
            .await?
            .try_collect()
            .await?;
        let mut latest: HashMap<String, (mongodb::bson::DateTime, Bson)> = HashMap::new();
        for r in revisions {
            let (Ok(k), Ok(at), Some(id)) = (
                r.get_str("filename"),
                r.get_datetime("uploadDate"),
                r.get("_id"),
            ) else {
                continue;
            };
            let e = latest.entry(k.to_owned()).or_insert((*at, id.clone()));
            if *at > e.0 {
                *e = (*at, id.clone());
            }
        }
        let mut out = Vec::new();
        for d in newest {
            let key = d.get_str("filename").unwrap_or_default();
            if latest.get(key).map(|(_, id)| id) != d.get("_id") {
                continue;
            }
            if indexing {
                use super::version_state::WhileIndexing;
                match self.while_indexing(bucket, key).await? {
                    WhileIndexing::Revisions => {}
                    WhileIndexing::Current(o) if Some(&o.file.id) == d.get("_id") => {}
                    _ => continue,
                }
            }
            out.push(Self::object_of(d)?);
        }
        Ok(out)
    }

    /// Of the objects `ids` (files documents' ids), those whose document matches `filter`.
    pub async fn search_recheck(
        &self,
        bucket: &str,
        ids: Vec<Bson>,
        filter: &Document,
    ) -> Result<HashSet<String>> {
        if ids.is_empty() {
            return Ok(HashSet::new());
        }
        let docs: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(both(filter, doc! {"_id": {"$in": ids}}))
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get("_id").map(|i| i.to_string()))
            .collect())
    }
}

/// A page of the first `max` of more objects found: the next starts after its last.
fn full_page(mut found: Vec<ObjectInfo>, max: usize) -> SearchPage {
    found.truncate(max);
    let marker = found.last().map(|o| o.key().to_owned());
    SearchPage {
        objects: found,
        truncated: true,
        next_marker: marker,
    }
}

/// A search's filter and a condition of the scan's own, both (the filter may name the same
/// fields: `key` is `filename`).
fn both(filter: &Document, own: Document) -> Document {
    if filter.is_empty() {
        return own;
    }
    doc! {"$and": [filter.clone(), own]}
}

/// Whether a query ran out of its time (`maxTimeMS`).
fn timed_out(e: &mongodb::error::Error) -> bool {
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == 50)
}
