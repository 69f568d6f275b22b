//! A bucket's versioning state: how a key is versioned (the status, and MinIO's exclusions),
//! PutBucketVersioning, and the build of the version index when versioning is first enabled.

use mongodb::bson::doc;

use super::{ObjectStore, Result};
use crate::storage::gridfs::{FileDoc, GridFsError};
use crate::storage::versions::exclusions::Exclusions;
use crate::storage::versions::{make_vid, VersionEntry, VersionIndex, Versioning};

/// How long PutBucketVersioning waits for the first index build before answering (a larger
/// bucket's build goes on in the background).
const INLINE_BUILD: std::time::Duration = std::time::Duration::from_secs(20);
/// How long one instance leads a bucket's index build before another may take it over
/// (renewed as the build goes).
const INDEX_LEAD: std::time::Duration = std::time::Duration::from_secs(600);
/// Keys between two renewals of a build's lead.
const RENEW_EVERY: u64 = 500;

impl ObjectStore {
    /// How a write or delete of `key` is versioned: the bucket's state, except that a key
    /// its exclusions name (MinIO's `ExcludedPrefixes`, `ExcludeFolders`) is written as in a
    /// suspended bucket while versioning is enabled. With whether the index is complete.
    pub async fn versioning_of(&self, bucket: &str, key: &str) -> Result<(Versioning, bool)> {
        Ok(match self.meta.bucket_cached(bucket).await? {
            Some(b) => {
                let mode = Versioning::from_status(b.versioning.as_deref());
                // Under Object Lock every key is versioned, whatever exclusions a race with
                // PutObjectLockConfiguration left stored: a retained version is never the
                // null version a later write would replace.
                let excluded = mode == Versioning::Enabled
                    && b.object_lock.is_none()
                    && b.versioning_exclusions.excludes(key);
                let mode = if excluded {
                    Versioning::Suspended
                } else {
                    mode
                };
                (mode, b.versions_indexed)
            }
            None => (Versioning::Off, false),
        })
    }

    /// A bucket's versioning state and whether its index is complete (from the bucket cache:
    /// a change through another instance is seen within a second).
    pub async fn versioning(&self, bucket: &str) -> Result<(Versioning, bool)> {
        Ok(match self.meta.bucket_cached(bucket).await? {
            Some(b) => (
                Versioning::from_status(b.versioning.as_deref()),
                b.versions_indexed,
            ),
            None => (Versioning::Off, false),
        })
    }

    /// Enables (or suspends) versioning. The first time, the index is built from the
    /// bucket's revisions: after the status is stored and every instance's bucket cache has
    /// seen it (so every new write records its version), each revision without an entry
    /// gets one, the newest of a key's pre-existing revisions as its `null` version and
    /// older ones (other GridFS writers keep several) with ids derived from their `_id`.
    /// Re-running it (after a crash) finds the same ids and changes nothing. A small bucket's
    /// build finishes within the request; a large one's goes on in the background (and, should
    /// this process die, in another instance's janitor pass), reads meanwhile falling back to
    /// the GridFS revisions of keys the index does not cover yet. `false` when the bucket
    /// no longer matches what the caller read (exclusions asked for, and Object Lock set
    /// since): nothing is written then.
    pub async fn set_versioning(
        &self,
        bucket: &str,
        status: Versioning,
        exclusions: &Exclusions,
    ) -> Result<bool> {
        let Some(b) = self.meta.get_bucket(bucket).await? else {
            return Err(GridFsError::FileNotFound);
        };
        let name = status.status().unwrap_or("Suspended");
        if b.versions_indexed {
            let set = self
                .meta
                .set_bucket_versioning(bucket, name, exclusions, true)
                .await?;
            self.meta.forget_bucket(bucket);
            return Ok(set);
        }
        self.versions(bucket).ensure_indexes().await?;
        // Searches of a versioned bucket read its masters: its declared fields are indexed
        // there before the first master is written.
        self.search_indexes_on_masters(bucket).await?;
        let set = self
            .meta
            .set_bucket_versioning(bucket, name, exclusions, false)
            .await?;
        self.meta.forget_bucket(bucket);
        if !set {
            return Ok(false);
        }
        let (store, name) = (self.clone(), bucket.to_owned());
        let build =
            crate::background::spawn(
                "version-index",
                async move { store.finish_index(&name).await },
            );
        let waited = async {
            let led = build
                .await
                .map_err(|e| GridFsError::Conflict(format!("index build: {e}")))??;
            if !led {
                // Another run leads the build (the janitor's resume, or a PutBucketVersioning
                // on another instance): wait for it as for our own, so that this answer comes
                // once listings see every version (they list `null` versions until then).
                crate::failpoint::hit("versioning.wait", bucket).await;
                while !self
                    .meta
                    .get_bucket(bucket)
                    .await?
                    .is_some_and(|b| b.versions_indexed)
                {
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
                self.meta.forget_bucket(bucket);
            }
            Ok::<_, GridFsError>(())
        };
        let inline = crate::failpoint::limit("versioning.inline_build", bucket, INLINE_BUILD);
        match tokio::time::timeout(inline, waited).await {
            Ok(done) => done?,
            Err(_) => tracing::info!(bucket, "the version index build goes on in the background"),
        }
        Ok(true)
    }

    /// Builds a bucket's version index and records it complete, if this instance leads the
    /// build (one instance at a time, through a lead in `__infostore`); `false` when another
    /// instance leads it.
    pub async fn finish_index(&self, bucket: &str) -> Result<bool> {
        let Some(lead) = self
            .meta
            .take_lead(&format!("version-index\u{0}{bucket}"), INDEX_LEAD)
            .await?
        else {
            return Ok(false);
        };
        // (Where a test holds a build that leads, to race a PutBucketVersioning against it.)
        crate::failpoint::hit("index.led", bucket).await;
        tokio::time::sleep(
            crate::storage::meta::BUCKET_CACHE_TTL + std::time::Duration::from_millis(500),
        )
        .await;
        // The build is idempotent (each entry's id is derived from its revision), so a run
        // that outlived its lead only repeats what the next one writes.
        let built = async {
            self.build_index(bucket, &self.versions(bucket), &lead)
                .await?;
            self.meta.set_versions_indexed(bucket).await?;
            self.meta.forget_bucket(bucket);
            Ok::<_, GridFsError>(())
        }
        .await;
        // Given up either way: a failed build is retried by the next janitor pass, not after
        // the lead's ten minutes.
        lead.release_or_warn().await;
        built.map(|()| true)
    }

    /// Finishes the version index builds that stopped (their instance died), for the janitor.
    pub async fn resume_index_builds(&self) -> Result<usize> {
        let mut done = 0;
        for b in self.meta.list_buckets().await? {
            if b.versioning.is_some() && !b.versions_indexed && self.finish_index(&b.name).await? {
                done += 1;
            }
        }
        Ok(done)
    }

    /// Every key's revisions recorded, the lead renewed every [`RENEW_EVERY`] keys: a build
    /// longer than the lead keeps it (one that lost it stops, and the next run goes on).
    async fn build_index(
        &self,
        bucket: &str,
        idx: &VersionIndex,
        lead: &crate::storage::meta::Lead,
    ) -> Result<()> {
        use futures::TryStreamExt;
        let mut cursor = self
            .gridfs(bucket)
            .files()
            .find(doc! {"metadata.s3VersionId": {"$exists": false}})
            .sort(doc! {"filename": 1, "uploadDate": -1})
            .batch_size(1000)
            .await?;
        let mut last_key: Option<String> = None;
        let mut keys = 0_u64;
        while let Some(d) = cursor.try_next().await? {
            let Ok(file) = FileDoc::from_document(&d) else {
                continue;
            };
            let Some(key) = file.filename.clone() else {
                continue;
            };
            let newest = last_key.as_deref() != Some(key.as_str());
            if newest {
                keys += 1;
                if keys.is_multiple_of(RENEW_EVERY) && !lead.renew().await? {
                    return Err(GridFsError::Conflict(
                        "the version index build lost its lead".into(),
                    ));
                }
                if let Some(k) = last_key.take() {
                    self.sync_locked(bucket, &k).await?;
                }
                last_key = Some(key.clone());
            }
            let mut file = file;
            if let (Some(m), Ok(md5)) = (file.metadata.as_mut(), d.get_str("md5")) {
                if !m.contains_key("etag") && md5.len() == 32 {
                    m.insert("etag", format!("\"{}\"", md5.to_ascii_lowercase()));
                }
            } else if let Ok(md5) = d.get_str("md5") {
                if file.metadata.is_none() && md5.len() == 32 {
                    file.metadata =
                        Some(doc! {"etag": format!("\"{}\"", md5.to_ascii_lowercase())});
                }
            }
            let e = VersionEntry {
                vid: make_vid(file.upload_date, &file.id),
                null: newest,
                at: file.upload_date,
                owner: None,
                file: Some(file),
                key,
            };
            idx.insert(&e).await?;
        }
        if let Some(k) = last_key {
            self.sync_locked(bucket, &k).await?;
        }
        Ok(())
    }
}

/// What the version index says of a key while it is being built.
pub(super) enum WhileIndexing {
    /// Nothing yet: the key's newest GridFS revision is its current object (its null
    /// version).
    Revisions,
    /// The key's current object, as recorded since versioning was enabled.
    Current(Box<super::ObjectInfo>),
    /// The key's latest version is a delete marker.
    Deleted,
}

impl ObjectStore {
    /// While a versioned bucket's index is being built, listings read the GridFS revisions,
    /// and a key's newest revision is its current object only if the index has nothing to
    /// say of the key: a version written since (its master), or a delete marker, which
    /// GridFS does not see. (Listings and searches showed keys deleted during a build that
    /// outlived PutBucketVersioning's answer.)
    pub(super) async fn while_indexing(&self, bucket: &str, key: &str) -> Result<WhileIndexing> {
        use crate::storage::versions::index::Master;
        let idx = self.versions(bucket);
        let master = match idx.master(key).await? {
            Some(Master::Current(e)) => {
                return Ok(
                    super::versioned::info_of(&e).map_or(WhileIndexing::Deleted, |o| {
                        WhileIndexing::Current(Box::new(o))
                    }),
                )
            }
            Some(Master::Placeholder) => true,
            None => false,
        };
        Ok(match idx.latest(key).await? {
            None => WhileIndexing::Revisions,
            Some(e) => {
                if master || !e.is_marker() {
                    self.repair_later(bucket, key);
                }
                match super::versioned::info_of(&e).filter(|_| !e.is_marker()) {
                    Some(o) => WhileIndexing::Current(Box::new(o)),
                    None => WhileIndexing::Deleted,
                }
            }
        })
    }
}
