//! Account limits (issue 62): an account's usage document (`_id: "a:<account id>"`), shaped
//! like a bucket's but without holds, counts every bucket of the account that is linked to
//! it, and every change of a linked bucket's counters changes it too, in one transaction
//! whose updates are each conditional on room under their own limits.
//!
//! - **The link** is the bucket's usage document's `acct` field (the account document's id).
//!   A bucket is linked once, in a transaction that adds what its counters hold to the
//!   account's, and stays linked (clearing the limit keeps the counting, as for buckets).
//! - **Unlinked writes cost nothing extra:** a bucket this process has not seen linked is
//!   updated as before, by one update whose filter also says `acct` is absent. Should the
//!   bucket have been linked meanwhile (by another instance), that update matches nothing;
//!   the writer then reads the link (a refusal, or an already settled hold, reads it too),
//!   remembers it, and goes the linked way. So no write of a linked bucket ever reaches its
//!   counters alone, whatever any instance's cache says.
//! - **What the account's update is:** the counters of the bucket's `$inc` (never its holds),
//!   under the same room filter. Holds stay in the bucket's document only; the account's
//!   `reservedBytes` and `reservedObjects` follow them through those `$inc`s.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Bson, Document};
use mongodb::ClientSession;

use super::quota::{bucket_usage_id, Counted, Limits};
use super::txn::{with_transaction, InTxn};
use super::MetaStore;

/// The counters an account's usage document adds up from its buckets'.
const COUNTERS: [&str; 5] = [
    "bytes",
    "objects",
    "partBytes",
    "reservedBytes",
    "reservedObjects",
];

/// A usage document's counters (`COUNTERS`) as `c` has them, times `sign`.
fn counters_of(c: &Counted, sign: i64) -> Document {
    let values = [
        c.bytes,
        c.objects,
        c.part_bytes,
        c.reserved_bytes,
        c.reserved_objects,
    ];
    COUNTERS
        .iter()
        .zip(values)
        .map(|(k, v)| (k.to_string(), Bson::Int64(sign * v)))
        .collect()
}

/// The `_id` of an account's bucket creation counter (see
/// [`MetaStore::open_account_usage`]).
fn creations_id(account: &str) -> String {
    format!("c:{account}")
}

/// The `_id` of an account's usage document.
pub fn account_usage_id(account: &str) -> String {
    format!("a:{account}")
}

/// Buckets this process has seen linked to their account.
#[derive(Clone, Debug, Default)]
pub(super) struct Linked(Arc<Mutex<HashSet<String>>>);

impl Linked {
    fn has(&self, bucket: &str) -> bool {
        self.0.lock().expect("linked buckets").contains(bucket)
    }

    fn learn(&self, bucket: &str) {
        self.0
            .lock()
            .expect("linked buckets")
            .insert(bucket.to_owned());
    }
}

/// What a change of a bucket's usage did, within a transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageStep {
    /// Both (or the bucket's alone, when it is not linked) changed.
    Changed,
    /// The bucket's document did not match (no room under its limits, or not as read).
    Unmatched,
    /// The account's limits had no room: the transaction must abort.
    AccountFull,
}

impl UsageStep {
    /// Whether it changed.
    pub fn changed(self) -> bool {
        self == Self::Changed
    }
}

/// The account's share of a bucket's update: the counters of its `$inc`.
fn counter_inc(update: &Document) -> Document {
    update
        .get_document("$inc")
        .map(|inc| {
            inc.iter()
                .filter(|(k, _)| COUNTERS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `update` names an array element by the positional operator (`holds.$`).
fn positional(update: &Document) -> bool {
    update
        .values()
        .filter_map(Bson::as_document)
        .any(|ops| ops.keys().any(|k| k.contains(".$")))
}

/// Writes an account's creation counter `cid` in the transaction `s` (see
/// [`MetaStore::open_account_usage`]).
async fn bump_creations(
    usage: &mongodb::Collection<Document>,
    s: &mut ClientSession,
    cid: &str,
) -> mongodb::error::Result<()> {
    usage
        .on(s)
        .update_one(doc! {"_id": cid}, doc! {"$inc": {"n": 1_i64}})
        .upsert(true)
        .session(s)
        .await?;
    Ok(())
}

/// Takes what a forgotten bucket usage document `d` counted off its account's, if it was
/// linked, within the transaction `s`.
async fn forget_counted_in(
    usage: &mongodb::Collection<Document>,
    s: &mut ClientSession,
    d: &Document,
) -> mongodb::error::Result<()> {
    let Ok(a) = d.get_str("acct") else {
        return Ok(());
    };
    let c = Counted::from_document(d);
    usage
        .on(s)
        .update_one(doc! {"_id": a}, doc! {"$inc": counters_of(&c, -1)})
        .session(s)
        .await?;
    Ok(())
}

impl MetaStore {
    /// Changes a bucket's usage document (`filter` besides its `_id`, and `room` when the
    /// change needs room under the limits), and its account's when it is linked; whether it
    /// took effect.
    pub(super) async fn change_usage(
        &self,
        bucket: &str,
        filter: Document,
        room: Option<Document>,
        update: Document,
    ) -> mongodb::error::Result<bool> {
        let mut f = doc! {"_id": bucket_usage_id(bucket)};
        f.extend(filter.clone());
        if room.is_none() && counter_inc(&update).is_empty() {
            // (A lease's renewal: nothing the account counts.)
            return self.update_usage(f, update).await;
        }
        if !self.linked.has(bucket) {
            f.insert("acct", doc! {"$exists": false});
            if let Some(r) = &room {
                f.extend(r.clone());
            }
            if self.update_usage(f, update.clone()).await? {
                return Ok(true);
            }
            // Refused, not as the filter says, or linked meanwhile: only the last is news.
            if self.bucket_link(bucket).await?.is_none() {
                return Ok(false);
            }
            self.linked.learn(bucket);
        }
        let done = with_transaction!(self, |s| {
            let step = self
                .usage_in(&mut s, bucket, filter.clone(), room.clone(), update.clone())
                .await?;
            Ok(step.changed().then_some(()))
        })?;
        Ok(done.is_some())
    }

    /// [`Self::change_usage`] within the transaction `s`, which the caller aborts unless it
    /// answers [`UsageStep::Changed`]. The bucket's document is read by the update itself,
    /// so an unlinked bucket costs no more than before.
    pub async fn usage_in(
        &self,
        s: &mut ClientSession,
        bucket: &str,
        filter: Document,
        room: Option<Document>,
        update: Document,
    ) -> mongodb::error::Result<UsageStep> {
        let mut f = doc! {"_id": bucket_usage_id(bucket)};
        f.extend(filter);
        if let Some(r) = &room {
            f.extend(r.clone());
        }
        let inc = counter_inc(&update);
        let usage = self.usage().on(s);
        let before = if positional(&update) {
            // An update of the hold its filter matched (`holds.$`): an update, then a read of
            // the link in the same transaction. The local database refuses the positional
            // operator in `findAndModify` (MongoDB takes it), and it is a hold's growth or
            // renewal, not the common path.
            let id = f.get("_id").cloned().unwrap_or(Bson::Null);
            if usage
                .update_one(f, update)
                .session(&mut *s)
                .await?
                .matched_count
                == 0
            {
                return Ok(UsageStep::Unmatched);
            }
            usage
                .find_one(doc! {"_id": id})
                .projection(doc! {"acct": 1})
                .session(&mut *s)
                .await?
        } else {
            usage
                .find_one_and_update(f, update)
                .projection(doc! {"acct": 1})
                .session(&mut *s)
                .await?
        };
        let Some(before) = before else {
            return Ok(UsageStep::Unmatched);
        };
        let Ok(acct) = before.get_str("acct") else {
            return Ok(UsageStep::Changed);
        };
        self.linked.learn(bucket);
        if inc.is_empty() {
            return Ok(UsageStep::Changed);
        }
        let mut af = doc! {"_id": acct};
        if let Some(r) = room {
            af.extend(r);
        }
        let n = usage
            .update_one(af, doc! {"$inc": inc})
            .session(&mut *s)
            .await?
            .matched_count;
        Ok(if n == 1 {
            UsageStep::Changed
        } else {
            UsageStep::AccountFull
        })
    }

    /// [`Self::usage_in`] of counters alone (`inc`), with no condition: what data the
    /// transaction changed, counted.
    pub async fn count_in(
        &self,
        s: &mut ClientSession,
        bucket: &str,
        inc: Document,
    ) -> mongodb::error::Result<UsageStep> {
        self.usage_in(s, bucket, doc! {}, None, doc! {"$inc": inc})
            .await
    }

    /// Writes a bucket's usage document first thing in the transaction `s`, so that the
    /// transaction holds it from its start: the bucket's writers then wait for it (a moment)
    /// instead of making it conflict and start again, which under steady writes it did until
    /// it gave up (found in review: a first limit on a busy bucket failed after minutes).
    pub async fn hold_usage_in(
        &self,
        s: &mut ClientSession,
        bucket: &str,
    ) -> mongodb::error::Result<()> {
        self.usage()
            .on(s)
            .update_one(
                doc! {"_id": bucket_usage_id(bucket)},
                doc! {"$inc": {"folds": 1_i64}},
            )
            .session(s)
            .await?;
        Ok(())
    }

    /// The buckets whose usage is linked to an account.
    pub async fn linked_buckets(&self) -> mongodb::error::Result<HashSet<String>> {
        let names = self
            .buckets_counted_where(doc! {"acct": {"$exists": true}})
            .await?;
        Ok(names.into_iter().collect())
    }

    /// The account document a bucket's usage is linked to, as stored.
    pub async fn bucket_link(&self, bucket: &str) -> mongodb::error::Result<Option<String>> {
        Ok(self
            .usage()
            .find_one(doc! {"_id": bucket_usage_id(bucket)})
            .projection(doc! {"acct": 1})
            .await?
            .and_then(|d| d.get_str("acct").ok().map(str::to_owned)))
    }

    /// Opens an account's usage document, without limits, if it has none (before its buckets
    /// are listed and linked, so that the limit never applies to a partial count). With the
    /// account's creation counter (`c:<account>`), which every CreateBucket of the account
    /// writes too ([`Self::create_bucket_counted`]): the two conflict, so a bucket created
    /// meanwhile either sees the document (and links itself) or is listed afterwards.
    pub async fn open_account_usage(&self, account: &str) -> mongodb::error::Result<()> {
        let mut zero = Document::new();
        for c in COUNTERS {
            zero.insert(c, 0_i64);
        }
        zero.insert("account", account);
        let usage = self.usage();
        let (aid, cid) = (account_usage_id(account), creations_id(account));
        with_transaction!(self, |s| {
            bump_creations(&usage, &mut s, &cid).await?;
            usage
                .on(&s)
                .update_one(doc! {"_id": &aid}, doc! {"$setOnInsert": zero.clone()})
                .upsert(true)
                .session(&mut s)
                .await?;
            Ok(Some(()))
        })?;
        Ok(())
    }

    /// Sets an account's limits (its document must be open and its buckets linked; `None`s
    /// clear them, counting goes on).
    pub async fn set_account_limits(
        &self,
        account: &str,
        limits: Limits,
    ) -> mongodb::error::Result<()> {
        let update = super::quota::limits_update(limits);
        self.upsert_usage(account_usage_id(account), update).await
    }

    /// `update_one` with upsert on a usage document, again while it conflicts.
    pub(super) async fn upsert_usage(
        &self,
        id: String,
        update: Document,
    ) -> mongodb::error::Result<()> {
        let mut attempt = 0_u64;
        loop {
            match self
                .usage()
                .update_one(doc! {"_id": &id}, update.clone())
                .upsert(true)
                .await
            {
                Err(e) if crate::dberror::is_write_conflict(&e) && attempt < 200 => {
                    attempt += 1;
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 2)).await;
                }
                r => return r.map(drop),
            }
        }
    }

    /// Whether an account has a usage document (its buckets are to be linked).
    pub async fn account_metered(&self, account: &str) -> mongodb::error::Result<bool> {
        Ok(self
            .usage()
            .find_one(doc! {"_id": account_usage_id(account)})
            .projection(doc! {"_id": 1})
            .await?
            .is_some())
    }

    /// Links a metered bucket to its account: the account's counters take what the bucket's
    /// hold, in the transaction that sets the link, so a write that changed the bucket's
    /// meanwhile makes it start again. `false` when the bucket has no usage document.
    pub async fn link_bucket(&self, bucket: &str, account: &str) -> mongodb::error::Result<bool> {
        let aid = account_usage_id(account);
        let bid = bucket_usage_id(bucket);
        let usage = self.usage();
        let linked = with_transaction!(self, |s| {
            let usage = usage.on(&s);
            // The link is the transaction's first statement, and it reads the counters it
            // moves as it writes: no window between the read and the write for a writer of
            // the bucket to fall into (such writers then wait for this short transaction).
            let Some(d) = usage
                .find_one_and_update(
                    doc! {"_id": &bid, "acct": {"$exists": false}},
                    doc! {"$set": {"acct": &aid}},
                )
                .session(&mut s)
                .await?
            else {
                // Linked already, or no usage document.
                let there = usage
                    .find_one(doc! {"_id": &bid, "acct": &aid})
                    .projection(doc! {"_id": 1})
                    .session(&mut s)
                    .await?
                    .is_some();
                return Ok(Some(there));
            };
            // (Where a test writes into the bucket between the link and its count.)
            crate::failpoint::hit("quota.link_read", bucket).await;
            let c = Counted::from_document(&d);
            let moved = usage
                .update_one(doc! {"_id": &aid}, doc! {"$inc": counters_of(&c, 1)})
                .session(&mut s)
                .await?
                .matched_count;
            // No account document (the caller opens it first): nothing to link to.
            Ok(if moved == 1 { Some(true) } else { None })
        })?;
        if linked == Some(true) {
            self.linked.learn(bucket);
        }
        Ok(linked == Some(true))
    }

    /// An account's counted usage and limits; `None` when it has no usage document.
    pub async fn account_counted(&self, account: &str) -> mongodb::error::Result<Option<Counted>> {
        Ok(self
            .usage()
            .find_one(doc! {"_id": account_usage_id(account)})
            .await?
            .map(|d| Counted::from_document(&d)))
    }

    /// Every account usage document: `(account id, counters)`.
    pub async fn all_accounts_counted(&self) -> mongodb::error::Result<Vec<(String, Counted)>> {
        self.counted_under('a').await
    }

    /// The counters whose limits refused a change of `bytes` and `objects` in `bucket`: the
    /// bucket's when they have no room for it, else its account's (`true`), for a refusal's
    /// message.
    pub async fn refusing_counted(
        &self,
        bucket: &str,
        bytes: i64,
        objects: i64,
    ) -> mongodb::error::Result<(Counted, bool)> {
        let Some(d) = self
            .usage()
            .find_one(doc! {"_id": bucket_usage_id(bucket)})
            .await?
        else {
            return Ok((Counted::default(), false));
        };
        let c = Counted::from_document(&d);
        if !c.fits(bytes, objects) {
            return Ok((c, false));
        }
        match d.get_str("acct") {
            Ok(a) => {
                let a = self
                    .usage()
                    .find_one(doc! {"_id": a})
                    .await?
                    .map(|d| Counted::from_document(&d));
                Ok(a.map_or((c, false), |a| (a, true)))
            }
            Err(_) => Ok((c, false)),
        }
    }

    /// Records a new bucket of `account` (see `create_bucket`; `None` when the name is taken,
    /// else whether it is metered),
    /// in one transaction with what counts it: when the account has a usage document, the
    /// bucket is recorded metered and linked, so no write into it is ever uncounted; and a
    /// usage document left under the name (by a deletion that raced a limit being set) is
    /// forgotten, so the bucket starts empty. The transaction writes the account's creation
    /// counter first (see [`Self::open_account_usage`]).
    pub async fn create_bucket_counted(
        &self,
        info: &super::BucketInfo,
        account: &str,
    ) -> mongodb::error::Result<Option<bool>> {
        let (aid, bid, cid) = (
            account_usage_id(account),
            bucket_usage_id(&info.name),
            creations_id(account),
        );
        let usage = self.usage();
        let buckets = self.buckets.clone();
        let name = info.name.clone();
        let made = self.changed(&info.name, async {
            with_transaction!(self, |s| {
                let (usage, buckets) = (usage.on(&s), buckets.on(&s));
                bump_creations(&usage, &mut s, &cid).await?;
                let limited = usage
                    .find_one(doc! {"_id": &aid})
                    .projection(doc! {"_id": 1})
                    .session(&mut s)
                    .await?
                    .is_some();
                let mut d = info.to_document();
                if limited {
                    d.insert("metered", true);
                }
                match buckets
                    .find_one(doc! {"_id": &name})
                    .projection(doc! {"deleted": 1})
                    .session(&mut s)
                    .await?
                {
                    None => {
                        buckets.insert_one(d).session(&mut s).await?;
                    }
                    // A deleted bucket's tombstone is replaced.
                    Some(t) if t.get_bool("deleted").unwrap_or(false) => {
                        buckets
                            .replace_one(doc! {"_id": &name, "deleted": true}, d)
                            .session(&mut s)
                            .await?;
                    }
                    Some(_) => return Ok(Some(None)),
                }
                if let Some(old) = usage
                    .find_one_and_delete(doc! {"_id": &bid})
                    .session(&mut s)
                    .await?
                {
                    forget_counted_in(&usage, &mut s, &old).await?;
                }
                if limited {
                    let mut fresh = doc! {"_id": &bid, "holds": [], "acct": &aid};
                    for c in COUNTERS {
                        fresh.insert(c, 0_i64);
                    }
                    usage.insert_one(fresh).session(&mut s).await?;
                    self.linked.learn(&name);
                }
                Ok(Some(Some(limited)))
            })
        });
        match made.await {
            Ok(v) => Ok(v.flatten()),
            // Another creator's insert of the name won.
            Err(e) if super::is_duplicate_key(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Forgets a deleted bucket's usage, and takes what it still counted (holds of writes
    /// that raced the deletion, parts) off its account's, in one transaction.
    pub async fn forget_usage(&self, bucket: &str) -> mongodb::error::Result<()> {
        let bid = bucket_usage_id(bucket);
        let usage = self.usage();
        with_transaction!(self, |s| {
            let usage = usage.on(&s);
            let Some(d) = usage
                .find_one_and_delete(doc! {"_id": &bid})
                .session(&mut s)
                .await?
            else {
                return Ok(Some(()));
            };
            forget_counted_in(&usage, &mut s, &d).await?;
            Ok(Some(()))
        })?;
        Ok(())
    }

    /// Sets an account's counters to the sum of its linked buckets', read in the transaction
    /// `s` (for `fsck --usage`); the counters as they were, and the sum.
    pub async fn recount_account_in(
        &self,
        s: &mut ClientSession,
        account: &str,
        repair: bool,
    ) -> mongodb::error::Result<Option<(Counted, Counted)>> {
        use futures::StreamExt as _;
        let aid = account_usage_id(account);
        let usage = self.usage().on(s);
        let Some(d) = usage.find_one(doc! {"_id": &aid}).session(&mut *s).await? else {
            return Ok(None);
        };
        let counted = Counted::from_document(&d);
        let mut sum = Counted::default();
        let mut cur = usage
            .find(doc! {"acct": &aid})
            .projection(doc! {"holds": 0})
            .session(&mut *s)
            .await?;
        let mut docs = Vec::new();
        {
            let mut stream = cur.stream(&mut *s);
            while let Some(d) = stream.next().await {
                docs.push(d?);
            }
        }
        for d in &docs {
            let c = Counted::from_document(d);
            sum.bytes += c.bytes;
            sum.objects += c.objects;
            sum.part_bytes += c.part_bytes;
            sum.reserved_bytes += c.reserved_bytes;
            sum.reserved_objects += c.reserved_objects;
        }
        if repair && !counted.same_counters(&sum) {
            let set = counters_of(&sum, 1);
            usage
                .update_one(doc! {"_id": &aid}, doc! {"$set": set})
                .session(&mut *s)
                .await?;
        }
        Ok(Some((counted, sum)))
    }
}
