//! Short exclusive locks on one key (or one multipart upload), held while a write checks its
//! precondition and publishes, so conditional writes and multipart steps hold across gateway
//! instances. `insert` of a document with the lock's `_id` is the acquisition (the unique `_id`
//! lets exactly one holder in), deleting it the release.
//!
//! - **Renewal**: a held lock is renewed every `LOCK_TTL / 3` by a task of its own, so a slow
//!   holder (a Complete rewriting a large tail) keeps it for as long as it lives.
//! - **Expiry**: a lock whose holder died (no renewal) can be taken over once its `expires`,
//!   in the database's time, has passed: at most `LOCK_TTL` after the holder's last renewal.
//! - **Fencing**: before the single write that publishes, the holder calls
//!   [`KeyLock::fence`], which renews the lock only if this holder's token is still in it.
//!   A holder that lost its lock (it stalled for longer than the TTL and was taken over)
//!   learns it there and publishes nothing.
//! - **Release on every path**: dropping a [`KeyLock`] (an error, a cancelled request) stops
//!   the renewal and deletes the lock in the background, so a failed publish never leaves its
//!   key blocked until expiry.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mongodb::bson::{doc, oid::ObjectId};

use super::{is_duplicate_key, MetaStore};

/// How long a lock lives without renewal.
pub const LOCK_TTL: Duration = Duration::from_secs(10);
/// How long a writer waits for a lock that one holder keeps before giving up.
const LOCK_WAIT: Duration = Duration::from_secs(30);
/// The longest a writer waits for a lock in all, however the queue moves.
const LOCK_WAIT_CAP: Duration = Duration::from_secs(120);

/// A held lock. Released by [`KeyLock::release`] or, on any other path, when dropped.
#[derive(Debug)]
pub struct KeyLock {
    id: String,
    token: ObjectId,
    meta: MetaStore,
    renew: tokio::task::JoinHandle<()>,
    renewed: Arc<Mutex<Instant>>,
    released: bool,
}

/// The lock id of a content of a content-addressed bucket.
fn content_lock_id(bucket: &str, sha_hex: &str) -> String {
    format!("\u{0}content\u{0}{bucket}\u{0}{sha_hex}")
}

/// The lock id of a key.
pub(super) fn key_lock_id(bucket: &str, key: &str) -> String {
    format!("{bucket}\u{0}{key}")
}

impl MetaStore {
    /// Takes the lock of `bucket`/`key`, waiting while another writer holds it. `Ok(None)` when
    /// it could not be had within the wait.
    pub async fn lock_key(
        &self,
        bucket: &str,
        key: &str,
    ) -> mongodb::error::Result<Option<KeyLock>> {
        self.lock(key_lock_id(bucket, key)).await
    }

    /// Takes the lock of one multipart upload (its parts' commits, Complete, Abort and the
    /// sweep are serialised under it).
    pub async fn lock_upload(&self, upload_id: &str) -> mongodb::error::Result<Option<KeyLock>> {
        self.lock(format!("\u{0}upload\u{0}{upload_id}")).await
    }

    /// Takes the lock of one content of a content-addressed bucket (its adoption and its
    /// reclaim are serialised under it).
    pub async fn lock_content(
        &self,
        bucket: &str,
        sha_hex: &str,
    ) -> mongodb::error::Result<Option<KeyLock>> {
        self.lock(content_lock_id(bucket, sha_hex)).await
    }

    /// Whether a content's lock is held (an adoption may be renaming its chunks: fsck must not
    /// call them orphans).
    pub async fn content_lock_held(
        &self,
        bucket: &str,
        sha_hex: &str,
    ) -> mongodb::error::Result<bool> {
        Ok(self
            .keylocks
            .find_one(doc! {"_id": content_lock_id(bucket, sha_hex)})
            .await?
            .is_some())
    }

    /// Waits for the lock, giving up only when one holder kept it for the whole wait
    /// ([`LOCK_WAIT`]), or after [`LOCK_WAIT_CAP`] in all. While the lock keeps changing hands
    /// the queue is moving (ten parts of one upload committing on a slow database), and the
    /// waiter keeps its place: a fixed deadline failed the last of such a queue, though no
    /// holder had been slow. Waiters poll with backoff, so they are not served in order; the
    /// progress rule is what bounds how long the unlucky one waits.
    async fn lock(&self, id: String) -> mongodb::error::Result<Option<KeyLock>> {
        let token = ObjectId::new();
        let started = tokio::time::Instant::now();
        let wait = crate::failpoint::limit("keylock.wait", &id, LOCK_WAIT);
        let cap = started + LOCK_WAIT_CAP.max(wait);
        let mut deadline = started + wait;
        let mut holder: Option<ObjectId> = None;
        let mut pause = Duration::from_millis(5);
        loop {
            let at = Instant::now();
            match self
                .keylocks
                .insert_one(
                    doc! {"_id": &id, "token": token, "expires": self.clock.after(LOCK_TTL)},
                )
                .await
            {
                Ok(_) => {
                    let renewed = Arc::new(Mutex::new(at));
                    let renew = self.spawn_renewal(id.clone(), token, renewed.clone());
                    return Ok(Some(KeyLock {
                        id,
                        token,
                        meta: self.clone(),
                        renew,
                        renewed,
                        released: false,
                    }));
                }
                Err(e) if is_duplicate_key(&e) => {
                    let now = tokio::time::Instant::now();
                    match self.holder(&id).await? {
                        Some((t, _)) if holder != Some(t) => {
                            // Someone else has it now: the queue moved.
                            holder = Some(t);
                            crate::failpoint::hit("keylock.saw_holder", &id).await;
                            // This holder's wait starts once it is seen (and after a test's
                            // stop just above, so the test's pace cannot use it up).
                            deadline = tokio::time::Instant::now() + wait;
                        }
                        Some((t, expired)) if expired => {
                            // Take over a lock whose holder died (expired by the database's
                            // clock); only that holder's, should it have changed meanwhile.
                            self.keylocks
                                .delete_one(doc! {"_id": &id, "token": t,
                                "expires": {"$lt": self.clock.now()}})
                                .await?;
                            continue;
                        }
                        Some(_) => {}
                        // Released between the insert and the read: try again at once.
                        None => continue,
                    }
                    if now > deadline.min(cap) {
                        return Ok(None);
                    }
                }
                Err(e) => return Err(e),
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// The token of a lock's holder, and whether its lease has expired by the database's
    /// clock; `None` when the lock is free.
    async fn holder(&self, id: &str) -> mongodb::error::Result<Option<(ObjectId, bool)>> {
        let Some(d) = self.keylocks.find_one(doc! {"_id": id}).await? else {
            return Ok(None);
        };
        let token = d
            .get_object_id("token")
            .unwrap_or(ObjectId::from_bytes([0; 12]));
        let expired = d
            .get_datetime("expires")
            .is_ok_and(|e| *e < self.clock.now());
        Ok(Some((token, expired)))
    }

    fn spawn_renewal(
        &self,
        id: String,
        token: ObjectId,
        renewed: Arc<Mutex<Instant>>,
    ) -> tokio::task::JoinHandle<()> {
        let meta = self.clone();
        let name = id.replace('\u{0}', "/");
        spawn_heartbeat(
            move || {
                let (meta, id, renewed) = (meta.clone(), id.clone(), renewed.clone());
                async move { meta.renew_lock(&id, token, &renewed).await }
            },
            move || tracing::warn!(lock = %name, "a held lock was lost"),
        )
    }

    async fn renew_lock(
        &self,
        id: &str,
        token: ObjectId,
        renewed: &Mutex<Instant>,
    ) -> mongodb::error::Result<bool> {
        let at = Instant::now();
        let ok = self
            .keylocks
            .update_one(
                doc! {"_id": id, "token": token},
                doc! {"$set": {"expires": self.clock.after(LOCK_TTL)}},
            )
            .await?
            .matched_count
            == 1;
        if ok {
            *renewed.lock().expect("renewed") = at;
        }
        Ok(ok)
    }

    /// Locks that expired (their holders died); for fsck.
    pub async fn stale_locks(&self) -> mongodb::error::Result<u64> {
        self.keylocks
            .count_documents(doc! {"expires": {"$lt": self.clock.now()}})
            .await
    }

    /// Deletes expired locks; for fsck --repair.
    pub async fn purge_stale_locks(&self) -> mongodb::error::Result<u64> {
        Ok(self
            .keylocks
            .delete_many(doc! {"expires": {"$lt": self.clock.now()}})
            .await?
            .deleted_count)
    }
}

impl KeyLock {
    /// The fence before a publishing write: `true` while this holder still has the lock.
    /// Within half a TTL of the last successful renewal the lock cannot have expired (the
    /// renewal was sent before that instant, and elapsed time is measured on this process's
    /// monotonic clock), so no round trip is needed; later, it renews the lock if, and only
    /// if, this holder's token is still in it. `false`: nothing may be published under it.
    pub async fn fence(&self) -> mongodb::error::Result<bool> {
        if self.renewed.lock().expect("renewed").elapsed() < LOCK_TTL / 2 {
            return Ok(true);
        }
        self.meta
            .renew_lock(&self.id, self.token, &self.renewed)
            .await
    }

    /// Releases the lock after the work it guarded, whatever that work's outcome: a release
    /// that fails is logged, not returned, since the lock expires on its own. The one routine
    /// of "lock, run, release, warn" (object keys and contents alike).
    pub async fn release_or_warn(self) {
        let id = self.id.clone();
        if let Err(e) = self.release().await {
            tracing::warn!(error = %e, lock = %id, "could not release a lock; it expires on its own");
        }
    }

    /// Releases the lock (only if it is still this holder's: compare-and-set on its token).
    pub async fn release(mut self) -> mongodb::error::Result<()> {
        self.released = true;
        self.renew.abort();
        self.meta
            .keylocks
            .delete_one(doc! {"_id": &self.id, "token": self.token})
            .await?;
        Ok(())
    }
}

impl Drop for KeyLock {
    fn drop(&mut self) {
        self.renew.abort();
        if self.released {
            return;
        }
        let (meta, id, token) = (self.meta.clone(), self.id.clone(), self.token);
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = meta
                    .keylocks
                    .delete_one(doc! {"_id": &id, "token": token})
                    .await
                {
                    tracing::warn!(error = %e, "could not release a lock; it expires on its own");
                }
            });
        }
    }
}

/// Renews held locks every third of their life with `renew` until it reports them lost
/// (`Ok(false)`: then `lost` runs and the renewal ends); a failed renewal is logged and tried
/// again. The one heartbeat of single and batched key locks.
pub(super) fn spawn_heartbeat<F, Fut>(
    renew: F,
    lost: impl FnOnce() + Send + 'static,
) -> tokio::task::JoinHandle<()>
where
    F: Fn() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = mongodb::error::Result<bool>> + Send,
{
    crate::background::spawn("lock-heartbeat", async move {
        let mut tick = tokio::time::interval(LOCK_TTL / 3);
        tick.tick().await;
        loop {
            tick.tick().await;
            match renew().await {
                Ok(true) => {}
                Ok(false) => {
                    lost();
                    return;
                }
                Err(e) => tracing::warn!(error = %e, "could not renew a lock"),
            }
        }
    })
}
