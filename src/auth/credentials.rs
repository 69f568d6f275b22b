//! Access keys and secrets, looked up in the metastore (shared by every instance) with a
//! short in-process cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::error::S3Error;
use crate::error::S3Result;
use crate::storage::meta::{KeyError, KeySecret, MetaStore};

/// How long a looked-up secret is trusted before it is read again (a deleted key stops
/// working on every instance within this time).
const CACHE_TTL: Duration = Duration::from_secs(10);

/// Most keys cached at once.
const MAX_CACHED: usize = 10_000;

/// Cached lookups: the secret (or `None` for an unknown key) and when it was read.
type SecretCache = Arc<Mutex<HashMap<String, (Option<KeySecret>, Instant)>>>;

/// The credentials store.
#[derive(Clone)]
pub struct Credentials {
    meta: MetaStore,
    cache: SecretCache,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials { .. }")
    }
}

impl Credentials {
    /// Forgets cached lookups (after a key was deleted through this instance).
    pub fn forget(&self, access_key: &str) {
        self.cache.lock().expect("cache").remove(access_key);
    }

    /// A store over the metastore.
    pub fn new(meta: MetaStore) -> Self {
        Self {
            meta,
            cache: Arc::default(),
        }
    }

    /// The secret of an access key (and whether it is root), `None` when the key is unknown.
    pub async fn secret_of(&self, access_key: &str) -> S3Result<Option<KeySecret>> {
        if let Some((secret, at)) = self.cache.lock().expect("cache").get(access_key) {
            if at.elapsed() < CACHE_TTL {
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
        if secret.is_some() {
            let mut cache = self.cache.lock().expect("cache");
            if cache.len() >= MAX_CACHED {
                cache.retain(|_, (_, at)| at.elapsed() < CACHE_TTL);
                if cache.len() >= MAX_CACHED {
                    cache.clear();
                }
            }
            cache.insert(access_key.to_owned(), (secret.clone(), Instant::now()));
        }
        Ok(secret)
    }
}
