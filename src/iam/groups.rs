//! Groups and membership: CreateGroup, GetGroup, ListGroups, DeleteGroup, AddUserToGroup,
//! RemoveUserFromGroup, ListGroupsForUser.

use super::context::{time, Cx};
use super::error::IamResult;
use super::query::Params;
use super::validate;
use super::xml::{self, GroupView, UserView};
use crate::storage::identity::Group;

/// A group as the answers show it.
pub fn view(g: &Group) -> GroupView {
    GroupView {
        path: g.path.clone(),
        name: g.name.clone(),
        id: g.id.clone(),
        arn: g.arn(),
        created: time(g.created),
    }
}

/// Handles the groups' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "CreateGroup" => create_group(cx, p).await,
        "GetGroup" => get_group(cx, p).await,
        "ListGroups" => list_groups(cx, p).await,
        "DeleteGroup" => delete_group(cx, p).await,
        "AddUserToGroup" => membership(cx, p, true).await,
        "RemoveUserFromGroup" => membership(cx, p, false).await,
        "ListGroupsForUser" => groups_for_user(cx, p).await,
        _ => return None,
    })
}

async fn create_group(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("GroupName", validate::group_name)?;
    let path = p.checked("Path", validate::path)?.unwrap_or("/");
    cx.caller
        .allow("iam:CreateGroup", &cx.arn(&format!("group{path}{name}")))?;
    let g = cx.store().create_group(cx.acct(), name, path).await?;
    Ok(xml::create_group(&view(&g), cx.rid))
}

async fn get_group(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("GroupName", validate::group_name)?;
    let g = cx.store().group(cx.acct(), name).await?;
    cx.caller.allow("iam:GetGroup", &g.arn())?;
    let page = cx
        .store()
        .group_members(&g, p.marker()?, p.max_items()?)
        .await?;
    let users: Vec<UserView> = page.items.iter().map(super::users::view).collect();
    Ok(xml::get_group(
        &view(&g),
        &users,
        page.next.as_deref(),
        cx.rid,
    ))
}

async fn list_groups(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    cx.caller.allow("iam:ListGroups", &cx.arn("group/"))?;
    let prefix = p.checked("PathPrefix", validate::path_prefix)?;
    let page = cx
        .store()
        .list_groups(cx.acct(), prefix, p.marker()?, p.max_items()?)
        .await?;
    let groups: Vec<GroupView> = page.items.iter().map(view).collect();
    Ok(xml::list_groups(&groups, page.next.as_deref(), cx.rid))
}

async fn delete_group(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("GroupName", validate::group_name)?;
    let g = cx.store().group(cx.acct(), name).await?;
    cx.caller.allow("iam:DeleteGroup", &g.arn())?;
    cx.store().delete_group(cx.acct(), name).await?;
    Ok(xml::empty("DeleteGroup", cx.rid))
}

async fn membership(cx: &Cx<'_>, p: &Params, add: bool) -> IamResult<String> {
    let group = p.required_checked("GroupName", validate::group_name)?;
    let user = p.required_checked("UserName", validate::existing_user_name)?;
    let g = cx.store().group(cx.acct(), group).await?;
    // AWS authorizes membership changes on the group.
    cx.caller.allow(
        if add {
            "iam:AddUserToGroup"
        } else {
            "iam:RemoveUserFromGroup"
        },
        &g.arn(),
    )?;
    if add {
        cx.store().add_user_to_group(cx.acct(), group, user).await?;
        Ok(xml::empty("AddUserToGroup", cx.rid))
    } else {
        cx.store()
            .remove_user_from_group(cx.acct(), group, user)
            .await?;
        Ok(xml::empty("RemoveUserFromGroup", cx.rid))
    }
}

async fn groups_for_user(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("UserName", validate::existing_user_name)?;
    let u = cx.store().user(cx.acct(), name).await?;
    cx.caller.allow("iam:ListGroupsForUser", &u.arn())?;
    let groups = cx
        .store()
        .groups_by_id(&u.groups)
        .await
        .map_err(super::context::db)?;
    let groups: Vec<GroupView> = groups.iter().map(view).collect();
    Ok(xml::list_groups_for_user(&groups, None, cx.rid))
}
