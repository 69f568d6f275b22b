//! Access keys and secrets, looked up in the metastore (shared by every instance) with an
//! in-process cache that follows the keys' version counter.
//!
//! Every change of a key through grids3 (created, deleted, disabled, enabled, its secret or
//! root flag changed; `storage::meta` keys) moves a version counter in `__infostore` after
//! the change. An instance reads the counter at most once per [`VERSION_POLL`], by the first
//! request that finds its last reading older than that (one reading at a time; the requests
//! meanwhile wait for it), and forgets every cached secret when the counter moved. A cached
//! secret is used only while the reading it was taken after is younger than
//! [`VERSION_POLL`]. So a key changed through any instance stops working on every instance
//! within [`VERSION_POLL`] of the change's acknowledgement, and at once on the instance that
//! made it (which forgets its cache). Signed requests cost no database round trip beyond
//! that one reading a second per instance.
//!
//! A change made in the database directly, without grids3 (which does not move the counter),
//! is seen within [`CACHE_TTL`], as every cached secret is read again after that time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::S3Error;
use crate::error::S3Result;
use crate::storage::meta::{KeyError, KeySecret, MetaStore};

/// How often an instance reads the keys' version counter, at most: the bound within which a
/// key disabled, deleted or changed through another instance stops working on this one.
pub const VERSION_POLL: Duration = Duration::from_secs(1);

/// How long a looked-up secret is trusted at most, counter or not: the bound for a change
/// made in the database without grids3.
pub const CACHE_TTL: Duration = Duration::from_secs(10);

/// How long a reading of the counter may take; a request that waited for it longer fails
/// (`503`), rather than signing with a cache nobody could confirm.
const POLL_LIMIT: Duration = Duration::from_secs(5);

/// Most keys cached at once.
const MAX_CACHED: usize = 10_000;

/// The last reading of the version counter.
#[derive(Default)]
struct Reading {
    /// The counter as read (`None`: never read).
    version: Option<i64>,
    /// When that reading started (a change acknowledged before it is in it).
    at: Option<Instant>,
    /// Moves on each time the cache is emptied: a secret read under an older epoch is not
    /// used.
    epoch: u64,
}

/// Cached lookups: the secret (or `None` for an unknown key), the epoch it was read under,
/// and when it was read.
type Secrets = HashMap<String, (Option<KeySecret>, u64, Instant)>;

#[derive(Default)]
struct Cache {
    secrets: Mutex<Secrets>,
    reading: Mutex<Reading>,
    /// Held by the one request reading the counter.
    polling: tokio::sync::Mutex<()>,
}

/// The credentials store.
#[derive(Clone)]
pub struct Credentials {
    meta: MetaStore,
    cache: Arc<Cache>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

impl Credentials {
    /// Forgets every cached lookup (after a key was changed through this instance), so that
    /// the change holds here at once.
    pub fn forget(&self, _access_key: &str) {
        let mut r = self.cache.reading.lock().expect("cache");
        r.epoch += 1;
        r.at = None;
        self.cache.secrets.lock().expect("cache").clear();
    }

    /// A store over the metastore.
    pub fn new(meta: MetaStore) -> Self {
        Self {
            meta,
            cache: Arc::default(),
        }
    }

    /// The epoch of a reading of the counter younger than [`VERSION_POLL`], reading it first
    /// when the last one is older.
    async fn fresh_epoch(&self) -> S3Result<u64> {
        let fresh = |r: &Reading| r.at.is_some_and(|at| at.elapsed() < VERSION_POLL);
        {
            let r = self.cache.reading.lock().expect("cache");
            if fresh(&r) {
                return Ok(r.epoch);
            }
        }
        let arrived = Instant::now();
        let read = async {
            let _one = self.cache.polling.lock().await;
            {
                // Another request read it while this one waited. A reading that started after
                // this request arrived holds every change acknowledged before the request (a
                // stronger promise than "younger than VERSION_POLL"), so it is taken however
                // long it took: with a database slower than VERSION_POLL a reading, each
                // waiter reading again in turn would queue them all behind one another until
                // they failed at POLL_LIMIT.
                let r = self.cache.reading.lock().expect("cache");
                if fresh(&r) || r.at.is_some_and(|at| at >= arrived) {
                    return Ok(r.epoch);
                }
            }
            let started = Instant::now();
            crate::failpoint::hit("credentials.poll", self.meta.database().name()).await;
            let version = self.meta.keys_version().await?;
            let mut r = self.cache.reading.lock().expect("cache");
            if r.version != Some(version) {
                r.epoch += 1;
                r.version = Some(version);
                self.cache.secrets.lock().expect("cache").clear();
            }
            r.at = Some(started);
            Ok::<_, mongodb::error::Error>(r.epoch)
        };
        match tokio::time::timeout(POLL_LIMIT, read).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(S3Error::service_unavailable()),
        }
    }

    /// The secret of an access key (and whether it is root), `None` when the key is unknown.
    pub async fn secret_of(&self, access_key: &str) -> S3Result<Option<KeySecret>> {
        let epoch = self.fresh_epoch().await?;
        if let Some((secret, seen, at)) = self.cache.secrets.lock().expect("cache").get(access_key)
        {
            if *seen == epoch && at.elapsed() < CACHE_TTL {
                return Ok(secret.clone());
            }
        }
        let secret = match self.meta.secret_of(access_key).await {
            Ok(s) => s,
            Err(KeyError::Mongo(e)) => return Err(e.into()),
            Err(e @ KeyError::Sealed) => {
                tracing::error!(access_key, error = %e, "cannot read an access key's secret");
                return Err(S3Error::internal());
            }
        };
        // Only known keys are cached: unknown ids are chosen by whoever sends the request, and
        // caching them would let anyone fill this process's memory. The cache is bounded too.
        // The secret was read after the reading of `epoch` started, so it is no older than it:
        // kept under that epoch, it goes when the counter next moves.
        if secret.is_some() {
            let mut cache = self.cache.secrets.lock().expect("cache");
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (_, seen, at)| *seen == epoch && at.elapsed() < CACHE_TTL);
                if cache.len() >= MAX_CACHED {
                    cache.clear();
                }
            }
            cache.insert(
                access_key.to_owned(),
                (secret.clone(), epoch, Instant::now()),
            );
        }
        Ok(secret)
    }
}
