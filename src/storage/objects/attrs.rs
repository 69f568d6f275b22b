//! Attribute writes (tags, ACL grants, retention, legal hold) as compare-and-set: each writes
//! only the attribute fields of one revision, and only if its attribute revision
//! (`metadata.s3AttrRev`) is still the one the caller's decision read. Two writers that race
//! therefore never lose each other's change: the one that loses re-reads and decides again
//! (an acknowledged retention can no longer be written over by a tagging call that read the
//! object before it). In a versioned bucket the write holds the key's lock, under which a
//! DeleteObject of the version decides on the index's copy: a hold or retention is either
//! stored before that decision, or refused because the version is gone, never acknowledged
//! on a version deleted meanwhile.

use mongodb::bson::{doc, Bson, Document};

use super::{ObjectInfo, ObjectMeta, ObjectStore};
use crate::storage::gridfs::Result;

/// The `metadata` fields an attribute write owns; every other field (the ETag, the content
/// headers, user metadata, encryption) is left as stored.
const ATTR_FIELDS: &[&str] = &["tags", "grants", "acl", "s3Retention", "s3LegalHold"];

/// The stored name of the attribute revision.
pub(crate) const ATTR_REV: &str = "s3AttrRev";

/// The outcome of [`ObjectStore::write_attrs_if`].
#[derive(Debug)]
pub enum AttrWrite {
    /// Written: the revision as it now is.
    Written(Box<ObjectInfo>),
    /// Another write changed the attributes since they were read: the revision as it now is,
    /// to decide again on.
    Changed(Box<ObjectInfo>),
    /// The revision is gone (deleted or reclaimed since it was read).
    Gone,
}

/// `$set` / `$unset` of the attribute fields (and the revision) of `stored` under `prefix`
/// (`metadata.`), so that no other field of the document is touched.
fn attr_update(stored: &Document, prefix: &str) -> Document {
    let mut set = Document::new();
    let mut unset = Document::new();
    for f in ATTR_FIELDS.iter().chain(&[ATTR_REV]) {
        match stored.get(*f) {
            Some(v) => set.insert(format!("{prefix}{f}"), v.clone()),
            None => unset.insert(format!("{prefix}{f}"), ""),
        };
    }
    let mut update = doc! {"$set": set};
    if !unset.is_empty() {
        update.insert("$unset", unset);
    }
    update
}

impl ObjectStore {
    /// Writes `new`'s attribute fields onto the revision `read` describes, by its `_id` (so
    /// never onto a newer revision), if its attribute revision is still `read`'s; and in a
    /// versioned bucket, under the key's lock and only while the version is still there, onto
    /// the copies its version entry and master keep, where those are older (so a slower
    /// writer never puts back what a faster one replaced).
    pub async fn write_attrs_if(
        &self,
        bucket: &str,
        read: &ObjectInfo,
        new: &ObjectMeta,
    ) -> Result<AttrWrite> {
        let mut meta = read.meta.clone();
        meta.tags = new.tags.clone();
        meta.grants = new.grants.clone();
        meta.acl = new.acl.clone();
        meta.retention = new.retention.clone();
        meta.legal_hold = new.legal_hold;
        meta.attr_rev = read.meta.attr_rev + 1;
        let stored = meta.to_metadata();
        if read.version_id.is_none() {
            return self.cas_attrs(bucket, read, &meta, &stored).await;
        }
        let idx = self.versions(bucket);
        self.under_lock(bucket, read.key(), async {
            // The version must still be there (one lookup: the null version by its alias).
            let vid = match read.version_id.as_deref() {
                Some("null") => "null".to_owned(),
                other => read
                    .meta
                    .version_id
                    .clone()
                    .or(other.map(str::to_owned))
                    .unwrap_or_default(),
            };
            let Some(entry) = idx.entry(read.key(), &vid).await? else {
                return Ok(AttrWrite::Gone);
            };
            let vid = entry.vid;
            let out = self.cas_attrs(bucket, read, &meta, &stored).await?;
            if let AttrWrite::Written(_) = &out {
                idx.set_metadata_if_older(
                    read.key(),
                    &vid,
                    attr_update(&stored, "metadata."),
                    meta.attr_rev,
                )
                .await?;
            }
            Ok(out)
        })
        .await
    }

    /// The compare-and-set on the files document.
    async fn cas_attrs(
        &self,
        bucket: &str,
        read: &ObjectInfo,
        meta: &ObjectMeta,
        stored: &Document,
    ) -> Result<AttrWrite> {
        let fs = self.gridfs(bucket);
        let files = fs.files();
        let rev = read.meta.attr_rev;
        let id = read.file.id.clone();
        let written = if read.file.metadata.is_none() {
            // A file with no `metadata` document (another GridFS client's, or one stored with
            // `metadata: null`): write one whole, if there is still none.
            files
                .update_one(
                    doc! {"_id": id.clone(), "metadata": Bson::Null},
                    doc! {"$set": {"metadata": stored.clone()}},
                )
                .await?
                .matched_count
                == 1
        } else {
            let cond = if rev == 0 {
                doc! {"_id": id.clone(), format!("metadata.{ATTR_REV}"): {"$exists": false}}
            } else {
                doc! {"_id": id.clone(), format!("metadata.{ATTR_REV}"): rev}
            };
            files
                .update_one(cond, attr_update(stored, "metadata."))
                .await?
                .matched_count
                == 1
        };
        if !written {
            let Some(d) = files.find_one(doc! {"_id": id}).await? else {
                return Ok(AttrWrite::Gone);
            };
            let mut fresh = read.clone();
            fresh.file.metadata = d.get_document("metadata").ok().cloned();
            fresh.meta = ObjectMeta::from_metadata(fresh.file.metadata.as_ref());
            if fresh.meta.etag.is_none() {
                fresh.meta.etag = read.meta.etag.clone();
            }
            return Ok(AttrWrite::Changed(Box::new(fresh)));
        }
        let mut info = read.clone();
        info.meta = meta.clone();
        info.file.metadata = Some(stored.clone());
        Ok(AttrWrite::Written(Box::new(info)))
    }
}
