//! The S3 attributes of an object, stored under the GridFS files document's `metadata` so that
//! any GridFS driver still reads the data and sees them as ordinary metadata.

use mongodb::bson::{doc, Bson, DateTime, Document};

/// S3 attributes of an object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObjectMeta {
    /// Quoted ETag (`"<md5 hex>"`).
    pub etag: Option<String>,
    /// Content-Type.
    pub content_type: Option<String>,
    /// Cache-Control.
    pub cache_control: Option<String>,
    /// Content-Disposition.
    pub content_disposition: Option<String>,
    /// Content-Encoding.
    pub content_encoding: Option<String>,
    /// Content-Language.
    pub content_language: Option<String>,
    /// Expires (as sent).
    pub expires: Option<String>,
    /// `x-amz-meta-*` pairs, names lower-case without the prefix.
    pub user: Vec<(String, String)>,
    /// Checksums: algorithm (`crc32`, `crc32c`, `sha1`, `sha256`, `crc64nvme`) and base64 value.
    pub checksums: Vec<(String, String)>,
    /// Object tags, in the order given.
    pub tags: Vec<(String, String)>,
    /// For a multipart object: each part's size and checksum (GetObjectAttributes).
    pub parts: Vec<(u64, Option<String>)>,
    /// A canned ACL (`public-read`, `authenticated-read`), as grids3 versions before ACL
    /// grants stored it; read, and replaced by `grants` when the ACL is next set.
    pub acl: Option<String>,
    /// ACL grants beyond the bucket owner's: (grantee, permission), see `s3::acl::grants`.
    pub grants: Vec<(String, String)>,
    /// The access key that owns the object (its writer, or the bucket's owner, as the bucket's
    /// object ownership decided when it was written; see `s3::ownership`).
    pub owner: Option<String>,
    /// The version id this revision was written as, in a versioned bucket (`s3VersionId`;
    /// revisions written before versioning was enabled, and by other GridFS clients, have none).
    pub version_id: Option<String>,
    /// Object Lock retention: mode (`GOVERNANCE`, `COMPLIANCE`) and retain-until date
    /// (`s3Retention`).
    pub retention: Option<(String, DateTime)>,
    /// Object Lock legal hold (`s3LegalHold`).
    pub legal_hold: bool,
    /// Server-side encryption (`s3Sse`): how the chunks are sealed and how the data key is
    /// kept. `None` for an object stored in the clear.
    pub sse: Option<crate::crypto::SseMeta>,
    /// The storage class the writer named (`s3StorageClass`; `None` is STANDARD). A label
    /// only: every class is stored alike (see `model::storage_class`).
    pub storage_class: Option<String>,
    /// `x-amz-website-redirect-location` (`s3WebsiteRedirect`): where the website endpoint
    /// redirects a request for this object (see `crate::website`).
    pub website_redirect: Option<String>,
    /// The attribute revision (`s3AttrRev`): how many attribute writes (tags, ACL,
    /// retention, legal hold) the revision has had, the value each such write is
    /// conditioned on (`ObjectStore::write_attrs_if`). 0, and not stored, before the first.
    pub attr_rev: i64,
    /// Fields of a foreign `metadata` document that are not grids3's, kept as they were.
    pub other: Document,
}

pub(crate) const FIELDS: &[&str] = &[
    "etag",
    "contentType",
    "cacheControl",
    "contentDisposition",
    "contentEncoding",
    "contentLanguage",
    "expires",
    "userMetadata",
    "checksums",
    "tags",
    "parts",
    "acl",
    "grants",
    "s3Owner",
    "s3VersionId",
    "s3Retention",
    "s3LegalHold",
    "s3Sse",
    "s3StorageClass",
    "s3WebsiteRedirect",
    "s3AttrRev",
    // Set by a metered publish only (see `quota`): never carried to another object by a copy.
    "s3Counted",
];

impl ObjectMeta {
    /// The storage class stored in a `metadata` document (an upload record's too), without
    /// reading the rest of it.
    pub fn storage_class_in(m: &Document) -> Option<&str> {
        m.get_str("s3StorageClass").ok()
    }

    /// Reads the attributes out of a files document's `metadata`.
    pub fn from_metadata(m: Option<&Document>) -> Self {
        let Some(m) = m else { return Self::default() };
        let s = |k: &str| m.get_str(k).ok().map(str::to_owned);
        let pairs = |k: &str| -> Vec<(String, String)> {
            m.get_document(k)
                .map(|d| {
                    d.iter()
                        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut other = m.clone();
        for f in FIELDS {
            other.remove(*f);
        }
        Self {
            etag: s("etag"),
            content_type: s("contentType"),
            cache_control: s("cacheControl"),
            content_disposition: s("contentDisposition"),
            content_encoding: s("contentEncoding"),
            content_language: s("contentLanguage"),
            expires: s("expires"),
            acl: s("acl"),
            // Not `owner`: files written by other GridFS clients often carry their own.
            owner: s("s3Owner"),
            version_id: s("s3VersionId"),
            storage_class: Self::storage_class_in(m).map(str::to_owned),
            website_redirect: s("s3WebsiteRedirect"),
            retention: m.get_document("s3Retention").ok().and_then(|r| {
                Some((
                    r.get_str("mode").ok()?.to_owned(),
                    *r.get_datetime("until").ok()?,
                ))
            }),
            legal_hold: m.get_bool("s3LegalHold").unwrap_or(false),
            attr_rev: match m.get("s3AttrRev") {
                Some(Bson::Int64(n)) => *n,
                Some(Bson::Int32(n)) => i64::from(*n),
                _ => 0,
            },
            sse: m
                .get_document("s3Sse")
                .ok()
                .and_then(crate::crypto::SseMeta::from_doc),
            user: pairs("userMetadata"),
            checksums: pairs("checksums"),
            tags: pairs("tags"),
            grants: crate::storage::meta::acl_from_docs(m, "grants"),
            parts: m
                .get_array("parts")
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.as_document())
                        .map(|p| {
                            let size = p.get_i64("size").unwrap_or(0).max(0) as u64;
                            (size, p.get_str("checksum").ok().map(str::to_owned))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            other,
        }
    }

    /// The `metadata` document to store.
    pub fn to_metadata(&self) -> Document {
        let mut d = self.other.clone();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                d.insert(k, v.clone());
            }
        };
        put("etag", &self.etag);
        put("contentType", &self.content_type);
        put("cacheControl", &self.cache_control);
        put("contentDisposition", &self.content_disposition);
        put("contentEncoding", &self.content_encoding);
        put("contentLanguage", &self.content_language);
        put("expires", &self.expires);
        put("acl", &self.acl);
        put("s3Owner", &self.owner);
        put("s3VersionId", &self.version_id);
        put("s3StorageClass", &self.storage_class);
        put("s3WebsiteRedirect", &self.website_redirect);
        if let Some((mode, until)) = &self.retention {
            d.insert("s3Retention", doc! {"mode": mode, "until": *until});
        }
        if self.legal_hold {
            d.insert("s3LegalHold", true);
        }
        if self.attr_rev > 0 {
            d.insert("s3AttrRev", self.attr_rev);
        }
        if let Some(sse) = &self.sse {
            d.insert("s3Sse", sse.to_doc());
        }
        if !self.user.is_empty() {
            d.insert("userMetadata", pairs_doc(&self.user));
        }
        if !self.checksums.is_empty() {
            d.insert("checksums", pairs_doc(&self.checksums));
        }
        if !self.tags.is_empty() {
            d.insert("tags", pairs_doc(&self.tags));
        }
        if !self.grants.is_empty() {
            d.insert("grants", crate::storage::meta::acl_docs(&self.grants));
        }
        if !self.parts.is_empty() {
            let parts: Vec<Document> = self
                .parts
                .iter()
                .map(|(size, c)| {
                    let mut p = doc! {"size": *size as i64};
                    if let Some(c) = c {
                        p.insert("checksum", c.clone());
                    }
                    p
                })
                .collect();
            d.insert("parts", parts);
        }
        d
    }
}

impl ObjectMeta {
    /// Whether Object Lock lets this version be removed at `now` (the database's time): no
    /// legal hold, and no retention in force (GOVERNANCE yields to a bypass).
    pub fn removable(&self, now: DateTime, bypass_governance: bool) -> bool {
        if self.legal_hold {
            return false;
        }
        match &self.retention {
            Some((mode, until)) if *until > now => mode == "GOVERNANCE" && bypass_governance,
            _ => true,
        }
    }
}

fn pairs_doc(pairs: &[(String, String)]) -> Document {
    // Keys are header names (no dots or dollars reach here: HTTP header names cannot hold
    // them... except dots, which MongoDB 5+ accepts in field names).
    let mut d = doc! {};
    for (k, v) in pairs {
        d.insert(k.clone(), Bson::String(v.clone()));
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_foreign_fields() {
        let m = ObjectMeta {
            etag: Some("\"abc\"".into()),
            content_type: Some("text/plain".into()),
            user: vec![("color".into(), "blue".into())],
            checksums: vec![("crc32".into(), "AAAAAA==".into())],
            grants: vec![("AllUsers".into(), "READ".into())],
            other: doc! {"owner": "pymongo"},
            ..Default::default()
        };
        let d = m.to_metadata();
        assert_eq!(d.get_str("owner").unwrap(), "pymongo");
        assert_eq!(ObjectMeta::from_metadata(Some(&d)), m);
    }
}
