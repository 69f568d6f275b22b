//! IAM groups (`__iamgroups`). Membership is held by the users (`groups`, so that one read of
//! a user finds its groups) and counted by the group (`members`), so that a group with members
//! is never deleted.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::users::User;
use super::{
    pair_docs, pairs, strings, Account, IdResult, IdentityError, IdentityStore, Page,
    MAX_GROUPS_PER_USER,
};

/// An IAM group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    /// Unique id (`AGPA...`).
    pub id: String,
    /// The 12-digit account id.
    pub account: String,
    /// The name, as given.
    pub name: String,
    /// The path.
    pub path: String,
    /// When it was created.
    pub created: DateTime,
    /// The ARNs of the managed policies attached to it.
    pub attached: Vec<String>,
    /// Inline policies: name and document.
    pub inline: Vec<(String, String)>,
    /// A disabled group's policies (MinIO's `set-group-status`) apply to nobody until it is
    /// enabled again (`principal.rs`).
    pub disabled: bool,
}

impl Group {
    /// `arn:aws:iam::<account>:group<path><name>`.
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:group{}{}",
            self.account, self.path, self.name
        )
    }

    pub(super) fn from_doc(d: &Document) -> Option<Group> {
        Some(Group {
            id: d.get_str("_id").ok()?.to_owned(),
            account: d.get_str("account").ok()?.to_owned(),
            name: d.get_str("name").ok()?.to_owned(),
            path: d.get_str("path").unwrap_or("/").to_owned(),
            created: d.get_datetime("created").ok().copied()?,
            attached: strings(d, "attached"),
            inline: pairs(d, "inline"),
            disabled: d.get_bool("disabled").unwrap_or(false),
        })
    }
}

fn no_group(name: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("The group with name {name} cannot be found."))
}

impl IdentityStore {
    /// Creates a group.
    pub async fn create_group(&self, acct: &Account, name: &str, path: &str) -> IdResult<Group> {
        let g = Group {
            id: super::new_id("AGPA"),
            account: acct.id.clone(),
            name: name.to_owned(),
            path: path.to_owned(),
            created: self.meta.clock().now(),
            attached: Vec::new(),
            inline: Vec::new(),
            disabled: false,
        };
        let d = doc! {
            "_id": &g.id, "account": &g.account, "accountKey": &acct.key, "name": name,
            "nameLower": name.to_lowercase(), "path": path, "created": g.created,
            "attached": [], "inline": [], "members": 0_i32,
        };
        match self.groups.insert_one(d).await {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "Group with name {name} already exists."
                )))
            }
            r => r?,
        };
        self.changed().await?;
        Ok(g)
    }

    /// A group of the account, by name.
    pub async fn group(&self, acct: &Account, name: &str) -> IdResult<Group> {
        self.groups
            .find_one(doc! {"account": &acct.id, "nameLower": name.to_lowercase()})
            .await?
            .as_ref()
            .and_then(Group::from_doc)
            .ok_or_else(|| no_group(name))
    }

    /// Groups by id (those that still exist), in name order.
    pub async fn groups_by_id(&self, ids: &[String]) -> mongodb::error::Result<Vec<Group>> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<Document> = self
            .groups
            .find(doc! {"_id": {"$in": ids}})
            .sort(doc! {"nameLower": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(Group::from_doc).collect())
    }

    /// A page of the account's groups.
    pub async fn list_groups(
        &self,
        acct: &Account,
        path_prefix: Option<&str>,
        marker: Option<&str>,
        max: usize,
    ) -> IdResult<Page<Group>> {
        super::page(
            &self.groups,
            super::page_filter(&acct.id, path_prefix, marker),
            max,
            Group::from_doc,
            |g: &Group| g.name.clone(),
        )
        .await
    }

    /// A page of a group's members, by name.
    pub async fn group_members(
        &self,
        g: &Group,
        marker: Option<&str>,
        max: usize,
    ) -> IdResult<Page<User>> {
        let mut f = doc! {"groups": &g.id};
        if let Some(m) = marker {
            f.insert("nameLower", doc! {"$gt": m});
        }
        super::page(&self.users, f, max, User::from_doc, |u: &User| {
            u.name.clone()
        })
        .await
    }

    /// Deletes a group with no members and no policies.
    pub async fn delete_group(&self, acct: &Account, name: &str) -> IdResult<()> {
        let g = self.group(acct, name).await?;
        let r = self
            .groups
            .delete_one(doc! {
                "_id": &g.id, "members": 0_i32, "attached": {"$size": 0}, "inline": {"$size": 0},
            })
            .await?;
        if r.deleted_count == 0 {
            return match self.groups.find_one(doc! {"_id": &g.id}).await? {
                None => Err(no_group(name)),
                Some(_) => Err(IdentityError::DeleteConflict(
                    "Cannot delete entity, must remove users from group and delete or detach policies first."
                        .into(),
                )),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Adds a user to a group (nothing when it is in it already).
    pub async fn add_user_to_group(&self, acct: &Account, group: &str, user: &str) -> IdResult<()> {
        let g = self.group(acct, group).await?;
        let u = self.user(acct, user).await?;
        if u.groups.contains(&g.id) {
            return Ok(());
        }
        // The group counts the member first: a group being deleted (which needs none) cannot
        // gain one, and a user never names a group that was deleted under it.
        let counted = self
            .groups
            .update_one(doc! {"_id": &g.id}, doc! {"$inc": {"members": 1_i32}})
            .await?;
        if counted.matched_count == 0 {
            return Err(no_group(group));
        }
        crate::failpoint::hit("identity.member_counted", &acct.id).await;
        let full = format!("groups.{}", MAX_GROUPS_PER_USER - 1);
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "groups": {"$ne": &g.id}, full: {"$exists": false}},
                doc! {"$push": {"groups": &g.id}},
            )
            .await;
        let added = matches!(&r, Ok(r) if r.modified_count == 1);
        if !added {
            self.groups
                .update_one(doc! {"_id": &g.id}, doc! {"$inc": {"members": -1_i32}})
                .await?;
            r?;
            return match self.user_by_id(&u.id).await? {
                None => Err(IdentityError::NoSuchEntity(format!(
                    "The user with name {user} cannot be found."
                ))),
                Some(now) if now.groups.contains(&g.id) => Ok(()),
                Some(_) => Err(IdentityError::LimitExceeded(format!(
                    "Cannot exceed quota for GroupsPerUser: {MAX_GROUPS_PER_USER}"
                ))),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Removes a user from a group.
    pub async fn remove_user_from_group(
        &self,
        acct: &Account,
        group: &str,
        user: &str,
    ) -> IdResult<()> {
        let g = self.group(acct, group).await?;
        let u = self.user(acct, user).await?;
        let r = self
            .users
            .update_one(
                doc! {"_id": &u.id, "groups": &g.id},
                doc! {"$pull": {"groups": &g.id}},
            )
            .await?;
        if r.modified_count == 0 {
            return Err(IdentityError::NoSuchEntity(format!(
                "The user with name {user} cannot be found in group {group}."
            )));
        }
        // Uncounted after the reference is gone (a crash in between keeps the group, never
        // drops it under a member).
        self.groups
            .update_one(
                doc! {"_id": &g.id, "members": {"$gt": 0_i32}},
                doc! {"$inc": {"members": -1_i32}},
            )
            .await?;
        self.changed().await?;
        Ok(())
    }

    /// Disables or enables a group (on the group as read).
    pub async fn set_group_disabled(&self, g: &Group, disabled: bool) -> IdResult<()> {
        let r = self
            .groups
            .update_one(
                doc! {"_id": &g.id, "name": &g.name},
                doc! {"$set": {"disabled": disabled}},
            )
            .await?;
        if r.matched_count == 0 {
            return Err(no_group(&g.name));
        }
        self.changed().await?;
        Ok(())
    }

    /// Replaces the group's inline policies if they are still as read (compare-and-set).
    pub async fn set_group_inline(&self, g: &Group, inline: &[(String, String)]) -> IdResult<bool> {
        let r = self
            .groups
            .update_one(
                doc! {"_id": &g.id, "inline": pair_docs(&g.inline)},
                doc! {"$set": {"inline": pair_docs(inline)}},
            )
            .await?;
        if r.matched_count == 1 {
            self.changed().await?;
        }
        Ok(r.matched_count == 1)
    }
}
