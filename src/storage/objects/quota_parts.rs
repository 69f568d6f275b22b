//! Parts of uploads into a metered bucket (issue 62): counted from the moment UploadPart is
//! accepted until the upload is completed or aborted, each change in one transaction with
//! the part records it follows.
//!
//! An upload is metered or not for its whole life (`UploadRecord::metered`, fixed when it
//! begins), so every part of a metered upload is counted and none of another: a replaced
//! part subtracts exactly what it added. Uploads into a metered content-addressed bucket
//! store their parts as GridFS parts (not de-duplicated), so that this holds there too.
//!
//! - **UploadPart**: the part's bytes are held while it streams (`meter::Meter`); its record
//!   and the hold's conversion into `partBytes` (less a replaced part's size) are one
//!   transaction, which fails if the hold lapsed.
//! - **Complete**: the object's files document and `partBytes -= every part's bytes`,
//!   `bytes += the object's size`, `objects += 1` are one transaction (the object never
//!   needs more bytes than its parts held; only the object count is checked).
//! - **Abort** (and the sweep): the part records' deletion and `partBytes -=` their bytes are
//!   one transaction.

use crate::storage::meta::txn::InTxn;
use mongodb::bson::doc;

use super::meter::Meter;
use super::quota::in_transaction;
use super::*;
use crate::storage::meta::{
    bucket_usage_id, hold_of, objects_room, Counted, PartRecord, UploadRecord,
};

impl PartWrite {
    /// Writes bytes of the part, holding their room first in a metered upload.
    pub async fn write(&mut self, data: &[u8]) -> Result<()> {
        if let Some(m) = &mut self.meter {
            m.ensure(m.written() + data.len() as i64).await?;
            m.add_written(data.len() as i64);
        }
        self.upload.write(data).await
    }

    /// The part's declared length: a metered upload holds its room (all of it, or a step of
    /// a large one) before a byte of it is read.
    pub async fn expect(&mut self, length: u64) -> Result<()> {
        if let Some(m) = &mut self.meter {
            m.expect(length as i64).await?;
        }
        Ok(())
    }
}

impl ObjectStore {
    /// The meter of a new part attempt staged at `base`, for a metered upload.
    pub(super) fn part_meter(&self, up: &UploadRecord, base: i64) -> Option<Meter> {
        up.metered.then(|| {
            Meter::new(
                self.meta.clone(),
                &up.bucket,
                format!("p:{}:{base}", up.id),
                0,
            )
        })
    }

    /// Records a metered part and converts its hold, in one transaction; the replaced part.
    pub(super) async fn put_metered_part(
        &self,
        up: &UploadRecord,
        rec: &PartRecord,
        meter: &mut Meter,
    ) -> Result<Option<PartRecord>> {
        // (A part that began before its upload was metered gets its meter at commit:
        // `commit_part`.)
        meter.ensure(rec.size as i64).await?;
        let id = meter.id().to_owned();
        let usage = self.meta.usage_collection();
        let uid = bucket_usage_id(&up.bucket);
        let out = in_transaction!(self, |s| {
            // The hold as stored (what `reservedBytes` has of it), in this snapshot.
            let stored = usage
                .on(&s)
                .find_one(doc! {"_id": &uid})
                .projection(doc! {"holds": 1})
                .session(&mut s)
                .await?
                .and_then(|d| hold_of(&d, &id));
            let Some(stored) = stored else {
                return Ok(None);
            };
            let old = self.meta.put_part_in(&mut s, rec).await?;
            let delta = rec.size as i64 - old.as_ref().map_or(0, |o| o.size as i64);
            let step = self
                .meta
                .usage_in(
                    &mut s,
                    &up.bucket,
                    doc! {"holds": &stored.stored},
                    None,
                    doc! {"$pullAll": {"holds": [&stored.stored]},
                    "$inc": {"reservedBytes": -stored.bytes, "partBytes": delta}},
                )
                .await?;
            Ok(step.changed().then_some(old))
        })?;
        match out {
            Some(old) => {
                meter.settled();
                Ok(old)
            }
            None => Err(GridFsError::Conflict("the part's quota hold lapsed".into())),
        }
    }

    /// Whether `bucket` is metered, as this process's cache has it.
    pub(super) async fn bucket_metered(&self, bucket: &str) -> Result<bool> {
        Ok(self
            .meta
            .bucket_cached(bucket)
            .await?
            .is_some_and(|b| b.metered))
    }

    /// Meters an upload that began before its bucket was (its bucket got a limit since):
    /// its parts so far are counted (they are stored, whatever the limit says) and every
    /// later one is held like any metered upload's. Under the upload's lock, so that no part
    /// is recorded between the count and the mark; the upload as it is now.
    pub(super) async fn meter_upload(&self, up: &UploadRecord) -> Result<UploadRecord> {
        let lock = self.lock_upload(up).await?;
        let res = async {
            let Some(cur) = self.meta.get_upload(&up.bucket, &up.id).await? else {
                return Ok(up.clone());
            };
            if cur.metered || !cur.is_open() || cur.content {
                return Ok(cur);
            }
            let uploads = self.db().collection::<mongodb::bson::Document>("__uploads");
            in_transaction!(self, |s| {
                let marked = uploads
                    .on(&s)
                    .update_one(
                        doc! {"_id": &up.id, "metered": {"$ne": true}},
                        doc! {"$set": {"metered": true}},
                    )
                    .session(&mut s)
                    .await?
                    .modified_count;
                if marked == 0 {
                    return Ok(None);
                }
                let bytes = self.meta.part_bytes_in(&mut s, &up.id, false).await?;
                self.meta
                    .count_in(&mut s, &up.bucket, doc! {"partBytes": bytes})
                    .await?;
                Ok(Some(()))
            })?;
            Ok(UploadRecord {
                metered: true,
                ..cur
            })
        }
        .await;
        lock.release_or_warn().await;
        res
    }

    /// Publishes a metered upload's object: its files document (marked counted) and the
    /// hand-over of its parts' bytes to the object, in one transaction.
    pub(super) async fn publish_metered_upload(
        &self,
        up: &UploadRecord,
        file: &FileDoc,
        size: i64,
    ) -> Result<()> {
        let files = self.gridfs(&up.bucket).files().clone();
        let published = in_transaction!(self, |s| {
            // (Under the upload's lock, after Complete found no object under this id: nothing
            // else publishes it, so a duplicate key is an error like any other here.)
            files
                .on(&s)
                .insert_one(file.to_document())
                .session(&mut s)
                .await?;
            let parts = self.meta.part_bytes_in(&mut s, &up.id, false).await?;
            let step = self
                .meta
                .usage_in(
                    &mut s,
                    &up.bucket,
                    doc! {},
                    Some(objects_room(1)),
                    doc! {"$inc": {"partBytes": -parts, "bytes": size, "objects": 1_i64}},
                )
                .await?;
            Ok(step.changed().then_some(()))
        })?;
        match published {
            Some(_) => Ok(()),
            None => {
                let (c, account) = self.meta.refusing_counted(&up.bucket, 0, 1).await?;
                let limit = c.limits.objects.unwrap_or(0);
                Err(GridFsError::QuotaExceeded(if account {
                    // Only the account's limit is told (see `meter::describe`).
                    format!("the account's limit {limit} objects has no room for completing the upload, which adds 1")
                } else {
                    format!(
                        "limit {limit} objects; usage {} objects; completing the upload adds 1",
                        Counted::used_objects(&c)
                    )
                }))
            }
        }
    }

    /// Deletes a metered upload's part records and subtracts their bytes, in one transaction.
    pub(super) async fn delete_metered_parts(&self, up: &UploadRecord) -> Result<()> {
        in_transaction!(self, |s| {
            let bytes = self.meta.part_bytes_in(&mut s, &up.id, true).await?;
            self.meta
                .count_in(&mut s, &up.bucket, doc! {"partBytes": -bytes})
                .await?;
            Ok(Some(()))
        })?;
        Ok(())
    }
}
