//! Reclaiming older revisions and deleting keys: every reclaim is compare-and-set on what
//! it read.

use super::*;
use crate::storage::gridfs::batch::{delete_in, find_in};

impl ObjectStore {
    /// Every revision of `key`: `(_id, uploadDate)`.
    pub(super) async fn revisions(&self, bucket: &str, key: &str) -> Result<Vec<(Bson, DateTime)>> {
        let docs: Vec<Document> = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": key})
            .projection(doc! {"_id": 1, "uploadDate": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|mut d| {
                let date = *d.get_datetime("uploadDate").ok()?;
                Some((d.remove("_id")?, date))
            })
            .collect())
    }

    /// The `uploadDate` of a new revision: the database's time, but always after every
    /// revision the key has, so a write that started after another one was published lands
    /// after it, whatever the clocks of the instances that wrote them.
    pub(super) fn stamp(&self, older: &[(Bson, DateTime)]) -> DateTime {
        let now = self.meta.clock().now().timestamp_millis();
        let newest = older
            .iter()
            .map(|(_, d)| d.timestamp_millis() + 1)
            .max()
            .unwrap_or(i64::MIN);
        DateTime::from_millis(now.max(newest))
    }

    /// Reclaims the revisions a publish replaced; a failure leaves them hidden behind the new
    /// one (the next overwrite or delete finds them again).
    pub(super) async fn reclaim_all(
        &self,
        bucket: &str,
        older: &[(Bson, DateTime)],
        new: &ObjectInfo,
    ) {
        for (id, _) in older {
            if *id == new.file.id {
                continue;
            }
            if let Err(e) = self.reclaim(bucket, id).await {
                tracing::warn!(bucket, key = new.key(), error = %e, "could not reclaim an older revision");
                return;
            }
        }
    }

    /// Removes one revision: record the intent, hide it (files document), and delete its
    /// chunks unless a reader holds a lease, in which case the janitor does it later.
    pub async fn reclaim(&self, bucket: &str, file_id: &Bson) -> Result<()> {
        self.reclaim_of(bucket, file_id, None).await
    }

    /// [`ObjectStore::reclaim`] of a version's data, whose entry (`entry`, its `_id` in the
    /// version index) goes right after the files document: the record names both, so a crash
    /// anywhere leaves the janitor to finish, never an entry naming data that is gone.
    pub(super) async fn reclaim_of(
        &self,
        bucket: &str,
        file_id: &Bson,
        entry: Option<&str>,
    ) -> Result<()> {
        let fs = self.gridfs(bucket);
        let record = self.meta.add_reclaim_of(bucket, file_id, entry).await?;
        self.unpublish(bucket, std::slice::from_ref(file_id))
            .await?;
        if self.may_hold_contents(bucket).await? {
            self.contents(bucket).release(file_id).await?;
        }
        if let Some(e) = entry {
            self.versions(bucket).remove_id(e).await?;
        }
        if !self.meta.has_live_lease(bucket, file_id).await? {
            fs.chunks()
                .delete_many(doc! {"files_id": file_id.clone()})
                .await?;
            self.meta.remove_reclaim(record).await?;
        }
        Ok(())
    }

    /// Deletes every revision of many keys in a few round trips: the same protocol as
    /// [`ObjectStore::reclaim`], batched. Record the intents, hide the files documents, look
    /// for leases, delete the unleased files' chunks, drop their records; leased ones are left
    /// to the janitor. Names are looked up in slices of
    /// [`crate::storage::gridfs::batch::FIND_SLICE`] (one find each), and each other step is one
    /// command whatever the number of keys: for 1,000 keys, 5 finds of names, then 1 insert,
    /// 1 delete, 1 lease find, 1 delete of chunks and 1 of records.
    pub async fn delete_keys(&self, bucket: &str, keys: &[String]) -> Result<()> {
        let fs = self.gridfs(bucket);
        let names: Vec<Bson> = keys.iter().map(|k| Bson::String(k.clone())).collect();
        let ids: Vec<Bson> = find_in(fs.files(), "filename", &names, &doc! {}, doc! {"_id": 1})
            .await?
            .into_iter()
            .filter_map(|mut d| d.remove("_id"))
            .collect();
        self.delete_files(bucket, ids).await
    }

    /// Deletes the keys a caller listed, each as of the revision it read (`(key, its upload
    /// date)`): that revision and older ones go; a revision written since the listing is
    /// newer and stays (compare-and-set on what was read, one find for all the keys).
    pub async fn delete_listed(
        &self,
        bucket: &str,
        listed: &[(String, mongodb::bson::DateTime)],
    ) -> Result<()> {
        let fs = self.gridfs(bucket);
        let read: std::collections::HashMap<&str, mongodb::bson::DateTime> =
            listed.iter().map(|(k, d)| (k.as_str(), *d)).collect();
        let names: Vec<Bson> = listed
            .iter()
            .map(|(k, _)| Bson::String(k.clone()))
            .collect();
        let found = find_in(
            fs.files(),
            "filename",
            &names,
            &doc! {},
            doc! {"_id": 1, "filename": 1, "uploadDate": 1},
        )
        .await?;
        let ids: Vec<Bson> = found
            .into_iter()
            .filter(|d| {
                let at = d.get_datetime("uploadDate").ok();
                let as_read = d.get_str("filename").ok().and_then(|k| read.get(k));
                matches!((at, as_read), (Some(at), Some(r)) if at <= r)
            })
            .filter_map(|mut d| d.remove("_id"))
            .collect();
        self.delete_files(bucket, ids).await
    }

    /// Deletes exactly the files documents `ids`, then their chunks as [`Self::delete_keys`] does:
    /// recorded for the janitor first, never while a reader's lease names them.
    pub async fn delete_files(&self, bucket: &str, ids: Vec<Bson>) -> Result<()> {
        let fs = self.gridfs(bucket);
        if ids.is_empty() {
            return Ok(());
        }
        let records = self.meta.add_reclaims(bucket, &ids).await?;
        self.unpublish(bucket, &ids).await?;
        if self.may_hold_contents(bucket).await? {
            // One update per object (its references' document, keyed by the object's id).
            let contents = self.contents(bucket);
            for id in &ids {
                contents.release(id).await?;
            }
        }
        let leased = self.meta.leased_among(bucket, &ids).await?;
        let (free, done): (Vec<Bson>, Vec<ObjectId>) = ids
            .into_iter()
            .zip(records)
            .filter(|(id, _)| !leased.contains(id))
            .unzip();
        delete_in(fs.chunks(), "files_id", &free, &doc! {}).await?;
        self.meta.remove_reclaims(&done).await?;
        Ok(())
    }

    /// Deletes every revision of `key`; `false` when there was none.
    pub async fn delete(&self, bucket: &str, key: &str) -> Result<bool> {
        let fs = self.gridfs(bucket);
        let ids: Vec<Document> = fs
            .files()
            .find(doc! {"filename": key})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        for d in &ids {
            if let Some(id) = d.get("_id") {
                self.reclaim(bucket, id).await?;
            }
        }
        Ok(!ids.is_empty())
    }
}
