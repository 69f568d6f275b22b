//! Single sign-on to the console (issue 61): "Sign in with <provider>" by OpenID Connect's
//! authorization code flow with PKCE, `state` and `nonce`.
//!
//! 1. [`start`]: the sign-in page's script draws a random `bind` value, keeps it in this
//!    origin's `sessionStorage` and asks `/login/sso?bind=...`. A new `state`, `nonce` and PKCE
//!    verifier go, with `bind`, into a short-lived cookie of their own, signed (HMAC under the
//!    root secret, so any instance can finish what another began); the browser is sent to the
//!    provider's authorization endpoint.
//! 2. The provider sends the browser back to `GET /login/sso/callback`, which changes
//!    nothing: its page's script posts the code and state, with the `bind` from
//!    `sessionStorage`, to `POST /login/sso/callback` (same origin only).
//! 3. [`finish`]: the state must be the cookie's, and `bind` too. Cookies are shared by every
//!    port of a host (and can be set by sibling hosts over plain HTTP), so a page of the S3
//!    endpoint could plant an attacker's pending cookie and send the victim to the attacker's
//!    callback (login CSRF); `sessionStorage` belongs to the console's origin alone, so the
//!    victim's browser posts its own `bind`, not the attacker's, and is refused. The state is
//!    spent once (in the database), within 10 minutes by the database's clock; the code is
//!    redeemed with the verifier; the ID token's `nonce`, `iss`, `aud` and `azp` must be this
//!    sign-in's, issuer's and client's; then the token is traded for a role's temporary
//!    credentials by STS's own AssumeRoleWithWebIdentity, trying the configured roles in
//!    order: the provider registered in the role's account verifies the token, and the
//!    role's trust policy decides, exactly as for a CI job with the same token. The console
//!    session holds those credentials, so it sees exactly what the role may do, and ends when
//!    they expire, when the role is deleted, or at logout (which also ends the credentials).

use axum::http::header;
use axum::http::request::Parts;
use base64::Engine;
use mongodb::bson::DateTime;
use serde::{Deserialize, Serialize};

use crate::config::ConsoleSso;
use crate::oidc::code_flow;
use crate::state::AppState;
use crate::storage::meta::{ConsoleSession, SsoSession};

/// The callback's path on the console.
pub const CALLBACK: &str = "/login/sso/callback";

/// How long a sign-in may take at the provider.
const PENDING_MS: i64 = 10 * 60 * 1000;

/// What the pending cookie's MAC is for (never a session cookie's).
const PURPOSE: &[u8] = b"grids3 console sso pending v1";

/// Largest pending cookie read.
const MAX_COOKIE: usize = 1024;

/// Why a sign-in did not happen, as the sign-in page says it.
#[derive(Debug)]
pub enum SsoError {
    /// Single sign-on is not configured.
    Off,
    /// The callback is not one this browser began, or it is too late (400).
    Stale(String),
    /// The provider refused, or no role admits the identity (403).
    Refused(String),
    /// The provider could not be reached or answered nonsense (502).
    Provider(String),
    /// grids3 failed (500).
    Internal(String),
}

impl SsoError {
    /// The HTTP status the page is answered with.
    pub fn status(&self) -> u16 {
        match self {
            SsoError::Off => 404,
            SsoError::Stale(_) => 400,
            SsoError::Refused(_) => 403,
            SsoError::Provider(_) => 502,
            SsoError::Internal(_) => 500,
        }
    }

    /// What the page says.
    pub fn message(&self) -> String {
        match self {
            SsoError::Off => "Single sign-on is not configured on this console.".into(),
            SsoError::Stale(m) | SsoError::Refused(m) | SsoError::Provider(m) => m.clone(),
            SsoError::Internal(_) => "Single sign-on failed on the server; see its log.".into(),
        }
    }
}

/// The configuration, when single sign-on is on.
pub fn settings(st: &AppState) -> Option<&ConsoleSso> {
    let s = &st.config.console_sso;
    s.enabled().then_some(s)
}

/// The sign-in button's label.
pub fn label(st: &AppState) -> Option<String> {
    let s = settings(st)?;
    Some(match &s.console_oidc_name {
        Some(n) if !n.is_empty() => n.clone(),
        _ => url::Url::parse(s.console_oidc_issuer.as_deref().unwrap_or_default())
            .ok()
            .and_then(|u| u.host_str().map(str::to_owned))
            .unwrap_or_else(|| "single sign-on".into()),
    })
}

/// What the pending cookie holds.
#[derive(Serialize, Deserialize)]
struct Pending {
    state: String,
    nonce: String,
    verifier: String,
    /// The browser's own value, kept in the console origin's `sessionStorage`.
    bind: String,
    /// When the sign-in began (the database's clock, ms).
    at: i64,
}

fn cookie_name(tls: bool) -> &'static str {
    if tls {
        "__Host-grids3_sso"
    } else {
        "grids3_sso"
    }
}

fn pending_cookie(st: &AppState, p: &Pending, tls: bool) -> String {
    let body = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(p).unwrap_or_default());
    let mac = super::session::mac(st, PURPOSE, &body);
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{}={body}.{mac}; Path=/; HttpOnly; SameSite=Strict; Max-Age=600{secure}",
        cookie_name(tls)
    )
}

/// The `Set-Cookie` that clears the pending cookie.
pub fn clear_cookie(tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}",
        cookie_name(tls)
    )
}

/// The pending sign-in of this browser, if its cookie is one and its MAC holds.
fn read_pending(st: &AppState, parts: &Parts, tls: bool) -> Option<Pending> {
    // Two cookies of this name: one may be planted by a page of the same site.
    let v = super::session::only_cookie(&parts.headers, cookie_name(tls))?;
    if v.len() > MAX_COOKIE {
        return None;
    }
    let (body, mac) = v.split_once('.')?;
    if !crate::crypto::keys::same(
        mac.as_bytes(),
        super::session::mac(st, PURPOSE, body).as_bytes(),
    ) {
        return None;
    }
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .ok()?;
    serde_json::from_slice(&raw).ok()
}

/// The callback URL the provider sends the browser back to: `--console-url`, else the
/// scheme and host of the request (the Host header, or HTTP/2's `:authority`). A forged host
/// only makes a URL the provider refuses, as it is not registered.
fn callback_url(console_url: Option<&str>, parts: &Parts, tls: bool) -> Result<String, SsoError> {
    if let Some(u) = console_url {
        return Ok(format!("{}{CALLBACK}", u.trim_end_matches('/')));
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b".-[]:".contains(&c))
        })
        .ok_or_else(|| SsoError::Stale("The request names no usable host.".into()))?;
    let scheme = if tls { "https" } else { "http" };
    Ok(format!("{scheme}://{host}{CALLBACK}"))
}

fn redirect_uri(st: &AppState, parts: &Parts) -> Result<String, SsoError> {
    let tls = crate::tls::Transport::of(&parts.extensions).tls;
    callback_url(st.config.console_url.as_deref(), parts, tls)
}

/// A provider's refusal or failure as the page says it: no detail for an unauthenticated
/// visitor (it is logged).
fn provider_error(e: crate::oidc::OidcError) -> SsoError {
    tracing::warn!(error = %e, "console single sign-on: the provider");
    match e {
        crate::oidc::OidcError::IdpCommunication(_) => SsoError::Provider(UNREACHABLE.into()),
        _ => SsoError::Refused(REFUSED.into()),
    }
}

const UNREACHABLE: &str = "The identity provider could not be reached; try again.";
const REFUSED: &str = "The sign-in was refused (the server's log says why).";

/// Whether `bind` is what the sign-in page's script makes: 32 to 128 hex digits.
fn bind_ok(bind: &str) -> bool {
    (32..=128).contains(&bind.len()) && bind.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Begins a sign-in for the browser's `bind`: where to send the browser, and the pending
/// cookie to set.
pub async fn start(
    st: &AppState,
    parts: &Parts,
    tls: bool,
    bind: &str,
) -> Result<(String, String), SsoError> {
    let s = settings(st).ok_or(SsoError::Off)?;
    if !bind_ok(bind) {
        return Err(SsoError::Stale(
            "Sign in from the console's sign-in page, with JavaScript on.".into(),
        ));
    }
    let issuer = s.console_oidc_issuer.as_deref().unwrap_or_default();
    let ep = st.oidc.endpoints(issuer).await.map_err(provider_error)?;
    let pkce = code_flow::pkce();
    let p = Pending {
        state: code_flow::random_value(),
        nonce: code_flow::random_value(),
        verifier: pkce.verifier,
        bind: bind.to_owned(),
        at: st.store.meta().clock().now().timestamp_millis(),
    };
    let url = code_flow::authorize_url(
        &ep,
        s.console_oidc_client_id.as_deref().unwrap_or_default(),
        &redirect_uri(st, parts)?,
        &s.console_oidc_scopes,
        &p.state,
        &p.nonce,
        &pkce.challenge,
    );
    Ok((url, pending_cookie(st, &p, tls)))
}

/// The claims of a token, unverified: read before STS verifies it (a token whose signature
/// fails is refused there whatever its claims say).
fn unverified_claims(token: &str) -> Option<serde_json::Value> {
    let payload = token.split('.').nth(1)?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&raw).ok()
}

/// Whether the token's `aud` (a string or an array) names `client_id`.
fn audience_includes(claims: &serde_json::Value, client_id: &str) -> bool {
    match claims.get("aud") {
        Some(serde_json::Value::String(a)) => a == client_id,
        Some(serde_json::Value::Array(a)) => a.iter().any(|x| x.as_str() == Some(client_id)),
        _ => false,
    }
}

/// OIDC Core 3.1.3.7, as the console's client: the token is this issuer's, for this client
/// (STS accepts a token for any client id the provider is registered with), and for this
/// sign-in.
fn claims_are_ours(
    claims: &serde_json::Value,
    issuer: &str,
    client_id: &str,
    nonce: &str,
) -> Result<(), &'static str> {
    let got = |n: &str| claims.get(n).and_then(|v| v.as_str()).unwrap_or_default();
    if !crate::crypto::keys::same(got("nonce").as_bytes(), nonce.as_bytes()) {
        return Err("the ID token's nonce is not this sign-in's");
    }
    if got("iss") != issuer {
        return Err("the ID token is not the configured issuer's");
    }
    if !audience_includes(claims, client_id) {
        return Err("the ID token is not for the console's client id");
    }
    if claims.get("azp").is_some() && got("azp") != client_id {
        return Err("the ID token's azp is not the console's client id");
    }
    Ok(())
}

/// A `RoleSessionName` from the person's claims: their email when the provider says it is
/// verified (an unverified one is whatever the person typed), else their subject. A value
/// that does not fit STS's characters and length as it is gets a hash of itself appended,
/// so that two identities cannot map to one name.
fn session_name(claims: &serde_json::Value) -> String {
    let verified = claims.get("email_verified").and_then(|v| v.as_bool()) == Some(true);
    let email = claims
        .get("email")
        .and_then(|v| v.as_str())
        .filter(|e| verified && !e.is_empty());
    let pick = email
        .or_else(|| claims.get("sub").and_then(|v| v.as_str()))
        .filter(|v| !v.is_empty())
        .unwrap_or("console");
    let fits = |c: char| c.is_ascii_alphanumeric() || "_+=,.@-".contains(c);
    if (2..=64).contains(&pick.len()) && pick.chars().all(fits) {
        return pick.to_owned();
    }
    use sha2::Digest;
    let hash = hex::encode(sha2::Sha256::digest(pick.as_bytes()));
    let head: String = pick
        .chars()
        .map(|c| if fits(c) { c } else { '-' })
        .take(50)
        .collect();
    format!("{head}-{}", &hash[..12])
}

/// A callback post whose pending cookie, `state` and `bind` are this browser tab's: only such
/// a post may take a sign-in attempt of the client's address (a post any other site can make
/// must not use up the attempts of its visitors' address).
pub struct Checked(Pending);

/// Checks a callback post against this browser's pending sign-in (no database, no provider).
pub fn check(
    st: &AppState,
    parts: &Parts,
    form: &[(String, String)],
    tls: bool,
) -> Result<Checked, SsoError> {
    settings(st).ok_or(SsoError::Off)?;
    let q = |n: &str| form.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let again = |m: &str| SsoError::Stale(format!("{m}: sign in again."));
    let pending = read_pending(st, parts, tls)
        .ok_or_else(|| again("This sign-in was not begun in this browser, or has expired"))?;
    let state = q("state").unwrap_or_default();
    if !crate::crypto::keys::same(state.as_bytes(), pending.state.as_bytes()) {
        return Err(again("The sign-in's state is not this browser's"));
    }
    let bind = q("bind").unwrap_or_default();
    if !crate::crypto::keys::same(bind.as_bytes(), pending.bind.as_bytes()) {
        return Err(again("This sign-in was not begun in this browser tab"));
    }
    Ok(Checked(pending))
}

/// Finishes a checked sign-in: the console session, made with the credentials of the first
/// configured role that admits the identity.
pub async fn finish(
    st: &AppState,
    parts: &Parts,
    form: &[(String, String)],
    checked: Checked,
) -> Result<ConsoleSession, SsoError> {
    let s = settings(st).ok_or(SsoError::Off)?;
    let pending = checked.0;
    let q = |n: &str| form.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let again = |m: &str| SsoError::Stale(format!("{m}: sign in again."));
    let meta = st.store.meta();
    let now = meta.clock().now().timestamp_millis();
    if now > pending.at + PENDING_MS || now < pending.at - 60_000 {
        return Err(again("The sign-in took too long"));
    }
    if let Some(e) = q("error") {
        let e: String = e
            .chars()
            .filter(|c| c.is_ascii_graphic())
            .take(64)
            .collect();
        return Err(SsoError::Refused(format!(
            "The identity provider refused: {e}"
        )));
    }
    let code = q("code").ok_or_else(|| again("The callback has no code"))?;
    // Spent once, on any instance: a replayed callback is refused before the provider is
    // asked again.
    let spent = crate::storage::meta::token_sha256(&pending.state);
    let until = DateTime::from_millis(pending.at + PENDING_MS);
    if !meta
        .sso_state_spend(&spent, until)
        .await
        .map_err(|e| SsoError::Internal(e.to_string()))?
    {
        return Err(again("This sign-in was used already"));
    }
    let issuer = s.console_oidc_issuer.as_deref().unwrap_or_default();
    let ep = st.oidc.endpoints(issuer).await.map_err(provider_error)?;
    let secret = s.console_oidc_client_secret.as_ref().map(|x| x.to_string());
    let client = code_flow::Client {
        id: s.console_oidc_client_id.as_deref().unwrap_or_default(),
        secret: secret.as_deref(),
    };
    let token = st
        .oidc
        .redeem(
            &ep,
            &client,
            code,
            &redirect_uri(st, parts)?,
            &pending.verifier,
        )
        .await
        .map_err(provider_error)?;
    let claims = unverified_claims(&token).ok_or_else(|| SsoError::Provider(UNREACHABLE.into()))?;
    let normalized = crate::oidc::check_url(st.oidc.policy(), issuer)
        .map(|n| n.issuer)
        .unwrap_or_default();
    if let Err(why) = claims_are_ours(&claims, &normalized, client.id, &pending.nonce) {
        tracing::warn!(why, "console single sign-on refused");
        return Err(SsoError::Refused(REFUSED.into()));
    }
    let name = session_name(&claims);
    let mut unreachable = false;
    for arn in s.roles() {
        match super::sso_assume::assume(st, &arn, &name, &token).await {
            Ok(Some(c)) => {
                tracing::info!(role = %arn, session = %c.arn, "console single sign-on");
                let ends = c.expiration;
                let sso = SsoSession {
                    token: c.token,
                    arn: c.arn,
                    expires: ends,
                };
                return super::session::begin(st, &c.access_key, Some(sso), Some(ends))
                    .await
                    .map_err(|e| SsoError::Internal(e.to_string()));
            }
            Ok(None) => {}
            // Logged by `sso_assume`; the next role may still admit the identity (a role in
            // another account, or one that is misnamed, must not lock everyone out).
            Err(e) if e.code == "ServiceFailure" || e.code == "InternalFailure" => {
                return Err(SsoError::Internal(e.message))
            }
            Err(e) => unreachable |= e.code == "IDPCommunicationError",
        }
    }
    if unreachable {
        return Err(SsoError::Provider(UNREACHABLE.into()));
    }
    tracing::info!(
        sub = claims
            .get("sub")
            .and_then(|v| v.as_str())
            .unwrap_or_default(),
        "console single sign-on: no configured role admits this identity"
    );
    Err(SsoError::Refused(
        "You signed in at the identity provider, but no role of this console trusts that identity."
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_fit_sts_and_do_not_collide() {
        let verified =
            serde_json::json!({"email": "ann@example.com", "email_verified": true, "sub": "s1"});
        assert_eq!(session_name(&verified), "ann@example.com");
        // An email the provider has not verified is whatever the person typed.
        let typed = serde_json::json!({"email": "boss@example.com", "sub": "s1"});
        assert_eq!(session_name(&typed), "s1");
        let a = session_name(&serde_json::json!({"sub": "a b"}));
        let b = session_name(&serde_json::json!({"sub": "a-b"}));
        assert_eq!(b, "a-b");
        assert!(a.starts_with("a-b-") && a != b, "{a}");
        let long = session_name(&serde_json::json!({"sub": "é".repeat(100)}));
        assert!(long.len() <= 64, "{long}");
        assert_ne!(session_name(&serde_json::json!({"sub": "x"})), "x");
        assert_eq!(session_name(&serde_json::json!({})), "console");
    }

    #[test]
    fn the_token_must_be_this_sign_ins() {
        let ok =
            serde_json::json!({"iss": "https://i", "aud": ["c", "d"], "azp": "c", "nonce": "n"});
        assert!(claims_are_ours(&ok, "https://i", "c", "n").is_ok());
        assert!(claims_are_ours(&ok, "https://i", "c", "m").is_err());
        assert!(claims_are_ours(&ok, "https://j", "c", "n").is_err());
        assert!(
            claims_are_ours(&ok, "https://i", "d", "n").is_err(),
            "azp names another"
        );
        let other = serde_json::json!({"iss": "https://i", "aud": "x", "nonce": "n"});
        assert!(claims_are_ours(&other, "https://i", "c", "n").is_err());
    }

    #[test]
    fn the_callback_is_on_the_host_asked_even_over_http2() {
        let parts = |req: axum::http::Request<()>| req.into_parts().0;
        // HTTP/2 carries the host as `:authority` (the URI's), not as a Host header.
        let h2 = parts(
            axum::http::Request::get("https://console.example:9001/login/sso")
                .body(())
                .unwrap(),
        );
        assert_eq!(
            callback_url(None, &h2, true).unwrap(),
            "https://console.example:9001/login/sso/callback"
        );
        let h1 = parts(
            axum::http::Request::get("/login/sso")
                .header("host", "127.0.0.1:9001")
                .body(())
                .unwrap(),
        );
        assert_eq!(
            callback_url(None, &h1, false).unwrap(),
            "http://127.0.0.1:9001/login/sso/callback"
        );
        assert_eq!(
            callback_url(Some("https://c.example/"), &h1, false).unwrap(),
            "https://c.example/login/sso/callback"
        );
        let bad = parts(
            axum::http::Request::get("/x")
                .header("host", "a b")
                .body(())
                .unwrap(),
        );
        assert!(callback_url(None, &bad, false).is_err());
    }

    #[test]
    fn claims_are_read_from_the_payload() {
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let t = format!("{}.{}.sig", enc("{}"), enc(r#"{"nonce":"n1"}"#));
        assert_eq!(unverified_claims(&t).unwrap()["nonce"], "n1");
        assert!(unverified_claims("nope").is_none());
    }

    #[test]
    fn the_audience_must_name_the_console() {
        assert!(audience_includes(&serde_json::json!({"aud": "c"}), "c"));
        assert!(audience_includes(
            &serde_json::json!({"aud": ["x", "c"]}),
            "c"
        ));
        assert!(!audience_includes(&serde_json::json!({"aud": ["x"]}), "c"));
        assert!(!audience_includes(&serde_json::json!({}), "c"));
    }
}
