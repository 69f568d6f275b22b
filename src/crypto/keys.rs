//! The master key, the keys derived from it, and SSE-C's key handling.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use zeroize::Zeroizing;

/// A 256-bit key that is overwritten with zeros when dropped.
pub type Key = Zeroizing<[u8; 32]>;

/// A master key, from `GRIDS3_MASTER_KEY` (see [`Master::from_secret`]).
#[derive(Clone)]
pub struct Master {
    key: Key,
    id: String,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Master")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// argon2id's cost for a passphrase: 19 MiB, 2 passes, one lane (OWASP's first choice). Paid
/// once per key at start-up, and by anyone guessing offline, once per guess.
const ARGON2_MEMORY_KIB: u32 = 19 * 1024;
const ARGON2_PASSES: u32 = 2;

impl Master {
    /// The master key of a configured secret:
    /// - 32 random bytes, written as 64 hex digits or in base64 (`openssl rand -hex 32`), are
    ///   the key itself;
    /// - anything else is a passphrase, stretched with argon2id and the deployment's salt
    ///   (`MetaStore::deployment_salt`), so that the key id stored beside what it seals does
    ///   not let a reader of the database test guesses cheaply.
    pub fn from_secret(secret: &str, salt: &[u8]) -> Self {
        let key = match raw_key(secret) {
            Some(k) => k,
            None => {
                let params = argon2::Params::new(ARGON2_MEMORY_KIB, ARGON2_PASSES, 1, Some(32))
                    .expect("valid argon2 parameters");
                let mut out = Zeroizing::new([0u8; 32]);
                argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
                    .hash_password_into(secret.as_bytes(), salt, &mut *out)
                    .expect("a 32-byte argon2 output with a salt of at least 8 bytes");
                out
            }
        };
        Self::of_key(key)
    }

    /// The derivation before argon2id: SHA-256 of the secret, whatever its form. Still opens
    /// what it sealed, as a former key, until `grids3 admin rotate-master-key` re-seals it.
    pub fn legacy(secret: &str) -> Self {
        Self::of_key(Zeroizing::new(Sha256::digest(secret.as_bytes()).into()))
    }

    fn of_key(key: Key) -> Self {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&*key).expect("any key length");
        mac.update(b"grids3 master key id");
        let id = hex::encode(&mac.finalize().into_bytes()[..8]);
        Self { key, id }
    }

    /// A public name of the key (16 hex digits of an HMAC under it): stored beside what it
    /// seals, so that rotation finds what is still sealed under a former key.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The key-encryption key for one purpose (`sse-s3`, `keyring`), derived with HKDF.
    pub fn kek(&self, purpose: &str) -> Key {
        derive(&*self.key, None, &format!("grids3 {purpose} kek"))
    }

    /// The raw 256-bit key (the access-key secrets' sealing key).
    pub fn raw(&self) -> &[u8; 32] {
        &self.key
    }
}

/// 32 bytes written as 64 hex digits or in base64, if `secret` is one of those.
fn raw_key(secret: &str) -> Option<Key> {
    let s = secret.trim();
    let bytes = if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        hex::decode(s).ok()?
    } else {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.decode(s).ok()?
    };
    let bytes = Zeroizing::new(bytes);
    <[u8; 32]>::try_from(bytes.as_slice())
        .ok()
        .map(Zeroizing::new)
}

/// The configured master key and the former ones still accepted for reading (during a
/// rotation, see `grids3 admin rotate-master-key`).
#[derive(Clone, Debug, Default)]
pub struct MasterKeys {
    /// Seals everything new.
    pub current: Option<Master>,
    /// Open what they sealed until it is re-sealed.
    pub previous: Vec<Master>,
}

impl MasterKeys {
    /// From `GRIDS3_MASTER_KEY` and `GRIDS3_PREVIOUS_MASTER_KEYS` (comma-separated), with the
    /// deployment's salt. Each secret's legacy derivation ([`Master::legacy`]) is a former key
    /// too, so a deployment that sealed under it keeps working until it rotates.
    pub fn new(current: Option<&str>, previous: Option<&str>, salt: &[u8]) -> Self {
        let current_secret = current.filter(|s| !s.is_empty());
        let previous: Vec<&str> = previous
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        let mut former: Vec<Master> = previous
            .iter()
            .map(|p| Master::from_secret(p, salt))
            .collect();
        former.extend(
            current_secret
                .iter()
                .chain(&previous)
                .map(|s| Master::legacy(s)),
        );
        let current = current_secret.map(|s| Master::from_secret(s, salt));
        let mut seen: Vec<String> = current.iter().map(|m| m.id().to_owned()).collect();
        former.retain(|m| {
            let new = !seen.contains(&m.id().to_owned());
            seen.push(m.id().to_owned());
            new
        });
        Self {
            current,
            previous: former,
        }
    }

    /// The ids of every key given, current and former.
    pub fn ids(&self) -> Vec<String> {
        self.current
            .iter()
            .chain(&self.previous)
            .map(|m| m.id().to_owned())
            .collect()
    }

    /// The master key with this id, current or former.
    pub fn by_id(&self, id: &str) -> Option<&Master> {
        self.current
            .iter()
            .chain(&self.previous)
            .find(|m| m.id() == id)
    }
}

/// HKDF-SHA-256 of `ikm` with `salt`, for `info`, 32 bytes.
pub fn derive(ikm: &[u8], salt: Option<&[u8]>, info: &str) -> Key {
    let mut out = Zeroizing::new([0u8; 32]);
    Hkdf::<Sha256>::new(salt, ikm)
        .expand(info.as_bytes(), &mut *out)
        .expect("32 bytes is a valid HKDF length");
    out
}

/// SSE-C: the object's data key, derived from the customer's key and the object's random salt
/// (the customer's key itself is never stored, nor used directly on the data).
pub fn customer_data_key(customer_key: &[u8; 32], salt: &[u8]) -> Key {
    derive(customer_key, Some(salt), "grids3 sse-c data key")
}

/// SSE-C: the salted verifier stored with the object, which tells a wrong key from a corrupt
/// object without revealing the key.
pub fn customer_verifier(customer_key: &[u8; 32], salt: &[u8]) -> Key {
    derive(customer_key, Some(salt), "grids3 sse-c verifier")
}

/// Whether two byte strings are equal, in constant time.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

/// The ETag of an SSE-C or SSE-KMS object: like AWS's, not the MD5 of the plain text (which
/// would let anyone who can list the bucket confirm a guess of the content), but stable for the
/// object: an HMAC of the MD5 under its data key, 32 hex digits.
pub fn opaque_etag(data_key: &[u8; 32], md5: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(data_key).expect("any key length");
    mac.update(b"grids3 etag");
    mac.update(md5);
    hex::encode(&mac.finalize().into_bytes()[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SALT: &[u8] = b"deployment-salt!";

    #[test]
    fn masters_have_stable_public_ids() {
        let a = Master::from_secret("alpha", SALT);
        assert_eq!(a.id(), Master::from_secret("alpha", SALT).id());
        assert_ne!(a.id(), Master::from_secret("beta", SALT).id());
        assert_ne!(
            a.id(),
            Master::from_secret("alpha", b"another deployment").id()
        );
        assert_eq!(a.id().len(), 16);
        assert_ne!(a.kek("sse-s3"), a.kek("keyring"));
        let keys = MasterKeys::new(Some("new"), Some("old1, old2"), SALT);
        // old1, old2, and the legacy derivations of new, old1 and old2.
        assert_eq!(keys.previous.len(), 5);
        assert!(keys.by_id(Master::from_secret("old2", SALT).id()).is_some());
        assert!(keys.by_id(Master::legacy("new").id()).is_some());
        assert!(keys
            .by_id(Master::from_secret("other", SALT).id())
            .is_none());
    }

    #[test]
    fn random_keys_are_used_as_they_are_and_passphrases_are_stretched() {
        let hex_key = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
        let m = Master::from_secret(hex_key, SALT);
        assert_eq!(m.raw()[..], hex::decode(hex_key).unwrap()[..]);
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        assert_eq!(Master::from_secret(&b64, SALT).raw(), &[7u8; 32]);
        // A passphrase: neither its SHA-256 (the legacy derivation) nor salt-independent.
        let p = Master::from_secret("correct horse", SALT);
        assert_ne!(p.raw(), Master::legacy("correct horse").raw());
        let sha: [u8; 32] = Sha256::digest(b"correct horse").into();
        assert_eq!(Master::legacy("correct horse").raw(), &sha);
    }

    #[test]
    fn customer_keys_derive_per_salt() {
        let k = [3u8; 32];
        assert_ne!(customer_data_key(&k, b"s1"), customer_data_key(&k, b"s2"));
        assert_ne!(customer_data_key(&k, b"s1"), customer_verifier(&k, b"s1"));
        assert!(same(
            &customer_verifier(&k, b"s")[..],
            &customer_verifier(&k, b"s")[..]
        ));
        assert_ne!(opaque_etag(&k, &[0; 16]), opaque_etag(&[4u8; 32], &[0; 16]));
    }
}
