//! `grids3 fsck [--repair]`: checks the invariants the write paths keep, and with `--repair`
//! removes only what is provably dead.
//!
//! Reported: chunks that belong to nothing (orphans), files documents whose chunks are missing
//! or short, upload records without parts, parts without an upload, stale write
//! registrations, expired leases and locks; in content-addressed buckets, objects whose content
//! is missing, objects without a reference, and contents nothing references.
//!
//! Why `--repair` cannot hurt a live write: every writer registers its file id *before* its
//! first chunk, and hands its chunks on to a part record, an upload record or a files document
//! *before* it drops the registration (and a reclaim record is written before a files document
//! is deleted). fsck first collects the file ids found in the chunks, and only then reads the
//! references in that same order of hand-over: registrations, parts, uploads, files, reclaims.
//! A file id whose chunks it saw is therefore still referenced by whichever record held it when
//! fsck looked, so only chunks nothing could ever publish are called orphans.

use std::collections::{HashMap, HashSet};

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};

use crate::storage::gridfs::Result;
use crate::storage::meta::PartRecord;
use crate::storage::objects::ObjectStore;

/// What fsck found.
#[derive(Debug, Default)]
pub struct Report {
    /// `(bucket, file id, chunks)` of chunks nothing references.
    pub orphan_chunks: Vec<(String, Bson, u64)>,
    /// `(bucket, file id, filename, chunks found, chunks expected)`.
    pub broken_files: Vec<(String, Bson, String, u64, u64)>,
    /// Open uploads without any part (a client that never sent one; the sweep ages them out).
    pub uploads_without_parts: Vec<String>,
    /// Parts whose upload is gone.
    pub parts_without_upload: Vec<PartRecord>,
    /// Write registrations whose writer stopped heart-beating (the janitor reaps them).
    pub stale_writes: u64,
    /// Expired reader leases.
    pub stale_leases: u64,
    /// Expired key and upload locks.
    pub stale_locks: u64,
    /// Content-addressed buckets: `(bucket, object id, key)` of objects whose content is
    /// stored nowhere.
    pub missing_contents: Vec<(String, Bson, String)>,
    /// Content-addressed buckets: `(bucket, object id, key)` of objects without a reference to
    /// their content (repaired by writing it back).
    pub unreferenced_objects: Vec<(String, Bson, String)>,
    /// Content-addressed buckets: `(bucket, SHA-1)` of contents nothing references (repaired
    /// by reclaiming them).
    pub unreferenced_contents: Vec<(String, String)>,
    /// Content-addressed buckets: `(bucket, SHA-1)` of `cat` contents whose `refBase` was
    /// missing (repaired by writing it back).
    pub cats_without_bases: Vec<(String, String)>,
    /// Unreferenced contents `--repair` reclaimed (never one an object or a `cat` names).
    pub reclaimed_contents: u64,
    /// Content-addressed buckets: `(bucket, owner)` of references whose owner is gone without
    /// releasing them (their contents would be kept for ever; repaired by releasing them).
    pub orphan_references: Vec<(String, Bson)>,
    /// Content-addressed buckets: `(bucket, object id, key)` of objects whose content pointer
    /// no reader understands, and `(bucket, SHA-1)` of contents in an unknown form.
    pub unreadable: Vec<(String, Bson, String)>,
    /// See `unreadable`.
    pub unreadable_contents: Vec<(String, String)>,
    /// What `--repair` removed: chunk documents, part records, leases, locks.
    pub repaired: Option<(u64, u64, u64, u64)>,
}

impl Report {
    /// Whether anything is wrong (stale leases and locks, which expire by design, aside).
    pub fn problems(&self) -> usize {
        self.orphan_chunks.len()
            + self.broken_files.len()
            + self.parts_without_upload.len()
            + self.missing_contents.len()
            + self.unreferenced_objects.len()
            + self.unreferenced_contents.len()
            + self.cats_without_bases.len()
            + self.orphan_references.len()
            + self.unreadable.len()
            + self.unreadable_contents.len()
    }

    /// A human-readable report.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut line = |s: String| {
            out.push_str(&s);
            out.push('\n');
        };
        for (b, id, n) in &self.orphan_chunks {
            line(format!(
                "orphan chunks: bucket {b} file_id {}: {n} chunks",
                key_of(id)
            ));
        }
        for (b, id, name, have, want) in &self.broken_files {
            line(format!(
                "broken file: bucket {b} file_id {} ({name}): {have} of {want} chunks",
                key_of(id)
            ));
        }
        for u in &self.uploads_without_parts {
            line(format!("upload without parts: {u}"));
        }
        for p in &self.parts_without_upload {
            line(format!(
                "part without upload: upload {} part {} file_id {} from n {}",
                p.upload_id,
                p.number,
                key_of(&Bson::ObjectId(p.file_id)),
                p.base
            ));
        }
        for (b, id, key) in &self.missing_contents {
            line(format!(
                "missing content: bucket {b} object {} ({key})",
                key_of(id)
            ));
        }
        for (b, id, key) in &self.unreferenced_objects {
            line(format!(
                "object without a reference: bucket {b} object {} ({key})",
                key_of(id)
            ));
        }
        for (b, sha) in &self.unreferenced_contents {
            line(format!("unreferenced content: bucket {b} sha1 {sha}"));
        }
        for (b, owner) in &self.orphan_references {
            line(format!(
                "reference whose owner is gone: bucket {b} owner {}",
                key_of(owner)
            ));
        }
        for (b, id, key) in &self.unreadable {
            line(format!(
                "unreadable content pointer: bucket {b} object {} ({key})",
                key_of(id)
            ));
        }
        for (b, sha) in &self.unreadable_contents {
            line(format!("content in an unknown form: bucket {b} sha1 {sha}"));
        }
        for (b, sha) in &self.cats_without_bases {
            line(format!(
                "cat content without its refBase: bucket {b} sha1 {sha}"
            ));
        }
        line(format!(
            "summary: {} orphan file ids, {} broken files, {} uploads without parts, {} parts without upload, {} stale write registrations, {} expired leases, {} expired locks",
            self.orphan_chunks.len(),
            self.broken_files.len(),
            self.uploads_without_parts.len(),
            self.parts_without_upload.len(),
            self.stale_writes,
            self.stale_leases,
            self.stale_locks
        ));
        line(format!(
            "content store: {} objects whose content is missing, {} objects without a reference, {} unreferenced contents, {} cat contents without their refBase, {} references whose owner is gone, {} unreadable forms",
            self.missing_contents.len(),
            self.unreferenced_objects.len(),
            self.unreferenced_contents.len(),
            self.cats_without_bases.len(),
            self.orphan_references.len(),
            self.unreadable.len() + self.unreadable_contents.len()
        ));
        if let Some((c, p, l, k)) = self.repaired {
            line(format!(
                "repaired: removed {c} chunks, {p} part records, {l} leases, {k} locks; wrote back {} references and {} refBase documents; released {} orphan references; reclaimed {} unreferenced contents",
                self.unreferenced_objects.len(),
                self.cats_without_bases.len(),
                self.orphan_references.len(),
                self.reclaimed_contents
            ));
        }
        out
    }
}

/// Chunks of one file id: how many, and the highest `n`.
struct ChunkStats {
    count: u64,
    max_n: i64,
}

/// What `fsck --usage` found: a line per metered bucket, then a summary.
pub fn render_usage(checks: &[crate::storage::objects::UsageCheck]) -> String {
    let mut out = String::new();
    for c in checks {
        let (b, o, p) = c.counted;
        let (rb, ro, rp) = c.recounted;
        let state = match (c.differs(), c.repaired) {
            (false, _) => "equal".to_owned(),
            (true, true) => "repaired".to_owned(),
            (true, false) => "differ".to_owned(),
        };
        if let Some(((cb, co), (sb, so))) = c.account {
            out.push_str(&format!(
                "usage: account {}: {state}: counted {b} bytes, {o} objects, {p} part bytes, \
                 {cb} bytes and {co} objects held; its buckets sum to {rb} bytes, {ro} objects, \
                 {rp} part bytes, {sb} bytes and {so} objects held (off by {} bytes, {} objects, \
                 {} part bytes)\n",
                c.bucket,
                b - rb,
                o - ro,
                p - rp,
            ));
            continue;
        }
        out.push_str(&format!(
            "usage: bucket {}: {state}: counted {b} bytes, {o} objects, {p} part bytes; \
             recounted {rb} bytes, {ro} objects, {rp} part bytes (off by {} bytes, {} objects, \
             {} part bytes); {} files counted first\n",
            c.bucket,
            b - rb,
            o - ro,
            p - rp,
            c.folded
        ));
    }
    let off = checks.iter().filter(|c| c.differs()).count();
    let accounts = checks.iter().filter(|c| c.account.is_some()).count();
    out.push_str(&format!(
        "usage: {} metered buckets, {accounts} accounts, {off} off{}\n",
        checks.len() - accounts,
        if off > 0 && checks.iter().all(|c| !c.differs() || c.repaired) {
            ", all repaired"
        } else {
            ""
        }
    ));
    out
}

/// Runs the check over every bucket (and repairs, if asked).
pub async fn run(store: &ObjectStore, repair: bool) -> Result<Report> {
    let meta = store.meta();
    let mut report = Report::default();
    let buckets = store.gridfs_bucket_names().await?;
    // 1. What the chunks hold, before any reference is read (see the module doc).
    let mut chunks: HashMap<String, Vec<(Bson, ChunkStats)>> = HashMap::new();
    for b in &buckets {
        let groups: Vec<Document> = store
            .gridfs(b)
            .chunks()
            .aggregate(vec![
                doc! {"$group": {"_id": "$files_id", "count": {"$sum": 1}, "maxN": {"$max": "$n"}}},
            ])
            .await?
            .try_collect()
            .await?;
        let stats = groups
            .into_iter()
            .filter_map(|mut g| {
                let count = number(g.get("count"))? as u64;
                let max_n = number(g.get("maxN"))?;
                Some((g.remove("_id")?, ChunkStats { count, max_n }))
            })
            .collect();
        chunks.insert(b.clone(), stats);
    }
    // 2. References, in the order writers hand chunks over.
    let mut registered: HashMap<String, HashSet<String>> = HashMap::new();
    for b in &buckets {
        let ids = meta.registered_file_ids(b).await?;
        registered.insert(b.clone(), ids.iter().map(key_of).collect());
    }
    let parts = meta.all_parts().await?;
    let uploads = meta.all_uploads().await?;
    let mut files: HashMap<String, HashMap<String, (String, u64, u64)>> = HashMap::new();
    for b in &buckets {
        // Objects of a content-addressed bucket have no chunks of their own (their content
        // is checked with the bucket's references below).
        let docs: Vec<Document> = store
            .gridfs(b)
            .files()
            // A reaped write's tombstone is no file: chunks under its id are orphans.
            .find(doc! {"in": {"$exists": false}, "sha": {"$exists": false}, "metadata.s3Reaped": {"$exists": false}})
            .projection(doc! {"_id": 1, "length": 1, "chunkSize": 1, "filename": 1})
            .await?
            .try_collect()
            .await?;
        let m = docs
            .iter()
            .filter_map(|d| {
                let len = number(d.get("length"))? as u64;
                let cs = number(d.get("chunkSize"))?.max(1) as u64;
                let name = d.get_str("filename").unwrap_or_default().to_owned();
                Some((key_of(d.get("_id")?), (name, len, len.div_ceil(cs))))
            })
            .collect();
        files.insert(b.clone(), m);
    }
    let reclaiming: HashSet<String> = meta
        .pending_reclaims(i64::MAX)
        .await?
        .iter()
        .map(|p| format!("{}/{}", p.bucket, key_of(&p.file_id)))
        .collect();
    let part_ids: HashSet<String> = parts
        .iter()
        .map(|p| key_of(&Bson::ObjectId(p.file_id)))
        .collect();
    let upload_ids: HashSet<String> = uploads
        .iter()
        .map(|u| key_of(&Bson::ObjectId(u.file_id)))
        .collect();
    // 3. Judge.
    for b in &buckets {
        let regs = &registered[b];
        let bucket_files = &files[b];
        let mut seen: HashSet<String> = HashSet::new();
        for (id, st) in &chunks[b] {
            let k = key_of(id);
            seen.insert(k.clone());
            if let Some((name, _, want)) = bucket_files.get(&k) {
                if st.count != *want || st.max_n + 1 != *want as i64 {
                    report.broken_files.push((
                        b.clone(),
                        id.clone(),
                        name.clone(),
                        st.count,
                        *want,
                    ));
                }
                continue;
            }
            let referenced = regs.contains(&k)
                || part_ids.contains(&k)
                || upload_ids.contains(&k)
                || reclaiming.contains(&format!("{b}/{k}"))
                || adopting(meta, b, id).await?;
            if !referenced {
                report.orphan_chunks.push((b.clone(), id.clone(), st.count));
            }
        }
        for (k, (name, _, want)) in bucket_files {
            if *want > 0 && !seen.contains(k) {
                report.broken_files.push((
                    b.clone(),
                    Bson::String(k.clone()),
                    name.clone(),
                    0,
                    *want,
                ));
            }
        }
    }
    // A file published after the chunks were counted looks short: count its chunks again.
    let mut confirmed = Vec::new();
    for (b, id, name, have, want) in std::mem::take(&mut report.broken_files) {
        let fid = match &id {
            Bson::String(hex) => mongodb::bson::oid::ObjectId::parse_str(hex)
                .map(Bson::ObjectId)
                .unwrap_or(id.clone()),
            other => other.clone(),
        };
        let now = store
            .gridfs(&b)
            .chunks()
            .count_documents(doc! {"files_id": fid.clone(), "n": {"$lt": want as i64}})
            .await?;
        if now != want {
            confirmed.push((b, fid, name, have.max(now), want));
        }
    }
    report.broken_files = confirmed;
    let open_uploads: HashSet<&str> = uploads.iter().map(|u| u.id.as_str()).collect();
    let with_parts: HashSet<&str> = parts.iter().map(|p| p.upload_id.as_str()).collect();
    report.uploads_without_parts = uploads
        .iter()
        .filter(|u| u.is_open() && !with_parts.contains(u.id.as_str()))
        .map(|u| u.id.clone())
        .collect();
    report.parts_without_upload = parts
        .into_iter()
        .filter(|p| !open_uploads.contains(p.upload_id.as_str()))
        .collect();
    for (b, _) in meta.content_buckets().await? {
        let c = store
            .contents(&b)
            .check(store.gridfs(&b).files(), repair)
            .await?;
        let tag = |v: Vec<(Bson, String)>| {
            v.into_iter()
                .map(|(id, k)| (b.clone(), id, k))
                .collect::<Vec<_>>()
        };
        report.missing_contents.extend(tag(c.missing));
        report
            .unreferenced_objects
            .extend(tag(c.unreferenced_objects));
        report
            .unreferenced_contents
            .extend(c.unreferenced_contents.into_iter().map(|s| (b.clone(), s)));
        report
            .cats_without_bases
            .extend(c.cats_without_bases.into_iter().map(|s| (b.clone(), s)));
        report.reclaimed_contents += c.reclaimed_contents;
        report
            .orphan_references
            .extend(c.orphan_references.into_iter().map(|o| (b.clone(), o)));
        report.unreadable.extend(tag(c.unreadable));
        report
            .unreadable_contents
            .extend(c.unreadable_contents.into_iter().map(|s| (b.clone(), s)));
    }
    report.stale_writes = meta.stale_writes().await?;
    report.stale_leases = meta.expired_leases().await?;
    report.stale_locks = meta.stale_locks().await?;
    if repair {
        let delete = |b: String, filter: Document| async move {
            Ok::<_, crate::storage::gridfs::GridFsError>(
                store
                    .gridfs(&b)
                    .chunks()
                    .delete_many(filter)
                    .await?
                    .deleted_count,
            )
        };
        let mut removed_chunks = 0;
        for (b, id, _) in &report.orphan_chunks {
            removed_chunks += delete(b.clone(), doc! {"files_id": id.clone()}).await?;
        }
        let mut removed_parts = 0;
        for p in &report.parts_without_upload {
            // The part's chunks live in its upload's bucket, which the record does not name;
            // only its own staging range goes (the file id may be a published object's).
            for b in &buckets {
                removed_chunks += delete(b.clone(), p.chunk_filter()).await?;
            }
            removed_parts += meta.delete_part_record(p).await?;
        }
        let leases = meta.purge_expired_leases().await?;
        let locks = meta.purge_stale_locks().await?;
        report.repaired = Some((removed_chunks, removed_parts, leases, locks));
    }
    Ok(report)
}

/// Whether `id` is a content whose adoption (its chunks renamed to its SHA-1 before its files
/// document is written, under the content's lock) may be under way in a blobs bucket.
async fn adopting(meta: &crate::storage::meta::MetaStore, bucket: &str, id: &Bson) -> Result<bool> {
    let (Some(owner), Bson::Binary(b)) = (bucket.strip_suffix("._blobs"), id) else {
        return Ok(false);
    };
    let Ok(sha) = <[u8; 20]>::try_from(b.bytes.as_slice()) else {
        return Ok(false);
    };
    Ok(meta
        .content_lock_held(owner, &crate::storage::content::hex(&sha))
        .await?)
}

/// A BSON value as a comparable string key (ObjectIds and other ids alike).
fn key_of(b: &Bson) -> String {
    match b {
        Bson::ObjectId(o) => o.to_hex(),
        other => format!("{other:?}"),
    }
}

fn number(b: Option<&Bson>) -> Option<i64> {
    match b? {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) => Some(*d as i64),
        _ => None,
    }
}
