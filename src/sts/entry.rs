//! STS's entry: the body read (bounded), the signature checked for the `sts` service, the
//! caller resolved as the IAM API resolves it (`iam::context::caller_of`), the `Action`
//! dispatched. AssumeRoleWithWebIdentity alone is taken unsigned (the token is the proof), as
//! AWS and MinIO take it; any other unsigned action is `MissingAuthenticationToken`.

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;

use super::STS_NS;
use crate::iam::context::{caller_of, Caller};
use crate::iam::error::{new_request_id, IamError, IamResult};
use crate::iam::query::Params;
use crate::state::AppState;

/// Largest body read: a web identity token (AWS: up to 20,000 characters), a session policy
/// (2,048 packed), ten policy ARNs, URL-encoded.
const MAX_BODY: usize = 128 * 1024;

/// Most bodies read at once per instance; more are refused with `Throttling` (the SDKs retry)
/// rather than queued: unsigned web identity requests cannot pin memory or connections.
const MAX_READING: usize = 32;

/// Whether a request is for STS: signed for `sts`, or an unsigned request that names an STS
/// action in its query or is a form POST to `/` (where S3 has no operation).
pub fn is_sts(
    parts_headers: &axum::http::HeaderMap,
    method: &axum::http::Method,
    uri: &axum::http::Uri,
) -> bool {
    let query = crate::auth::sigv4::parse_query(uri.query());
    if let Some(service) = crate::auth::signed_service(parts_headers, &query) {
        return service == "sts";
    }
    if crate::auth::has_credentials(parts_headers, &query) {
        return false;
    }
    // Only at `/`: an unsigned request to a bucket or key stays S3's, whatever its query.
    if uri.path() != "/" {
        return false;
    }
    let action = query
        .iter()
        .find(|(k, _)| k == "Action")
        .map(|(_, v)| v.as_str());
    if action == Some("AssumeRoleWithWebIdentity") {
        return true;
    }
    method == axum::http::Method::POST
        && parts_headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("application/x-www-form-urlencoded"))
}

/// Answers an STS request.
pub async fn handle(st: &AppState, parts: Parts, body: Body) -> Response {
    let started = std::time::Instant::now();
    let rid = new_request_id();
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let key = crate::auth::signing_key_id(&parts.headers, &query).unwrap_or_default();
    let mut action = String::new();
    let (resp, code) = match run(st, parts, body, &rid, &mut action).await {
        Ok(xml) => (crate::iam::xml::response(xml, &rid), ""),
        Err(e) => {
            let code = e.code;
            (e.with_request_id(&rid).into_response_in(STS_NS), code)
        }
    };
    let op = match action.as_str() {
        a @ ("AssumeRole"
        | "AssumeRoleWithWebIdentity"
        | "GetSessionToken"
        | "GetCallerIdentity") => format!("sts:{a}"),
        _ => "sts:other".to_owned(),
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

async fn read_body(parts: &Parts, body: Body) -> IamResult<axum::body::Bytes> {
    // Signed and unsigned requests have pools of their own: unsigned senders (anyone) cannot
    // take the slots of signed callers.
    static SIGNED: std::sync::LazyLock<crate::iam::slots::Slots> =
        std::sync::LazyLock::new(|| crate::iam::slots::Slots::new(MAX_READING));
    static UNSIGNED: std::sync::LazyLock<crate::iam::slots::Slots> =
        std::sync::LazyLock::new(|| crate::iam::slots::Slots::new(MAX_READING / 2));
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY)
        || parts
            .headers
            .contains_key(axum::http::header::TRANSFER_ENCODING)
    {
        return Err(IamError::validation_error(format!(
            "The request body must be sent with a Content-Length of at most {MAX_BODY} bytes."
        )));
    }
    // Per caller: the key id a signed request names, else the client's address.
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let _slot = match crate::auth::signing_key_id(&parts.headers, &query) {
        Some(k) => SIGNED.take(&format!("key:{k}"))?,
        None => {
            // An IPv6 client is counted by its /64 (one host has that many addresses).
            let ip = parts
                .extensions
                .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
                .map(|c| match c.0.ip() {
                    std::net::IpAddr::V6(v6) => {
                        let s = v6.segments();
                        format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
                    }
                    v4 => v4.to_string(),
                })
                .unwrap_or_default();
            UNSIGNED.take(&format!("ip:{ip}"))?
        }
    };
    crate::iam::handle::read_within(body, MAX_BODY).await
}

async fn run(
    st: &AppState,
    parts: Parts,
    body: Body,
    rid: &str,
    action_out: &mut String,
) -> IamResult<String> {
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let signed = crate::auth::has_credentials(&parts.headers, &query);
    if signed {
        // An unknown or expired key is refused before its body is read.
        let key = crate::auth::signing_key_id(&parts.headers, &query).ok_or_else(|| {
            IamError::incomplete_signature("The request must be signed with SigV4.")
        })?;
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
    }
    let bytes = read_body(&parts, body).await?;
    let params = Params::parse_for(parts.uri.query(), &bytes, "2011-06-15")?;
    let action = params.action().to_owned();
    action_out.clone_from(&action);
    if !signed {
        return match action.as_str() {
            "AssumeRoleWithWebIdentity" => super::web_identity::assume(st, &params, rid).await,
            _ => Err(IamError::new(
                StatusCode::FORBIDDEN,
                "MissingAuthenticationToken",
                "Request is missing Authentication Token",
            )),
        };
    }
    let auth = crate::auth::authenticate_service(
        &parts,
        &query,
        &st.creds,
        &st.config.region,
        "sts",
        &bytes,
    )
    .await?;
    let caller: Caller = caller_of(st, &auth, &parts).await?;
    match action.as_str() {
        "AssumeRole" => super::assume::assume_role(st, &auth, &caller, &params, rid).await,
        "GetSessionToken" => {
            super::session::get_session_token(st, &auth, &caller, &params, rid).await
        }
        "GetCallerIdentity" => Ok(super::session::get_caller_identity(&caller, rid)),
        // A signed web identity request: the token decides, not the signature (AWS ignores
        // the credentials of a signed one).
        "AssumeRoleWithWebIdentity" => super::web_identity::assume(st, &params, rid).await,
        "" => Err(IamError::missing_action()),
        other => Err(IamError::invalid_action(
            other,
            params.get("Version").unwrap_or("2011-06-15"),
        )),
    }
}
