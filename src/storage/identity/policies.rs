//! Customer managed policies (`__iampolicies`), with their versions (at most five, one the
//! default), and their attachment to users and groups. A policy counts its attachments
//! (`attachments`), raised before a user or group names it and lowered after, so that an
//! attached policy is never deleted.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::Collection;

use super::{
    pair_docs, pairs, Account, IdResult, IdentityError, IdentityStore, Page, MAX_ATTACHED,
    MAX_VERSIONS,
};

/// One version of a managed policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyVersion {
    /// `v1`, `v2`, ...
    pub id: String,
    /// The policy document (JSON text, as given).
    pub document: String,
    /// When it was created.
    pub created: DateTime,
}

/// A customer managed policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManagedPolicy {
    /// Unique id (`ANPA...`).
    pub id: String,
    /// The 12-digit account id.
    pub account: String,
    /// Name.
    pub name: String,
    /// Path.
    pub path: String,
    /// Description (immutable, as in IAM).
    pub description: Option<String>,
    /// When it was created.
    pub created: DateTime,
    /// When its default version last changed.
    pub updated: DateTime,
    /// The default version's id.
    pub default_version: String,
    /// Its versions, oldest first.
    pub versions: Vec<PolicyVersion>,
    /// How many users and groups it is attached to.
    pub attachments: i32,
    /// Tags.
    pub tags: Vec<(String, String)>,
    next: i64,
}

impl ManagedPolicy {
    /// `arn:aws:iam::<account>:policy<path><name>`.
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:policy{}{}",
            self.account, self.path, self.name
        )
    }

    /// The default version's document.
    pub fn default_document(&self) -> Option<&str> {
        self.versions
            .iter()
            .find(|v| v.id == self.default_version)
            .map(|v| v.document.as_str())
    }

    pub(super) fn from_doc(d: &Document) -> Option<ManagedPolicy> {
        let versions = d
            .get_array("versions")
            .ok()?
            .iter()
            .filter_map(|v| {
                let v = v.as_document()?;
                Some(PolicyVersion {
                    id: v.get_str("id").ok()?.to_owned(),
                    document: v.get_str("doc").ok()?.to_owned(),
                    created: v.get_datetime("created").ok().copied()?,
                })
            })
            .collect();
        Some(ManagedPolicy {
            id: d.get_str("_id").ok()?.to_owned(),
            account: d.get_str("account").ok()?.to_owned(),
            name: d.get_str("name").ok()?.to_owned(),
            path: d.get_str("path").unwrap_or("/").to_owned(),
            description: d.get_str("description").ok().map(str::to_owned),
            created: d.get_datetime("created").ok().copied()?,
            updated: d.get_datetime("updated").ok().copied()?,
            default_version: d.get_str("default").ok()?.to_owned(),
            versions,
            attachments: d.get_i32("attachments").unwrap_or(0),
            tags: pairs(d, "tags"),
            next: d.get_i64("next").unwrap_or(2),
        })
    }
}

fn no_policy(arn: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("Policy {arn} does not exist or is not attachable."))
}

/// What a managed policy is attached to, `(name, id)` each.
#[derive(Clone, Debug, Default)]
pub struct Entities {
    /// Users.
    pub users: Vec<(String, String)>,
    /// Groups.
    pub groups: Vec<(String, String)>,
    /// Roles.
    pub roles: Vec<(String, String)>,
}

/// What a managed policy is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A user.
    User,
    /// A group.
    Group,
    /// A role.
    Role,
}

impl IdentityStore {
    fn holders(&self, h: Holder) -> &Collection<Document> {
        match h {
            Holder::User => &self.users,
            Holder::Group => &self.groups,
            Holder::Role => &self.roles,
        }
    }

    /// Creates a managed policy whose version `v1` is `document` (already validated).
    pub async fn create_policy(
        &self,
        acct: &Account,
        name: &str,
        path: &str,
        description: Option<&str>,
        document: &str,
        tags: &[(String, String)],
    ) -> IdResult<ManagedPolicy> {
        let now = self.meta.clock().now();
        let id = super::new_id("ANPA");
        let mut d = doc! {
            "_id": &id, "account": &acct.id, "accountKey": &acct.key, "name": name,
            "nameLower": name.to_lowercase(), "path": path, "created": now, "updated": now,
            "default": "v1", "next": 2_i64, "attachments": 0_i32, "tags": pair_docs(tags),
            "versions": [{"id": "v1", "doc": document, "created": now}],
        };
        if let Some(desc) = description {
            d.insert("description", desc);
        }
        match self.policies.insert_one(d.clone()).await {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "A policy called {name} already exists. Duplicate names are not allowed."
                )))
            }
            r => r?,
        };
        self.changed().await?;
        Ok(ManagedPolicy::from_doc(&d).expect("just made"))
    }

    /// The account's policy with this ARN.
    pub async fn policy(&self, acct: &Account, arn: &str) -> IdResult<ManagedPolicy> {
        let Some((path, name)) = parse_policy_arn(arn, &acct.id) else {
            return Err(no_policy(arn));
        };
        self.policies
            .find_one(doc! {"account": &acct.id, "nameLower": name.to_lowercase(), "path": path})
            .await?
            .as_ref()
            .and_then(ManagedPolicy::from_doc)
            .filter(|p| p.name == name)
            .ok_or_else(|| no_policy(arn))
    }

    /// Policies by ARN (those that exist), for gathering a principal's rights.
    pub async fn policies_by_arn(
        &self,
        arns: &[String],
    ) -> mongodb::error::Result<Vec<ManagedPolicy>> {
        let mut or = Vec::new();
        for arn in arns {
            if let Some((account, path, name)) = split_policy_arn(arn) {
                or.push(doc! {"account": account, "path": path, "name": name});
            }
        }
        if or.is_empty() {
            return Ok(Vec::new());
        }
        let docs: Vec<Document> = self
            .policies
            .find(doc! {"$or": or})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(ManagedPolicy::from_doc).collect())
    }

    /// A page of the account's policies (`only_attached`: those attached to something).
    pub async fn list_policies(
        &self,
        acct: &Account,
        only_attached: bool,
        path_prefix: Option<&str>,
        marker: Option<&str>,
        max: usize,
    ) -> IdResult<Page<ManagedPolicy>> {
        let mut f = super::page_filter(&acct.id, path_prefix, marker);
        if only_attached {
            f.insert("attachments", doc! {"$gt": 0_i32});
        }
        super::page(
            &self.policies,
            f,
            max,
            ManagedPolicy::from_doc,
            |p: &ManagedPolicy| p.name.clone(),
        )
        .await
    }

    /// Deletes a policy attached to nothing and with no version but its default.
    pub async fn delete_policy(&self, acct: &Account, arn: &str) -> IdResult<()> {
        let p = self.policy(acct, arn).await?;
        let r = self
            .policies
            .delete_one(doc! {"_id": &p.id, "attachments": 0_i32, "versions": {"$size": 1}})
            .await?;
        if r.deleted_count == 0 {
            return match self.policies.find_one(doc! {"_id": &p.id}).await? {
                None => Err(no_policy(arn)),
                Some(_) => Err(IdentityError::DeleteConflict(
                    "Cannot delete a policy attached to entities or with versions other than the default; detach it and delete its other versions first."
                        .into(),
                )),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Adds a version (made the default when `default`); at most [`MAX_VERSIONS`].
    pub async fn create_policy_version(
        &self,
        acct: &Account,
        arn: &str,
        document: &str,
        default: bool,
    ) -> IdResult<PolicyVersion> {
        let p = self.policy(acct, arn).await?;
        if p.versions.len() >= MAX_VERSIONS {
            return Err(IdentityError::LimitExceeded(format!(
                "A managed policy can have up to {MAX_VERSIONS} versions. Before you create a new version, you must delete an existing version."
            )));
        }
        let now = self.meta.clock().now();
        let v = PolicyVersion {
            id: format!("v{}", p.next),
            document: document.to_owned(),
            created: now,
        };
        let mut set = doc! {"next": p.next + 1};
        if default {
            set.insert("default", &v.id);
            set.insert("updated", now);
        }
        // On the versions as read: two versions made at once cannot share an id or pass
        // the quota together.
        let r = self
            .policies
            .update_one(
                doc! {"_id": &p.id, "next": p.next, "versions": {"$size": p.versions.len() as i32}},
                doc! {
                    "$push": {"versions": {"id": &v.id, "doc": document, "created": now}},
                    "$set": set,
                },
            )
            .await?;
        if r.matched_count == 0 {
            return Err(IdentityError::LimitExceeded(
                "The policy changed while this version was added; try again.".into(),
            ));
        }
        self.changed().await?;
        Ok(v)
    }

    /// Makes a version the default.
    pub async fn set_default_version(
        &self,
        acct: &Account,
        arn: &str,
        version: &str,
    ) -> IdResult<()> {
        let p = self.policy(acct, arn).await?;
        let r = self
            .policies
            .update_one(
                doc! {"_id": &p.id, "versions.id": version},
                vec![doc! {"$set": {"default": version, "updated": "$$NOW"}}],
            )
            .await?;
        if r.matched_count == 0 {
            return Err(IdentityError::NoSuchEntity(format!(
                "Policy {arn} version {version} does not exist or is not attachable."
            )));
        }
        self.changed().await?;
        Ok(())
    }

    /// Deletes a version that is not the default.
    pub async fn delete_policy_version(
        &self,
        acct: &Account,
        arn: &str,
        version: &str,
    ) -> IdResult<()> {
        let p = self.policy(acct, arn).await?;
        if !p.versions.iter().any(|v| v.id == version) {
            return Err(IdentityError::NoSuchEntity(format!(
                "Policy {arn} version {version} does not exist."
            )));
        }
        let r = self
            .policies
            .update_one(
                doc! {"_id": &p.id, "default": {"$ne": version}},
                doc! {"$pull": {"versions": {"id": version}}},
            )
            .await?;
        if r.matched_count == 0 {
            return Err(IdentityError::DeleteConflict(
                "Cannot delete the default version of a policy.".into(),
            ));
        }
        self.changed().await?;
        Ok(())
    }

    /// Attaches a policy to a user or group (`holder_id`; nothing when attached already).
    pub async fn attach(
        &self,
        acct: &Account,
        holder: Holder,
        holder_id: &str,
        arn: &str,
    ) -> IdResult<()> {
        let p = self.policy(acct, arn).await?;
        let arn = p.arn();
        let coll = self.holders(holder);
        if coll
            .find_one(doc! {"_id": holder_id, "attached": &arn})
            .await?
            .is_some()
        {
            return Ok(());
        }
        // Counted first (see the module's documentation).
        let counted = self
            .policies
            .update_one(doc! {"_id": &p.id}, doc! {"$inc": {"attachments": 1_i32}})
            .await?;
        if counted.matched_count == 0 {
            return Err(no_policy(&arn));
        }
        crate::failpoint::hit("identity.attachment_counted", &acct.id).await;
        let full = format!("attached.{}", MAX_ATTACHED - 1);
        let r = coll
            .update_one(
                doc! {"_id": holder_id, "attached": {"$ne": &arn}, full: {"$exists": false}},
                doc! {"$push": {"attached": &arn}},
            )
            .await;
        if !matches!(&r, Ok(r) if r.modified_count == 1) {
            self.policies
                .update_one(doc! {"_id": &p.id}, doc! {"$inc": {"attachments": -1_i32}})
                .await?;
            r?;
            return match coll.find_one(doc! {"_id": holder_id}).await? {
                None => Err(IdentityError::NoSuchEntity(
                    "The entity cannot be found.".into(),
                )),
                Some(d) if super::strings(&d, "attached").contains(&arn) => Ok(()),
                Some(_) => Err(IdentityError::LimitExceeded(format!(
                    "Cannot exceed quota for PoliciesPerUser, PoliciesPerGroup or PoliciesPerRole: {MAX_ATTACHED}"
                ))),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Detaches a policy from a user or group.
    pub async fn detach(
        &self,
        acct: &Account,
        holder: Holder,
        holder_id: &str,
        arn: &str,
    ) -> IdResult<()> {
        let r = self
            .holders(holder)
            .update_one(
                doc! {"_id": holder_id, "attached": arn},
                doc! {"$pull": {"attached": arn}},
            )
            .await?;
        if r.modified_count == 0 {
            return Err(IdentityError::NoSuchEntity(format!(
                "Policy {arn} was not found."
            )));
        }
        if let Some((path, name)) = parse_policy_arn(arn, &acct.id) {
            self.policies
                .update_one(
                    doc! {"account": &acct.id, "path": path, "name": name, "attachments": {"$gt": 0_i32}},
                    doc! {"$inc": {"attachments": -1_i32}},
                )
                .await?;
        }
        self.changed().await?;
        Ok(())
    }

    /// The users, groups and roles a policy is attached to: `(name, id)` each.
    pub async fn entities_for_policy(&self, acct: &Account, arn: &str) -> IdResult<Entities> {
        let p = self.policy(acct, arn).await?;
        let arn = p.arn();
        let names = |docs: Vec<Document>| -> Vec<(String, String)> {
            docs.iter()
                .filter_map(|d| {
                    Some((
                        d.get_str("name").ok()?.to_owned(),
                        d.get_str("_id").ok()?.to_owned(),
                    ))
                })
                .collect()
        };
        let filter = doc! {"account": &acct.id, "attached": &arn};
        let mut found = Vec::new();
        for c in [&self.users, &self.groups, &self.roles] {
            let docs: Vec<Document> = c
                .find(filter.clone())
                .projection(doc! {"name": 1})
                .sort(doc! {"nameLower": 1})
                .await?
                .try_collect()
                .await?;
            found.push(docs);
        }
        let roles = found.pop().unwrap_or_default();
        let groups = found.pop().unwrap_or_default();
        let users = found.pop().unwrap_or_default();
        Ok(Entities {
            users: names(users),
            groups: names(groups),
            roles: names(roles),
        })
    }
}

/// `(account, path, name)` of a policy ARN.
fn split_policy_arn(arn: &str) -> Option<(&str, &str, &str)> {
    let rest = arn.strip_prefix("arn:aws:iam::")?;
    let (account, what) = rest.split_once(':')?;
    let pn = what.strip_prefix("policy")?;
    if !pn.starts_with('/') {
        return None;
    }
    let cut = pn.rfind('/')?;
    Some((account, &pn[..=cut], &pn[cut + 1..]))
}

/// The path and name of a policy ARN of `account`.
fn parse_policy_arn<'a>(arn: &'a str, account: &str) -> Option<(&'a str, &'a str)> {
    let (a, path, name) = split_policy_arn(arn)?;
    (a == account && !name.is_empty()).then_some((path, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_arns_split_into_account_path_and_name() {
        assert_eq!(
            split_policy_arn("arn:aws:iam::123456789012:policy/a/b/Name"),
            Some(("123456789012", "/a/b/", "Name"))
        );
        assert_eq!(
            split_policy_arn("arn:aws:iam::123456789012:policy/Name"),
            Some(("123456789012", "/", "Name"))
        );
        assert_eq!(
            split_policy_arn("arn:aws:iam::123456789012:user/Name"),
            None
        );
        assert_eq!(parse_policy_arn("arn:aws:iam::1:policy/N", "2"), None);
    }
}
