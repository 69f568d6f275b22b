//! What a user's requests are judged by, gathered in one place: the user, its groups, and the
//! text of every identity policy that applies (its own and its groups', inline and attached),
//! each named for the "why was this denied" explanation. Three reads (the user, its groups,
//! their managed policies), made when a credentials cache misses.

use super::{Group, IdentityStore, User};

/// A user and the identity policies that apply to it.
#[derive(Clone, Debug)]
pub struct Effective {
    /// The user.
    pub user: User,
    /// Its groups (those that exist and are enabled).
    pub groups: Vec<Group>,
    /// `(where it comes from, document)`: `user inline policy <name>`, `group <g> inline
    /// policy <name>`, `managed policy <arn> (v<n>)`.
    pub policies: Vec<(String, String)>,
}

impl IdentityStore {
    /// The user with unique id `id` and its policies; `None` when it no longer exists or is
    /// disabled (its keys then sign nothing). A disabled group's policies are left out.
    pub async fn effective(&self, id: &str) -> mongodb::error::Result<Option<Effective>> {
        let Some(user) = self.user_by_id(id).await?.filter(|u| !u.disabled) else {
            return Ok(None);
        };
        let mut groups = self.groups_by_id(&user.groups).await?;
        groups.retain(|g| !g.disabled);
        let mut policies: Vec<(String, String)> = user
            .inline
            .iter()
            .map(|(n, t)| (format!("user inline policy {n}"), t.clone()))
            .collect();
        let mut arns = user.attached.clone();
        for g in &groups {
            policies.extend(
                g.inline
                    .iter()
                    .map(|(n, t)| (format!("group {} inline policy {n}", g.name), t.clone())),
            );
            arns.extend(g.attached.iter().cloned());
        }
        arns.sort();
        arns.dedup();
        for p in self.policies_by_arn(&arns).await? {
            if let Some(d) = p.default_document() {
                policies.push((
                    format!("managed policy {} ({})", p.arn(), p.default_version),
                    d.to_owned(),
                ));
            }
        }
        Ok(Some(Effective {
            user,
            groups,
            policies,
        }))
    }
}
