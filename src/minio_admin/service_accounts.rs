//! Service accounts: add-, update-, info-, list-, delete-service-account. A service account
//! is an access key of a parent (an IAM user of the caller's account, or the account's root
//! credentials) that signs as its parent, cut by its own session policy (if any) and by the
//! session policies of the key that made it (`storage::meta::service_accounts`): rights only
//! narrow. The decisions that enforce that are the S3 and IAM ones (`auth::session`); here
//! only who may make, see, change and remove which.
//!
//! MinIO's escalation of 2025-10 (GHSA-jjjj-jwhf-8rgr): a service account limited by a
//! session policy made an unrestricted one for its parent, because "own account" actions
//! counted a session policy's silence as consent. Here a session policy must allow
//! `admin:CreateServiceAccount` outright (`Caller::allow_own`), and a service account made
//! by one inherits its session policies in any case.

use axum::http::StatusCode;
use mongodb::bson::DateTime;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::entry::{rfc3339, Cx, Reply};
use super::error::{AdminError, AdminResult};
use super::validate::{check_access_key, check_secret_key, parse_status};
use crate::storage::identity::{IdentityError, User};
use crate::storage::meta::{NewServiceAccount, ServiceAccount, ServiceAccountChange};

/// Largest session policy, compacted (MinIO's `maxSVCSessionPolicySize`).
const MAX_SESSION_POLICY: usize = 4096;
/// What a session policy with a version but no statement means: nothing is allowed (MinIO
/// stores it as such; our parser wants a statement).
const DENY_ALL: &str =
    r#"{"Version":"2012-10-17","Statement":[{"Effect":"Deny","Action":"*","Resource":"*"}]}"#;

/// A service account's parent.
enum Parent {
    /// An IAM user.
    User(Box<User>),
    /// The account's root credentials.
    Root,
}

#[derive(Deserialize, Debug, Default)]
struct AddReq {
    #[serde(default, rename = "accessKey")]
    access_key: Option<String>,
    #[serde(default, rename = "secretKey")]
    secret_key: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    /// The older name of `description`.
    #[serde(default)]
    comment: Option<String>,
    #[serde(default)]
    policy: Option<Value>,
    #[serde(default)]
    expiration: Option<String>,
    #[serde(default, rename = "targetUser")]
    target_user: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct UpdateReq {
    #[serde(default, rename = "newSecretKey")]
    secret_key: Option<String>,
    #[serde(default, rename = "newName")]
    name: Option<String>,
    #[serde(default, rename = "newDescription")]
    description: Option<String>,
    #[serde(default, rename = "newPolicy")]
    policy: Option<Value>,
    #[serde(default, rename = "newExpiration")]
    expiration: Option<String>,
    #[serde(default, rename = "newStatus")]
    status: Option<String>,
}

/// A session policy as given: `None` for none (`null`, `{}`, no version and no statement:
/// MinIO's "inherit"), deny-all for a version without statements, else the compacted text
/// the policy engine accepts.
fn session_policy(v: Option<&Value>) -> AdminResult<Option<String>> {
    let v = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        // Some clients send the document as a string.
        Some(Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| AdminError::malformed_policy(format!("invalid JSON: {e}")))?,
        Some(v) => v.clone(),
    };
    let Some(o) = v.as_object() else {
        return Err(AdminError::malformed_policy("a policy is a JSON object"));
    };
    let empty = |k: &str| match o.get(k) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(_) => false,
    };
    if empty("Statement") {
        return Ok(if empty("Version") && empty("Id") {
            None
        } else {
            Some(DENY_ALL.to_owned())
        });
    }
    let text = v.to_string();
    if text.len() > MAX_SESSION_POLICY {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioIAMServiceAccountSessionPolicyTooLarge",
            "Session policy should not exceed 4096 characters",
        ));
    }
    crate::auth::policy::parse_identity(&text)
        .map_err(|e| AdminError::malformed_policy(e.message))?;
    Ok(Some(text))
}

fn check_name(n: &str) -> AdminResult<()> {
    let ok = n.len() <= 32
        && n.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if !ok {
        return Err(invalid(
            "a name is up to 32 characters: a letter, then letters, digits, _ and -",
        ));
    }
    Ok(())
}

fn invalid(m: &str) -> AdminError {
    AdminError::new(StatusCode::BAD_REQUEST, "XMinioInvalidResource", m)
}

/// An expiration: RFC 3339, truncated to the second, after `now` (the database's clock).
fn expiration(s: &str, now: DateTime) -> AdminResult<DateTime> {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .map_err(|_| invalid("the expiration is not an RFC 3339 time"))?;
    let t = DateTime::from_millis(t.timestamp() * 1000);
    if t <= now {
        return Err(invalid("the expiration must be in the future"));
    }
    Ok(t)
}

fn parent_arn(cx: &Cx<'_>, p: &Parent) -> String {
    match p {
        Parent::User(u) => cx.arn(&format!("user/{}", u.name)),
        Parent::Root => cx.arn("root"),
    }
}

/// The caller's own parent: its IAM user, or (for the account's root credentials and their
/// service accounts) the root.
fn own_parent(cx: &Cx<'_>) -> AdminResult<Parent> {
    match &cx.caller.user {
        None => Ok(Parent::Root),
        Some(p) => match p.user() {
            Some(u) => Ok(Parent::User(Box::new(u.clone()))),
            // A role's session is no parent (the entry refuses temporary credentials).
            None => Err(AdminError::from(crate::error::S3Error::access_denied())),
        },
    }
}

/// A named parent of the caller's account, and whether it is the caller's own.
async fn named_parent(cx: &Cx<'_>, name: Option<&str>) -> AdminResult<(Parent, bool)> {
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        return Ok((own_parent(cx)?, true));
    };
    if name == cx.acct().key {
        return Ok((Parent::Root, cx.caller.user.is_none()));
    }
    if cx.own_user() == Some(name) {
        return Ok((own_parent(cx)?, true));
    }
    match cx.store().user(cx.acct(), name).await {
        Ok(u) => Ok((Parent::User(Box::new(u)), false)),
        Err(IdentityError::NoSuchEntity(_)) => Err(AdminError::new(
            StatusCode::NOT_FOUND,
            "XMinioAdminNoSuchUser",
            format!("Specified target user {name} does not exist"),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Judges an action on a parent's service accounts: on one's own, a policy's silence is
/// consent but a session policy's is not (`allow_own`); on anyone else's, an Allow is
/// needed.
fn judge(cx: &Cx<'_>, action: &'static str, p: &Parent, own: bool) -> AdminResult<()> {
    let res = parent_arn(cx, p);
    if own {
        cx.caller.allow_own(action, &res)?;
    } else {
        cx.caller.allow(action, &res)?;
    }
    Ok(())
}

/// `PUT add-service-account` (sealed both ways).
pub async fn add(cx: &Cx<'_>) -> AdminResult<Reply> {
    let req: AddReq = cx.json()?;
    let (parent, own) = named_parent(cx, req.target_user.as_deref()).await?;
    if matches!(parent, Parent::Root) && !own {
        // A user gets no credentials of its account's root, whatever its policies say.
        return Err(AdminError::action_not_allowed(
            "Specified IAM action is not allowed: only the account's root credentials make service accounts of the root",
        ));
    }
    judge(cx, "admin:CreateServiceAccount", &parent, own)?;
    let session = session_policy(req.policy.as_ref())?;
    let name = req.name.unwrap_or_default();
    if !name.is_empty() {
        check_name(&name)?;
    }
    let description = req.description.or(req.comment).unwrap_or_default();
    if description.len() > 256 {
        return Err(invalid("a description is at most 256 bytes"));
    }
    let now = cx.meta().clock().now();
    let expires = match req.expiration.as_deref().filter(|e| !e.is_empty()) {
        Some(e) => Some(expiration(e, now)?),
        None => None,
    };
    let (key, secret) = match (
        req.access_key.filter(|k| !k.is_empty()),
        req.secret_key.filter(|s| !s.is_empty()),
    ) {
        (None, None) => crate::storage::identity::new_access_key(),
        (Some(k), Some(s)) => (k, s),
        _ => {
            return Err(AdminError::invalid_argument(
                "give both an access key and a secret key, or neither",
            ))
        }
    };
    check_access_key(&key)?;
    check_secret_key(&secret)?;
    let parent_name = match &parent {
        Parent::User(u) => u.name.clone(),
        Parent::Root => cx.acct().key.clone(),
    };
    if key == parent_name || key == cx.acct().key {
        return Err(AdminError::credentials_not_allowed(
            "Credential is not allowed to be same as admin access key",
        ));
    }
    let taken = || {
        AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioIAMServiceAccountNotAllowed",
            "The access key is in use",
        )
    };
    if cx.meta().key_exists(&key).await? {
        return Err(taken());
    }
    // A root key's service account without session policies is root as its parent is.
    let root = matches!(parent, Parent::Root)
        && cx
            .st
            .creds
            .secret_of(&cx.acct().key)
            .await?
            .is_some_and(|k| k.root);
    let made = cx
        .meta()
        .insert_service_account(&NewServiceAccount {
            id: &key,
            secret: &secret,
            user: match &parent {
                Parent::User(u) => Some(u.id.as_str()),
                Parent::Root => None,
            },
            account_key: &cx.acct().key,
            root,
            session: session.as_deref(),
            // Whatever cut the maker's rights cuts the new key's too.
            inherited: cx.sessions,
            name: &name,
            description: &description,
            expiration: expires,
        })
        .await;
    match made {
        Err(e) if crate::storage::meta::is_duplicate_key(&e) => return Err(taken()),
        r => r?,
    };
    Ok(Reply::Json(
        json!({"credentials": {
            "accessKey": key,
            "secretKey": secret,
            "expiration": expires.map_or_else(|| "1970-01-01T00:00:00Z".to_owned(), rfc3339),
        }})
        .to_string(),
    ))
}

/// The service account `id` of the caller's account, its parent, and whether that parent
/// is the caller's own; 404 for anything else.
async fn of_account(cx: &Cx<'_>, id: &str) -> AdminResult<(ServiceAccount, Parent, bool)> {
    let sa = cx
        .meta()
        .service_account(id)
        .await?
        .filter(|s| s.account_key == cx.acct().key)
        .ok_or_else(AdminError::no_such_service_account)?;
    let parent = match &sa.user {
        None => Parent::Root,
        Some(uid) => Parent::User(Box::new(
            cx.store()
                .user_by_id(uid)
                .await?
                .ok_or_else(AdminError::no_such_service_account)?,
        )),
    };
    let own = match (&parent, &cx.caller.user) {
        (Parent::Root, None) => true,
        (Parent::User(u), Some(p)) => p.user().is_some_and(|pu| pu.id == u.id),
        _ => false,
    };
    Ok((sa, parent, own))
}

/// `POST update-service-account?accessKey=` (sealed): only with `admin:UpdateServiceAccount`,
/// never as self-service (MinIO's fix of 2024-01: a service account replaced its own session
/// policy).
pub async fn update(cx: &Cx<'_>) -> AdminResult<Reply> {
    let id = cx.required("accessKey")?;
    let req: UpdateReq = cx.json()?;
    let (sa, parent, _) = of_account(cx, id).await?;
    judge(cx, "admin:UpdateServiceAccount", &parent, false)?;
    let mut change = ServiceAccountChange::default();
    if let Some(s) = req.secret_key.filter(|s| !s.is_empty()) {
        check_secret_key(&s)?;
        change.secret = Some(s);
    }
    if let Some(n) = req.name.filter(|n| !n.is_empty()) {
        check_name(&n)?;
        change.name = Some(n);
    }
    if let Some(d) = req.description.filter(|d| !d.is_empty()) {
        if d.len() > 256 {
            return Err(invalid("a description is at most 256 bytes"));
        }
        change.description = Some(d);
    }
    if let Some(p) = req.policy.filter(|p| !p.is_null()) {
        change.session = Some(session_policy(Some(&p))?);
    }
    if let Some(e) = req.expiration.filter(|e| !e.is_empty()) {
        change.expiration = Some(expiration(&e, cx.meta().clock().now())?);
    }
    if let Some(s) = req.status.filter(|s| !s.is_empty()) {
        change.disabled = Some(parse_status(&s, true)?);
    }
    if !cx.meta().update_service_account(&sa, change).await? {
        return Err(AdminError::new(
            StatusCode::CONFLICT,
            "XMinioAdminInvalidArgument",
            "the service account changed meanwhile; try again",
        ));
    }
    Ok(Reply::NoContent)
}

/// What a service account is judged by when it has no session policy of its own: its
/// parent's identity policies, merged into one document as MinIO shows them.
async fn implied(cx: &Cx<'_>, parent: &Parent) -> AdminResult<String> {
    let mut statements = Vec::new();
    match parent {
        Parent::Root => statements.push(json!({"Effect":"Allow","Action":["*"],"Resource":["*"]})),
        Parent::User(u) => {
            if let Some(e) = cx.store().effective(&u.id).await? {
                for (_, text) in e.policies {
                    if let Ok(v) = serde_json::from_str::<Value>(&text) {
                        match v.get("Statement") {
                            Some(Value::Array(a)) => statements.extend(a.iter().cloned()),
                            Some(o @ Value::Object(_)) => statements.push(o.clone()),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    Ok(
        serde_json::to_string_pretty(&json!({"Version":"2012-10-17","Statement":statements}))
            .expect("JSON"),
    )
}

fn parent_name(cx: &Cx<'_>, p: &Parent) -> String {
    match p {
        Parent::User(u) => u.name.clone(),
        Parent::Root => cx.acct().key.clone(),
    }
}

/// `GET info-service-account?accessKey=` (sealed answer).
pub async fn info(cx: &Cx<'_>) -> AdminResult<Reply> {
    let id = cx.required("accessKey")?;
    let (sa, parent, own) = of_account(cx, id).await?;
    judge(cx, "admin:ListServiceAccounts", &parent, own)?;
    let policy = match &sa.session {
        Some(s) => serde_json::from_str::<Value>(s)
            .ok()
            .and_then(|v| serde_json::to_string_pretty(&v).ok())
            .unwrap_or_else(|| s.clone()),
        None => implied(cx, &parent).await?,
    };
    let mut m = Map::new();
    m.insert("parentUser".into(), json!(parent_name(cx, &parent)));
    m.insert(
        "accountStatus".into(),
        json!(if sa.disabled { "off" } else { "on" }),
    );
    m.insert("impliedPolicy".into(), json!(sa.session.is_none()));
    m.insert("policy".into(), json!(policy));
    if !sa.name.is_empty() {
        m.insert("name".into(), json!(sa.name));
    }
    if !sa.description.is_empty() {
        m.insert("description".into(), json!(sa.description));
    }
    if let Some(e) = sa.expiration {
        m.insert("expiration".into(), json!(rfc3339(e)));
    }
    Ok(Reply::Json(Value::Object(m).to_string()))
}

/// `GET list-service-accounts[?user=]` (sealed answer): the caller's own parent's, or with
/// `admin:ListServiceAccounts` another user's.
pub async fn list(cx: &Cx<'_>) -> AdminResult<Reply> {
    let (parent, own) = named_parent(cx, cx.q("user")).await?;
    judge(cx, "admin:ListServiceAccounts", &parent, own)?;
    let user_id = match &parent {
        Parent::User(u) => Some(u.id.as_str()),
        Parent::Root => None,
    };
    let name = parent_name(cx, &parent);
    let accounts: Vec<Value> = cx
        .meta()
        .service_accounts_of(&cx.acct().key, user_id)
        .await?
        .into_iter()
        .map(|sa| {
            let mut m = Map::new();
            m.insert("parentUser".into(), json!(name));
            m.insert(
                "accountStatus".into(),
                json!(if sa.disabled { "off" } else { "on" }),
            );
            m.insert("impliedPolicy".into(), json!(sa.session.is_none()));
            m.insert("accessKey".into(), json!(sa.id));
            if !sa.name.is_empty() {
                m.insert("name".into(), json!(sa.name));
            }
            if !sa.description.is_empty() {
                m.insert("description".into(), json!(sa.description));
            }
            m.insert(
                "expiration".into(),
                json!(sa
                    .expiration
                    .map_or_else(|| "1970-01-01T00:00:00Z".to_owned(), rfc3339)),
            );
            Value::Object(m)
        })
        .collect();
    Ok(Reply::Json(json!({"accounts": accounts}).to_string()))
}

/// `DELETE delete-service-account?accessKey=`: 204. Another parent's service account that
/// the caller may not remove is answered as missing, as MinIO answers it.
pub async fn delete(cx: &Cx<'_>) -> AdminResult<Reply> {
    let id = cx.required("accessKey")?;
    let (_, parent, own) = of_account(cx, id).await?;
    if judge(cx, "admin:RemoveServiceAccount", &parent, own).is_err() {
        return Err(if own {
            judge(cx, "admin:RemoveServiceAccount", &parent, own).unwrap_err()
        } else {
            AdminError::no_such_service_account()
        });
    }
    if !cx.meta().delete_service_account(id).await? {
        return Err(AdminError::no_such_service_account());
    }
    Ok(Reply::NoContent)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_policies_normalise_as_minio_reads_them() {
        assert_eq!(session_policy(None).unwrap(), None);
        assert_eq!(session_policy(Some(&Value::Null)).unwrap(), None);
        assert_eq!(session_policy(Some(&json!({}))).unwrap(), None);
        assert_eq!(
            session_policy(Some(&json!({"Statement": null}))).unwrap(),
            None
        );
        // A version without statements allows nothing (it is not "inherit").
        assert_eq!(
            session_policy(Some(&json!({"Version":"2012-10-17","Statement":[]}))).unwrap(),
            Some(DENY_ALL.to_owned())
        );
        let p = json!({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]});
        let text = session_policy(Some(&p)).unwrap().unwrap();
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), p);
        // As a string too.
        assert_eq!(
            session_policy(Some(&json!(p.to_string()))).unwrap(),
            Some(text)
        );
        let bad = json!({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*"}]});
        assert_eq!(
            session_policy(Some(&bad)).unwrap_err().code,
            "XMinioMalformedIAMPolicy"
        );
        let huge = json!({"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"x".repeat(5000)}]});
        assert_eq!(
            session_policy(Some(&huge)).unwrap_err().code,
            "XMinioIAMServiceAccountSessionPolicyTooLarge"
        );
    }

    #[test]
    fn add_requests_parse_as_minio_py_sends_them() {
        let r: AddReq = serde_json::from_str(
            r#"{"status":"enabled","accessKey":null,"secretKey":null,"policy":{"Version":"2012-10-17","Statement":[]},"name":"ci-bot","expiration":"2030-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert!(r.access_key.is_none() && r.secret_key.is_none());
        assert_eq!(r.name.as_deref(), Some("ci-bot"));
        let now = DateTime::from_millis(1_800_000_000_000);
        assert!(
            expiration("2030-01-01T00:00:00.750Z", now)
                .unwrap()
                .timestamp_millis()
                % 1000
                == 0
        );
        assert!(expiration("2020-01-01T00:00:00Z", now).is_err());
        assert!(check_name("ci-bot_2").is_ok());
        for bad in ["2ci", "", "a b", &"a".repeat(33)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let u: UpdateReq = serde_json::from_str(r#"{"newStatus":"off","newPolicy":{}}"#).unwrap();
        assert!(parse_status(u.status.as_deref().unwrap(), true).unwrap());
        assert_eq!(session_policy(u.policy.as_ref()).unwrap(), None);
    }
}
