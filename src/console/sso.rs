//! Single sign-on to the console (issue 61): "Sign in with <provider>" by OpenID Connect's
//! authorization code flow with PKCE, `state` and `nonce`.
//!
//! 1. [`start`]: a new `state`, `nonce` and PKCE verifier go into a short-lived cookie of
//!    their own, signed (HMAC under the root secret, so any instance can finish what another
//!    began), `SameSite=Lax` because the provider's redirect back is a cross-site navigation;
//!    the browser is sent to the provider's authorization endpoint.
//! 2. [`finish`]: the callback's `state` must be the cookie's (a callback this browser did
//!    not begin is refused: login CSRF), within 10 minutes by the database's clock; the code
//!    is redeemed with the verifier; the ID token's `nonce` must be the cookie's; then the
//!    token is exchanged for a role's temporary credentials by STS's own
//!    AssumeRoleWithWebIdentity, trying the configured roles in order: the provider
//!    registered in the role's account verifies the token, and the role's trust policy
//!    decides, exactly as for a CI job with the same token. The console session holds those
//!    credentials, so it sees exactly what the role may do, and ends when they expire, when
//!    the role is deleted, or at logout (which also ends the credentials).

use axum::http::header;
use axum::http::request::Parts;
use base64::Engine;
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
        "{}={body}.{mac}; Path=/; HttpOnly; SameSite=Lax; Max-Age=600{secure}",
        cookie_name(tls)
    )
}

/// The `Set-Cookie` that clears the pending cookie.
pub fn clear_cookie(tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    format!(
        "{}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0{secure}",
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
/// scheme and Host of the request (a forged Host only makes a URL the provider refuses, as
/// it is not registered).
fn redirect_uri(st: &AppState, parts: &Parts, tls: bool) -> Result<String, SsoError> {
    if let Some(u) = st.config.console_url.as_deref() {
        return Ok(format!("{}{CALLBACK}", u.trim_end_matches('/')));
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| {
            !h.is_empty()
                && h.bytes()
                    .all(|c| c.is_ascii_alphanumeric() || b".-[]:".contains(&c))
        })
        .ok_or_else(|| SsoError::Stale("The request has no usable Host header.".into()))?;
    let scheme = if tls { "https" } else { "http" };
    Ok(format!("{scheme}://{host}{CALLBACK}"))
}

fn provider_error(e: crate::oidc::OidcError) -> SsoError {
    tracing::warn!(error = %e, "console single sign-on: the provider");
    match e {
        crate::oidc::OidcError::IdpCommunication(_) => {
            SsoError::Provider("The identity provider could not be reached; try again.".into())
        }
        other => SsoError::Refused(format!("The identity provider refused: {other}")),
    }
}

/// STS's refusal (other than a role that does not admit the identity) as the page says it.
fn sts_refusal(e: crate::iam::IamError) -> SsoError {
    match e.code {
        "IDPCommunicationError" => {
            SsoError::Provider("The identity provider could not be reached; try again.".into())
        }
        "ServiceFailure" | "InternalFailure" => SsoError::Internal(e.message),
        code => SsoError::Refused(format!("{code}: {}", e.message)),
    }
}

/// Begins a sign-in: where to send the browser, and the pending cookie to set.
pub async fn start(st: &AppState, parts: &Parts, tls: bool) -> Result<(String, String), SsoError> {
    let s = settings(st).ok_or(SsoError::Off)?;
    let issuer = s.console_oidc_issuer.as_deref().unwrap_or_default();
    let ep = st.oidc.endpoints(issuer).await.map_err(provider_error)?;
    let pkce = code_flow::pkce();
    let p = Pending {
        state: code_flow::random_value(),
        nonce: code_flow::random_value(),
        verifier: pkce.verifier,
        at: st.store.meta().clock().now().timestamp_millis(),
    };
    let url = code_flow::authorize_url(
        &ep,
        s.console_oidc_client_id.as_deref().unwrap_or_default(),
        &redirect_uri(st, parts, tls)?,
        &s.console_oidc_scopes,
        &p.state,
        &p.nonce,
        &pkce.challenge,
    );
    Ok((url, pending_cookie(st, &p, tls)))
}

/// The claims of a token, unverified: only its `nonce` is read before STS verifies it (a
/// token whose signature fails is refused there whatever its nonce).
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

/// A `RoleSessionName` from the person's claims: their email, else user name, else subject,
/// cut to STS's characters and length.
fn session_name(claims: &serde_json::Value) -> String {
    let pick = ["email", "preferred_username", "sub"]
        .iter()
        .find_map(|c| {
            claims
                .get(c)
                .and_then(|v| v.as_str())
                .filter(|v| !v.is_empty())
        })
        .unwrap_or("console");
    let mut name: String = pick
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_+=,.@-".contains(c) {
                c
            } else {
                '-'
            }
        })
        .take(64)
        .collect();
    while name.len() < 2 {
        name.push('-');
    }
    name
}

/// Finishes a sign-in at the callback: the console session, made with the credentials of
/// the first configured role that admits the identity.
pub async fn finish(
    st: &AppState,
    parts: &Parts,
    query: &[(String, String)],
    tls: bool,
) -> Result<ConsoleSession, SsoError> {
    let s = settings(st).ok_or(SsoError::Off)?;
    let q = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let pending = read_pending(st, parts, tls).ok_or_else(|| {
        SsoError::Stale(
            "This sign-in was not begun in this browser, or has expired: sign in again.".into(),
        )
    })?;
    let state = q("state").unwrap_or_default();
    if !crate::crypto::keys::same(state.as_bytes(), pending.state.as_bytes()) {
        return Err(SsoError::Stale(
            "The sign-in's state is not this browser's: sign in again.".into(),
        ));
    }
    let now = st.store.meta().clock().now().timestamp_millis();
    if now > pending.at + PENDING_MS || now < pending.at - 60_000 {
        return Err(SsoError::Stale(
            "The sign-in took too long: sign in again.".into(),
        ));
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
    let code = q("code").ok_or_else(|| SsoError::Stale("The callback has no code.".into()))?;
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
            &redirect_uri(st, parts, tls)?,
            &pending.verifier,
        )
        .await
        .map_err(provider_error)?;
    let claims = unverified_claims(&token).ok_or_else(|| {
        SsoError::Provider("The identity provider's ID token is not a JWT.".into())
    })?;
    let nonce = claims
        .get("nonce")
        .and_then(|n| n.as_str())
        .unwrap_or_default();
    if !crate::crypto::keys::same(nonce.as_bytes(), pending.nonce.as_bytes()) {
        return Err(SsoError::Refused(
            "The ID token's nonce is not this sign-in's.".into(),
        ));
    }
    // STS accepts a token for any client id the provider is registered with; the console
    // takes only one issued to itself (OIDC Core 3.1.3.7: `aud` contains the client id).
    if !audience_includes(&claims, client.id) {
        return Err(SsoError::Refused(
            "The ID token is not for this console's client id.".into(),
        ));
    }
    let name = session_name(&claims);
    for arn in s.roles() {
        match super::sso_assume::assume(st, &arn, &name, &token)
            .await
            .map_err(sts_refusal)?
        {
            Some(c) => {
                let ends = c.expiration;
                let sso = SsoSession {
                    token: c.token,
                    arn: c.arn,
                };
                return super::session::begin(st, &c.access_key, Some(sso), Some(ends))
                    .await
                    .map_err(|e| SsoError::Internal(e.to_string()));
            }
            None => continue,
        }
    }
    Err(SsoError::Refused(
        "You signed in at the identity provider, but no role of this console trusts that identity."
            .into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_names_fit_sts() {
        let n = session_name(&serde_json::json!({"email": "ann lee@example.com"}));
        assert_eq!(n, "ann-lee@example.com");
        let n = session_name(&serde_json::json!({"sub": "x"}));
        assert_eq!(n, "x-");
        let n = session_name(&serde_json::json!({"sub": "é".repeat(100)}));
        assert_eq!(n.len(), 64);
        assert_eq!(session_name(&serde_json::json!({})), "console");
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
