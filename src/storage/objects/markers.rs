//! Delete markers for many keys at once: DeleteObjects in a bucket with versioning enabled,
//! where no entry names a version or a condition (the common shape: "delete these keys").
//!
//! Each key gets exactly what [`ObjectStore::delete_object`] would give it (a delete marker
//! that becomes its latest version, stamped after the version it hides), under its key's
//! lock, but the locks, the reads, the markers, the masters' removal and the release are
//! one command each (the reads one per 200 keys): 10 commands for 1,000 keys where
//! the key-by-key path sends about 5,000.
//!
//! The masters become placeholders before the markers go in, and are removed after: a batch
//! cut short anywhere (an error, a cancelled request) leaves placeholders, which reads and
//! listings answer from the newest entry and repair, as they do after a single delete of a
//! latest version cut short. A batch that fails hands its keys to the single path, which
//! stamps after the newest entry and settles each one (a marker the batch wrote stays as an
//! older, hidden version).
//!
//! The keys the batch cannot settle from what it read go key by key, the usual way: a key
//! whose lock another writer holds (the single path waits for it), a key without a master
//! (no such key, its latest version is a marker already, or the index is being built: the
//! newest entry must be read to stamp after it), a key whose master is a placeholder (a
//! version delete in progress) and a key whose master is dated at or after this instance's
//! clock (see [`ObjectStore::mark_batch`]).

use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

use crate::storage::meta::KeyLocks;

use super::{Blocked, DeleteCondition, DeleteOutcome, ObjectStore, Result};
use crate::storage::gridfs::batch::{delete_in, find_in, update_in};
use crate::storage::gridfs::GridFsError;
use crate::storage::versions::index::{is_placeholder, master_entry};
use crate::storage::versions::{make_vid, master_id, VersionEntry, Versioning};

/// One key's answer.
pub type KeyOutcome = Result<std::result::Result<DeleteOutcome, Blocked>>;

impl ObjectStore {
    /// Writes a delete marker for each of `keys` in `bucket` (versioning enabled: a suspended
    /// bucket's null markers replace null versions, which goes key by key), as `owner`; one
    /// outcome per key, in order.
    pub async fn delete_markers(
        &self,
        bucket: &str,
        keys: &[String],
        owner: &str,
    ) -> Result<Vec<KeyOutcome>> {
        let (mode, _) = self.versioning(bucket).await?;
        let mut out: Vec<Option<KeyOutcome>> = (0..keys.len()).map(|_| None).collect();
        if mode == Versioning::Enabled {
            // Keys the bucket's versioning exclusions name are written as in a suspended
            // bucket (a null marker replacing the null version): they go one by one too.
            let exclusions = match self.meta.bucket_cached(bucket).await? {
                Some(b) => b.versioning_exclusions,
                None => Default::default(),
            };
            let batch: Vec<usize> = (0..keys.len())
                .filter(|i| !exclusions.excludes(&keys[*i]))
                .collect();
            let batch_keys: Vec<String> = batch.iter().map(|i| keys[*i].clone()).collect();
            let mut batch_out: Vec<Option<KeyOutcome>> = batch.iter().map(|_| None).collect();
            match self
                .mark_batch(bucket, &batch_keys, owner, &mut batch_out)
                .await
            {
                _ if batch_keys.is_empty() => {}
                Ok(()) => {
                    for (i, o) in batch.into_iter().zip(batch_out) {
                        out[i] = o;
                    }
                }
                Err(e) => {
                    tracing::warn!(bucket, error = %e, "a batch of delete markers failed; its keys go one by one");
                }
            }
        }
        let unconditional = DeleteCondition::default();
        let mut done = Vec::with_capacity(keys.len());
        for (key, o) in keys.iter().zip(out) {
            done.push(match o {
                Some(o) => o,
                None => {
                    self.delete_object(bucket, key, None, &unconditional, owner)
                        .await
                }
            });
        }
        Ok(done)
    }

    /// The batch: fills `out` for the keys it settles.
    async fn mark_batch(
        &self,
        bucket: &str,
        keys: &[String],
        owner: &str,
        out: &mut [Option<KeyOutcome>],
    ) -> Result<()> {
        let (locks, taken) = self.meta.try_lock_keys(bucket, keys).await?;
        let idx = self.versions(bucket);
        let ids: Vec<Bson> = keys
            .iter()
            .zip(&taken)
            .filter(|(_, t)| **t)
            .map(|(k, _)| Bson::String(master_id(k)))
            .collect();
        // What a master says of its version (not the user metadata, or the bytes a
        // content-addressed bucket keeps inline).
        let fields = doc! {"_id": 1, "filename": 1, "isPHD": 1, "phd": 1, "vid": 1, "fileId": 1,
        "length": 1, "chunkSize": 1, "uploadDate": 1, "null": 1};
        let masters: std::collections::HashMap<String, Document> =
            find_in(idx.collection(), "_id", &ids, &doc! {}, fields)
                .await?
                .into_iter()
                .filter_map(|d| Some((d.get_str("_id").ok()?.to_owned(), d)))
                .collect();
        // Under its lock, a key's master names its newest version: every version is written
        // entry first, master second, each under the lock. A writer that failed between the
        // two left a newer entry, stamped before it released the lock, so before this batch
        // took it: by the database's clock, which every instance reads (within a round trip),
        // this instance's `now` is past it. That holds unless the master itself is dated in
        // the future (stamps follow the newest version, so such a master's successors may be
        // too): those keys go key by key, where the newest entry is read.
        let now = self.meta.clock().now();
        let mut markers: Vec<(usize, VersionEntry)> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            if !taken[i] {
                continue;
            }
            let Some(m) = masters.get(&master_id(key)) else {
                continue;
            };
            if is_placeholder(m) {
                continue;
            }
            let Some(latest) = master_entry(m, key) else {
                continue;
            };
            if latest.at >= now {
                continue;
            }
            let at = self.stamp(&[(Bson::Null, latest.at)]);
            markers.push((
                i,
                VersionEntry {
                    key: key.clone(),
                    vid: make_vid(at, &Bson::ObjectId(ObjectId::new())),
                    null: false,
                    at,
                    owner: Some(owner.to_owned()),
                    file: None,
                },
            ));
        }
        if !markers.is_empty() {
            let masters: Vec<Bson> = markers
                .iter()
                .map(|(_, e)| Bson::String(master_id(&e.key)))
                .collect();
            self.batch_fence(&locks).await?;
            update_in(
                idx.collection(),
                "_id",
                &masters,
                &doc! {},
                &doc! {"$set": {"isPHD": true}},
            )
            .await?;
            let entries: Vec<&VersionEntry> = markers.iter().map(|(_, e)| e).collect();
            self.insert_markers(bucket, &idx, &entries).await?;
            // Where a batch cut short between its writes leaves the keys.
            crate::failpoint::hit("markers.placed", bucket).await;
            self.batch_fence(&locks).await?;
            delete_in(idx.collection(), "_id", &masters, &doc! {}).await?;
            for (i, e) in &markers {
                out[*i] = Some(Ok(Ok(DeleteOutcome {
                    version_id: Some(e.version_id().to_owned()),
                    delete_marker: true,
                })));
            }
        }
        // Released before the keys left over go key by key: they take their locks anew.
        locks.release_or_warn().await;
        Ok(())
    }

    /// Fails unless the batch still holds every one of its locks.
    async fn batch_fence(&self, locks: &KeyLocks) -> Result<()> {
        if !locks.fence().await? {
            return Err(GridFsError::Conflict("the key locks were lost".into()));
        }
        Ok(())
    }
}
