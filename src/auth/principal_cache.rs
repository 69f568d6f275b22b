//! The principal of an IAM user, cached per user like secrets (under the keys' version
//! counter, see `auth::credentials`), so that a signed request by a user costs no database
//! round trip in steady state.

use std::sync::Arc;
use std::time::Instant;

use super::credentials::{Credentials, CACHE_TTL};
use super::principal::Principal;
use crate::error::S3Result;

impl Credentials {
    /// The IAM user with unique id `id` as a principal; `None` when it no longer exists (its
    /// keys then sign nothing).
    pub async fn principal(&self, id: &str) -> S3Result<Option<Arc<Principal>>> {
        let epoch = self.fresh_epoch().await?;
        if let Some((p, seen, at)) = self.cache.principals.lock().expect("cache").get(id) {
            if *seen == epoch && at.elapsed() < CACHE_TTL {
                return Ok(p.clone());
            }
        }
        let p = self
            .identity
            .effective(id)
            .await?
            .map(|e| Arc::new(Principal::from_effective(e)));
        let mut cache = self.cache.principals.lock().expect("cache");
        if cache.len() >= 10_000 {
            cache.clear();
        }
        cache.insert(id.to_owned(), (p.clone(), epoch, Instant::now()));
        Ok(p)
    }
}
