//! Bucket attributes in `__metastore`.

use std::collections::HashMap;

use futures::TryStreamExt;
use mongodb::bson::{doc, oid::ObjectId, DateTime, Document};

pub use super::bucket_settings::{BucketEncryption, CorsRule, ObjectLockConfig, StorageMode};
use super::{is_duplicate_key, MetaStore};
pub use crate::model::PublicAccessBlock;

/// A bucket's attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct BucketInfo {
    /// Name (also the GridFS bucket name).
    pub name: String,
    /// When it was created (or adopted).
    pub creation_date: DateTime,
    /// A fresh id stamped at creation (`inc`), so that a bucket deleted and created again
    /// under the same name is told from the one before it (see [`BucketInfo::incarnation`]);
    /// `None` for a bucket created before grids3 stamped one.
    pub incarnation_id: Option<ObjectId>,
    /// Owner's access key id.
    pub owner: String,
    /// Region it was created in.
    pub region: String,
    /// Whether it was a GridFS bucket made by another tool, adopted at start-up.
    pub adopted: bool,
    /// Access granted to other keys: (access key id, `read` | `write` | `owner`).
    pub grants: Vec<(String, String)>,
    /// The CORS rules (PutBucketCors), in order; empty when the bucket has none.
    pub cors: Vec<CorsRule>,
    /// ACL grants beyond the owner's: (grantee, permission), see `s3::acl::grants`.
    pub acl: Vec<(String, String)>,
    /// The bucket policy, as the JSON text PutBucketPolicy stored (see `auth::policy`).
    pub policy: Option<String>,
    /// The bucket's Block Public Access configuration, if it has one.
    pub public_access_block: Option<PublicAccessBlock>,
    /// Object ownership (`BucketOwnerEnforced`, ...; `None`: none set, which behaves as
    /// `ObjectWriter`).
    pub ownership: Option<String>,
    /// The lifecycle configuration, as the XML PutBucketLifecycleConfiguration stored (see
    /// `crate::lifecycle`).
    pub lifecycle: Option<String>,
    /// The server access logging configuration, as the `BucketLoggingStatus` XML
    /// PutBucketLogging stored (see `crate::access_log::config`).
    pub logging: Option<String>,
    /// The event notification configuration, as the `NotificationConfiguration` XML
    /// PutBucketNotificationConfiguration stored (see `crate::notify::config`).
    pub notification: Option<String>,
    /// The website configuration, as the `WebsiteConfiguration` XML PutBucketWebsite stored
    /// (see `crate::website`).
    pub website: Option<String>,
    /// Versioning status (`Enabled`, `Suspended`; `None`: never enabled).
    pub versioning: Option<String>,
    /// Keys left out of versioning (MinIO's `ExcludedPrefixes` and `ExcludeFolders`).
    pub versioning_exclusions: crate::storage::versions::exclusions::Exclusions,
    /// Whether the version index covers every object written before versioning was enabled
    /// (see `storage::versions`); until then reads fall back to GridFS revisions.
    pub versions_indexed: bool,
    /// Object Lock, when enabled on the bucket (see `s3::object_lock`).
    pub object_lock: Option<ObjectLockConfig>,
    /// Default encryption of new objects (PutBucketEncryption), if configured.
    pub encryption: Option<BucketEncryption>,
    /// How objects' contents are stored, chosen at creation (see `storage::content`) and
    /// changed by a conversion.
    pub storage: StorageMode,
    /// A conversion to `storage` under way (`grids3 admin convert-bucket`): objects stored the
    /// other way are being converted (see `objects::convert`).
    pub converting: bool,
    /// A bucket converted to GridFS still has contents and references, until the janitor has
    /// reclaimed them all (`contents: true` in the metastore).
    pub retired_contents: bool,
    /// Whether the bucket has (or had) a quota limit, so its writes hold their room and its
    /// usage is counted (see `quota`). Never cleared: counting stays exact once begun.
    pub metered: bool,
    /// The fields its owner declared for metadata search to index (`search_indexes`).
    pub search_indexes: Vec<super::DeclaredIndex>,
}

impl BucketInfo {
    /// A new bucket with every attribute at its default (no grants, ACL, policy, CORS,
    /// lifecycle, versioning, Object Lock or encryption; GridFS storage).
    pub fn new(name: &str, owner: &str, region: &str, creation_date: DateTime) -> Self {
        Self {
            name: name.to_owned(),
            creation_date,
            incarnation_id: Some(ObjectId::new()),
            owner: owner.to_owned(),
            region: region.to_owned(),
            adopted: false,
            grants: Vec::new(),
            cors: Vec::new(),
            acl: Vec::new(),
            policy: None,
            public_access_block: None,
            ownership: None,
            lifecycle: None,
            logging: None,
            notification: None,
            website: None,
            versioning: None,
            versioning_exclusions: Default::default(),
            versions_indexed: false,
            object_lock: None,
            encryption: None,
            storage: StorageMode::Gridfs,
            converting: false,
            retired_contents: false,
            metered: false,
            search_indexes: Vec::new(),
        }
    }

    /// Which bucket of its name this is: a bucket deleted and created again under the same
    /// name has another incarnation, so that what was bound to the first (a listener's stream)
    /// never crosses to the second. The id stamped at creation; for a bucket created before
    /// grids3 stamped one, its creation time (a name is not deleted and created again within
    /// one millisecond: a deletion and a creation are each a round trip to the database).
    pub fn incarnation(&self) -> String {
        match self.incarnation_id {
            Some(id) => id.to_hex(),
            None => format!("created:{}", self.creation_date.timestamp_millis()),
        }
    }

    pub(super) fn to_document(&self) -> Document {
        let mut d = doc! {
            "_id": &self.name,
            "creationDate": self.creation_date,
            "owner": &self.owner,
            "region": &self.region,
            "adopted": self.adopted,
            "acl": super::acl_docs(&self.acl),
        };
        if let Some(id) = self.incarnation_id {
            d.insert("inc", id);
        }
        if let Some(o) = &self.ownership {
            d.insert("ownership", o);
        }
        if let Some(v) = &self.versioning {
            d.insert("versioning", v);
            d.insert("versionsIndexed", self.versions_indexed);
        }
        if let Some(l) = &self.object_lock {
            d.insert("objectLock", l.to_document());
        }
        if let Some(e) = &self.encryption {
            d.insert("encryption", e.to_document());
        }
        if self.storage != StorageMode::Gridfs {
            d.insert("storage", self.storage.as_str());
        }
        if self.converting {
            d.insert("converting", true);
        }
        if self.retired_contents {
            d.insert("contents", true);
        }
        if self.metered {
            d.insert("metered", true);
        }
        if !self.search_indexes.is_empty() {
            let list: Vec<Document> = self
                .search_indexes
                .iter()
                .map(|x| doc! {"f": &x.field, "gen": x.gen, "ready": x.ready})
                .collect();
            d.insert("searchIndexes", list);
        }
        d
    }

    fn from_document(d: &Document) -> Option<Self> {
        Some(Self {
            name: d.get_str("_id").ok()?.to_owned(),
            creation_date: d
                .get_datetime("creationDate")
                .ok()
                .copied()
                .unwrap_or(DateTime::from_millis(0)),
            incarnation_id: d.get_object_id("inc").ok(),
            owner: d.get_str("owner").unwrap_or_default().to_owned(),
            region: d.get_str("region").unwrap_or_default().to_owned(),
            adopted: d.get_bool("adopted").unwrap_or(false),
            grants: d
                .get_document("grants")
                .map(|g| {
                    g.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default(),
            acl: super::acl_from_docs(d, "acl"),
            policy: d.get_str("policy").ok().map(str::to_owned),
            ownership: d.get_str("ownership").ok().map(str::to_owned),
            lifecycle: d.get_str("lifecycle").ok().map(str::to_owned),
            logging: d.get_str("logging").ok().map(str::to_owned),
            notification: d.get_str("notification").ok().map(str::to_owned),
            website: d.get_str("website").ok().map(str::to_owned),
            versioning: d.get_str("versioning").ok().map(str::to_owned),
            versioning_exclusions: d
                .get_document("versioningExclusions")
                .map(crate::storage::versions::exclusions::Exclusions::from_document)
                .unwrap_or_default(),
            versions_indexed: d.get_bool("versionsIndexed").unwrap_or(false),
            object_lock: d
                .get_document("objectLock")
                .ok()
                .map(ObjectLockConfig::from_document),
            encryption: d
                .get_document("encryption")
                .ok()
                .map(BucketEncryption::from_document),
            storage: d
                .get_str("storage")
                .ok()
                .and_then(StorageMode::parse)
                .unwrap_or_default(),
            converting: d.get_bool("converting").unwrap_or(false),
            retired_contents: d.get_bool("contents").unwrap_or(false),
            metered: d.get_bool("metered").unwrap_or(false),
            search_indexes: super::DeclaredIndex::all_in(d),
            public_access_block: d
                .get_document("publicAccessBlock")
                .ok()
                .map(PublicAccessBlock::from_document),
            cors: d
                .get_array("cors")
                .map(|a| {
                    a.iter()
                        .filter_map(|r| r.as_document().map(CorsRule::from_document))
                        .collect()
                })
                .unwrap_or_default(),
        })
    }
}

/// How long a bucket lookup is reused in this process: changes made through another instance
/// (a deleted bucket, a new grant) reach this one within this time.
pub const BUCKET_CACHE_TTL: std::time::Duration = std::time::Duration::from_secs(1);
/// Most bucket lookups cached at once (names come from requests; a full cache is emptied).
const MAX_CACHED_BUCKETS: usize = 10_000;

/// Bucket lookups cached in this process: the attributes (or `None`) and when they were read,
/// and a generation that every change moves on.
#[derive(Debug, Default)]
pub struct Cache {
    entries: std::sync::Mutex<HashMap<String, (Option<BucketInfo>, std::time::Instant)>>,
    generation: std::sync::atomic::AtomicU64,
}

impl MetaStore {
    /// Whether the cached entry of a bucket (however old) has server access logging on,
    /// without copying it or asking the database; `None` when it is not cached.
    pub fn logging_hint(&self, name: &str) -> Option<bool> {
        self.bucket_cache
            .entries
            .lock()
            .expect("cache")
            .get(name)
            .map(|(b, _)| b.as_ref().is_some_and(|b| b.logging.is_some()))
    }

    /// The cached entry of a bucket, however old, without asking the database (`None`: not
    /// cached). For work after a request's answer, which must not wait on the database.
    pub fn peek_bucket(&self, name: &str) -> Option<Option<BucketInfo>> {
        self.bucket_cache
            .entries
            .lock()
            .expect("cache")
            .get(name)
            .map(|(b, _)| b.clone())
    }

    /// A bucket's attributes, from this process's cache when they were read less than
    /// [`BUCKET_CACHE_TTL`] ago (absent buckets too). Request handling and authorization use
    /// this; anything that changes a bucket reads it fresh with [`MetaStore::get_bucket`].
    pub async fn bucket_cached(&self, name: &str) -> mongodb::error::Result<Option<BucketInfo>> {
        use std::sync::atomic::Ordering;
        let cache = &self.bucket_cache;
        if let Some((b, at)) = cache.entries.lock().expect("cache").get(name) {
            if at.elapsed() < BUCKET_CACHE_TTL {
                return Ok(b.clone());
            }
        }
        let generation = cache.generation.load(Ordering::SeqCst);
        let b = self.get_bucket(name).await?;
        let mut entries = cache.entries.lock().expect("cache");
        // A change made by this process while the lookup was under way may have come after
        // the read: its value is not kept (it would outlive the change by up to a second).
        if cache.generation.load(Ordering::SeqCst) == generation {
            if entries.len() >= MAX_CACHED_BUCKETS {
                entries.clear();
            }
            entries.insert(name.to_owned(), (b.clone(), std::time::Instant::now()));
        }
        Ok(b)
    }

    /// Forgets this process's cached lookup of a bucket. Called before a change and, through
    /// [`MetaStore::changed`], after it: a lookup between the two may have read the old value.
    pub fn forget_bucket(&self, name: &str) {
        let mut entries = self.bucket_cache.entries.lock().expect("cache");
        self.bucket_cache
            .generation
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        entries.remove(name);
    }

    /// Runs a change of a bucket's document and forgets the bucket's cached lookup before and
    /// after it, so that this process's next request sees the change.
    pub async fn changed<T>(&self, name: &str, change: impl std::future::Future<Output = T>) -> T {
        self.forget_bucket(name);
        let r = change.await;
        self.forget_bucket(name);
        r
    }

    /// Records a new bucket; `false` when the name is taken (one atomic insert, so of two
    /// instances creating the same bucket exactly one succeeds).
    pub async fn create_bucket(&self, info: &BucketInfo) -> mongodb::error::Result<bool> {
        self.changed(&info.name, async {
            match self.buckets.insert_one(info.to_document()).await {
                Ok(_) => Ok(true),
                Err(e) if is_duplicate_key(&e) => {
                    // A deleted bucket's tombstone is replaced (one atomic write, so still exactly
                    // one of two creators wins).
                    Ok(self
                        .buckets
                        .replace_one(
                            doc! {"_id": &info.name, "deleted": true},
                            info.to_document(),
                        )
                        .await?
                        .matched_count
                        == 1)
                }
                Err(e) => Err(e),
            }
        })
        .await
    }

    /// Whether the metastore has any document for `name` (a live bucket, one being deleted,
    /// or a deleted bucket's tombstone): adoption leaves such names alone.
    pub async fn bucket_name_known(&self, name: &str) -> mongodb::error::Result<bool> {
        Ok(self.buckets.find_one(doc! {"_id": name}).await?.is_some())
    }

    /// Whether `name` is (still) a deleted bucket's tombstone.
    pub async fn is_tombstone(&self, name: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .buckets
            .find_one(doc! {"_id": name, "deleted": true})
            .await?
            .is_some())
    }

    /// Marks a bucket as being deleted: from now on it answers as missing. `false` when it
    /// does not exist (any more).
    pub async fn mark_bucket_deleting(&self, name: &str) -> mongodb::error::Result<bool> {
        self.changed(name, async {
            Ok(self
                .buckets
                .update_one(
                    doc! {"_id": name, "deleted": {"$ne": true}},
                    doc! {"$set": {"deleting": true}},
                )
                .await?
                .matched_count
                == 1)
        })
        .await
    }

    /// Takes a deletion mark back (the bucket turned out not to be empty).
    pub async fn unmark_bucket_deleting(&self, name: &str) -> mongodb::error::Result<()> {
        self.changed(name, async {
            self.buckets
                .update_one(doc! {"_id": name}, doc! {"$unset": {"deleting": ""}})
                .await?;
            Ok(())
        })
        .await
    }

    /// Names of the content-addressed buckets, and of buckets converted to GridFS whose
    /// contents are not all reclaimed yet (the janitor reclaims their contents). Each with
    /// whether it is such a retired one (converted to GridFS, no conversion under way).
    pub async fn content_buckets(&self) -> mongodb::error::Result<Vec<(String, bool)>> {
        // Two queries, one index each (an `$or` is a collection scan on SecantusDB).
        let mut out: Vec<(String, bool)> = Vec::new();
        for filter in [doc! {"storage": "content"}, doc! {"contents": true}] {
            let docs: Vec<Document> = self
                .buckets
                .find(filter)
                .projection(doc! {"_id": 1, "deleted": 1, "storage": 1, "converting": 1})
                .await?
                .try_collect()
                .await?;
            for d in docs
                .iter()
                .filter(|d| !d.get_bool("deleted").unwrap_or(false))
            {
                let Ok(n) = d.get_str("_id") else { continue };
                if out.iter().any(|(x, _)| x == n) {
                    continue;
                }
                let retired =
                    !d.contains_key("storage") && !d.get_bool("converting").unwrap_or(false);
                out.push((n.to_owned(), retired));
            }
        }
        Ok(out)
    }

    /// Names of buckets deleted more than `age` ago (tombstones), for the janitor.
    pub async fn deleted_buckets(
        &self,
        age: std::time::Duration,
    ) -> mongodb::error::Result<Vec<String>> {
        let docs: Vec<Document> = self
            .buckets
            .find(doc! {"deleted": true, "deletedAt": {"$lt": self.clock.before(age)}})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect())
    }

    /// A bucket's attributes.
    pub async fn get_bucket(&self, name: &str) -> mongodb::error::Result<Option<BucketInfo>> {
        // By `_id` alone (an index lookup on every server); tombstones and buckets being
        // deleted are filtered here.
        Ok(self
            .buckets
            .find_one(doc! {"_id": name})
            .await?
            .filter(|d| {
                !d.get_bool("deleted").unwrap_or(false) && !d.get_bool("deleting").unwrap_or(false)
            })
            .as_ref()
            .and_then(BucketInfo::from_document))
    }

    /// All buckets, by name.
    pub async fn list_buckets(&self) -> mongodb::error::Result<Vec<BucketInfo>> {
        let docs: Vec<Document> = self
            .buckets
            .find(doc! {"deleted": {"$ne": true}, "deleting": {"$ne": true}})
            .sort(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(BucketInfo::from_document).collect())
    }

    /// Starts converting a live bucket to `to`: from now on new objects are stored that way
    /// and the bucket is marked until every object is (`false`: no such bucket).
    pub async fn start_conversion(
        &self,
        name: &str,
        to: StorageMode,
    ) -> mongodb::error::Result<bool> {
        let update = match to {
            StorageMode::Content => doc! {"$set": {"storage": to.as_str(), "converting": true}},
            StorageMode::Gridfs => {
                doc! {"$unset": {"storage": ""}, "$set": {"converting": true, "contents": true}}
            }
        };
        self.update_live(name, update).await
    }

    /// Ends a bucket's conversion to `to` (unless another conversion replaced it meanwhile).
    pub async fn finish_conversion(
        &self,
        name: &str,
        to: StorageMode,
    ) -> mongodb::error::Result<()> {
        let mode = match to {
            StorageMode::Content => doc! {"storage": to.as_str()},
            StorageMode::Gridfs => doc! {"storage": {"$exists": false}},
        };
        let mut filter = doc! {"_id": name, "converting": true};
        filter.extend(mode);
        self.changed(name, async {
            self.buckets
                .update_one(filter, doc! {"$unset": {"converting": ""}})
                .await
                .map(|_| ())
        })
        .await
    }

    /// Clears the mark of a bucket converted to GridFS whose contents are all gone (unless it
    /// was converted back meanwhile).
    pub async fn contents_retired(&self, name: &str) -> mongodb::error::Result<()> {
        self.changed(name, async {
            self.buckets
                .update_one(
                    doc! {"_id": name, "contents": true, "storage": {"$exists": false}, "converting": {"$ne": true}},
                    doc! {"$unset": {"contents": ""}},
                )
                .await
                .map(|_| ())
        })
        .await
    }

    /// Buckets whose conversion is under way (the janitor resumes them).
    pub async fn converting_buckets(&self) -> mongodb::error::Result<Vec<BucketInfo>> {
        let docs: Vec<Document> = self
            .buckets
            .find(doc! {"converting": true})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter(|d| !d.get_bool("deleted").unwrap_or(false))
            .filter_map(BucketInfo::from_document)
            .collect())
    }

    /// Grants `role` on a bucket to an access key (`None` removes the grant); `false` when the
    /// bucket does not exist. Key ids hold no dots or dollars, so they are safe field names.
    pub async fn grant(
        &self,
        bucket: &str,
        key: &str,
        role: Option<&str>,
    ) -> mongodb::error::Result<bool> {
        self.changed(bucket, async {
            let field = format!("grants.{key}");
            let update = match role {
                Some(r) => doc! {"$set": {field: r}},
                None => doc! {"$unset": {field: ""}},
            };
            Ok(self
                .buckets
                .update_one(doc! {"_id": bucket}, update)
                .await?
                .matched_count
                == 1)
        })
        .await
    }

    /// Forgets a bucket, leaving a tombstone: a write that raced the deletion and recreated
    /// the bucket's collections is then dropped by the janitor instead of being adopted as a
    /// new bucket owned by root.
    pub async fn delete_bucket(&self, name: &str) -> mongodb::error::Result<bool> {
        let deleted = self
            .changed(name, async {
                Ok::<_, mongodb::error::Error>(
                    self.buckets
                        .replace_one(
                            doc! {"_id": name},
                            doc! {"_id": name, "deleted": true, "deletedAt": self.clock.now()},
                        )
                        .await?
                        .matched_count
                        == 1,
                )
            })
            .await?;
        if deleted {
            // A bucket created again under the name starts unmetered and empty, and without
            // the uploads that were in progress here (their chunks go with the bucket's
            // collections; an abort of one would otherwise subtract its parts from the new
            // bucket's usage).
            self.forget_uploads(name).await?;
            self.forget_usage(name).await?;
        }
        Ok(deleted)
    }
}
