//! A search read by a declared index (`search_plan`): for each place of the driving field's
//! value, the documents whose value passes the driving comparison, in key order, in key
//! ranges bounded on both sides (a width of key space that grows while ranges come back
//! short and shrinks when one is cut at the limit), merged; then the query is evaluated on
//! each (the caller's `keep`), and only a key's current object counts.
//!
//! Each range query is flat (`{<path>: v, filename: {$gte: a, $lt: b}}`): that is what every
//! MongoDB-compatible server plans on the `{<path>, filename}` index (the local database
//! plans no index for a filter with `$and` or `$or`, nor for `{<path>: {$eq: v}}`). Bounded above, an equality
//! costs the matches in the range, not every match after it (measured on the local database,
//! 100,000 documents, 10,000 matching: a full pass in pages of 1,000 read 5,200 results/s
//! with ranges open above and 24,000/s bounded).

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::time::Instant;

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use super::keyorder::prefix_successor;
use super::search::{Kept, SearchPage, SearchScan, BATCH};
use super::search_plan::Driver;
use super::{GridFsError, ObjectInfo, ObjectStore};
use crate::storage::ranges::{top, Width};

/// The first `max` of more objects found: the next page starts after the last.
fn full(mut page: SearchPage, max: usize) -> SearchPage {
    page.objects.truncate(max);
    page.truncated = true;
    page.next_marker = page.objects.last().map(|o| o.key().to_owned());
    page
}

/// Documents beyond a batch, so that a key's revisions rarely straddle a limit.
const MARGIN: usize = 8;
/// The most revisions of one key read when they alone fill a batch.
const MAX_PER_KEY: i64 = 10_000;

/// Where the read is: every key below `lower` (and at it, unless `inclusive`) was examined.
struct Position {
    lower: String,
    inclusive: bool,
}

impl ObjectStore {
    /// One page of a search read by `driver`'s index, in `source` (the files collection, or
    /// the version index's masters when `masters`).
    pub(super) async fn search_indexed<E, K, F>(
        &self,
        bucket: &str,
        s: &SearchScan,
        driver: &Driver,
        masters: bool,
        mut keep: K,
    ) -> std::result::Result<SearchPage, E>
    where
        E: From<GridFsError>,
        K: FnMut(Vec<ObjectInfo>) -> F,
        F: Future<Output = std::result::Result<Kept, E>>,
    {
        // (Where a test knows a search was read by an index.)
        crate::failpoint::hit("search.indexed", bucket).await;
        let started = Instant::now();
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
        let mut width = Width::first_guess(&at.lower);
        let mut page = SearchPage::default();
        loop {
            if at.lower >= end {
                return Ok(page);
            }
            let upper = width
                .upper(&at.lower)
                .filter(|u| *u < end)
                .unwrap_or_else(|| end.clone());
            let mut range = Document::new();
            range.insert(if at.inclusive { "$gte" } else { "$gt" }, &at.lower);
            range.insert("$lt", &upper);
            let (docs, cut_at) = read_branches(&source, driver, Bson::Document(range))
                .await
                .map_err(GridFsError::from)?;
            let (docs, next) = match cut_at {
                // One key's documents alone filled a batch: that key is read by itself.
                Some(k) if k == at.lower && at.inclusive => {
                    let docs = read_key(&source, driver, &k)
                        .await
                        .map_err(GridFsError::from)?;
                    let next = Position {
                        lower: k,
                        inclusive: false,
                    };
                    (docs, next)
                }
                Some(k) => {
                    width = width.scaled(0.5).unwrap_or(width);
                    let next = Position {
                        lower: k,
                        inclusive: true,
                    };
                    (docs, next)
                }
                None => {
                    if docs.len() * 4 < BATCH {
                        width = width.scaled(4.0).unwrap_or_else(Width::widest);
                    }
                    let next = Position {
                        lower: upper,
                        inclusive: true,
                    };
                    (docs, next)
                }
            };
            let stop = self
                .take(bucket, masters, docs, &mut page, &mut keep)
                .await?;
            if page.objects.len() > s.max {
                return Ok(full(page, s.max));
            }
            if let Some(marker) = stop {
                page.truncated = true;
                page.next_marker = Some(marker);
                return Ok(page);
            }
            at = next;
            if at.lower >= end {
                return Ok(page);
            }
            if started.elapsed() >= s.budget {
                // A marker is passed strictly: the key the read stands at is examined alone.
                if at.inclusive {
                    let docs = read_key(&source, driver, &at.lower)
                        .await
                        .map_err(GridFsError::from)?;
                    self.take(bucket, masters, docs, &mut page, &mut keep)
                        .await?;
                    if page.objects.len() > s.max {
                        return Ok(full(page, s.max));
                    }
                }
                page.truncated = true;
                page.next_marker = Some(at.lower);
                return Ok(page);
            }
        }
    }

    /// Evaluates one batch of documents and adds the current objects that match; the key a
    /// next page starts after when the test ran out of time before the batch's end.
    async fn take<E, K, F>(
        &self,
        bucket: &str,
        masters: bool,
        docs: Vec<Document>,
        page: &mut SearchPage,
        keep: &mut K,
    ) -> std::result::Result<Option<String>, E>
    where
        E: From<GridFsError>,
        K: FnMut(Vec<ObjectInfo>) -> F,
        F: Future<Output = std::result::Result<Kept, E>>,
    {
        page.examined += docs.len();
        let candidates = self.candidates(bucket, masters, docs).await?;
        let keys: Vec<String> = candidates.iter().map(|o| o.key().to_owned()).collect();
        let kept = keep(candidates).await?;
        page.objects
            .extend(self.current(bucket, masters, kept.objects).await?);
        // (The test examines a batch's first key at least, and stops only where a key ends.)
        Ok((kept.examined < keys.len()).then(|| keys[kept.examined.max(1) - 1].clone()))
    }

    /// The objects of documents an index read: a master as the listing reads it (a
    /// placeholder's key repaired, and skipped when deleted), a files document as it is.
    async fn candidates(
        &self,
        bucket: &str,
        masters: bool,
        docs: Vec<Document>,
    ) -> super::Result<Vec<ObjectInfo>> {
        let mut out = Vec::new();
        for d in docs {
            if masters {
                out.extend(self.listed(bucket, d, true, false).await?);
            } else {
                out.push(Self::object_of(d)?);
            }
        }
        Ok(out)
    }

    /// Of matching objects, those that are their key's current object: a master is; a files
    /// document only when no newer revision of its key exists.
    async fn current(
        &self,
        bucket: &str,
        masters: bool,
        kept: Vec<ObjectInfo>,
    ) -> super::Result<Vec<ObjectInfo>> {
        if masters || kept.is_empty() {
            return Ok(kept);
        }
        let keys: Vec<&str> = kept.iter().map(|o| o.key()).collect();
        let revisions: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": {"$in": keys}})
            .projection(doc! {"_id": 1, "filename": 1, "uploadDate": 1})
            .await?
            .try_collect()
            .await?;
        let mut newest: HashMap<String, (mongodb::bson::DateTime, Bson)> = HashMap::new();
        for r in revisions {
            let (Ok(k), Ok(at), Some(id)) = (
                r.get_str("filename"),
                r.get_datetime("uploadDate"),
                r.get("_id"),
            ) else {
                continue;
            };
            let e = newest.entry(k.to_owned()).or_insert((*at, id.clone()));
            if *at > e.0 {
                *e = (*at, id.clone());
            }
        }
        let mut seen = HashSet::new();
        Ok(kept
            .into_iter()
            .filter(|o| newest.get(o.key()).map(|(_, id)| id) == Some(&o.file.id))
            .filter(|o| seen.insert(o.key().to_owned()))
            .collect())
    }
}

/// The documents of every branch whose key is in `range`, merged in key order without
/// duplicates, and where the read was cut: the lowest key a branch's limit cut at (that
/// key's documents are left out, to be read whole by the next range).
async fn read_branches(
    source: &Collection<Document>,
    driver: &Driver,
    range: Bson,
) -> mongodb::error::Result<(Vec<Document>, Option<String>)> {
    let limit = BATCH + MARGIN;
    let mut all: Vec<Document> = Vec::new();
    let mut cut_at: Option<String> = None;
    for (path, value) in &driver.branches {
        let docs: Vec<Document> = source
            .find(doc! {path: value.clone(), "filename": range.clone()})
            .sort(doc! {"filename": 1})
            .limit(limit as i64)
            .await?
            .try_collect()
            .await?;
        if docs.len() >= limit {
            if let Some(last) = docs.last().and_then(|d| d.get_str("filename").ok()) {
                if cut_at.as_deref().is_none_or(|c| last < c) {
                    cut_at = Some(last.to_owned());
                }
            }
        }
        all.extend(docs);
    }
    let mut ids = HashSet::new();
    let mut docs: Vec<Document> = all
        .into_iter()
        .filter(|d| {
            d.get_str("filename")
                .is_ok_and(|k| cut_at.as_deref().is_none_or(|c| k < c))
        })
        .filter(|d| ids.insert(d.get("_id").map(ToString::to_string)))
        .collect();
    docs.sort_by(|a, b| {
        a.get_str("filename")
            .unwrap_or_default()
            .cmp(b.get_str("filename").unwrap_or_default())
    });
    Ok((docs, cut_at))
}

/// One key's documents that pass the driving comparison, of every branch.
async fn read_key(
    source: &Collection<Document>,
    driver: &Driver,
    key: &str,
) -> mongodb::error::Result<Vec<Document>> {
    let mut ids = HashSet::new();
    let mut out = Vec::new();
    for (path, value) in &driver.branches {
        let docs: Vec<Document> = source
            .find(doc! {path: value.clone(), "filename": key})
            .limit(MAX_PER_KEY)
            .await?
            .try_collect()
            .await?;
        out.extend(
            docs.into_iter()
                .filter(|d| ids.insert(d.get("_id").map(ToString::to_string))),
        );
    }
    Ok(out)
}

/// The index names a query plan (`explain`'s `winningPlan`) reads, or `COLLSCAN`.
fn plan_indexes(plan: &Document, out: &mut Vec<String>) {
    if let Ok(n) = plan.get_str("indexName") {
        out.push(n.to_owned());
    }
    if plan.get_str("stage") == Ok("COLLSCAN") {
        out.push("COLLSCAN".into());
    }
    if let Ok(d) = plan.get_document("inputStage") {
        plan_indexes(d, out);
    }
    if let Ok(a) = plan.get_array("inputStages") {
        for d in a.iter().filter_map(mongodb::bson::Bson::as_document) {
            plan_indexes(d, out);
        }
    }
}

impl ObjectStore {
    /// How a search of `bucket` under `prefix` reads, with `driver` (`None`: a scan of its
    /// keys): the collection, and for each query it sends, its filter's shape and the indexes
    /// the database's plan for it reads (its `explain`).
    pub async fn explain_search(
        &self,
        bucket: &str,
        driver: Option<&Driver>,
        prefix: &str,
    ) -> super::Result<Document> {
        let (mode, indexed) = self.versioning(bucket).await?;
        let versioned = mode != crate::storage::versions::Versioning::Off;
        let driver = driver.filter(|_| !versioned || indexed);
        let coll = if versioned && indexed {
            self.versions(bucket).collection().clone()
        } else {
            self.gridfs(bucket).files().clone()
        };
        let end = match prefix {
            "" => crate::storage::ranges::top(),
            p => super::keyorder::prefix_successor(p).unwrap_or_else(crate::storage::ranges::top),
        };
        let range = doc! {"$gte": prefix, "$lt": &end};
        let filters: Vec<Document> = match driver {
            Some(d) => d
                .branches
                .iter()
                .map(|(p, c)| doc! {p: c.clone(), "filename": range.clone()})
                .collect(),
            None => vec![doc! {"filename": range.clone()}],
        };
        let mut queries = Vec::new();
        for f in filters {
            let explained = self
                .db()
                .run_command(doc! {
                    "explain": {"find": coll.name(), "filter": &f, "sort": {"filename": 1},
                                "limit": 1008_i64},
                    "verbosity": "queryPlanner",
                })
                .await?;
            let mut used = Vec::new();
            if let Ok(p) = explained
                .get_document("queryPlanner")
                .and_then(|q| q.get_document("winningPlan"))
            {
                plan_indexes(p, &mut used);
            }
            queries.push(doc! {"filter": f, "indexes": used});
        }
        Ok(doc! {
            "plan": if driver.is_some() { "index" } else { "scan" },
            "field": driver.map(|d| d.field.clone()),
            "collection": coll.name(),
            "queries": queries,
            "searchIndexes": self.search_index_names(&coll).await?,
        })
    }
}
