//! Who calls the IAM API and what every action's handler needs: the [`Caller`] (its account,
//! IAM user, session policies and condition keys, and [`Caller::allow`], the authorization of
//! each action by the one policy engine), the handler context [`Cx`], and the translation of
//! the identity store's refusals into IAM's errors.

use std::collections::HashMap;
use std::sync::Arc;

use axum::http::request::Parts;

use super::error::{IamError, IamResult};
use super::query::MAX_TAGS;
use crate::auth::policy::{self, Verdict, Who};
use crate::auth::principal::Principal;
use crate::state::AppState;
use crate::storage::identity::{Account, IdentityError, IdentityStore};

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
    /// The condition keys of the caller's request (lower-case names).
    pub fn values(&self) -> &HashMap<String, Vec<String>> {
        &self.values
    }

    /// The caller's ARN (`...:root` for an account's own key).
    pub fn arn(&self) -> String {
        match &self.user {
            Some(u) => u.arn(),
            None => self.account.arn("root"),
        }
    }

    /// Whether the caller may perform `action` on `resource` (an ARN in its account).
    pub fn allow(&self, action: &'static str, resource: &str) -> IamResult<()> {
        self.allow_with(action, resource, &Facts::default())
    }

    /// [`Caller::allow`] with the condition keys the action brings (the tags it sets or
    /// removes, the tags of what it touches, the policy it attaches), as AWS sets them: a
    /// policy that limits them (`aws:TagKeys`, `aws:RequestTag/...`, `aws:ResourceTag/...`,
    /// `iam:PolicyARN`) then holds, rather than fail open on a key that is missing.
    pub fn allow_with(&self, action: &'static str, resource: &str, facts: &Facts) -> IamResult<()> {
        self.check(action, resource, facts, false)
    }

    /// [`Caller::allow`] for an action on the caller's own identity (MinIO's admin API lets a
    /// user change its own secret, or make and manage its own service accounts, unless a
    /// policy denies it): its identity policies refuse only by an explicit Deny. Its session
    /// policies (a service account's) must still allow it outright: MinIO's escalation of
    /// 2025-10 (GHSA-jjjj-jwhf-8rgr) came from letting "not denied" pass there too.
    pub fn allow_own(&self, action: &'static str, resource: &str) -> IamResult<()> {
        self.check(action, resource, &Facts::default(), true)
    }

    fn check(
        &self,
        action: &'static str,
        resource: &str,
        facts: &Facts,
        deny_only: bool,
    ) -> IamResult<()> {
        let mut values = self.values.clone();
        for (k, v) in &facts.0 {
            values.insert(k.clone(), v.clone());
        }
        // A session policy (a service account's) must allow it too, whoever the parent is.
        let session = policy::Context {
            who: Who::Key {
                id: self.access_key.clone(),
                canonical: String::new(),
                account: self.account.id.clone(),
            },
            action,
            resource: resource.to_owned(),
            values: values.clone(),
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
            who: u.who(false),
            action,
            resource: resource.to_owned(),
            values,
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

/// Condition keys an IAM action brings (lower-case names).
#[derive(Clone, Debug, Default)]
pub struct Facts(Vec<(String, Vec<String>)>);

impl Facts {
    /// The tags a request sets: `aws:TagKeys` and `aws:RequestTag/<key>`.
    pub fn request_tags(mut self, tags: &[(String, String)]) -> Self {
        if !tags.is_empty() {
            self.0.push((
                "aws:tagkeys".into(),
                tags.iter().map(|(k, _)| k.clone()).collect(),
            ));
        }
        for (k, v) in tags {
            self.0.push((
                format!("aws:requesttag/{}", k.to_ascii_lowercase()),
                vec![v.clone()],
            ));
        }
        self
    }

    /// The tag keys a request removes: `aws:TagKeys`.
    pub fn tag_keys(mut self, keys: &[String]) -> Self {
        self.0.push(("aws:tagkeys".into(), keys.to_vec()));
        self
    }

    /// The tags of the entity acted on: `aws:ResourceTag/<key>` and `iam:ResourceTag/<key>`.
    pub fn resource_tags(mut self, tags: &[(String, String)]) -> Self {
        for (k, v) in tags {
            let k = k.to_ascii_lowercase();
            self.0
                .push((format!("aws:resourcetag/{k}"), vec![v.clone()]));
            self.0
                .push((format!("iam:resourcetag/{k}"), vec![v.clone()]));
        }
        self
    }

    /// The managed policy an attachment names: `iam:PolicyARN`.
    pub fn policy_arn(mut self, arn: &str) -> Self {
        self.0.push(("iam:policyarn".into(), vec![arn.to_owned()]));
        self
    }
}

/// `current` with the tag keys `removing` taken out and `adding` set (keys compare without
/// case, as IAM compares them), within [`MAX_TAGS`].
pub fn merged_tags(
    current: &[(String, String)],
    adding: &[(String, String)],
    removing: &[String],
) -> IamResult<Vec<(String, String)>> {
    let mut tags = current.to_vec();
    for k in removing {
        tags.retain(|(t, _)| !t.eq_ignore_ascii_case(k));
    }
    for (k, v) in adding {
        match tags.iter_mut().find(|(t, _)| t.eq_ignore_ascii_case(k)) {
            Some(t) => t.1 = v.clone(),
            None => tags.push((k.clone(), v.clone())),
        }
    }
    if tags.len() > MAX_TAGS {
        return Err(IamError::limit_exceeded(format!(
            "The number of tags has reached the maximum limit of {MAX_TAGS}."
        )));
    }
    Ok(tags)
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
                .principal_of(u)
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
