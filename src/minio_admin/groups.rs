//! Groups: update-group-members (add members, creating the group; remove members; remove
//! an empty group), group (info), groups (list), set-group-status. A MinIO group is an IAM
//! group of the caller's account; a disabled group's policies apply to nobody.

use serde::Deserialize;
use serde_json::json;

use super::entry::{policy_names, rfc3339, Cx, Reply};
use super::error::{AdminError, AdminResult};
use super::validate::parse_status;
use crate::storage::identity::{Group, Holder, IdentityError};

#[derive(Deserialize, Debug)]
struct GroupAddRemove {
    group: String,
    #[serde(default)]
    members: Option<Vec<String>>,
    #[serde(default, rename = "isRemove")]
    is_remove: bool,
}

fn group_arn(cx: &Cx<'_>, name: &str) -> String {
    cx.arn(&format!("group/{name}"))
}

fn no_group(name: &str) -> impl FnOnce(IdentityError) -> AdminError + '_ {
    move |e| match e {
        IdentityError::NoSuchEntity(_) => AdminError::no_such_group(name),
        e => e.into(),
    }
}

/// A group name as MinIO and IAM both accept it.
fn check_group_name(name: &str) -> AdminResult<()> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=,.@_-".contains(&b));
    if !ok {
        return Err(AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "XMinioInvalidResource",
            "a group name is 1 to 128 characters of letters, digits and +=,.@_-",
        ));
    }
    Ok(())
}

/// `PUT update-group-members` (plain JSON `{"group","members","isRemove"}`). MinIO checks
/// `admin:AddUserToGroup` for additions and removals alike.
pub async fn update_members(cx: &Cx<'_>) -> AdminResult<Reply> {
    let req: GroupAddRemove = cx.json()?;
    check_group_name(&req.group)?;
    cx.caller
        .allow("admin:AddUserToGroup", &group_arn(cx, &req.group))?;
    let store = cx.store();
    let members = req.members.unwrap_or_default();
    // Every member must be an existing user of the account (never its root credentials).
    let mut users = Vec::new();
    for m in &members {
        if *m == cx.acct().key {
            return Err(AdminError::action_not_allowed(
                "Specified IAM action is not allowed: the account's root credentials join no group",
            ));
        }
        match store.user(cx.acct(), m).await {
            Ok(u) => users.push(u),
            Err(IdentityError::NoSuchEntity(_)) => return Err(AdminError::no_such_user(m)),
            Err(e) => return Err(e.into()),
        }
    }
    if req.is_remove {
        let g = store
            .group(cx.acct(), &req.group)
            .await
            .map_err(no_group(&req.group))?;
        if users.is_empty() {
            return remove_group(cx, &g).await;
        }
        for u in &users {
            match store
                .remove_user_from_group(cx.acct(), &g.name, &u.name)
                .await
            {
                Ok(()) | Err(IdentityError::NoSuchEntity(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        return Ok(Reply::Done);
    }
    match store.group(cx.acct(), &req.group).await {
        Ok(_) => {}
        Err(IdentityError::NoSuchEntity(_)) => {
            match store.create_group(cx.acct(), &req.group, "/").await {
                // Made by someone else meanwhile: as asked.
                Ok(_) | Err(IdentityError::EntityAlreadyExists(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Err(e) => return Err(e.into()),
    }
    for u in &users {
        store
            .add_user_to_group(cx.acct(), &req.group, &u.name)
            .await
            .map_err(no_group(&req.group))?;
    }
    Ok(Reply::Done)
}

/// Removes a group that has no members, with its policy mapping (as MinIO does).
async fn remove_group(cx: &Cx<'_>, g: &Group) -> AdminResult<Reply> {
    let store = cx.store();
    let not_empty = || {
        AdminError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "XMinioAdminGroupNotEmpty",
            "The specified group is not empty - cannot remove it.",
        )
    };
    if !store.group_members(g, None, 1).await?.items.is_empty() {
        return Err(not_empty());
    }
    for arn in &g.attached {
        match store.detach(cx.acct(), Holder::Group, &g.id, arn).await {
            Ok(()) | Err(IdentityError::NoSuchEntity(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if !g.inline.is_empty() {
        store.set_group_inline(g, &[]).await?;
    }
    match store.delete_group(cx.acct(), &g.name).await {
        Ok(()) | Err(IdentityError::NoSuchEntity(_)) => Ok(Reply::Done),
        // A member joined (or a policy was attached) meanwhile.
        Err(IdentityError::DeleteConflict(_)) => Err(not_empty()),
        Err(e) => Err(e.into()),
    }
}

/// `GET group?group=`: `{"name","status","members","policy","updatedAt"}`.
pub async fn info(cx: &Cx<'_>) -> AdminResult<Reply> {
    let name = cx.required("group")?;
    cx.caller.allow("admin:GetGroup", &group_arn(cx, name))?;
    let store = cx.store();
    let g = store.group(cx.acct(), name).await.map_err(no_group(name))?;
    let mut members = Vec::new();
    let mut marker: Option<String> = None;
    loop {
        let page = store.group_members(&g, marker.as_deref(), 1000).await?;
        members.extend(page.items.into_iter().map(|u| u.name));
        match page.next {
            Some(m) => marker = Some(m),
            None => break,
        }
    }
    Ok(Reply::Json(
        json!({
            "name": g.name,
            "status": if g.disabled { "disabled" } else { "enabled" },
            "members": members,
            "policy": policy_names(&g.attached).join(","),
            "updatedAt": rfc3339(g.created),
        })
        .to_string(),
    ))
}

/// `GET groups`: the names.
pub async fn list(cx: &Cx<'_>) -> AdminResult<Reply> {
    cx.caller.allow("admin:ListGroups", &group_arn(cx, "*"))?;
    let names: Vec<String> = cx.all_groups().await?.into_iter().map(|g| g.name).collect();
    Ok(Reply::Json(json!(names).to_string()))
}

/// `PUT set-group-status?group=&status=enabled|disabled` (`admin:EnableGroup` both ways, as
/// MinIO checks).
pub async fn set_status(cx: &Cx<'_>) -> AdminResult<Reply> {
    let name = cx.required("group")?;
    let disabled = parse_status(cx.q("status").unwrap_or_default(), false)?;
    cx.caller.allow("admin:EnableGroup", &group_arn(cx, name))?;
    let store = cx.store();
    let g = store.group(cx.acct(), name).await.map_err(no_group(name))?;
    store
        .set_group_disabled(&g, disabled)
        .await
        .map_err(no_group(name))?;
    Ok(Reply::Done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_member_updates_parse() {
        let r: GroupAddRemove =
            serde_json::from_str(r#"{"group":"g1","members":["alice"],"isRemove":false}"#).unwrap();
        assert_eq!(r.members.as_deref(), Some(&["alice".to_owned()][..]));
        assert!(!r.is_remove);
        let r: GroupAddRemove = serde_json::from_str(r#"{"group":"g1","isRemove":true}"#).unwrap();
        assert!(r.is_remove && r.members.is_none());
        let r: GroupAddRemove =
            serde_json::from_str(r#"{"group":"g1","members":null,"isRemove":true}"#).unwrap();
        assert!(r.members.is_none());
        // minio-py 7.2.20 passes `members` through as given: a string is refused, as MinIO
        // refuses it.
        assert!(
            serde_json::from_str::<GroupAddRemove>(r#"{"group":"g","members":"alice"}"#).is_err()
        );
        assert!(check_group_name("devs").is_ok() && check_group_name(" devs").is_err());
    }
}
