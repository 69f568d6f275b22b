//! AES-256-GCM for chunks and for wrapped keys.

use aes_gcm::aead::{AeadInPlace, KeyInit};
use aes_gcm::{Aes256Gcm, Nonce, Tag};
use rand::RngCore;

/// Where a chunk sits: what its seal binds, so that a chunk moved to another file or
/// position, replayed from another segment, or cut off at the end does not open. (The GridFS
/// engine's `ChunkBinding`, which storage's adapter, `storage::objects::sealed`, passes on.)
#[derive(Clone, Copy, Debug)]
pub struct ChunkAt<'a> {
    /// The file's id, as bytes.
    pub file_id: &'a [u8],
    /// The segment: the `n` its first chunk was written at.
    pub segment: i64,
    /// The chunk's index within its segment.
    pub index: i64,
    /// Whether it is the segment's last chunk.
    pub last: bool,
}

/// Why a chunk did not seal or open.
#[derive(Debug, PartialEq, Eq)]
pub enum CipherError {
    /// Too large for one AES-GCM message.
    TooLarge,
    /// It does not open where it is said to be (tampered with, moved, or another key).
    Unauthentic,
}

/// The authentication tag every sealed chunk carries.
pub const TAG_LEN: usize = 16;

/// Seals each GridFS chunk on its own with the object's data key. The nonce is the chunk's
/// segment and index (unique per data key: segments are distinct staging ranges, see
/// `ChunkAt`), and the associated data binds the file id, the segment, the index and
/// whether the chunk is its segment's last, so a chunk swapped, replayed from another
/// position or object, or a segment cut short, fails to open.
pub struct ChunkCipher {
    // ring's AES-GCM (BoringSSL's assembly): about 3x the throughput of the RustCrypto
    // implementation on the same CPU, which kept an encrypted GET below 0.8x of a plain one
    // (see BENCHMARKS.md). ring is already linked, through rustls.
    key: ring::aead::LessSafeKey,
}

impl std::fmt::Debug for ChunkCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChunkCipher")
    }
}

impl ChunkCipher {
    /// A chunk cipher under a 256-bit data key.
    pub fn new(data_key: &[u8; 32]) -> Self {
        let key = ring::aead::UnboundKey::new(&ring::aead::AES_256_GCM, data_key)
            .expect("a 32-byte AES-256 key");
        Self {
            key: ring::aead::LessSafeKey::new(key),
        }
    }

    fn nonce_and_aad(at: &ChunkAt<'_>) -> Result<([u8; 12], Vec<u8>), CipherError> {
        let index = u32::try_from(at.index).map_err(|_| CipherError::Unauthentic)?;
        let mut nonce = [0u8; 12];
        nonce[..8].copy_from_slice(&at.segment.to_be_bytes());
        nonce[8..].copy_from_slice(&index.to_be_bytes());
        let mut aad = Vec::with_capacity(48 + at.file_id.len());
        aad.extend_from_slice(b"grids3/sse/chunk/v1\0");
        aad.extend_from_slice(&(at.file_id.len() as u32).to_be_bytes());
        aad.extend_from_slice(at.file_id);
        aad.extend_from_slice(&at.segment.to_be_bytes());
        aad.extend_from_slice(&at.index.to_be_bytes());
        aad.push(u8::from(at.last));
        Ok((nonce, aad))
    }
}

impl ChunkCipher {
    /// Seals `data` (a chunk's plain text) in place and returns its tag ([`TAG_LEN`] bytes).
    pub fn seal(&self, at: &ChunkAt<'_>, data: &mut [u8]) -> Result<Vec<u8>, CipherError> {
        use ring::aead::{Aad, Nonce};
        let (nonce, aad) = Self::nonce_and_aad(at)?;
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad[..]),
                data,
            )
            .map_err(|_| CipherError::TooLarge)?;
        Ok(tag.as_ref().to_vec())
    }

    /// Opens `data` (plain text then tag) in place: its first `len - TAG_LEN` bytes are then
    /// the plain text.
    pub fn open(&self, at: &ChunkAt<'_>, data: &mut [u8]) -> Result<(), CipherError> {
        use ring::aead::{Aad, Nonce};
        if data.len() < TAG_LEN {
            return Err(CipherError::Unauthentic);
        }
        let (nonce, aad) = Self::nonce_and_aad(at)?;
        self.key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(&aad[..]),
                data,
            )
            .map(|_| ())
            .map_err(|_| CipherError::Unauthentic)
    }
}

/// Seals a small secret (a data key, a keyring key) under `kek`: `nonce || ciphertext || tag`
/// with a fresh random nonce, bound to `aad`.
pub fn wrap(kek: &[u8; 32], secret: &[u8], aad: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    rand::thread_rng().fill_bytes(&mut nonce);
    let mut buf = zeroize::Zeroizing::new(secret.to_vec());
    let tag = Aes256Gcm::new_from_slice(kek)
        .expect("32-byte key")
        .encrypt_in_place_detached(Nonce::from_slice(&nonce), aad, &mut buf)
        .expect("a small secret seals");
    let mut out = nonce.to_vec();
    out.extend_from_slice(&buf);
    out.extend_from_slice(&tag);
    out
}

/// Opens what [`wrap`] sealed; `None` when it does not open (another key, another `aad`, or
/// tampered with).
pub fn unwrap(kek: &[u8; 32], blob: &[u8], aad: &[u8]) -> Option<zeroize::Zeroizing<Vec<u8>>> {
    if blob.len() < 12 + TAG_LEN {
        return None;
    }
    let (nonce, rest) = blob.split_at(12);
    let (ct, tag) = rest.split_at(rest.len() - TAG_LEN);
    let mut buf = zeroize::Zeroizing::new(ct.to_vec());
    Aes256Gcm::new_from_slice(kek)
        .expect("32-byte key")
        .decrypt_in_place_detached(
            Nonce::from_slice(nonce),
            aad,
            &mut buf,
            Tag::from_slice(tag),
        )
        .ok()?;
    Some(buf)
}

/// 32 random bytes from the OS-seeded generator.
pub fn random_key() -> crate::crypto::keys::Key {
    let mut k = zeroize::Zeroizing::new([0u8; 32]);
    rand::rngs::OsRng.fill_bytes(&mut *k);
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(file: &[u8], segment: i64, index: i64, last: bool) -> ChunkAt<'_> {
        ChunkAt {
            file_id: file,
            segment,
            index,
            last,
        }
    }

    #[test]
    fn a_chunk_opens_only_where_it_was_sealed() {
        let c = ChunkCipher::new(&[7u8; 32]);
        let mut data = b"hello chunk".to_vec();
        let tag = c.seal(&at(b"file", 0, 3, false), &mut data).unwrap();
        data.extend_from_slice(&tag);
        assert_eq!(data.len(), 11 + TAG_LEN);
        assert_ne!(&data[..11], b"hello chunk");
        for wrong in [
            at(b"file", 0, 4, false),
            at(b"file", 0, 3, true),
            at(b"fil2", 0, 3, false),
            at(b"file", -5, 3, false),
        ] {
            let mut d = data.clone();
            assert!(matches!(
                c.open(&wrong, &mut d),
                Err(CipherError::Unauthentic)
            ));
        }
        let mut flipped = data.clone();
        flipped[2] ^= 1;
        assert!(c.open(&at(b"file", 0, 3, false), &mut flipped).is_err());
        let other = ChunkCipher::new(&[8u8; 32]);
        assert!(other
            .open(&at(b"file", 0, 3, false), &mut data.clone())
            .is_err());
        c.open(&at(b"file", 0, 3, false), &mut data).unwrap();
        assert_eq!(&data[..11], b"hello chunk");
    }

    #[test]
    fn wrapped_keys_open_with_their_kek_and_aad_only() {
        let blob = wrap(&[1u8; 32], &[9u8; 32], b"ctx");
        assert_eq!(
            unwrap(&[1u8; 32], &blob, b"ctx"),
            Some(zeroize::Zeroizing::new(vec![9u8; 32]))
        );
        assert_eq!(unwrap(&[2u8; 32], &blob, b"ctx"), None);
        assert_eq!(unwrap(&[1u8; 32], &blob, b"other"), None);
    }
}
