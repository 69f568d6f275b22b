//! Quotas in the object layer (issue 62; the counters are `meta::quota`'s, a write's hold
//! is `meter`'s):
//!
//! - **Publishing** marks the files document `metadata.s3Counted` and converts the write's
//!   hold into counted usage (one conditional update: once). A writer that dies leaves its
//!   hold to lapse; the janitor then decides by the object itself
//!   ([`ObjectStore::settle_lapsed_holds`]): a tombstone under the write's id both proves it
//!   unpublished and keeps it so.
//! - **Removal** of a counted files document and the decrement are one transaction
//!   ([`ObjectStore::unpublish`]), so no retry, crash or race counts a removal twice or never.
//!   Files without the mark (written before the bucket was metered, or by another GridFS
//!   client) are counted by [`ObjectStore::fold_uncounted`], in transactions too.

use crate::storage::meta::txn::InTxn;
use mongodb::bson::{doc, Bson, Document};

use super::meter::{Meter, COUNTED};
use super::usage::logical_size;
use super::*;
use crate::storage::meta::{bucket_usage_id, Counted, Hold, Limits};

/// Files counted by one transaction of [`ObjectStore::fold_uncounted`].
const FOLD_BATCH: i64 = 500;

/// A files document's id as a hold names it.
fn id_key(id: &Bson) -> String {
    match id {
        Bson::ObjectId(o) => o.to_hex(),
        other => other.to_string(),
    }
}

pub(super) use crate::storage::meta::txn::{commit, transient};

/// Retries a transaction body on transient errors; `body` gets a started transaction and
/// answers whether to commit (`Some`) or abort (`None`).
macro_rules! in_transaction {
    ($store:expr, |$s:ident| $body:block) => {
        $crate::storage::meta::txn::with_transaction!($store.meta, |$s| $body)
    };
}
pub(super) use in_transaction;

impl ObjectStore {
    /// A meter for a new write into `bucket` under the object id `id`, if it is metered.
    pub(super) async fn meter_for(&self, bucket: &str, id: &ObjectId) -> Result<Option<Meter>> {
        let metered = self.is_metered(bucket).await?;
        Ok(metered.then(|| Meter::new(self.meta.clone(), bucket, id.to_hex(), 1)))
    }

    /// Whether writes into `bucket` are metered (as this instance's bucket cache has it).
    pub(super) async fn is_metered(&self, bucket: &str) -> Result<bool> {
        Ok(self
            .meta
            .bucket_cached(bucket)
            .await?
            .is_some_and(|b| b.metered))
    }

    /// Sets a bucket's limits: the bucket becomes metered (the index the fold uses first), and
    /// what it already holds is counted by the janitor's fold. `false`: no such bucket.
    ///
    /// A bucket metered now is first left a bucket cache's lifetime (every write that starts
    /// afterwards, on any instance, is metered) and counted whole, so that the limit never
    /// applies to a partial count: a bucket of many files takes a while.
    pub async fn set_bucket_limits(&self, bucket: &str, limits: Limits) -> Result<bool> {
        match self.meta.get_bucket(bucket).await? {
            None => return Ok(false),
            // Clearing a limit that was never set changes nothing (and meters nothing).
            Some(b) if !b.metered && limits.is_none() => return Ok(true),
            Some(_) => {}
        }
        if self.start_metering(bucket).await? {
            self.outwait_bucket_caches().await;
        }
        self.fold_whole(bucket).await?;
        Ok(self.meta.set_bucket_limits(bucket, limits).await?)
    }

    /// Up to 10,000 files at once, so that a limit set on a bucket that holds data applies
    /// to it at once; a larger bucket's rest is counted by the janitor (and so is everything,
    /// should this fail: the limit is set).
    pub(super) async fn fold_now(&self, bucket: &str) {
        if let Err(e) = self.fold_uncounted(bucket, 20).await {
            tracing::warn!(bucket, error = %e, "could not count the bucket's files yet; the janitor will");
        }
    }

    /// The indexes a metered bucket's fold and removals find counted files and markers by.
    pub(super) async fn index_counted(&self, bucket: &str) -> Result<()> {
        let model = mongodb::IndexModel::builder()
            .keys(doc! {format!("metadata.{COUNTED}"): 1})
            .options(
                mongodb::options::IndexOptions::builder()
                    .name("s3Counted".to_owned())
                    .build(),
            )
            .build();
        self.gridfs(bucket).files().create_index(model).await?;
        self.index_markers(bucket).await
    }

    /// Deletes files documents `ids` of `bucket`; those counted take their usage with them,
    /// in one transaction. An unmetered bucket's files go in one command as before (the
    /// filter leaves any counted one for the transaction).
    pub(super) async fn unpublish(&self, bucket: &str, ids: &[Bson]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let files = self.gridfs(bucket).files().clone();
        let uncounted = doc! {format!("metadata.{COUNTED}"): {"$exists": false}};
        // Sent again while it conflicts with a transaction (the fold's, on these documents):
        // deleting what is gone already deletes nothing.
        let mut attempt = 0_u64;
        let n = loop {
            match crate::storage::gridfs::batch::delete_in(&files, "_id", ids, &uncounted).await {
                Err(e) if crate::dberror::is_write_conflict(&e) && attempt < 200 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 2)).await;
                }
                r => break r?,
            }
        };
        if n as usize == ids.len() {
            return Ok(());
        }
        // Counted ones, or ones gone already.
        let counted: Vec<Bson> = crate::storage::gridfs::batch::find_in(
            &files,
            "_id",
            ids,
            &doc! {format!("metadata.{COUNTED}"): true},
            doc! {"_id": 1},
        )
        .await?
        .into_iter()
        .filter_map(|mut d| d.remove("_id"))
        .collect();
        for slice in counted.chunks(FOLD_BATCH as usize) {
            self.unpublish_counted(bucket, slice).await?;
        }
        Ok(())
    }

    /// Deletes counted files documents and subtracts them, in one transaction: a file whose
    /// writer's hold is still there (published, not yet converted) gives its hold back
    /// instead.
    async fn unpublish_counted(&self, bucket: &str, ids: &[Bson]) -> Result<()> {
        let files = self.gridfs(bucket).files().clone();
        let usage = self.meta.usage_collection();
        let uid = bucket_usage_id(bucket);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut s = self.meta.begin().await?;
            let (files, usage) = (files.on(&s), usage.on(&s));
            let r: mongodb::error::Result<()> = async {
                let mut cur = files
                    .find(doc! {"_id": {"$in": ids}, format!("metadata.{COUNTED}"): true})
                    .projection(doc! {"length": 1, "metadata.s3Sse.size": 1})
                    .session(&mut s)
                    .await?;
                let mut found: Vec<(Bson, i64)> = Vec::new();
                while let Some(d) = cur.next(&mut s).await {
                    let d = d?;
                    if let Some(id) = d.get("_id") {
                        found.push((id.clone(), logical_size(&d)));
                    }
                }
                if found.is_empty() {
                    return Ok(());
                }
                let counted = usage
                    .find_one(doc! {"_id": &uid})
                    .session(&mut s)
                    .await?
                    .map(|d| Counted::from_document(&d))
                    .unwrap_or_default();
                // (Where a test converts the hold read here before the removal writes.)
                crate::failpoint::hit("quota.removal_read", bucket).await;
                let update = removal_update(&counted, &found);
                let gone: Vec<Bson> = found.into_iter().map(|(id, _)| id).collect();
                files
                    .delete_many(doc! {"_id": {"$in": gone}})
                    .session(&mut s)
                    .await?;
                // The usage document last: every writer of the bucket updates it, so the
                // transaction holds it for as short a time as it can (until the commit; a
                // gateway that dies here leaves it held until the database drops the
                // transaction).
                self.meta
                    .usage_in(&mut s, bucket, doc! {}, None, update)
                    .await?;
                Ok(())
            }
            .await;
            let r = match r {
                Ok(()) => commit(&mut s).await,
                Err(e) => {
                    let _ = s.abort_transaction().await;
                    Err(e)
                }
            };
            match r {
                Ok(()) => return Ok(()),
                Err(e) if transient(&e) && attempt < 100 => {
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 5)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Counts files (and delete markers) of a metered bucket that carry no mark (written
    /// before it was metered, by a writer that had not seen it yet, or by another GridFS
    /// client), a batch per transaction, at most `batches` of each; how many were counted.
    pub async fn fold_uncounted(&self, bucket: &str, batches: usize) -> Result<u64> {
        let files = self.fold_files(bucket, batches).await?;
        Ok(files + self.fold_markers(bucket, batches).await?)
    }

    async fn fold_files(&self, bucket: &str, batches: usize) -> Result<u64> {
        let files = self.gridfs(bucket).files().clone();
        let filter = doc! {
            format!("metadata.{COUNTED}"): {"$exists": false},
            "filename": {"$exists": true},
            "metadata.s3Reaped": {"$exists": false},
        };
        let mut total = 0;
        let mut attempt = 0;
        let mut done = 0;
        loop {
            // Nothing to count (nearly always, in a janitor pass): no transaction, which
            // would hold the usage document for nothing.
            if files
                .find_one(filter.clone())
                .projection(doc! {"_id": 1})
                .await?
                .is_none()
            {
                return Ok(total);
            }
            let mut s = self.meta.begin().await?;
            let files = files.on(&s);
            let r: mongodb::error::Result<u64> = async {
                self.meta.hold_usage_in(&mut s, bucket).await?;
                let mut cur = files
                    .find(filter.clone())
                    .projection(doc! {"length": 1, "metadata.s3Sse.size": 1})
                    .limit(FOLD_BATCH)
                    .session(&mut s)
                    .await?;
                // Another GridFS client's file may have no `metadata` document at all (null,
                // absent, or another type): it gets one holding only the mark.
                let (mut ids, mut bare) = (Vec::new(), Vec::new());
                let mut bytes = 0;
                while let Some(d) = cur.next(&mut s).await {
                    let d = d?;
                    bytes += logical_size(&d);
                    if let Some(id) = d.get("_id") {
                        if d.get_document("metadata").is_ok() {
                            ids.push(id.clone());
                        } else {
                            bare.push(id.clone());
                        }
                    }
                }
                if ids.is_empty() && bare.is_empty() {
                    return Ok(0);
                }
                let n = (ids.len() + bare.len()) as i64;
                if !ids.is_empty() {
                    files
                        .update_many(
                            doc! {"_id": {"$in": ids}},
                            doc! {"$set": {format!("metadata.{COUNTED}"): true}},
                        )
                        .session(&mut s)
                        .await?;
                }
                if !bare.is_empty() {
                    files
                        .update_many(
                            doc! {"_id": {"$in": bare}},
                            doc! {"$set": {"metadata": {COUNTED: true}}},
                        )
                        .session(&mut s)
                        .await?;
                }
                self.meta
                    .count_in(&mut s, bucket, doc! {"bytes": bytes, "objects": n})
                    .await?;
                Ok(n as u64)
            }
            .await;
            let r = match r {
                Ok(0) => {
                    let _ = s.abort_transaction().await;
                    return Ok(total);
                }
                Ok(n) => commit(&mut s).await.map(|()| n),
                Err(e) => {
                    let _ = s.abort_transaction().await;
                    Err(e)
                }
            };
            match r {
                Ok(n) => {
                    total += n;
                    attempt = 0;
                    done += 1;
                    if done >= batches {
                        return Ok(total);
                    }
                }
                Err(e) if transient(&e) && attempt < 100 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 5)).await;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Settles holds whose writers stopped renewing them (died, or stalled past the lease):
    /// a tombstone under the write's id either goes in (never published, and now it cannot
    /// be: the hold is given back) or finds the object (published: counted). Each settle is
    /// conditional on the hold, so a writer finishing meanwhile, or another janitor, makes it
    /// happen once. How many were settled.
    pub async fn settle_lapsed_holds(&self) -> Result<usize> {
        let mut n = 0;
        for (bucket, holds) in self.meta.lapsed_holds().await? {
            for h in holds {
                // Each on its own: one blocked by a dead gateway's unfinished transaction
                // (until the database drops it) must not keep the others waiting.
                match self.settle_lapsed_hold(&bucket, &h).await {
                    Ok(true) => n += 1,
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(bucket, hold = %h.id, error = %e, "could not settle a lapsed quota hold; the next pass tries again")
                    }
                }
            }
        }
        Ok(n)
    }

    async fn settle_lapsed_hold(&self, bucket: &str, h: &Hold) -> Result<bool> {
        let Ok(oid) = ObjectId::parse_str(&h.id) else {
            // A part's hold: its commit is a transaction that needs the hold, so giving it
            // back is all there is to do.
            return Ok(self.meta.settle_hold(bucket, h, 0, 0).await?);
        };
        let id = Bson::ObjectId(oid);
        let (bytes, objects) = if self.tombstone_file(bucket, &id).await? {
            (0, 0)
        } else {
            match self
                .gridfs(bucket)
                .files()
                .find_one(doc! {"_id": &id, format!("metadata.{COUNTED}"): true})
                .await?
            {
                Some(d) => (logical_size(&d), 1),
                None => (0, 0),
            }
        };
        Ok(self.meta.settle_hold(bucket, h, bytes, objects).await?)
    }

    /// Counts what metered buckets hold unmarked, for the janitor; how many files.
    pub async fn fold_metered(&self) -> Result<u64> {
        let mut n = 0;
        // Each bucket on its own: one that cannot be counted now does not stop the others.
        for b in self.meta.metered_buckets().await? {
            match self.fold_uncounted(&b, 20).await {
                Ok(k) => n += k,
                Err(e) => {
                    tracing::warn!(bucket = %b, error = %e, "could not count a bucket's uncounted files")
                }
            }
        }
        Ok(n)
    }
}

/// The usage update of removing counted files `found` (`(id, logical size)`), given the
/// usage document's holds.
fn removal_update(counted: &Counted, found: &[(Bson, i64)]) -> Document {
    let (mut bytes, mut objects, mut rb, mut ro) = (0_i64, 0_i64, 0_i64, 0_i64);
    let mut pulled: Vec<Bson> = Vec::new();
    for (id, size) in found {
        let key = id_key(id);
        match counted.holds.iter().find(|h| h.id == key) {
            Some(h) => {
                rb += h.bytes;
                ro += h.objects;
                pulled.push(h.stored.clone());
            }
            None => {
                bytes += size;
                objects += 1;
            }
        }
    }
    let mut update = doc! {"$inc": {
        "bytes": -bytes, "objects": -objects,
        "reservedBytes": -rb, "reservedObjects": -ro,
    }};
    if !pulled.is_empty() {
        update.insert("$pullAll", doc! {"holds": pulled});
    }
    update
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_removal_gives_back_a_pending_hold_and_subtracts_the_rest() {
        let pending = ObjectId::new();
        let counted = Counted {
            holds: vec![Hold::new(
                &pending.to_hex(),
                100,
                1,
                mongodb::bson::DateTime::now(),
            )],
            ..Default::default()
        };
        let u = removal_update(
            &counted,
            &[
                (Bson::ObjectId(pending), 90),
                (Bson::ObjectId(ObjectId::new()), 7),
                (Bson::String("foreign".into()), 5),
            ],
        );
        let inc = u.get_document("$inc").unwrap();
        assert_eq!(inc.get_i64("bytes").unwrap(), -12);
        assert_eq!(inc.get_i64("objects").unwrap(), -2);
        assert_eq!(inc.get_i64("reservedBytes").unwrap(), -100);
        assert_eq!(inc.get_i64("reservedObjects").unwrap(), -1);
        // The hold is named as stored.
        let pulled = u
            .get_document("$pullAll")
            .unwrap()
            .get_array("holds")
            .unwrap();
        assert_eq!(pulled, &vec![counted.holds[0].stored.clone()]);
        assert!(
            matches!(&pulled[0], Bson::String(s) if s.starts_with(&format!("{}|100|1|", pending.to_hex())))
        );
    }
}
