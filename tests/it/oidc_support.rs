//! The identity provider stand-in of the OIDC tests (tests/it/oidc.rs): an axum server on
//! 127.0.0.1 serving a discovery document and a key set, counting requests, and able to
//! misbehave on demand (another issuer, a foreign jwks_uri, an oversized or endless key set,
//! a redirect); signing keys (RSA 2048 from tests/fixtures/oidc, P-256 generated with ring)
//! and compact JWS built byte by byte, so that hostile tokens are exactly what they say.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use grids3::oidc::{Limits, OidcError, OidcPolicy, Verifier};
use ring::signature::{self as rsig, KeyPair};
use serde_json::{json, Value};

/// The verifier's clock in every test (seconds since the epoch).
pub(crate) const NOW: i64 = 1_800_000_000;
pub(crate) const CLIENT: &str = "grids3-client";

pub(crate) const RSA1_PEM: &str = include_str!("../fixtures/oidc/rsa1.pem");
pub(crate) const RSA1_PUB_PEM: &str = include_str!("../fixtures/oidc/rsa1.pub.pem");
pub(crate) const RSA2_PEM: &str = include_str!("../fixtures/oidc/rsa2.pem");
/// The public half of a 1024-bit RSA key (ring will not sign with one so short).
pub(crate) const RSA1024_JWK: &str = include_str!("../fixtures/oidc/rsa1024.jwk.json");

fn pem_der(pem: &str) -> Vec<u8> {
    let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    STANDARD.decode(b64).expect("PEM base64")
}

/// A signing key of the test provider.
pub(crate) enum Signer {
    Rsa(rsig::RsaKeyPair),
    Ec(rsig::EcdsaKeyPair),
    Hmac(Vec<u8>),
    /// `alg: none`: no signature at all.
    Unsigned,
}

impl Signer {
    pub(crate) fn rsa(pem: &str) -> Self {
        Signer::Rsa(rsig::RsaKeyPair::from_pkcs8(&pem_der(pem)).expect("RSA key"))
    }

    pub(crate) fn ec() -> Self {
        let rng = ring::rand::SystemRandom::new();
        let alg = &rsig::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = rsig::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        Signer::Ec(rsig::EcdsaKeyPair::from_pkcs8(alg, der.as_ref(), &rng).unwrap())
    }

    /// The public JWK of this key, with `kid`.
    pub(crate) fn jwk(&self, kid: &str) -> Value {
        match self {
            Signer::Rsa(k) => {
                let c = ring::rsa::PublicKeyComponents::<Vec<u8>>::from(k.public());
                json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                       "n": URL_SAFE_NO_PAD.encode(&c.n), "e": URL_SAFE_NO_PAD.encode(&c.e)})
            }
            Signer::Ec(k) => {
                let p = k.public_key().as_ref();
                json!({"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256",
                       "x": URL_SAFE_NO_PAD.encode(&p[1..33]), "y": URL_SAFE_NO_PAD.encode(&p[33..])})
            }
            _ => unreachable!("no JWK for a secret"),
        }
    }

    pub(crate) fn sign(&self, msg: &[u8]) -> Vec<u8> {
        let rng = ring::rand::SystemRandom::new();
        match self {
            Signer::Rsa(k) => {
                let mut sig = vec![0; k.public().modulus_len()];
                k.sign(&rsig::RSA_PKCS1_SHA256, &rng, msg, &mut sig)
                    .unwrap();
                sig
            }
            Signer::Ec(k) => k.sign(&rng, msg).unwrap().as_ref().to_vec(),
            Signer::Hmac(secret) => {
                let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
                ring::hmac::sign(&key, msg).as_ref().to_vec()
            }
            Signer::Unsigned => Vec::new(),
        }
    }
}

/// A compact JWS of `header` and `claims`, signed by `signer`.
pub(crate) fn jwt(header: &Value, claims: &Value, signer: &Signer) -> String {
    let msg = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = signer.sign(msg.as_bytes());
    format!("{msg}.{}", URL_SAFE_NO_PAD.encode(sig))
}

/// Claims of a good token from `issuer`, valid at `NOW`.
pub(crate) fn claims(issuer: &str) -> Value {
    json!({"iss": issuer, "sub": "user-42", "aud": CLIENT, "exp": NOW + 600,
           "iat": NOW - 10, "nbf": NOW - 10, "amr": ["pwd", "mfa"], "email": "u@example.com"})
}

/// What the test provider answers with.
#[derive(Default)]
pub(crate) struct Idp {
    /// Its base URL (the issuer).
    pub(crate) base: Mutex<String>,
    /// The discovery document's `issuer`, when it is to differ from `base`.
    pub(crate) claimed_issuer: Mutex<Option<String>>,
    /// The discovery document's `jwks_uri`, when it is to differ from `<base>/keys`.
    pub(crate) jwks_uri: Mutex<Option<String>>,
    /// The key set served.
    pub(crate) jwks: Mutex<Value>,
    /// Serve an endless key set (streamed, no Content-Length) instead.
    pub(crate) endless: AtomicBool,
    /// Serve a key set of this many bytes (with Content-Length) instead.
    pub(crate) oversized: Mutex<Option<usize>>,
    /// Answer discovery with a redirect to `<base>/elsewhere`.
    pub(crate) redirect: AtomicBool,
    /// Answer discovery with 503 (the provider is down).
    pub(crate) unavailable: AtomicBool,
    /// Hold each key set request until [`Idp::release`] is notified, after notifying
    /// [`Idp::holding`]: a slow provider whose slowness the test decides, not a timer.
    pub(crate) hold_keys: AtomicBool,
    pub(crate) holding: tokio::sync::Notify,
    pub(crate) release: tokio::sync::Notify,
    pub(crate) discovery_hits: AtomicUsize,
    pub(crate) jwks_hits: AtomicUsize,
    pub(crate) elsewhere_hits: AtomicUsize,
}

async fn discovery(State(idp): State<Arc<Idp>>) -> Response {
    idp.discovery_hits.fetch_add(1, Ordering::SeqCst);
    let base = idp.base.lock().unwrap().clone();
    if idp.unavailable.load(Ordering::SeqCst) {
        return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
    }
    if idp.redirect.load(Ordering::SeqCst) {
        return (
            axum::http::StatusCode::FOUND,
            [("location", format!("{base}/elsewhere"))],
        )
            .into_response();
    }
    let issuer = idp
        .claimed_issuer
        .lock()
        .unwrap()
        .clone()
        .unwrap_or(base.clone());
    let jwks_uri = idp
        .jwks_uri
        .lock()
        .unwrap()
        .clone()
        .unwrap_or(format!("{base}/keys"));
    axum::Json(json!({"issuer": issuer, "jwks_uri": jwks_uri,
                      "id_token_signing_alg_values_supported": ["RS256", "ES256"]}))
    .into_response()
}

async fn keys(State(idp): State<Arc<Idp>>) -> Response {
    idp.jwks_hits.fetch_add(1, Ordering::SeqCst);
    if idp.hold_keys.load(Ordering::SeqCst) {
        idp.holding.notify_one();
        idp.release.notified().await;
    }
    if idp.endless.load(Ordering::SeqCst) {
        let chunk = bytes::Bytes::from(vec![b' '; 16 * 1024]);
        let s = futures::stream::repeat(Ok::<_, std::convert::Infallible>(chunk));
        return axum::body::Body::from_stream(s).into_response();
    }
    if let Some(n) = *idp.oversized.lock().unwrap() {
        let filler = "x".repeat(n);
        return axum::Json(json!({"keys": [], "filler": filler})).into_response();
    }
    axum::Json(idp.jwks.lock().unwrap().clone()).into_response()
}

async fn elsewhere(State(idp): State<Arc<Idp>>) -> Response {
    idp.elsewhere_hits.fetch_add(1, Ordering::SeqCst);
    axum::Json(json!({})).into_response()
}

/// Starts the provider on 127.0.0.1 with a random port, serving `jwks`.
pub(crate) async fn start_idp(jwks: Value) -> Arc<Idp> {
    let idp = Arc::new(Idp::default());
    *idp.jwks.lock().unwrap() = jwks;
    let app = axum::Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/keys", get(keys))
        .route("/elsewhere", get(elsewhere))
        .with_state(idp.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    *idp.base.lock().unwrap() = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.ok() });
    idp
}

impl Idp {
    pub(crate) fn issuer(&self) -> String {
        self.base.lock().unwrap().clone()
    }
}

pub(crate) fn verifier(limits: Limits) -> Verifier {
    Verifier::new(OidcPolicy::new("", true), limits).unwrap()
}

pub(crate) fn clients() -> Vec<String> {
    vec!["other-client".into(), CLIENT.into()]
}

pub(crate) fn code(r: &Result<grids3::oidc::Verified, OidcError>) -> String {
    match r {
        Ok(_) => "accepted".into(),
        Err(OidcError::IncorrectAudience) => "IncorrectAudience".into(),
        Err(e) => e.code().into(),
    }
}
