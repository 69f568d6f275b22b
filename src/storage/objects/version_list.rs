//! ListObjectVersions over the version index: versions and delete markers in key order,
//! newest first within a key, with common prefixes.

use super::*;
use crate::storage::versions::{entry_id, VersionEntry, VERSION};

/// What ListObjectVersions asks for.
#[derive(Clone, Debug, Default)]
pub struct VersionListQuery {
    /// Only keys starting with this.
    pub prefix: String,
    /// Roll keys up to the first delimiter after the prefix.
    pub delimiter: Option<String>,
    /// Start after this key ...
    pub key_marker: Option<String>,
    /// ... and, if given, after this version of it.
    pub version_marker: Option<String>,
    /// At most this many versions, markers and common prefixes.
    pub max: usize,
}

/// One entry of a version listing.
#[derive(Clone, Debug)]
pub enum VersionItem {
    /// A version (data or marker) and whether it is the key's latest.
    Version(Box<VersionEntry>, bool),
    /// A common prefix.
    Prefix(String),
}

/// A page of ListObjectVersions.
#[derive(Debug, Default)]
pub struct VersionPage {
    /// In order.
    pub items: Vec<VersionItem>,
    /// More follow.
    pub truncated: bool,
}

impl ObjectStore {
    /// ListObjectVersions of a versioned bucket: the entries in `_id` order (key, then newest
    /// version first), with a new range past each common prefix.
    pub async fn list_versions(&self, bucket: &str, q: &VersionListQuery) -> Result<VersionPage> {
        let idx = self.versions(bucket);
        let delimiter = q.delimiter.as_deref().filter(|d| !d.is_empty());
        let upper = super::keyorder::prefix_successor(&q.prefix).map(|s| format!("{VERSION}{s}"));
        let mut from = (format!("{VERSION}{}", q.prefix), true);
        // The key the page continues (its first entry there is not the latest).
        let mut continuing: Option<String> = None;
        if let Some(km) = q.key_marker.as_deref().filter(|k| *k >= q.prefix.as_str()) {
            match q.version_marker.as_deref().filter(|v| !v.is_empty()) {
                Some(vm) => {
                    let vid = if vm == "null" {
                        idx.entry(km, "null").await?.map(|e| e.vid)
                    } else {
                        Some(vm.to_owned())
                    };
                    match vid {
                        Some(vid) => from = (entry_id(km, &vid), false),
                        None => from = (format!("{VERSION}{km}\u{1}"), true),
                    }
                    continuing = Some(km.to_owned());
                }
                None => {
                    from = (format!("{VERSION}{km}\u{1}"), true);
                    // After a common prefix, past everything under it.
                    if let Some(d) = delimiter {
                        if km.ends_with(d) {
                            if let Some(s) = super::keyorder::prefix_successor(km) {
                                from = (format!("{VERSION}{s}"), true);
                            }
                        }
                    }
                }
            }
        }
        let want = q.max + 1;
        let mut items: Vec<VersionItem> = Vec::new();
        let mut prev_key: Option<String> = continuing;
        // Entries in `sk` order, in bounded range queries (see `storage::ranges`).
        let mut r = crate::storage::ranges::Ranger::new(
            idx.collection().clone(),
            "sk",
            Document::new(),
            doc! {"sk": 1},
            doc! {"sk": 1},
            from,
            Some(upper.unwrap_or_else(|| "\u{7f}W".to_owned())),
            &self.posts,
            format!("versions:{bucket}"),
        );
        // Entries below this are under a common prefix already listed.
        let mut passed: Option<String> = None;
        'read: while items.len() < want {
            let batch = r.next(want - items.len()).await?;
            if batch.is_empty() {
                break;
            }
            for e in batch.iter().filter_map(VersionEntry::from_document) {
                if passed
                    .as_deref()
                    .is_some_and(|p| entry_id(&e.key, &e.vid).as_str() < p)
                {
                    continue;
                }
                if let Some((cp, dl)) = delimiter.and_then(|d| {
                    super::keyorder::common_prefix(&e.key, &q.prefix, d).map(|cp| (cp, d))
                }) {
                    items.push(VersionItem::Prefix(cp.clone()));
                    if items.len() >= want {
                        break 'read;
                    }
                    let Some(s) = super::keyorder::prefix_successor(&cp) else {
                        break 'read;
                    };
                    let next = format!("{VERSION}{s}");
                    r.skip_to(next.clone());
                    if let Some(g) = super::keyorder::sibling_guess(&cp, &q.prefix, dl, &e.key) {
                        r.guess(format!("{VERSION}{g}\u{1}"));
                    }
                    passed = Some(next);
                    prev_key = None;
                    continue;
                }
                let latest = prev_key.as_deref() != Some(e.key.as_str());
                prev_key = Some(e.key.clone());
                items.push(VersionItem::Version(Box::new(e), latest));
                if items.len() >= want {
                    break 'read;
                }
            }
        }
        r.finish();
        let truncated = q.max > 0 && items.len() > q.max;
        items.truncate(q.max);
        Ok(VersionPage { items, truncated })
    }
}
