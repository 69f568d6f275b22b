//! The payload encryption of MinIO's admin API (madmin-go `EncryptData` / `DecryptData`): a
//! password-derived key and an sio-go (DARE v2 style) stream of 16 KiB packages.
//!
//! ```text
//! salt (32) | id (1) | stream nonce (8) | package 1 (ciphertext || 16-byte tag) | ... | final package
//! ```
//!
//! - id `0`: Argon2id (t=1, m=64 MiB, p=4, 32 bytes) + AES-256-GCM; `1`: Argon2id +
//!   ChaCha20-Poly1305; `2`: PBKDF2-HMAC-SHA256 (8192 rounds) + AES-256-GCM (FIPS builds of
//!   mc). The password is the secret key of the credentials that signed the request.
//! - Every package but the last holds exactly 16384 bytes of plaintext; the last holds 0 to
//!   16384 and is always written (an empty payload is one bare tag).
//! - Package `i` (from 1) is sealed with the nonce `stream_nonce || le32(i)` and the associated
//!   data `flag || T`, where `T` is the tag of the empty message under the nonce
//!   `stream_nonce || le32(0)` and `flag` is `0x80` for the final package, `0x00` before it.
//!
//! Deriving a key costs 64 MiB and tens of milliseconds: callers verify the request's
//! signature first and bound how many derivations run at once (`super::entry`).

use ring::aead::{self, Aad, LessSafeKey, Nonce, UnboundKey};

/// The header: salt, id, stream nonce.
const HEADER: usize = 32 + 1 + 8;
/// Plaintext bytes in every package but the last.
const PACKAGE: usize = 16384;
/// The tag that follows every package's ciphertext.
const TAG: usize = 16;

/// Argon2id + AES-256-GCM: what we answer with (minio-py reads ids 0 and 1 only).
const ARGON2_AES: u8 = 0;
/// Argon2id + ChaCha20-Poly1305 (mc on machines without AES instructions).
const ARGON2_CHACHA: u8 = 1;
/// PBKDF2-HMAC-SHA256 + AES-256-GCM (mc's FIPS builds).
const PBKDF2_AES: u8 = 2;

/// Why a payload could not be opened (no detail is sent: a wrong password and a forged
/// payload look the same).
#[derive(Debug, PartialEq, Eq)]
pub struct NotAuthentic;

fn derive(id: u8, password: &[u8], salt: &[u8]) -> Result<[u8; 32], NotAuthentic> {
    let mut key = [0u8; 32];
    match id {
        ARGON2_AES | ARGON2_CHACHA => {
            let params = argon2::Params::new(64 * 1024, 1, 4, Some(32)).expect("valid parameters");
            argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
                .hash_password_into(password, salt, &mut key)
                .map_err(|_| NotAuthentic)?;
        }
        PBKDF2_AES => ring::pbkdf2::derive(
            ring::pbkdf2::PBKDF2_HMAC_SHA256,
            std::num::NonZeroU32::new(8192).expect("non-zero"),
            salt,
            password,
            &mut key,
        ),
        _ => return Err(NotAuthentic),
    }
    Ok(key)
}

fn cipher(id: u8, key: &[u8; 32]) -> LessSafeKey {
    let alg = if id == ARGON2_CHACHA {
        &aead::CHACHA20_POLY1305
    } else {
        &aead::AES_256_GCM
    };
    LessSafeKey::new(UnboundKey::new(alg, key).expect("32-byte key"))
}

fn nonce(stream: &[u8], seq: u32) -> Nonce {
    let mut n = [0u8; 12];
    n[..8].copy_from_slice(stream);
    n[8..].copy_from_slice(&seq.to_le_bytes());
    Nonce::assume_unique_for_key(n)
}

/// The 17 bytes of associated data: a flag byte (set per package) and the tag of the empty
/// message under sequence number 0.
fn associated(key: &LessSafeKey, stream: &[u8]) -> [u8; 17] {
    let tag = key
        .seal_in_place_separate_tag(nonce(stream, 0), Aad::empty(), &mut [])
        .expect("sealing nothing");
    let mut ad = [0u8; 17];
    ad[1..].copy_from_slice(tag.as_ref());
    ad
}

/// Opens a payload sealed with `password`.
pub fn decrypt(password: &str, data: &[u8]) -> Result<Vec<u8>, NotAuthentic> {
    // A header alone (minio-py 7.2.20's encryption of an empty payload) has no final tag:
    // refused as sio-go refuses it, so nothing unauthenticated is ever accepted.
    if data.len() < HEADER + TAG {
        return Err(NotAuthentic);
    }
    let (salt, id) = (&data[..32], data[32]);
    open(&cipher(id, &derive(id, password.as_bytes(), salt)?), data)
}

/// Opens a payload (header included, at least a header and a tag long) with its key.
fn open(key: &LessSafeKey, data: &[u8]) -> Result<Vec<u8>, NotAuthentic> {
    let stream = &data[33..HEADER];
    let mut ad = associated(key, stream);
    let mut rest = &data[HEADER..];
    let mut out = Vec::with_capacity(rest.len());
    let mut seq: u32 = 1;
    loop {
        // What is left after a full package is more data; otherwise this is the last one.
        let last = rest.len() <= PACKAGE + TAG;
        let (pkg, tail) = rest.split_at(if last { rest.len() } else { PACKAGE + TAG });
        if pkg.len() < TAG {
            return Err(NotAuthentic);
        }
        ad[0] = if last { 0x80 } else { 0x00 };
        let mut buf = pkg.to_vec();
        let plain = key
            .open_in_place(nonce(stream, seq), Aad::from(&ad), &mut buf)
            .map_err(|_| NotAuthentic)?;
        out.extend_from_slice(plain);
        if last {
            return Ok(out);
        }
        rest = tail;
        seq = seq.checked_add(1).ok_or(NotAuthentic)?;
    }
}

/// Seals `plain` with `password` as madmin-go does, with id 0 (Argon2id + AES-256-GCM), which
/// every client reads.
pub fn encrypt(password: &str, plain: &[u8]) -> Vec<u8> {
    use rand::RngCore;
    let mut header = [0u8; HEADER];
    rand::rngs::OsRng.fill_bytes(&mut header[..32]);
    header[32] = ARGON2_AES;
    rand::rngs::OsRng.fill_bytes(&mut header[33..]);
    let key = derive(ARGON2_AES, password.as_bytes(), &header[..32]).expect("argon2 parameters");
    seal(&cipher(ARGON2_AES, &key), &header, plain)
}

fn seal(key: &LessSafeKey, header: &[u8; HEADER], plain: &[u8]) -> Vec<u8> {
    let stream = &header[33..];
    let mut ad = associated(key, stream);
    let packages = plain.len().div_ceil(PACKAGE).max(1);
    let mut out = Vec::with_capacity(HEADER + plain.len() + packages * TAG);
    out.extend_from_slice(header);
    for i in 0..packages {
        let chunk = &plain[(i * PACKAGE).min(plain.len())..((i + 1) * PACKAGE).min(plain.len())];
        ad[0] = if i + 1 == packages { 0x80 } else { 0x00 };
        let mut buf = chunk.to_vec();
        key.seal_in_place_append_tag(nonce(stream, i as u32 + 1), Aad::from(&ad), &mut buf)
            .expect("sealing");
        out.extend_from_slice(&buf);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // madmin-go's `decryptDataTests` (encrypt_test.go): produced by MinIO's Go code.
    const V1: &str = "828aa81599df0651c0461adb82283e8b89956baee9f6e719947ef9cddc849028001dc9d3ac0938f66b07bacc9751437e1985f8a9763c240e81";
    const V2: &str = concat!(
        "1793c71df6647860437134073c15688cbb15961dc0758c7ee1225e66e79c724c00d790dba9c671eae89da2c736d858286ac9bd027abacc6443",
        "0375cd41b63b67c070c7fba475a8dd66ae65ba905176c48cbe6f734fc74df87343d8ccff54bada4aeb0a04bd021633ebe6c4768e23f5dea142",
        "561d4fe3f90ed59d13dc5fb3a585dadec1742325291b9c81692bdd3420b2428127f8195e0ecd9a1c9237712ed67af7339fbbf7ff3ee1c516e1",
        "f81e69d933e057b30997e7274a2c9698e07c39f0e8d6818858f34c8191871b5a52bea9061806bd029024bfc1d9c1f230904968d6c9e10fddcb",
        "c006ba97356ff243570fd96df07dd6894e215a6b24c4ed730369519289ebd877aff6ccbd2265985e4ab1a2b7930bab9cfb767b97348a639ddf",
        "8db81bf5151da7e8f3d9638a1b86eb1dd78cc6a526f10a414c78638f"
    );
    const V3: &str = concat!(
        "b5c016e93b84b473fc8a37af94936563630c36d6df1841d23a86ee51ca161f9e00ac19116b32f643ff6a56a212b265d8c56",
        "195bb0d12ce199e13dfdc5272f80c1564da2c6fc2fa18da91d8062de02af5cdafea491c6f3cae1f"
    );
    const V4: &str = concat!(
        "c58edf7cfd557b6b655de6f48b1a3049d8d049dadb3a7bfa9ac9ccbb5baf37ec00f83086a26f43b7d6bc9075ad0",
        "38bf5741f118d502ebe94165e4072ba7f98535d6b1e3b6ae67a98115d146d9b4d90e4df4ae82df9cfa17ed7cd42",
        "465181559f7ddf09c98beec521bb4478e0cb73c4e0827af8688ff4e7a07327a10d5a180035e6ddb16d974a85257",
        "981cd9e0360a20f7b4d653190267dfb241148f018ae180568042e864b9e1b5bc05425a3abc2b0324f50c72d5679",
        "8f924405dfc0f8523f4bb564ed65af8e1b1c82a7a0640552ecf81985d95d0993d99172592ddc1393dfa63e8f0b3",
        "d744b2cc4b73384ca4693f0c1aec0e9b00e85f2937e891105d67da8f59c14ca96608e0425c42f9c1e7c2a8b3413",
        "e1381784f9cfe01de7c47cea1f8d7a7d88f5d4aca783cf55332b47f957a6b9a65269d7eb606b877b"
    );

    #[test]
    fn madmin_go_vectors_decrypt_to_their_plaintexts() {
        let cases: [(&str, &str, usize); 4] = [
            ("", V1, 0),
            ("", V2, 256),
            (r#"xPl.8/rhR"Q_1xLt"#, V3, 32),
            ("7h5oU4$te{;K}fgqlI^]", V4, 256),
        ];
        for (password, hex_ct, len) in cases {
            let ct = hex::decode(hex_ct).unwrap();
            let pt = decrypt(password, &ct).expect("a madmin-go vector opens");
            assert_eq!(pt, vec![0u8; len], "{password:?}");
            // The wrong password opens none of them.
            assert_eq!(decrypt("wrong password", &ct), Err(NotAuthentic));
        }
    }

    /// A fixed key (no Argon2 per case) for the framing tests.
    fn fixed(id: u8) -> ([u8; HEADER], LessSafeKey) {
        let mut header = [7u8; HEADER];
        header[32] = id;
        let key = derive(PBKDF2_AES, b"pw", &header[..32]).unwrap();
        (header, cipher(id, &key))
    }

    #[test]
    fn pbkdf2_payloads_round_trip_at_package_boundaries() {
        for len in [0usize, 1, 16383, 16384, 16385, 32768, 40000] {
            let plain: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let (header, key) = fixed(PBKDF2_AES);
            let ct = seal(&key, &header, &plain);
            let packages = len.div_ceil(PACKAGE).max(1);
            assert_eq!(ct.len(), HEADER + len + TAG * packages, "{len}");
            // Through the public entry (id 2 derives with PBKDF2, as here).
            assert_eq!(decrypt("pw", &ct).unwrap(), plain, "{len}");
        }
    }

    #[test]
    fn chacha_payloads_round_trip() {
        for len in [0usize, 5, 16384, 16385] {
            let plain = vec![3u8; len];
            let (header, key) = fixed(ARGON2_CHACHA);
            let ct = seal(&key, &header, &plain);
            assert_eq!(open(&key, &ct).unwrap(), plain);
            // The same bytes under AES-GCM do not open.
            assert!(open(&fixed(PBKDF2_AES).1, &ct).is_err());
        }
    }

    #[test]
    fn tampering_truncation_and_a_bare_header_are_refused() {
        let plain = vec![9u8; 20000];
        let (header, key) = fixed(PBKDF2_AES);
        let ct = seal(&key, &header, &plain);
        for i in [0, 32, 40, 41, 16441, ct.len() - 1] {
            let mut bad = ct.clone();
            bad[i] ^= 1;
            assert_eq!(decrypt("pw", &bad), Err(NotAuthentic), "flip at {i}");
        }
        // Cut after the first full package: that package would now pass as the final one,
        // but its flag says otherwise.
        assert_eq!(
            decrypt("pw", &ct[..HEADER + PACKAGE + TAG]),
            Err(NotAuthentic)
        );
        assert_eq!(decrypt("pw", &ct[..ct.len() - 1]), Err(NotAuthentic));
        assert_eq!(decrypt("pw", &ct[..HEADER]), Err(NotAuthentic));
        assert_eq!(decrypt("pw", &[]), Err(NotAuthentic));
        let mut unknown = ct.clone();
        unknown[32] = 3;
        assert_eq!(decrypt("pw", &unknown), Err(NotAuthentic));
    }

    #[test]
    fn our_argon2_encryption_opens_with_our_decryption() {
        let ct = encrypt("secret123", br#"{"a":1}"#);
        assert_eq!(ct[32], ARGON2_AES);
        assert_eq!(decrypt("secret123", &ct).unwrap(), br#"{"a":1}"#);
        assert_eq!(decrypt("secret124", &ct), Err(NotAuthentic));
    }
}
