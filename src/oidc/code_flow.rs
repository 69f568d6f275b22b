//! The client side of OpenID Connect's authorization code flow with PKCE (RFC 7636), for the
//! console's single sign-on: the provider's endpoints from its discovery document (cached),
//! the authorization URL a browser is sent to, and the code redeemed for an ID token at the
//! token endpoint. The ID token is then verified like any other ([`super::Verifier::verify`],
//! by the caller, through STS): what comes back from the token endpoint is not trusted for
//! having come over TLS.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use base64::Engine;
use rand::RngCore;
use serde_json::Value;

use super::error::OidcError;
use super::issuer::{check_fetch_url, check_url};
use super::Verifier;

/// How long a provider's endpoints are used before its discovery document is read again:
/// sign-in attempts (unauthenticated) must not each make grids3 fetch.
const ENDPOINTS_TTL: Duration = Duration::from_secs(300);

/// Most issuers whose endpoints are cached (the console has one).
const MAX_CACHED: usize = 16;

/// Longest authorization code accepted from a browser.
pub const MAX_CODE_LEN: usize = 2048;

/// How the client proves itself at the token endpoint (RFC 6749 §2.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientAuth {
    /// HTTP Basic, the default of OpenID Connect Discovery.
    Basic,
    /// `client_id` and `client_secret` in the form.
    Post,
    /// Neither is offered (only `private_key_jwt` or the like): a secret cannot be sent.
    Unsupported,
}

/// A provider's endpoints, from its discovery document.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// Where the browser is sent to sign in.
    pub authorization: url::Url,
    /// Where the code is redeemed (fetched by grids3: the issuer's URL policy applies).
    token: url::Url,
    auth: ClientAuth,
}

/// The console as a client of the provider.
pub struct Client<'a> {
    /// Its client id.
    pub id: &'a str,
    /// Its secret (`None`: a public client, proved by PKCE alone).
    pub secret: Option<&'a str>,
}

/// A PKCE pair: the verifier kept by the client, the challenge sent with the browser.
pub struct Pkce {
    /// 43 characters of base64url (32 random bytes).
    pub verifier: String,
    /// `S256` of the verifier.
    pub challenge: String,
}

/// 32 random bytes as base64url: a `state`, a `nonce`, a PKCE verifier.
pub fn random_value() -> String {
    let mut b = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut b);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// A new PKCE pair (method `S256`; `plain` is never used).
pub fn pkce() -> Pkce {
    use sha2::Digest;
    let verifier = random_value();
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    Pkce {
        verifier,
        challenge,
    }
}

/// The authorization request's URL (response type `code`, PKCE `S256`).
pub fn authorize_url(
    ep: &Endpoints,
    client_id: &str,
    redirect_uri: &str,
    scopes: &str,
    state: &str,
    nonce: &str,
    challenge: &str,
) -> String {
    let mut scope: Vec<&str> = vec!["openid"];
    scope.extend(scopes.split_whitespace().filter(|s| *s != "openid"));
    let mut u = ep.authorization.clone();
    u.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", redirect_uri)
        .append_pair("scope", &scope.join(" "))
        .append_pair("state", state)
        .append_pair("nonce", nonce)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256");
    u.into()
}

/// How long a failure to read a provider's endpoints is answered without asking again.
const FAILURE_TTL: Duration = Duration::from_secs(10);

/// What is known of an issuer's endpoints.
type Known = Result<Endpoints, OidcError>;

/// Endpoints (or a failure to read them) lately, per issuer; one fetch at a time, so that
/// many sign-ins at once (they are unauthenticated) make one request to the provider.
#[derive(Default)]
pub(crate) struct EndpointCache {
    slots: Mutex<HashMap<String, (Instant, Known)>>,
    fetching: tokio::sync::Mutex<()>,
}

impl EndpointCache {
    fn get(&self, issuer: &str) -> Option<Known> {
        let slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots
            .get(issuer)
            .filter(|(at, k)| {
                at.elapsed()
                    < if k.is_ok() {
                        ENDPOINTS_TTL
                    } else {
                        FAILURE_TTL
                    }
            })
            .map(|(_, k)| k.clone())
    }

    fn put(&self, issuer: &str, e: &Known) {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        if slots.len() >= MAX_CACHED {
            slots.retain(|_, (at, _)| at.elapsed() < ENDPOINTS_TTL);
            if slots.len() >= MAX_CACHED {
                slots.clear();
            }
        }
        slots.insert(issuer.to_owned(), (Instant::now(), e.clone()));
    }
}

fn comm(msg: impl Into<String>) -> OidcError {
    OidcError::IdpCommunication(msg.into())
}

/// The endpoints named by a discovery document. The authorization endpoint is where
/// browsers go, the token endpoint where grids3 connects: both must pass the issuer's policy
/// (https, public addresses unless allowed).
fn endpoints_of(
    policy: &super::OidcPolicy,
    doc: &serde_json::Map<String, Value>,
) -> Result<Endpoints, OidcError> {
    let url = |name: &str| match doc.get(name) {
        Some(Value::String(s)) => {
            check_fetch_url(policy, s).map_err(|e| comm(format!("{name} refused: {e}")))
        }
        _ => Err(comm(format!("the discovery document has no {name}"))),
    };
    let methods: Vec<&str> = match doc.get("token_endpoint_auth_methods_supported") {
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => vec!["client_secret_basic"],
    };
    let auth = if methods.contains(&"client_secret_basic") {
        ClientAuth::Basic
    } else if methods.contains(&"client_secret_post") {
        ClientAuth::Post
    } else {
        ClientAuth::Unsupported
    };
    Ok(Endpoints {
        authorization: url("authorization_endpoint")?,
        token: url("token_endpoint")?,
        auth,
    })
}

/// RFC 6749 §2.3.1: the id and secret are form-encoded before they are joined and encoded.
fn basic(id: &str, secret: &str) -> String {
    let enc = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    base64::engine::general_purpose::STANDARD.encode(format!("{}:{}", enc(id), enc(secret)))
}

impl Verifier {
    /// The endpoints of the provider at `issuer_url` (cached for [`ENDPOINTS_TTL`]).
    pub async fn endpoints(&self, issuer_url: &str) -> Result<Endpoints, OidcError> {
        let issuer = check_url(&self.policy, issuer_url)?;
        if let Some(k) = self.endpoints.get(&issuer.issuer) {
            return k;
        }
        let _one = self.endpoints.fetching.lock().await;
        // Another sign-in may have fetched while this one waited.
        if let Some(k) = self.endpoints.get(&issuer.issuer) {
            return k;
        }
        let known = match self.fetcher.discovery(&issuer).await {
            Ok(doc) => endpoints_of(&self.policy, &doc),
            Err(e) => Err(e),
        };
        self.endpoints.put(&issuer.issuer, &known);
        known
    }

    /// Redeems an authorization `code` at the token endpoint, with the PKCE `verifier` and
    /// the `redirect_uri` it was issued for; returns the (unverified) ID token.
    pub async fn redeem(
        &self,
        ep: &Endpoints,
        client: &Client<'_>,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<String, OidcError> {
        if code.is_empty() || code.len() > MAX_CODE_LEN {
            return Err(OidcError::InvalidInput(
                "the authorization code is missing or too long".into(),
            ));
        }
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", verifier),
        ];
        let mut header = None;
        match (client.secret, ep.auth) {
            (Some(s), ClientAuth::Basic) => header = Some(basic(client.id, s)),
            (Some(s), ClientAuth::Post) => {
                form.push(("client_id", client.id));
                form.push(("client_secret", s));
            }
            (Some(_), ClientAuth::Unsupported) => {
                return Err(OidcError::IdpCommunication(
                    "the provider takes neither client_secret_basic nor client_secret_post at its token endpoint".into(),
                ))
            }
            (None, _) => form.push(("client_id", client.id)),
        }
        let answer = self
            .fetcher
            .post_form(ep.token.clone(), &form, header.as_deref(), "token answer")
            .await?;
        if let Some(Value::String(e)) = answer.get("error") {
            // The provider's own code (`invalid_grant`: used, expired or not this client's).
            let code: String = e
                .chars()
                .filter(|c| c.is_ascii_graphic())
                .take(64)
                .collect();
            return Err(OidcError::InvalidIdentityToken(format!(
                "the provider refused the code: {code}"
            )));
        }
        match answer.get("id_token") {
            Some(Value::String(t)) if !t.is_empty() => Ok(t.clone()),
            _ => Err(comm("the token answer has no id_token")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pkce_is_s256_of_its_verifier() {
        // RFC 7636 Appendix B's example.
        use sha2::Digest;
        let v = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let c = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(v));
        assert_eq!(c, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
        let p = pkce();
        assert_eq!(p.verifier.len(), 43);
        assert_ne!(p.verifier, pkce().verifier);
    }

    #[test]
    fn basic_credentials_are_form_encoded_first() {
        let b = basic("a b", "s:t");
        let raw = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        assert_eq!(String::from_utf8(raw).unwrap(), "a+b:s%3At");
    }

    #[test]
    fn endpoints_follow_the_policy_and_the_auth_methods() {
        let policy = super::super::OidcPolicy::new("", false);
        let mut doc = serde_json::Map::new();
        doc.insert(
            "authorization_endpoint".into(),
            "https://idp.example/auth".into(),
        );
        doc.insert("token_endpoint".into(), "https://idp.example/token".into());
        let e = endpoints_of(&policy, &doc).unwrap();
        assert_eq!(e.auth, ClientAuth::Basic);
        doc.insert(
            "token_endpoint_auth_methods_supported".into(),
            serde_json::json!(["client_secret_post"]),
        );
        assert_eq!(endpoints_of(&policy, &doc).unwrap().auth, ClientAuth::Post);
        doc.insert(
            "token_endpoint_auth_methods_supported".into(),
            serde_json::json!(["private_key_jwt"]),
        );
        assert_eq!(
            endpoints_of(&policy, &doc).unwrap().auth,
            ClientAuth::Unsupported
        );
        // A token endpoint on an internal address is refused, as an issuer would be.
        doc.insert("token_endpoint".into(), "https://10.0.0.1/token".into());
        assert!(endpoints_of(&policy, &doc).is_err());
        doc.insert("token_endpoint".into(), "http://idp.example/token".into());
        assert!(endpoints_of(&policy, &doc).is_err());
        doc.remove("token_endpoint");
        assert!(endpoints_of(&policy, &doc).is_err());
    }

    #[test]
    fn the_authorization_url_asks_for_a_code_with_pkce() {
        let ep = Endpoints {
            authorization: url::Url::parse("https://idp.example/auth?tenant=x").unwrap(),
            token: url::Url::parse("https://idp.example/token").unwrap(),
            auth: ClientAuth::Basic,
        };
        let u = authorize_url(&ep, "c", "https://con/cb", "email openid", "S", "N", "C");
        let u = url::Url::parse(&u).unwrap();
        let q: HashMap<String, String> = u.query_pairs().into_owned().collect();
        assert_eq!(q["tenant"], "x");
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["scope"], "openid email");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!((q["state"].as_str(), q["nonce"].as_str()), ("S", "N"));
    }
}
