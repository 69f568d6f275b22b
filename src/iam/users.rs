//! Users and their access keys: CreateUser, GetUser, ListUsers, UpdateUser, DeleteUser,
//! TagUser, UntagUser, ListUserTags, CreateAccessKey, ListAccessKeys, UpdateAccessKey,
//! DeleteAccessKey, GetAccessKeyLastUsed.

use super::error::{IamError, IamResult};
use super::handle::{time, Cx};
use super::query::Params;
use super::validate::{self, KeyStatus};
use super::xml::{self, AccessKeyView, KeyLastUsedView, UserView};
use crate::storage::identity::User;

/// A user as the answers show it.
pub fn view(u: &User) -> UserView {
    UserView {
        path: u.path.clone(),
        name: u.name.clone(),
        id: u.id.clone(),
        arn: u.arn(),
        created: time(u.created),
        tags: u.tags.clone(),
    }
}

/// The user named by `UserName`, or, without it, the calling user (as AWS answers GetUser,
/// ListAccessKeys, CreateAccessKey... from a user's own credentials).
async fn named_or_self(cx: &Cx<'_>, p: &Params) -> IamResult<User> {
    match p.checked("UserName", validate::existing_user_name)? {
        Some(name) => Ok(cx.store().user(cx.acct(), name).await?),
        None => match &cx.caller.user {
            Some(u) => Ok(cx.store().user(cx.acct(), &u.user.name).await?),
            None => Err(IamError::validation_error(
                "UserName is required when calling with an account's root credentials.",
            )),
        },
    }
}

fn user_arn(cx: &Cx<'_>, name: &str) -> String {
    cx.arn(&format!("user/{name}"))
}

/// Handles the users' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "CreateUser" => create_user(cx, p).await,
        "GetUser" => get_user(cx, p).await,
        "ListUsers" => list_users(cx, p).await,
        "UpdateUser" => update_user(cx, p).await,
        "DeleteUser" => delete_user(cx, p).await,
        "TagUser" => tag_user(cx, p, true).await,
        "UntagUser" => tag_user(cx, p, false).await,
        "ListUserTags" => list_user_tags(cx, p).await,
        "CreateAccessKey" => create_access_key(cx, p).await,
        "ListAccessKeys" => list_access_keys(cx, p).await,
        "UpdateAccessKey" => update_access_key(cx, p).await,
        "DeleteAccessKey" => delete_access_key(cx, p).await,
        "GetAccessKeyLastUsed" => key_last_used(cx, p).await,
        _ => return None,
    })
}

async fn create_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::user_name)?;
    let path = p.checked("Path", validate::path)?.unwrap_or("/");
    let tags = p.tags("Tags")?;
    cx.caller.allow(
        "iam:CreateUser",
        &user_arn(cx, &format!("{}{name}", &path[1..])),
    )?;
    if !tags.is_empty() {
        cx.caller.allow(
            "iam:TagUser",
            &user_arn(cx, &format!("{}{name}", &path[1..])),
        )?;
    }
    let u = cx.store().create_user(cx.acct(), name, path, &tags).await?;
    Ok(xml::create_user(&view(&u), cx.rid))
}

async fn get_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let u = named_or_self(cx, p).await?;
    cx.caller.allow("iam:GetUser", &u.arn())?;
    Ok(xml::get_user(&view(&u), cx.rid))
}

async fn list_users(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    cx.caller.allow("iam:ListUsers", &cx.arn("user/"))?;
    let prefix = p.checked("PathPrefix", validate::path_prefix)?;
    let page = cx
        .store()
        .list_users(cx.acct(), prefix, p.marker()?, p.max_items()?)
        .await?;
    let users: Vec<UserView> = page.items.iter().map(view).collect();
    Ok(xml::list_users(&users, page.next.as_deref(), cx.rid))
}

async fn update_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let new_name = p.checked("NewUserName", validate::user_name)?;
    let new_path = p.checked("NewPath", validate::path)?;
    let u = cx.store().user(cx.acct(), name).await?;
    cx.caller.allow("iam:UpdateUser", &u.arn())?;
    cx.store()
        .update_user(cx.acct(), name, new_name, new_path)
        .await?;
    Ok(xml::empty("UpdateUser", cx.rid))
}

async fn delete_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let u = cx.store().user(cx.acct(), name).await?;
    cx.caller.allow("iam:DeleteUser", &u.arn())?;
    cx.store().delete_user(cx.acct(), name).await?;
    Ok(xml::empty("DeleteUser", cx.rid))
}

/// At most 50 tags on a user, as AWS counts them after the change.
const MAX_TAGS: usize = 50;

async fn tag_user(cx: &Cx<'_>, p: &Params, add: bool) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let (adding, removing): (Vec<(String, String)>, Vec<String>) = if add {
        (p.tags("Tags")?, Vec::new())
    } else {
        (
            Vec::new(),
            p.tag_keys("TagKeys")?
                .into_iter()
                .map(str::to_owned)
                .collect(),
        )
    };
    // Compare-and-set on the tags as read: two changes at once both land, one after the other.
    for _ in 0..5 {
        let u = cx.store().user(cx.acct(), name).await?;
        cx.caller
            .allow(if add { "iam:TagUser" } else { "iam:UntagUser" }, &u.arn())?;
        let mut tags = u.tags.clone();
        for k in &removing {
            tags.retain(|(t, _)| !t.eq_ignore_ascii_case(k));
        }
        for (k, v) in &adding {
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
        if cx.store().set_user_tags(&u, &tags).await? {
            return Ok(xml::empty(
                if add { "TagUser" } else { "UntagUser" },
                cx.rid,
            ));
        }
    }
    Err(IamError::new(
        axum::http::StatusCode::CONFLICT,
        "ConcurrentModification",
        "The user's tags changed while they were being written; try again.",
    ))
}

async fn list_user_tags(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let u = cx.store().user(cx.acct(), name).await?;
    cx.caller.allow("iam:ListUserTags", &u.arn())?;
    let max = p.max_items()?;
    let start = match p.marker()? {
        None => 0,
        Some(m) => m
            .parse::<usize>()
            .ok()
            .filter(|n| *n <= u.tags.len())
            .ok_or_else(|| IamError::invalid_input("Invalid Marker."))?,
    };
    let end = (start + max).min(u.tags.len());
    let next = (end < u.tags.len()).then(|| end.to_string());
    Ok(xml::list_user_tags(
        &u.tags[start..end],
        next.as_deref(),
        cx.rid,
    ))
}

async fn create_access_key(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let target = named_or_self(cx, p).await?;
    cx.caller.allow("iam:CreateAccessKey", &target.arn())?;
    let (u, id, secret, created) = cx.store().create_user_key(cx.acct(), &target.name).await?;
    Ok(xml::create_access_key(
        &AccessKeyView {
            user_name: u.name,
            id,
            status: KeyStatus::Active,
            secret: Some(secret),
            created: time(created),
        },
        cx.rid,
    ))
}

async fn list_access_keys(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let u = named_or_self(cx, p).await?;
    cx.caller.allow("iam:ListAccessKeys", &u.arn())?;
    let keys: Vec<AccessKeyView> = cx
        .store()
        .user_keys(&u)
        .await?
        .into_iter()
        .map(|k| AccessKeyView {
            user_name: u.name.clone(),
            id: k.id,
            status: if k.active {
                KeyStatus::Active
            } else {
                KeyStatus::Inactive
            },
            secret: None,
            created: time(k.created),
        })
        .collect();
    Ok(xml::list_access_keys(&keys, None, cx.rid))
}

async fn update_access_key(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let key = p.required_checked("AccessKeyId", validate::access_key_id)?;
    let status = validate::access_key_status("Status", p.required("Status")?)?;
    let u = named_or_self(cx, p).await?;
    cx.caller.allow("iam:UpdateAccessKey", &u.arn())?;
    cx.store()
        .set_user_key_active(&u, key, status == KeyStatus::Active)
        .await?;
    Ok(xml::empty("UpdateAccessKey", cx.rid))
}

async fn delete_access_key(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let key = p.required_checked("AccessKeyId", validate::access_key_id)?;
    let u = named_or_self(cx, p).await?;
    cx.caller.allow("iam:DeleteAccessKey", &u.arn())?;
    cx.store().delete_user_key(&u, key).await?;
    Ok(xml::empty("DeleteAccessKey", cx.rid))
}

async fn key_last_used(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let key = p.required_checked("AccessKeyId", validate::access_key_id)?;
    let not_found =
        || IamError::no_such_entity(format!("The Access Key with id {key} cannot be found."));
    let info = cx
        .store()
        .meta()
        .user_key(key)
        .await
        .map_err(super::handle::db)?
        .ok_or_else(not_found)?;
    let u = cx
        .store()
        .user_by_id(&info.user)
        .await
        .map_err(super::handle::db)?
        .filter(|u| u.account == cx.acct().id)
        .ok_or_else(not_found)?;
    cx.caller.allow("iam:GetAccessKeyLastUsed", &u.arn())?;
    let last = info.last_used.map(|d| KeyLastUsedView {
        date: time(d),
        service_name: "s3".into(),
        region: cx.st.config.region.clone(),
    });
    Ok(xml::get_access_key_last_used(
        &u.name,
        last.as_ref(),
        cx.rid,
    ))
}
