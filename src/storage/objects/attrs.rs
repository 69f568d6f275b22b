//! Attribute writes (tags, ACL grants, retention, legal hold) as compare-and-set: each writes
//! only the attribute fields of one revision, and only if its attribute revision
//! (`metadata.s3AttrRev`) is still the one the caller's decision read. Two writers that race
//! therefore never lose each other's change: the one that loses re-reads and decides again
//! (an acknowledged retention can no longer be written over by a tagging call that read the
//! object before it).

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

impl ObjectStore {
    /// Writes `new`'s attribute fields onto the revision `read` describes, by its `_id` (so
    /// never onto a newer revision), if its attribute revision is still `read`'s; and in a
    /// versioned bucket onto the copies its version entry and master keep, where those are
    /// older (so a slower writer never puts back what a faster one replaced).
    pub async fn write_attrs_if(
        &self,
        bucket: &str,
        read: &ObjectInfo,
        new: &ObjectMeta,
    ) -> Result<AttrWrite> {
        let fs = self.gridfs(bucket);
        let files = fs.files();
        let rev = read.meta.attr_rev;
        let mut meta = read.meta.clone();
        meta.tags = new.tags.clone();
        meta.grants = new.grants.clone();
        meta.acl = new.acl.clone();
        meta.retention = new.retention.clone();
        meta.legal_hold = new.legal_hold;
        meta.attr_rev = rev + 1;
        let stored = meta.to_metadata();
        let id = read.file.id.clone();
        let written = if read.meta == ObjectMeta::default() {
            // A file with no `metadata` document (another GridFS client's): write one whole,
            // if there is still none.
            files
                .update_one(
                    doc! {"_id": id.clone(), "metadata": Bson::Null},
                    doc! {"$set": {"metadata": stored.clone()}},
                )
                .await?
                .matched_count
                == 1
        } else {
            let mut set = Document::new();
            let mut unset = Document::new();
            for f in ATTR_FIELDS.iter().chain(&[ATTR_REV]) {
                match stored.get(*f) {
                    Some(v) => set.insert(format!("metadata.{f}"), v.clone()),
                    None => unset.insert(format!("metadata.{f}"), ""),
                };
            }
            let mut update = doc! {"$set": set};
            if !unset.is_empty() {
                update.insert("$unset", unset);
            }
            let cond = if rev == 0 {
                doc! {"_id": id.clone(), format!("metadata.{ATTR_REV}"): {"$exists": false}}
            } else {
                doc! {"_id": id.clone(), format!("metadata.{ATTR_REV}"): rev}
            };
            files.update_one(cond, update).await?.matched_count == 1
        };
        if !written {
            let Some(d) = files.find_one(doc! {"_id": id}).await? else {
                return Ok(AttrWrite::Gone);
            };
            let mut fresh = read.clone();
            fresh.meta = ObjectMeta::from_metadata(d.get_document("metadata").ok());
            if fresh.meta.etag.is_none() {
                fresh.meta.etag = read.meta.etag.clone();
            }
            return Ok(AttrWrite::Changed(Box::new(fresh)));
        }
        if read.version_id.is_some() {
            let vid = read
                .meta
                .version_id
                .clone()
                .or(read.version_id.clone())
                .unwrap_or_default();
            let idx = self.versions(bucket);
            // The version's copies change under its key's lock, like the master's every write.
            self.under_lock(bucket, read.key(), async {
                let vid = match read.version_id.as_deref() {
                    Some("null") => match idx.entry(read.key(), "null").await? {
                        Some(e) => e.vid,
                        None => vid,
                    },
                    _ => vid,
                };
                idx.set_metadata_if_older(read.key(), &vid, stored.clone(), meta.attr_rev)
                    .await
            })
            .await?;
        }
        let mut info = read.clone();
        info.meta = meta;
        Ok(AttrWrite::Written(Box::new(info)))
    }
}
