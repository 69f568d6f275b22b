//! The object layer of versioned buckets: reads through the version index, publishes that
//! record versions instead of reclaiming revisions, delete markers, deletes of versions,
//! conditional deletes (in every bucket), ListObjectVersions, and the index build when
//! versioning is first enabled. The index itself is `storage::versions`.

use mongodb::bson::{doc, oid::ObjectId, Bson, DateTime};

use super::{Blocked, ObjectInfo, ObjectStore, Result};
use crate::storage::gridfs::FileDoc;
use crate::storage::meta::KeyLock;
use crate::storage::versions::{
    entry_id, make_vid, Master, VersionEntry, VersionIndex, Versioning,
};

/// What a key (or one of its versions) is.
#[derive(Clone, Debug)]
pub enum Lookup {
    /// An object (data version).
    Object(Box<ObjectInfo>),
    /// A delete marker: the latest version (no version named) or the version named.
    DeleteMarker {
        /// Its version id as S3 shows it.
        version_id: String,
        /// When it was written.
        at: DateTime,
    },
    /// Nothing: no such key, or no such version.
    Missing,
}

/// Preconditions of a delete (`If-Match`, `x-amz-if-match-last-modified-time`,
/// `x-amz-if-match-size`), on the current object or on the version named.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeleteCondition {
    /// An ETag list or `*`.
    pub if_match: Option<String>,
    /// The last-modified time, to the second.
    pub last_modified: Option<DateTime>,
    /// The size in bytes.
    pub size: Option<u64>,
    /// `x-amz-bypass-governance-retention` from a key that may use it.
    pub bypass_governance: bool,
    /// The revision (files `_id`) the current object must still be: a lifecycle expiration
    /// deletes only the version it judged, never one written since.
    pub revision: Option<Bson>,
}

impl DeleteCondition {
    /// Whether there is any condition.
    pub fn is_set(&self) -> bool {
        self.if_match.is_some()
            || self.last_modified.is_some()
            || self.size.is_some()
            || self.revision.is_some()
    }

    /// Checks the condition against what the delete would remove. AWS: an `If-Match` on a
    /// key without a current object is 404 (`NoSuchKey`); size and time conditions alone
    /// pass on a missing object.
    fn check(&self, target: &Lookup) -> std::result::Result<(), Blocked> {
        if !self.is_set() {
            return Ok(());
        }
        let Lookup::Object(o) = target else {
            return match (&self.if_match, &self.revision) {
                (Some(_), _) => Err(Blocked::NoSuchKey),
                (None, Some(_)) => Err(Blocked::PreconditionFailed),
                (None, None) => Ok(()),
            };
        };
        if self.revision.as_ref().is_some_and(|r| *r != o.file.id) {
            return Err(Blocked::PreconditionFailed);
        }
        if let Some(list) = &self.if_match {
            if !super::etag_listed(o.etag(), list) {
                return Err(Blocked::PreconditionFailed);
            }
        }
        if let Some(t) = self.last_modified {
            if t.timestamp_millis() / 1000 != o.file.upload_date.timestamp_millis() / 1000 {
                return Err(Blocked::PreconditionFailed);
            }
        }
        if self.size.is_some_and(|s| s != o.size()) {
            return Err(Blocked::PreconditionFailed);
        }
        Ok(())
    }
}

/// What a delete did (the `x-amz-version-id` and `x-amz-delete-marker` of its answer).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteOutcome {
    /// The version removed, or the delete marker written.
    pub version_id: Option<String>,
    /// A delete marker was written, or the version removed was one.
    pub delete_marker: bool,
}

/// The object a version entry names.
pub(super) fn info_of(e: &VersionEntry) -> Option<ObjectInfo> {
    let mut info = ObjectInfo::from_file(e.file.clone()?);
    info.version_id = Some(e.version_id().to_owned());
    Some(info)
}

/// What a publish learnt about the key before writing (under the key's lock).
pub(super) struct Prepared {
    pub mode: Versioning,
    /// The new revision's `uploadDate`.
    pub date: DateTime,
    /// Revisions it replaces (unversioned buckets only).
    pub older: Vec<(Bson, DateTime)>,
    /// The version id it is written as (versioned buckets).
    pub vid: Option<String>,
}

impl ObjectStore {
    /// The version index of a bucket.
    pub fn versions(&self, bucket: &str) -> VersionIndex {
        VersionIndex::new(&self.db, bucket)
    }

    /// The current object of `key`, or the version named. In a versioned bucket the current
    /// object is its master (one lookup by `_id`); a placeholder is repaired first.
    pub async fn lookup(&self, bucket: &str, key: &str, version: Option<&str>) -> Result<Lookup> {
        let (mode, indexed) = self.versioning(bucket).await?;
        let unversioned = |o: Option<ObjectInfo>| match o {
            Some(o) => Lookup::Object(Box::new(o)),
            None => Lookup::Missing,
        };
        if mode == Versioning::Off {
            return Ok(match version {
                Some(v) if v != "null" => Lookup::Missing,
                _ => unversioned(self.head_revision(bucket, key).await?),
            });
        }
        let idx = self.versions(bucket);
        // While the index is being built, a key it does not cover yet is its newest GridFS
        // revision, which is the null version.
        let unversioned = |o: Option<ObjectInfo>| {
            unversioned(o.map(|mut o| {
                o.version_id = Some("null".to_owned());
                o
            }))
        };
        if let Some(v) = version {
            return Ok(match idx.entry(key, v).await? {
                Some(e) => entry_lookup(&e),
                None if !indexed && v == "null" => {
                    unversioned(self.head_revision(bucket, key).await?)
                }
                None => Lookup::Missing,
            });
        }
        let master = idx.master(key).await?;
        self.lookup_current(bucket, key, master, indexed).await
    }

    /// The rest of [`ObjectStore::lookup`] of a versioned key's current object, once its
    /// master (`master`) is read.
    pub(super) async fn lookup_current(
        &self,
        bucket: &str,
        key: &str,
        master: Option<Master>,
        indexed: bool,
    ) -> Result<Lookup> {
        let idx = self.versions(bucket);
        let unversioned = |o: Option<ObjectInfo>| match o {
            Some(mut o) => {
                o.version_id = Some("null".to_owned());
                Lookup::Object(Box::new(o))
            }
            None => Lookup::Missing,
        };
        let master = match master {
            Some(Master::Current(e)) => {
                return Ok(info_of(&e).map_or(Lookup::Missing, |o| Lookup::Object(Box::new(o))))
            }
            Some(Master::Placeholder) => true,
            None => false,
        };
        // A placeholder (its delete did not finish), or no master: the newest entry answers,
        // and a repair under the key's lock follows when the master is not what it says.
        Ok(match idx.latest(key).await? {
            Some(e) => {
                if master || !e.is_marker() {
                    self.repair_later(bucket, key);
                }
                entry_lookup(&e)
            }
            None if !indexed => unversioned(self.head_revision(bucket, key).await?),
            None => {
                if master {
                    self.repair_later(bucket, key);
                }
                Lookup::Missing
            }
        })
    }

    /// Repairs a key's master in the background, under the key's lock.
    pub(super) fn repair_later(&self, bucket: &str, key: &str) {
        let (store, bucket, key) = (self.clone(), bucket.to_owned(), key.to_owned());
        crate::background::spawn("repair-master", async move {
            if let Err(e) = store.sync_locked(&bucket, &key).await {
                tracing::warn!(bucket, key, error = %e, "could not repair a master");
            }
        });
    }

    /// Before a publish, under the key's lock: the stamp, and what it replaces or is
    /// written as. A stamp is after every version the key has, delete markers included.
    pub(super) async fn prepare_publish(
        &self,
        bucket: &str,
        key: &str,
        file_id: &Bson,
    ) -> Result<Prepared> {
        let (mode, indexed) = self.versioning_of(bucket, key).await?;
        if mode == Versioning::Off {
            let older = self.revisions(bucket, key).await?;
            let date = self.stamp(&older);
            return Ok(Prepared {
                mode,
                date,
                older,
                vid: None,
            });
        }
        let mut seen: Vec<(Bson, DateTime)> = Vec::new();
        if let Some(e) = self.versions(bucket).latest(key).await? {
            seen.push((Bson::Null, e.at));
        }
        if !indexed {
            seen.extend(self.revisions(bucket, key).await?);
        }
        let date = self.stamp(&seen);
        Ok(Prepared {
            mode,
            date,
            older: Vec::new(),
            vid: Some(make_vid(date, file_id)),
        })
    }

    /// After the files document is written: an unversioned bucket reclaims the revisions it
    /// replaced; a versioned one records the version, then moves the master to it, then (when
    /// suspended) removes the null version it replaced. A crash after the files document is
    /// finished by the janitor (the write's registration names the file: `index_file`).
    pub(super) async fn finish_publish(
        &self,
        bucket: &str,
        p: Prepared,
        file: FileDoc,
    ) -> Result<ObjectInfo> {
        if let Some(key) = &file.filename {
            self.post_written(bucket, key);
        }
        if p.mode == Versioning::Off {
            let info = ObjectInfo::from_file(file);
            self.reclaim_all(bucket, &p.older, &info).await;
            self.settle_later(bucket, info.key());
            return Ok(info);
        }
        let e = VersionEntry {
            key: file.filename.clone().unwrap_or_default(),
            vid: p.vid.unwrap_or_default(),
            null: p.mode == Versioning::Suspended,
            at: file.upload_date,
            owner: None,
            file: Some(file),
        };
        self.record_version(bucket, &e).await?;
        Ok(info_of(&e).expect("a data version"))
    }

    /// Records a version (entry, then master), and when it is a null version removes the
    /// null version it replaces: file reclaimed first, entry after, so a crash in between
    /// leaves an entry whose data is gone rather than data no entry names.
    async fn record_version(&self, bucket: &str, e: &VersionEntry) -> Result<()> {
        let idx = self.versions(bucket);
        idx.insert(e).await?;
        idx.set_master(e).await?;
        if e.null {
            for old in idx.null_entries(&e.key).await? {
                if old.vid != e.vid {
                    self.remove_version(bucket, &idx, &old).await?;
                }
            }
        }
        Ok(())
    }

    /// Indexes a published files document that has no version entry yet (a writer that died
    /// between the two writes; the janitor calls this for its registration).
    pub(super) async fn index_file(&self, bucket: &str, file_id: &Bson) -> Result<()> {
        self.index_file_with(bucket, file_id, false).await
    }

    /// [`ObjectStore::index_file`] for a caller that holds the key's lock already (a retried
    /// CompleteMultipartUpload).
    pub(super) async fn index_file_held(&self, bucket: &str, file_id: &Bson) -> Result<()> {
        self.index_file_with(bucket, file_id, true).await
    }

    async fn index_file_with(&self, bucket: &str, file_id: &Bson, held: bool) -> Result<()> {
        let (mode, _) = self.versioning(bucket).await?;
        if mode == Versioning::Off {
            return Ok(());
        }
        let Some(d) = self
            .gridfs(bucket)
            .files()
            .find_one(doc! {"_id": file_id.clone()})
            .await?
        else {
            return Ok(());
        };
        let file = FileDoc::from_document(&d)?;
        let meta = super::ObjectMeta::from_metadata(file.metadata.as_ref());
        let Some(vid) = meta.version_id else {
            return Ok(());
        };
        let key = file.filename.clone().unwrap_or_default();
        if held {
            return self.index_locked(bucket, file, key, vid).await;
        }
        let k = key.clone();
        self.under_lock(bucket, &k, self.index_locked(bucket, file, key, vid))
            .await
    }

    async fn index_locked(
        &self,
        bucket: &str,
        file: FileDoc,
        key: String,
        vid: String,
    ) -> Result<()> {
        let idx = self.versions(bucket);
        if idx.entry(&key, &vid).await?.is_some() {
            idx.sync_master(&key).await?;
            return Ok(());
        }
        // A null version's entry is the only thing that says it was one: a writer that died
        // before writing it wrote a version that is kept as an ordinary (non-null) one.
        let e = VersionEntry {
            key,
            vid,
            null: false,
            at: file.upload_date,
            owner: None,
            file: Some(file),
        };
        // Recorded in its place, not made the latest: the writer died before its master, and
        // a newer version (a delete marker, another PUT) may have been written since its lock
        // expired. The master follows the newest entry, whichever that is.
        let idx = self.versions(bucket);
        idx.insert(&e).await?;
        idx.sync_master(&e.key).await?;
        Ok(())
    }

    /// DeleteObject (and each key of DeleteObjects) in any bucket: under the key's lock, the
    /// condition is checked against what would be removed, then
    /// - unversioned: every revision is reclaimed;
    /// - no version named: a delete marker becomes the latest version (a null one when
    ///   suspended, replacing the null version);
    /// - a version named: it is removed for good; if it was the latest, the master is a
    ///   placeholder until the newest version left replaces it.
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        version: Option<&str>,
        cond: &DeleteCondition,
        owner: &str,
    ) -> Result<std::result::Result<DeleteOutcome, Blocked>> {
        let (mode, _) = self.versioning_of(bucket, key).await?;
        if mode == Versioning::Off && !cond.is_set() {
            self.delete(bucket, key).await?;
            return Ok(Ok(DeleteOutcome::default()));
        }
        let Some(lock) = self.meta.lock_key(bucket, key).await? else {
            return Ok(Err(Blocked::Busy));
        };
        let res = self
            .delete_locked(bucket, key, version, cond, owner, mode, &lock)
            .await;
        lock.release_or_warn().await;
        res
    }

    #[allow(clippy::too_many_arguments)]
    async fn delete_locked(
        &self,
        bucket: &str,
        key: &str,
        version: Option<&str>,
        cond: &DeleteCondition,
        owner: &str,
        mode: Versioning,
        lock: &KeyLock,
    ) -> Result<std::result::Result<DeleteOutcome, Blocked>> {
        // Only a conditional delete needs to see what it removes first.
        if cond.is_set() {
            let target = self.lookup(bucket, key, version).await?;
            if let Err(b) = cond.check(&target) {
                return Ok(Err(b));
            }
        }
        if mode == Versioning::Off {
            self.fence(Some(lock), None).await?;
            self.delete(bucket, key).await?;
            return Ok(Ok(DeleteOutcome::default()));
        }
        let idx = self.versions(bucket);
        let Some(v) = version else {
            let latest = idx.latest(key).await?;
            let seen: Vec<(Bson, DateTime)> = latest.iter().map(|e| (Bson::Null, e.at)).collect();
            let at = self.stamp(&seen);
            let marker = VersionEntry {
                key: key.to_owned(),
                vid: make_vid(at, &Bson::ObjectId(ObjectId::new())),
                null: mode == Versioning::Suspended,
                at,
                owner: Some(owner.to_owned()),
                file: None,
            };
            self.fence(Some(lock), None).await?;
            self.insert_markers(bucket, &idx, &[&marker]).await?;
            idx.set_master(&marker).await?;
            if marker.null {
                for old in idx.null_entries(key).await? {
                    if old.vid != marker.vid {
                        self.remove_version(bucket, &idx, &old).await?;
                    }
                }
            }
            return Ok(Ok(DeleteOutcome {
                version_id: Some(marker.version_id().to_owned()),
                delete_marker: true,
            }));
        };
        let Some(e) = idx.entry(key, v).await? else {
            // AWS answers a delete of a version that does not exist with 204.
            return Ok(Ok(DeleteOutcome {
                version_id: Some(v.to_owned()),
                delete_marker: false,
            }));
        };
        if let Some(f) = &e.file {
            let meta = super::ObjectMeta::from_metadata(f.metadata.as_ref());
            if !meta.removable(self.meta.clock().now(), cond.bypass_governance) {
                return Ok(Err(Blocked::Locked));
            }
        }
        self.fence(Some(lock), None).await?;
        let latest = idx.latest(key).await?;
        let is_latest = latest.as_ref().is_some_and(|l| l.vid == e.vid);
        if is_latest && !e.is_marker() {
            idx.set_placeholder(key).await?;
        }
        self.remove_version(bucket, &idx, &e).await?;
        if is_latest {
            idx.sync_master(key).await?;
        }
        Ok(Ok(DeleteOutcome {
            version_id: Some(e.version_id().to_owned()),
            delete_marker: e.is_marker(),
        }))
    }

    /// Removes one version for good: a marker's entry, or a data version's files document,
    /// entry and chunks under one reclaim record (see [`ObjectStore::reclaim_of`]).
    async fn remove_version(
        &self,
        bucket: &str,
        idx: &VersionIndex,
        e: &VersionEntry,
    ) -> Result<()> {
        match &e.file {
            Some(f) => {
                self.reclaim_of(bucket, &f.id, Some(&entry_id(&e.key, &e.vid)))
                    .await
            }
            None => {
                self.remove_marker(idx, bucket, &entry_id(&e.key, &e.vid))
                    .await
            }
        }
    }

    /// Sets a key's master from its entries, taking the key's lock.
    pub(super) async fn sync_locked(&self, bucket: &str, key: &str) -> Result<()> {
        let idx = self.versions(bucket);
        self.under_lock(bucket, key, idx.sync_master(key))
            .await
            .map(|_| ())
    }
}

/// A version entry as a lookup result.
pub(super) fn entry_lookup(e: &VersionEntry) -> Lookup {
    match info_of(e) {
        Some(o) => Lookup::Object(Box::new(o)),
        None => Lookup::DeleteMarker {
            version_id: e.version_id().to_owned(),
            at: e.at,
        },
    }
}
