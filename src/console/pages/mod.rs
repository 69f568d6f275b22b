//! The console's routes: gather the session and the form, send the S3 request as the
//! signed-in key, render the page. One file per job: `signin` (login, logout), `buckets`
//! (buckets, folders, deletes), `objects` (an object's page and actions, share links),
//! `bytes` (serving object bytes safely), `identity`, `groups`, `policies` and `access`
//! (IAM users, groups, managed policies and effective permissions, through `iamcall`, with
//! `idcommon` for what they share); the steps they share are here.

use askama::Template;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::s3call::{BucketList, Caller, ObjectList};
use super::session::{self, Signed};
use super::views;
use crate::error::S3Error;
use crate::state::AppState;

mod access;
mod account_quota;
mod admin;
mod buckets;
mod bytes;
mod exposure;
mod groups;
mod idcommon;
mod identity;
mod live;
mod lock;
mod objects;
mod policies;
mod quota;
mod settings;
mod signin;
mod sso;
mod status;
mod upload;

pub use access::access;
pub use admin::{account_quota as save_account_quota, admin, keys as admin_keys, kms as admin_kms};
pub use buckets::{browse, buckets, create_bucket, delete_bucket, delete_folder, delete_objects};
pub use bytes::raw;
pub use groups::{group, group_post, groups, groups_post};
pub use identity::{user, user_post, users, users_post};
pub use live::live;
pub use lock::lock;
pub use objects::{delete_version, download, object, restore, share, tags};
pub use policies::{policies, policies_post, policy, policy_post};
pub use quota::save as save_quota;
pub use settings::{convert, delete as delete_setting, save as save_setting, settings};
pub use signin::{login, login_page, logout};
pub use sso::{sso_callback, sso_finish, sso_start};
pub use status::status;
pub use upload::{abort as abort_upload, complete as complete_upload, start as start_upload};

/// Largest form body the console reads.
const MAX_FORM: usize = 256 * 1024;

/// Objects and folders on one page of a folder.
const PAGE: &str = "200";

fn html(t: impl Template) -> Response {
    match t.render() {
        Ok(body) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a console template failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// Whether the console's cookies are a secure origin's (`session::secure`).
fn tls(st: &AppState, parts: &Parts) -> bool {
    session::secure(st, parts)
}

/// A form or query string, decoded (`+` is a space in forms).
fn pairs(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let d = |s: &str| crate::percent::decode(&s.replace('+', " "));
            (d(k), d(v))
        })
        .collect()
}

fn field<'a>(f: &'a [(String, String)], name: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

async fn form(body: Body, limit: usize) -> Result<Vec<(String, String)>, Response> {
    let bytes = axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| StatusCode::PAYLOAD_TOO_LARGE.into_response())?;
    Ok(pairs(&String::from_utf8_lossy(&bytes)))
}

/// What every signed-in page needs.
struct Ctx {
    parts: Parts,
    signed: Signed,
    request_id: String,
}

impl Ctx {
    fn caller<'a>(&'a self, st: &'a AppState) -> Caller<'a> {
        Caller {
            st,
            access_key: &self.signed.session.access_key,
            parts: &self.parts,
            request_id: &self.request_id,
        }
    }

    /// Who is signed in, as shown: the key, or a single sign-on's assumed-role session.
    fn who(&self) -> String {
        match &self.signed.session.sso {
            Some(s) => s.arn.clone(),
            None => self.signed.session.access_key.clone(),
        }
    }

    fn csrf(&self) -> String {
        self.signed.session.csrf.clone()
    }

    /// A page saying what happened (an S3 refusal shows AWS's code and reason).
    fn message(
        &self,
        status: StatusCode,
        title: &str,
        error: Option<S3Error>,
        back: &str,
    ) -> Response {
        let mut r = html(views::Message {
            who: self.who(),
            csrf: self.csrf(),
            root: self.signed.root,
            error: error.map(|e| reason(&e)),
            title: title.to_owned(),
            back: back.to_owned(),
        });
        *r.status_mut() = status;
        r
    }
}

/// AWS's code and message of a refusal, as the console shows it.
fn reason(e: &S3Error) -> String {
    format!("{}: {}", e.code, e.message)
}

/// Signs presigned URLs of the S3 endpoint with the session key's secret, at the database's
/// time, for the Host the browser will send (share links, upload parts, the live listing).
struct Presigner {
    access_key: String,
    /// A single sign-on session's token: its URLs carry it (signed), as STS's credentials
    /// must be sent with theirs.
    token: Option<String>,
    secret: crate::storage::meta::KeySecret,
    region: String,
    base: String,
    host: String,
    amz_date: String,
    /// The time the URLs are signed at (the database's).
    now: chrono::DateTime<chrono::Utc>,
    /// When a single sign-on session's credentials expire: no URL outlives them.
    ends: Option<chrono::DateTime<chrono::Utc>>,
}

impl Presigner {
    async fn new(st: &AppState, ctx: &Ctx) -> Result<Presigner, S3Error> {
        let access_key = ctx.signed.session.access_key.clone();
        let secret = st
            .creds
            .secret_of(&access_key)
            .await?
            .ok_or_else(S3Error::access_denied)?;
        let (base, host) = crate::console::s3_base(st, &ctx.parts.headers);
        let now = st.store.meta().clock().now().to_chrono();
        let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
        Ok(Presigner {
            now,
            token: ctx.signed.session.sso.as_ref().map(|s| s.token.clone()),
            ends: ctx
                .signed
                .session
                .sso
                .as_ref()
                .map(|s| s.expires.to_chrono()),
            access_key,
            secret,
            region: st.config.region.clone(),
            base,
            host,
            amz_date,
        })
    }

    /// The longest a URL can work, up to `seconds`: a single sign-on session's end with its
    /// credentials, which nothing they sign outlives.
    fn lifetime(&self, seconds: u64) -> u64 {
        match self.ends {
            Some(e) => seconds.min((e - self.now).num_seconds().max(1) as u64),
            None => seconds,
        }
    }

    /// The URL of `method` on `bucket` (and `key`), with `extra` query parameters signed, for
    /// at most [`Presigner::lifetime`]`(expires)`.
    fn url(
        &self,
        method: &str,
        bucket: &str,
        key: Option<&str>,
        extra: &[(String, String)],
        expires: u64,
    ) -> String {
        let mut path = format!("/{}", crate::percent::uri_encode(bucket, false));
        if let Some(k) = key {
            path.push('/');
            path.push_str(&crate::percent::uri_encode(k, true));
        }
        let mut signed: Vec<(String, String)> = extra.to_vec();
        if let Some(t) = &self.token {
            signed.push(("X-Amz-Security-Token".to_owned(), t.clone()));
        }
        let query = crate::auth::sigv4::presign_query(&crate::auth::sigv4::Presign {
            access_key: &self.access_key,
            secret: &self.secret.secret,
            region: &self.region,
            host: &self.host,
            method,
            path: &path,
            amz_date: &self.amz_date,
            expires: self.lifetime(expires),
            extra: &signed,
        });
        format!("{}{path}?{query}", self.base)
    }
}

/// The session of a request, or the way to the login page.
async fn signed_in(st: &AppState, parts: Parts) -> Result<Ctx, Response> {
    match session::current(st, &parts).await {
        Ok(Some(signed)) => Ok(Ctx {
            parts,
            signed,
            request_id: crate::s3::respond::new_request_id(),
        }),
        Ok(None) => Err(see_other("/login")),
        Err(e) => Err((e.status, reason(&e)).into_response()),
    }
}

/// A signed-in GET: the session and the query string.
async fn signed_get(st: &AppState, req: Request) -> Result<(Ctx, Vec<(String, String)>), Response> {
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    Ok((signed_in(st, parts).await?, q))
}

/// A signed-in POST: the session, its form, and the CSRF check.
async fn signed_post(
    st: &AppState,
    req: Request,
) -> Result<(Ctx, Vec<(String, String)>), Response> {
    signed_post_with(st, req, MAX_FORM).await
}

/// [`signed_post`] of a form of up to `limit` bytes (a settings document).
async fn signed_post_with(
    st: &AppState,
    req: Request,
    limit: usize,
) -> Result<(Ctx, Vec<(String, String)>), Response> {
    let (parts, body) = req.into_parts();
    let ctx = signed_in(st, parts).await?;
    let f = form(body, limit).await?;
    if let Err(e) = session::check_csrf(
        st,
        &ctx.parts,
        Some(&ctx.signed.session),
        field(&f, "csrf").unwrap_or(""),
    ) {
        return Err(ctx.message(StatusCode::FORBIDDEN, "Refused", Some(e), "/"));
    }
    Ok((ctx, f))
}
