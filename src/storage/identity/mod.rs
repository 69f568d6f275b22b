//! The identity store: the IAM users, groups and customer managed policies of every account,
//! in `__iamusers`, `__iamgroups` and `__iampolicies`, shared by every instance. Users' access
//! keys live with every other key in `__accesskeys` (`storage::meta::user_keys`), so that
//! signing looks keys up in one place.
//!
//! **Accounts.** Every key that is not a user's (each key the admin API makes, and the
//! deployment's root key) is the root credentials of an account of its own, whose 12-digit id
//! is derived from the key id ([`account_id`]); the account needs no document. A user, group
//! or policy names its account by that id and by the root key (`accountKey`), which is what a
//! bucket's `owner` field holds, so "is this bucket in the caller's account" is one
//! comparison.
//!
//! **Writes.** Every change is a conditional write on what it read, and counters on the
//! document that others point at keep deletes exact: a user counts its keys (`keyCount`, at
//! most two), a group its members (`members`), a policy its attachments (`attachments`). The
//! counter is raised before the reference is written and lowered after it is removed, so a
//! crash between the two leaves the entity undeletable until the reference goes, never
//! deleted under a reference. Every change then moves the keys' version counter
//! (`MetaStore::keys_changed`), which every instance's credentials cache follows.
//!
//! Roles (issue 61) live in `__iamroles`, shaped like users (`roles.rs`).

mod groups;
mod oidc;
mod policies;
mod principal;
mod roles;
mod users;

pub use groups::Group;
pub use oidc::{provider_name, OidcProvider, MAX_CLIENT_IDS, MAX_OIDC_PROVIDERS};
pub use policies::{Entities, Holder, ManagedPolicy, PolicyVersion};
pub use principal::Effective;
pub use roles::{NewRole, Role, MAX_SESSION_RANGE};
pub use users::User;

use mongodb::bson::{doc, Document};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};
use rand::Rng;

use crate::storage::meta::MetaStore;

/// Most access keys a user has at once (AWS's quota).
pub const MAX_KEYS_PER_USER: i32 = 2;
/// Most groups a user is in (AWS's quota).
pub const MAX_GROUPS_PER_USER: usize = 10;
/// Most managed policies attached to one user or group (AWS's default quota).
pub const MAX_ATTACHED: usize = 10;
/// Most versions of a managed policy (AWS's quota).
pub const MAX_VERSIONS: usize = 5;

/// What a change of identity can fail with, besides the database.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    /// The named entity does not exist (in the caller's account).
    #[error("{0}")]
    NoSuchEntity(String),
    /// One of that name exists already.
    #[error("{0}")]
    EntityAlreadyExists(String),
    /// Something still refers to it.
    #[error("{0}")]
    DeleteConflict(String),
    /// A quota would be exceeded.
    #[error("{0}")]
    LimitExceeded(String),
    /// An argument is not acceptable (AWS's InvalidInput).
    #[error("{0}")]
    InvalidInput(String),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] mongodb::error::Error),
}

/// Results of the identity store.
pub type IdResult<T> = Result<T, IdentityError>;

/// An account: its root credentials' access key id and its 12-digit id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// The access key id of the account's root credentials (a bucket's `owner`).
    pub key: String,
    /// The 12-digit account id.
    pub id: String,
}

impl Account {
    /// The account whose root credentials are `key`.
    pub fn of_key(key: &str) -> Self {
        Account {
            key: key.to_owned(),
            id: account_id(key),
        }
    }

    /// `arn:aws:iam::<id>:<what>` (`what`: `user/path/name`, `root`, ...).
    pub fn arn(&self, what: &str) -> String {
        format!("arn:aws:iam::{}:{what}", self.id)
    }
}

/// The 12-digit id of the account whose root credentials are `key`: derived from the key id
/// (SHA-256, the first 8 bytes modulo 10^12), so that today's keys need no migration and every
/// instance agrees without asking the database.
pub fn account_id(key: &str) -> String {
    use sha2::Digest;
    let h = sha2::Sha256::digest(format!("grids3 account {key}").as_bytes());
    let n = u64::from_be_bytes(h[..8].try_into().expect("8 bytes")) % 1_000_000_000_000;
    format!("{n:012}")
}

/// A new unique id as AWS writes them: a four-letter prefix (`AIDA` users, `AGPA` groups,
/// `ANPA` policies) and 17 characters of A-Z and 0-9.
pub fn new_id(prefix: &str) -> String {
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut rng = rand::thread_rng();
    let mut s = prefix.to_owned();
    s.extend((0..17).map(|_| ALPHA[rng.gen_range(0..ALPHA.len())] as char));
    s
}

/// A new access key id (`AKIA` and 16 characters of A-Z and 2-7, as AWS's) and secret (40
/// characters of base64 without `+` and `/`), drawn independently.
pub fn new_access_key() -> (String, String) {
    use base64::Engine;
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut rng = rand::rngs::OsRng;
    let mut id = "AKIA".to_owned();
    id.extend((0..16).map(|_| ALPHA[rng.gen_range(0..ALPHA.len())] as char));
    let mut raw = [0u8; 30];
    rand::RngCore::fill_bytes(&mut rng, &mut raw);
    let secret = base64::engine::general_purpose::STANDARD
        .encode(raw)
        .replace(['+', '/'], "x");
    (id, secret)
}

/// A page of a listing: the items and, when there are more, the marker of the next page.
#[derive(Clone, Debug)]
pub struct Page<T> {
    /// The items, in name order.
    pub items: Vec<T>,
    /// Where the next page starts (`None`: this is the last).
    pub next: Option<String>,
}

/// Handle on the identity collections.
#[derive(Clone, Debug)]
pub struct IdentityStore {
    meta: MetaStore,
    users: Collection<Document>,
    groups: Collection<Document>,
    policies: Collection<Document>,
    roles: Collection<Document>,
    oidc: Collection<Document>,
}

impl IdentityStore {
    /// Opens the store beside `meta` and makes its indexes (names are unique per account,
    /// compared without case, as IAM compares them).
    pub async fn open(meta: MetaStore) -> mongodb::error::Result<Self> {
        let db = meta.database().clone();
        let s = IdentityStore {
            users: db.collection("__iamusers"),
            groups: db.collection("__iamgroups"),
            policies: db.collection("__iampolicies"),
            roles: db.collection("__iamroles"),
            oidc: db.collection("__iamoidc"),
            meta,
        };
        let unique = |keys: Document, name: &str| {
            IndexModel::builder()
                .keys(keys)
                .options(
                    IndexOptions::builder()
                        .name(name.to_owned())
                        .unique(true)
                        .build(),
                )
                .build()
        };
        for c in [&s.users, &s.groups, &s.policies, &s.roles] {
            c.create_index(unique(doc! {"account": 1, "nameLower": 1}, "name"))
                .await?;
        }
        s.oidc
            .create_index(unique(doc! {"account": 1, "name": 1}, "issuer"))
            .await?;
        s.users
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"groups": 1})
                    .options(IndexOptions::builder().name("groups".to_owned()).build())
                    .build(),
            )
            .await?;
        s.users
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"attached": 1})
                    .options(IndexOptions::builder().name("attached".to_owned()).build())
                    .build(),
            )
            .await?;
        for c in [&s.groups, &s.roles] {
            c.create_index(
                IndexModel::builder()
                    .keys(doc! {"attached": 1})
                    .options(IndexOptions::builder().name("attached".to_owned()).build())
                    .build(),
            )
            .await?;
        }
        Ok(s)
    }

    /// The metastore beside it (users' keys live there).
    pub fn meta(&self) -> &MetaStore {
        &self.meta
    }

    /// After every change: every instance's credentials cache forgets what it knew.
    async fn changed(&self) -> mongodb::error::Result<()> {
        self.meta.keys_changed().await
    }
}

/// A list of `(name, text)` pairs stored as `[{n, t}]` (inline policies, tags).
fn pairs(d: &Document, field: &str) -> Vec<(String, String)> {
    d.get_array(field)
        .map(|a| {
            a.iter()
                .filter_map(|v| {
                    let v = v.as_document()?;
                    Some((
                        v.get_str("n").ok()?.to_owned(),
                        v.get_str("t").ok()?.to_owned(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn pair_docs(p: &[(String, String)]) -> Vec<Document> {
    p.iter().map(|(n, t)| doc! {"n": n, "t": t}).collect()
}

fn strings(d: &Document, field: &str) -> Vec<String> {
    d.get_array(field)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The filter and sort of a page of names after `marker`, with `path_prefix`.
fn page_filter(account: &str, path_prefix: Option<&str>, marker: Option<&str>) -> Document {
    let mut f = doc! {"account": account};
    if let Some(p) = path_prefix.filter(|p| *p != "/") {
        f.insert("path", doc! {"$regex": format!("^{}", regex_escape(p))});
    }
    if let Some(m) = marker {
        f.insert("nameLower", doc! {"$gt": m});
    }
    f
}

/// A literal string as a regular expression (a path prefix is the caller's text, never an
/// operator).
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if !c.is_ascii_alphanumeric() && c != '/' {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A page of up to `max` documents of `coll` matching `filter`, in name order, read as `T`.
async fn page<T>(
    coll: &Collection<Document>,
    filter: Document,
    max: usize,
    from: fn(&Document) -> Option<T>,
    name: impl Fn(&T) -> String,
) -> IdResult<Page<T>> {
    use futures::TryStreamExt;
    let docs: Vec<Document> = coll
        .find(filter)
        .sort(doc! {"nameLower": 1})
        .limit(max as i64 + 1)
        .await?
        .try_collect()
        .await?;
    Ok(to_page(docs.iter().filter_map(from).collect(), max, name))
}

/// Cuts a listing of `max + 1` items to a page.
fn to_page<T>(mut items: Vec<T>, max: usize, name: impl Fn(&T) -> String) -> Page<T> {
    let next = if items.len() > max {
        items.truncate(max);
        items.last().map(|i| name(i).to_lowercase())
    } else {
        None
    };
    Page { items, next }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_ids_are_twelve_stable_digits_and_differ_by_key() {
        let a = account_id("GKAAAA");
        assert_eq!(a.len(), 12);
        assert!(a.bytes().all(|b| b.is_ascii_digit()));
        assert_eq!(a, account_id("GKAAAA"));
        assert_ne!(a, account_id("GKAAAB"));
    }

    #[test]
    fn ids_and_keys_have_aws_shapes() {
        let u = new_id("AIDA");
        assert_eq!(u.len(), 21);
        assert!(u.starts_with("AIDA"));
        let (k, s) = new_access_key();
        assert_eq!(k.len(), 20);
        assert!(k.starts_with("AKIA"));
        assert_eq!(s.len(), 40);
        assert!(!s.contains(['+', '/']));
        assert_ne!(new_access_key().0, k);
    }

    #[test]
    fn a_path_prefix_is_matched_literally() {
        assert_eq!(regex_escape("/a.b*/"), "/a\\.b\\*/");
    }
}
