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
/// (`503`), rather than signing with a cache nobody could confirm. As long as the default
/// request timeout (`--request-timeout`): a database busy enough to take seconds a reading
/// (a benchmark's 32 listings at once) makes requests slow, as it makes their own queries
/// slow, but does not fail them sooner than it would fail their own work (it failed LISTs
/// with 503 at 5 s).
const POLL_LIMIT: Duration = Duration::from_secs(60);

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
pub(super) struct Cache {
    secrets: Mutex<Secrets>,
    reading: Mutex<Reading>,
    /// Held by the one request reading the counter.
    polling: tokio::sync::Mutex<()>,
    /// IAM users' principals, cached like secrets (`auth::principal`).
    pub(super) principals: Mutex<super::principal::Principals>,
    /// When this instance last recorded each user key's use (`GetAccessKeyLastUsed`).
    pub(super) used: Mutex<HashMap<String, Instant>>,
}

/// What an access key is, as of now.
#[derive(Debug)]
pub enum Lookup {
    /// It signs, with this secret.
    Valid(Box<KeySecret>),
    /// Temporary credentials past their expiration (as stored: their token is checked before
    /// the expiry is told).
    Expired(Box<KeySecret>),
    /// Unknown, disabled, or its user or role is gone.
    Unknown,
}

/// The credentials store.
#[derive(Clone)]
pub struct Credentials {
    meta: MetaStore,
    pub(super) identity: crate::storage::identity::IdentityStore,
    pub(super) cache: Arc<Cache>,
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
        self.cache.principals.lock().expect("cache").clear();
    }

    /// A store over the identity store (and the metastore beside it, where keys live).
    pub fn new(identity: crate::storage::identity::IdentityStore) -> Self {
        Self {
            meta: identity.meta().clone(),
            identity,
            cache: Arc::default(),
        }
    }

    /// The identity store.
    pub fn identity(&self) -> &crate::storage::identity::IdentityStore {
        &self.identity
    }

    /// The epoch of a reading of the counter younger than [`VERSION_POLL`], reading it first
    /// when the last one is older.
    pub(super) async fn fresh_epoch(&self) -> S3Result<u64> {
        let fresh = |r: &Reading| r.at.is_some_and(|at| at.elapsed() < VERSION_POLL);
        {
            let r = self.cache.reading.lock().expect("cache");
            if fresh(&r) {
                return Ok(r.epoch);
            }
        }
        let arrived = Instant::now();
        crate::failpoint::hit("credentials.wait", self.meta.database().name()).await;
        let read = async {
            let _one = self.cache.polling.lock().await;
            {
                // Another request read it while this one waited. A reading that started less
                // than VERSION_POLL before this request arrived (or after) holds every change
                // acknowledged more than VERSION_POLL before the request: the promise. So it
                // is taken however long it took, judged at the request's arrival rather than
                // now: with a database slower than VERSION_POLL a reading, each waiter
                // reading again in turn would queue them all behind one another.
                let r = self.cache.reading.lock().expect("cache");
                if r.at
                    .is_some_and(|at| arrived.saturating_duration_since(at) < VERSION_POLL)
                {
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
                self.cache.principals.lock().expect("cache").clear();
            }
            r.at = Some(started);
            Ok::<_, mongodb::error::Error>(r.epoch)
        };
        match tokio::time::timeout(POLL_LIMIT, read).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(S3Error::service_unavailable()),
        }
    }

    /// The secret of an access key (and whether it is root, and its IAM user), `None` when
    /// the key is unknown, disabled, expired, or its user (or role) no longer exists.
    pub async fn secret_of(&self, access_key: &str) -> S3Result<Option<KeySecret>> {
        Ok(match self.lookup(access_key).await? {
            Lookup::Valid(s) => Some(*s),
            Lookup::Expired(_) | Lookup::Unknown => None,
        })
    }

    /// [`Credentials::secret_of`], telling an expired session (answered `ExpiredToken`)
    /// from a key that does not sign.
    pub async fn lookup(&self, access_key: &str) -> S3Result<Lookup> {
        self.lookup_at(access_key, true).await
    }

    /// [`Credentials::lookup`]; `follow`: also judge the keys this one depends on (its
    /// account's root credentials, the key that made a session), one level deep.
    fn lookup_at<'a>(
        &'a self,
        access_key: &'a str,
        follow: bool,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = S3Result<Lookup>> + Send + 'a>> {
        Box::pin(async move {
            let Some(mut secret) = self.stored_secret(access_key).await? else {
                return Ok(Lookup::Unknown);
            };
            // Judged at each use, not only when read: a cached key expires on time.
            if secret.expires.is_some_and(|e| e <= self.meta.clock().now()) {
                return Ok(if secret.token.is_some() {
                    Lookup::Expired(Box::new(secret))
                } else {
                    Lookup::Unknown
                });
            }
            if follow && !self.dependencies_sign(access_key, &mut secret).await? {
                return Ok(Lookup::Unknown);
            }
            self.judge_principal(secret).await
        })
    }

    /// Whether the keys `secret` depends on still sign: its account's root credentials (a
    /// key disabled or deleted, as a leaked one is, ends every key, service account and
    /// session made under its account), and for a GetSessionToken session the key that made
    /// it, whose session policies it takes as they are now.
    async fn dependencies_sign(&self, access_key: &str, secret: &mut KeySecret) -> S3Result<bool> {
        let account = secret
            .user
            .as_ref()
            .map(|u| u.account_key.clone())
            .or_else(|| secret.account.clone());
        if let Some(a) = account.filter(|a| a != access_key) {
            if !matches!(self.lookup_at(&a, false).await?, Lookup::Valid(_)) {
                return Ok(false);
            }
        }
        if let Some(parent) = secret.token.as_ref().and_then(|t| t.parent.clone()) {
            match self.lookup_at(&parent, false).await? {
                Lookup::Valid(p) if p.token.is_none() => secret.sessions = p.sessions.clone(),
                _ => return Ok(false),
            }
        }
        Ok(true)
    }

    async fn judge_principal(&self, secret: KeySecret) -> S3Result<Lookup> {
        if let Some(u) = &secret.user {
            // A user deleted with a key left behind (a crash between the two) signs nothing,
            // nor does a session of a role deleted since.
            if self.principal_of(u).await?.is_none() {
                return Ok(Lookup::Unknown);
            }
        }
        Ok(Lookup::Valid(Box::new(secret)))
    }

    async fn stored_secret(&self, access_key: &str) -> S3Result<Option<KeySecret>> {
        let epoch = self.fresh_epoch().await?;
        if let Some((secret, seen, at)) = self.cache.secrets.lock().expect("cache").get(access_key)
        {
            if *seen == epoch && at.elapsed() < CACHE_TTL {
                let secret = secret.clone();
                self.note_use(access_key, secret.as_ref());
                return Ok(secret);
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
        self.note_use(access_key, secret.as_ref());
        Ok(secret)
    }

    /// Records, at most once an hour per key and instance and off the request's path, that
    /// an IAM user's key signed a request (IAM's GetAccessKeyLastUsed; AWS records it within
    /// hours too). An account's own keys are not recorded.
    fn note_use(&self, access_key: &str, secret: Option<&KeySecret>) {
        // Nor are sessions' (temporary credentials are not IAM access keys).
        if secret.is_none_or(|s| s.user.is_none() || s.token.is_some()) {
            return;
        }
        {
            let mut used = self.cache.used.lock().expect("cache");
            if used
                .get(access_key)
                .is_some_and(|t| t.elapsed() < Duration::from_secs(3600))
            {
                return;
            }
            if used.len() >= MAX_CACHED {
                used.clear();
            }
            used.insert(access_key.to_owned(), Instant::now());
        }
        let (meta, key) = (self.meta.clone(), access_key.to_owned());
        tokio::spawn(async move {
            if let Err(e) = meta.record_key_use(&key).await {
                tracing::debug!(error = %e, "could not record an access key's use");
            }
        });
    }
}
