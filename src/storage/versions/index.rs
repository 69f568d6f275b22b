//! Reads and writes of `<bucket>.versions` (see the module above for the design).

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};
use mongodb::{Collection, Database, IndexModel};

use super::{entry_id, master_id, versions_prefix, VersionEntry, VERSION};
use crate::storage::gridfs::Result;
use crate::storage::meta::is_duplicate_key;

/// A key's master.
#[derive(Clone, Debug, PartialEq)]
pub enum Master {
    /// The latest version is this data version.
    Current(Box<VersionEntry>),
    /// The latest version is being deleted (mongoclient's PHD): repair before use.
    Placeholder,
}

/// The version index of one bucket.
#[derive(Clone, Debug)]
pub struct VersionIndex {
    coll: Collection<Document>,
}

impl VersionIndex {
    /// The index of `bucket` in `db`.
    pub fn new(db: &Database, bucket: &str) -> Self {
        Self {
            coll: db.collection(&Self::collection_name(bucket)),
        }
    }

    /// `<bucket>.versions`: no GridFS bucket's collection can have that name (those end in
    /// `.files` or `.chunks`).
    pub fn collection_name(bucket: &str) -> String {
        format!("{bucket}.versions")
    }

    /// The collection (for plans and fsck).
    pub fn collection(&self) -> &Collection<Document> {
        &self.coll
    }

    /// The listing index over masters (`filename` is only on masters), shaped as GridFS's own
    /// files index so the same listing code runs over either.
    pub async fn ensure_indexes(&self) -> Result<()> {
        let existing: Vec<IndexModel> = match self.coll.list_indexes().await {
            Ok(c) => c.try_collect().await?,
            Err(_) => Vec::new(),
        };
        // Masters in key order (listings), entries in `_id` order (a key's versions,
        // ListObjectVersions).
        for keys in [doc! {"filename": 1, "uploadDate": 1}, doc! {"sk": 1}] {
            if !existing.iter().any(|ix| ix.keys == keys) {
                self.coll
                    .create_index(IndexModel::builder().keys(keys).build())
                    .await?;
            }
        }
        Ok(())
    }

    /// The master of `key`.
    pub async fn master(&self, key: &str) -> Result<Option<Master>> {
        let Some(d) = self.coll.find_one(doc! {"_id": master_id(key)}).await? else {
            return Ok(None);
        };
        if is_placeholder(&d) {
            return Ok(Some(Master::Placeholder));
        }
        Ok(master_entry(&d, key).map(|e| Master::Current(Box::new(e))))
    }

    /// The newest version of `key` (data or marker).
    pub async fn latest(&self, key: &str) -> Result<Option<VersionEntry>> {
        let d = self
            .coll
            .find_one(key_range(key))
            .sort(doc! {"sk": 1})
            .await?;
        Ok(d.as_ref().and_then(VersionEntry::from_document))
    }

    /// One version by its id (`null`: the null version).
    pub async fn entry(&self, key: &str, version_id: &str) -> Result<Option<VersionEntry>> {
        if version_id == "null" {
            return Ok(self.null_entries(key).await?.into_iter().next());
        }
        let d = self
            .coll
            .find_one(doc! {"_id": entry_id(key, version_id)})
            .await?;
        Ok(d.as_ref().and_then(VersionEntry::from_document))
    }

    /// The key's null versions, newest first (more than one only after a crash between the
    /// write of a new null version and the removal of the old one).
    pub async fn null_entries(&self, key: &str) -> Result<Vec<VersionEntry>> {
        // The key's versions by the index, the null ones picked here (a filter on `null` as
        // well would not be an index scan on every server).
        Ok(self
            .all_versions(key)
            .await?
            .into_iter()
            .filter(|e| e.null)
            .collect())
    }

    /// Every version of `key`, newest first.
    pub async fn all_versions(&self, key: &str) -> Result<Vec<VersionEntry>> {
        let docs: Vec<Document> = self
            .coll
            .find(key_range(key))
            .sort(doc! {"sk": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(VersionEntry::from_document)
            .collect())
    }

    /// Records a version (a re-insert of the same entry, by a retry or a rebuild, is a no-op).
    pub async fn insert(&self, e: &VersionEntry) -> Result<()> {
        match self.coll.insert_one(e.to_document()).await {
            Ok(_) => Ok(()),
            Err(err) if is_duplicate_key(&err) => Ok(()),
            Err(err) => Err(err.into()),
        }
    }

    /// Applies `update` to the entries (and the master) of `key` that name the file `file_id`:
    /// a storage-mode conversion changes where the file's content is. A range of `sk` (indexed)
    /// and the master by `_id`.
    pub async fn update_file(
        &self,
        key: &str,
        file_id: &mongodb::bson::Bson,
        update: Document,
    ) -> Result<()> {
        // The key's entries by their indexed range, then each naming the file by `_id` (one
        // index per query: SecantusDB scans for a range with another predicate).
        let prefix = versions_prefix(key);
        let upper = format!("{VERSION}{key}\u{1}");
        let mut ids: Vec<Document> = self
            .coll
            .find(doc! {"sk": {"$gte": prefix, "$lt": upper}})
            .projection(doc! {"_id": 1, "fileId": 1})
            .await?
            .try_collect()
            .await?;
        if let Some(m) = self
            .coll
            .find_one(doc! {"_id": master_id(key)})
            .projection(doc! {"_id": 1, "fileId": 1})
            .await?
        {
            ids.push(m);
        }
        for d in ids.iter().filter(|d| d.get("fileId") == Some(file_id)) {
            if let Some(id) = d.get("_id") {
                self.coll
                    .update_one(doc! {"_id": id.clone()}, update.clone())
                    .await?;
            }
        }
        Ok(())
    }

    /// Removes a version's entry.
    pub async fn remove(&self, key: &str, vid: &str) -> Result<()> {
        self.remove_id(&entry_id(key, vid)).await
    }

    /// Removes an entry by its `_id`.
    pub async fn remove_id(&self, id: &str) -> Result<()> {
        self.coll.delete_one(doc! {"_id": id}).await?;
        Ok(())
    }

    /// Makes `e` the key's latest version: a data version becomes the master, a delete marker
    /// removes it. The caller holds the key's lock: every master write of a key is serialised
    /// under it, so each writes what it just made newest. (A conditional write would need a
    /// filter beside `_id`, which not every MongoDB-compatible server answers from an index.)
    pub async fn set_master(&self, e: &VersionEntry) -> Result<()> {
        match e.master_document() {
            Some(m) => {
                self.coll
                    .replace_one(doc! {"_id": master_id(&e.key)}, m)
                    .upsert(true)
                    .await?;
            }
            None => {
                self.coll
                    .delete_one(doc! {"_id": master_id(&e.key)})
                    .await?;
            }
        }
        Ok(())
    }

    /// Puts the placeholder in place of the master before the latest version is deleted
    /// (under the key's lock).
    pub async fn set_placeholder(&self, key: &str) -> Result<()> {
        self.coll
            .replace_one(
                doc! {"_id": master_id(key)},
                doc! {"_id": master_id(key), "filename": key, "isPHD": true},
            )
            .upsert(true)
            .await?;
        Ok(())
    }

    /// Sets a key's master from its newest entry (after a placeholder, or a crash between an
    /// entry's insert and the master's write), under the key's lock; returns the newest data
    /// version, if the latest is one.
    pub async fn sync_master(&self, key: &str) -> Result<Option<VersionEntry>> {
        let latest = self.latest(key).await?;
        match &latest {
            Some(e) => self.set_master(e).await?,
            None => {
                self.coll.delete_one(doc! {"_id": master_id(key)}).await?;
            }
        }
        Ok(latest.filter(|e| !e.is_marker()))
    }

    /// Applies an attribute write (`update`: `$set`/`$unset` of `metadata.<field>`) to the
    /// `metadata` a version's entry repeats, and its master's when the master names it, under
    /// the key's lock; each only where its copy is older than attribute revision `rev`, so
    /// that of two attribute writes the later one's copy stays, whichever finishes last, and
    /// no other field of the copy (a rewrapped data key, say) is put back.
    pub async fn set_metadata_if_older(
        &self,
        key: &str,
        vid: &str,
        update: Document,
        rev: i64,
    ) -> Result<()> {
        let older = |id: String| {
            doc! {"_id": id, "$or": [
                {"metadata.s3AttrRev": {"$lt": rev}},
                {"metadata.s3AttrRev": {"$exists": false}},
            ]}
        };
        self.coll
            .update_one(older(entry_id(key, vid)), update.clone())
            .await?;
        if let Some(Master::Current(m)) = self.master(key).await? {
            if m.vid == vid {
                self.coll.update_one(older(master_id(key)), update).await?;
            }
        }
        Ok(())
    }

    /// Entries in `_id` order from `from` (inclusive or not) while below `to`, at most `limit`.
    pub async fn scan(
        &self,
        from: &str,
        inclusive: bool,
        to: Option<&str>,
        limit: i64,
    ) -> Result<Vec<VersionEntry>> {
        let mut range = Document::new();
        range.insert(if inclusive { "$gte" } else { "$gt" }, from);
        range.insert("$lt", to.unwrap_or("\u{7f}W"));
        let docs: Vec<Document> = self
            .coll
            .find(doc! {"sk": range})
            .sort(doc! {"sk": 1})
            .limit(limit)
            .batch_size(limit.clamp(1, 1000) as u32)
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(VersionEntry::from_document)
            .collect())
    }

    /// Drops the index (DeleteBucket).
    pub async fn drop(&self) -> Result<()> {
        self.coll.drop().await?;
        Ok(())
    }
}

/// The filter of every entry of `key` (in `sk`, the indexed copy of `_id`).
fn key_range(key: &str) -> Document {
    doc! {"sk": {"$gt": versions_prefix(key), "$lt": format!("{VERSION}{key}\u{1}")}}
}

/// A master read as the entry it names.
pub fn master_entry(d: &Document, key: &str) -> Option<VersionEntry> {
    let file = super::file_of(d, key)?;
    Some(VersionEntry {
        key: key.to_owned(),
        vid: d.get_str("vid").ok()?.to_owned(),
        null: d.get_bool("null").unwrap_or(false),
        at: file.upload_date,
        owner: None,
        file: Some(file),
    })
}

/// Whether a master document is the placeholder: mongoclient names the field `isPHD`, which
/// grids3 writes; `phd` is what grids3 wrote before, still read.
pub fn is_placeholder(d: &Document) -> bool {
    d.get_bool("isPHD").unwrap_or(false) || d.get_bool("phd").unwrap_or(false)
}
