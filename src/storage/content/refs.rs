//! References to contents (`<bucket>._refs`), as v7files tracks them: one document per owner,
//! `{_id: owner, refs: [sha...], refHistory: [sha...], purge?: date}`. An owner is an object
//! (its `_id` in `<bucket>.files`), a multipart upload's part (its record's `fileId`), or a
//! `cat` content (`_id` = its SHA-1), whose `refBase` names the contents it is made of.
//!
//! The protocol that keeps a reclaim from racing a PUT of the same bytes, with single-document
//! operations only:
//! 1. A PUT references the content *before* it looks for it: its document is inserted with a
//!    `purge` date one grace period ahead (tentative: the object is not published yet).
//! 2. It then looks the content up with an update that clears a reclaim's `gc` mark, and
//!    stores it if it is absent.
//! 3. A reclaim marks the content (`gc: true`), looks for references again, and deletes the
//!    content only if the mark is still there (large contents under the content's lock).
//!
//! A PUT that referenced after the reclaim looked finds the mark and clears it, so the delete
//! matches nothing; one that looked before the mark is seen by the second look. A deleted or
//! replaced object gets `purge: now`. The janitor takes documents whose `purge` has passed:
//! one whose object exists is a published PUT's (the date is cleared), one whose write is still
//! registered is left for later, any other is dropped after each of its contents is reclaimed
//! if nothing else references it.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, DateTime, Document};
use mongodb::Collection;

use super::{hex, sha_bson, Contents};
use crate::storage::gridfs::{GridFsError, Result};

impl Contents {
    /// References `sha` from the object `owner` is about to become (step 1 above).
    pub async fn reference(&self, owner: &Bson, sha: &[u8; 20]) -> Result<()> {
        let until = self.grace_end();
        match self
            .refs
            .insert_one(doc! {
                "_id": owner.clone(), "refs": [sha_bson(sha)], "refHistory": [sha_bson(sha)],
                "purge": until,
            })
            .await
        {
            Ok(_) => Ok(()),
            // A retried CompleteMultipartUpload references its object again. Its `purge` is
            // pushed a grace period ahead too: a date already due would let the janitor take
            // the content before this write publishes (and a published owner's tentative date
            // is cleared by the janitor, which finds it alive).
            Err(e) if crate::storage::meta::is_duplicate_key(&e) => {
                self.refs
                    .update_one(
                        doc! {"_id": owner.clone()},
                        doc! {
                            "$addToSet": {"refs": sha_bson(sha), "refHistory": sha_bson(sha)},
                            "$max": {"purge": until},
                        },
                    )
                    .await?;
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Records that the `cat` content `sha` is made of `bases` (its `refBase`, which keeps
    /// them from being reclaimed while it exists), then stores the content document
    /// `{_id, store: "cat", length, base: [{sha, length}...]}` unless it is stored already.
    /// The caller has referenced `sha` first and found it absent ([`Contents::keep`]).
    pub async fn store_cat(
        &self,
        sha: &[u8; 20],
        length: u64,
        bases: &[([u8; 20], u64)],
    ) -> Result<()> {
        let base_shas: Vec<Bson> = bases.iter().map(|(s, _)| sha_bson(s)).collect();
        self.refs
            .update_one(
                doc! {"_id": sha_bson(sha)},
                doc! {"$set": {"refBase": base_shas}, "$unset": {"purge": ""}},
            )
            .upsert(true)
            .await?;
        let base: Vec<Bson> = bases
            .iter()
            .map(|(s, l)| Bson::Document(doc! {"sha": sha_bson(s), "length": *l as i64}))
            .collect();
        let d = doc! {"_id": sha_bson(sha), "store": "cat", "length": length as i64, "base": base};
        match self.content.insert_one(d).await {
            Ok(_) => Ok(()),
            Err(e) if crate::storage::meta::is_duplicate_key(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Ends the references of an object that was deleted or replaced: they go once the
    /// grace period has passed (`--content-grace`), so a reader that found the object before
    /// may stream its content for that long. (Content reads take no lease: a lease per read
    /// would cost a write per GET, where the grace costs nothing.)
    pub async fn release(&self, owner: &Bson) -> Result<()> {
        self.refs
            .update_one(
                doc! {"_id": owner.clone()},
                doc! {"$set": {"purge": self.grace_end()}},
            )
            .await?;
        Ok(())
    }

    /// The janitor's pass over references whose `purge` date has passed (up to `limit`):
    /// returns how many contents were reclaimed. `objects` is the bucket's `.files`.
    pub async fn collect(&self, objects: &Collection<Document>, limit: i64) -> Result<usize> {
        let due: Vec<Document> = self
            .refs
            .find(doc! {"purge": {"$lt": self.now()}})
            .limit(limit)
            .await?
            .try_collect()
            .await?;
        let mut reclaimed = 0;
        for d in due {
            let Some(owner) = d.get("_id").cloned() else {
                continue;
            };
            // Every write below is compare-and-set on this date: a DELETE (a new date), a
            // retried reference (a later one) or a `cat` stored again (none) since the read
            // makes them match nothing, and the next pass looks again.
            let read = d.get("purge").cloned().unwrap_or(Bson::Null);
            let as_read = doc! {"_id": owner.clone(), "purge": read};
            if self.owner_alive(objects, &owner).await? {
                crate::failpoint::hit("refs.collect.alive", &self.bucket).await;
                self.refs
                    .update_one(as_read, doc! {"$unset": {"purge": ""}})
                    .await?;
                continue;
            }
            // A write still under way: a PUT's registration, or an upload whose completion
            // will publish its object under this id (a completion may take longer than the
            // grace period; the upload's record outlives it either way).
            if self.meta.write_in_progress(&owner).await?
                || self.meta.upload_pending_for(&owner).await?
            {
                continue;
            }
            for sha in shas(&d, "refs").into_iter().chain(shas(&d, "refBase")) {
                if self.reclaim_unreferenced(&sha, &owner).await? {
                    reclaimed += 1;
                }
            }
            crate::failpoint::hit("refs.collect.delete", &self.bucket).await;
            self.refs.delete_one(as_read).await?;
        }
        Ok(reclaimed)
    }

    /// Whether a reference's owner lives on: a published object that points at a content, a
    /// multipart upload's part (its record names the owner), or a `cat` content (its
    /// `refBase` document). An object that no longer points at a content (converted to GridFS)
    /// does not keep its reference; an inline object never had one.
    async fn owner_alive(&self, objects: &Collection<Document>, owner: &Bson) -> Result<bool> {
        // (By `_id` alone: SecantusDB's planner scans for an `_id` with another predicate.)
        let published = objects
            .find_one(doc! {"_id": owner.clone()})
            .projection(doc! {"sha": 1})
            .await?
            .is_some_and(|d| d.contains_key("sha"));
        Ok(published
            || self.meta.part_uses_file(owner).await?
            || (matches!(owner, Bson::Binary(_))
                && self
                    .content
                    .find_one(doc! {"_id": owner.clone()})
                    .projection(doc! {"_id": 1})
                    .await?
                    .is_some()))
    }

    /// One grace period from now, in the database's time: when a tentative or released
    /// reference falls due.
    fn grace_end(&self) -> DateTime {
        DateTime::from_millis(
            self.now().timestamp_millis() + self.settings.grace.as_millis() as i64,
        )
    }

    /// Whether no reference is left at all (a bucket converted to GridFS is then done with
    /// its contents).
    pub async fn unreferenced(&self) -> Result<bool> {
        Ok(self
            .refs
            .find_one(doc! {})
            .projection(doc! {"_id": 1})
            .await?
            .is_none())
    }

    /// Whether a reference other than `except`'s names `sha`.
    async fn referenced(&self, sha: &[u8; 20], except: &Bson) -> Result<bool> {
        let id = sha_bson(sha);
        let owners: Vec<Document> = self
            .refs
            .find(doc! {"refs": id.clone()})
            .projection(doc! {"_id": 1})
            .limit(2)
            .await?
            .try_collect()
            .await?;
        if owners.iter().any(|o| o.get("_id") != Some(except)) {
            return Ok(true);
        }
        let bases: Vec<Document> = self
            .refs
            .find(doc! {"refBase": id})
            .projection(doc! {"_id": 1})
            .limit(2)
            .await?
            .try_collect()
            .await?;
        Ok(bases.iter().any(|o| o.get("_id") != Some(except)))
    }

    /// Reclaims `sha` if nothing but `except` references it (step 3 above); whether it did.
    async fn reclaim_unreferenced(&self, sha: &[u8; 20], except: &Bson) -> Result<bool> {
        if self.referenced(sha, except).await? {
            return Ok(false);
        }
        let id = sha_bson(sha);
        let mark = doc! {"$set": {"gc": true}};
        // A content may be stored both ways (written under two chunk sizes): both go.
        let mut doc_gone = false;
        if self
            .content
            .update_one(doc! {"_id": id.clone()}, mark.clone())
            .await?
            .matched_count
            == 1
        {
            if self.referenced(sha, except).await? {
                self.content
                    .update_one(doc! {"_id": id}, doc! {"$unset": {"gc": ""}})
                    .await?;
                return Ok(false);
            }
            let gone = self
                .content
                .find_one_and_delete(doc! {"_id": id.clone(), "gc": true})
                .projection(doc! {"store": 1})
                .await?;
            doc_gone = gone.is_some();
            if gone.is_some_and(|d| d.get_str("store") == Ok("cat")) {
                // Its bases are released with it (after the grace period, by `collect`).
                self.refs
                    .update_one(
                        doc! {"_id": id.clone()},
                        doc! {"$set": {"purge": self.grace_end()}},
                    )
                    .await?;
            }
        }
        let Some(lock) = self.meta.lock_content(&self.bucket, &hex(sha)).await? else {
            return Err(GridFsError::Busy(
                "another write of this content is in progress".into(),
            ));
        };
        let res = async {
            let files = self.blobs.files();
            if files
                .update_one(doc! {"_id": id.clone()}, mark)
                .await?
                .matched_count
                == 0
            {
                return Ok(doc_gone);
            }
            if self.referenced(sha, except).await? {
                files
                    .update_one(doc! {"_id": id}, doc! {"$unset": {"gc": ""}})
                    .await?;
                return Ok(doc_gone);
            }
            // The blob's chunks by `_id`, read while it is marked: should this reclaim stall
            // past the content's lock, a PUT of the same bytes may adopt a new blob under the
            // same SHA-1, whose chunks are never among these.
            let chunk_ids =
                crate::storage::gridfs::ids_of(self.blobs.chunks(), doc! {"files_id": id.clone()})
                    .await?;
            if files
                .delete_one(doc! {"_id": id.clone(), "gc": true})
                .await?
                .deleted_count
                == 0
            {
                return Ok(doc_gone);
            }
            crate::failpoint::hit("content.reclaim.chunks", &self.bucket).await;
            for batch in chunk_ids.chunks(1000) {
                self.blobs
                    .chunks()
                    .delete_many(doc! {"_id": {"$in": batch.to_vec()}})
                    .await?;
            }
            Ok(true)
        }
        .await;
        lock.release_or_warn().await;
        res
    }
}

/// The SHA-1s of a reference document's `field`.
fn shas(d: &Document, field: &str) -> Vec<[u8; 20]> {
    d.get_array(field)
        .map(|a| {
            a.iter()
                .filter_map(|v| match v {
                    Bson::Binary(b) => b.bytes.as_slice().try_into().ok(),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What [`Contents::check`] found in one bucket.
#[derive(Debug, Default)]
pub struct Consistency {
    /// Objects (`_id`, key) whose content is stored nowhere: unreadable.
    pub missing: Vec<(Bson, String)>,
    /// Objects (`_id`, key) without a reference to their content (a reclaim could take it).
    pub unreferenced_objects: Vec<(Bson, String)>,
    /// Contents no reference names (the janitor would never reclaim them), by SHA-1 hex.
    pub unreferenced_contents: Vec<String>,
    /// `cat` contents (SHA-1 hex) whose `refBase` document is missing or short (their bases
    /// could be reclaimed from under them).
    pub cats_without_bases: Vec<String>,
    /// Of the unreferenced contents, how many `--repair` reclaimed (none that anything names).
    pub reclaimed_contents: u64,
    /// References whose owner is gone without releasing them (repaired by releasing them).
    pub orphan_references: Vec<Bson>,
    /// Objects (`_id`, key) whose content pointer no reader understands.
    pub unreadable: Vec<(Bson, String)>,
    /// Contents (SHA-1 hex) stored in a form no reader understands.
    pub unreadable_contents: Vec<String>,
}

impl Contents {
    /// Checks references against objects and contents (for fsck). Contents are read before
    /// references and objects, and every finding is looked at again, so that a PUT or a
    /// reclaim running meanwhile is not reported.
    ///
    /// With `repair`, in this order: every object's missing reference and every `cat`
    /// content's missing `refBase` is written back first; only then is a content that nothing
    /// references reclaimed, and never one that an object or a `cat` names (versions are
    /// objects of `.files` too), whatever the references say: a repair never removes what
    /// anything still names.
    pub async fn check(&self, objects: &Collection<Document>, repair: bool) -> Result<Consistency> {
        let mut out = Consistency::default();
        let mut stored: Vec<[u8; 20]> = Vec::new();
        for coll in [&self.content, self.blobs.files()] {
            let ids: Vec<Document> = coll
                .find(doc! {})
                .projection(doc! {"_id": 1})
                .await?
                .try_collect()
                .await?;
            stored.extend(ids.iter().filter_map(|d| match d.get("_id") {
                Some(Bson::Binary(b)) => <[u8; 20]>::try_from(b.bytes.as_slice()).ok(),
                _ => None,
            }));
        }
        // What objects and `cat` contents name, read after the contents: a content stored
        // meanwhile is not in `stored`, and one named meanwhile was referenced first.
        let mut named: std::collections::HashSet<[u8; 20]> = Default::default();
        let pointing: Vec<Document> = objects
            .find(doc! {"sha": {"$exists": true}})
            .projection(doc! {"_id": 1, "sha": 1, "filename": 1})
            .await?
            .try_collect()
            .await?;
        for o in pointing {
            let Some(id) = o.get("_id").cloned() else {
                continue;
            };
            let key = o.get_str("filename").unwrap_or_default().to_owned();
            let Some(sha) = o.get("sha").and_then(super::sha_of) else {
                out.unreadable.push((id, key));
                continue;
            };
            named.insert(sha);
            let still = || async {
                Ok::<_, GridFsError>(
                    objects
                        .find_one(doc! {"_id": id.clone()})
                        .projection(doc! {"_id": 1})
                        .await?
                        .is_some(),
                )
            };
            let has_ref = self
                .refs
                .find_one(doc! {"_id": id.clone()})
                .await?
                .is_some_and(|r| shas(&r, "refs").contains(&sha));
            if !has_ref && still().await? {
                if repair {
                    self.write_back(&id, &sha).await?;
                }
                out.unreferenced_objects.push((id.clone(), key.clone()));
            }
            let exists = self
                .content
                .find_one(doc! {"_id": sha_bson(&sha)})
                .projection(doc! {"_id": 1})
                .await?
                .is_some()
                || self
                    .blobs
                    .files()
                    .find_one(doc! {"_id": sha_bson(&sha)})
                    .projection(doc! {"_id": 1})
                    .await?
                    .is_some();
            if !exists && still().await? {
                out.missing.push((id, key));
            }
        }
        let cats: Vec<Document> = self
            .content
            .find(doc! {"store": "cat"})
            .projection(doc! {"_id": 1, "base": 1})
            .await?
            .try_collect()
            .await?;
        for c in cats {
            let Some(Bson::Binary(id)) = c.get("_id") else {
                continue;
            };
            let bases: Vec<[u8; 20]> = c
                .get_array("base")
                .map(|a| {
                    a.iter()
                        .filter_map(|b| match b {
                            Bson::Document(p) => p
                                .get_binary_generic("sha")
                                .ok()
                                .and_then(|s| <[u8; 20]>::try_from(s.as_slice()).ok()),
                            _ => None,
                        })
                        .collect()
                })
                .unwrap_or_default();
            named.extend(bases.iter().copied());
            let kept = self
                .refs
                .find_one(doc! {"_id": Bson::Binary(id.clone())})
                .await?
                .is_some_and(|r| {
                    let have = shas(&r, "refBase");
                    bases.iter().all(|b| have.contains(b))
                });
            if !kept {
                if repair {
                    let all: Vec<Bson> = bases.iter().map(sha_bson).collect();
                    self.refs
                        .update_one(
                            doc! {"_id": Bson::Binary(id.clone())},
                            doc! {"$addToSet": {"refBase": {"$each": all}}},
                        )
                        .upsert(true)
                        .await?;
                }
                out.cats_without_bases.push(hex(
                    &<[u8; 20]>::try_from(id.bytes.as_slice()).unwrap_or_default()
                ));
            }
        }
        // Contents in a form no reader knows.
        let odd: Vec<Document> = self
            .content
            .find(doc! {"store": {"$nin": ["raw", "gz", "cat"], "$exists": true}})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        for d in odd {
            if let Some(sha) = d.get("_id").and_then(super::sha_of) {
                out.unreadable_contents.push(hex(&sha));
            }
        }
        // References no owner holds any more and that nothing will release (their owner went
        // without its release, as when a process died between the two): their contents would
        // be kept for ever. Repair releases them (the grace period then applies).
        let held: Vec<Document> = self
            .refs
            .find(doc! {"purge": {"$exists": false}})
            .projection(doc! {"_id": 1})
            .await?
            .try_collect()
            .await?;
        for r in held {
            let Some(owner) = r.get("_id").cloned() else {
                continue;
            };
            if self.owner_alive(objects, &owner).await?
                || self.meta.write_in_progress(&owner).await?
                || self.meta.upload_pending_for(&owner).await?
            {
                continue;
            }
            if repair {
                self.refs
                    .update_one(
                        doc! {"_id": owner.clone(), "purge": {"$exists": false}},
                        doc! {"$set": {"purge": self.grace_end()}},
                    )
                    .await?;
            }
            out.orphan_references.push(owner);
        }
        for sha in stored {
            if self.referenced(&sha, &Bson::Null).await? {
                continue;
            }
            out.unreferenced_contents.push(hex(&sha));
            if named.contains(&sha) {
                // Named by an object or a `cat` whose reference was missing (written back
                // above with `--repair`): never reclaimed.
                continue;
            }
            if repair && self.reclaim_unreferenced(&sha, &Bson::Null).await? {
                out.reclaimed_contents += 1;
            }
        }
        Ok(out)
    }

    /// Writes an object's missing reference back (fsck's repair).
    async fn write_back(&self, owner: &Bson, sha: &[u8; 20]) -> Result<()> {
        self.refs
            .update_one(
                doc! {"_id": owner.clone()},
                doc! {"$addToSet": {"refs": sha_bson(sha), "refHistory": sha_bson(sha)}, "$unset": {"purge": ""}},
            )
            .upsert(true)
            .await?;
        Ok(())
    }
}
