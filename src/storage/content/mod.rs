//! Content-addressed buckets in the v7files storage format (buckets created with
//! `x-grids3-storage-mode: content`).
//!
//! An object is still a document of `<bucket>.files`, with the GridFS files fields (`filename`,
//! `length`, `uploadDate`, `metadata`, so every listing, lookup and condition works as in a
//! GridFS bucket) plus `contentType` and a pointer to its content, as v7files writes them:
//! - `in`: the bytes themselves, for contents up to `--content-inline-max`;
//! - `sha` (the SHA-1, 20 bytes binary) and `length`: a content stored once for every object
//!   with the same bytes.
//!
//! Contents (`<bucket>._content`, `_id` = SHA-1), per v7files' StorageFormat:
//! - `{_id, in}`: the bytes, for contents up to one chunk;
//! - `{_id, store: "gz", zin, length}`: the same, gzipped, when the object's type is
//!   compressible (`--content-gzip-types`) and gzip saves at least a tenth; SHA-1 and
//!   `length` describe the uncompressed bytes;
//! - larger contents are GridFS files of `<bucket>._blobs` whose `_id` is the SHA-1, readable
//!   by any GridFS driver.
//!
//! - `{_id, store: "cat", length, base: [{sha, length, off?} | {in}...]}`: a concatenation of
//!   other contents without copying them; a multipart upload completes as one (see
//!   `objects::cat`), and its `refBase` document in `_refs` keeps its bases.
//!
//! References (`<bucket>._refs`, see [`refs`]) keep contents alive: one document per object
//! (`_id` = the object's `_id`) with `refs` (the SHA-1s it uses) and `refHistory`. The janitor
//! reclaims a content that no reference names, never one an in-flight PUT is about to use.
//!
//! The bucket's `<bucket>.files` documents have no chunks: a GridFS driver lists them but
//! cannot read them; it reads `<bucket>._blobs` (by SHA-1) instead.
//!
//! Encrypted objects are the exception: each is sealed under its own data key and stored as a
//! GridFS file of `<bucket>.files` / `<bucket>.chunks`, never as a content, because sharing
//! contents would show which encrypted objects are equal (docs/storage-modes.md, "Storage modes").

pub mod refs;

use std::io::{Read, Write};

use futures::{StreamExt, TryStreamExt};
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Bson, DateTime, Document};
use mongodb::{Collection, Database};

use super::gridfs::{as_i64, ByteStream, FileDoc, GridFsBucket, GridFsError, Result};
use super::meta::MetaStore;

/// Content types stored gzipped by default.
pub const DEFAULT_GZIP_TYPES: &str =
    "text/*,application/json,application/xml,application/javascript,image/svg+xml";

/// Contents up to this size go inside their object's document by default.
pub const DEFAULT_INLINE_MAX: usize = 16 * 1024;

/// How a content-addressed bucket stores what it is given.
#[derive(Clone, Debug)]
pub struct ContentSettings {
    /// Contents up to this size go inside the object's document.
    pub inline_max: usize,
    /// Content types stored gzipped when that saves space (`type/*` matches a whole type).
    pub gzip_types: Vec<String>,
    /// How long an unreferenced content is kept.
    pub grace: std::time::Duration,
}

impl Default for ContentSettings {
    fn default() -> Self {
        Self {
            inline_max: 16 * 1024,
            gzip_types:
                "text/*,application/json,application/xml,application/javascript,image/svg+xml"
                    .split(',')
                    .map(str::to_owned)
                    .collect(),
            grace: std::time::Duration::from_secs(600),
        }
    }
}

impl ContentSettings {
    /// Whether contents of `content_type` are worth trying to gzip.
    pub fn compressible(&self, content_type: Option<&str>) -> bool {
        let Some(ct) = content_type else {
            return false;
        };
        let ct = ct
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        self.gzip_types.iter().any(|t| {
            let t = t.trim().to_ascii_lowercase();
            match t.strip_suffix("/*") {
                Some(major) => ct.split('/').next() == Some(major),
                None => ct == t,
            }
        })
    }
}

/// Where an object's content is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pointer {
    /// In the object's own document.
    Inline(Vec<u8>),
    /// A stored content.
    Sha([u8; 20]),
}

impl Pointer {
    /// The fields the object's document carries for it (`in`, or `sha`).
    pub fn fields(&self) -> Document {
        match self {
            Self::Inline(b) => doc! {"in": binary(b.clone())},
            Self::Sha(s) => doc! {"sha": binary(s.to_vec())},
        }
    }

    /// The pointer of an object's document, if it has one. `sha` is read as grids3 writes it
    /// (20 bytes binary) or as a 40-digit hex string (another v7files writer's form).
    pub fn of(fields: &Document) -> Option<Self> {
        if let Ok(b) = fields.get_binary_generic("in") {
            return Some(Self::Inline(b.clone()));
        }
        sha_of(fields.get("sha")?).map(Self::Sha)
    }
}

/// A SHA-1 stored as 20 bytes of binary or as 40 hex digits.
pub fn sha_of(v: &Bson) -> Option<[u8; 20]> {
    match v {
        Bson::Binary(b) => b.bytes.as_slice().try_into().ok(),
        Bson::String(s) if s.len() == 40 => hex::decode(s).ok()?.try_into().ok(),
        _ => None,
    }
}

fn binary(bytes: Vec<u8>) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes,
    }
}

/// The SHA-1 as a BSON value (`_id` of contents, entries of `refs`).
pub fn sha_bson(sha: &[u8; 20]) -> Bson {
    Bson::Binary(binary(sha.to_vec()))
}

/// Lowercase hex of a SHA-1.
pub fn hex(sha: &[u8; 20]) -> String {
    sha.iter().map(|b| format!("{b:02x}")).collect()
}

/// The name of a content-addressed bucket's GridFS bucket of large contents.
pub fn blobs_name(bucket: &str) -> String {
    format!("{bucket}._blobs")
}

/// A content-addressed bucket's contents and references.
#[derive(Clone, Debug)]
pub struct Contents {
    bucket: String,
    content: Collection<Document>,
    refs: Collection<Document>,
    blobs: GridFsBucket,
    meta: MetaStore,
    settings: ContentSettings,
}

impl Contents {
    /// The contents of `bucket` (`blobs` is its GridFS bucket of large contents).
    pub fn new(
        db: &Database,
        bucket: &str,
        blobs: GridFsBucket,
        meta: MetaStore,
        settings: ContentSettings,
    ) -> Self {
        Self {
            bucket: bucket.to_owned(),
            content: db.collection(&format!("{bucket}._content")),
            refs: db.collection(&format!("{bucket}._refs")),
            blobs,
            meta,
            settings,
        }
    }

    /// How contents are stored.
    pub fn settings(&self) -> &ContentSettings {
        &self.settings
    }

    /// Creates the indexes references and their reclaim use.
    pub async fn ensure_indexes(&self) -> Result<()> {
        self.blobs.ensure_indexes().await?;
        for (name, keys) in [
            ("refs", doc! {"refs": 1}),
            ("refBase", doc! {"refBase": 1}),
            ("purge", doc! {"purge": 1}),
        ] {
            let model = mongodb::IndexModel::builder()
                .keys(keys)
                .options(
                    mongodb::options::IndexOptions::builder()
                        .name(name.to_owned())
                        .build(),
                )
                .build();
            self.refs.create_index(model).await?;
        }
        Ok(())
    }

    /// Drops every collection of the bucket's contents.
    pub async fn drop(&self) -> Result<()> {
        self.content.drop().await?;
        self.refs.drop().await?;
        self.blobs.drop().await?;
        Ok(())
    }

    /// Stores a content of up to one chunk, unless it is stored already (then it is kept from
    /// a pending reclaim: see `refs`). The caller has referenced it first.
    pub async fn store_small(
        &self,
        sha: &[u8; 20],
        data: &[u8],
        content_type: Option<&str>,
    ) -> Result<()> {
        if self.keep(sha, data.len() as u64).await? {
            return Ok(());
        }
        let mut d = doc! {"_id": sha_bson(sha)};
        match self
            .settings
            .compressible(content_type)
            .then(|| gzip(data))
            .flatten()
        {
            Some(z) if z.len() * 10 <= data.len() * 9 => {
                d.insert("store", "gz");
                d.insert("zin", binary(z));
                d.insert("length", data.len() as i64);
            }
            _ => {
                d.insert("in", binary(data.to_vec()));
            }
        }
        match self.content.insert_one(d).await {
            Ok(_) => Ok(()),
            // Stored by a concurrent PUT of the same bytes.
            Err(e) if super::meta::is_duplicate_key(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Whether the content (`length` bytes) is stored; clears a reclaim's mark on it, so that a
    /// reclaim that has not deleted it yet never will. Looks first where a content of that
    /// size is stored (a document up to one chunk, a blob above), so a hit costs one round
    /// trip; the other place second, for contents stored under another chunk size.
    pub async fn keep(&self, sha: &[u8; 20], length: u64) -> Result<bool> {
        let id = sha_bson(sha);
        let unmark = doc! {"$unset": {"gc": ""}};
        let large = length > u64::from(self.blobs.chunk_size());
        let places = if large {
            [self.blobs.files(), &self.content]
        } else {
            [&self.content, self.blobs.files()]
        };
        for coll in places {
            if coll
                .find_one_and_update(doc! {"_id": id.clone()}, unmark.clone())
                .projection(doc! {"_id": 1})
                .await?
                .is_some()
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Publishes a large content whose chunks were staged under `staged` in the blobs bucket:
    /// if a content with these bytes is stored already its staged chunks are deleted (no new
    /// bytes are kept), otherwise they become the GridFS file `_id: sha` (their `files_id` is
    /// rewritten in one update; no bytes move). Under the content's lock, which a reclaim of
    /// the same content also takes. Returns whether the bytes were new.
    ///
    /// The staged chunks are the write's only while its registration `reg` lives: a write
    /// that stalled past its lease may have had them reaped by the janitor. So the
    /// registration is fenced before the chunks change hands, and the adopted chunks are
    /// counted before the files document makes them a content: a short count answers an
    /// error and adopts nothing (a content with missing chunks would be handed to every later
    /// PUT of the same bytes by de-duplication).
    pub async fn adopt_blob(
        &self,
        staged: &Bson,
        sha: &[u8; 20],
        length: u64,
        chunk_size: u32,
        reg: &crate::storage::meta::WriteReg,
    ) -> Result<bool> {
        let Some(lock) = self.meta.lock_content(&self.bucket, &hex(sha)).await? else {
            return Err(GridFsError::Busy(
                "another write of this content is in progress".into(),
            ));
        };
        let res = async {
            let chunks = self.blobs.chunks();
            if self.keep(sha, length).await? {
                chunks
                    .delete_many(doc! {"files_id": staged.clone()})
                    .await?;
                return Ok(false);
            }
            let id = sha_bson(sha);
            crate::failpoint::hit("content.adopt", &self.bucket).await;
            if !reg.fence().await? {
                return Err(GridFsError::Conflict(
                    "the write registration expired and its chunks were reclaimed".into(),
                ));
            }
            // Chunks of an adoption that died before its files document (no files document
            // names them, and the content's lock keeps any other adoption out).
            chunks.delete_many(doc! {"files_id": id.clone()}).await?;
            chunks
                .update_many(
                    doc! {"files_id": staged.clone()},
                    doc! {"$set": {"files_id": id.clone()}},
                )
                .await?;
            let want = length.div_ceil(u64::from(chunk_size.max(1)));
            let have = chunks.count_documents(doc! {"files_id": id.clone()}).await?;
            if have != want {
                // Deleted while this adoption still holds the lock (one that lost it leaves
                // them to the next adoption of these bytes, which deletes the chunks of an
                // adoption that died): never another adoption's.
                if lock.fence().await? {
                    chunks.delete_many(doc! {"files_id": id.clone()}).await?;
                }
                return Err(GridFsError::Conflict(format!(
                    "{have} of the {want} staged chunks were left (reclaimed after the write's registration expired)"
                )));
            }
            if !lock.fence().await? {
                return Err(GridFsError::Conflict("the content lock was lost".into()));
            }
            let file = FileDoc {
                id,
                length,
                chunk_size,
                upload_date: self.meta.clock().now(),
                filename: Some(hex(sha)),
                metadata: None,
                content: None,
            };
            self.blobs.insert_file(&file).await?;
            Ok(true)
        }
        .await;
        lock.release_or_warn().await;
        res
    }

    /// Bytes `[start, end)` of a content (`length` bytes long).
    pub async fn read(
        &self,
        pointer: &Pointer,
        length: u64,
        start: u64,
        end: u64,
    ) -> Result<ByteStream> {
        match pointer {
            Pointer::Inline(b) => Ok(once(slice(b, start, end)?)),
            Pointer::Sha(sha) => self.read_sha(sha, Some(length), start, end, 0).await,
        }
    }

    /// Bytes `[start, end)` of a stored content, checked against `length` when it is known.
    /// Documents (`in`, `zin`) are read whole (one chunk at most); a `cat` content streams
    /// the parts of its bases that the range covers, and a blob only the chunks it covers.
    ///
    /// A boxed future of a named type (not an `async fn`): it is recursive, and the lazy
    /// stream of a `cat` must be `Send`, which the compiler cannot prove of a recursive
    /// opaque future.
    fn read_sha<'a>(
        &'a self,
        sha: &'a [u8; 20],
        length: Option<u64>,
        start: u64,
        end: u64,
        depth: usize,
    ) -> futures::future::BoxFuture<'a, Result<ByteStream>> {
        Box::pin(self.read_sha_inner(sha, length, start, end, depth))
    }

    async fn read_sha_inner(
        &self,
        sha: &[u8; 20],
        length: Option<u64>,
        start: u64,
        end: u64,
        depth: usize,
    ) -> Result<ByteStream> {
        let corrupt = |what: String| GridFsError::Corrupt(format!("content {}: {what}", hex(sha)));
        // A content longer than its object is read up to the object's length (v7files'
        // format says the object's `length` truncates); a shorter one is broken.
        let wrong = |have: u64| {
            length.is_some_and(|l| have < l).then(|| {
                corrupt(format!(
                    "holds {have} bytes, the object says {}",
                    length.unwrap_or_default()
                ))
            })
        };
        let Some(d) = self.content.find_one(doc! {"_id": sha_bson(sha)}).await? else {
            let Some(f) = self
                .blobs
                .files()
                .find_one(doc! {"_id": sha_bson(sha)})
                .await?
            else {
                return Err(corrupt("missing".into()));
            };
            let file = FileDoc::from_document(&f)?;
            if let Some(e) = wrong(file.length) {
                return Err(e);
            }
            return self.blobs.download_sealed(&file, None, 0, start, end);
        };
        match d.get_str("store").ok() {
            None | Some("raw") | Some("gz") => {
                let bytes = decode(&d).map_err(corrupt)?;
                if let Some(e) = wrong(bytes.len() as u64) {
                    return Err(e);
                }
                Ok(once(slice(&bytes, start, end)?))
            }
            Some("cat") if depth < 8 => {
                // The pieces the range covers are worked out first (no I/O); each base is
                // opened only when the stream reaches it, so the first byte of a cat of
                // 10,000 parts costs one lookup, not two per part.
                enum Piece {
                    Bytes(bytes::Bytes),
                    Base([u8; 20], u64, u64),
                }
                let mut pieces: Vec<Piece> = Vec::new();
                let mut at = 0u64;
                for b in d
                    .get_array("base")
                    .map_err(|_| corrupt("no `base`".into()))?
                {
                    let p = match b {
                        Bson::Document(p) => p.clone(),
                        // An inline piece written as the bare bytes (another writer's form).
                        Bson::Binary(bytes) => doc! {"in": bytes.clone()},
                        _ => return Err(corrupt("a `base` entry is not a document".into())),
                    };
                    let off = p.get("off").and_then(as_i64).unwrap_or(0).max(0) as u64;
                    let inline = p.get_binary_generic("in").ok();
                    let len = match (p.get("length").and_then(as_i64), inline) {
                        (Some(l), _) => l.max(0) as u64,
                        (None, Some(b)) => (b.len() as u64).saturating_sub(off),
                        (None, None) => {
                            return Err(corrupt("a `base` entry without `length`".into()))
                        }
                    };
                    let (from, to) = (start.max(at), end.min(at + len));
                    if from < to {
                        let (a, z) = (off + from - at, off + to - at);
                        pieces.push(match inline {
                            Some(b) => Piece::Bytes(slice(b, a, z)?),
                            None => {
                                let base: [u8; 20] =
                                    p.get("sha").and_then(sha_of).ok_or_else(|| {
                                        corrupt("a `base` entry without `sha`".into())
                                    })?;
                                Piece::Base(base, a, z)
                            }
                        });
                    }
                    at += len;
                }
                if let Some(e) = wrong(at) {
                    return Err(e);
                }
                let this = self.clone();
                Ok(Box::pin(
                    futures::stream::iter(pieces)
                        .then(move |p| {
                            let this = this.clone();
                            async move {
                                match p {
                                    Piece::Bytes(b) => Ok(once(b)),
                                    Piece::Base(sha, a, z) => {
                                        this.read_sha(&sha, None, a, z, depth + 1).await
                                    }
                                }
                            }
                        })
                        .try_flatten(),
                ))
            }
            Some(other) => Err(corrupt(format!("store {other:?} is not supported"))),
        }
    }

    /// The database's time (references' dates).
    fn now(&self) -> DateTime {
        self.meta.clock().now()
    }
}

fn once(b: bytes::Bytes) -> ByteStream {
    Box::pin(futures::stream::once(async move { Ok(b) }))
}

fn slice(b: &[u8], start: u64, end: u64) -> Result<bytes::Bytes> {
    b.get(start as usize..end as usize)
        .map(bytes::Bytes::copy_from_slice)
        .ok_or_else(|| GridFsError::Corrupt("range outside the content".into()))
}

/// A content document's bytes: `in`, or gunzipped `zin`.
fn decode(d: &Document) -> std::result::Result<Vec<u8>, String> {
    if d.get_str("store").ok() == Some("gz") {
        let z = d
            .get_binary_generic("zin")
            .map_err(|_| "no `zin`".to_owned())?;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(z.as_slice())
            .read_to_end(&mut out)
            .map_err(|e| format!("gzip: {e}"))?;
        return Ok(out);
    }
    d.get_binary_generic("in")
        .cloned()
        .map_err(|_| "no `in`".to_owned())
}

/// `data` gzipped, or `None` if compression failed.
fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).ok()?;
    e.finish().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressible_types() {
        let s = ContentSettings::default();
        assert!(s.compressible(Some("text/plain; charset=utf-8")));
        assert!(s.compressible(Some("application/json")));
        assert!(!s.compressible(Some("image/png")));
        assert!(!s.compressible(None));
    }

    #[test]
    fn pointers_round_trip() {
        for p in [Pointer::Inline(b"abc".to_vec()), Pointer::Sha([7; 20])] {
            assert_eq!(Pointer::of(&p.fields()), Some(p));
        }
        assert_eq!(Pointer::of(&doc! {"length": 3}), None);
    }

    #[test]
    fn gzip_round_trips() {
        let data = b"hello hello hello hello hello hello".repeat(10);
        let z = gzip(&data).unwrap();
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(z.as_slice())
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        assert!(z.len() < data.len());
    }
}
