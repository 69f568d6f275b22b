//! Listing: keys in UTF-8 byte order (MongoDB's binary string order), newest revision per key,
//! and common prefixes, read in range queries bounded on both sides (`storage::ranges`).

use mongodb::bson::{doc, Document};

use super::keyorder::{common_prefix, prefix_successor, sibling_guess};
use super::{FileDoc, ObjectInfo, ObjectStore, Result};
use crate::storage::ranges::Ranger;

/// `a` is an older revision than `b` (of the same key).
fn older(a: &Document, b: &Document) -> bool {
    match (a.get_datetime("uploadDate"), b.get_datetime("uploadDate")) {
        (Ok(x), Ok(y)) => x < y,
        _ => false,
    }
}

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
    /// Lists a bucket: bounded range queries (see `storage::ranges`), the newest revision of
    /// each key, and common prefixes passed over with a new range past each.
    pub async fn list(&self, bucket: &str, q: &ListQuery) -> Result<ListPage> {
        let fs = self.gridfs(bucket);
        // A versioned bucket lists its masters (one per key whose latest version is data,
        // shaped and indexed as files documents are), never old versions or deleted keys.
        let (mode, indexed) = self.versioning(bucket).await?;
        let masters = mode != crate::storage::versions::Versioning::Off && indexed;
        let indexing = mode != crate::storage::versions::Versioning::Off && !indexed;
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
        let end = if q.prefix.is_empty() {
            None
        } else {
            prefix_successor(&q.prefix)
        };
        let space = format!("{}:{bucket}", if masters { "masters" } else { "files" });
        self.seed_posts(bucket, &space).await;
        // Sorted on the filename alone, which a `{filename, uploadDate}` index serves on any
        // server (and which SecantusDB answers in index order with no sort of its own); a key's
        // revisions come in one answer (the ranger never splits a key), and the newest is
        // picked here.
        let mut r = Ranger::new(
            source,
            "filename",
            Document::new(),
            doc! {"filename": 1},
            doc! {"uploadDate": -1},
            lower,
            end,
            &self.posts,
            space,
        );
        let mut entries: Vec<ListEntry> = Vec::new();
        let want = q.max + 1; // one more than asked tells whether the listing is truncated
        let mut pending: Option<Document> = None;
        // Keys below this are under a common prefix already listed.
        let mut passed: Option<String> = None;
        'read: while entries.len() < want {
            let batch = r.next(want - entries.len()).await?;
            if batch.is_empty() {
                break;
            }
            for d in batch {
                let Some(name) = d.get_str("filename").ok().map(str::to_owned) else {
                    continue;
                };
                if passed.as_deref().is_some_and(|p| name.as_str() < p) {
                    continue;
                }
                if let Some((cp, dl)) =
                    delimiter.and_then(|dl| common_prefix(&name, &q.prefix, dl).map(|cp| (cp, dl)))
                {
                    if let Some(p) = pending.take() {
                        if let Some(o) = self.listed(bucket, p, masters, indexing).await? {
                            entries.push(ListEntry::Object(Box::new(o)));
                        }
                        if entries.len() >= want {
                            break 'read;
                        }
                    }
                    entries.push(ListEntry::Prefix(cp.clone()));
                    if entries.len() >= want {
                        break 'read;
                    }
                    let Some(next) = prefix_successor(&cp) else {
                        break 'read;
                    };
                    r.skip_to(next.clone());
                    if let Some(g) = sibling_guess(&cp, &q.prefix, dl, &name) {
                        r.guess(g);
                    }
                    passed = Some(next);
                    continue;
                }
                match &pending {
                    Some(p) if p.get_str("filename").ok() == Some(name.as_str()) => {
                        if !older(&d, p) {
                            pending = Some(d);
                        }
                    }
                    Some(_) => {
                        let p = pending.replace(d).expect("some");
                        if let Some(o) = self.listed(bucket, p, masters, indexing).await? {
                            entries.push(ListEntry::Object(Box::new(o)));
                        }
                        if entries.len() >= want {
                            break 'read;
                        }
                    }
                    None => pending = Some(d),
                }
            }
        }
        if entries.len() < want {
            if let Some(p) = pending.take() {
                if let Some(o) = self.listed(bucket, p, masters, indexing).await? {
                    entries.push(ListEntry::Object(Box::new(o)));
                }
            }
        }
        r.finish();
        self.keep_learned(bucket, r.take_learned());
        // max-keys=0 asks for nothing and, as in S3, is not truncated.
        let truncated = q.max > 0 && entries.len() > q.max;
        entries.truncate(q.max);
        Ok(ListPage { entries, truncated })
    }

    /// A listed object: a files document (checked against the version index while it is
    /// being built), or a master (a placeholder is repaired, and skipped when the key turns
    /// out deleted).
    pub(super) async fn listed(
        &self,
        bucket: &str,
        d: Document,
        masters: bool,
        indexing: bool,
    ) -> Result<Option<ObjectInfo>> {
        if indexing {
            let key = d.get_str("filename").unwrap_or_default().to_owned();
            return match self.while_indexing(bucket, &key).await? {
                super::version_state::WhileIndexing::Revisions => Self::object_of(d).map(Some),
                super::version_state::WhileIndexing::Current(o) => Ok(Some(*o)),
                super::version_state::WhileIndexing::Deleted => Ok(None),
            };
        }
        if !masters {
            return Self::object_of(d).map(Some);
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
    /// from its files document (see `ensure_etag`: no read, no write).
    pub(super) fn object_of(d: Document) -> Result<ObjectInfo> {
        let mut info = ObjectInfo::from_file(FileDoc::from_document(&d)?);
        super::etag::ensure_etag(&mut info, &d);
        Ok(info)
    }
}
