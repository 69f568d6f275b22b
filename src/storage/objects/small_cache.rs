//! Chunk 0 of small objects this instance recently read or wrote, by where a GET finds them
//! (a key's newest files document, or a versioned key's master or version entry), so that a
//! GET of a known small object sends a plain `find` of its files document instead of the
//! `$lookup` join (see `first_chunk`), and reads no chunk.
//!
//! Why it is safe across instances: an entry is only a guess. Every GET still reads the files
//! document (or version entry) from the database, and the cached chunk is used only when that
//! document describes the same file as the entry: the same id, `uploadDate`, `length` and
//! `chunkSize`. grids3 never changes a file's chunks under its files document (it writes a new
//! file, with a new id, for every write; a conversion between storage modes rewrites the same
//! bytes), so the bytes are those the join would have read. Another instance's overwrite or
//! delete shows as another id or no document: the entry is replaced or dropped, never served.
//! Another GridFS writer may delete a file and write new bytes under the same `_id` (GridFS
//! allows it; PyMongo's `put(_id=...)` does it): its new files document has its own upload
//! date (and mostly another length), so the entry is not used.
//!
//! Bounded in bytes (`--small-object-cache-mib`), least recently used out first; 0 turns it
//! off. Entries hold the chunk as stored (sealed objects stay sealed: the key is still
//! needed on every read).

use std::sync::Mutex;

use mongodb::bson::{Bson, RawDocumentBuf};

/// Bytes an entry costs beyond its chunk and slot (the map's node and hash slot, the slot's
/// `String`, the id, the `Arc`).
const OVERHEAD: usize = 256;

/// Entries at most, whatever their size (the map's own memory stays bounded too).
const MAX_ENTRIES: usize = 1 << 20;

#[derive(Clone)]
pub struct Entry {
    /// The file whose chunk 0 this is: its id, upload date, length and chunk size (see the
    /// module's documentation).
    pub file_id: Bson,
    pub file: FileStamp,
    /// Chunk 0, as the chunks collection holds it.
    pub chunk: std::sync::Arc<RawDocumentBuf>,
}

struct Inner {
    map: lru::LruCache<String, Entry>,
    bytes: usize,
}

/// See the module's documentation.
pub struct SmallCache {
    cap: usize,
    max_entries: usize,
    inner: Mutex<Inner>,
}

impl Default for SmallCache {
    /// Off.
    fn default() -> Self {
        Self::new(0)
    }
}

/// What tells one GridFS file from another written later under the same id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileStamp {
    pub upload_date: i64,
    pub length: i64,
    pub chunk_size: i64,
}

fn weight(slot: &str, e: &Entry) -> usize {
    // (Another GridFS writer's file id may be any value, a long string among them.)
    let id = match &e.file_id {
        Bson::String(s) => s.len(),
        Bson::Binary(b) => b.bytes.len(),
        Bson::ObjectId(_) => 0,
        other => {
            mongodb::bson::to_vec(&mongodb::bson::doc! {"": other.clone()}).map_or(64, |v| v.len())
        }
    };
    slot.len() + id + e.chunk.as_bytes().len() + OVERHEAD
}

/// Where a GET finds a key: `kind` tells the collection (`f` the files document by name,
/// `v` a version index entry by `_id`), so that no two ways of finding collide.
pub fn slot(bucket: &str, kind: char, name: &str) -> String {
    format!("{bucket}\u{0}{kind}\u{0}{name}")
}

impl std::fmt::Debug for SmallCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SmallCache({} of {} bytes)", self.bytes(), self.cap)
    }
}

impl SmallCache {
    /// A cache of at most `cap` bytes (off when 0).
    pub fn new(cap: usize) -> Self {
        Self {
            cap,
            max_entries: MAX_ENTRIES,
            inner: Mutex::new(Inner {
                // Unbounded: the map grows with its entries (a bounded one allocates its whole
                // capacity at once); `put` keeps it within MAX_ENTRIES and `cap` bytes.
                map: lru::LruCache::unbounded(),
                bytes: 0,
            }),
        }
    }

    pub fn enabled(&self) -> bool {
        self.cap > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The entry at `slot`, if any (and marks it used).
    pub fn get(&self, slot: &str) -> Option<Entry> {
        if !self.enabled() {
            return None;
        }
        self.lock().map.get(slot).cloned()
    }

    /// Remembers `chunk` as chunk 0 of `file_id`, found at `slot`. A chunk larger than an
    /// eighth of the cache is not kept (one object never flushes the rest).
    pub fn put(
        &self,
        slot: &str,
        file_id: Bson,
        file: FileStamp,
        chunk: std::sync::Arc<RawDocumentBuf>,
    ) {
        let e = Entry {
            file_id,
            file,
            chunk,
        };
        let w = weight(slot, &e);
        if !self.enabled() || w > self.cap / 8 {
            self.forget(slot);
            return;
        }
        let mut g = self.lock();
        // `push` hands back the entry it replaced (an unbounded map evicts nothing itself).
        if let Some((s, old)) = g.map.push(slot.to_owned(), e) {
            g.bytes -= weight(&s, &old);
        }
        g.bytes += w;
        while g.bytes > self.cap || g.map.len() > self.max_entries {
            match g.map.pop_lru() {
                Some((s, old)) => g.bytes -= weight(&s, &old),
                None => break,
            }
        }
    }

    /// Drops the entry at `slot`.
    pub fn forget(&self, slot: &str) {
        if !self.enabled() {
            return;
        }
        let mut g = self.lock();
        if let Some(old) = g.map.pop(slot) {
            g.bytes -= weight(slot, &old);
        }
    }

    /// Bytes held (entries' weights).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::{doc, spec::BinarySubtype, Binary};

    fn stamp() -> FileStamp {
        FileStamp {
            upload_date: 1,
            length: 4000,
            chunk_size: 261_120,
        }
    }

    fn chunk(n: usize) -> std::sync::Arc<RawDocumentBuf> {
        std::sync::Arc::new(
            RawDocumentBuf::from_document(&doc! {"files_id": 1, "n": 0, "data": Binary {
            subtype: BinarySubtype::Generic, bytes: vec![7; n]}})
            .unwrap(),
        )
    }

    #[test]
    fn bounded_in_bytes_least_recently_used_out_first() {
        let c = SmallCache::new(64 * 1024);
        for i in 0..40 {
            c.put(
                &slot("b", 'f', &format!("k{i}")),
                Bson::Int32(i),
                stamp(),
                chunk(4000),
            );
            assert!(
                c.bytes() <= 64 * 1024,
                "over the bound at {i}: {}",
                c.bytes()
            );
        }
        // 15 of about 4.3 KB fit in 64 KiB: the newest, and k0..k24 went.
        assert!(c.get(&slot("b", 'f', "k0")).is_none());
        assert!(c.get(&slot("b", 'f', "k39")).is_some());
        // A use keeps an entry: k30 used, then 8 more put, and k31 goes before it.
        assert!(c.get(&slot("b", 'f', "k30")).is_some());
        for i in 40..48 {
            c.put(
                &slot("b", 'f', &format!("k{i}")),
                Bson::Int32(i),
                stamp(),
                chunk(4000),
            );
        }
        assert!(c.get(&slot("b", 'f', "k30")).is_some());
        assert!(c.get(&slot("b", 'f', "k31")).is_none());
        // Replacing an entry counts its bytes once.
        let before = c.bytes();
        c.put(
            &slot("b", 'f', "k47"),
            Bson::Int32(99),
            stamp(),
            chunk(4000),
        );
        assert_eq!(c.bytes(), before);
        assert_eq!(
            c.get(&slot("b", 'f', "k47")).unwrap().file_id,
            Bson::Int32(99)
        );
        c.forget(&slot("b", 'f', "k47"));
        assert!(c.get(&slot("b", 'f', "k47")).is_none());
        assert!(c.bytes() < before);
    }

    #[test]
    fn off_or_too_large_keeps_nothing() {
        let off = SmallCache::new(0);
        off.put("s", Bson::Int32(1), stamp(), chunk(10));
        assert!(off.get("s").is_none());
        let small = SmallCache::new(8 * 1024);
        small.put("s", Bson::Int32(1), stamp(), chunk(2000));
        assert!(small.get("s").is_none(), "over an eighth of the cache");
        assert_eq!(small.bytes(), 0);
    }

    #[test]
    fn bounded_in_entries_too() {
        // Tiny entries: the count bound, not the bytes, holds the map (checked with a cache
        // large enough for all of them in bytes).
        let c = SmallCache {
            max_entries: 1000,
            ..SmallCache::new(usize::MAX / 2)
        };
        let one = chunk(1);
        for i in 0..1010 {
            c.put(&format!("s{i}"), Bson::Int32(1), stamp(), one.clone());
        }
        assert_eq!(c.lock().map.len(), 1000);
        let sum: usize = c.lock().map.iter().map(|(s, e)| weight(s, e)).sum();
        assert_eq!(c.bytes(), sum, "the count of bytes follows evictions");
        assert!(c.get("s9").is_none() && c.get("s1009").is_some());
    }
}
