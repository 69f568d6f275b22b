//! Quotas (issue 62): a bucket's limits and its counted usage, in one document of
//! `__usage` (`_id: "b:<bucket>"`), so that a write's room is checked and taken in one
//! conditional update, atomically with every other writer's, on whichever instance.
//!
//! - **Counters:** `bytes` and `objects` count what is published (every version, current and
//!   noncurrent, at its logical size), `partBytes` the parts of uploads in progress,
//!   `reservedBytes` and `reservedObjects` what writes in flight hold. A write's room is
//!   `bytes + partBytes + reservedBytes + n <= limitBytes` (and the same for objects), tested
//!   in the update's filter: the usage it reads is the usage it changes.
//! - **Holds:** a write in flight holds its bytes under an id of its own (`holds`), with a
//!   lease in the database's time that its writer renews. Each is stored as one string,
//!   `"<id>|<bytes>|<objects>|<lease end, ms>"`, and every update names a hold by that whole
//!   string (equality, `$pullAll`, the positional `holds.$`): the local database matched
//!   holds stored as subdocuments (`$elemMatch`, `$pull` by a field) at twice the cost, and
//!   every metered write's updates pay it (BENCHMARKS.md, "Holds as strings"). A hold
//!   stored as a subdocument by an older grids3 (`{h, b, o, exp}`) is read and settled all
//!   the same; a renewal rewrites it as a string. Publishing converts the hold into
//!   counted usage, in one update conditional on the hold being there, so it happens once;
//!   a failed write releases it. A hold whose writer died is settled by the janitor once its
//!   lease is over (see `objects::quota`), which decides by the object itself whether it was
//!   published.
//! - **Metered buckets:** only a bucket with a limit (set now or before) pays for any of
//!   this; its bucket document says `metered: true`, which every writer reads from its cache.

use mongodb::bson::{doc, Bson, Document};
use mongodb::Collection;

use super::MetaStore;

/// How long a hold lives without renewal; its writer renews it every third of that.
pub const HOLD_LEASE: std::time::Duration = std::time::Duration::from_secs(30);

/// A hold's lease in `bucket` ([`HOLD_LEASE`]; a test may shorten it, to see a hold outlive
/// its first lease without waiting for one).
pub fn hold_lease(bucket: &str) -> std::time::Duration {
    crate::failpoint::limit("quota.hold_lease", bucket, HOLD_LEASE)
}

/// A bucket's limits; `None` is no limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes (logical).
    pub bytes: Option<i64>,
    /// Objects (versions and delete markers).
    pub objects: Option<i64>,
}

impl Limits {
    /// Whether neither is set.
    pub fn is_none(&self) -> bool {
        self.bytes.is_none() && self.objects.is_none()
    }
}

/// A bucket's counted usage and limits, as its usage document holds them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counted {
    /// The limits.
    pub limits: Limits,
    /// Bytes of published versions.
    pub bytes: i64,
    /// Published versions and delete markers.
    pub objects: i64,
    /// Bytes of parts of uploads in progress.
    pub part_bytes: i64,
    /// Bytes held by writes in flight.
    pub reserved_bytes: i64,
    /// Objects held by writes in flight.
    pub reserved_objects: i64,
    /// Holds in the document.
    pub holds: Vec<Hold>,
}

impl Counted {
    /// Bytes that count against the limit: published, parts, and held.
    pub fn used_bytes(&self) -> i64 {
        self.bytes + self.part_bytes + self.reserved_bytes
    }

    /// Objects that count against the limit.
    pub fn used_objects(&self) -> i64 {
        self.objects + self.reserved_objects
    }

    /// Whether `bytes` and `objects` more fit under the limits.
    pub fn fits(&self, bytes: i64, objects: i64) -> bool {
        self.limits
            .bytes
            .is_none_or(|l| self.used_bytes() + bytes <= l)
            && self
                .limits
                .objects
                .is_none_or(|l| self.used_objects() + objects <= l)
    }

    /// Whether the counters (not the limits or holds) are the same.
    pub fn same_counters(&self, other: &Self) -> bool {
        (
            self.bytes,
            self.objects,
            self.part_bytes,
            self.reserved_bytes,
            self.reserved_objects,
        ) == (
            other.bytes,
            other.objects,
            other.part_bytes,
            other.reserved_bytes,
            other.reserved_objects,
        )
    }

    /// Reads a usage document.
    pub fn from_document(d: &Document) -> Self {
        let n = |k: &str| match d.get(k) {
            Some(Bson::Int64(v)) => *v,
            Some(Bson::Int32(v)) => i64::from(*v),
            Some(Bson::Double(v)) => *v as i64,
            _ => 0,
        };
        let limit = |k: &str| match d.get(k) {
            Some(Bson::Int64(v)) => Some(*v),
            Some(Bson::Int32(v)) => Some(i64::from(*v)),
            _ => None,
        };
        Self {
            limits: Limits {
                bytes: limit("limitBytes"),
                objects: limit("limitObjects"),
            },
            bytes: n("bytes"),
            objects: n("objects"),
            part_bytes: n("partBytes"),
            reserved_bytes: n("reservedBytes"),
            reserved_objects: n("reservedObjects"),
            holds: d
                .get_array("holds")
                .map(|a| a.iter().filter_map(Hold::from_stored).collect())
                .unwrap_or_default(),
        }
    }
}

/// One write's hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    /// The hold's id: an object write's file id (hex).
    pub id: String,
    /// Bytes held.
    pub bytes: i64,
    /// Objects held.
    pub objects: i64,
    /// When its lease ends, in the database's time.
    pub expires: mongodb::bson::DateTime,
    /// The hold as its usage document stores it, by which every update names it.
    pub stored: Bson,
}

impl Hold {
    /// A hold to store.
    pub fn new(id: &str, bytes: i64, objects: i64, expires: mongodb::bson::DateTime) -> Self {
        let stored = Bson::String(format!(
            "{id}|{bytes}|{objects}|{}",
            expires.timestamp_millis()
        ));
        Self {
            id: id.to_owned(),
            bytes,
            objects,
            expires,
            stored,
        }
    }

    /// The same hold with `more` bytes and its lease ending at `expires`, to store in its
    /// place.
    pub fn grown(&self, more: i64, expires: mongodb::bson::DateTime) -> Self {
        Self::new(&self.id, self.bytes + more, self.objects, expires)
    }

    /// A hold as stored: a string, or a subdocument an older grids3 stored.
    fn from_stored(b: &Bson) -> Option<Self> {
        let (id, bytes, objects, expires) = match b {
            Bson::String(s) => {
                let mut f = s.split('|');
                let id = f.next()?;
                let bytes = f.next()?.parse().ok()?;
                let objects = f.next()?.parse().ok()?;
                let ms: i64 = f.next()?.parse().ok()?;
                (id, bytes, objects, mongodb::bson::DateTime::from_millis(ms))
            }
            Bson::Document(d) => (
                d.get_str("h").ok()?,
                d.get_i64("b").unwrap_or(0),
                d.get_i64("o").unwrap_or(0),
                *d.get_datetime("exp").ok()?,
            ),
            _ => return None,
        };
        Some(Self {
            id: id.to_owned(),
            bytes,
            objects,
            expires,
            stored: b.clone(),
        })
    }
}

/// The hold `id` in usage document `d`, if it is there.
pub fn hold_of(d: &Document, id: &str) -> Option<Hold> {
    Counted::from_document(d)
        .holds
        .into_iter()
        .find(|h| h.id == id)
}

/// The `_id` of a bucket's usage document.
pub fn bucket_usage_id(bucket: &str) -> String {
    format!("b:{bucket}")
}

/// The update that sets `limits` in a usage document (`None`s unset theirs).
pub(super) fn limits_update(limits: Limits) -> Document {
    let (mut set, mut unset) = (Document::new(), Document::new());
    for (field, v) in [
        ("limitBytes", limits.bytes),
        ("limitObjects", limits.objects),
    ] {
        match v {
            Some(n) => set.insert(field, n),
            None => unset.insert(field, ""),
        };
    }
    let mut update = Document::new();
    if !set.is_empty() {
        update.insert("$set", set);
    }
    if !unset.is_empty() {
        update.insert("$unset", unset);
    }
    update
}

/// `used + n <= limit`, or no limit, as an aggregation expression.
fn fits(limit: &str, used: &[&str], n: i64) -> Document {
    let mut sum: Vec<Bson> = used
        .iter()
        .map(|f| Bson::from(doc! {"$ifNull": [format!("${f}"), 0_i64]}))
        .collect();
    sum.push(Bson::Int64(n));
    doc! {"$or": [
        {"$eq": [{"$ifNull": [format!("${limit}"), Bson::Null]}, Bson::Null]},
        {"$lte": [{"$add": sum}, format!("${limit}")]},
    ]}
}

/// The filter that matches a usage document with room for `bytes` more bytes and `objects`
/// more objects under its limits (none set: always room).
pub(super) fn room(bytes: i64, objects: i64) -> Document {
    doc! {"$expr": {"$and": [
        fits("limitBytes", &["bytes", "partBytes", "reservedBytes"], bytes),
        fits("limitObjects", &["objects", "reservedObjects"], objects),
    ]}}
}

/// The filter that matches a usage document with room for `n` more objects, whatever its
/// bytes (a Complete adds an object but no bytes: its parts' become the object's).
pub fn objects_room(n: i64) -> Document {
    doc! {"$expr": fits("limitObjects", &["objects", "reservedObjects"], n)}
}

impl MetaStore {
    /// `update_one` on a usage document, sent again while it conflicts with a transaction
    /// (a removal's or a part's, which hold the document until they commit).
    pub(super) async fn update_usage(
        &self,
        filter: Document,
        update: Document,
    ) -> mongodb::error::Result<bool> {
        let mut attempt = 0_u64;
        loop {
            match self.update_usage_once(&filter, &update).await {
                Err(e) if crate::dberror::is_write_conflict(&e) && attempt < 200 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 2)).await;
                }
                r => return r,
            }
        }
    }

    /// One conditional update of a usage document: whether it matched.
    ///
    /// Sent as a `bulkWrite` of one update where the server has the command (MongoDB 8.0+,
    /// the local database), else as an `update`. On MongoDB the two cost the same. The local
    /// database records every `update` as a retryable write and prunes its records on each
    /// one (see BENCHMARKS.md, "SecantusDB's retryable-write record"), which made each usage
    /// update cost its database about a whole small PUT; a `bulkWrite` is not recorded.
    /// Every usage update is conditional on the holds it names, so one applied twice (a
    /// retry after a lost answer, unrecorded) matches nothing the second time.
    async fn update_usage_once(
        &self,
        filter: &Document,
        update: &Document,
    ) -> mongodb::error::Result<bool> {
        use std::sync::atomic::Ordering::Relaxed;
        static NO_BULK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !NO_BULK.load(Relaxed) {
            let model = mongodb::options::UpdateOneModel::builder()
                .namespace(self.usage().namespace())
                .filter(filter.clone())
                .update(update.clone())
                .build();
            let usage = self.usage();
            let op = usage.client().bulk_write(vec![model]);
            let op = match usage.write_concern() {
                Some(wc) => op.write_concern(wc.clone()),
                None => op,
            };
            match op.await {
                Ok(r) => return Ok(r.matched_count == 1),
                Err(e) if crate::dberror::is_unsupported_command(&e) => {
                    NO_BULK.store(true, Relaxed)
                }
                Err(e) => return Err(e),
            }
        }
        let r = self
            .usage()
            .update_one(filter.clone(), update.clone())
            .await?;
        Ok(r.matched_count == 1)
    }

    /// The usage documents.
    pub(super) fn usage(&self) -> Collection<Document> {
        self.db.collection("__usage")
    }

    /// Sets a bucket's limits (`None`s clear them; counting goes on). The bucket becomes
    /// metered first, so that every write that starts after this returns counts; `false` when
    /// the bucket does not exist.
    pub async fn set_bucket_limits(
        &self,
        bucket: &str,
        limits: Limits,
    ) -> mongodb::error::Result<bool> {
        if !self
            .update_live(bucket, doc! {"$set": {"metered": true}})
            .await?
        {
            return Ok(false);
        }
        let mut update = limits_update(limits);
        update.insert(
            "$setOnInsert",
            doc! {
                "bytes": 0_i64, "objects": 0_i64, "partBytes": 0_i64,
                "reservedBytes": 0_i64, "reservedObjects": 0_i64, "holds": [],
            },
        );
        self.upsert_usage(bucket_usage_id(bucket), update).await?;
        Ok(true)
    }

    /// Meters a bucket without changing its limits (an account limit's bucket); `false` when
    /// the bucket does not exist.
    pub async fn meter_bucket(&self, bucket: &str) -> mongodb::error::Result<bool> {
        if !self
            .update_live(bucket, doc! {"$set": {"metered": true}})
            .await?
        {
            return Ok(false);
        }
        self.upsert_usage(
            bucket_usage_id(bucket),
            doc! {"$setOnInsert": {
                "bytes": 0_i64, "objects": 0_i64, "partBytes": 0_i64,
                "reservedBytes": 0_i64, "reservedObjects": 0_i64, "holds": [],
            }},
        )
        .await?;
        Ok(true)
    }

    /// A bucket's counted usage; `None` when it was never metered.
    pub async fn bucket_counted(&self, bucket: &str) -> mongodb::error::Result<Option<Counted>> {
        Ok(self
            .usage()
            .find_one(doc! {"_id": bucket_usage_id(bucket)})
            .await?
            .map(|d| Counted::from_document(&d)))
    }

    /// Takes a new hold of `bytes` and `objects` if they fit: the hold as stored, `None`
    /// when they do not.
    pub async fn hold(
        &self,
        bucket: &str,
        id: &str,
        bytes: i64,
        objects: i64,
    ) -> mongodb::error::Result<Option<Hold>> {
        let hold = Hold::new(id, bytes, objects, self.clock.after(hold_lease(bucket)));
        let took = self
            .change_usage(
                bucket,
                doc! {"holds": {"$ne": &hold.stored}},
                Some(room(bytes, objects)),
                doc! {"$inc": {"reservedBytes": bytes, "reservedObjects": objects},
                "$push": {"holds": &hold.stored}},
            )
            .await?;
        Ok(took.then_some(hold))
    }

    /// Grows a hold by `bytes` if they fit (and renews its lease): the hold as stored now,
    /// `None` when they do not fit or the hold is gone. `hold` may be stale (a renewal or
    /// growth whose answer its writer never heard): the stored one is read and grown.
    pub async fn grow_hold(
        &self,
        bucket: &str,
        hold: &Hold,
        bytes: i64,
    ) -> mongodb::error::Result<Option<Hold>> {
        self.replace_hold(bucket, hold, bytes).await
    }

    /// Renews a hold's lease: the hold as stored now, `None` when it is gone (the janitor
    /// settled it: its write must not publish).
    pub async fn renew_hold(
        &self,
        bucket: &str,
        hold: &Hold,
    ) -> mongodb::error::Result<Option<Hold>> {
        self.replace_hold(bucket, hold, 0).await
    }

    /// Stores `hold` grown by `more` bytes with a new lease, in its place; as it is stored
    /// first (one round trip, nearly always right), then as read.
    async fn replace_hold(
        &self,
        bucket: &str,
        hold: &Hold,
        more: i64,
    ) -> mongodb::error::Result<Option<Hold>> {
        let mut cur = hold.clone();
        for _ in 0..100 {
            let next = cur.grown(more, self.clock.after(hold_lease(bucket)));
            let room = (more > 0).then(|| room(more, 0));
            let mut inc = Document::new();
            if more != 0 {
                inc.insert("reservedBytes", more);
            }
            let mut update = doc! {"$set": {"holds.$": &next.stored}};
            if !inc.is_empty() {
                update.insert("$inc", inc);
            }
            if self
                .change_usage(bucket, doc! {"holds": &cur.stored}, room, update)
                .await?
            {
                return Ok(Some(next));
            }
            // Not as it was known (changed by an update whose answer was lost), gone, or
            // no room: which one is read.
            match self.find_hold(bucket, &hold.id).await? {
                Some(stored) if stored.stored != cur.stored => cur = stored,
                _ => return Ok(None),
            }
        }
        Ok(None)
    }

    /// Ends a hold: what it held is given back, and `bytes` and `objects` are counted as
    /// published (zero for a write that failed). Conditional on the hold being there, so it
    /// happens once whoever (the writer, the janitor) gets there first; `false` when it was
    /// already settled. What is given back is what the database holds, never the caller's
    /// idea of it: a growth the writer never heard answered (a cancelled request, a lost
    /// reply) is given back too.
    pub async fn settle_hold(
        &self,
        bucket: &str,
        hold: &Hold,
        bytes: i64,
        objects: i64,
    ) -> mongodb::error::Result<bool> {
        // First as the caller knows it (one round trip, nearly always right), then as read.
        let mut guess = Some(hold.clone());
        for _ in 0..100 {
            let h = match guess.take() {
                Some(g) => g,
                None => match self.find_hold(bucket, &hold.id).await? {
                    Some(stored) => stored,
                    None => return Ok(false),
                },
            };
            let settled = self
                .change_usage(
                    bucket,
                    doc! {"holds": &h.stored},
                    None,
                    doc! {"$pullAll": {"holds": [&h.stored]},
                    "$inc": {"reservedBytes": -h.bytes, "reservedObjects": -h.objects,
                             "bytes": bytes, "objects": objects}},
                )
                .await?;
            if settled {
                return Ok(true);
            }
            // Not as guessed (grown or renewed by an update whose answer was lost), or
            // settled: read it.
        }
        Ok(false)
    }

    /// One hold as the database has it, `None` when it is settled. (Holds are strings,
    /// which no query can take apart: the document's are read and looked through; this is
    /// the rare path.)
    pub async fn find_hold(&self, bucket: &str, id: &str) -> mongodb::error::Result<Option<Hold>> {
        let d = self
            .usage()
            .find_one(doc! {"_id": bucket_usage_id(bucket)})
            .projection(doc! {"holds": 1})
            .await?;
        Ok(d.and_then(|d| hold_of(&d, id)))
    }

    /// Buckets with a hold whose lease is over: `(bucket, its holds)`, for the janitor.
    /// (Every usage document with holds is read: a lease inside a string is not a field a
    /// query could compare.)
    pub async fn lapsed_holds(&self) -> mongodb::error::Result<Vec<(String, Vec<Hold>)>> {
        use futures::TryStreamExt;
        let now = self.clock.now();
        let docs: Vec<Document> = self
            .usage()
            .find(doc! {"_id": {"$gte": "b:", "$lt": "b;"}, "holds.0": {"$exists": true}})
            .projection(doc! {"holds": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .into_iter()
            .filter_map(|d| {
                let bucket = d.get_str("_id").ok()?.strip_prefix("b:")?.to_owned();
                let holds = Counted::from_document(&d)
                    .holds
                    .into_iter()
                    .filter(|h| h.expires < now)
                    .collect::<Vec<_>>();
                (!holds.is_empty()).then_some((bucket, holds))
            })
            .collect())
    }

    /// Buckets with a usage document (every metered bucket has one).
    pub async fn metered_buckets(&self) -> mongodb::error::Result<Vec<String>> {
        self.buckets_counted_where(doc! {"_id": {"$gte": "b:", "$lt": "b;"}})
            .await
    }

    /// The buckets whose usage documents match `filter`.
    pub(super) async fn buckets_counted_where(
        &self,
        filter: Document,
    ) -> mongodb::error::Result<Vec<String>> {
        use futures::TryStreamExt;
        let docs: Vec<Document> = self
            .usage()
            .find(filter)
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| Some(d.get_str("_id").ok()?.strip_prefix("b:")?.to_owned()))
            .collect())
    }

    /// Every bucket's counted usage: `(bucket, counters)`.
    pub async fn all_counted(&self) -> mongodb::error::Result<Vec<(String, Counted)>> {
        self.counted_under('b').await
    }

    /// The counters of every usage document whose `_id` is `<kind>:<name>`: `(name, counters)`.
    pub(super) async fn counted_under(
        &self,
        kind: char,
    ) -> mongodb::error::Result<Vec<(String, Counted)>> {
        use futures::TryStreamExt;
        let (from, to) = (format!("{kind}:"), format!("{kind};"));
        let docs: Vec<Document> = self
            .usage()
            .find(doc! {"_id": {"$gte": &from, "$lt": to}})
            .projection(doc! {"holds": 0})
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                let b = d.get_str("_id").ok()?.strip_prefix(&from)?.to_owned();
                Some((b, Counted::from_document(d)))
            })
            .collect())
    }

    /// The usage collection, for transactions of the object layer that change counted usage
    /// with the data (see `objects::quota`).
    pub fn usage_collection(&self) -> Collection<Document> {
        self.usage()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_is_stored_as_one_string_and_read_back_in_either_form() {
        let exp = mongodb::bson::DateTime::from_millis(1_765_000_000_123);
        let h = Hold::new("65f0a1b2c3d4e5f601234567", 4096, 1, exp);
        assert_eq!(
            h.stored,
            Bson::String("65f0a1b2c3d4e5f601234567|4096|1|1765000000123".into())
        );
        assert_eq!(Hold::from_stored(&h.stored), Some(h.clone()));
        // Grown: the same id, more bytes, a new lease.
        let g = h.grown(10, mongodb::bson::DateTime::from_millis(1_765_000_030_000));
        assert_eq!(
            (g.id.as_str(), g.bytes, g.objects),
            (h.id.as_str(), 4106, 1)
        );
        assert_ne!(g.stored, h.stored);
        // As an older grids3 stored it: read, and named by that subdocument.
        let old = Bson::Document(doc! {"h": "abc", "b": 7_i64, "o": 0_i64, "exp": exp});
        let o = Hold::from_stored(&old).unwrap();
        assert_eq!(
            (o.id.as_str(), o.bytes, o.objects, o.expires),
            ("abc", 7, 0, exp)
        );
        assert_eq!(o.stored, old);
        // Anything else is no hold.
        for bad in ["abc|1|1", "abc|x|1|5", ""] {
            assert_eq!(Hold::from_stored(&Bson::String(bad.into())), None, "{bad}");
        }
        let d = doc! {"holds": [h.stored.clone(), old]};
        assert_eq!(hold_of(&d, "abc"), Some(o));
        assert_eq!(hold_of(&d, "nope"), None);
    }
}
