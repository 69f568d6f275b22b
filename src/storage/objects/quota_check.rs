//! `grids3 fsck --usage` (issue 62): a metered bucket's counters against a recount taken in
//! the same snapshot as the counters are read, and their repair.
//!
//! Within one transaction: the usage document, every object's files document, the holds'
//! objects, the counted delete markers, and the parts of the bucket's metered uploads. Counted bytes are expected to be
//! the recount less what holds still carry (objects published whose holds were not yet
//! converted are in `reservedBytes`, not `bytes`). A repair sets the counters to the
//! recount in that same transaction, so a write that changed either since makes it conflict
//! and start again: it never overwrites a count it did not see.

use crate::storage::meta::txn::InTxn;
use std::collections::HashMap;

use mongodb::bson::{doc, Bson, Document};

use super::meter::COUNTED;
use super::quota::{commit, transient};
use super::usage::logical_size;
use super::*;
use crate::storage::meta::{bucket_usage_id, Counted};

/// One metered bucket's counters against its recount.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageCheck {
    /// The bucket.
    pub bucket: String,
    /// Counted `(bytes, objects, part bytes)`.
    pub counted: (i64, i64, i64),
    /// Recounted, less what holds carry.
    pub recounted: (i64, i64, i64),
    /// Files not yet counted (written before the bucket was metered), counted by this check
    /// first.
    pub folded: u64,
    /// Whether the counters were set to the recount.
    pub repaired: bool,
    /// An account's check (`bucket` is its id): its counters against the sum of its linked
    /// buckets', which it also compares by reserved `(bytes, objects)`.
    pub account: Option<((i64, i64), (i64, i64))>,
}

impl UsageCheck {
    /// Whether the counters differ from the recount.
    pub fn differs(&self) -> bool {
        self.counted != self.recounted || self.account.is_some_and(|(c, r)| c != r)
    }
}

impl ObjectStore {
    /// Checks (and with `repair`, repairs) the counters of every metered bucket.
    pub async fn check_usage(&self, repair: bool) -> Result<Vec<UsageCheck>> {
        let mut out = Vec::new();
        for b in self.meta.metered_buckets().await? {
            let folded = self.fold_uncounted(&b, usize::MAX).await?;
            let mut c = self.check_bucket_usage(&b, repair).await?;
            c.folded = folded;
            out.push(c);
        }
        // Accounts after their buckets, whose repairs (`$inc`s through the link) move them.
        for (a, _) in self.meta.all_accounts_counted().await? {
            out.push(self.check_account_usage(&a, repair).await?);
        }
        Ok(out)
    }

    async fn check_bucket_usage(&self, bucket: &str, repair: bool) -> Result<UsageCheck> {
        let files = self.gridfs(bucket).files().clone();
        let usage = self.meta.usage_collection();
        let uploads = self.db.collection::<Document>("__uploads");
        let parts = self.db.collection::<Document>("__parts");
        let uid = bucket_usage_id(bucket);
        let mut attempt = 0_u64;
        loop {
            attempt += 1;
            let mut s = self.meta.begin().await?;
            let (files, usage, uploads, parts) =
                (files.on(&s), usage.on(&s), uploads.on(&s), parts.on(&s));
            let r: mongodb::error::Result<UsageCheck> = async {
                let counted = usage
                    .find_one(doc! {"_id": &uid})
                    .session(&mut s)
                    .await?
                    .map(|d| Counted::from_document(&d))
                    .unwrap_or_default();
                // Every counted object, by id (for the holds), and the sums.
                let mut sizes: HashMap<String, i64> = HashMap::new();
                let (mut bytes, mut objects) = (0_i64, 0_i64);
                let mut cur = files
                    .find(doc! {format!("metadata.{COUNTED}"): true})
                    .projection(doc! {"length": 1, "metadata.s3Sse.size": 1})
                    .session(&mut s)
                    .await?;
                let mut ids = std::collections::HashSet::new();
                while let Some(d) = cur.next(&mut s).await {
                    let d = d?;
                    let size = logical_size(&d);
                    bytes += size;
                    objects += 1;
                    if let Some(Bson::ObjectId(o)) = d.get("_id") {
                        sizes.insert(o.to_hex(), size);
                        ids.insert(*o);
                    }
                }
                // Published objects whose holds are not converted yet are counted there.
                for h in &counted.holds {
                    if let Some(size) = sizes.get(&h.id) {
                        bytes -= size;
                        objects -= 1;
                    }
                }
                // Delete markers count as objects of 0 bytes.
                objects += self.counted_markers_in(bucket, &mut s).await?;
                // Parts of metered uploads whose objects are not published.
                let mut open = Vec::new();
                let mut ups = uploads
                    .find(doc! {"bucket": bucket, "metered": true, "completed": {"$exists": false}})
                    .projection(doc! {"_id": 1, "fileId": 1})
                    .session(&mut s)
                    .await?;
                while let Some(d) = ups.next(&mut s).await {
                    let d = d?;
                    let published = d.get_object_id("fileId").is_ok_and(|f| ids.contains(&f));
                    if let (Ok(id), false) = (d.get_str("_id"), published) {
                        open.push(id.to_owned());
                    }
                }
                let mut part_bytes = 0_i64;
                let mut pc = parts
                    .find(doc! {"uploadId": {"$in": open}})
                    .projection(doc! {"size": 1})
                    .session(&mut s)
                    .await?;
                while let Some(d) = pc.next(&mut s).await {
                    part_bytes += d?.get_i64("size").unwrap_or(0);
                }
                let check = UsageCheck {
                    bucket: bucket.to_owned(),
                    counted: (counted.bytes, counted.objects, counted.part_bytes),
                    recounted: (bytes, objects, part_bytes),
                    folded: 0,
                    repaired: false,
                    account: None,
                };
                if repair && check.differs() {
                    // As increments (equal to setting the recount, in this snapshot), so that
                    // a linked account's counters move by the same.
                    let fix = doc! {"$inc": {
                        "bytes": bytes - counted.bytes,
                        "objects": objects - counted.objects,
                        "partBytes": part_bytes - counted.part_bytes,
                    }};
                    self.meta
                        .usage_in(&mut s, bucket, doc! {}, None, fix)
                        .await?;
                }
                Ok(check)
            }
            .await;
            let r = match r {
                Ok(mut c) if c.differs() && repair => commit(&mut s).await.map(|()| {
                    c.repaired = true;
                    c
                }),
                Ok(c) => {
                    let _ = s.abort_transaction().await;
                    Ok(c)
                }
                Err(e) => {
                    let _ = s.abort_transaction().await;
                    Err(e)
                }
            };
            match r {
                Err(e) if transient(&e) && attempt < 100 => {
                    tokio::time::sleep(std::time::Duration::from_millis(attempt.min(20) * 5)).await;
                }
                r => return Ok(r?),
            }
        }
    }

    /// An account's counters against the sum of its linked buckets', in one snapshot (and
    /// with `repair`, set to it there).
    async fn check_account_usage(&self, account: &str, repair: bool) -> Result<UsageCheck> {
        let check = crate::storage::meta::txn::with_transaction!(self.meta, |s| {
            let Some((c, sum)) = self.meta.recount_account_in(&mut s, account, false).await? else {
                return Ok(None);
            };
            let mut check = UsageCheck {
                bucket: account.to_owned(),
                counted: (c.bytes, c.objects, c.part_bytes),
                recounted: (sum.bytes, sum.objects, sum.part_bytes),
                folded: 0,
                repaired: false,
                account: Some((
                    (c.reserved_bytes, c.reserved_objects),
                    (sum.reserved_bytes, sum.reserved_objects),
                )),
            };
            if repair && check.differs() {
                self.meta.recount_account_in(&mut s, account, true).await?;
                check.repaired = true;
            }
            Ok(Some(check))
        })?;
        Ok(check.unwrap_or_else(|| UsageCheck {
            bucket: account.to_owned(),
            account: Some(((0, 0), (0, 0))),
            ..Default::default()
        }))
    }
}
