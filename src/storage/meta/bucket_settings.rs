//! A bucket's settings as values and as their stored documents: storage mode, default
//! encryption, Object Lock, Block Public Access and CORS rules.

use mongodb::bson::{doc, Document};

use crate::model::PublicAccessBlock;

/// A bucket's storage mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageMode {
    /// Standard GridFS: each object is a GridFS file of `<bucket>.files` / `<bucket>.chunks`.
    #[default]
    Gridfs,
    /// The v7files content format: contents addressed by their SHA-1, stored once.
    Content,
}

impl StorageMode {
    /// The mode's name (`gridfs`, `content`), as the creation header and the admin API spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Gridfs => "gridfs",
            Self::Content => "content",
        }
    }

    /// Parses a mode's name.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "gridfs" => Some(Self::Gridfs),
            "content" => Some(Self::Content),
            _ => None,
        }
    }
}

/// A bucket's default encryption: what new objects get when their request asks for none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BucketEncryption {
    /// `AES256` or `aws:kms`.
    pub algorithm: String,
    /// The KMS key id for `aws:kms` (the keyring's default key when `None`).
    pub kms_key: Option<String>,
    /// BucketKeyEnabled (accepted and echoed; every object has its own data key).
    pub bucket_key: bool,
}

impl BucketEncryption {
    pub(super) fn to_document(&self) -> Document {
        let mut d = doc! {"algorithm": &self.algorithm, "bucketKey": self.bucket_key};
        if let Some(k) = &self.kms_key {
            d.insert("kmsKey", k);
        }
        d
    }

    pub(super) fn from_document(d: &Document) -> Self {
        Self {
            algorithm: d.get_str("algorithm").unwrap_or_default().to_owned(),
            kms_key: d.get_str("kmsKey").ok().map(str::to_owned),
            bucket_key: d.get_bool("bucketKey").unwrap_or(false),
        }
    }
}

/// A bucket's Object Lock configuration: enabled, with an optional default retention.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectLockConfig {
    /// Default retention mode (`GOVERNANCE`, `COMPLIANCE`), if there is a default rule.
    pub mode: Option<String>,
    /// Its period in days ...
    pub days: Option<u32>,
    /// ... or in years.
    pub years: Option<u32>,
}

impl ObjectLockConfig {
    pub(super) fn to_document(&self) -> Document {
        let mut d = doc! {"enabled": true};
        if let Some(m) = &self.mode {
            d.insert("mode", m);
        }
        if let Some(n) = self.days {
            d.insert("days", n as i64);
        }
        if let Some(n) = self.years {
            d.insert("years", n as i64);
        }
        d
    }

    pub(super) fn from_document(d: &Document) -> Self {
        let n = |k: &str| {
            d.get_i64(k)
                .ok()
                .map(|v| v.clamp(0, u32::MAX as i64) as u32)
        };
        Self {
            mode: d.get_str("mode").ok().map(str::to_owned),
            days: n("days"),
            years: n("years"),
        }
    }
}

// Its stored form; the type itself is a shared value (`crate::model`).
impl PublicAccessBlock {
    pub(super) fn to_document(self) -> Document {
        doc! {
            "blockPublicAcls": self.block_public_acls,
            "ignorePublicAcls": self.ignore_public_acls,
            "blockPublicPolicy": self.block_public_policy,
            "restrictPublicBuckets": self.restrict_public_buckets,
        }
    }

    pub(super) fn from_document(d: &Document) -> Self {
        let b = |k: &str| d.get_bool(k).unwrap_or(false);
        Self {
            block_public_acls: b("blockPublicAcls"),
            ignore_public_acls: b("ignorePublicAcls"),
            block_public_policy: b("blockPublicPolicy"),
            restrict_public_buckets: b("restrictPublicBuckets"),
        }
    }
}

/// One CORS rule as stored (`cors` in the bucket's document); evaluated by `s3::cors`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsRule {
    /// `ID`.
    pub id: Option<String>,
    /// `AllowedOrigin`s (at most one `*` each).
    pub allowed_origins: Vec<String>,
    /// `AllowedMethod`s (GET, PUT, POST, DELETE, HEAD).
    pub allowed_methods: Vec<String>,
    /// `AllowedHeader`s (at most one `*` each).
    pub allowed_headers: Vec<String>,
    /// `ExposeHeader`s.
    pub expose_headers: Vec<String>,
    /// `MaxAgeSeconds`.
    pub max_age_seconds: Option<i64>,
}

impl CorsRule {
    pub(super) fn to_document(&self) -> Document {
        let mut d = doc! {
            "origins": &self.allowed_origins, "methods": &self.allowed_methods,
            "headers": &self.allowed_headers, "expose": &self.expose_headers,
        };
        if let Some(id) = &self.id {
            d.insert("id", id);
        }
        if let Some(m) = self.max_age_seconds {
            d.insert("maxAge", m);
        }
        d
    }

    pub(super) fn from_document(d: &Document) -> Self {
        let list = |k: &str| -> Vec<String> {
            d.get_array(k)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        };
        Self {
            id: d.get_str("id").ok().map(str::to_owned),
            allowed_origins: list("origins"),
            allowed_methods: list("methods"),
            allowed_headers: list("headers"),
            expose_headers: list("expose"),
            max_age_seconds: d.get_i64("maxAge").ok(),
        }
    }
}
