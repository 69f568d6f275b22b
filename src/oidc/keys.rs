//! Providers' signing keys: a JWKS read into the keys grids3 can use, and a per-issuer cache.
//!
//! The cache keeps each issuer's key set for a while (`Limits::key_ttl_secs`), so that a
//! verification costs no request to the provider. A token whose `kid` is not in the cached set
//! (the provider rotated keys) makes the cache fetch again, but at most once per
//! `Limits::refetch_interval_secs` per issuer: tokens with made-up kids cannot turn grids3
//! into a tool that hammers the provider. A refetch replaces the set whole, so a key the
//! provider withdrew stops verifying at once; until then (at most `key_ttl_secs`, 15 minutes
//! by default) a withdrawn key still verifies, as on AWS, which caches providers' keys too.
//! Concurrent verifications for one issuer wait for one fetch rather than each starting their
//! own, but a token whose key is in the fresh cached set never waits for a fetch. Times are
//! the caller's clock in seconds (the database's), never this process's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::engine::{general_purpose::GeneralPurpose, DecodePaddingMode, GeneralPurposeConfig};
use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::{Map, Value};

use super::error::OidcError;
use super::fetch::Fetcher;
use super::issuer::NormalizedIssuer;
use super::Limits;

/// Most keys read from one key set (providers publish a handful).
pub const MAX_KEYS: usize = 100;

/// Smallest RSA modulus accepted, in bits (NIST SP 800-131A; ring's own floor for RS256).
pub const MIN_RSA_BITS: usize = 2048;

/// base64url, padding tolerated (RFC 7517 says none; some providers pad anyway).
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// One usable signing key of a provider.
#[derive(Clone)]
pub(crate) struct Key {
    /// The JWK's `kid`, if it has one.
    pub kid: Option<String>,
    /// RS256 for an RSA key, ES256 for a P-256 key.
    pub alg: Algorithm,
    /// The key, ready for jsonwebtoken.
    pub key: DecodingKey,
}

/// The usable keys of one key set.
#[derive(Clone, Default)]
pub(crate) struct KeySet {
    keys: Vec<Key>,
}

/// What a key set holds for a token's `kid` and `alg`.
pub(crate) enum Lookup {
    /// The keys to try (one, unless the provider repeated a kid).
    Found(Vec<DecodingKey>),
    /// No such key: the provider may have rotated, so a refetch may find it.
    NotFound,
    /// The key exists but cannot verify this token (another algorithm), or the token names
    /// no kid and several keys would do: no refetch helps.
    Refused(String),
}

impl KeySet {
    /// The keys of a JWKS document (RFC 7517 §5) that grids3 can verify with: RSA keys of at
    /// least 2048 bits for RS256 and P-256 keys for ES256, whose `alg`, `use` and `key_ops`
    /// (when given) allow that. Other keys (symmetric `oct` keys above all, which must never
    /// become HMAC secrets; encryption keys; other curves) are left out, not refused: a
    /// provider may publish them beside its signing keys.
    pub(crate) fn parse(doc: &Map<String, Value>) -> Result<KeySet, OidcError> {
        let Some(Value::Array(list)) = doc.get("keys") else {
            return Err(OidcError::IdpCommunication(
                "the provider's key set has no keys array".into(),
            ));
        };
        if list.len() > MAX_KEYS {
            return Err(OidcError::IdpCommunication(format!(
                "the provider's key set has {} keys, more than {MAX_KEYS}",
                list.len()
            )));
        }
        let keys = list
            .iter()
            .filter_map(|v| v.as_object().and_then(parse_jwk))
            .collect();
        Ok(KeySet { keys })
    }

    /// The keys for a token's `kid` (if any) and `alg`. A token without a kid may use the one
    /// key of its algorithm, and only if there is exactly one.
    pub(crate) fn find(&self, kid: Option<&str>, alg: Algorithm) -> Lookup {
        match kid {
            Some(kid) => {
                let named: Vec<&Key> = self
                    .keys
                    .iter()
                    .filter(|k| k.kid.as_deref() == Some(kid))
                    .collect();
                if named.is_empty() {
                    return Lookup::NotFound;
                }
                let usable: Vec<DecodingKey> = named
                    .iter()
                    .filter(|k| k.alg == alg)
                    .map(|k| k.key.clone())
                    .collect();
                if usable.is_empty() {
                    Lookup::Refused(format!("the provider's key {kid:?} is not a {alg:?} key"))
                } else {
                    Lookup::Found(usable)
                }
            }
            None => {
                let usable: Vec<DecodingKey> = self
                    .keys
                    .iter()
                    .filter(|k| k.alg == alg)
                    .map(|k| k.key.clone())
                    .collect();
                match usable.len() {
                    0 => Lookup::NotFound,
                    1 => Lookup::Found(usable),
                    n => Lookup::Refused(format!(
                        "the token names no key (kid) and the provider has {n} {alg:?} keys"
                    )),
                }
            }
        }
    }
}

fn b64(jwk: &Map<String, Value>, field: &str) -> Option<Vec<u8>> {
    B64.decode(jwk.get(field)?.as_str()?).ok()
}

/// A JWK grids3 can verify with, or `None`.
fn parse_jwk(jwk: &Map<String, Value>) -> Option<Key> {
    let kid = match jwk.get("kid") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return None,
    };
    if jwk.get("use").is_some_and(|u| u.as_str() != Some("sig")) {
        return None;
    }
    if let Some(ops) = jwk.get("key_ops") {
        let verify = ops
            .as_array()
            .is_some_and(|a| a.iter().any(|o| o.as_str() == Some("verify")));
        if !verify {
            return None;
        }
    }
    let alg_is = |want: &str| jwk.get("alg").is_none_or(|a| a.as_str() == Some(want));
    match jwk.get("kty").and_then(Value::as_str)? {
        "RSA" if alg_is("RS256") => {
            let n = b64(jwk, "n")?;
            let e = b64(jwk, "e")?;
            let n_trim: &[u8] = &n[n.iter().position(|b| *b != 0)?..];
            let bits = n_trim.len() * 8 - n_trim[0].leading_zeros() as usize;
            if bits < MIN_RSA_BITS || e.is_empty() {
                return None;
            }
            Some(Key {
                kid,
                alg: Algorithm::RS256,
                key: DecodingKey::from_rsa_raw_components(n_trim, &e),
            })
        }
        "EC" if alg_is("ES256") && jwk.get("crv").and_then(Value::as_str) == Some("P-256") => {
            let x = b64(jwk, "x")?;
            let y = b64(jwk, "y")?;
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let key = DecodingKey::from_ec_components(
                jwk.get("x")?.as_str()?.trim_end_matches('='),
                jwk.get("y")?.as_str()?.trim_end_matches('='),
            )
            .ok()?;
            Some(Key {
                kid,
                alg: Algorithm::ES256,
                key,
            })
        }
        _ => None,
    }
}

/// One issuer's cached keys and fetch history.
#[derive(Default)]
struct State {
    /// The last key set read, and when (caller's clock, seconds).
    keys: Option<(Arc<KeySet>, i64)>,
    /// When a fetch was last started, successful or not.
    attempted_at: Option<i64>,
    /// Why the last fetch failed, answered again while a new one may not start.
    last_error: Option<OidcError>,
    /// Counts finished fetches, so that a verification that waited for one sees it happened.
    fetches: u64,
}

/// An issuer's slot: the state under a plain lock that is never held across an await (a
/// token whose key is cached is answered from it at once, even while a fetch is under way:
/// review F2), a fetch gate held across a fetch (so that concurrent verifications needing
/// keys wait for one fetch rather than each starting their own), and when it was last used
/// (for eviction).
#[derive(Default)]
struct Slot {
    state: Mutex<State>,
    fetch: tokio::sync::Mutex<()>,
    used_at: std::sync::atomic::AtomicI64,
}

impl Slot {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What the cache alone says about a token.
enum Cached {
    /// The answer: keys, or a refusal no fetch can change.
    Answer(Result<Vec<DecodingKey>, OidcError>),
    /// A fetch is needed (and allowed).
    Fetch,
}

/// The per-issuer key cache.
pub(crate) struct KeyCache {
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    ttl: i64,
    refetch: i64,
    max_issuers: usize,
}

impl KeyCache {
    /// An empty cache with the limits' TTL, refetch interval and issuer bound.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
            ttl: limits.key_ttl_secs,
            refetch: limits.refetch_interval_secs,
            max_issuers: limits.max_issuers.max(1),
        }
    }

    /// The slot of `issuer`, made if new; the least recently used slot goes when the cache
    /// holds `max_issuers` (issuers are registered by administrators, so this is a bound
    /// against mistakes, not an expected path).
    fn slot(&self, issuer: &str, now: i64) -> Arc<Slot> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = slots.get(issuer) {
            s.used_at.store(now, Relaxed);
            return s.clone();
        }
        while slots.len() >= self.max_issuers {
            let oldest = slots
                .iter()
                .min_by_key(|(_, s)| s.used_at.load(Relaxed))
                .map(|(k, _)| k.clone());
            match oldest {
                Some(k) => slots.remove(&k),
                None => break,
            };
        }
        let slot = Arc::new(Slot::default());
        slot.used_at.store(now, Relaxed);
        slots.insert(issuer.to_owned(), slot.clone());
        slot
    }

    /// Whether keys read at `at` are still fresh at `now`. A clock that went back (another
    /// instance's reading) counts as stale, not fresh.
    fn fresh(&self, at: i64, now: i64) -> bool {
        now >= at && now - at < self.ttl
    }

    /// The cache's answer for `kid` and `alg` at `now`, with the fetch it allows marked
    /// started (so that one verification fetches and the others find the interval taken).
    fn consult(&self, st: &mut State, kid: Option<&str>, alg: Algorithm, now: i64) -> Cached {
        let fresh = st.keys.as_ref().is_some_and(|(_, at)| self.fresh(*at, now));
        if fresh {
            let (set, _) = st.keys.as_ref().expect("fresh keys");
            match set.find(kid, alg) {
                Lookup::Found(k) => return Cached::Answer(Ok(k)),
                Lookup::Refused(m) => {
                    return Cached::Answer(Err(OidcError::InvalidIdentityToken(m)))
                }
                Lookup::NotFound => {}
            }
        }
        let may_fetch = st
            .attempted_at
            .is_none_or(|at| now < at || now - at >= self.refetch);
        if may_fetch {
            st.attempted_at = Some(now);
            return Cached::Fetch;
        }
        // The last fetch failed: a kid the cache lacks may be the provider's new key, which
        // could not be read, so the answer is the provider's failure, not "no such key"
        // (review F6a).
        if let Some(e) = &st.last_error {
            return Cached::Answer(Err(e.clone()));
        }
        if fresh {
            return Cached::Answer(Err(not_found(kid)));
        }
        // Only with a clock that went back: answer from what is held.
        Cached::Answer(match st.keys.as_ref().map(|(s, _)| s.find(kid, alg)) {
            Some(Lookup::Found(k)) => Ok(k),
            Some(Lookup::Refused(m)) => Err(OidcError::InvalidIdentityToken(m)),
            Some(Lookup::NotFound) => Err(not_found(kid)),
            None => Err(OidcError::IdpCommunication(
                "the provider's keys are not available yet".into(),
            )),
        })
    }

    /// The keys to verify a token of `issuer` with `kid` and `alg`, at `now`: from the cache
    /// while fresh and holding the kid (at once, whatever fetch is under way), else fetched
    /// (discovery, then the key set) if the refetch interval allows.
    pub(crate) async fn keys_for(
        &self,
        fetcher: &Fetcher,
        issuer: &NormalizedIssuer,
        kid: Option<&str>,
        alg: Algorithm,
        now: i64,
    ) -> Result<Vec<DecodingKey>, OidcError> {
        let slot = self.slot(&issuer.issuer, now);
        let seen = {
            let st = slot.state();
            let fresh = st.keys.as_ref().is_some_and(|(_, at)| self.fresh(*at, now));
            if fresh {
                let (set, _) = st.keys.as_ref().expect("fresh keys");
                match set.find(kid, alg) {
                    Lookup::Found(k) => return Ok(k),
                    Lookup::Refused(m) => return Err(OidcError::InvalidIdentityToken(m)),
                    Lookup::NotFound => {}
                }
            }
            st.fetches
        };
        // The cache cannot answer: wait for a fetch under way, then decide with what it
        // brought (or start one).
        let _gate = slot.fetch.lock().await;
        let decided = {
            let mut st = slot.state();
            if st.fetches != seen && st.last_error.is_none() {
                // A fetch finished while this one waited: its key set is the newest there is.
                let set = st.keys.as_ref().map(|(s, _)| s.clone());
                Cached::Answer(match set.map(|s| s.find(kid, alg)) {
                    Some(Lookup::Found(k)) => Ok(k),
                    Some(Lookup::Refused(m)) => Err(OidcError::InvalidIdentityToken(m)),
                    _ => Err(not_found(kid)),
                })
            } else {
                self.consult(&mut st, kid, alg, now)
            }
        };
        if let Cached::Answer(a) = decided {
            return a;
        }
        let fetched = async {
            let uri = fetcher.jwks_uri(issuer).await?;
            KeySet::parse(&fetcher.jwks(uri).await?)
        }
        .await;
        let mut st = slot.state();
        st.fetches += 1;
        let set = match fetched {
            Ok(set) => Arc::new(set),
            Err(e) => {
                st.last_error = Some(e.clone());
                return Err(e);
            }
        };
        st.last_error = None;
        st.keys = Some((set.clone(), now));
        match set.find(kid, alg) {
            Lookup::Found(k) => Ok(k),
            Lookup::Refused(m) => Err(OidcError::InvalidIdentityToken(m)),
            Lookup::NotFound => Err(not_found(kid)),
        }
    }
}

fn not_found(kid: Option<&str>) -> OidcError {
    OidcError::InvalidIdentityToken(match kid {
        Some(k) => format!(
            "the provider's key set has no key {:?}",
            k.chars().take(64).collect::<String>()
        ),
        None => "the provider's key set has no key for the token's algorithm".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
    use serde_json::json;

    /// The public JWK of the 2048-bit test key, read with ring.
    fn rsa2048() -> Value {
        let pem = include_str!("../../tests/fixtures/oidc/rsa1.pem");
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let kp = ring::signature::RsaKeyPair::from_pkcs8(&STANDARD.decode(b64).unwrap()).unwrap();
        let c = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(
            ring::signature::KeyPair::public_key(&kp),
        );
        json!({"kty": "RSA", "kid": "r", "n": URL_SAFE_NO_PAD.encode(&c.n),
               "e": URL_SAFE_NO_PAD.encode(&c.e)})
    }

    fn ec() -> Value {
        json!({"kty": "EC", "kid": "e", "crv": "P-256",
               "x": URL_SAFE_NO_PAD.encode([1u8; 32]), "y": URL_SAFE_NO_PAD.encode([2u8; 32])})
    }

    fn with(mut v: Value, k: &str, val: Value) -> Value {
        v[k] = val;
        v
    }

    /// Which JWKs become keys: (name, JWK, the algorithm it verifies, or none).
    #[test]
    fn jwk_table() {
        let short: Value =
            serde_json::from_str(include_str!("../../tests/fixtures/oidc/rsa1024.jwk.json"))
                .unwrap();
        let cases: Vec<(&str, Value, Option<Algorithm>)> = vec![
            ("RSA 2048", rsa2048(), Some(Algorithm::RS256)),
            (
                "RSA alg RS256",
                with(rsa2048(), "alg", json!("RS256")),
                Some(Algorithm::RS256),
            ),
            (
                "RSA use sig",
                with(rsa2048(), "use", json!("sig")),
                Some(Algorithm::RS256),
            ),
            (
                "RSA key_ops verify",
                with(rsa2048(), "key_ops", json!(["verify"])),
                Some(Algorithm::RS256),
            ),
            (
                "RSA padded base64",
                with(
                    rsa2048(),
                    "n",
                    json!(format!("{}==", rsa2048()["n"].as_str().unwrap())),
                ),
                Some(Algorithm::RS256),
            ),
            ("RSA 1024", short, None),
            (
                "RSA alg RS384",
                with(rsa2048(), "alg", json!("RS384")),
                None,
            ),
            (
                "RSA alg PS256",
                with(rsa2048(), "alg", json!("PS256")),
                None,
            ),
            ("RSA use enc", with(rsa2048(), "use", json!("enc")), None),
            (
                "RSA key_ops encrypt",
                with(rsa2048(), "key_ops", json!(["encrypt"])),
                None,
            ),
            ("RSA kid a number", with(rsa2048(), "kid", json!(7)), None),
            ("RSA no n", with(rsa2048(), "n", Value::Null), None),
            ("EC P-256", ec(), Some(Algorithm::ES256)),
            ("EC alg ES384", with(ec(), "alg", json!("ES384")), None),
            ("EC P-384", with(ec(), "crv", json!("P-384")), None),
            (
                "EC short x",
                with(ec(), "x", json!(URL_SAFE_NO_PAD.encode([1u8; 31]))),
                None,
            ),
            ("oct", json!({"kty": "oct", "k": "c2VjcmV0"}), None),
            (
                "OKP",
                json!({"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}),
                None,
            ),
        ];
        for (name, jwk, want) in cases {
            let got = parse_jwk(jwk.as_object().unwrap()).map(|k| k.alg);
            assert_eq!(got, want, "{name}");
        }
    }

    /// The cache holds at most `max_issuers` issuers; the least recently used goes first.
    #[test]
    fn issuers_are_bounded_least_recently_used_first() {
        let cache = KeyCache::new(&Limits {
            max_issuers: 2,
            ..Limits::default()
        });
        let a = cache.slot("https://a.example", 1);
        cache.slot("https://b.example", 2);
        assert!(Arc::ptr_eq(&a, &cache.slot("https://a.example", 3)));
        cache.slot("https://c.example", 4);
        let held = cache.slots.lock().unwrap();
        let mut names: Vec<&str> = held.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["https://a.example", "https://c.example"]);
    }

    #[test]
    fn key_lookup() {
        let doc = json!({"keys": [rsa2048(), ec(), with(rsa2048(), "kid", json!("r2"))]});
        let set = KeySet::parse(doc.as_object().unwrap()).unwrap();
        assert!(matches!(set.find(Some("r"), Algorithm::RS256), Lookup::Found(k) if k.len() == 1));
        assert!(matches!(
            set.find(Some("e"), Algorithm::RS256),
            Lookup::Refused(_)
        ));
        assert!(matches!(
            set.find(Some("zz"), Algorithm::RS256),
            Lookup::NotFound
        ));
        // No kid: one key of the algorithm is used, two are ambiguous.
        assert!(matches!(set.find(None, Algorithm::ES256), Lookup::Found(_)));
        assert!(matches!(
            set.find(None, Algorithm::RS256),
            Lookup::Refused(_)
        ));
        let many = json!({"keys": vec![ec(); MAX_KEYS + 1]});
        assert!(KeySet::parse(many.as_object().unwrap()).is_err());
        assert!(KeySet::parse(json!({"keys": {}}).as_object().unwrap()).is_err());
    }
}
