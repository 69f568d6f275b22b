//! The locks of many keys taken in one command (DeleteObjects in a versioned bucket): the
//! same `__keylocks` documents as [`super::KeyLock`]'s, so a batch and single writers of the
//! same keys exclude each other, but one token for the whole batch, so that taking, renewing
//! and releasing them are one command each however many keys there are.
//!
//! A key whose lock is held by another writer is not waited for: it is reported busy and the
//! caller takes it alone, the usual way (which waits, and takes over expired locks).
//!
//! Renewal and release name the locks by `_id` (the index every server has) and the token, in
//! one command of statements of 100 ids each: a filter on the token alone would scan every
//! lock held, which under many concurrent batches is many.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mongodb::bson::{doc, oid::ObjectId, Bson, Document};
use mongodb::error::ErrorKind;

use crate::storage::gridfs::batch::{delete_in, update_in};

use super::keylocks::{key_lock_id, spawn_heartbeat};
use super::{MetaStore, LOCK_TTL};

/// The locks of several keys, held under one token. Released by [`KeyLocks::release`] or, on
/// any other path, when dropped.
#[derive(Debug)]
pub struct KeyLocks {
    token: ObjectId,
    /// The ids of the lock documents that may hold the token (those sent).
    ids: Arc<Vec<Bson>>,
    /// How many lock documents hold the token.
    held: u64,
    meta: MetaStore,
    renew: Option<tokio::task::JoinHandle<()>>,
    renewed: Arc<Mutex<Instant>>,
    lost: Arc<AtomicBool>,
    released: bool,
}

impl MetaStore {
    /// Takes, in one command, the locks of those `keys` of `bucket` nobody holds. Returns the
    /// locks and, for each key, whether it is among them (`false`: busy, or listed twice).
    pub async fn try_lock_keys(
        &self,
        bucket: &str,
        keys: &[String],
    ) -> mongodb::error::Result<(KeyLocks, Vec<bool>)> {
        let token = ObjectId::new();
        let at = Instant::now();
        let expires = self.clock.after(LOCK_TTL);
        let mut seen = std::collections::HashSet::new();
        let mut taken: Vec<bool> = keys.iter().map(|k| seen.insert(k.as_str())).collect();
        let docs: Vec<(usize, Document)> = keys
            .iter()
            .enumerate()
            .filter(|(i, _)| taken[*i])
            .map(|(i, k)| {
                let d = doc! {"_id": key_lock_id(bucket, k), "token": token, "expires": expires};
                (i, d)
            })
            .collect();
        let mut locks = KeyLocks {
            token,
            ids: Arc::new(
                docs.iter()
                    .filter_map(|(_, d)| d.get("_id").cloned())
                    .collect(),
            ),
            held: 0,
            meta: self.clone(),
            renew: None,
            renewed: Arc::new(Mutex::new(at)),
            lost: Arc::new(AtomicBool::new(false)),
            released: false,
        };
        if docs.is_empty() {
            return Ok((locks, taken));
        }
        let sent = docs.len() as u64;
        // Counted as held before the insert: a request cancelled while it runs drops the
        // locks, and the drop releases whatever went in.
        locks.held = sent;
        let r = self
            .keylocks
            .insert_many(docs.iter().map(|(_, d)| d))
            .ordered(false)
            .await;
        match r {
            Ok(_) => {}
            Err(e) => {
                // Duplicates are locks others hold; any other failure fails the batch (the
                // drop releases whatever went in).
                let ErrorKind::InsertMany(im) = &*e.kind else {
                    return Err(e);
                };
                let errors = im.write_errors.as_deref().unwrap_or_default();
                if im.write_concern_error.is_some() || errors.iter().any(|w| w.code != 11000) {
                    return Err(e);
                }
                for w in errors {
                    if let Some((i, _)) = docs.get(w.index) {
                        taken[*i] = false;
                    }
                }
                locks.held = sent - errors.len() as u64;
            }
        }
        locks.renew = Some(self.spawn_batch_renewal(
            token,
            locks.ids.clone(),
            locks.held,
            locks.renewed.clone(),
            locks.lost.clone(),
        ));
        Ok((locks, taken))
    }

    fn spawn_batch_renewal(
        &self,
        token: ObjectId,
        ids: Arc<Vec<Bson>>,
        held: u64,
        renewed: Arc<Mutex<Instant>>,
        lost: Arc<AtomicBool>,
    ) -> tokio::task::JoinHandle<()> {
        let meta = self.clone();
        spawn_heartbeat(
            move || {
                let (meta, ids, renewed) = (meta.clone(), ids.clone(), renewed.clone());
                async move { meta.renew_batch(token, &ids, held, &renewed).await }
            },
            move || {
                lost.store(true, Ordering::SeqCst);
                tracing::warn!("a held batch of key locks was lost");
            },
        )
    }

    /// Renews every lock of the batch; `false` when one is no longer the batch's (taken over
    /// after it expired).
    async fn renew_batch(
        &self,
        token: ObjectId,
        ids: &[Bson],
        held: u64,
        renewed: &Mutex<Instant>,
    ) -> mongodb::error::Result<bool> {
        let at = Instant::now();
        let matched = update_in(
            &self.keylocks,
            "_id",
            ids,
            &doc! {"token": token},
            &doc! {"$set": {"expires": self.clock.after(LOCK_TTL)}},
        )
        .await?;
        if matched == held {
            *renewed.lock().expect("renewed") = at;
        }
        Ok(matched == held)
    }
}

impl KeyLocks {
    /// The fence before a publishing write, as [`super::KeyLock::fence`]: `true` while the
    /// batch still holds every one of its locks.
    pub async fn fence(&self) -> mongodb::error::Result<bool> {
        if self.lost.load(Ordering::SeqCst) {
            return Ok(false);
        }
        if self.renewed.lock().expect("renewed").elapsed() < LOCK_TTL / 2 {
            return Ok(true);
        }
        self.meta
            .renew_batch(self.token, &self.ids, self.held, &self.renewed)
            .await
    }

    /// Releases the batch's locks (only those still holding its token), in one command.
    pub async fn release(mut self) -> mongodb::error::Result<()> {
        self.released = true;
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        if self.held > 0 {
            delete_in(
                &self.meta.keylocks,
                "_id",
                &self.ids,
                &doc! {"token": self.token},
            )
            .await?;
        }
        Ok(())
    }

    /// [`KeyLocks::release`], a failure logged (the locks expire on their own).
    pub async fn release_or_warn(self) {
        if let Err(e) = self.release().await {
            tracing::warn!(error = %e, "could not release a batch of locks; they expire on their own");
        }
    }
}

impl Drop for KeyLocks {
    fn drop(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        if self.released || self.held == 0 {
            return;
        }
        let (meta, token, ids) = (self.meta.clone(), self.token, self.ids.clone());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let mine = doc! {"token": token};
                if let Err(e) = delete_in(&meta.keylocks, "_id", &ids, &mine).await {
                    tracing::warn!(error = %e, "could not release a batch of locks; they expire on their own");
                }
            });
        }
    }
}
