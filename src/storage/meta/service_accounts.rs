//! Service accounts (MinIO's admin API): access keys in `__accesskeys` that act for a parent,
//! marked `serviceAccount`. The parent is an IAM user (`user`, its unique id, and
//! `accountKey`, its account's root key) or an account's root credentials (`accountKey`
//! only). A service account may carry its own session policy (`session`) and those of the
//! service account that made it (`inheritedSessions`): each must allow a request besides the
//! parent's rights (`auth::session`), so rights only narrow along a chain. `expiration` is
//! judged by the database's clock when the key is read (`keys.rs`).

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::MetaStore;

/// A service account as listed (never with its secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceAccount {
    /// Its access key id.
    pub id: String,
    /// The parent IAM user's unique id (`None`: the account's root credentials).
    pub user: Option<String>,
    /// The parent's account (its root key id).
    pub account_key: String,
    /// Its own session policy (JSON text), if any.
    pub session: Option<String>,
    /// The session policies of the service account that made it.
    pub inherited: Vec<String>,
    /// Its name (MinIO's `name`), possibly empty.
    pub name: String,
    /// Its description, possibly empty.
    pub description: String,
    /// When it stops signing.
    pub expiration: Option<DateTime>,
    /// A disabled service account signs nothing.
    pub disabled: bool,
}

impl ServiceAccount {
    fn from_doc(d: &Document) -> Option<ServiceAccount> {
        Some(ServiceAccount {
            id: d.get_str("_id").ok()?.to_owned(),
            user: d.get_str("user").ok().map(str::to_owned),
            account_key: d.get_str("accountKey").ok()?.to_owned(),
            session: d.get_str("session").ok().map(str::to_owned),
            inherited: d
                .get_array("inheritedSessions")
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
            name: d.get_str("name").unwrap_or_default().to_owned(),
            description: d.get_str("description").unwrap_or_default().to_owned(),
            expiration: d.get_datetime("expiration").ok().copied(),
            disabled: d.get_bool("disabled").unwrap_or(false),
        })
    }
}

/// A service account to store.
#[derive(Debug)]
pub struct NewServiceAccount<'a> {
    /// Its access key id (new: a clash is a duplicate-key error, never an overwrite).
    pub id: &'a str,
    /// Its secret.
    pub secret: &'a str,
    /// The parent IAM user's unique id (`None`: the account's root credentials).
    pub user: Option<&'a str>,
    /// The parent's account (its root key id).
    pub account_key: &'a str,
    /// Whether the parent is the deployment's root key: a root key's service account with no
    /// session policy is root as its parent is (a session policy makes it never root,
    /// `keys.rs`).
    pub root: bool,
    /// Its own session policy.
    pub session: Option<&'a str>,
    /// The maker's session policies.
    pub inherited: &'a [String],
    /// Name.
    pub name: &'a str,
    /// Description.
    pub description: &'a str,
    /// Expiration.
    pub expiration: Option<DateTime>,
}

/// A change to a service account: each `Some` replaces its field.
#[derive(Debug, Default)]
pub struct ServiceAccountChange {
    /// A new secret.
    pub secret: Option<String>,
    /// A new own session policy (`Some(None)`: none any more, so it has its parent's rights
    /// cut only by what it inherited).
    pub session: Option<Option<String>>,
    /// A new name.
    pub name: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// A new expiration.
    pub expiration: Option<DateTime>,
    /// Disabled or enabled.
    pub disabled: Option<bool>,
}

const SA: &str = "serviceAccount";

impl MetaStore {
    /// Stores a new service account; returns when it was created.
    pub async fn insert_service_account(
        &self,
        sa: &NewServiceAccount<'_>,
    ) -> mongodb::error::Result<DateTime> {
        let now = self.clock.now();
        let mut d = doc! {
            "_id": sa.id,
            "secret": self.seal(sa.secret),
            "root": sa.root && sa.session.is_none() && sa.inherited.is_empty(),
            "name": sa.name,
            "description": sa.description,
            "accountKey": sa.account_key,
            SA: true,
            "inheritedSessions": sa.inherited.to_vec(),
            "created": now,
        };
        if let Some(u) = sa.user {
            d.insert("user", u);
        }
        if let Some(s) = sa.session {
            d.insert("session", s);
        }
        if let Some(e) = sa.expiration {
            d.insert("expiration", e);
        }
        self.keys.insert_one(d).await?;
        self.keys_changed().await?;
        Ok(now)
    }

    /// A service account by its key id.
    pub async fn service_account(
        &self,
        id: &str,
    ) -> mongodb::error::Result<Option<ServiceAccount>> {
        Ok(self
            .keys
            .find_one(doc! {"_id": id, SA: true})
            .projection(doc! {"secret": 0})
            .await?
            .as_ref()
            .and_then(ServiceAccount::from_doc))
    }

    /// The service accounts of a parent: IAM user `user` (unique id), or with `None` the
    /// root credentials of the account `account_key`; by key id.
    pub async fn service_accounts_of(
        &self,
        account_key: &str,
        user: Option<&str>,
    ) -> mongodb::error::Result<Vec<ServiceAccount>> {
        let filter = match user {
            Some(u) => doc! {SA: true, "user": u},
            None => doc! {SA: true, "accountKey": account_key, "user": {"$exists": false}},
        };
        let docs: Vec<Document> = self
            .keys
            .find(filter)
            .projection(doc! {"secret": 0})
            .sort(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(ServiceAccount::from_doc).collect())
    }

    /// Changes a service account, if it is still as `was` read it (its session, so that a
    /// change of policy decided on one reading never lands on another); `false` otherwise.
    pub async fn update_service_account(
        &self,
        was: &ServiceAccount,
        change: ServiceAccountChange,
    ) -> mongodb::error::Result<bool> {
        let mut set = doc! {};
        let mut unset = doc! {};
        if let Some(s) = &change.secret {
            set.insert("secret", self.seal(s));
        }
        match &change.session {
            Some(Some(p)) => {
                set.insert("session", p);
            }
            Some(None) => {
                unset.insert("session", "");
            }
            None => {}
        }
        if change.session.is_some() {
            // A session policy makes it never root; none leaves it as it was made.
            set.insert("root", false);
        }
        if let Some(n) = &change.name {
            set.insert("name", n);
        }
        if let Some(d) = &change.description {
            set.insert("description", d);
        }
        if let Some(e) = change.expiration {
            set.insert("expiration", e);
        }
        if let Some(d) = change.disabled {
            set.insert("disabled", d);
        }
        let mut update = doc! {};
        if !set.is_empty() {
            update.insert("$set", set);
        }
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        if update.is_empty() {
            return Ok(true);
        }
        let session = match &was.session {
            Some(s) => mongodb::bson::Bson::String(s.clone()),
            None => mongodb::bson::Bson::Document(doc! {"$exists": false}),
        };
        let r = self
            .keys
            .update_one(doc! {"_id": &was.id, SA: true, "session": session}, update)
            .await?;
        if r.matched_count == 1 {
            self.keys_changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// Deletes a service account; `false` when there is none.
    pub async fn delete_service_account(&self, id: &str) -> mongodb::error::Result<bool> {
        let deleted = self
            .keys
            .delete_one(doc! {"_id": id, SA: true})
            .await?
            .deleted_count
            == 1;
        if deleted {
            self.keys_changed().await?;
        }
        Ok(deleted)
    }

    /// Deletes every service account of IAM user `user` (its unique id), as MinIO does when
    /// the user is removed; returns how many.
    pub async fn delete_service_accounts_of_user(&self, user: &str) -> mongodb::error::Result<u64> {
        let n = self
            .keys
            .delete_many(doc! {"user": user, SA: true})
            .await?
            .deleted_count;
        if n > 0 {
            self.keys_changed().await?;
        }
        Ok(n)
    }

    /// Whether any key (an account's, a user's, a service account) has id `id`.
    pub async fn key_exists(&self, id: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .keys
            .find_one(doc! {"_id": id})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }
}
