//! The entry: the body read (bounded), the signature checked (before anything is decrypted,
//! so that only a holder of a valid key can make the server run Argon2), the caller resolved
//! as the IAM Query API resolves it (`iam::handle::caller_of`), the payload opened, the
//! command dispatched to its family, and the answer sealed when MinIO seals it.

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use super::crypto;
use super::error::{AdminError, AdminResult};
use super::route::Command;
use crate::iam::handle::Caller;
use crate::state::AppState;
use crate::storage::identity::{Account, Group, IdentityStore, User};
use crate::storage::meta::MetaStore;

/// Largest body read: MinIO's `maxEConfigJSONSize` (a sealed JSON document).
const MAX_BODY: usize = 262_272;

/// Key derivations (64 MiB of memory each) that run at once on an instance; the others wait
/// their turn, so that no number of signed requests can pin more than this many times 64 MiB.
pub const KDF_AT_ONCE: usize = 2;

/// The turns of [`KDF_AT_ONCE`].
pub(crate) static KDF: Semaphore = Semaphore::const_new(KDF_AT_ONCE);

/// What a family's handler needs.
pub struct Cx<'a> {
    /// The state.
    pub st: &'a AppState,
    /// The caller (account, IAM user, session policies), as the IAM API sees it.
    pub caller: &'a Caller,
    /// The query's parameters (decoded).
    pub query: &'a [(String, String)],
    /// The body, opened when it was sealed.
    pub body: &'a [u8],
    /// The session policies (JSON texts) of the key that signed: a service account it makes
    /// inherits them.
    pub sessions: &'a [String],
}

/// A handler's answer.
#[derive(Debug)]
pub enum Reply {
    /// 200 with no body.
    Done,
    /// 204 (MinIO's answer to update- and delete-service-account; madmin requires it).
    NoContent,
    /// 200 with a JSON document (sealed for the commands whose answers MinIO seals).
    Json(String),
}

impl Cx<'_> {
    /// The identity store.
    pub fn store(&self) -> &IdentityStore {
        self.st.creds.identity()
    }

    /// The metastore (keys).
    pub fn meta(&self) -> &MetaStore {
        self.st.store.meta()
    }

    /// The caller's account.
    pub fn acct(&self) -> &Account {
        &self.caller.account
    }

    /// A query parameter.
    pub fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a repeated query parameter.
    pub fn q_all(&self, name: &str) -> Vec<&str> {
        self.query
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A required, non-empty query parameter (400 `XMinioAdminInvalidArgument` otherwise).
    pub fn required(&self, name: &str) -> AdminResult<&str> {
        self.q(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| AdminError::invalid_argument(format!("{name} is required")))
    }

    /// The body as JSON of type `T` (400 `XMinioAdminConfigBadJSON` otherwise).
    pub fn json<T: DeserializeOwned>(&self) -> AdminResult<T> {
        serde_json::from_slice(self.body).map_err(|e| AdminError::bad_json(e.to_string()))
    }

    /// `arn:aws:iam::<account>:<what>`: the resource an admin action is judged on.
    pub fn arn(&self, what: &str) -> String {
        self.caller.account.arn(what)
    }

    /// Every user of the account, by name.
    pub async fn all_users(&self) -> AdminResult<Vec<User>> {
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = self
                .store()
                .list_users(self.acct(), None, marker.as_deref(), 1000)
                .await?;
            out.extend(page.items);
            match page.next {
                Some(m) => marker = Some(m),
                None => return Ok(out),
            }
        }
    }

    /// Every group of the account, by name.
    pub async fn all_groups(&self) -> AdminResult<Vec<Group>> {
        let mut out = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let page = self
                .store()
                .list_groups(self.acct(), None, marker.as_deref(), 1000)
                .await?;
            out.extend(page.items);
            match page.next {
                Some(m) => marker = Some(m),
                None => return Ok(out),
            }
        }
    }

    /// The ARN of the account's managed policy `name` (canned policies live at path `/`).
    pub fn policy_arn(&self, name: &str) -> String {
        self.arn(&format!("policy/{name}"))
    }

    /// The name of the caller's IAM user (`None`: the account's root credentials or one of
    /// their service accounts).
    pub fn own_user(&self) -> Option<&str> {
        self.caller
            .user
            .as_ref()
            .and_then(|u| u.user())
            .map(|u| u.name.as_str())
    }
}

/// The names of attached policies (their ARNs' last segment), as MinIO lists a mapping.
pub fn policy_names(arns: &[String]) -> Vec<String> {
    arns.iter()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_owned())
        .collect()
}

/// The time as MinIO writes it (RFC 3339, seconds, `Z`).
pub fn rfc3339(t: mongodb::bson::DateTime) -> String {
    t.to_chrono()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Answers a request under `/minio/admin/v3/`.
pub async fn handle(st: &AppState, parts: Parts, body: Body) -> Response {
    let rid = crate::s3::respond::new_request_id();
    let resource = parts.uri.path().to_owned();
    let mut r = match run(st, parts, body).await {
        Ok(r) => r,
        Err(e) => e.response(&resource, &rid),
    };
    if let Ok(v) = HeaderValue::from_str(&rid) {
        r.headers_mut().insert("x-amz-request-id", v);
    }
    r.headers_mut()
        .insert(header::SERVER, HeaderValue::from_static("grids3"));
    r
}

async fn run(st: &AppState, parts: Parts, body: Body) -> AdminResult<Response> {
    let bytes = axum::body::to_bytes(body, MAX_BODY).await.map_err(|_| {
        AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioAdminConfigTooLarge",
            "Configuration data provided exceeds the allowed maximum of 256KiB",
        )
    })?;
    let query = crate::auth::sigv4::parse_query(parts.uri.query());
    let auth = crate::s3::lookup::within_request_timeout(
        st,
        crate::auth::authenticate_minio_admin(&parts, &query, &st.creds, &st.config.region, &bytes),
    )
    .await??;
    if auth.token.is_some() {
        // A service account made from a role's session would need a parent that is not a
        // user: grids3's MinIO admin API takes long-term credentials only.
        return Err(AdminError::from(crate::error::S3Error::access_denied().with_message(
            "The MinIO admin API does not take temporary credentials (STS); sign with an access key.",
        )));
    }
    let caller = crate::iam::handle::caller_of(st, &auth, &parts).await?;
    let command = Command::parse(&parts.method, parts.uri.path());
    if command == Command::NotImplemented {
        return Err(AdminError::not_implemented(&format!(
            "{} {}",
            parts.method,
            parts.uri.path()
        )));
    }
    // The signing key's secret: the password of sealed bodies, both ways.
    let stored = st
        .creds
        .secret_of(&auth.access_key)
        .await?
        .ok_or_else(|| AdminError::from(crate::error::S3Error::invalid_access_key_id()))?;
    let plain = if command.encrypted_request() {
        unseal(db(st), stored.secret.clone(), bytes.to_vec()).await?
    } else {
        bytes.to_vec()
    };
    let cx = Cx {
        st,
        caller: &caller,
        query: &query,
        body: &plain,
        sessions: &stored.sessions,
    };
    let answer =
        crate::s3::lookup::within_request_timeout(st, super::dispatch(&cx, command)).await?;
    if command.changes() {
        // The change holds on this instance at once; the others follow the keys' version
        // counter that the store moved.
        st.creds.forget(&auth.access_key);
    }
    Ok(match answer? {
        Reply::Done => StatusCode::OK.into_response(),
        Reply::NoContent => StatusCode::NO_CONTENT.into_response(),
        Reply::Json(text) => {
            let body = if command.encrypted_response() {
                seal(db(st), stored.secret.clone(), text.into_bytes()).await?
            } else {
                text.into_bytes()
            };
            let mut r = (StatusCode::OK, body).into_response();
            // MinIO labels sealed answers JSON too.
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
    })
}

/// Runs `command` as the key `access_key` had signed it (the console's signed-in key): the
/// same caller, the same authorization, and the same refusal of temporary credentials as a
/// signed request. Only commands whose request and answer are in the clear.
pub async fn run_as(
    st: &AppState,
    access_key: &str,
    parts: &Parts,
    command: Command,
    query: Vec<(String, String)>,
    body: &[u8],
) -> AdminResult<Reply> {
    if command.encrypted_request() || command.encrypted_response() {
        return Err(AdminError::not_implemented(
            "a sealed command on behalf of a key",
        ));
    }
    let stored = st
        .creds
        .secret_of(access_key)
        .await?
        .ok_or_else(|| AdminError::from(crate::error::S3Error::invalid_access_key_id()))?;
    let auth = crate::auth::Auth::of_key(access_key.to_owned(), &stored);
    if auth.token.is_some() {
        return Err(AdminError::from(crate::error::S3Error::access_denied().with_message(
            "The MinIO admin API does not take temporary credentials (STS); sign in with an access key.",
        )));
    }
    let caller = crate::iam::handle::caller_of(st, &auth, parts).await?;
    let cx = Cx {
        st,
        caller: &caller,
        query: &query,
        body,
        sessions: &stored.sessions,
    };
    crate::s3::lookup::within_request_timeout(st, super::dispatch(&cx, command)).await?
}

/// The database's name: the detail of the `madmin.kdf` fail point, so that tests side by
/// side stop only their own gateway's derivations.
fn db(st: &AppState) -> &str {
    st.store.meta().database().name()
}

/// Opens a sealed body, one of at most [`KDF`] derivations at a time, off the async threads.
async fn unseal(
    db: &str,
    secret: zeroize::Zeroizing<String>,
    data: Vec<u8>,
) -> AdminResult<Vec<u8>> {
    let _turn = KDF.acquire().await.expect("the semaphore is never closed");
    crate::failpoint::hit("madmin.kdf", db).await;
    tokio::task::spawn_blocking(move || crypto::decrypt(&secret, &data))
        .await
        .map_err(|_| AdminError::from(crate::error::S3Error::internal()))?
        .map_err(|_| {
            AdminError::bad_json("the payload does not open with the signing key's secret")
        })
}

/// Seals an answer, under the same bound.
async fn seal(db: &str, secret: zeroize::Zeroizing<String>, data: Vec<u8>) -> AdminResult<Vec<u8>> {
    let _turn = KDF.acquire().await.expect("the semaphore is never closed");
    crate::failpoint::hit("madmin.kdf", db).await;
    tokio::task::spawn_blocking(move || crypto::encrypt(&secret, &data))
        .await
        .map_err(|_| AdminError::from(crate::error::S3Error::internal()))
}
