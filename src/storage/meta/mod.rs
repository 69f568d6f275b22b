//! The metastore, after Scality's mongoclient design: bucket attributes in `__metastore`
//! (one document per bucket, `_id` = bucket name), the instance identity in `__infostore`,
//! access keys in `__accesskeys`, reader leases in `__leases` and deferred reclaims in
//! `__reclaim`. Every piece of shared state lives here, so gateway instances are stateless.

mod buckets;
mod keylocks;
mod keys;
mod leases;
mod uploads;

pub use buckets::BucketInfo;
pub use keylocks::KeyLock;
pub use keys::{derive_master, KeyError, KeyInfo, KeySecret};
pub use leases::{Lease, PendingReclaim};
pub use uploads::{PartRecord, UploadRecord};

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
    master: Option<[u8; 32]>,
}

impl MetaStore {
    /// Opens the metastore in `db` and creates its indexes.
    pub async fn open(db: &Database) -> mongodb::error::Result<Self> {
        let m = Self::unopened(db);
        m.leases
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"bucket": 1, "file_id": 1, "expires": 1})
                    .options(IndexOptions::builder().name("lookup".to_owned()).build())
                    .build(),
            )
            .await?;
        Ok(m)
    }

    /// Seals access-key secrets with this master key from now on (see `keys`).
    pub fn with_master_key(mut self, master: Option<&str>) -> Self {
        self.master = master.filter(|m| !m.is_empty()).map(derive_master);
        self
    }

    fn unopened(db: &Database) -> Self {
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
            master: None,
        }
    }

    /// The database the metastore lives in.
    pub fn database(&self) -> &Database {
        &self.db
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
                doc! {"$setOnInsert": {"uuid": &candidate, "created": mongodb::bson::DateTime::now()}},
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

/// Whether an error is a duplicate key (E11000) error.
pub fn is_duplicate_key(e: &mongodb::error::Error) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match &*e.kind {
        ErrorKind::Write(WriteFailure::WriteError(we)) => we.code == 11000,
        ErrorKind::Command(c) => c.code == 11000,
        ErrorKind::InsertMany(im) => im
            .write_errors
            .as_ref()
            .is_some_and(|es| es.iter().any(|we| we.code == 11000)),
        _ => e.to_string().contains("E11000"),
    }
}
