//! Server-side encryption: SSE-C, SSE-S3 and SSE-KMS, as a layer around the chunk stream.
//!
//! Every encrypted object has a fresh 256-bit data key, and each of its GridFS chunks is
//! sealed on its own with AES-256-GCM under it (`cipher::ChunkCipher`), so a range read opens
//! only the chunks that hold the range, and multipart parts are sealed as they arrive and
//! adopted in place. The data key is never stored in the clear:
//! - SSE-S3 (`AES256`): wrapped under a key-encryption key derived from `GRIDS3_MASTER_KEY`;
//! - SSE-KMS (`aws:kms`): wrapped under a keyring key (`keyring`), itself sealed under the
//!   master key, and bound to the request's encryption context;
//! - SSE-C: derived from the customer's key and a random salt on every request; only a salted
//!   verifier is stored.
//!
//! What the object keeps (`SseMeta`, in the files document's `metadata.s3Sse`) is enough to
//! open it again with the right key, and says nothing about the plain text but its length.

pub mod cipher;
pub mod keyring;
pub mod keys;

use futures::TryStreamExt;
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::Database;

use cipher::{random_key, unwrap, wrap};
use keyring::{Keyring, KmsKeyInfo};
use keys::{customer_data_key, customer_verifier, MasterKeys};

/// Errors of the key handling.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// SSE-S3 or SSE-KMS without `GRIDS3_MASTER_KEY`.
    #[error("server-side encryption with server-managed keys needs GRIDS3_MASTER_KEY")]
    NoMasterKey,
    /// A KMS key that does not exist.
    #[error("KMS key {0} does not exist")]
    KmsNotFound(String),
    /// A disabled KMS key.
    #[error("KMS key {0} is disabled")]
    KmsDisabled(String),
    /// An alias given to a second key.
    #[error("alias {0} is taken")]
    AliasExists(String),
    /// A key id given to a second key.
    #[error("a KMS key named {0} exists")]
    KeyExists(String),
    /// An SSE-C object read without its key.
    #[error("the object is encrypted with a customer-provided key")]
    MissingCustomerKey,
    /// An SSE-C object read with another key.
    #[error("the customer-provided key does not match")]
    WrongCustomerKey,
    /// Something sealed under a master key that is neither the current nor a previous one.
    #[error("sealed under master key {0}, which is not configured")]
    UnknownMaster(String),
    /// A stored key that does not open (tampered with, or the wrong master key).
    #[error("a stored key does not open")]
    Unopenable,
    /// The database failed.
    #[error(transparent)]
    Mongo(#[from] mongodb::error::Error),
}

/// What a write asks for.
#[derive(Clone, PartialEq, Eq)]
pub enum SseSpec {
    /// `x-amz-server-side-encryption: AES256`.
    S3 {
        /// `x-amz-server-side-encryption-bucket-key-enabled` (accepted and echoed; every
        /// object has its own data key whatever it says).
        bucket_key: bool,
    },
    /// `x-amz-server-side-encryption: aws:kms`.
    Kms {
        /// The key named, if any (else the bucket's default, else `aws/s3`).
        key: Option<String>,
        /// The encryption context (JSON text), if any.
        context: Option<String>,
        /// See `S3::bucket_key`.
        bucket_key: bool,
    },
    /// SSE-C with the customer's key.
    Customer {
        /// The 256-bit key (zeroed when dropped).
        key: keys::Key,
        /// Its MD5 as the client sent it (base64), echoed back.
        key_md5: String,
    },
}

impl std::fmt::Debug for SseSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::S3 { .. } => f.write_str("SseSpec::S3"),
            Self::Kms { key, .. } => write!(f, "SseSpec::Kms({key:?})"),
            Self::Customer { .. } => f.write_str("SseSpec::Customer"),
        }
    }
}

/// How an object is encrypted: kept in `metadata.s3Sse`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SseMeta {
    /// `AES256`, `aws:kms` or `SSE-C`.
    pub mode: String,
    /// Plain-text length.
    pub size: u64,
    /// Plain-text bytes per chunk.
    pub chunk: u32,
    /// `(segment, chunk count)` of a multipart object, in chunk order; empty for an object
    /// sealed in one segment from chunk 0.
    pub segments: Vec<(i64, i64)>,
    /// The wrapped data key (SSE-S3, SSE-KMS).
    pub wrapped: Option<Vec<u8>>,
    /// The id of the master key that wrapped it (SSE-S3).
    pub master: Option<String>,
    /// The keyring key that wrapped it (SSE-KMS).
    pub kms_key: Option<String>,
    /// The encryption context (SSE-KMS), JSON text.
    pub context: Option<String>,
    /// Bucket key asked for (echoed only).
    pub bucket_key: bool,
    /// The salt of the data key and verifier (SSE-C).
    pub salt: Option<Vec<u8>>,
    /// The salted verifier of the customer's key (SSE-C).
    pub verifier: Option<Vec<u8>>,
}

/// `mode` of SSE-C objects.
pub const MODE_C: &str = "SSE-C";
/// `mode` of SSE-S3 objects.
pub const MODE_S3: &str = "AES256";
/// `mode` of SSE-KMS objects.
pub const MODE_KMS: &str = "aws:kms";

fn bin(bytes: &[u8]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    })
}

impl SseMeta {
    /// Reads `metadata.s3Sse`.
    pub fn from_doc(d: &Document) -> Option<Self> {
        let opt_bin = |k: &str| d.get_binary_generic(k).ok().cloned();
        let opt_str = |k: &str| d.get_str(k).ok().map(str::to_owned);
        let num = |k: &str| match d.get(k) {
            Some(Bson::Int32(n)) => i64::from(*n),
            Some(Bson::Int64(n)) => *n,
            _ => 0,
        };
        Some(Self {
            mode: d.get_str("mode").ok()?.to_owned(),
            size: num("size").max(0) as u64,
            chunk: num("chunk").max(0) as u32,
            segments: d
                .get_array("segs")
                .map(|a| {
                    a.iter()
                        .filter_map(|s| {
                            let s = s.as_array()?;
                            Some((s.first()?.as_i64()?, s.get(1)?.as_i64()?))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            wrapped: opt_bin("dk"),
            master: opt_str("mk"),
            kms_key: opt_str("kms"),
            context: opt_str("ctx"),
            bucket_key: d.get_bool("bke").unwrap_or(false),
            salt: opt_bin("salt"),
            verifier: opt_bin("ver"),
        })
    }

    /// The document stored.
    pub fn to_doc(&self) -> Document {
        let mut d = doc! {"mode": &self.mode, "size": self.size as i64, "chunk": self.chunk as i32};
        if !self.segments.is_empty() {
            let segs: Vec<Bson> = self
                .segments
                .iter()
                .map(|(s, c)| Bson::Array(vec![Bson::Int64(*s), Bson::Int64(*c)]))
                .collect();
            d.insert("segs", segs);
        }
        if let Some(w) = &self.wrapped {
            d.insert("dk", bin(w));
        }
        if let Some(m) = &self.master {
            d.insert("mk", m);
        }
        if let Some(k) = &self.kms_key {
            d.insert("kms", k);
        }
        if let Some(c) = &self.context {
            d.insert("ctx", c);
        }
        if self.bucket_key {
            d.insert("bke", true);
        }
        if let Some(s) = &self.salt {
            d.insert("salt", bin(s));
        }
        if let Some(v) = &self.verifier {
            d.insert("ver", bin(v));
        }
        d
    }

    /// Whether the object is SSE-C.
    pub fn is_customer(&self) -> bool {
        self.mode == MODE_C
    }
}

fn wrap_aad(mode: &str, kms_key: Option<&str>, context: Option<&str>) -> Vec<u8> {
    format!(
        "grids3 data key\0{mode}\0{}\0{}",
        kms_key.unwrap_or_default(),
        context.unwrap_or_default()
    )
    .into_bytes()
}

/// The master keys and the keyring: what turns an [`SseSpec`] into a data key and back.
#[derive(Debug)]
pub struct Keys {
    masters: MasterKeys,
    keyring: Keyring,
    region: String,
}

impl Keys {
    /// The keys of a gateway over `db`.
    pub fn new(db: &Database, masters: MasterKeys, region: &str) -> Self {
        Self {
            masters,
            keyring: Keyring::new(db),
            region: region.to_owned(),
        }
    }

    /// The master keys.
    pub fn masters(&self) -> &MasterKeys {
        &self.masters
    }

    /// The keyring.
    pub fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// The ARN of a keyring key (grids3 has no accounts: all zeros).
    pub fn kms_arn(&self, id: &str) -> String {
        format!("arn:aws:kms:{}:000000000000:key/{id}", self.region)
    }

    /// How responses name a keyring key: a generated key (a UUID, as AWS's key ids are) by its
    /// ARN, as AWS does; a key whose id the operator chose by that id as it is, as MinIO (KES)
    /// and Ceph answer, so that a client that sent `testkey-1` reads back `testkey-1`.
    pub fn kms_key_ref(&self, id: &str) -> String {
        if keyring::is_generated_id(id) {
            self.kms_arn(id)
        } else {
            id.to_owned()
        }
    }

    /// Creates a keyring key, with the operator's id or a generated one.
    pub async fn create_kms_key(
        &self,
        id: Option<&str>,
        alias: Option<&str>,
        description: &str,
        now: DateTime,
    ) -> Result<KmsKeyInfo, SseError> {
        self.keyring
            .create(&self.masters, id, alias, description, now)
            .await
    }

    /// Checks that a key named in a request or a bucket configuration exists and is enabled;
    /// returns its id.
    pub async fn usable_kms_key(&self, name: &str, now: DateTime) -> Result<String, SseError> {
        let id = self
            .keyring
            .resolve_or_create_default(&self.masters, name, now)
            .await?;
        self.keyring.material(&self.masters, &id).await?;
        Ok(id)
    }

    /// A fresh data key for a new object as `spec` asks, and what the object keeps.
    /// `default_kms` is the bucket's default key, used when an SSE-KMS request names none.
    pub async fn new_data_key(
        &self,
        spec: &SseSpec,
        default_kms: Option<&str>,
        chunk: u32,
        now: DateTime,
    ) -> Result<(SseMeta, keys::Key), SseError> {
        let mut meta = SseMeta {
            chunk,
            ..Default::default()
        };
        match spec {
            SseSpec::Customer { key, .. } => {
                let salt = random_key();
                meta.mode = MODE_C.into();
                meta.verifier = Some(customer_verifier(key, &salt[..]).to_vec());
                meta.salt = Some(salt.to_vec());
                let dk = customer_data_key(key, &salt[..]);
                Ok((meta, dk))
            }
            SseSpec::S3 { bucket_key } => {
                let master = self.masters.current.as_ref().ok_or(SseError::NoMasterKey)?;
                let dk = random_key();
                meta.mode = MODE_S3.into();
                meta.bucket_key = *bucket_key;
                meta.wrapped = Some(wrap(
                    &master.kek("sse-s3"),
                    &dk[..],
                    &wrap_aad(MODE_S3, None, None),
                ));
                meta.master = Some(master.id().to_owned());
                Ok((meta, dk))
            }
            SseSpec::Kms {
                key,
                context,
                bucket_key,
            } => {
                if self.masters.current.is_none() {
                    return Err(SseError::NoMasterKey);
                }
                let id = match key.as_deref().or(default_kms) {
                    Some(name) => {
                        self.keyring
                            .resolve_or_create_default(&self.masters, name, now)
                            .await?
                    }
                    None => self.keyring.default_key(&self.masters, now).await?,
                };
                let kek = self.keyring.material(&self.masters, &id).await?;
                let dk = random_key();
                meta.mode = MODE_KMS.into();
                meta.bucket_key = *bucket_key;
                meta.wrapped = Some(wrap(
                    &kek,
                    &dk[..],
                    &wrap_aad(MODE_KMS, Some(&id), context.as_deref()),
                ));
                meta.kms_key = Some(id);
                meta.context = context.clone();
                Ok((meta, dk))
            }
        }
    }

    /// The data key of an existing object. SSE-C needs the customer's key (checked against the
    /// verifier first, so a wrong key is told from a corrupt object).
    pub async fn data_key(
        &self,
        meta: &SseMeta,
        customer: Option<&[u8; 32]>,
    ) -> Result<keys::Key, SseError> {
        let opened = match meta.mode.as_str() {
            MODE_C => {
                let key = customer.ok_or(SseError::MissingCustomerKey)?;
                let salt = meta.salt.as_deref().ok_or(SseError::Unopenable)?;
                let ver = meta.verifier.as_deref().ok_or(SseError::Unopenable)?;
                if !keys::same(&*customer_verifier(key, salt), ver) {
                    return Err(SseError::WrongCustomerKey);
                }
                return Ok(customer_data_key(key, salt));
            }
            MODE_S3 => {
                let mk = meta.master.as_deref().ok_or(SseError::Unopenable)?;
                let master = self
                    .masters
                    .by_id(mk)
                    .ok_or_else(|| SseError::UnknownMaster(mk.to_owned()))?;
                unwrap(
                    &master.kek("sse-s3"),
                    meta.wrapped.as_deref().unwrap_or_default(),
                    &wrap_aad(MODE_S3, None, None),
                )
            }
            MODE_KMS => {
                let id = meta.kms_key.as_deref().ok_or(SseError::Unopenable)?;
                let kek = self.keyring.material(&self.masters, id).await?;
                unwrap(
                    &kek,
                    meta.wrapped.as_deref().unwrap_or_default(),
                    &wrap_aad(MODE_KMS, Some(id), meta.context.as_deref()),
                )
            }
            _ => None,
        };
        opened
            .and_then(|k| <[u8; 32]>::try_from(k.as_slice()).ok())
            .map(zeroize::Zeroizing::new)
            .ok_or(SseError::Unopenable)
    }

    /// Re-seals everything sealed under a previous master key under the current one, without
    /// touching object data: keyring entries, then the wrapped data keys of SSE-S3 objects in
    /// every files collection, version index and multipart upload record. Safe to run again
    /// (it picks up only what is still under a previous key) and while gateways serve.
    pub async fn rotate(&self, db: &Database) -> Result<RotationReport, SseError> {
        let current = self.masters.current.clone().ok_or(SseError::NoMasterKey)?;
        let mut report = RotationReport {
            keyring_entries: self.keyring.reseal(&self.masters).await?,
            ..Default::default()
        };
        let mut targets: Vec<(String, &str)> = Vec::new();
        for name in db.list_collection_names().await? {
            if name.ends_with(".files") || name.ends_with(".versions") {
                targets.push((name, "metadata.s3Sse"));
            } else if name == "__uploads" {
                targets.push((name, "meta.s3Sse"));
            }
        }
        for (coll, path) in targets {
            let c = db.collection::<Document>(&coll);
            let mode = format!("{path}.mode");
            let mk = format!("{path}.mk");
            let mut cursor = c
                .find(doc! {&mode: MODE_S3, &mk: {"$ne": current.id()}})
                .projection(doc! {"_id": 1, path: 1})
                .await?;
            while let Some(d) = cursor.try_next().await? {
                let Some(sse) = nested(&d, path).and_then(SseMeta::from_doc) else {
                    continue;
                };
                let old = sse.master.clone().unwrap_or_default();
                let dk = self.data_key(&sse, None).await?;
                let wrapped = wrap(
                    &current.kek("sse-s3"),
                    &dk[..],
                    &wrap_aad(MODE_S3, None, None),
                );
                let r = c
                    .update_one(
                        doc! {"_id": d.get("_id").cloned().unwrap_or(Bson::Null), &mk: &old},
                        doc! {"$set": {format!("{path}.dk"): bin(&wrapped), &mk: current.id()}},
                    )
                    .await?;
                report.data_keys += r.modified_count;
            }
        }
        Ok(report)
    }
}

fn nested<'a>(d: &'a Document, path: &str) -> Option<&'a Document> {
    let mut cur = d;
    for part in path.split('.') {
        cur = cur.get_document(part).ok()?;
    }
    Some(cur)
}

/// What a master-key rotation re-sealed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RotationReport {
    /// Keyring entries.
    pub keyring_entries: u64,
    /// Data keys of SSE-S3 objects (files documents, version-index copies, upload records).
    pub data_keys: u64,
    /// Access-key secrets.
    pub access_keys: u64,
}
