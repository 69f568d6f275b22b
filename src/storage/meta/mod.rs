//! The metastore, after Scality's mongoclient design: bucket attributes in `__metastore`
//! (one document per bucket, `_id` = bucket name), the instance identity in `__infostore`,
//! access keys in `__accesskeys`, reader leases in `__leases`, deferred reclaims in
//! `__reclaim`, writes in progress in `__writes`, key and upload locks in `__keylocks`,
//! multipart uploads in `__uploads` / `__parts`, and listing hints in `__posts`. Every piece
//! of shared state lives here, so gateway instances are stateless. Every time stored or compared here is the database's
//! ([`DbClock`]).

mod bucket_attrs;
mod bucket_settings;
mod buckets;
mod clock;
mod instances;
mod keylock_batch;
mod keylocks;
mod keys;
mod lead;
mod leases;
mod posts;
mod progress;
mod quota;
mod quota_account;
mod quota_batch;
mod quota_flight;
mod replay;
mod search_indexes;
mod service_accounts;
mod sessions;
mod sts_keys;
pub(crate) mod txn;
mod uploads;
mod user_keys;
mod writes;

pub use buckets::{
    BucketEncryption, BucketInfo, CorsRule, ObjectLockConfig, PublicAccessBlock, StorageMode,
    BUCKET_CACHE_TTL,
};
pub use clock::DbClock;
pub use instances::{Instance, Sample, SAMPLES};
pub use keylock_batch::KeyLocks;
pub use keylocks::{KeyLock, LOCK_TTL};
pub use keys::{KeyError, KeyInfo, KeySecret, SessionKind, SessionToken, UserOfKey};
pub use lead::{Lead, LeadInfo};
pub use leases::{Lease, PendingReclaim};
pub use progress::Progress;
pub use quota::{
    bucket_usage_id, hold_lease, hold_of, objects_room, Counted, Hold, Limits, HOLD_LEASE,
};
pub use quota_account::{account_usage_id, UsageStep};
pub use quota_batch::{gone as batch_gone, PendingHold};
pub use quota_flight::InFlight;
pub use search_indexes::DeclaredIndex;
pub use service_accounts::{NewServiceAccount, ServiceAccount, ServiceAccountChange};
pub use sessions::{ConsoleSession, SsoSession};
pub use sts_keys::{token_sha256, Minted, NewSession, KEEP_EXPIRED};
pub use uploads::{PartRecord, UploadRecord, MAX_PART_SLOTS, PART_SPAN};
pub use user_keys::UserKeyInfo;
pub use writes::{DeadWrite, WriteReg, POOL_SIZE};

pub use crate::dberror::is_duplicate_key;
use mongodb::bson::{doc, Document};
use mongodb::options::IndexOptions;
use mongodb::{Collection, Database, IndexModel};

/// Handle on the metastore collections.
#[derive(Clone, Debug)]
pub struct MetaStore {
    db: Database,
    buckets: Collection<Document>,
    info: Collection<Document>,
    keys: Collection<Document>,
    leases: Collection<Document>,
    reclaim: Collection<Document>,
    uploads: Collection<Document>,
    parts: Collection<Document>,
    keylocks: Collection<Document>,
    writes: Collection<Document>,
    replay: Collection<Document>,
    masters: crate::crypto::keys::MasterKeys,
    clock: DbClock,
    /// This process's identity (write registrations name it; diagnostics only).
    process_id: std::sync::Arc<str>,
    write_ttl: std::time::Duration,
    bucket_cache: BucketCache,
    /// Registrations of finished writes, removed in batches (see `writes`).
    finished_writes: writes::FinishedWrites,
    /// This process's write registration pools (see `writes`).
    pools: writes::Pools,
    /// Quota holds and conversions waiting to go together (see `quota_batch`).
    usage_batches: quota_batch::UsageBatches,
    /// Metered writes in flight on this instance (see `quota_flight`).
    flights: quota_flight::Flights,
    /// Buckets seen linked to their account's limits (see `quota_account`).
    linked: quota_account::Linked,
    /// The client whose sessions run this process's transactions (see `txn`): a connection
    /// pool of their own.
    txn_client: mongodb::Client,
}

/// Bucket lookups cached in this process.
type BucketCache = std::sync::Arc<buckets::Cache>;

impl MetaStore {
    /// Opens the metastore in `db` with `clock`, measures the clock's offset and creates the
    /// indexes every lookup and sweep uses.
    pub async fn open(db: &Database, clock: DbClock) -> mongodb::error::Result<Self> {
        let m = Self::unopened(db, clock);
        m.clock.calibrate(db).await?;
        let index = |coll: &Collection<Document>, name: &str, keys: Document| {
            let coll = coll.clone();
            let name = name.to_owned();
            let model = IndexModel::builder()
                .keys(keys)
                .options(IndexOptions::builder().name(name.clone()).build())
                .build();
            async move {
                match coll.create_index(model.clone()).await {
                    // An older grids3 made an index of this name over other fields (the
                    // registrations' `bucket` index was `{bucket, fileId}`): it is replaced, or
                    // the upgraded gateway could never open the metastore.
                    Err(e) if is_index_conflict(&e) => {
                        tracing::warn!(collection = %coll.name(), index = %name, "replacing an index an older grids3 made with other keys");
                        coll.drop_index(&name).await?;
                        coll.create_index(model).await
                    }
                    r => r,
                }
            }
        };
        index(
            &m.leases,
            "lookup",
            doc! {"bucket": 1, "file_id": 1, "expires": 1},
        )
        .await?;
        index(&m.leases, "expires", doc! {"expires": 1}).await?;
        index(&m.reclaim, "file", doc! {"file_id": 1}).await?;
        index(&m.writes, "bucket", doc! {"bucket": 1}).await?;
        index(&m.writes, "fileIds", doc! {"fileIds": 1}).await?;
        index(&m.writes, "expires", doc! {"expires": 1}).await?;
        index(&m.writes, "reaping", doc! {"reaping": 1}).await?;
        index(&m.parts, "upload", doc! {"uploadId": 1, "number": 1}).await?;
        index(&m.parts, "fileId", doc! {"fileId": 1}).await?;
        index(
            &m.uploads,
            "key",
            doc! {"bucket": 1, "key": 1, "initiated": 1},
        )
        .await?;
        index(&m.uploads, "initiated", doc! {"initiated": 1}).await?;
        m.ensure_session_indexes().await?;
        // Console sessions and login windows are removed by these (see `sessions`).
        index(
            &db.collection("__consoleSessions"),
            "expires",
            doc! {"expires": 1},
        )
        .await?;
        index(
            &db.collection("__consoleLogins"),
            "since",
            doc! {"since": 1},
        )
        .await?;
        index(&m.uploads, "fileId", doc! {"fileId": 1}).await?;
        index(&db.collection("__instances"), "seen", doc! {"seen": 1}).await?;
        index(&m.uploads, "completedAt", doc! {"completedAt": 1}).await?;
        index(&m.uploads, "aborting", doc! {"aborting": 1}).await?;
        index(&m.buckets, "deleted", doc! {"deleted": 1, "deletedAt": 1}).await?;
        index(&m.buckets, "storage", doc! {"storage": 1}).await?;
        // Buckets converted to GridFS with contents left, and conversions under way.
        index(&m.buckets, "contents", doc! {"contents": 1}).await?;
        index(&m.buckets, "converting", doc! {"converting": 1}).await?;
        index(&m.keylocks, "expires", doc! {"expires": 1}).await?;
        m.replay_index().await?;
        m.posts_index().await?;
        Ok(m)
    }

    /// Runs this process's transactions on `client`'s connection pool (see `txn`, "Why
    /// transactions have a pool of their own"). `client` must reach the same deployment.
    pub fn with_txn_client(mut self, client: mongodb::Client) -> Self {
        self.txn_client = client;
        self
    }

    /// How long a write registration lives without a heartbeat (default 30 s).
    pub fn with_write_ttl(mut self, ttl: std::time::Duration) -> Self {
        self.write_ttl = ttl;
        self
    }

    /// The database's clock.
    pub fn clock(&self) -> &DbClock {
        &self.clock
    }

    /// Seals access-key secrets with the current master key from now on, and opens them
    /// with any of these keys (see `keys`).
    pub fn with_masters(mut self, masters: crate::crypto::keys::MasterKeys) -> Self {
        self.masters = masters;
        self
    }

    /// The master keys (current and former).
    pub fn masters(&self) -> &crate::crypto::keys::MasterKeys {
        &self.masters
    }

    /// The deployment's random salt for stretching a master passphrase, made by the first
    /// instance to start and read by every other one (so all derive the same key).
    pub async fn deployment_salt(&self) -> mongodb::error::Result<Vec<u8>> {
        let mut fresh = [0u8; 16];
        rand::RngCore::fill_bytes(&mut rand::rngs::OsRng, &mut fresh);
        let salt = mongodb::bson::Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Generic,
            bytes: fresh.to_vec(),
        };
        if let Err(e) = self
            .info
            .update_one(
                doc! {"_id": "master-key-salt"},
                doc! {"$setOnInsert": {"salt": salt}},
            )
            .upsert(true)
            .await
        {
            // A concurrent first start may lose the upsert; the winner's salt is there.
            if !is_duplicate_key(&e) {
                return Err(e);
            }
        }
        let d = self
            .info
            .find_one(doc! {"_id": "master-key-salt"})
            .await?
            .unwrap_or_default();
        Ok(d.get_binary_generic("salt").cloned().unwrap_or_default())
    }

    /// Records `current` (the master key this gateway seals with) among the deployment's
    /// master keys (`__infostore`, `_id: master-keys`), and returns the recorded ones that
    /// `given` (its current and former keys) does not hold: what this gateway cannot open.
    pub async fn master_keys_missing(
        &self,
        current: Option<&str>,
        given: &[String],
    ) -> mongodb::error::Result<Vec<String>> {
        if let Some(id) = current {
            self.info
                .update_one(doc! {"_id": "master-keys"}, doc! {"$addToSet": {"ids": id}})
                .upsert(true)
                .await?;
        }
        let d = self
            .info
            .find_one(doc! {"_id": "master-keys"})
            .await?
            .unwrap_or_default();
        Ok(d.get_array("ids")
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str())
                    .filter(|id| !given.iter().any(|g| g == id))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default())
    }

    fn unopened(db: &Database, clock: DbClock) -> Self {
        Self {
            db: db.clone(),
            buckets: db.collection("__metastore"),
            info: db.collection("__infostore"),
            keys: db.collection("__accesskeys"),
            leases: db.collection("__leases"),
            reclaim: db.collection("__reclaim"),
            uploads: db.collection("__uploads"),
            parts: db.collection("__parts"),
            keylocks: db.collection("__keylocks"),
            writes: db.collection("__writes"),
            replay: db.collection("__adminreplay"),
            masters: Default::default(),
            clock,
            process_id: uuid::Uuid::new_v4().simple().to_string().into(),
            write_ttl: std::time::Duration::from_secs(30),
            bucket_cache: BucketCache::default(),
            finished_writes: writes::FinishedWrites::default(),
            pools: writes::Pools::default(),
            usage_batches: quota_batch::UsageBatches::default(),
            flights: quota_flight::Flights::default(),
            linked: quota_account::Linked::default(),
            txn_client: db.client().clone(),
        }
    }

    /// The database the metastore lives in.
    pub fn database(&self) -> &Database {
        &self.db
    }

    /// This process's own id (a UUID made when the store opened): what leads and write
    /// registrations name as their holder, and what an instance's status report is keyed by.
    /// Unlike [`MetaStore::instance_id`], it differs between instances.
    pub fn process_id(&self) -> &str {
        &self.process_id
    }

    /// The instance identity: a UUID created once. Two instances starting together agree,
    /// because creation is an upsert with `$setOnInsert` on a fixed `_id`, and both read back
    /// whatever won.
    pub async fn instance_id(&self) -> mongodb::error::Result<String> {
        let candidate = uuid::Uuid::new_v4().to_string();
        let upsert = self
            .info
            .update_one(
                doc! {"_id": "instance"},
                doc! {"$setOnInsert": {"uuid": &candidate, "created": self.clock.now()}},
            )
            .upsert(true)
            .await;
        if let Err(e) = upsert {
            // A concurrent upsert of the same _id may lose with a duplicate key error; the
            // winner's document is there to read.
            if !is_duplicate_key(&e) {
                return Err(e);
            }
        }
        let doc = self
            .info
            .find_one(doc! {"_id": "instance"})
            .await?
            .expect("instance document exists after upsert");
        Ok(doc.get_str("uuid").unwrap_or_default().to_owned())
    }
}

/// ACL grants (grantee, permission) as stored: `[{g, p}]` (see `s3::acl::grants`).
pub fn acl_docs(acl: &[(String, String)]) -> Vec<Document> {
    acl.iter().map(|(g, p)| doc! {"g": g, "p": p}).collect()
}

/// ACL grants read back from `field` of a document (entries of another shape are skipped).
pub fn acl_from_docs(d: &Document, field: &str) -> Vec<(String, String)> {
    d.get_array(field)
        .map(|a| {
            a.iter()
                .filter_map(|g| g.as_document())
                .filter_map(|g| {
                    Some((
                        g.get_str("g").ok()?.to_owned(),
                        g.get_str("p").ok()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether an index creation failed because an index of that name exists with other keys or
/// options (IndexOptionsConflict 85, IndexKeySpecsConflict 86).
pub fn is_index_conflict(e: &mongodb::error::Error) -> bool {
    matches!(&*e.kind, mongodb::error::ErrorKind::Command(c) if c.code == 85 || c.code == 86)
}
