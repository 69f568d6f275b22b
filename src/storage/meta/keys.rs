//! Access keys in `__accesskeys`, shared by every gateway instance. With a master key
//! configured, secrets are sealed with AES-256-GCM (key: the master key, see
//! `crypto::keys::Master::from_secret`; a fresh
//! 96-bit nonce per secret) and stored as `v1:<base64(nonce || ciphertext)>`; without one they
//! are stored as given, readable by anyone who can read the database.

use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::Engine;
use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};
use rand::RngCore;

use super::MetaStore;

/// Reads that decide whether a key signs go to the primary.
fn primary() -> mongodb::options::SelectionCriteria {
    mongodb::options::SelectionCriteria::ReadPreference(mongodb::options::ReadPreference::Primary)
}

/// The `_id` of the keys' version counter in `__infostore`.
const KEYS_VERSION: &str = "access-keys-version";

/// An access key as listed (never with its secret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyInfo {
    /// Access key id.
    pub id: String,
    /// Optional name.
    pub name: String,
    /// The root key can do everything.
    pub root: bool,
    /// When it was created.
    pub created: DateTime,
    /// The e-mail address ACL grants may name it by (`emailAddress=`), if one was given.
    pub email: Option<String>,
    /// A disabled key signs nothing: it is answered as an unknown key until enabled again.
    pub disabled: bool,
}

/// A key's secret and whether it is root.
#[derive(Clone)]
pub struct KeySecret {
    /// The secret access key.
    pub secret: zeroize::Zeroizing<String>,
    /// Root or not.
    pub root: bool,
    /// For an IAM user's key: the user's unique id (`AIDA...`) and the access key id of its
    /// account's root credentials. `None` for a key that is an account's own (every key the
    /// admin API makes, and the deployment's root key).
    pub user: Option<UserOfKey>,
    /// For a service account of an account's root credentials (MinIO's admin API): that
    /// account's root key id, which it acts for (`None` for every other key).
    pub account: Option<String>,
    /// Session policies (JSON texts) that cut what the key may do: a service account's
    /// (MinIO's admin API; stored as `inheritedSessions` and its own `session`), each of which
    /// must allow a request as well as its parent's policies. Empty: the key has its owner's
    /// rights, no more and no less.
    pub sessions: Vec<String>,
    /// When it stops signing (a service account's or a session's expiration), by the
    /// database's clock.
    pub expires: Option<DateTime>,
    /// For STS's temporary credentials: the session token they must be sent with, and when
    /// they were issued (`storage::meta::sts_keys`).
    pub token: Option<SessionToken>,
}

/// What a temporary credential's session carries besides its secret.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionToken {
    /// SHA-256 (hex) of the session token: the token itself is never stored.
    pub sha256: String,
    /// When it was issued, by the database's clock (`aws:TokenIssueTime`).
    pub issued: DateTime,
    /// Which STS action made it.
    pub kind: SessionKind,
    /// For GetSessionToken: the key that made it, which it never outlives (and whose
    /// session policies it carries as they are now).
    pub parent: Option<String>,
}

/// The STS action that made a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    /// AssumeRole.
    AssumeRole,
    /// AssumeRoleWithWebIdentity.
    WebIdentity,
    /// GetSessionToken: the caller's own rights, for a while.
    SessionToken,
}

impl SessionKind {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::AssumeRole => "AssumeRole",
            SessionKind::WebIdentity => "AssumeRoleWithWebIdentity",
            SessionKind::SessionToken => "GetSessionToken",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Self::AssumeRole, Self::WebIdentity, Self::SessionToken]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

/// The IAM user an access key belongs to, or the role a session acts as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserOfKey {
    /// The user's unique id (`AIDA...`), or the role's (`AROA...`) for a role's session.
    pub id: String,
    /// The access key id of the user's (or role's) account (its root credentials).
    pub account_key: String,
    /// For a role's session: its name (`RoleSessionName`), which its ARN ends with.
    pub role_session: Option<String>,
}

impl std::fmt::Debug for KeySecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySecret")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Errors of sealing and unsealing.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// The database failed.
    #[error(transparent)]
    Mongo(#[from] mongodb::error::Error),
    /// A sealed secret that does not open with the configured master key (or no master key).
    #[error("a stored secret cannot be decrypted: wrong or missing GRIDS3_MASTER_KEY")]
    Sealed,
}

fn cipher(master: &[u8; 32]) -> Aes256Gcm {
    Aes256Gcm::new_from_slice(master).expect("32-byte key")
}

impl MetaStore {
    pub(super) fn seal(&self, secret: &str) -> String {
        let Some(master) = self.masters.current.as_ref().map(|m| m.raw()) else {
            return secret.to_owned();
        };
        let mut nonce = [0u8; 12];
        rand::thread_rng().fill_bytes(&mut nonce);
        let ct = cipher(master)
            .encrypt(Nonce::from_slice(&nonce), secret.as_bytes())
            .expect("encryption");
        let mut blob = nonce.to_vec();
        blob.extend_from_slice(&ct);
        format!(
            "v1:{}",
            base64::engine::general_purpose::STANDARD.encode(blob)
        )
    }

    pub(super) fn unseal(&self, stored: &str) -> Result<String, KeyError> {
        self.unseal_with(stored).map(|(s, _)| s)
    }

    /// Opens a stored secret with the current master key or a former one; also says whether
    /// a former one was needed.
    fn unseal_with(&self, stored: &str) -> Result<(String, bool), KeyError> {
        let Some(b64) = stored.strip_prefix("v1:") else {
            return Ok((stored.to_owned(), false));
        };
        let blob = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| KeyError::Sealed)?;
        if blob.len() < 12 {
            return Err(KeyError::Sealed);
        }
        let candidates = self
            .masters
            .current
            .iter()
            .map(|m| (m.raw(), false))
            .chain(self.masters.previous.iter().map(|m| (m.raw(), true)));
        for (master, former) in candidates {
            if let Ok(pt) = cipher(master).decrypt(Nonce::from_slice(&blob[..12]), &blob[12..]) {
                return String::from_utf8(pt)
                    .map(|s| (s, former))
                    .map_err(|_| KeyError::Sealed);
            }
        }
        Err(KeyError::Sealed)
    }

    /// Re-seals under the current master key every access-key secret that only a former one
    /// opens (a master-key rotation); returns how many.
    pub async fn reseal_access_keys(&self) -> Result<u64, KeyError> {
        if self.masters.current.is_none() {
            return Ok(0);
        }
        let docs: Vec<Document> = self.keys.find(doc! {}).await?.try_collect().await?;
        let mut n = 0;
        for d in docs {
            let stored = d.get_str("secret").unwrap_or_default();
            if let Ok((secret, true)) = self.unseal_with(stored) {
                let r = self
                    .keys
                    .update_one(
                        doc! {"_id": d.get("_id").cloned(), "secret": stored},
                        doc! {"$set": {"secret": self.seal(&secret)}},
                    )
                    .await?;
                n += r.modified_count;
            }
        }
        Ok(n)
    }

    /// Stores (or updates) an access key and its secret.
    pub async fn put_access_key(
        &self,
        access_key: &str,
        secret: &str,
        root: bool,
        name: &str,
    ) -> mongodb::error::Result<()> {
        let update = doc! {
            "$set": {"secret": self.seal(secret), "root": root, "name": name},
            "$setOnInsert": {"created": self.clock.now()},
        };
        self.keys
            .update_one(doc! {"_id": access_key}, update)
            .upsert(true)
            .await?;
        if root {
            // A key made root is enabled (one disabled before it became root, say): the root
            // key is how an operator gets in. Except a former root key disabled after it lost
            // root, as one is when it leaked: configured as root again, it stays disabled (the
            // start-up says so) rather than fail open.
            self.keys
                .update_one(
                    doc! {"_id": access_key, "formerRoot": {"$ne": true}},
                    doc! {"$unset": {"disabled": ""}},
                )
                .await?;
        }
        self.keys_changed().await
    }

    /// Makes `access_key` the only root key: every other root key is demoted to an ordinary
    /// key (it keeps the buckets it owns), or deleted when `delete` is set. Returns the ids.
    pub async fn retire_other_roots(
        &self,
        access_key: &str,
        delete: bool,
    ) -> mongodb::error::Result<Vec<String>> {
        // A former root key demoted earlier is deleted too once deletion is asked for.
        let filter = if delete {
            doc! {"_id": {"$ne": access_key}, "$or": [{"root": true}, {"formerRoot": true}]}
        } else {
            doc! {"_id": {"$ne": access_key}, "root": true}
        };
        let old: Vec<String> = self
            .keys
            .find(filter.clone())
            .projection(doc! {"_id": 1})
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .iter()
            .filter_map(|d| d.get_str("_id").ok().map(str::to_owned))
            .collect();
        if delete {
            self.keys.delete_many(filter).await?;
        } else {
            self.keys
                .update_many(filter, doc! {"$set": {"root": false, "formerRoot": true}})
                .await?;
        }
        self.keys_changed().await?;
        Ok(old)
    }

    /// A new non-root key with a server-generated id (20 characters, A-Z and 2-7) and secret
    /// (40 base64 characters); returns the id and the secret, which is shown only this once.
    pub async fn create_access_key(&self, name: &str) -> mongodb::error::Result<(String, String)> {
        // The id and the secret are drawn independently: knowing an id (which is not secret)
        // tells nothing about its secret.
        let mut id_raw = [0u8; 18];
        rand::thread_rng().fill_bytes(&mut id_raw);
        let mut secret_raw = [0u8; 30];
        rand::thread_rng().fill_bytes(&mut secret_raw);
        const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        let id: String = std::iter::once("GK".to_owned())
            .chain(
                id_raw
                    .iter()
                    .map(|b| (ALPHA[(*b as usize) % 32] as char).to_string()),
            )
            .collect();
        let secret = base64::engine::general_purpose::STANDARD
            .encode(secret_raw)
            .replace(['+', '/'], "x");
        self.put_access_key(&id, &secret, false, name).await?;
        Ok((id, secret))
    }

    /// Gives a key the e-mail address that ACL grants may name it by (stored lower-case, as
    /// addresses compare); `false` when there is no such key.
    pub async fn set_key_email(&self, id: &str, email: &str) -> mongodb::error::Result<bool> {
        let r = self
            .keys
            .update_one(
                doc! {"_id": id},
                doc! {"$set": {"email": email.trim().to_ascii_lowercase()}},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// Every key that is an account's own (IAM users' keys are listed by their users),
    /// without secrets.
    pub async fn list_access_keys(&self) -> mongodb::error::Result<Vec<KeyInfo>> {
        let docs: Vec<Document> = self
            .keys
            // A root credentials' service account acts for its account: not an account's own.
            .find(doc! {"user": {"$exists": false}, "serviceAccount": {"$ne": true}, "sts": {"$exists": false}})
            .sort(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                Some(KeyInfo {
                    id: d.get_str("_id").ok()?.to_owned(),
                    name: d.get_str("name").unwrap_or_default().to_owned(),
                    root: d.get_bool("root").unwrap_or(false),
                    email: d.get_str("email").ok().map(str::to_owned),
                    disabled: d.get_bool("disabled").unwrap_or(false),
                    created: d
                        .get_datetime("created")
                        .ok()
                        .copied()
                        .unwrap_or(DateTime::from_millis(0)),
                })
            })
            .collect())
    }

    /// Deletes a key; `false` when there was none. The root key cannot be deleted here.
    pub async fn delete_access_key(&self, id: &str) -> mongodb::error::Result<bool> {
        let deleted = self
            .keys
            // An IAM user's key goes through its user (IAM DeleteAccessKey), which counts it.
            .delete_one(doc! {"_id": id, "root": {"$ne": true}, "user": {"$exists": false}})
            .await?
            .deleted_count
            == 1;
        if deleted {
            self.keys_changed().await?;
        }
        Ok(deleted)
    }

    /// Disables (or enables again) a key; `false` when there is no such key or it is root (the
    /// root key is never disabled: it is how an operator gets in).
    pub async fn set_key_disabled(&self, id: &str, disabled: bool) -> mongodb::error::Result<bool> {
        let r = self
            .keys
            .update_one(
                doc! {"_id": id, "root": {"$ne": true}, "user": {"$exists": false}},
                doc! {"$set": {"disabled": disabled}},
            )
            .await?;
        if r.matched_count == 1 {
            self.keys_changed().await?;
        }
        Ok(r.matched_count == 1)
    }

    /// The keys' version counter (`__infostore`, `_id: "access-keys-version"`; 0 before the
    /// first change): every change of a key through grids3 moves it, after the change, so that
    /// every instance's credentials cache (`auth::credentials`) notices within a second.
    pub async fn keys_version(&self) -> mongodb::error::Result<i64> {
        // From the primary whatever the URI's read preference: a secondary's lagging counter
        // would keep a disabled key signing past the stated bound.
        let d = self
            .info
            .find_one(doc! {"_id": KEYS_VERSION})
            .selection_criteria(primary())
            .await?;
        Ok(d.and_then(|d| d.get_i64("v").ok()).unwrap_or(0))
    }

    /// Moves the keys' version counter on; called after every change of a key, so that a
    /// cache that reads the counter after it also reads the key as changed.
    pub async fn keys_changed(&self) -> mongodb::error::Result<()> {
        let bump = || {
            self.info
                .update_one(doc! {"_id": KEYS_VERSION}, doc! {"$inc": {"v": 1_i64}})
                .upsert(true)
        };
        match bump().await {
            // Two first changes at once: one upsert inserts, the other finds it and moves it.
            Err(e) if super::is_duplicate_key(&e) => bump().await.map(|_| ()),
            r => r.map(|_| ()),
        }
    }

    /// The secret of an access key and whether it is root; `None` for an unknown or disabled
    /// key.
    pub async fn secret_of(&self, access_key: &str) -> Result<Option<KeySecret>, KeyError> {
        let Some(d) = self
            .keys
            // A service account past its expiration signs nothing (the database's time). A
            // session's is read anyway, so that its use is answered `ExpiredToken` as AWS
            // answers it (`Credentials::lookup` judges the time).
            .find_one(doc! {
                "_id": access_key,
                "disabled": {"$ne": true},
                "$or": [
                    {"expiration": {"$exists": false}},
                    {"expiration": {"$gt": self.clock.now()}},
                    {"sts": {"$exists": true}},
                ],
            })
            .selection_criteria(primary())
            .await?
        else {
            return Ok(None);
        };
        let stored = d.get_str("secret").unwrap_or_default();
        let token = d.get_document("sts").ok().and_then(|t| {
            Some(SessionToken {
                sha256: t.get_str("token").ok()?.to_owned(),
                issued: t.get_datetime("issued").ok().copied()?,
                kind: SessionKind::parse(t.get_str("kind").ok()?)?,
                parent: t.get_str("parent").ok().map(str::to_owned),
            })
        });
        if d.contains_key("sts") && token.is_none() {
            // A session whose record is damaged signs nothing (failing closed).
            return Ok(None);
        }
        let role = d.get_document("sts").ok().and_then(|t| {
            Some((
                t.get_str("role").ok()?.to_owned(),
                t.get_str("name").ok()?.to_owned(),
            ))
        });
        let user = match (role, d.get_str("user"), d.get_str("accountKey")) {
            (Some((role, name)), _, Ok(account)) => Some(UserOfKey {
                id: role,
                account_key: account.to_owned(),
                role_session: Some(name),
            }),
            (None, Ok(id), Ok(account)) => Some(UserOfKey {
                id: id.to_owned(),
                account_key: account.to_owned(),
                role_session: None,
            }),
            _ => None,
        };
        // A service account's session policies: those it inherited from the service account
        // that made it, then its own.
        let mut sessions: Vec<String> = d
            .get_array("inheritedSessions")
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        if let Ok(own) = d.get_str("session") {
            sessions.push(own.to_owned());
        }
        // A service account of an account's root credentials, or a session of them
        // (GetSessionToken), acts for that account.
        let acts_for = d.get_bool("serviceAccount").unwrap_or(false) || token.is_some();
        let account = match (&user, acts_for, d.get_str("accountKey")) {
            (None, true, Ok(a)) => Some(a.to_owned()),
            _ => None,
        };
        Ok(Some(KeySecret {
            account,
            secret: zeroize::Zeroizing::new(self.unseal(stored)?),
            // A user's key, a key with session policies (a service account), or a session, is
            // never root, whatever its document says.
            root: user.is_none()
                && sessions.is_empty()
                && token.is_none()
                && d.get_bool("root").unwrap_or(false),
            user,
            sessions,
            expires: d.get_datetime("expiration").ok().copied(),
            token,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seal_round_trip_and_wrong_key() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        // No I/O: a MetaStore needs a Database handle, which a client creates lazily.
        let client = rt
            .block_on(mongodb::Client::with_uri_str("mongodb://127.0.0.1:1"))
            .unwrap();
        let db = client.database("x");
        let mut m = MetaStore::unopened(&db, crate::storage::meta::DbClock::new(0));
        let keys = |k: &str| crate::crypto::keys::MasterKeys::new(Some(k), None, b"salt-salt");
        m.masters = keys("master one");
        let sealed = m.seal("s3cr3t");
        assert!(sealed.starts_with("v1:") && !sealed.contains("s3cr3t"));
        assert_eq!(m.unseal(&sealed).unwrap(), "s3cr3t");
        m.masters = keys("another");
        assert!(m.unseal(&sealed).is_err());
        m.masters = Default::default();
        assert!(m.unseal(&sealed).is_err());
        assert_eq!(m.unseal("plain").unwrap(), "plain");
    }
}
