//! The master key, the keys derived from it, and SSE-C's key handling.

use hkdf::Hkdf;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// A master key: `GRIDS3_MASTER_KEY` (any string) hashed to 256 bits, as the access-key
/// secrets have always been sealed (`storage::meta::keys`).
#[derive(Clone)]
pub struct Master {
    key: [u8; 32],
    id: String,
}

impl std::fmt::Debug for Master {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Master")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Master {
    /// The master key of a configured secret.
    pub fn from_secret(secret: &str) -> Self {
        let key: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&key).expect("any key length");
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
    pub fn kek(&self, purpose: &str) -> [u8; 32] {
        derive(&self.key, None, &format!("grids3 {purpose} kek"))
    }

    /// The raw 256-bit key (the access-key secrets' sealing key).
    pub fn raw(&self) -> &[u8; 32] {
        &self.key
    }
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
    /// From `GRIDS3_MASTER_KEY` and `GRIDS3_PREVIOUS_MASTER_KEYS` (comma-separated).
    pub fn new(current: Option<&str>, previous: Option<&str>) -> Self {
        Self {
            current: current.filter(|s| !s.is_empty()).map(Master::from_secret),
            previous: previous
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(Master::from_secret)
                .collect(),
        }
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
pub fn derive(ikm: &[u8], salt: Option<&[u8]>, info: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    Hkdf::<Sha256>::new(salt, ikm)
        .expand(info.as_bytes(), &mut out)
        .expect("32 bytes is a valid HKDF length");
    out
}

/// SSE-C: the object's data key, derived from the customer's key and the object's random salt
/// (the customer's key itself is never stored, nor used directly on the data).
pub fn customer_data_key(customer_key: &[u8; 32], salt: &[u8]) -> [u8; 32] {
    derive(customer_key, Some(salt), "grids3 sse-c data key")
}

/// SSE-C: the salted verifier stored with the object, which tells a wrong key from a corrupt
/// object without revealing the key.
pub fn customer_verifier(customer_key: &[u8; 32], salt: &[u8]) -> [u8; 32] {
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

    #[test]
    fn masters_have_stable_public_ids() {
        let a = Master::from_secret("alpha");
        assert_eq!(a.id(), Master::from_secret("alpha").id());
        assert_ne!(a.id(), Master::from_secret("beta").id());
        assert_eq!(a.id().len(), 16);
        assert_ne!(a.kek("sse-s3"), a.kek("keyring"));
        let keys = MasterKeys::new(Some("new"), Some("old1, old2"));
        assert_eq!(keys.previous.len(), 2);
        assert!(keys.by_id(Master::from_secret("old2").id()).is_some());
        assert!(keys.by_id(Master::from_secret("other").id()).is_none());
    }

    #[test]
    fn customer_keys_derive_per_salt() {
        let k = [3u8; 32];
        assert_ne!(customer_data_key(&k, b"s1"), customer_data_key(&k, b"s2"));
        assert_ne!(customer_data_key(&k, b"s1"), customer_verifier(&k, b"s1"));
        assert!(same(
            &customer_verifier(&k, b"s"),
            &customer_verifier(&k, b"s")
        ));
        assert_ne!(opaque_etag(&k, &[0; 16]), opaque_etag(&[4u8; 32], &[0; 16]));
    }
}
