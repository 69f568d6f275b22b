//! IAM users' access keys, in `__accesskeys` beside the accounts' own keys (so that signing
//! looks every key up in one place), marked with their user (`user`, the user's unique id)
//! and account (`accountKey`). The identity store (`storage::identity`) counts them on the
//! user, so that a user never has more than two; these functions only store them. A user's
//! service accounts (MinIO's admin API, `service_accounts.rs`) carry `user` too, so that they
//! sign as the user, but are marked `serviceAccount` and are neither listed nor counted here.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::MetaStore;

/// One of a user's access keys, as listed (never with its secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserKeyInfo {
    /// Access key id (`AKIA...`).
    pub id: String,
    /// The user's unique id.
    pub user: String,
    /// `Active`, or not (`Inactive`: it signs nothing).
    pub active: bool,
    /// When it was created (the database's clock).
    pub created: DateTime,
    /// When it last signed a request, as recorded (at most once an hour per instance).
    pub last_used: Option<DateTime>,
}

fn info(d: &Document) -> Option<UserKeyInfo> {
    Some(UserKeyInfo {
        id: d.get_str("_id").ok()?.to_owned(),
        user: d.get_str("user").ok()?.to_owned(),
        active: !d.get_bool("disabled").unwrap_or(false),
        created: d.get_datetime("created").ok().copied()?,
        last_used: d.get_datetime("lastUsed").ok().copied(),
    })
}

impl MetaStore {
    /// Stores a new active key of user `user` (unique id) of the account whose root key is
    /// `account_key`. The id is new: a clash is a duplicate-key error, never an overwrite.
    pub async fn insert_user_key(
        &self,
        id: &str,
        secret: &str,
        user: &str,
        account_key: &str,
    ) -> mongodb::error::Result<DateTime> {
        let now = self.clock.now();
        self.keys
            .insert_one(doc! {
                "_id": id,
                "secret": self.seal(secret),
                "root": false,
                "name": "",
                "user": user,
                "accountKey": account_key,
                "created": now,
            })
            .await?;
        self.keys_changed().await?;
        Ok(now)
    }

    /// A user's keys, oldest first.
    pub async fn user_keys(&self, user: &str) -> mongodb::error::Result<Vec<UserKeyInfo>> {
        let docs: Vec<Document> = self
            .keys
            .find(doc! {"user": user, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}})
            .projection(doc! {"secret": 0})
            .sort(doc! {"created": 1, "_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(info).collect())
    }

    /// One key, if it is a user's (any user's).
    pub async fn user_key(&self, id: &str) -> mongodb::error::Result<Option<UserKeyInfo>> {
        Ok(self
            .keys
            .find_one(doc! {"_id": id, "user": {"$exists": true}, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}})
            .projection(doc! {"secret": 0})
            .await?
            .as_ref()
            .and_then(info))
    }

    /// Makes a key of `user` active or inactive; `false` when `user` has no such key.
    pub async fn set_user_key_active(
        &self,
        id: &str,
        user: &str,
        active: bool,
    ) -> mongodb::error::Result<bool> {
        let r = self
            .keys
            .update_one(
                doc! {"_id": id, "user": user, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}},
                doc! {"$set": {"disabled": !active}},
            )
            .await?;
        if r.matched_count == 1 {
            self.keys_changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// Deletes a key of `user`; `false` when `user` has no such key.
    pub async fn delete_user_key(&self, id: &str, user: &str) -> mongodb::error::Result<bool> {
        let deleted = self
            .keys
            .delete_one(doc! {"_id": id, "user": user, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}})
            .await?
            .deleted_count
            == 1;
        if deleted {
            self.keys_changed().await?;
        }
        Ok(deleted)
    }

    /// Replaces the secret of a key of `user` (MinIO's add-user on an existing user); `false`
    /// when `user` has no such key.
    pub async fn set_user_key_secret(
        &self,
        id: &str,
        user: &str,
        secret: &str,
    ) -> mongodb::error::Result<bool> {
        let r = self
            .keys
            .update_one(
                doc! {"_id": id, "user": user, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}},
                doc! {"$set": {"secret": self.seal(secret)}},
            )
            .await?;
        if r.matched_count == 1 {
            self.keys_changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// Records that a user's key signed a request now (the database's time). Called at most
    /// once an hour per key and instance, off the request's path.
    pub async fn record_key_use(&self, id: &str) -> mongodb::error::Result<()> {
        self.keys
            .update_one(
                doc! {"_id": id, "user": {"$exists": true}},
                vec![doc! {"$set": {"lastUsed": "$$NOW"}}],
            )
            .await
            .map(|_| ())
    }
}
