//! IAM roles (`__iamroles`, issue 61): one document each, shaped like a user's, holding its
//! trust policy (who may assume it), its attached and inline policies, tags and the longest
//! session it grants, so that one read finds what a session's requests are judged by.
//!
//! A role has no keys of its own: sessions of it (STS's temporary credentials, in
//! `__accesskeys`, see `storage::meta::sts_keys`) name it by unique id, and end when it is
//! deleted (a session whose role is gone signs nothing, judged when its principal is read).

use mongodb::bson::{doc, DateTime, Document};

use super::{pair_docs, pairs, strings, Account, IdResult, IdentityError, IdentityStore, Page};

/// Shortest and longest `MaxSessionDuration` (AWS: 1 to 12 hours).
pub const MAX_SESSION_RANGE: std::ops::RangeInclusive<i64> = 3600..=43_200;

/// An IAM role.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Role {
    /// Unique id (`AROA...`).
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
    /// Its description (may be empty).
    pub description: String,
    /// The longest session it grants, in seconds.
    pub max_session: i64,
    /// The trust policy (`AssumeRolePolicyDocument`), as stored.
    pub trust: String,
    /// Tags, in the order given.
    pub tags: Vec<(String, String)>,
    /// The ARNs of the managed policies attached to it.
    pub attached: Vec<String>,
    /// Inline policies: name and document.
    pub inline: Vec<(String, String)>,
    /// When a session last assumed it (`RoleLastUsed`), if ever.
    pub last_used: Option<DateTime>,
}

impl Role {
    /// `arn:aws:iam::<account>:role<path><name>`.
    pub fn arn(&self) -> String {
        format!(
            "arn:aws:iam::{}:role{}{}",
            self.account, self.path, self.name
        )
    }

    /// `arn:aws:sts::<account>:assumed-role/<name>/<session>`: a session's ARN (AWS leaves
    /// the role's path out of it).
    pub fn session_arn(&self, session: &str) -> String {
        format!(
            "arn:aws:sts::{}:assumed-role/{}/{session}",
            self.account, self.name
        )
    }

    pub(super) fn from_doc(d: &Document) -> Option<Role> {
        Some(Role {
            id: d.get_str("_id").ok()?.to_owned(),
            account: d.get_str("account").ok()?.to_owned(),
            account_key: d.get_str("accountKey").ok()?.to_owned(),
            name: d.get_str("name").ok()?.to_owned(),
            path: d.get_str("path").unwrap_or("/").to_owned(),
            created: d.get_datetime("created").ok().copied()?,
            description: d.get_str("description").unwrap_or_default().to_owned(),
            max_session: d.get_i64("maxSession").unwrap_or(3600),
            trust: d.get_str("trust").ok()?.to_owned(),
            tags: pairs(d, "tags"),
            attached: strings(d, "attached"),
            inline: pairs(d, "inline"),
            last_used: d.get_datetime("lastUsed").ok().copied(),
        })
    }
}

fn no_role(name: &str) -> IdentityError {
    IdentityError::NoSuchEntity(format!("The role with name {name} cannot be found."))
}

/// What CreateRole is given (validated by the IAM layer).
#[derive(Clone, Debug)]
pub struct NewRole<'a> {
    /// The name.
    pub name: &'a str,
    /// The path.
    pub path: &'a str,
    /// The trust policy.
    pub trust: &'a str,
    /// The description.
    pub description: &'a str,
    /// `MaxSessionDuration`, seconds.
    pub max_session: i64,
    /// Tags.
    pub tags: &'a [(String, String)],
}

impl IdentityStore {
    /// Creates a role.
    pub async fn create_role(&self, acct: &Account, r: NewRole<'_>) -> IdResult<Role> {
        let role = Role {
            id: super::new_id("AROA"),
            account: acct.id.clone(),
            account_key: acct.key.clone(),
            name: r.name.to_owned(),
            path: r.path.to_owned(),
            created: self.meta.clock().now(),
            description: r.description.to_owned(),
            max_session: r.max_session,
            trust: r.trust.to_owned(),
            tags: r.tags.to_vec(),
            attached: Vec::new(),
            inline: Vec::new(),
            last_used: None,
        };
        let d = doc! {
            "_id": &role.id, "account": &role.account, "accountKey": &role.account_key,
            "name": r.name, "nameLower": r.name.to_lowercase(), "path": r.path,
            "created": role.created, "description": r.description, "maxSession": r.max_session,
            "trust": r.trust, "tags": pair_docs(r.tags), "attached": [], "inline": [],
        };
        match self.roles.insert_one(d).await {
            Err(e) if super::super::meta::is_duplicate_key(&e) => {
                return Err(IdentityError::EntityAlreadyExists(format!(
                    "Role with name {} already exists.",
                    r.name
                )))
            }
            r => r?,
        };
        self.changed().await?;
        Ok(role)
    }

    /// A role of the account, by name (names compare without case).
    pub async fn role(&self, acct: &Account, name: &str) -> IdResult<Role> {
        self.roles
            .find_one(doc! {"account": &acct.id, "nameLower": name.to_lowercase()})
            .await?
            .as_ref()
            .and_then(Role::from_doc)
            .ok_or_else(|| no_role(name))
    }

    /// A role of the account with 12-digit id `account`, by name (AssumeRole names roles by
    /// ARN, which carries the account's id, not its key).
    pub async fn role_in_account_id(
        &self,
        account: &str,
        name: &str,
    ) -> mongodb::error::Result<Option<Role>> {
        Ok(self
            .roles
            .find_one(doc! {"account": account, "nameLower": name.to_lowercase()})
            .await?
            .as_ref()
            .and_then(Role::from_doc))
    }

    /// A role by unique id (any account).
    pub async fn role_by_id(&self, id: &str) -> mongodb::error::Result<Option<Role>> {
        Ok(self
            .roles
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(Role::from_doc))
    }

    /// A page of the account's roles, by name.
    pub async fn list_roles(
        &self,
        acct: &Account,
        path_prefix: Option<&str>,
        marker: Option<&str>,
        max: usize,
    ) -> IdResult<Page<Role>> {
        super::page(
            &self.roles,
            super::page_filter(&acct.id, path_prefix, marker),
            max,
            Role::from_doc,
            |r: &Role| r.name.clone(),
        )
        .await
    }

    /// Deletes a role that has no policies left (AWS's DeleteConflict otherwise). Its
    /// sessions stop signing at once on this instance and within the keys' version poll on
    /// the others (their principal is read again and is gone).
    pub async fn delete_role(&self, acct: &Account, name: &str) -> IdResult<()> {
        let r = self.role(acct, name).await?;
        let deleted = self
            .roles
            .delete_one(doc! {
                "_id": &r.id, "attached": {"$size": 0}, "inline": {"$size": 0},
            })
            .await?;
        if deleted.deleted_count == 0 {
            return match self.role_by_id(&r.id).await? {
                None => Err(no_role(name)),
                Some(_) => Err(IdentityError::DeleteConflict(
                    "Cannot delete entity, must detach all policies first.".into(),
                )),
            };
        }
        self.changed().await?;
        Ok(())
    }

    /// Sets fields of the role as read (`set`: field name to value), compare-and-set on the
    /// fields it changes: `false` when the role changed since it was read.
    async fn set_role_fields(&self, r: &Role, was: Document, set: Document) -> IdResult<bool> {
        let mut filter = doc! {"_id": &r.id};
        filter.extend(was);
        let u = self.roles.update_one(filter, doc! {"$set": set}).await?;
        if u.matched_count == 1 {
            self.changed().await?;
        }
        Ok(u.matched_count == 1)
    }

    /// UpdateRole: the description and/or the longest session.
    pub async fn update_role(
        &self,
        r: &Role,
        description: Option<&str>,
        max_session: Option<i64>,
    ) -> IdResult<bool> {
        let mut set = doc! {};
        if let Some(d) = description {
            set.insert("description", d);
        }
        if let Some(m) = max_session {
            set.insert("maxSession", m);
        }
        if set.is_empty() {
            return Ok(true);
        }
        let was = doc! {"description": &r.description, "maxSession": r.max_session};
        self.set_role_fields(r, was, set).await
    }

    /// UpdateAssumeRolePolicy.
    pub async fn set_role_trust(&self, r: &Role, trust: &str) -> IdResult<bool> {
        self.set_role_fields(r, doc! {"trust": &r.trust}, doc! {"trust": trust})
            .await
    }

    /// Replaces the role's tags if they are still as read.
    pub async fn set_role_tags(&self, r: &Role, tags: &[(String, String)]) -> IdResult<bool> {
        self.set_role_fields(
            r,
            doc! {"tags": pair_docs(&r.tags)},
            doc! {"tags": pair_docs(tags)},
        )
        .await
    }

    /// Replaces the role's inline policies if they are still as read.
    pub async fn set_role_inline(&self, r: &Role, inline: &[(String, String)]) -> IdResult<bool> {
        self.set_role_fields(
            r,
            doc! {"inline": pair_docs(&r.inline)},
            doc! {"inline": pair_docs(inline)},
        )
        .await
    }

    /// Records that a session of the role was made (`RoleLastUsed`), without moving the keys'
    /// version counter: nothing a request is judged by changed.
    pub async fn note_role_used(&self, id: &str, at: DateTime) -> mongodb::error::Result<()> {
        self.roles
            .update_one(doc! {"_id": id}, doc! {"$set": {"lastUsed": at}})
            .await
            .map(|_| ())
    }

    /// The role and the identity policies that apply to it (inline and attached), named as
    /// `Effective` names a user's.
    pub async fn role_effective(
        &self,
        id: &str,
    ) -> mongodb::error::Result<Option<(Role, Vec<(String, String)>)>> {
        let Some(role) = self.role_by_id(id).await? else {
            return Ok(None);
        };
        let mut policies: Vec<(String, String)> = role
            .inline
            .iter()
            .map(|(n, t)| (format!("role inline policy {n}"), t.clone()))
            .collect();
        for p in self.policies_by_arn(&role.attached).await? {
            if let Some(d) = p.default_document() {
                policies.push((
                    format!("managed policy {} ({})", p.arn(), p.default_version),
                    d.to_owned(),
                ));
            }
        }
        Ok(Some((role, policies)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_and_session_arns_have_aws_shapes() {
        let r = Role {
            id: "AROAEXAMPLE".into(),
            account: "123456789012".into(),
            account_key: "K".into(),
            name: "ci".into(),
            path: "/build/".into(),
            created: DateTime::from_millis(0),
            description: String::new(),
            max_session: 3600,
            trust: "{}".into(),
            tags: vec![],
            attached: vec![],
            inline: vec![],
            last_used: None,
        };
        assert_eq!(r.arn(), "arn:aws:iam::123456789012:role/build/ci");
        assert_eq!(
            r.session_arn("job-7"),
            "arn:aws:sts::123456789012:assumed-role/ci/job-7"
        );
    }
}
