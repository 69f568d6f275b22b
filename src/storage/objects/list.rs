//! Listing: keys in UTF-8 byte order (MongoDB's binary string order), newest revision per key,
//! and common prefixes that are passed over by reading on, or, under a prefix with many keys,
//! with one new index seek.

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};

use super::keyorder::{common_prefix, prefix_successor};
use super::{FileDoc, ObjectInfo, ObjectStore, Result};

/// Keys under one common prefix read past before a new index seek skips the rest.
const SKIP_SCAN: usize = 1000;

/// What to list.
#[derive(Clone, Debug, Default)]
pub struct ListQuery {
    /// Only keys starting with this.
    pub prefix: String,
    /// Roll keys up to the first delimiter after the prefix.
    pub delimiter: Option<String>,
    /// Start strictly after this key or common prefix.
    pub after: Option<String>,
    /// At most this many entries (keys plus common prefixes).
    pub max: usize,
}

/// One listed entry.
#[derive(Clone, Debug)]
pub enum ListEntry {
    /// An object.
    Object(Box<ObjectInfo>),
    /// A common prefix.
    Prefix(String),
}

impl ListEntry {
    /// The key or prefix (what a continuation marker names).
    pub fn name(&self) -> &str {
        match self {
            ListEntry::Object(o) => o.key(),
            ListEntry::Prefix(p) => p,
        }
    }
}

/// A page of a listing.
#[derive(Debug, Default)]
pub struct ListPage {
    /// Entries in order.
    pub entries: Vec<ListEntry>,
    /// More entries follow.
    pub truncated: bool,
}

impl ObjectStore {
    /// Lists a bucket.
    pub async fn list(&self, bucket: &str, q: &ListQuery) -> Result<ListPage> {
        let fs = self.gridfs(bucket);
        // A versioned bucket lists its masters (one per key whose latest version is data,
        // shaped and indexed as files documents are), never old versions or deleted keys.
        let (mode, indexed) = self.versioning(bucket).await?;
        let masters = mode != crate::storage::versions::Versioning::Off && indexed;
        let source = if masters {
            self.versions(bucket).collection().clone()
        } else {
            fs.files().clone()
        };
        let delimiter = q.delimiter.as_deref().filter(|d| !d.is_empty());
        // Lower bound: (value, inclusive).
        let mut lower: (String, bool) = (q.prefix.clone(), true);
        if let Some(after) = &q.after {
            if after.as_str() >= q.prefix.as_str() {
                lower = (after.clone(), false);
                // After a common prefix, continue past everything under it.
                if let Some(d) = delimiter {
                    if after.ends_with(d)
                        && common_prefix(after, &q.prefix, d).as_deref() == Some(after)
                    {
                        if let Some(s) = prefix_successor(after) {
                            lower = (s, true);
                        }
                    }
                }
            }
        }
        let upper = if q.prefix.is_empty() {
            None
        } else {
            prefix_successor(&q.prefix)
        };
        let mut entries: Vec<ListEntry> = Vec::new();
        let want = q.max + 1; // one more than asked tells whether the listing is truncated
        'seek: loop {
            let mut range = Document::new();
            range.insert(if lower.1 { "$gte" } else { "$gt" }, lower.0.clone());
            if let Some(u) = &upper {
                range.insert("$lt", u.clone());
            }
            // Sorted exactly as the GridFS index `{filename, uploadDate}` is, so the query is an
            // index scan with no blocking SORT stage (an `_id` tie-break would sort the whole
            // remaining key range in memory on every seek). grids3 stamps each revision of a
            // key after the previous one, so uploadDates of a key never tie.
            let mut cursor = source
                .find(doc! {"filename": range})
                .sort(doc! {"filename": 1, "uploadDate": 1})
                .batch_size(if delimiter.is_some() {
                    1000
                } else {
                    (want as u32).clamp(2, 1000)
                })
                .await?;
            let mut pending: Option<Document> = None;
            // The common prefix being passed over, and how many keys under it were read so
            // far. Keys under a prefix are first skipped by reading on (cheap while they are
            // few, and on servers whose range queries cost the whole range, far cheaper than a
            // new query); past SKIP_SCAN of them, one new index seek jumps over the rest.
            let mut skipping: Option<(String, usize)> = None;
            loop {
                let Some(d) = cursor.try_next().await? else {
                    if let Some(p) = pending.take() {
                        if let Some(o) = self.listed(bucket, p, masters).await? {
                            entries.push(ListEntry::Object(Box::new(o)));
                        }
                    }
                    break 'seek;
                };
                let Some(name) = d.get_str("filename").ok().map(str::to_owned) else {
                    continue;
                };
                if let Some((cp, skipped)) = &mut skipping {
                    if name.starts_with(cp.as_str()) {
                        *skipped += 1;
                        if *skipped > SKIP_SCAN {
                            match prefix_successor(cp) {
                                Some(next) => {
                                    lower = (next, true);
                                    continue 'seek;
                                }
                                None => break 'seek,
                            }
                        }
                        continue;
                    }
                    skipping = None;
                }
                if let Some(cp) = delimiter.and_then(|dl| common_prefix(&name, &q.prefix, dl)) {
                    if let Some(p) = pending.take() {
                        if let Some(o) = self.listed(bucket, p, masters).await? {
                            entries.push(ListEntry::Object(Box::new(o)));
                        }
                        if entries.len() >= want {
                            break 'seek;
                        }
                    }
                    entries.push(ListEntry::Prefix(cp.clone()));
                    if entries.len() >= want {
                        break 'seek;
                    }
                    skipping = Some((cp, 0));
                    continue;
                }
                match &pending {
                    Some(p) if p.get_str("filename").ok() == Some(name.as_str()) => {
                        pending = Some(d)
                    }
                    Some(_) => {
                        let p = pending.replace(d).expect("some");
                        if let Some(o) = self.listed(bucket, p, masters).await? {
                            entries.push(ListEntry::Object(Box::new(o)));
                        }
                        if entries.len() >= want {
                            break 'seek;
                        }
                    }
                    None => pending = Some(d),
                }
            }
        }
        // max-keys=0 asks for nothing and, as in S3, is not truncated.
        let truncated = q.max > 0 && entries.len() > q.max;
        entries.truncate(q.max);
        Ok(ListPage { entries, truncated })
    }

    /// A listed object: a files document, or a master (a placeholder is repaired, and
    /// skipped when the key turns out deleted).
    async fn listed(&self, bucket: &str, d: Document, masters: bool) -> Result<Option<ObjectInfo>> {
        if !masters {
            return self.object_of(bucket, d).await.map(Some);
        }
        let key = d.get_str("filename").unwrap_or_default().to_owned();
        let idx = self.versions(bucket);
        let e = if crate::storage::versions::index::is_placeholder(&d) {
            // A delete that did not finish: its newest version answers, and a repair follows.
            self.repair_later(bucket, &key);
            idx.latest(&key).await?.filter(|e| !e.is_marker())
        } else {
            crate::storage::versions::index::master_entry(&d, &key)
        };
        Ok(e.as_ref().and_then(super::versioned::info_of))
    }

    /// A listed object. A file written by another GridFS client without an MD5 gets its ETag
    /// on its first listing, computed once and stored (see `ensure_etag`: a read of at most
    /// [`super::SMALL_READ`] bytes, or no read at all for a larger file).
    async fn object_of(&self, bucket: &str, d: Document) -> Result<ObjectInfo> {
        let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
        if let Err(e) = self.ensure_etag(bucket, &mut info, &d).await {
            tracing::warn!(bucket, key = info.key(), error = %e, "could not compute an ETag");
        }
        Ok(info)
    }
}
