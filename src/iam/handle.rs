//! The IAM Query API's entry: the request's body read (bounded) and signed for the `iam`
//! service, the caller resolved to an account (and an IAM user), the `Action` dispatched to
//! the family that handles it. Each action is authorized first by the same policy engine as
//! S3 requests (`auth::policy`): an account's root credentials may do everything in their
//! own account; an IAM user what its identity policies allow; nobody anything in another
//! account.

use axum::body::Body;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

pub use super::context::{caller_of, Caller, Cx};
use super::error::{IamError, IamResult};
use super::query::Params;
use crate::state::AppState;

/// Largest request body the IAM API reads (a policy document is at most 131,072 characters,
/// URL-encoded up to three times that, with room for the rest of the form).
const MAX_BODY: usize = 512 * 1024;

/// Answers an IAM Query API request.
pub async fn handle(st: &AppState, parts: Parts, body: Body) -> Response {
    let started = std::time::Instant::now();
    let rid = super::error::new_request_id();
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let key = crate::auth::signing_key_id(&parts.headers, &query).unwrap_or_default();
    let mut action = String::new();
    let (resp, code) = match run(st, parts, body, &rid, &mut action).await {
        Ok(xml) => (super::xml::response(xml, &rid), ""),
        Err(e) => {
            let code = e.code;
            (e.with_request_id(&rid).into_response(), code)
        }
    };
    // Every IAM call, refusals included, is logged and counted like an S3 request.
    // (The label is one of the actions grids3 knows: a client's made-up Action names must not
    // grow the metrics without bound.)
    let named = format!("iam:{action}");
    let op = if super::actions::KNOWN.contains(&named.as_str()) {
        named
    } else {
        "iam:other".to_owned()
    };
    let status = resp.status().as_u16();
    crate::metrics::request(&op, status, started.elapsed().as_secs_f64(), 0, 0);
    tracing::info!(
        request_id = rid,
        op,
        access_key = key,
        status,
        code,
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    resp
}

/// How long reading a request's body may take (it is small: a client that sends it slower is
/// refused rather than hold a connection and memory).
const BODY_TIME: std::time::Duration = std::time::Duration::from_secs(20);

/// Most IAM request bodies read at once per instance: slow senders cannot starve the rest of
/// the server (S3 requests are not counted here), only other IAM calls, which are refused with
/// AWS's `Throttling` (the SDKs retry it) rather than queued.
const MAX_READING: usize = 32;

/// The body of an IAM request, read only for a key that exists, declared by its
/// `Content-Length` (at most [`MAX_BODY`]), within [`BODY_TIME`] and a slot of
/// [`MAX_READING`]: an unsigned or unknown-key request costs nothing but its headers.
async fn read_body(st: &AppState, parts: &Parts, body: Body) -> IamResult<axum::body::Bytes> {
    static READING: std::sync::LazyLock<super::slots::Slots> =
        std::sync::LazyLock::new(|| super::slots::Slots::new(MAX_READING));
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let key = crate::auth::signing_key_id(&parts.headers, &query)
        .ok_or_else(|| IamError::incomplete_signature("The request must be signed with SigV4."))?;
    match st.creds.lookup(&key).await? {
        crate::auth::Lookup::Valid(_) => {}
        crate::auth::Lookup::Expired(s) => {
            // Told only to whoever has the session's token.
            let sent = crate::auth::token::sent(&parts.headers, &query)?;
            crate::auth::token::check(&s, sent.as_deref())?;
            return Err(crate::error::S3Error::expired_token().into());
        }
        crate::auth::Lookup::Unknown => return Err(IamError::invalid_client_token_id()),
    }
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    let chunked = parts
        .headers
        .contains_key(axum::http::header::TRANSFER_ENCODING);
    match declared {
        Some(n) if n <= MAX_BODY && !chunked => {}
        Some(_) => {
            return Err(IamError::validation_error(format!(
                "The request body is larger than {MAX_BODY} bytes."
            )))
        }
        None if chunked => {
            return Err(IamError::validation_error(
                "The request body must be sent with a Content-Length.",
            ))
        }
        None => {}
    }
    let _slot = READING.take(&key)?;
    read_within(body, MAX_BODY).await
}

/// A Query request's body: at most `max` bytes, within [`BODY_TIME`] (the caller holds a
/// slot of `super::slots` meanwhile).
pub async fn read_within(body: Body, max: usize) -> IamResult<axum::body::Bytes> {
    match tokio::time::timeout(BODY_TIME, axum::body::to_bytes(body, max)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(IamError::validation_error(
            "The request body is too large or incomplete.",
        )),
        Err(_) => Err(IamError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "RequestTimeout",
            "The request body was not received in time.",
        )),
    }
}

async fn run(
    st: &AppState,
    parts: Parts,
    body: Body,
    rid: &str,
    action_out: &mut String,
) -> IamResult<String> {
    let bytes = read_body(st, &parts, body).await?;
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let auth = crate::auth::authenticate_service(
        &parts,
        &query,
        &st.creds,
        &st.config.region,
        "iam",
        &bytes,
    )
    .await?;
    // AWS: GetSessionToken's credentials call no IAM action without MFA, which grids3 has
    // not got (a role's session is judged by its policies like any principal).
    if auth
        .token
        .as_ref()
        .is_some_and(|t| t.kind == crate::storage::meta::SessionKind::SessionToken)
    {
        return Err(IamError::access_denied(
            "Temporary credentials from GetSessionToken cannot call IAM without MFA.",
        ));
    }
    let params = Params::parse(parts.uri.query(), &bytes)?;
    let caller = caller_of(st, &auth, &parts).await?;
    let cx = Cx {
        st,
        caller: &caller,
        rid,
    };
    let action = params.action().to_owned();
    action_out.clone_from(&action);
    let answer = dispatch(&cx, &params, &action).await;
    if !(action.starts_with("Get") || action.starts_with("List")) {
        // A change (or an attempt that may have changed something before it failed) holds on
        // this instance at once: its cached secrets and principals go. The others follow the
        // keys' version counter the change moved (`auth::credentials`).
        st.creds.forget(&auth.access_key);
    }
    answer
}

/// Performs one IAM action for `cx`'s caller and returns the XML answer. The caller of a
/// change should `forget` the credentials cache after it (as [`handle`] does).
pub async fn dispatch(cx: &Cx<'_>, params: &Params, action: &str) -> IamResult<String> {
    if let Some(r) = super::users::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::groups::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::policies::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::inline::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::simulate::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::details::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::roles::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::role_policies::dispatch(cx, params, action).await {
        return r;
    }
    if let Some(r) = super::oidc_providers::dispatch(cx, params, action).await {
        return r;
    }
    // Every other IAM action is refused, never answered as done.
    Err(IamError::not_implemented(action))
}
