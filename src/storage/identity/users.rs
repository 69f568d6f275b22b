//! IAM users (`__iamusers`): one document each, holding what the user's requests are judged
//! by (its groups, attached and inline policies, tags) so that one read finds it all.

use mongodb::bson::{doc, DateTime, Document};

use super::{
    pair_docs, pairs, strings, Account, IdResult, IdentityError, IdentityStore, Page,
    MAX_KEYS_PER_USER,
};
use crate::storage::meta::UserKeyInfo;

/// An IAM user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// Unique id (`AIDA...`).
    pub id: String,
    /// The 12-digit account id.
    pub account: String,
    /// The account's root key id.
    pub account_key: String,
    /// The name, as given.
    pub name: String,
    /// The path (`/` or `/division/`).
    pub path: String,
    /// When it was created.
    pub created: DateTime,
    /// Tags, in the order given.
    pub tags: Vec<(String, String)>,
    /// The ids of its groups.
    pub groups: Vec<String>,
    /// The ARNs of the managed policies attached to it.
    pub attached: Vec<String>,
    /// Inline policies: name and document.
    pub inline: Vec<(String, String)>,
    /// How many access keys it has.
    pub key_count: i32,
    /// A disabled user (MinIO's `set-user-status`) is treated as absent: its keys and service
    /// accounts sign nothing until it is enabled again (`principal.rs`).
    pub disabled: bool,
}

impl User {
    /// `arn:aws:iam::<account>:user<path><name>`.
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:user{}{}",
            self.account, self.path, self.name
        )
    }

    pub(super) fn from_doc(d: &Document) -> Option<User> {
        Some(User {
            id: d.get_str("_id").ok()?.to_owned(),
            account: d.get_str("account").ok()?.to_owned(),
            account_key: d.get_str("accountKey").ok()?.to_owned(),
            name: d.get_str("name").ok()?.to_owned(),
            path: d.get_str("path").unwrap_or("/").to_owned(),
            created: d.get_datetime("created").ok().copied()?,
            tags: pairs(d, "tags"),
            groups: strings(d, "groups"),
            attached: strings(d, "attached"),
            inline: pairs(d, "inline"),
            key_count: d.get_i32("keyCount").unwrap_or(0),
            disabled: d.get_bool("disabled").unwrap_or(false),
        })
    }
}

fn no_user(name: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("The user with name {name} cannot be found."))
}

impl IdentityStore {
    /// Creates a user.
    pub async fn create_user(
        &self,
        acct: &Account,
        name: &str,
        path: &str,
        tags: &[(String, String)],
    ) -> IdResult<User> {
        let user = User {
            id: super::new_id("AIDA"),
            account: acct.id.clone(),
            account_key: acct.key.clone(),
            name: name.to_owned(),
            path: path.to_owned(),
            created: self.meta.clock().now(),
            tags: tags.to_vec(),
            groups: Vec::new(),
            attached: Vec::new(),
            inline: Vec::new(),
            key_count: 0,
            disabled: false,
        };
        let d = doc! {
            "_id": &user.id, "account": &user.account, "accountKey": &user.account_key,
            "name": name, "nameLower": name.to_lowercase(), "path": path,
            "created": user.created, "tags": pair_docs(tags), "groups": [], "attached": [],
            "inline": [], "keyCount": 0_i32,
        };
        match self.users.insert_one(d).await {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "User with name {name} already exists."
                )))
            }
            r => r?,
        };
        self.changed().await?;
        Ok(user)
    }

    /// A user of the account, by name (names compare without case).
    pub async fn user(&self, acct: &Account, name: &str) -> IdResult<User> {
        self.users
            .find_one(doc! {"account": &acct.id, "nameLower": name.to_lowercase()})
            .await?
            .as_ref()
            .and_then(User::from_doc)
            .ok_or_else(|| no_user(name))
    }

    /// A user by unique id (any account).
    pub async fn user_by_id(&self, id: &str) -> mongodb::error::Result<Option<User>> {
        Ok(self
            .users
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(User::from_doc))
    }

    /// A page of the account's users, by name.
    pub async fn list_users(
        &self,
        acct: &Account,
        path_prefix: Option<&str>,
        marker: Option<&str>,
        max: usize,
    ) -> IdResult<Page<User>> {
        super::page(
            &self.users,
            super::page_filter(&acct.id, path_prefix, marker),
            max,
            User::from_doc,
            |u: &User| u.name.clone(),
        )
        .await
    }

    /// Renames a user or moves it to another path.
    pub async fn update_user(
        &self,
        acct: &Account,
        name: &str,
        new_name: Option<&str>,
        new_path: Option<&str>,
    ) -> IdResult<()> {
        let u = self.user(acct, name).await?;
        let mut set = doc! {};
        if let Some(n) = new_name {
            set.insert("name", n);
            set.insert("nameLower", n.to_lowercase());
        }
        if let Some(p) = new_path {
            set.insert("path", p);
        }
        if set.is_empty() {
            return Ok(());
        }
        match self
            .users
            .update_one(doc! {"_id": &u.id, "name": &u.name}, doc! {"$set": set})
            .await
        {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "User with name {} already exists.",
                    new_name.unwrap_or(name)
                )))
            }
            Ok(r) if r.matched_count == 0 => return Err(no_user(name)),
            r => r?,
        };
        self.changed().await?;
        Ok(())
    }

    /// Deletes a user that has no keys, groups or policies left (AWS's DeleteConflict
    /// otherwise: they must be removed first).
    pub async fn delete_user(&self, acct: &Account, name: &str) -> IdResult<()> {
        let u = self.user(acct, name).await?;
        let r = self
            .users
            .delete_one(doc! {
                "_id": &u.id, "keyCount": 0_i32, "groups": {"$size": 0},
                "attached": {"$size": 0}, "inline": {"$size": 0},
            })
            .await?;
        if r.deleted_count == 0 {
            return match self.user_by_id(&u.id).await? {
                None => Err(no_user(name)),
                Some(_) => Err(IdentityError::DeleteConflict(
                    "Cannot delete entity, must delete access keys, remove from groups, and delete or detach policies first."
                        .into(),
                )),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Disables or enables a user (on the user as read: one renamed or deleted since is not
    /// touched).
    pub async fn set_user_disabled(&self, u: &User, disabled: bool) -> IdResult<()> {
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "name": &u.name},
                doc! {"$set": {"disabled": disabled}},
            )
            .await?;
        if r.matched_count == 0 {
            return Err(no_user(&u.name));
        }
        self.changed().await?;
        Ok(())
    }

    /// Creates a user with one access key whose id and secret are given (MinIO's add-user:
    /// the user's name is its access key). A name or key id in use is refused, never
    /// overwritten; if the key cannot be stored the user is removed again.
    pub async fn create_user_with_key(
        &self,
        acct: &Account,
        name: &str,
        key_id: &str,
        secret: &str,
    ) -> IdResult<User> {
        let in_use =
            || IdentityError::EntityAlreadyExists(format!("The access key {key_id} is in use."));
        if self.meta.key_exists(key_id).await? {
            return Err(in_use());
        }
        let mut u = self.create_user(acct, name, "/", &[]).await?;
        // Counted before the key is written (see the module's documentation).
        self.users
            .update_one(doc! {"_id": &u.id}, doc! {"$inc": {"keyCount": 1_i32}})
            .await?;
        match self
            .meta
            .insert_user_key(key_id, secret, &u.id, &u.account_key)
            .await
        {
            Ok(_) => {
                u.key_count = 1;
                Ok(u)
            }
            Err(e) => {
                // Another key took the id in between: undo the user (it has nothing else).
                self.uncount_key(&u.id).await?;
                self.users
                    .delete_one(doc! {"_id": &u.id, "keyCount": 0_i32})
                    .await?;
                self.changed().await?;
                if super::super::meta::is_duplicate_key(&e) {
                    Err(in_use())
                } else {
                    Err(e.into())
                }
            }
        }
    }

    /// Replaces the secret of one of the user's keys.
    pub async fn set_user_key_secret(&self, u: &User, key: &str, secret: &str) -> IdResult<()> {
        if !self.meta.set_user_key_secret(key, &u.id, secret).await? {
            return Err(IdentityError::NoSuchEntity(format!(
                "The Access Key with id {key} cannot be found."
            )));
        }
        Ok(())
    }

    /// Replaces the user's tags with `tags` if they are still `was` (compare-and-set).
    pub async fn set_user_tags(&self, u: &User, tags: &[(String, String)]) -> IdResult<bool> {
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "tags": pair_docs(&u.tags)},
                doc! {"$set": {"tags": pair_docs(tags)}},
            )
            .await?;
        if r.matched_count == 1 {
            self.changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// Replaces the user's inline policies if they are still as read (compare-and-set).
    pub async fn set_user_inline(&self, u: &User, inline: &[(String, String)]) -> IdResult<bool> {
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "inline": pair_docs(&u.inline)},
                doc! {"$set": {"inline": pair_docs(inline)}},
            )
            .await?;
        if r.matched_count == 1 {
            self.changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// A new access key for the user (at most [`MAX_KEYS_PER_USER`]): id, secret, created.
    pub async fn create_user_key(
        &self,
        acct: &Account,
        name: &str,
    ) -> IdResult<(User, String, String, DateTime)> {
        let u = self.user(acct, name).await?;
        // Counted first: a user being deleted (which needs no keys) cannot get one.
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "keyCount": {"$lt": MAX_KEYS_PER_USER}},
                doc! {"$inc": {"keyCount": 1_i32}},
            )
            .await?;
        if r.matched_count == 0 {
            return match self.user_by_id(&u.id).await? {
                None => Err(no_user(name)),
                Some(_) => Err(IdentityError::LimitExceeded(format!(
                    "Cannot exceed quota for AccessKeysPerUser: {MAX_KEYS_PER_USER}"
                ))),
            };
        }
        crate::failpoint::hit("identity.key_counted", &acct.id).await;
        let (id, secret) = super::new_access_key();
        match self
            .meta
            .insert_user_key(&id, &secret, &u.id, &u.account_key)
            .await
        {
            Ok(created) => Ok((u, id, secret, created)),
            Err(e) => {
                self.uncount_key(&u.id).await?;
                Err(e.into())
            }
        }
    }

    async fn uncount_key(&self, user: &str) -> mongodb::error::Result<()> {
        self.users
            .update_one(
                doc! {"_id": user, "keyCount": {"$gt": 0_i32}},
                doc! {"$inc": {"keyCount": -1_i32}},
            )
            .await
            .map(|_| ())
    }

    /// The user's keys.
    pub async fn user_keys(&self, u: &User) -> IdResult<Vec<UserKeyInfo>> {
        Ok(self.meta.user_keys(&u.id).await?)
    }

    /// Deletes one of the user's keys.
    pub async fn delete_user_key(&self, u: &User, key: &str) -> IdResult<()> {
        if !self.meta.delete_user_key(key, &u.id).await? {
            return Err(IdentityError::NoSuchEntity(format!(
                "The Access Key with id {key} cannot be found."
            )));
        }
        self.uncount_key(&u.id).await?;
        Ok(())
    }

    /// Makes one of the user's keys active or inactive.
    pub async fn set_user_key_active(&self, u: &User, key: &str, active: bool) -> IdResult<()> {
        if !self.meta.set_user_key_active(key, &u.id, active).await? {
            return Err(IdentityError::NoSuchEntity(format!(
                "The Access Key with id {key} cannot be found."
            )));
        }
        Ok(())
    }
}
