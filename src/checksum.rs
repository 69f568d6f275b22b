//! The S3 additional checksums: CRC32, CRC32C, SHA-1, SHA-256 and CRC64/NVME, base64 of the
//! big-endian digest.

use base64::Engine;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// A checksum algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// CRC-32 (IEEE).
    Crc32,
    /// CRC-32C (Castagnoli).
    Crc32c,
    /// SHA-1.
    Sha1,
    /// SHA-256.
    Sha256,
    /// CRC-64/NVME.
    Crc64Nvme,
}

impl Algorithm {
    /// Every algorithm.
    pub const ALL: [Algorithm; 5] = [
        Self::Crc32,
        Self::Crc32c,
        Self::Sha1,
        Self::Sha256,
        Self::Crc64Nvme,
    ];

    /// Lower-case name as in `x-amz-checksum-<name>`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Crc32 => "crc32",
            Self::Crc32c => "crc32c",
            Self::Sha1 => "sha1",
            Self::Sha256 => "sha256",
            Self::Crc64Nvme => "crc64nvme",
        }
    }

    /// The digest's length in bytes.
    pub fn digest_len(self) -> usize {
        match self {
            Self::Crc32 | Self::Crc32c => 4,
            Self::Crc64Nvme => 8,
            Self::Sha1 => 20,
            Self::Sha256 => 32,
        }
    }

    /// Whether a value is the base64 of a digest of this algorithm's length: anything else is
    /// not a checksum at all (AWS: `InvalidRequest`, not `BadDigest`).
    pub fn well_formed(self, value: &str) -> bool {
        base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .is_ok_and(|d| d.len() == self.digest_len())
    }

    /// The one `x-amz-checksum-<alg>` a request names, read through `get` (headers, or a
    /// form's fields): `Err(message)` for two of them (AWS refuses that: which would be
    /// checked?) or a value that is not a digest of its algorithm. `composite` lets the value
    /// end in `-<count>` (a multipart object's checksum). The messages are AWS's; callers
    /// answer them as `400 InvalidRequest`.
    pub fn named_in<'a>(
        get: impl Fn(&str) -> Option<&'a str>,
        composite: bool,
    ) -> Result<Option<(Algorithm, String)>, String> {
        let mut found = None;
        for alg in Self::ALL {
            let Some(v) = get(&alg.header()) else {
                continue;
            };
            if found.is_some() {
                return Err("Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.".to_owned());
            }
            let v = v.trim();
            let digest = match v.rsplit_once('-') {
                Some((d, n)) if composite && n.parse::<u32>().is_ok() => d,
                _ => v,
            };
            if !alg.well_formed(digest) {
                return Err(format!("Value for {} header is invalid.", alg.header()));
            }
            found = Some((alg, v.to_owned()));
        }
        Ok(found)
    }

    /// The type of an object's checksum: a composite one ends in `-<parts>`.
    pub fn type_of(object_checksum: &str) -> &'static str {
        if object_checksum.contains('-') {
            "COMPOSITE"
        } else {
            "FULL_OBJECT"
        }
    }

    /// From a name in any case (`CRC32`, `crc32c`, ...).
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(s))
    }

    /// The header carrying this checksum.
    pub fn header(self) -> String {
        format!("x-amz-checksum-{}", self.name())
    }

    /// A fresh hasher.
    pub fn hasher(self) -> Hasher {
        match self {
            Self::Crc32 => Hasher::Crc32(crc32fast::Hasher::new()),
            Self::Crc32c => Hasher::Crc32c(0),
            Self::Sha1 => Hasher::Sha1(Sha1::new()),
            Self::Sha256 => Hasher::Sha256(Sha256::new()),
            Self::Crc64Nvme => Hasher::Crc64(crc64fast_nvme::Digest::new()),
        }
    }
}

/// A running checksum.
#[derive(Clone)]
pub enum Hasher {
    /// CRC-32.
    Crc32(crc32fast::Hasher),
    /// CRC-32C state.
    Crc32c(u32),
    /// SHA-1.
    Sha1(Sha1),
    /// SHA-256.
    Sha256(Sha256),
    /// CRC-64/NVME.
    Crc64(crc64fast_nvme::Digest),
}

impl Hasher {
    /// Feeds bytes.
    pub fn update(&mut self, data: &[u8]) {
        match self {
            Hasher::Crc32(h) => h.update(data),
            Hasher::Crc32c(c) => *c = crc32c::crc32c_append(*c, data),
            Hasher::Sha1(h) => h.update(data),
            Hasher::Sha256(h) => h.update(data),
            Hasher::Crc64(h) => h.write(data),
        }
    }

    /// The base64 value.
    pub fn finish_base64(self) -> String {
        let bytes: Vec<u8> = match self {
            Hasher::Crc32(h) => h.finalize().to_be_bytes().to_vec(),
            Hasher::Crc32c(c) => c.to_be_bytes().to_vec(),
            Hasher::Sha1(h) => h.finalize().to_vec(),
            Hasher::Sha256(h) => h.finalize().to_vec(),
            Hasher::Crc64(h) => h.sum64().to_be_bytes().to_vec(),
        };
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_named_checksum() {
        let get = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| pairs.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
        };
        assert_eq!(Algorithm::named_in(get(&[]), false), Ok(None));
        assert_eq!(
            Algorithm::named_in(get(&[("x-amz-checksum-crc32", "jNwWgw==")]), false),
            Ok(Some((Algorithm::Crc32, "jNwWgw==".to_owned())))
        );
        assert!(Algorithm::named_in(
            get(&[
                ("x-amz-checksum-crc32", "jNwWgw=="),
                ("x-amz-checksum-crc32c", "jNwWgw==")
            ]),
            false
        )
        .unwrap_err()
        .contains("Multiple"));
        assert!(Algorithm::named_in(get(&[("x-amz-checksum-sha256", "AAAA")]), false).is_err());
        // `-<count>` only where a composite value may come.
        let composite: &'static [(&'static str, &'static str)] =
            &[("x-amz-checksum-crc32", "jNwWgw==-3")];
        assert!(Algorithm::named_in(get(composite), false).is_err());
        assert_eq!(
            Algorithm::named_in(get(composite), true),
            Ok(Some((Algorithm::Crc32, "jNwWgw==-3".to_owned())))
        );
    }

    #[test]
    fn known_values_of_hello_world() {
        // Values as S3 documents/returns them for the body "Hello world".
        let v = |a: Algorithm| {
            let mut h = a.hasher();
            h.update(b"Hello world");
            h.finish_base64()
        };
        assert_eq!(v(Algorithm::Crc32), "i9aeUg==");
        assert_eq!(v(Algorithm::Crc32c), "crUfeA==");
        assert_eq!(v(Algorithm::Sha1), "e1AsOh9IyGCa4hLN+2Od7jlnP14=");
        assert_eq!(
            v(Algorithm::Sha256),
            "ZOyIygCyaOW6GjVnihtTFtIS9PNmskdyMlNKiuyjfzw="
        );
        assert_eq!(
            Algorithm::from_name("CRC64NVME"),
            Some(Algorithm::Crc64Nvme)
        );
    }
}
