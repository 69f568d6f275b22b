//! The version index of a versioned bucket, after Scality's mongoclient metadata design.
//!
//! Data versions are GridFS revisions of the key's filename in `<bucket>.files`, so every GridFS
//! driver sees an object's versions as revisions in upload order. What GridFS cannot hold lives
//! in one more collection, `<bucket>.versions`:
//! - a **version entry** per version, data or delete marker, `_id` = `"\x7fV" + key + "\0" +
//!   vid` (mongoclient's v1 version key), repeated in `sk` for range scans. The version id sorts newest first, so a scan in `_id`
//!   order is ListObjectVersions' order; a data entry repeats its files document's fields
//!   (`fileId`, `length`, `chunkSize`, `uploadDate`, `metadata`) so that a read by version id is
//!   one lookup;
//! - a **master** per key whose latest version is data, `_id` = `"\x7fM" + key` (v1 master
//!   key), holding that version's fields and `filename`. Keys whose latest version is a delete
//!   marker have no master, so a listing of current objects scans masters only and never walks
//!   old versions or deleted keys (the v1 grouping);
//! - a **placeholder master** (`isPHD: true`, mongoclient's name; `phd` as older grids3 wrote it is read too) while the latest version is
//!   being deleted: whoever meets it (a read, a listing, the deleting request itself) repairs
//!   it from the newest entry left.
//!
//! Without multi-document transactions, concurrency rests on one rule: every write of a key's
//! entries and master (PUT, Complete, DELETE, a repair, the janitor's) runs under the key's lock
//! (`meta::keylocks`, fenced before publishing), so each writes what it has just made the newest.
//! Readers never write: one that meets a placeholder, or an entry newer than the master, answers
//! from the entries and has the master repaired under the lock. Every crash point leaves a state
//! a retry, a reader's repair or the janitor finishes (see `ObjectStore::index_file`).

pub mod index;

pub use index::{Master, VersionIndex};

pub mod exclusions;

use mongodb::bson::{doc, Bson, DateTime, Document};
use sha2::{Digest, Sha256};

use crate::storage::gridfs::FileDoc;

/// Prefix of master `_id`s.
pub const MASTER: &str = "\u{7f}M";
/// Prefix of version entry `_id`s.
pub const VERSION: &str = "\u{7f}V";

/// A bucket's versioning state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Versioning {
    /// Never enabled: the newest revision is the object, older ones are reclaimed.
    #[default]
    Off,
    /// Every write adds a version.
    Enabled,
    /// Writes replace the `null` version; other versions stay.
    Suspended,
}

impl Versioning {
    /// From the stored status (`Enabled`, `Suspended`).
    pub fn from_status(s: Option<&str>) -> Self {
        match s {
            Some("Enabled") => Self::Enabled,
            Some("Suspended") => Self::Suspended,
            _ => Self::Off,
        }
    }

    /// The status as S3 names it, if versioning was ever enabled.
    pub fn status(self) -> Option<&'static str> {
        match self {
            Self::Off => None,
            Self::Enabled => Some("Enabled"),
            Self::Suspended => Some("Suspended"),
        }
    }
}

/// The `_id` of a key's master.
pub fn master_id(key: &str) -> String {
    format!("{MASTER}{key}")
}

/// Every version entry `_id` of `key` starts with this (`\0` sorts before any character a
/// longer key could continue with, so a key's versions are contiguous).
pub fn versions_prefix(key: &str) -> String {
    format!("{VERSION}{key}\0")
}

/// The `_id` of a version entry.
pub fn entry_id(key: &str, vid: &str) -> String {
    format!("{VERSION}{key}\0{vid}")
}

/// Version ids newer than the year 2286 do not exist: the time part counts down from this.
const TIME_CEILING: i64 = 9_999_999_999_999;

/// A version id: 13 digits counting *down* with the version's time in milliseconds (so newer
/// sorts first, as mongoclient's reversed-time ids do), then 24 hex digits of the version's
/// unique id (the files `_id` for data, a fresh ObjectId for a delete marker). Foreign files
/// whose `_id` is not an ObjectId get the first 12 bytes of the SHA-256 of its BSON instead:
/// stable, so the same file always has the same version id.
pub fn make_vid(at: DateTime, id: &Bson) -> String {
    let t = (TIME_CEILING - at.timestamp_millis().clamp(0, TIME_CEILING)).max(0);
    let tail = match id {
        Bson::ObjectId(o) => o.to_hex(),
        other => {
            let raw = mongodb::bson::to_vec(&doc! {"id": other.clone()}).unwrap_or_default();
            hex::encode(&Sha256::digest(&raw)[..12])
        }
    };
    format!("{t:013}{tail}")
}

/// Whether a string can be a version id grids3 made (anything else is `InvalidArgument`, as
/// AWS answers a malformed id).
pub fn is_valid_vid(s: &str) -> bool {
    s.len() == 37
        && s[..13].bytes().all(|b| b.is_ascii_digit())
        && s[13..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// One version of a key.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionEntry {
    /// The key.
    pub key: String,
    /// Its version id as stored (the null version has one too, for ordering).
    pub vid: String,
    /// Whether this is the `null` version.
    pub null: bool,
    /// When it was written.
    pub at: DateTime,
    /// Who wrote a delete marker (data versions keep their owner in `metadata`).
    pub owner: Option<String>,
    /// The data version's files document; `None` for a delete marker.
    pub file: Option<FileDoc>,
}

impl VersionEntry {
    /// The id S3 shows: `null` for the null version.
    pub fn version_id(&self) -> &str {
        if self.null {
            "null"
        } else {
            &self.vid
        }
    }

    /// Whether this is a delete marker.
    pub fn is_marker(&self) -> bool {
        self.file.is_none()
    }

    /// The stored entry.
    pub fn to_document(&self) -> Document {
        let id = entry_id(&self.key, &self.vid);
        let mut d = doc! {
            "_id": &id,
            // The `_id` again, indexed on its own: range scans of `_id` are not index scans on
            // every MongoDB-compatible server (SecantusDB scans the collection for them), range
            // scans of an ordinary indexed field are.
            "sk": id,
            "key": &self.key,
            "vid": &self.vid,
            "null": self.null,
            "marker": self.file.is_none(),
            "uploadDate": self.at,
        };
        if let Some(o) = &self.owner {
            d.insert("owner", o);
        }
        if let Some(f) = &self.file {
            put_file_fields(&mut d, f);
        }
        d
    }

    /// Reads a stored entry; `None` when it is not one.
    pub fn from_document(d: &Document) -> Option<Self> {
        let key = d.get_str("key").ok()?.to_owned();
        let file = if d.get_bool("marker").unwrap_or(false) {
            None
        } else {
            Some(file_of(d, &key)?)
        };
        Some(Self {
            vid: d.get_str("vid").ok()?.to_owned(),
            null: d.get_bool("null").unwrap_or(false),
            at: d
                .get_datetime("uploadDate")
                .copied()
                .unwrap_or(DateTime::from_millis(0)),
            owner: d.get_str("owner").ok().map(str::to_owned),
            file,
            key,
        })
    }

    /// The master document naming this (data) version as the key's latest.
    pub fn master_document(&self) -> Option<Document> {
        let f = self.file.as_ref()?;
        let mut d = doc! {
            "_id": master_id(&self.key),
            "filename": &self.key,
            "vid": &self.vid,
            "null": self.null,
        };
        put_file_fields(&mut d, f);
        Some(d)
    }
}

/// The files document's fields, under the names GridFS gives them, with its `_id` as `fileId`.
fn put_file_fields(d: &mut Document, f: &FileDoc) {
    d.insert("fileId", f.id.clone());
    d.insert("length", f.length as i64);
    d.insert("chunkSize", f.chunk_size as i32);
    d.insert("uploadDate", f.upload_date);
    if let Some(m) = &f.metadata {
        d.insert("metadata", m.clone());
    }
    // A content-addressed object's pointer (`in` or `sha`, and `contentType`).
    if let Some(c) = &f.content {
        d.extend(c.clone());
    }
}

/// The files document a master or data entry repeats.
pub fn file_of(d: &Document, key: &str) -> Option<FileDoc> {
    let mut f = Document::new();
    f.insert("_id", d.get("fileId")?.clone());
    for k in [
        "length",
        "chunkSize",
        "uploadDate",
        "metadata",
        "in",
        "sha",
        "contentType",
    ] {
        if let Some(v) = d.get(k) {
            f.insert(k, v.clone());
        }
    }
    f.insert("filename", key);
    FileDoc::from_document(&f).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::oid::ObjectId;

    #[test]
    fn newer_versions_sort_first_and_ids_are_stable() {
        let id = Bson::ObjectId(ObjectId::new());
        let old = make_vid(DateTime::from_millis(1_000), &id);
        let new = make_vid(DateTime::from_millis(2_000), &id);
        assert!(new < old);
        assert!(is_valid_vid(&old) && is_valid_vid(&new));
        let foreign = Bson::String("report.pdf".into());
        let a = make_vid(DateTime::from_millis(5), &foreign);
        assert_eq!(a, make_vid(DateTime::from_millis(5), &foreign));
        assert!(is_valid_vid(&a));
        assert!(!is_valid_vid("null") && !is_valid_vid("abc"));
    }

    #[test]
    fn a_keys_versions_are_contiguous_and_before_longer_keys() {
        let a = entry_id("a", "0001");
        let a2 = entry_id("a", "9999");
        let ab = entry_id("a/b", "0000");
        let a_space = entry_id("a b", "0000");
        assert!(a.starts_with(&versions_prefix("a")) && a2.starts_with(&versions_prefix("a")));
        assert!(a < a2 && a2 < ab && a2 < a_space);
        assert!(!ab.starts_with(&versions_prefix("a")));
    }

    #[test]
    fn entries_round_trip() {
        let file = FileDoc {
            id: Bson::ObjectId(ObjectId::new()),
            length: 3,
            chunk_size: 255 * 1024,
            upload_date: DateTime::from_millis(42),
            filename: Some("k".into()),
            metadata: Some(doc! {"etag": "\"x\""}),
            // A content-addressed object's pointer travels with its version.
            content: Some(doc! {"in": Bson::Binary(mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: b"abc".to_vec(),
            }), "contentType": "text/plain"}),
        };
        let e = VersionEntry {
            key: "k".into(),
            vid: make_vid(file.upload_date, &file.id),
            null: false,
            at: file.upload_date,
            owner: None,
            file: Some(file.clone()),
        };
        assert_eq!(
            VersionEntry::from_document(&e.to_document()),
            Some(e.clone())
        );
        let m = e.master_document().unwrap();
        assert_eq!(file_of(&m, "k"), Some(file));
        let marker = VersionEntry {
            file: None,
            owner: Some("AKID".into()),
            ..e
        };
        assert!(marker.master_document().is_none());
        let back = VersionEntry::from_document(&marker.to_document()).unwrap();
        assert!(back.is_marker());
        assert_eq!(back.version_id(), marker.vid);
    }
}
