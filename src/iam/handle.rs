//! The IAM Query API's entry: the request's body read (bounded) and signed for the `iam`
//! service, the caller resolved to an account (and an IAM user), the `Action` dispatched to
//! the family that handles it. Each action is authorized first by the same policy engine as
//! S3 requests (`auth::policy`): an account's root credentials may do everything in their
//! own account; an IAM user what its identity policies allow; nobody anything in another
//! account.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};

use super::error::{IamError, IamResult};
use super::query::Params;
use crate::auth::policy::{self, Verdict, Who};
use crate::auth::principal::Principal;
use crate::state::AppState;
use crate::storage::identity::{Account, IdentityError, IdentityStore};

/// Largest request body the IAM API reads (a policy document is at most 131,072 characters,
/// URL-encoded up to three times that, with room for the rest of the form).
const MAX_BODY: usize = 512 * 1024;

/// Who is calling.
pub struct Caller {
    /// The account the call acts in.
    pub account: Account,
    /// The IAM user, when a user's key signed it.
    pub user: Option<Arc<Principal>>,
    /// The access key that signed it.
    pub access_key: String,
    /// Its session policies (a service account's).
    pub sessions: Vec<Arc<policy::Policy>>,
    values: HashMap<String, Vec<String>>,
}

impl Caller {
    /// The caller's ARN (`...:root` for an account's own key).
    pub fn arn(&self) -> String {
        match &self.user {
            Some(u) => u.arn(),
            None => self.account.arn("root"),
        }
    }

    /// Whether the caller may perform `action` on `resource` (an ARN in its account).
    pub fn allow(&self, action: &'static str, resource: &str) -> IamResult<()> {
        self.check(action, resource, false)
    }

    /// [`Caller::allow`] for an action on the caller's own identity (MinIO's admin API lets a
    /// user change its own secret, or make and manage its own service accounts, unless a
    /// policy denies it): its identity policies refuse only by an explicit Deny. Its session
    /// policies (a service account's) must still allow it outright: MinIO's escalation of
    /// 2025-10 (GHSA-jjjj-jwhf-8rgr) came from letting "not denied" pass there too.
    pub fn allow_own(&self, action: &'static str, resource: &str) -> IamResult<()> {
        self.check(action, resource, true)
    }

    fn check(&self, action: &'static str, resource: &str, deny_only: bool) -> IamResult<()> {
        // A session policy (a service account's) must allow it too, whoever the parent is.
        let session = policy::Context {
            who: Who::Key {
                id: self.access_key.clone(),
                canonical: String::new(),
            },
            action,
            resource: resource.to_owned(),
            values: self.values.clone(),
        };
        if !crate::auth::session::allows(&self.sessions, &session) {
            return Err(IamError::access_denied(format!(
                "{} is not authorized to perform: {action} on resource: {resource} because no session policy allows the {action} action",
                self.arn()
            )));
        }
        let Some(u) = &self.user else {
            // An account's root credentials: everything in their own account.
            return Ok(());
        };
        let v = u.policies.evaluate(&policy::Context {
            who: Who::User {
                arn: u.arn(),
                account: u.account.id.clone(),
                direct_only: false,
            },
            action,
            resource: resource.to_owned(),
            values: self.values.clone(),
        });
        match v.verdict {
            Verdict::Allow => Ok(()),
            Verdict::Silent if deny_only => Ok(()),
            Verdict::Deny => Err(IamError::access_denied(format!(
                "User: {} is not authorized to perform: {action} on resource: {resource} with an explicit deny in an identity-based policy",
                u.arn()
            ))),
            Verdict::Silent => Err(IamError::access_denied(format!(
                "User: {} is not authorized to perform: {action} on resource: {resource} because no identity-based policy allows the {action} action",
                u.arn()
            ))),
        }
    }
}

/// What a family's handler needs.
pub struct Cx<'a> {
    /// The state.
    pub st: &'a AppState,
    /// The caller.
    pub caller: &'a Caller,
    /// This request's id.
    pub rid: &'a str,
}

impl Cx<'_> {
    /// The identity store.
    pub fn store(&self) -> &IdentityStore {
        self.st.creds.identity()
    }

    /// The caller's account.
    pub fn acct(&self) -> &Account {
        &self.caller.account
    }

    /// `arn:aws:iam::<account>:<what>`.
    pub fn arn(&self, what: &str) -> String {
        self.caller.account.arn(what)
    }
}

/// The identity store's refusals in IAM's words.
impl From<IdentityError> for IamError {
    fn from(e: IdentityError) -> Self {
        match e {
            IdentityError::NoSuchEntity(m) => IamError::no_such_entity(m),
            IdentityError::EntityAlreadyExists(m) => IamError::entity_already_exists(m),
            IdentityError::DeleteConflict(m) => IamError::delete_conflict(m),
            IdentityError::LimitExceeded(m) => IamError::limit_exceeded(m),
            IdentityError::InvalidInput(m) => IamError::invalid_input(m),
            IdentityError::Db(e) => db(e),
        }
    }
}

/// A database failure: 503 when it cannot be reached, else a ServiceFailure with the details
/// logged, never sent.
pub fn db(e: mongodb::error::Error) -> IamError {
    IamError::from(crate::error::S3Error::from(e))
}

/// A bson time as the answers write it.
pub fn time(t: mongodb::bson::DateTime) -> chrono::DateTime<chrono::Utc> {
    t.to_chrono()
}

/// Answers an IAM Query API request.
pub async fn handle(st: &AppState, parts: Parts, body: Body) -> Response {
    let rid = super::error::new_request_id();
    match run(st, parts, body, &rid).await {
        Ok(xml) => super::xml::response(xml, &rid),
        Err(e) => e.with_request_id(&rid).into_response(),
    }
}

async fn run(st: &AppState, parts: Parts, body: Body, rid: &str) -> IamResult<String> {
    let bytes = axum::body::to_bytes(body, MAX_BODY)
        .await
        .map_err(|_| IamError::validation_error("The request body is too large or incomplete."))?;
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
    let params = Params::parse(parts.uri.query(), &bytes)?;
    let caller = caller_of(st, &auth, &parts).await?;
    let cx = Cx {
        st,
        caller: &caller,
        rid,
    };
    let action = params.action().to_owned();
    let answer = dispatch(&cx, &params, &action).await;
    if !(action.starts_with("Get") || action.starts_with("List")) {
        // A change (or an attempt that may have changed something before it failed) holds on
        // this instance at once: its cached secrets and principals go. The others follow the
        // keys' version counter the change moved (`auth::credentials`).
        st.creds.forget(&auth.access_key);
    }
    answer
}

/// The caller behind an authenticated request (its account, IAM user, session policies and
/// condition keys). The console builds one for its signed-in key, to act through
/// [`dispatch`] as the Query API does.
pub async fn caller_of(
    st: &AppState,
    auth: &crate::auth::Auth,
    parts: &Parts,
) -> IamResult<Caller> {
    let user = match &auth.user {
        None => None,
        Some(u) => Some(
            st.creds
                .principal(&u.id)
                .await?
                .ok_or_else(IamError::invalid_client_token_id)?,
        ),
    };
    let mut values = crate::s3::authz::facts(
        &parts.headers,
        &[],
        auth,
        parts
            .extensions
            .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
            .map(|c| c.0.ip()),
        crate::tls::Transport::of(&parts.extensions),
        st.store.meta().clock().now().to_chrono(),
    );
    if let Some(u) = &user {
        u.add_condition_values(&mut values);
    }
    Ok(Caller {
        account: Account::of_key(auth.account_key()),
        user,
        access_key: auth.access_key.clone(),
        sessions: auth.sessions.clone(),
        values,
    })
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
    // Every other IAM action is refused, never answered as done.
    Err(IamError::not_implemented(action))
}
