//! Short exclusive locks on one key, held while a write checks its precondition and publishes,
//! so conditional writes hold across gateway instances: `insert` of a document keyed by
//! bucket and key is the acquisition (the unique `_id` lets exactly one writer in), deleting it
//! the release. A lock left by a crashed instance expires.

use std::time::Duration;

use mongodb::bson::{doc, DateTime};

use super::{is_duplicate_key, MetaStore};

/// How long a lock lives without release.
const LOCK_TTL: Duration = Duration::from_secs(30);
/// How long a writer waits for a lock before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// A held key lock; release it with [`MetaStore::unlock_key`].
#[derive(Debug)]
pub struct KeyLock {
    id: String,
    token: mongodb::bson::oid::ObjectId,
}

impl MetaStore {
    /// Takes the lock of `bucket`/`key`, waiting while another writer holds it. `Ok(None)` when
    /// it could not be had within the wait.
    pub async fn lock_key(
        &self,
        bucket: &str,
        key: &str,
    ) -> mongodb::error::Result<Option<KeyLock>> {
        let id = format!("{bucket}\u{0}{key}");
        let token = mongodb::bson::oid::ObjectId::new();
        let deadline = tokio::time::Instant::now() + LOCK_WAIT;
        let mut pause = Duration::from_millis(5);
        loop {
            let expires = DateTime::from_millis(
                DateTime::now().timestamp_millis() + LOCK_TTL.as_millis() as i64,
            );
            match self
                .keylocks
                .insert_one(doc! {"_id": &id, "token": token, "expires": expires})
                .await
            {
                Ok(_) => return Ok(Some(KeyLock { id, token })),
                Err(e) if is_duplicate_key(&e) => {
                    // Take over a lock whose holder died.
                    self.keylocks
                        .delete_one(doc! {"_id": &id, "expires": {"$lt": DateTime::now()}})
                        .await?;
                }
                Err(e) => return Err(e),
            }
            if tokio::time::Instant::now() > deadline {
                return Ok(None);
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Releases a lock (only if it is still this holder's).
    pub async fn unlock_key(&self, lock: KeyLock) -> mongodb::error::Result<()> {
        self.keylocks
            .delete_one(doc! {"_id": lock.id, "token": lock.token})
            .await?;
        Ok(())
    }
}
