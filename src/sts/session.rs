//! GetSessionToken and GetCallerIdentity (issue 61).
//!
//! GetSessionToken gives the caller its own rights for a while: an IAM user's session acts as
//! the user, an account's root credentials' session as the account. A caller with session
//! policies (a MinIO service account) passes them on, so a session never has more than the
//! key that made it. Temporary credentials cannot make another session token (AWS refuses it
//! too). As on AWS no policy is needed to call either action.

use super::assume::{duration, refuse_unsupported};
use super::xml::{self, CredentialsView};
use crate::auth::Auth;
use crate::iam::context::Caller;
use crate::iam::error::{IamError, IamResult};
use crate::iam::query::Params;
use crate::state::AppState;
use crate::storage::meta::{NewSession, SessionKind};

/// Longest GetSessionToken session (AWS: 36 hours; 1 hour for root credentials).
const MAX_SESSION: i64 = 129_600;
/// Longest session for an account's root credentials.
const ROOT_MAX_SESSION: i64 = 3600;
/// Default session (AWS: 12 hours).
const DEFAULT_SESSION: i64 = 43_200;

/// Handles GetSessionToken.
pub async fn get_session_token(
    st: &AppState,
    auth: &Auth,
    caller: &Caller,
    p: &Params,
    rid: &str,
) -> IamResult<String> {
    refuse_unsupported(p, &["DurationSeconds"])?;
    if auth.token.is_some() {
        return Err(IamError::access_denied(
            "Cannot call GetSessionToken with session credentials",
        ));
    }
    let user = caller.user.as_ref().and_then(|u| u.user().cloned());
    let max = if user.is_some() {
        MAX_SESSION
    } else {
        ROOT_MAX_SESSION
    };
    let dur = duration(
        p,
        DEFAULT_SESSION,
        max,
        "The requested DurationSeconds exceeds the allowed maximum of {max} seconds for these credentials.",
    )?;
    // The session follows the key that made it (`parent`): it signs only while that key
    // does, with that key's session policies as they are at each use, and never past its
    // expiration.
    let stored = st
        .creds
        .secret_of(&auth.access_key)
        .await?
        .ok_or_else(IamError::invalid_client_token_id)?;
    let now = st.store.meta().clock().now().timestamp_millis() / 1000;
    let dur = match stored.expires {
        Some(e) => dur.min(e.timestamp_millis() / 1000 - now).max(1),
        None => dur,
    };
    let minted = st
        .store
        .meta()
        .insert_session(NewSession {
            kind: SessionKind::SessionToken,
            account_key: &caller.account.key,
            role: None,
            user: user.as_ref().map(|u| u.id.as_str()),
            parent: Some(&auth.access_key),
            policies: Vec::new(),
            duration: std::time::Duration::from_secs(dur as u64),
        })
        .await
        .map_err(crate::iam::context::db)?;
    Ok(xml::get_session_token(
        &CredentialsView {
            access_key: &minted.access_key,
            secret: &minted.secret,
            token: &minted.token,
            expiration: minted.expiration.to_chrono(),
        },
        rid,
    ))
}

/// Handles GetCallerIdentity: the caller's ARN (a user's, a role session's
/// `assumed-role` ARN, or the account's `root`), its unique id and its account.
pub fn get_caller_identity(caller: &Caller, rid: &str) -> String {
    let (arn, id) = match &caller.user {
        Some(u) => (u.arn(), u.user_id()),
        // AWS answers the account's root credentials with the account's id as `UserId`.
        None => (caller.account.arn("root"), caller.account.id.clone()),
    };
    xml::get_caller_identity(&arn, &id, &caller.account.id, rid)
}
