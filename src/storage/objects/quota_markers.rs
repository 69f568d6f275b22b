//! Delete markers in metered buckets (issue 62): a marker counts as an object of 0 bytes.
//!
//! - **Writing** markers into a metered bucket inserts their entries with `counted: true` and
//!   adds them to `objects` in one transaction, whose usage update is conditional on room for
//!   them: a DELETE that would pass the objects limit is refused, and nothing is written.
//! - **Removing** a counted marker (DeleteObject of its version, ExpiredObjectDeleteMarker, a
//!   suspended bucket's null marker replaced) deletes its entry and subtracts it in one
//!   transaction, so it is subtracted exactly once.
//! - **Markers without the mark** (written before the bucket had a limit, or by an instance
//!   whose one-second bucket cache had not yet seen it) are counted by the fold, like files.
//!
//! Markers live only in grids3's version index (`<bucket>.versions`), which no other GridFS
//! client writes.

use crate::storage::meta::txn::InTxn;
use mongodb::bson::{doc, Document};

use super::quota::in_transaction;
use super::*;
use crate::storage::meta::{objects_room, Counted};
use crate::storage::versions::{VersionEntry, VersionIndex};

/// The mark of a counted marker entry.
const MARKER_COUNTED: &str = "counted";
/// Markers counted by one transaction of the fold.
const FOLD_BATCH: i64 = 500;

impl ObjectStore {
    /// Inserts delete-marker entries, counted in a metered bucket; fails with
    /// [`GridFsError::QuotaExceeded`] (nothing written) when the objects limit has no room
    /// for them all.
    pub(super) async fn insert_markers(
        &self,
        bucket: &str,
        idx: &VersionIndex,
        entries: &[&VersionEntry],
    ) -> Result<()> {
        if entries.is_empty() {
            return Ok(());
        }
        if !self.bucket_metered(bucket).await? {
            if let [e] = entries {
                return idx.insert(e).await;
            }
            idx.collection()
                .insert_many(entries.iter().map(|e| e.to_document()))
                .await?;
            return Ok(());
        }
        let docs: Vec<Document> = entries
            .iter()
            .map(|e| {
                let mut d = e.to_document();
                d.insert(MARKER_COUNTED, true);
                d
            })
            .collect();
        let n = docs.len() as i64;
        let coll = idx.collection().clone();
        let fitted = in_transaction!(self, |s| {
            let coll = coll.on(&s);
            coll.insert_many(docs.clone()).session(&mut s).await?;
            // The usage document last (every writer of the bucket updates it, so the
            // transaction holds it as briefly as it can); no room aborts the inserts.
            let step = self
                .meta
                .usage_in(
                    &mut s,
                    bucket,
                    doc! {},
                    Some(objects_room(n)),
                    doc! {"$inc": {"objects": n}},
                )
                .await?;
            Ok(step.changed().then_some(()))
        })?;
        if fitted.is_some() {
            return Ok(());
        }
        let (c, account) = self.meta.refusing_counted(bucket, 0, n).await?;
        Err(GridFsError::QuotaExceeded(refusal(&c, account, n)))
    }

    /// Removes a delete marker's entry; a counted one is subtracted in the same transaction.
    pub(super) async fn remove_marker(
        &self,
        idx: &VersionIndex,
        bucket: &str,
        id: &str,
    ) -> Result<()> {
        let coll = idx.collection().clone();
        let uncounted = coll
            .delete_one(doc! {"_id": id, MARKER_COUNTED: {"$exists": false}})
            .await?
            .deleted_count;
        if uncounted == 1 {
            return Ok(());
        }
        in_transaction!(self, |s| {
            let coll = coll.on(&s);
            let gone = coll
                .delete_one(doc! {"_id": id, MARKER_COUNTED: true})
                .session(&mut s)
                .await?
                .deleted_count;
            if gone == 0 {
                return Ok(None);
            }
            self.meta
                .count_in(&mut s, bucket, doc! {"objects": -1_i64})
                .await?;
            Ok(Some(()))
        })?;
        Ok(())
    }

    /// Counts a metered bucket's markers that carry no mark, a batch per transaction, at
    /// most `batches` of them; how many were counted.
    pub(super) async fn fold_markers(&self, bucket: &str, batches: usize) -> Result<u64> {
        let coll = self.versions(bucket).collection().clone();
        let filter = doc! {"marker": true, MARKER_COUNTED: {"$exists": false}};
        let mut total = 0;
        for _ in 0..batches {
            // Nothing to count: no transaction (see `fold_files`).
            if coll
                .find_one(filter.clone())
                .projection(doc! {"_id": 1})
                .await?
                .is_none()
            {
                break;
            }
            let n = in_transaction!(self, |s| {
                let coll = coll.on(&s);
                self.meta.hold_usage_in(&mut s, bucket).await?;
                let ids: Vec<Bson> = {
                    let mut cur = coll
                        .find(filter.clone())
                        .projection(doc! {"_id": 1})
                        .limit(FOLD_BATCH)
                        .session(&mut s)
                        .await?;
                    let mut ids = Vec::new();
                    while let Some(d) = cur.next(&mut s).await {
                        if let Some(id) = d?.remove("_id") {
                            ids.push(id);
                        }
                    }
                    ids
                };
                if ids.is_empty() {
                    return Ok(None);
                }
                let n = ids.len() as i64;
                coll.update_many(
                    doc! {"_id": {"$in": ids}},
                    doc! {"$set": {MARKER_COUNTED: true}},
                )
                .session(&mut s)
                .await?;
                self.meta
                    .count_in(&mut s, bucket, doc! {"objects": n})
                    .await?;
                Ok(Some(n as u64))
            })?;
            match n {
                Some(n) => total += n,
                None => break,
            }
        }
        Ok(total)
    }

    /// Counted markers, read in the transaction `s` (for `fsck --usage`).
    pub(super) async fn counted_markers_in(
        &self,
        bucket: &str,
        s: &mut mongodb::ClientSession,
    ) -> mongodb::error::Result<i64> {
        let n = self
            .versions(bucket)
            .collection()
            .on(s)
            .count_documents(doc! {"marker": true, MARKER_COUNTED: true})
            .session(s)
            .await?;
        Ok(n as i64)
    }

    /// The index the fold and `fsck --usage` find markers by (a metered bucket's only).
    pub(super) async fn index_markers(&self, bucket: &str) -> Result<()> {
        let model = mongodb::IndexModel::builder()
            .keys(doc! {"marker": 1, MARKER_COUNTED: 1})
            .build();
        self.versions(bucket)
            .collection()
            .create_index(model)
            .await?;
        Ok(())
    }
}

/// Why markers were refused: the objects limit and the usage.
fn refusal(c: &Counted, account: bool, n: i64) -> String {
    let plural = if n == 1 { "" } else { "s" };
    if account {
        // Only the account's limit is told (see `meter::describe`).
        return format!(
            "the account's limit {} objects has no room for this delete, which needs {n} \
             delete marker{plural} (each counts as an object)",
            c.limits.objects.map_or("no".to_owned(), |l| l.to_string()),
        );
    }
    format!(
        "limit {} objects; usage {} objects (counting writes in progress); this delete \
         needs {n} delete marker{plural} (each counts as an object)",
        c.limits.objects.map_or("no".to_owned(), |l| l.to_string()),
        c.used_objects(),
    )
}
