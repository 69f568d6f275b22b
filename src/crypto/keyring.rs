//! The local keyring of SSE-KMS: named 256-bit keys in `__keyring`, each sealed under the
//! master key, shared by every gateway instance. A key is used by its id, its ARN
//! (`arn:aws:kms:<region>:<account>:key/<id>`) or its alias (`alias/<name>`); a disabled key
//! encrypts and decrypts nothing until it is enabled again, like a disabled KMS key.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::{Collection, Database};

use super::cipher::{random_key, unwrap, wrap};
use super::keys::MasterKeys;
use super::SseError;

/// The id of the default key (`alias/aws/s3`): fixed, so that instances racing to create it
/// create one.
const DEFAULT_ID: &str = "00000000-0000-4000-8000-0000000a3053";

/// How long a key's state is cached: a key disabled on one instance is refused by every
/// instance within this time.
const CACHE_TTL: Duration = Duration::from_secs(1);

/// The alias of the key SSE-KMS uses when a request names none and the bucket has no default
/// (AWS's `aws/s3` managed key). Created on first use.
pub const DEFAULT_ALIAS: &str = "aws/s3";

/// A keyring entry as listed (never its material).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KmsKeyInfo {
    /// Key id (a UUID).
    pub id: String,
    /// Alias without `alias/`, if any.
    pub alias: Option<String>,
    /// A note.
    pub description: String,
    /// Whether it may be used.
    pub enabled: bool,
    /// When it was created (database time).
    pub created: DateTime,
}

#[derive(Clone)]
struct Entry {
    info: KmsKeyInfo,
    sealed: Vec<u8>,
    master: String,
}

/// The keyring collection and its cache.
pub struct Keyring {
    coll: Collection<Document>,
    cache: Mutex<HashMap<String, (Instant, Option<Entry>)>>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keyring")
    }
}

fn aad(id: &str) -> Vec<u8> {
    format!("grids3 keyring entry {id}").into_bytes()
}

fn binary(bytes: Vec<u8>) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

fn entry_of(d: &Document) -> Option<Entry> {
    Some(Entry {
        info: KmsKeyInfo {
            id: d.get_str("_id").ok()?.to_owned(),
            alias: d.get_str("alias").ok().map(str::to_owned),
            description: d.get_str("description").unwrap_or_default().to_owned(),
            enabled: d.get_bool("enabled").unwrap_or(false),
            created: d
                .get_datetime("created")
                .copied()
                .unwrap_or(DateTime::from_millis(0)),
        },
        sealed: d.get_binary_generic("sealed").ok()?.clone(),
        master: d.get_str("master").ok()?.to_owned(),
    })
}

/// The key id a request's `x-amz-server-side-encryption-aws-kms-key-id` names: a bare id, a
/// key ARN, or an alias (`alias/<name>`, or its ARN). `Err(alias)` for an alias.
pub fn parse_key_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    let tail = if name.starts_with("arn:") {
        // arn:aws:kms:<region>:<account>:key/<id> or ...:alias/<name>
        name.splitn(6, ':').nth(5).unwrap_or_default()
    } else {
        name
    };
    match tail.strip_prefix("alias/") {
        Some(alias) => Err(alias.to_owned()),
        None => Ok(tail.strip_prefix("key/").unwrap_or(tail).to_owned()),
    }
}

/// Whether an operator-chosen key id is valid: KES's rule, letters, digits, `_` and `-`, 1 to
/// 64 characters. (So it can never look like an ARN or an alias.)
pub fn valid_key_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
}

/// Whether a key id is a UUID, as the ids grids3 generates are (responses name those keys by
/// ARN; operator-named keys by their name).
pub fn is_generated_id(id: &str) -> bool {
    uuid::Uuid::try_parse(id).is_ok_and(|u| u.hyphenated().to_string() == id)
}

impl Keyring {
    /// The keyring of `db`.
    pub fn new(db: &Database) -> Self {
        Self {
            coll: db.collection("__keyring"),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Creates the alias index: unique, so that two instances cannot give one alias to two
    /// keys (sparse: most keys have no alias).
    pub async fn ensure_indexes(&self) -> Result<(), SseError> {
        let model = mongodb::IndexModel::builder()
            .keys(doc! {"alias": 1})
            .options(
                mongodb::options::IndexOptions::builder()
                    .name("alias".to_owned())
                    .unique(true)
                    .sparse(true)
                    .build(),
            )
            .build();
        self.coll.create_index(model).await?;
        Ok(())
    }

    /// Creates a key (fresh random material sealed under the current master key), with the
    /// operator's id (checked by [`valid_key_id`] before) or a generated UUID.
    pub async fn create(
        &self,
        masters: &MasterKeys,
        id: Option<&str>,
        alias: Option<&str>,
        description: &str,
        now: DateTime,
    ) -> Result<KmsKeyInfo, SseError> {
        match id {
            Some(id) => match self.insert(masters, id, alias, description, now).await {
                // `_id` is unique: a second key of one name is refused, whichever instance
                // created the first.
                Err(SseError::Mongo(e)) if crate::dberror::is_duplicate_key(&e) => {
                    // Read fresh, not through the cache, which may hold a miss from before.
                    if self.coll.find_one(doc! {"_id": id}).await?.is_some() {
                        Err(SseError::KeyExists(id.to_owned()))
                    } else {
                        Err(SseError::AliasExists(alias.unwrap_or_default().to_owned()))
                    }
                }
                r => r,
            },
            None => {
                let id = uuid::Uuid::new_v4().to_string();
                self.insert(masters, &id, alias, description, now).await
            }
        }
    }

    async fn insert(
        &self,
        masters: &MasterKeys,
        id: &str,
        alias: Option<&str>,
        description: &str,
        now: DateTime,
    ) -> Result<KmsKeyInfo, SseError> {
        let master = masters.current.as_ref().ok_or(SseError::NoMasterKey)?;
        if let Some(a) = alias {
            if self.coll.find_one(doc! {"alias": a}).await?.is_some() {
                return Err(SseError::AliasExists(a.to_owned()));
            }
        }
        let material = random_key();
        let mut d = doc! {
            "_id": id,
            "description": description,
            "enabled": true,
            "created": now,
            "sealed": binary(wrap(&master.kek("keyring"), &material[..], &aad(id))),
            "master": master.id(),
        };
        if let Some(a) = alias {
            d.insert("alias", a);
        }
        let sealed = d.get("sealed").cloned();
        let mut landed = self.coll.insert_one(d.clone()).await.map(|_| ());
        if landed.is_ok()
            && crate::failpoint::limit("keyring.insert_replayed", id, Duration::ZERO)
                > Duration::ZERO
        {
            // A test's stand-in for the driver's retry of an insert whose first attempt
            // landed but whose answer was lost (a retryable write error under load).
            landed = self.coll.insert_one(d).await.map(|_| ());
        }
        match landed {
            Ok(()) => {}
            // Our own insert, landed by an attempt whose answer was lost and refused when the
            // driver retried it: the material is fresh random bytes, so only this call could
            // have sealed it. (CI saw `create-kms-key --id` answer "exists" for a new name.)
            Err(e)
                if crate::dberror::is_duplicate_key(&e)
                    && self
                        .coll
                        .find_one(doc! {"_id": id})
                        .await?
                        .is_some_and(|found| found.get("sealed") == sealed.as_ref()) => {}
            // The alias index refused it: another instance took the alias meanwhile. (A
            // duplicate `_id` of a named key is told apart by `create`.)
            Err(e)
                if crate::dberror::is_duplicate_key(&e)
                    && alias.is_some()
                    && is_generated_id(id)
                    && id != DEFAULT_ID =>
            {
                return Err(SseError::AliasExists(alias.unwrap_or_default().to_owned()))
            }
            Err(e) => return Err(e.into()),
        }
        Ok(KmsKeyInfo {
            id: id.to_owned(),
            alias: alias.map(str::to_owned),
            description: description.to_owned(),
            enabled: true,
            created: now,
        })
    }

    /// Every key, oldest first.
    pub async fn list(&self) -> Result<Vec<KmsKeyInfo>, SseError> {
        let docs: Vec<Document> = self
            .coll
            .find(doc! {})
            .sort(doc! {"created": 1, "_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs.iter().filter_map(entry_of).map(|e| e.info).collect())
    }

    /// Enables or disables a key; `false` when there is no such key.
    pub async fn set_enabled(&self, id: &str, enabled: bool) -> Result<bool, SseError> {
        let r = self
            .coll
            .update_one(doc! {"_id": id}, doc! {"$set": {"enabled": enabled}})
            .await?;
        self.cache.lock().expect("keyring cache").remove(id);
        Ok(r.matched_count == 1)
    }

    async fn entry(&self, id: &str) -> Result<Option<Entry>, SseError> {
        if let Some((at, e)) = self.cache.lock().expect("keyring cache").get(id) {
            if at.elapsed() < CACHE_TTL {
                return Ok(e.clone());
            }
        }
        let e = self
            .coll
            .find_one(doc! {"_id": id})
            .await?
            .as_ref()
            .and_then(entry_of);
        self.cache
            .lock()
            .expect("keyring cache")
            .insert(id.to_owned(), (Instant::now(), e.clone()));
        Ok(e)
    }

    /// The id a key name resolves to (aliases looked up), or `KmsNotFound`.
    pub async fn resolve(&self, name: &str) -> Result<String, SseError> {
        match parse_key_name(name) {
            Ok(id) => Ok(id),
            Err(alias) => self
                .coll
                .find_one(doc! {"alias": &alias})
                .projection(doc! {"_id": 1})
                .await?
                .and_then(|d| d.get_str("_id").ok().map(str::to_owned))
                .ok_or(SseError::KmsNotFound(name.to_owned())),
        }
    }

    /// [`Keyring::resolve`], except that `alias/aws/s3` (AWS's managed default key, which
    /// s3cmd and others name explicitly) is created on first use, as AWS creates it.
    pub async fn resolve_or_create_default(
        &self,
        masters: &MasterKeys,
        name: &str,
        now: DateTime,
    ) -> Result<String, SseError> {
        match parse_key_name(name) {
            Err(alias) if alias == DEFAULT_ALIAS && masters.current.is_some() => {
                self.default_key(masters, now).await
            }
            _ => self.resolve(name).await,
        }
    }

    /// The default key's id, created on first use (two instances racing create one key: its id
    /// is fixed, the loser's insert fails as a duplicate and it reads the winner's).
    pub async fn default_key(
        &self,
        masters: &MasterKeys,
        now: DateTime,
    ) -> Result<String, SseError> {
        const DEFAULT_ID: &str = "00000000-0000-4000-8000-0000000a3053";
        if self.entry(DEFAULT_ID).await?.is_some() {
            return Ok(DEFAULT_ID.to_owned());
        }
        match self
            .insert(
                masters,
                DEFAULT_ID,
                Some(DEFAULT_ALIAS),
                "default key of SSE-KMS",
                now,
            )
            .await
        {
            Ok(_) => {}
            Err(SseError::Mongo(e)) if crate::dberror::is_duplicate_key(&e) => {}
            Err(SseError::AliasExists(_)) => {}
            Err(e) => return Err(e),
        }
        self.cache.lock().expect("keyring cache").remove(DEFAULT_ID);
        Ok(DEFAULT_ID.to_owned())
    }

    /// A usable key's material: `KmsNotFound` for an unknown id, `KmsDisabled` for a disabled
    /// key.
    pub async fn material(
        &self,
        masters: &MasterKeys,
        id: &str,
    ) -> Result<crate::crypto::keys::Key, SseError> {
        let e = self
            .entry(id)
            .await?
            .ok_or_else(|| SseError::KmsNotFound(id.to_owned()))?;
        if !e.info.enabled {
            return Err(SseError::KmsDisabled(id.to_owned()));
        }
        let master = masters
            .by_id(&e.master)
            .ok_or_else(|| SseError::UnknownMaster(e.master.clone()))?;
        let m = unwrap(&master.kek("keyring"), &e.sealed, &aad(id)).ok_or(SseError::Unopenable)?;
        <[u8; 32]>::try_from(m.as_slice())
            .map(zeroize::Zeroizing::new)
            .map_err(|_| SseError::Unopenable)
    }

    /// Re-seals every entry sealed under a former master key under the current one; returns
    /// how many.
    pub async fn reseal(&self, masters: &MasterKeys) -> Result<u64, SseError> {
        let current = masters.current.as_ref().ok_or(SseError::NoMasterKey)?;
        let docs: Vec<Document> = self
            .coll
            .find(doc! {"master": {"$ne": current.id()}})
            .await?
            .try_collect()
            .await?;
        let mut n = 0;
        for d in docs {
            let Some(e) = entry_of(&d) else { continue };
            let Some(old) = masters.by_id(&e.master) else {
                return Err(SseError::UnknownMaster(e.master));
            };
            let m = unwrap(&old.kek("keyring"), &e.sealed, &aad(&e.info.id))
                .ok_or(SseError::Unopenable)?;
            let sealed = wrap(&current.kek("keyring"), &m, &aad(&e.info.id));
            let r = self
                .coll
                .update_one(
                    doc! {"_id": &e.info.id, "master": &e.master},
                    doc! {"$set": {"sealed": Bson::Binary(binary(sealed)), "master": current.id()}},
                )
                .await?;
            n += r.modified_count;
        }
        self.cache.lock().expect("keyring cache").clear();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_names() {
        assert_eq!(parse_key_name("1234"), Ok("1234".into()));
        assert_eq!(
            parse_key_name("arn:aws:kms:us-east-1:000000000000:key/ab-cd"),
            Ok("ab-cd".into())
        );
        assert_eq!(parse_key_name("alias/app"), Err("app".into()));
        assert_eq!(
            parse_key_name("arn:aws:kms:us-east-1:000000000000:alias/app"),
            Err("app".into())
        );
        assert_eq!(parse_key_name("testkey-1"), Ok("testkey-1".into()));
    }

    #[test]
    fn operator_key_ids() {
        for ok in ["testkey-1", "a", "A_b-9", &"k".repeat(64)] {
            assert!(valid_key_id(ok), "{ok}");
        }
        for bad in ["", "a/b", "alias/x", "a b", "é", "a.b", &"k".repeat(65)] {
            assert!(!valid_key_id(bad), "{bad}");
        }
        assert!(is_generated_id(DEFAULT_ID));
        assert!(is_generated_id(&uuid::Uuid::new_v4().to_string()));
        assert!(!is_generated_id("testkey-1"));
        assert!(!is_generated_id("0000000000004000800000000000a3053"));
    }
}
