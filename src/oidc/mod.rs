//! OpenID Connect ID token verification, for STS's AssumeRoleWithWebIdentity and console
//! single sign-on (issue 61).
//!
//! Tokens and identity providers are hostile input. The door is narrow: [`issuer::check_url`]
//! judges a provider's URL (what CreateOpenIDConnectProvider validates), and
//! [`Verifier::verify`] checks one token against a registered provider and its client ids at
//! the caller's time (the database's clock). Underneath: the URL policy and its resolver
//! ([`issuer`]), bounded fetches of discovery and key set ([`fetch`]), the per-issuer key
//! cache ([`keys`]), the token and claim checks ([`verify`]) and ring as jsonwebtoken's
//! cryptography ([`crypto`]). This module imports nothing of grids3: the caller reads the
//! policy from the configuration and maps [`OidcError`] to its protocol's errors.

use std::sync::Arc;
use std::time::Duration;

pub mod code_flow;
mod crypto;
pub mod error;
mod fetch;
pub mod issuer;
mod keys;
pub mod verify;

pub use error::OidcError;
pub use issuer::{check_url, NormalizedIssuer, OidcPolicy};
pub use verify::{Verified, MAX_TOKEN_LEN, SKEW_SECS};

/// Bounds on the verifier's fetches and cache.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest one fetch (discovery or key set) may take, connection to last byte.
    pub timeout: Duration,
    /// Largest discovery document or key set read, in bytes.
    pub max_body: usize,
    /// How long a fetched key set is used before it is fetched again, in seconds.
    pub key_ttl_secs: i64,
    /// Least time between two fetches for one issuer, in seconds (unknown kids and failures
    /// cannot make grids3 fetch more often).
    pub refetch_interval_secs: i64,
    /// Most issuers whose keys are cached at once.
    pub max_issuers: usize,
}

impl Default for Limits {
    /// 5 s per fetch, 256 KiB per document, keys kept 15 min, refetched at most every 10 s,
    /// 256 issuers.
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(5),
            max_body: 256 * 1024,
            key_ttl_secs: 15 * 60,
            refetch_interval_secs: 10,
            max_issuers: 256,
        }
    }
}

/// Verifies ID tokens of registered providers: one per process (it holds the HTTP client and
/// the key cache), shared by reference.
pub struct Verifier {
    policy: Arc<OidcPolicy>,
    fetcher: fetch::Fetcher,
    cache: keys::KeyCache,
    endpoints: code_flow::EndpointCache,
}

impl std::fmt::Debug for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Verifier").finish_non_exhaustive()
    }
}

impl Verifier {
    /// A verifier fetching under `policy` within `limits`.
    pub fn new(policy: OidcPolicy, limits: Limits) -> Result<Self, OidcError> {
        crypto::install();
        let policy = Arc::new(policy);
        Ok(Self {
            fetcher: fetch::Fetcher::new(policy.clone(), &limits)?,
            cache: keys::KeyCache::new(&limits),
            endpoints: code_flow::EndpointCache::default(),
            policy,
        })
    }

    /// The URL policy this verifier fetches under.
    pub fn policy(&self) -> &OidcPolicy {
        &self.policy
    }

    /// Verifies `token` as an ID token of the provider at `issuer_url` for one of
    /// `client_ids`, at `now` (seconds since the epoch, the caller's clock: grids3 passes the
    /// database's). Checks, in order: the token's size and header (RS256 or ES256 only), the
    /// issuer URL against the policy, the provider's key for the token's kid (fetched or
    /// cached), the signature, then `iss`, `exp`, `nbf`, `iat`, `aud` and `sub`.
    pub async fn verify(
        &self,
        issuer_url: &str,
        client_ids: &[String],
        token: &str,
        now: i64,
    ) -> Result<Verified, OidcError> {
        let header = verify::header(token)?;
        // A registered URL the policy now refuses (it was narrowed since) is not fetched.
        let issuer = check_url(&self.policy, issuer_url).map_err(|e| {
            OidcError::IdpCommunication(format!("the provider's URL is not allowed: {e}"))
        })?;
        let candidates = self
            .cache
            .keys_for(
                &self.fetcher,
                &issuer,
                header.kid.as_deref(),
                header.alg,
                now,
            )
            .await?;
        let claims = verify::signed_claims(token, header.alg, &candidates)?;
        verify::check_claims(claims, &issuer, client_ids, now)
    }
}
