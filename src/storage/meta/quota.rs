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
//!   lease in the database's time that its writer renews. Publishing converts the hold into
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
                .map(|a| {
                    a.iter()
                        .filter_map(|h| h.as_document().and_then(Hold::from_document))
                        .collect()
                })
                .unwrap_or_default(),
        }
    }
}

/// One write's hold.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The hold's id: an object write's file id (hex).
    pub id: String,
    /// Bytes held.
    pub bytes: i64,
    /// Objects held.
    pub objects: i64,
    /// When its lease ends, in the database's time.
    pub expires: mongodb::bson::DateTime,
}

impl Hold {
    fn from_document(d: &Document) -> Option<Self> {
        Some(Self {
            id: d.get_str("h").ok()?.to_owned(),
            bytes: d.get_i64("b").unwrap_or(0),
            objects: d.get_i64("o").unwrap_or(0),
            expires: *d.get_datetime("exp").ok()?,
        })
    }
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
    ) -> mongodb::error::Result<mongodb::results::UpdateResult> {
        let mut attempt = 0_u64;
        loop {
            match self
                .usage()
                .update_one(filter.clone(), update.clone())
                .await
            {
                Err(e) if crate::dberror::is_write_conflict(&e) && attempt < 200 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 2)).await;
                }
                r => return r,
            }
        }
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

    /// Takes a new hold of `bytes` and `objects` if they fit; `false` when they do not.
    pub async fn hold(
        &self,
        bucket: &str,
        id: &str,
        bytes: i64,
        objects: i64,
    ) -> mongodb::error::Result<bool> {
        let hold = doc! {"h": id, "b": bytes, "o": objects, "exp": self.clock.after(HOLD_LEASE)};
        self.change_usage(
            bucket,
            doc! {"holds.h": {"$ne": id}},
            Some(room(bytes, objects)),
            doc! {"$inc": {"reservedBytes": bytes, "reservedObjects": objects},
            "$push": {"holds": hold}},
        )
        .await
    }

    /// Grows a hold by `bytes` if they fit (and renews its lease); `false` when they do not
    /// or the hold is gone.
    pub async fn grow_hold(
        &self,
        bucket: &str,
        id: &str,
        bytes: i64,
    ) -> mongodb::error::Result<bool> {
        self.change_usage(
            bucket,
            doc! {"holds.h": id},
            Some(room(bytes, 0)),
            doc! {"$inc": {"reservedBytes": bytes, "holds.$.b": bytes},
            "$set": {"holds.$.exp": self.clock.after(HOLD_LEASE)}},
        )
        .await
    }

    /// Renews a hold's lease; `false` when it is gone (the janitor settled it: its write
    /// must not publish).
    pub async fn renew_hold(&self, bucket: &str, id: &str) -> mongodb::error::Result<bool> {
        self.change_usage(
            bucket,
            doc! {"holds.h": id},
            None,
            doc! {"$set": {"holds.$.exp": self.clock.after(HOLD_LEASE)}},
        )
        .await
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
        let mut guess = Some((hold.bytes, hold.objects));
        for _ in 0..100 {
            let (held, objs) = match guess.take() {
                Some(g) => g,
                None => match self.find_hold(bucket, &hold.id).await? {
                    Some(stored) => (stored.bytes, stored.objects),
                    None => return Ok(false),
                },
            };
            let settled = self
                .change_usage(
                    bucket,
                    doc! {"holds": {"$elemMatch": {"h": &hold.id, "b": held, "o": objs}}},
                    None,
                    doc! {"$pull": {"holds": {"h": &hold.id}},
                    "$inc": {"reservedBytes": -held, "reservedObjects": -objs,
                             "bytes": bytes, "objects": objects}},
                )
                .await?;
            if settled {
                return Ok(true);
            }
            // Not as guessed (grown by an update whose answer was lost), or settled: read it.
        }
        Ok(false)
    }

    /// One hold as the database has it, `None` when it is settled.
    pub async fn find_hold(&self, bucket: &str, id: &str) -> mongodb::error::Result<Option<Hold>> {
        let d = self
            .usage()
            .find_one(doc! {"_id": bucket_usage_id(bucket), "holds.h": id})
            .projection(doc! {"holds": {"$elemMatch": {"h": id}}})
            .await?;
        Ok(d.and_then(|d| Counted::from_document(&d).holds.into_iter().next()))
    }

    /// Buckets with a hold whose lease is over: `(bucket, its holds)`, for the janitor.
    pub async fn lapsed_holds(&self) -> mongodb::error::Result<Vec<(String, Vec<Hold>)>> {
        use futures::TryStreamExt;
        let now = self.clock.now();
        let docs: Vec<Document> = self
            .usage()
            .find(doc! {"holds.exp": {"$lt": now}})
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
                Some((bucket, holds))
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

    /// The client, for those transactions' sessions.
    pub fn client(&self) -> &mongodb::Client {
        self.db.client()
    }
}
