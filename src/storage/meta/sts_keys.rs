//! STS's temporary credentials (issue 61): access keys in `__accesskeys` beside every other
//! key (signing looks keys up in one place, on every instance), marked with an `sts`
//! document: the SHA-256 of the session token they must be sent with (the token itself is
//! never stored), when they were issued, the action that made them and, for a role's
//! session, the role's unique id and the session's name. `expiration` is judged by the
//! database's clock at each use (`auth::credentials`).
//!
//! A session of a role names the role (`sts.role`) and its account (`accountKey`); one made
//! by GetSessionToken names its caller: `user` for an IAM user, else only `accountKey` (an
//! account's root credentials). Session policies are stored as `inheritedSessions`, as a
//! service account's are, and cut what the session may do in the same way.
//!
//! Expired sessions are kept for [`KEEP_EXPIRED`] after their expiration, so that their use
//! is answered `ExpiredToken` (as AWS answers it) rather than `InvalidAccessKeyId`, then
//! removed by the next session made on any instance (and by a TTL index on a real MongoDB).

use mongodb::bson::{doc, DateTime};
use mongodb::options::IndexOptions;
use mongodb::IndexModel;
use rand::RngCore;

use super::keys::SessionKind;
use super::MetaStore;

/// How long an expired session's record is kept.
pub const KEEP_EXPIRED: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// A session to store.
#[derive(Clone, Debug)]
pub struct NewSession<'a> {
    /// What made it.
    pub kind: SessionKind,
    /// The account it acts in (its root key id).
    pub account_key: &'a str,
    /// The role's unique id and the session's name (AssumeRole, web identity).
    pub role: Option<(&'a str, &'a str)>,
    /// The IAM user's unique id (GetSessionToken by a user).
    pub user: Option<&'a str>,
    /// The key that made it (GetSessionToken): the session signs only while that key does.
    pub parent: Option<&'a str>,
    /// Session policies (JSON texts), each of which must allow a request too.
    pub policies: Vec<String>,
    /// How long it lasts.
    pub duration: std::time::Duration,
}

/// Temporary credentials as made (the secret and token are shown only this once).
#[derive(Clone)]
pub struct Minted {
    /// `ASIA...`.
    pub access_key: String,
    /// The secret access key.
    pub secret: zeroize::Zeroizing<String>,
    /// The session token.
    pub token: zeroize::Zeroizing<String>,
    /// When they were issued (the database's clock).
    pub issued: DateTime,
    /// When they expire (the database's clock).
    pub expiration: DateTime,
}

impl std::fmt::Debug for Minted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Minted")
            .field("access_key", &self.access_key)
            .finish_non_exhaustive()
    }
}

/// SHA-256 (hex) of a session token, as stored and compared.
pub fn token_sha256(token: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(token.as_bytes()))
}

/// A new `ASIA` key id (16 characters of A-Z and 2-7 after it, as AWS's), a 40-character
/// secret and a session token (64 random bytes, URL-safe base64), drawn independently.
fn new_credentials() -> (String, String, String) {
    use base64::Engine;
    use rand::Rng;
    const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut rng = rand::rngs::OsRng;
    let mut id = "ASIA".to_owned();
    id.extend((0..16).map(|_| ALPHA[rng.gen_range(0..ALPHA.len())] as char));
    let mut raw = [0u8; 30];
    rng.fill_bytes(&mut raw);
    let secret = base64::engine::general_purpose::STANDARD
        .encode(raw)
        .replace(['+', '/'], "x");
    let mut t = [0u8; 64];
    rng.fill_bytes(&mut t);
    // A prefix says what it is (and lets `auth` refuse anything else cheaply).
    let token = format!(
        "G3ST{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t)
    );
    (id, secret, token)
}

impl MetaStore {
    /// Makes the index that removes expired sessions on a real MongoDB (a TTL index on
    /// `stsPurge`); the local database may not honour it, so [`MetaStore::insert_session`]
    /// removes them too.
    pub async fn ensure_session_indexes(&self) -> mongodb::error::Result<()> {
        self.keys
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"stsPurge": 1})
                    .options(
                        IndexOptions::builder()
                            .name("stsPurge".to_owned())
                            .expire_after(std::time::Duration::ZERO)
                            .sparse(true)
                            .build(),
                    )
                    .build(),
            )
            .await
            .map(|_| ())
    }

    /// Stores a new session and returns its credentials. A new id needs no cache to be
    /// forgotten anywhere (unknown ids are never cached), so the keys' version counter does
    /// not move.
    pub async fn insert_session(&self, s: NewSession<'_>) -> mongodb::error::Result<Minted> {
        let issued = self.clock.now();
        let ms = |d: std::time::Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        let expiration =
            DateTime::from_millis(issued.timestamp_millis().saturating_add(ms(s.duration)));
        let purge = DateTime::from_millis(
            expiration
                .timestamp_millis()
                .saturating_add(ms(KEEP_EXPIRED)),
        );
        let (id, secret, token) = new_credentials();
        let mut sts = doc! {
            "token": token_sha256(&token),
            "issued": issued,
            "kind": s.kind.as_str(),
        };
        if let Some(parent) = s.parent {
            sts.insert("parent", parent);
        }
        if let Some((role, name)) = s.role {
            sts.insert("role", role);
            sts.insert("name", name);
        }
        let mut d = doc! {
            "_id": &id,
            "secret": self.seal(&secret),
            "root": false,
            "name": "",
            "accountKey": s.account_key,
            "created": issued,
            "expiration": expiration,
            "stsPurge": purge,
            "sts": sts,
            "inheritedSessions": &s.policies,
        };
        if let Some(u) = s.user {
            d.insert("user", u);
        }
        self.keys.insert_one(d).await?;
        // Sessions long expired go (bounded by the index on `stsPurge`).
        if let Err(e) = self
            .keys
            .delete_many(doc! {"stsPurge": {"$lt": issued}, "sts": {"$exists": true}})
            .await
        {
            tracing::debug!(error = %e, "could not remove expired sessions");
        }
        Ok(Minted {
            access_key: id,
            secret: zeroize::Zeroizing::new(secret),
            token: zeroize::Zeroizing::new(token),
            issued,
            expiration,
        })
    }

    /// Ends the temporary credentials `access_key` whose token is `token` (a console
    /// session's, at its logout): removed at once, so that links it presigned die with it;
    /// every instance's cache learns of it through the keys' version counter. Only a session
    /// key with that token is removed (`false`: none was).
    pub async fn end_session_key(
        &self,
        access_key: &str,
        token: &str,
    ) -> mongodb::error::Result<bool> {
        let gone = self
            .keys
            .delete_one(doc! {"_id": access_key, "sts.token": token_sha256(token)})
            .await?
            .deleted_count
            == 1;
        if gone {
            self.keys_changed().await?;
        }
        Ok(gone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_have_aws_shapes_and_are_independent() {
        let (id, secret, token) = new_credentials();
        assert_eq!(id.len(), 20);
        assert!(id.starts_with("ASIA"));
        assert_eq!(secret.len(), 40);
        assert!(token.starts_with("G3ST") && token.len() > 80);
        let (id2, secret2, token2) = new_credentials();
        assert_ne!((id, secret, token.clone()), (id2, secret2, token2));
        assert_eq!(token_sha256(&token).len(), 64);
    }
}
