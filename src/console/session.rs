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

/// The cookie's name.
pub const COOKIE: &str = "grids3_console";

/// Failed logins allowed per client address, and per key, within [`THROTTLE_WINDOW_MS`].
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

/// The key cookies are signed with: derived from the root secret, which every instance has,
/// so any instance checks any instance's cookie.
fn cookie_key(st: &AppState) -> Vec<u8> {
    let root = st
        .config
        .root_secret_key
        .as_ref()
        .map(|s| s.to_string())
        .unwrap_or_default();
    let mut m = Hmac::<Sha256>::new_from_slice(root.as_bytes()).expect("any key length");
    m.update(b"grids3 console session cookie v1");
    m.finalize().into_bytes().to_vec()
}

fn signature(st: &AppState, id: &str) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(&cookie_key(st)).expect("any key length");
    m.update(id.as_bytes());
    hex::encode(m.finalize().into_bytes())
}

fn random_hex() -> String {
    let mut b = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// The `Set-Cookie` value naming session `id` (`None`: the one that clears it).
pub fn set_cookie(st: &AppState, id: Option<&str>, tls: bool) -> String {
    let secure = if tls { "; Secure" } else { "" };
    match id {
        Some(id) => format!(
            "{COOKIE}={id}.{}; Path=/; HttpOnly; SameSite=Strict{secure}",
            signature(st, id)
        ),
        None => format!("{COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0{secure}"),
    }
}

/// The session id a request's cookie names, if its signature holds.
fn cookie_session(st: &AppState, headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(&format!("{COOKIE}=")))
        .find_map(|v| {
            let (id, sig) = v.split_once('.')?;
            crate::crypto::keys::same(sig.as_bytes(), signature(st, id).as_bytes())
                .then(|| id.to_owned())
        })
}

fn expired(st: &AppState, s: &ConsoleSession, now: DateTime) -> bool {
    let idle = st.config.console_idle_minutes.max(1) as i64 * 60_000;
    let absolute = st.config.console_session_hours.max(1) as i64 * 3_600_000;
    now.timestamp_millis() > s.seen.timestamp_millis() + idle
        || now.timestamp_millis() > s.created.timestamp_millis() + absolute
}

/// The session of a request, if it has a live one (`None`: sign in again).
pub async fn current(st: &AppState, parts: &Parts) -> S3Result<Option<Signed>> {
    let Some(id) = cookie_session(st, &parts.headers) else {
        return Ok(None);
    };
    let meta = st.store.meta();
    let Some(s) = meta.session(&id).await? else {
        return Ok(None);
    };
    let now = meta.clock().now();
    if expired(st, &s, now) {
        meta.session_end(&id).await?;
        return Ok(None);
    }
    // A deleted key's sessions end with it (within the credentials cache's 10 s).
    let Some(secret) = st.creds.secret_of(&s.access_key).await? else {
        meta.session_end(&id).await?;
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

/// Checks a login and begins its session.
pub async fn login(
    st: &AppState,
    client: &str,
    access_key: &str,
    secret: &str,
) -> S3Result<Result<ConsoleSession, Refused>> {
    let meta = st.store.meta();
    let now = meta.clock().now();
    let since = DateTime::from_millis(now.timestamp_millis() - THROTTLE_WINDOW_MS);
    let by_client = format!("ip:{client}");
    let by_key = format!("key:{access_key}");
    if meta.login_failures(&by_client, since).await? >= MAX_FAILURES
        || meta.login_failures(&by_key, since).await? >= MAX_FAILURES
    {
        return Ok(Err(Refused::Throttled));
    }
    let known = if access_key.is_empty() || access_key.len() > 128 {
        None
    } else {
        st.creds.secret_of(access_key).await?
    };
    let matches = known
        .as_ref()
        .is_some_and(|k| crate::crypto::keys::same(k.secret.as_bytes(), secret.as_bytes()));
    if !matches {
        meta.login_failed(&by_client, since).await?;
        if known.is_some() {
            meta.login_failed(&by_key, since).await?;
        }
        return Ok(Err(Refused::Wrong));
    }
    let session = ConsoleSession {
        id: random_hex(),
        access_key: access_key.to_owned(),
        csrf: random_hex(),
        created: now,
        seen: now,
    };
    let absolute = st.config.console_session_hours.max(1) as i64 * 3_600_000;
    meta.session_create(
        &session,
        DateTime::from_millis(now.timestamp_millis() + absolute),
    )
    .await?;
    Ok(Ok(session))
}

/// Ends a session (logout).
pub async fn logout(st: &AppState, s: &ConsoleSession) -> S3Result<()> {
    st.store.meta().session_end(&s.id).await?;
    Ok(())
}

/// Refuses a state-changing request that does not come from the console's own pages: a
/// CSRF token that is not the session's, or an Origin (when the browser sends one) that is
/// not the console's.
pub fn check_csrf(parts: &Parts, session: Option<&ConsoleSession>, token: &str) -> S3Result<()> {
    same_origin(parts)?;
    if let Some(s) = session {
        if !crate::crypto::keys::same(token.as_bytes(), s.csrf.as_bytes()) {
            return Err(S3Error::access_denied()
                .with_message("The form's CSRF token is not this session's: reload the page"));
        }
    }
    Ok(())
}

/// An Origin header, when sent, must name this console (scheme and host of the request).
pub fn same_origin(parts: &Parts) -> S3Result<()> {
    let Some(origin) = parts.headers.get(header::ORIGIN) else {
        return Ok(());
    };
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
