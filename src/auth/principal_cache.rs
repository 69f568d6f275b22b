//! The principal of an IAM user, cached per user like secrets (under the keys' version
//! counter, see `auth::credentials`), so that a signed request by a user costs no database
//! round trip in steady state.

use std::sync::Arc;
use std::time::Instant;

use super::credentials::{Credentials, CACHE_TTL};
use super::principal::Principal;
use crate::error::S3Result;
use crate::storage::meta::UserOfKey;

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

    /// The principal a key acts as: its IAM user's, or its role's session's (`None`: the
    /// user or role no longer exists, and the key signs nothing).
    pub async fn principal_of(&self, who: &UserOfKey) -> S3Result<Option<Arc<Principal>>> {
        let Some(session) = &who.role_session else {
            return self.principal(&who.id).await;
        };
        // Cached per role and session name (the name is part of the principal's ARN).
        let cache_key = format!("{}\n{session}", who.id);
        let epoch = self.fresh_epoch().await?;
        if let Some((p, seen, at)) = self.cache.principals.lock().expect("cache").get(&cache_key) {
            if *seen == epoch && at.elapsed() < CACHE_TTL {
                return Ok(p.clone());
            }
        }
        let p = self
            .identity
            .role_effective(&who.id)
            .await?
            // A role now of another account (never: ids are unique) would not be this one.
            .filter(|(r, _)| r.account_key == who.account_key)
            .map(|(role, policies)| Arc::new(Principal::of_role(role, session, policies)));
        let mut cache = self.cache.principals.lock().expect("cache");
        if cache.len() >= 10_000 {
            cache.clear();
        }
        cache.insert(cache_key, (p.clone(), epoch, Instant::now()));
        Ok(p)
    }
}
