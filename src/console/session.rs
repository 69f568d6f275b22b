//! Console sessions: a login with any access key and its secret makes a session kept in the
//! database (`storage::meta::ConsoleSession`), named by a signed cookie (HttpOnly,
//! SameSite=Strict, Secure under TLS). It ends after `--console-idle-minutes` without a
//! request, `--console-session-hours` after login, at logout (on every instance at once), and
//! as soon as its key is deleted. Every state-changing request carries the session's CSRF
//! token and, when the browser sends one, an Origin of the console itself. Failed logins are
//! throttled per client address and per key, in the database.

use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use hmac::{Hmac, Mac};
use mongodb::bson::DateTime;
use rand::RngCore;
use sha2::Sha256;

use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::ConsoleSession;

/// The cookie's name over plain HTTP.
pub const COOKIE: &str = "grids3_console";

/// The cookie's name under TLS: the `__Host-` prefix makes browsers refuse one set by
/// another host or for a wider path (a page on the S3 or website endpoint of the same site).
pub const COOKIE_TLS: &str = "__Host-grids3_console";

/// Whether cookies are set for a secure origin (`Secure`, the `__Host-` names): grids3 serves
/// TLS, or the console's URL is `https://` (TLS ends at a proxy in front).
pub fn secure(st: &AppState, parts: &Parts) -> bool {
    crate::tls::Transport::of(&parts.extensions).tls
        || st
            .config
            .console_url
            .as_deref()
            .is_some_and(|u| u.to_ascii_lowercase().starts_with("https://"))
}

fn cookie_name(tls: bool) -> &'static str {
    if tls {
        COOKIE_TLS
    } else {
        COOKIE
    }
}

/// Failed logins allowed per client address within [`THROTTLE_WINDOW_MS`].
pub const MAX_FAILURES: i64 = 10;

/// The window of the login throttle.
pub const THROTTLE_WINDOW_MS: i64 = 5 * 60 * 1000;

/// A session's identity is recorded at most this often (its idle expiry moves with it).
const SEEN_EVERY_MS: i64 = 30 * 1000;

/// A signed-in request's session.
#[derive(Clone, Debug)]
pub struct Signed {
    /// The session.
    pub session: ConsoleSession,
    /// Whether its key is the root key (key administration is shown only to it).
    pub root: bool,
}

/// The key cookies of `purpose` are signed with: derived from the root secret, which every
/// instance has, so any instance checks any instance's cookie.
fn cookie_key(st: &AppState, purpose: &[u8]) -> Vec<u8> {
    let root = st
        .config
        .root_secret_key
        .as_ref()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let mut m = Hmac::<Sha256>::new_from_slice(root.as_bytes()).expect("any key length");
    m.update(purpose);
    m.finalize().into_bytes().to_vec()
}

/// The MAC (hex) of `data` under the cookie key of `purpose`.
pub(super) fn mac(st: &AppState, purpose: &[u8], data: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(&cookie_key(st, purpose)).expect("any key length");
    m.update(data.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

fn signature(st: &AppState, id: &str) -> String {
    mac(st, b"grids3 console session cookie v1", id)
}

fn random_hex() -> String {
    let mut b = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// The `Set-Cookie` value naming session `id` (`None`: the one that clears it).
pub fn set_cookie(st: &AppState, id: Option<&str>, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    let name = cookie_name(tls);
    match id {
        Some(id) => format!(
            "{name}={id}.{}; Path=/; HttpOnly; SameSite=Strict{secure}",
            signature(st, id)
        ),
        None => format!("{name}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    }
}

/// The value of the one cookie `name` a request carries (`None` when it carries none, or
/// more than one: another page of the same site may have planted one beside the user's).
pub(super) fn only_cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let prefix = format!("{name}=");
    let values: Vec<&str> = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(prefix.as_str()))
        .collect();
    match values.as_slice() {
        [v] => Some(v),
        _ => None,
    }
}

/// The session id a request's cookie names, if its signature holds. A request carrying more
/// than one console cookie has none: another page of the same site may have planted one (its
/// own valid session) beside the user's.
fn cookie_session(st: &AppState, headers: &HeaderMap, tls: bool) -> Option<String> {
    let v = only_cookie(headers, cookie_name(tls))?;
    let (id, sig) = v.split_once('.')?;
    crate::crypto::keys::same(sig.as_bytes(), signature(st, id).as_bytes()).then(|| id.to_owned())
}

fn expired(st: &AppState, s: &ConsoleSession, now: DateTime) -> bool {
    let idle = st.config.console_idle_minutes.max(1) as i64 * 60_000;
    let absolute = st.config.console_session_hours.max(1) as i64 * 3_600_000;
    now.timestamp_millis() > s.seen.timestamp_millis() + idle
        || now.timestamp_millis() > s.created.timestamp_millis() + absolute
}

/// The session of a request, if it has a live one (`None`: sign in again).
pub async fn current(st: &AppState, parts: &Parts) -> S3Result<Option<Signed>> {
    let tls = secure(st, parts);
    let Some(id) = cookie_session(st, &parts.headers, tls) else {
        return Ok(None);
    };
    let meta = st.store.meta();
    let Some(s) = meta.session(&id).await? else {
        return Ok(None);
    };
    let now = meta.clock().now();
    if expired(st, &s, now) {
        if meta.session_end_if(&id, s.seen).await? {
            end_credentials(st, &s).await?;
        }
        return Ok(None);
    }
    // A deleted key's sessions end with it (within the credentials cache's 10 s).
    let Some(secret) = st.creds.secret_of(&s.access_key).await? else {
        meta.session_end_if(&id, s.seen).await?;
        return Ok(None);
    };
    if now.timestamp_millis() - s.seen.timestamp_millis() > SEEN_EVERY_MS {
        meta.session_seen(&id, s.seen, now).await?;
    }
    Ok(Some(Signed {
        session: s,
        root: secret.root,
    }))
}

/// Why a login was refused.
#[derive(Debug)]
pub enum Refused {
    /// The key and secret do not match (the same answer for an unknown key).
    Wrong,
    /// Too many failures lately, from this address or for this key.
    Throttled,
}

/// Checks a login and begins its session. Failures are throttled per client address only: a
/// per-key limit would let anyone who has seen an access key id (every share link carries
/// one) lock its owner out, and would tell which keys exist; the secrets themselves (40
/// random characters) are beyond guessing at any rate a throttled address allows.
pub async fn login(
    st: &AppState,
    client: &str,
    access_key: &str,
    secret: &str,
) -> S3Result<Result<ConsoleSession, Refused>> {
    if !throttle_take(st, "ip", client).await? {
        return Ok(Err(Refused::Throttled));
    }
    let known = if access_key.is_empty() || access_key.len() > 128 {
        None
    } else {
        // Temporary credentials do not sign in with their key and secret alone (their token
        // is what they are): single sign-on makes their console sessions.
        st.creds
            .secret_of(access_key)
            .await?
            .filter(|k| k.token.is_none())
    };
    let matches = known
        .as_ref()
        .is_some_and(|k| crate::crypto::keys::same(k.secret.as_bytes(), secret.as_bytes()));
    if !matches {
        return Ok(Err(Refused::Wrong));
    }
    throttle_release(st, "ip", client).await?;
    Ok(Ok(begin(st, access_key, None, None).await?))
}

/// Takes one of the client address's sign-in attempts of `kind` (`ip`: key logins, `sso`:
/// single sign-on callbacks, counted apart): `false` when it has used them all lately.
pub async fn throttle_take(st: &AppState, kind: &str, client: &str) -> S3Result<bool> {
    let meta = st.store.meta();
    let since = DateTime::from_millis(meta.clock().now().timestamp_millis() - THROTTLE_WINDOW_MS);
    Ok(meta
        .login_reserve(&format!("{kind}:{client}"), since, MAX_FAILURES)
        .await?)
}

/// Gives back an attempt [`throttle_take`] took (the sign-in succeeded).
pub async fn throttle_release(st: &AppState, kind: &str, client: &str) -> S3Result<()> {
    Ok(st
        .store
        .meta()
        .login_release(&format!("{kind}:{client}"))
        .await?)
}

/// Begins a session of `access_key` (with `sso`, a single sign-on's temporary credentials,
/// which also end it at `ends`).
pub(super) async fn begin(
    st: &AppState,
    access_key: &str,
    sso: Option<crate::storage::meta::SsoSession>,
    ends: Option<DateTime>,
) -> S3Result<ConsoleSession> {
    let meta = st.store.meta();
    let now = meta.clock().now();
    let session = ConsoleSession {
        id: random_hex(),
        access_key: access_key.to_owned(),
        csrf: random_hex(),
        created: now,
        seen: now,
        sso,
    };
    let absolute = st.config.console_session_hours.max(1) as i64 * 3_600_000;
    let mut expires = DateTime::from_millis(now.timestamp_millis() + absolute);
    if let Some(e) = ends {
        expires = expires.min(e);
    }
    meta.session_create(&session, expires).await?;
    Ok(session)
}

/// Ends a session (logout). A single sign-on session's temporary credentials end with it:
/// nothing but the session knew them, and the links it presigned must not outlive it.
pub async fn logout(st: &AppState, s: &ConsoleSession) -> S3Result<()> {
    st.store.meta().session_end(&s.id).await?;
    end_credentials(st, s).await
}

/// Ends a single sign-on session's temporary credentials (nothing else knew them).
async fn end_credentials(st: &AppState, s: &ConsoleSession) -> S3Result<()> {
    if let Some(sso) = &s.sso {
        st.store
            .meta()
            .end_session_key(&s.access_key, &sso.token)
            .await?;
        st.creds.forget(&s.access_key);
    }
    Ok(())
}

/// Ends the session a request still carries, if any: a new sign-in in the same browser
/// replaces it, and its credentials must not live on unseen.
pub async fn end_previous(st: &AppState, parts: &Parts) -> S3Result<()> {
    if let Some(old) = current(st, parts).await? {
        logout(st, &old.session).await?;
    }
    Ok(())
}

/// Refuses a state-changing request that does not come from the console's own pages: a
/// CSRF token that is not the session's, or an Origin (when the browser sends one) that is
/// not the console's.
pub fn check_csrf(
    st: &AppState,
    parts: &Parts,
    session: Option<&ConsoleSession>,
    token: &str,
) -> S3Result<()> {
    same_origin(st, parts)?;
    if let Some(s) = session {
        if !crate::crypto::keys::same(token.as_bytes(), s.csrf.as_bytes()) {
            return Err(S3Error::access_denied()
                .with_message("The form's CSRF token is not this session's: reload the page"));
        }
    }
    Ok(())
}

/// An Origin header, when sent, must name this console: `--console-url` when set (behind a
/// proxy, or to refuse a rebound DNS name), else the scheme and Host of the request.
pub fn same_origin(st: &AppState, parts: &Parts) -> S3Result<()> {
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return Ok(());
    };
    if let Some(url) = st.config.console_url.as_deref() {
        return if origin.to_str().ok() == Some(url.trim_end_matches('/')) {
            Ok(())
        } else {
            Err(S3Error::access_denied()
                .with_message("Cross-origin requests are refused by the console"))
        };
    }
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .unwrap_or_default();
    let tls = crate::tls::Transport::of(&parts.extensions).tls;
    let own = format!("{}://{host}", if tls { "https" } else { "http" });
    if origin.to_str().ok() == Some(own.as_str()) {
        Ok(())
    } else {
        Err(S3Error::access_denied()
            .with_message("Cross-origin requests are refused by the console"))
    }
}
