//! Users: add-user, remove-user, user-info, list-users, set-user-status. A MinIO user is an
//! IAM user of the caller's account named by its access key, with one key of that id.

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::entry::{policy_names, rfc3339, Cx, Reply};
use super::error::{AdminError, AdminResult};
use super::validate::{check_access_key, check_secret_key, parse_status};
use crate::storage::identity::{Group, IdentityError, User};

#[derive(Deserialize)]
struct AddUserReq {
    #[serde(rename = "secretKey")]
    secret_key: String,
    #[serde(default)]
    status: String,
    // `policy` is ignored, as MinIO ignores it since CVE-2021-43858 (a user could name its
    // own policy while changing its password).
}

fn user_arn(cx: &Cx<'_>, name: &str) -> String {
    cx.arn(&format!("user/{name}"))
}

fn no_user(name: &str) -> impl FnOnce(IdentityError) -> AdminError + '_ {
    move |e| match e {
        IdentityError::NoSuchEntity(_) => AdminError::no_such_user(name),
        e => e.into(),
    }
}

/// `PUT add-user?accessKey=`: creates the user with its key, or replaces an existing user's
/// secret (and status).
pub async fn add(cx: &Cx<'_>) -> AdminResult<Reply> {
    let key = cx.required("accessKey")?;
    check_access_key(key)?;
    let req: AddUserReq = cx.json()?;
    check_secret_key(&req.secret_key)?;
    let own = cx.own_user() == Some(key);
    if own && cx.caller.access_key != key {
        // A service account does not change its parent's secret (MinIO refuses it too).
        return Err(AdminError::credentials_not_allowed(
            "a service account cannot change its parent's credentials",
        ));
    }
    if own {
        // Changing one's own secret: allowed unless denied (its session policies must allow).
        cx.caller
            .allow_own("admin:CreateUser", &user_arn(cx, key))?;
    } else {
        cx.caller.allow("admin:CreateUser", &user_arn(cx, key))?;
    }
    if key == cx.acct().key {
        return Err(AdminError::credentials_not_allowed(
            "Credential is not allowed to be same as admin access key",
        ));
    }
    let disabled = match req.status.as_str() {
        "" => None,
        s => Some(parse_status(s, false)?),
    };
    let store = cx.store();
    let u = match store.user(cx.acct(), key).await {
        Ok(u) => {
            // The user's own key of that id: its secret is replaced. Any other key of that
            // id (a service account's, another account's) is not a user's to change.
            match cx.meta().user_key(key).await? {
                Some(k) if k.user == u.id => {
                    store.set_user_key_secret(&u, key, &req.secret_key).await?
                }
                _ => {
                    return Err(AdminError::credentials_not_allowed(
                        "The access key is in use by another credential",
                    ))
                }
            }
            u
        }
        Err(IdentityError::NoSuchEntity(_)) => {
            match store
                .create_user_with_key(cx.acct(), key, key, &req.secret_key)
                .await
            {
                Err(IdentityError::EntityAlreadyExists(_)) => {
                    return Err(AdminError::credentials_not_allowed(
                        "The access key is in use by another credential",
                    ))
                }
                r => r?,
            }
        }
        Err(e) => return Err(e.into()),
    };
    // One's own status is not one's own to change.
    if let (Some(d), false) = (disabled, own) {
        if d != u.disabled {
            store.set_user_disabled(&u, d).await?;
        }
    }
    Ok(Reply::Done)
}

/// `DELETE remove-user?accessKey=`: removes the user with everything that refers to it
/// (groups, policies, keys, service accounts), as MinIO does. A missing user is no error.
pub async fn remove(cx: &Cx<'_>) -> AdminResult<Reply> {
    let key = cx.required("accessKey")?;
    if key == cx.acct().key || cx.own_user() == Some(key) {
        return Err(AdminError::action_not_allowed(
            "Specified IAM action is not allowed: a credential cannot remove itself or its account",
        ));
    }
    cx.caller.allow("admin:DeleteUser", &user_arn(cx, key))?;
    let store = cx.store();
    let u = match store.user(cx.acct(), key).await {
        Ok(u) => u,
        Err(IdentityError::NoSuchEntity(_)) => return Ok(Reply::Done),
        Err(e) => return Err(e.into()),
    };
    // Its service accounts first: a crash after this leaves a user without them, never
    // service accounts of a user that is gone (those would sign nothing anyway).
    cx.meta().delete_service_accounts_of_user(&u.id).await?;
    for g in store.groups_by_id(&u.groups).await? {
        ignore_missing(
            store
                .remove_user_from_group(cx.acct(), &g.name, &u.name)
                .await,
        )?;
    }
    for arn in &u.attached {
        ignore_missing(
            store
                .detach(
                    cx.acct(),
                    crate::storage::identity::Holder::User,
                    &u.id,
                    arn,
                )
                .await,
        )?;
    }
    if !u.inline.is_empty() {
        store.set_user_inline(&u, &[]).await?;
    }
    for k in store.user_keys(&u).await? {
        ignore_missing(store.delete_user_key(&u, &k.id).await)?;
    }
    ignore_missing(store.delete_user(cx.acct(), &u.name).await)?;
    Ok(Reply::Done)
}

/// A step of a removal that someone else did first is done.
fn ignore_missing(r: Result<(), IdentityError>) -> AdminResult<()> {
    match r {
        Ok(()) | Err(IdentityError::NoSuchEntity(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// MinIO's `UserInfo` of a user.
fn user_info(u: &User, groups: &[Group]) -> Value {
    let mut m = Map::new();
    let policies = policy_names(&u.attached);
    if !policies.is_empty() {
        m.insert("policyName".into(), json!(policies.join(",")));
    }
    m.insert(
        "status".into(),
        json!(if u.disabled { "disabled" } else { "enabled" }),
    );
    let member_of: Vec<&str> = groups
        .iter()
        .filter(|g| u.groups.contains(&g.id))
        .map(|g| g.name.as_str())
        .collect();
    if !member_of.is_empty() {
        m.insert("memberOf".into(), json!(member_of));
    }
    m.insert("updatedAt".into(), json!(rfc3339(u.created)));
    Value::Object(m)
}

/// `GET user-info?accessKey=`.
pub async fn info(cx: &Cx<'_>) -> AdminResult<Reply> {
    let key = cx.required("accessKey")?;
    if cx.own_user() == Some(key) {
        cx.caller.allow_own("admin:GetUser", &user_arn(cx, key))?;
    } else {
        cx.caller.allow("admin:GetUser", &user_arn(cx, key))?;
    }
    let u = cx
        .store()
        .user(cx.acct(), key)
        .await
        .map_err(no_user(key))?;
    let groups = cx.store().groups_by_id(&u.groups).await?;
    Ok(Reply::Json(user_info(&u, &groups).to_string()))
}

/// `GET list-users`: `{ "<accessKey>": UserInfo, ... }`, sealed.
pub async fn list(cx: &Cx<'_>) -> AdminResult<Reply> {
    cx.caller.allow("admin:ListUsers", &user_arn(cx, "*"))?;
    let users = cx.all_users().await?;
    let groups = cx.all_groups().await?;
    let m: Map<String, Value> = users
        .iter()
        .map(|u| (u.name.clone(), user_info(u, &groups)))
        .collect();
    Ok(Reply::Json(Value::Object(m).to_string()))
}

/// `PUT set-user-status?accessKey=&status=enabled|disabled`.
pub async fn set_status(cx: &Cx<'_>) -> AdminResult<Reply> {
    let key = cx.required("accessKey")?;
    let disabled = parse_status(cx.q("status").unwrap_or_default(), false)?;
    if cx.own_user() == Some(key) {
        return Err(AdminError::invalid_argument(
            "a user cannot change its own status",
        ));
    }
    // MinIO checks admin:EnableUser for both directions.
    cx.caller.allow("admin:EnableUser", &user_arn(cx, key))?;
    let store = cx.store();
    let u = store.user(cx.acct(), key).await.map_err(no_user(key))?;
    store
        .set_user_disabled(&u, disabled)
        .await
        .map_err(no_user(key))?;
    Ok(Reply::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_user_bodies_parse_and_ignore_a_policy() {
        let r: AddUserReq = serde_json::from_str(
            r#"{"status":"enabled","secretKey":"s3cr3t-key","policy":"readwrite"}"#,
        )
        .unwrap();
        assert_eq!(
            (r.secret_key.as_str(), r.status.as_str()),
            ("s3cr3t-key", "enabled")
        );
        assert!(serde_json::from_str::<AddUserReq>(r#"{"status":"enabled"}"#).is_err());
    }
}
