//! Usage by recount (issue 62): what a bucket holds, counted from the data itself on demand,
//! so it is a full recount by construction. Counted as issue 62 counts it:
//!
//! - every stored version, current and noncurrent (`versions`), at its logical size: the
//!   plaintext size of an encrypted object, the logical length of a content-addressed one
//!   (what de-duplication saves is not subtracted);
//! - `objects`: the current data versions (a key whose latest version is a delete marker is
//!   not an object);
//! - delete markers, as objects of 0 bytes;
//! - the parts of multipart uploads in progress.
//!
//! Reaped-write tombstones (no filename) are not objects. Files another GridFS writer put in
//! the bucket are counted like grids3's own.

use std::collections::HashSet;

use futures::TryStreamExt;
use mongodb::bson::{doc, Document};

use super::ObjectStore;

/// A bucket's usage.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketUsage {
    /// Bytes of every stored version (logical, plaintext).
    pub bytes: i64,
    /// Stored data versions, current and noncurrent.
    pub versions: i64,
    /// Current objects (keys whose latest version is data).
    pub objects: i64,
    /// Delete markers.
    pub delete_markers: i64,
    /// Multipart uploads in progress.
    pub uploads: i64,
    /// Their parts.
    pub parts: i64,
    /// Their parts' bytes.
    pub part_bytes: i64,
}

/// The logical size of a files document: the plaintext size of an encrypted object.
pub(super) fn logical_size(d: &Document) -> i64 {
    let stored = match d.get("length") {
        Some(mongodb::bson::Bson::Int64(n)) => *n,
        Some(mongodb::bson::Bson::Int32(n)) => i64::from(*n),
        Some(mongodb::bson::Bson::Double(n)) => *n as i64,
        _ => 0,
    };
    d.get_document("metadata")
        .ok()
        .and_then(|m| m.get_document("s3Sse").ok())
        .and_then(|s| s.get_i64("size").ok())
        .unwrap_or(stored)
}

impl ObjectStore {
    /// Recounts `bucket`'s usage from its files, version index and uploads.
    pub async fn recount_usage(&self, bucket: &str) -> mongodb::error::Result<BucketUsage> {
        let mut u = BucketUsage::default();
        let fs = self.gridfs(bucket);
        let mut names: HashSet<String> = HashSet::new();
        let mut c = fs
            .files()
            .find(doc! {"filename": {"$exists": true}, "metadata.s3Reaped": {"$exists": false}})
            .projection(doc! {"length": 1, "filename": 1, "metadata.s3Sse.size": 1})
            .await?;
        while let Some(d) = c.try_next().await? {
            u.versions += 1;
            u.bytes += logical_size(&d);
            if let Ok(n) = d.get_str("filename") {
                names.insert(n.to_owned());
            }
        }
        // A bucket that has had versioning has masters (`\x7fM` + key, only while the latest
        // version is data) and marker entries in its version index.
        let idx = self.versions(bucket);
        let versions = idx.collection();
        let masters = versions
            .count_documents(doc! {"_id": {"$gte": "\u{7f}M", "$lt": "\u{7f}N"}})
            .await?;
        u.delete_markers = versions
            .count_documents(doc! {"_id": {"$gte": "\u{7f}V", "$lt": "\u{7f}W"}, "marker": true})
            .await? as i64;
        let versioned = masters > 0
            || u.delete_markers > 0
            || self
                .meta()
                .get_bucket(bucket)
                .await?
                .is_some_and(|b| b.versioning.is_some());
        u.objects = if versioned {
            masters as i64
        } else {
            names.len() as i64
        };
        // Parts are stored until their upload's object is published (they become its bytes)
        // or its abort has deleted them: an aborting upload's still count, and a published
        // one's leftover records (a Complete that stopped before deleting them) do not.
        let mut holding = Vec::new();
        for (id, file_id, aborting) in self.meta().uploads_holding_parts(bucket).await? {
            if fs
                .files()
                .find_one(doc! {"_id": file_id})
                .projection(doc! {"_id": 1})
                .await?
                .is_none()
            {
                if !aborting {
                    u.uploads += 1;
                }
                holding.push(id);
            }
        }
        let (parts, part_bytes) = self.meta().part_totals(&holding).await?;
        u.parts = parts;
        u.part_bytes = part_bytes;
        Ok(u)
    }
}
