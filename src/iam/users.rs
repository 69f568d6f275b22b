//! Users and their access keys: CreateUser, GetUser, ListUsers, UpdateUser, DeleteUser,
//! TagUser, UntagUser, ListUserTags, CreateAccessKey, ListAccessKeys, UpdateAccessKey,
//! DeleteAccessKey, GetAccessKeyLastUsed.

use super::context::{time, Cx, Facts};
use super::error::{IamError, IamResult};
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
            Some(u) => match u.user() {
                Some(own) => Ok(cx.store().user(cx.acct(), &own.name).await?),
                // AWS: "Must specify userName when calling with non-User credentials".
                None => Err(IamError::validation_error(
                    "Must specify userName when calling with non-User credentials",
                )),
            },
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

/// Permissions boundaries are not implemented: refused, never stored and ignored (a user
/// made without the boundary asked for would have more rights than intended).
fn no_boundary(p: &Params) -> IamResult<()> {
    if p.get("PermissionsBoundary").is_some() {
        return Err(IamError::not_implemented("PermissionsBoundary"));
    }
    Ok(())
}

/// The condition keys of an action on user `u`: its tags.
fn on(u: &User) -> Facts {
    Facts::default().resource_tags(&u.tags)
}

async fn create_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::user_name)?;
    let path = p.checked("Path", validate::path)?.unwrap_or("/");
    let tags = p.tags("Tags")?;
    no_boundary(p)?;
    let arn = user_arn(cx, &format!("{}{name}", &path[1..]));
    let facts = Facts::default().request_tags(&tags);
    cx.caller.allow_with("iam:CreateUser", &arn, &facts)?;
    if !tags.is_empty() {
        cx.caller.allow_with("iam:TagUser", &arn, &facts)?;
    }
    let u = cx.store().create_user(cx.acct(), name, path, &tags).await?;
    Ok(xml::create_user(&view(&u), cx.rid))
}

async fn get_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let u = named_or_self(cx, p).await?;
    cx.caller.allow_with("iam:GetUser", &u.arn(), &on(&u))?;
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
    cx.caller.allow_with("iam:UpdateUser", &u.arn(), &on(&u))?;
    // As AWS: the caller needs the action on the name and path it is renamed or moved to
    // as well (a user allowed to rename itself could otherwise become a name that a bucket
    // policy or a `${aws:username}` resource grants more).
    if new_name.is_some() || new_path.is_some() {
        let path = new_path.unwrap_or(&u.path);
        let target = user_arn(
            cx,
            &format!("{}{}", &path[1..], new_name.unwrap_or(&u.name)),
        );
        cx.caller.allow_with("iam:UpdateUser", &target, &on(&u))?;
    }
    cx.store()
        .update_user(cx.acct(), name, new_name, new_path)
        .await?;
    Ok(xml::empty("UpdateUser", cx.rid))
}

async fn delete_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let u = cx.store().user(cx.acct(), name).await?;
    cx.caller.allow_with("iam:DeleteUser", &u.arn(), &on(&u))?;
    cx.store().delete_user(cx.acct(), name).await?;
    Ok(xml::empty("DeleteUser", cx.rid))
}

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
        let facts = if add {
            on(&u).request_tags(&adding)
        } else {
            on(&u).tag_keys(&removing)
        };
        cx.caller.allow_with(
            if add { "iam:TagUser" } else { "iam:UntagUser" },
            &u.arn(),
            &facts,
        )?;
        let tags = super::context::merged_tags(&u.tags, &adding, &removing)?;
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
    cx.caller
        .allow_with("iam:ListUserTags", &u.arn(), &on(&u))?;
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
    cx.caller
        .allow_with("iam:CreateAccessKey", &target.arn(), &on(&target))?;
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
    cx.caller
        .allow_with("iam:ListAccessKeys", &u.arn(), &on(&u))?;
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
    cx.caller
        .allow_with("iam:UpdateAccessKey", &u.arn(), &on(&u))?;
    cx.store()
        .set_user_key_active(&u, key, status == KeyStatus::Active)
        .await?;
    Ok(xml::empty("UpdateAccessKey", cx.rid))
}

async fn delete_access_key(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let key = p.required_checked("AccessKeyId", validate::access_key_id)?;
    let u = named_or_self(cx, p).await?;
    cx.caller
        .allow_with("iam:DeleteAccessKey", &u.arn(), &on(&u))?;
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
        .map_err(super::context::db)?
        .ok_or_else(not_found)?;
    let u = cx
        .store()
        .user_by_id(&info.user)
        .await
        .map_err(super::context::db)?
        .filter(|u| u.account == cx.acct().id)
        .ok_or_else(not_found)?;
    cx.caller
        .allow_with("iam:GetAccessKeyLastUsed", &u.arn(), &on(&u))?;
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
