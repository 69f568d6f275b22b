//! Roles (issue 61): CreateRole, GetRole, ListRoles, UpdateRole, UpdateRoleDescription,
//! DeleteRole, UpdateAssumeRolePolicy, TagRole, UntagRole, ListRoleTags. A role's trust policy
//! is checked by the parser that evaluates it (`auth::policy::parse_trust`): what is stored
//! is what AssumeRole enforces.

use super::context::{time, Cx, Facts};
use super::error::{IamError, IamResult};
use super::query::Params;
use super::role_xml::{self as xml, RoleView};
use super::validate;
use crate::storage::identity::{NewRole, Role, MAX_SESSION_RANGE};

/// Most characters of a trust policy (AWS's default `ACLSizePerRole` quota), whitespace not
/// counted.
pub const TRUST_MAX_CHARS: usize = 2048;

/// Handles the roles' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "CreateRole" => create_role(cx, p).await,
        "GetRole" => get_role(cx, p).await,
        "ListRoles" => list_roles(cx, p).await,
        "UpdateRole" => update_role(cx, p, false).await,
        "UpdateRoleDescription" => update_role(cx, p, true).await,
        "DeleteRole" => delete_role(cx, p).await,
        "UpdateAssumeRolePolicy" => update_trust(cx, p).await,
        "TagRole" => tag_role(cx, p, true).await,
        "UntagRole" => tag_role(cx, p, false).await,
        "ListRoleTags" => list_tags(cx, p).await,
        _ => return None,
    })
}

/// A role as the answers show it.
pub fn view(r: &Role) -> RoleView {
    RoleView {
        name: r.name.clone(),
        id: r.id.clone(),
        arn: r.arn(),
        path: r.path.clone(),
        created: time(r.created),
        trust: r.trust.clone(),
        description: r.description.clone(),
        max_session: r.max_session,
        tags: r.tags.clone(),
        last_used: r.last_used.map(time),
    }
}

/// The condition keys of an action on role `r`: its tags.
pub fn on(r: &Role) -> Facts {
    Facts::default().resource_tags(&r.tags)
}

/// The role a request names (`RoleName`).
pub async fn named(cx: &Cx<'_>, p: &Params) -> IamResult<Role> {
    let name = p.required_checked("RoleName", validate::role_name)?;
    Ok(cx.store().role(cx.acct(), name).await?)
}

/// A trust policy as the protocol allows it and the policy engine accepts it.
fn trust_document(p: &Params, param: &str) -> IamResult<String> {
    let doc = p.required_checked(param, validate::policy_document)?;
    if validate::policy_size(doc) > TRUST_MAX_CHARS {
        return Err(IamError::limit_exceeded(format!(
            "Cannot exceed quota for ACLSizePerRole: {TRUST_MAX_CHARS}"
        )));
    }
    crate::auth::policy::parse_trust(doc)
        .map_err(|e| IamError::malformed_policy_document(e.message))?;
    Ok(doc.to_owned())
}

/// `MaxSessionDuration` within 1 to 12 hours.
fn max_session(p: &Params) -> IamResult<Option<i64>> {
    let Some(v) = p.get("MaxSessionDuration") else {
        return Ok(None);
    };
    match v.parse::<i64>() {
        Ok(n) if MAX_SESSION_RANGE.contains(&n) => Ok(Some(n)),
        _ => Err(IamError::validation_value(
            "maxSessionDuration",
            v,
            "Member must have value greater than or equal to 3600 and less than or equal to 43200",
        )),
    }
}

async fn create_role(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("RoleName", validate::role_name)?;
    let path = p.checked("Path", validate::path)?.unwrap_or("/");
    let description = p
        .checked("Description", validate::description)?
        .unwrap_or_default();
    let trust = trust_document(p, "AssumeRolePolicyDocument")?;
    let max = max_session(p)?.unwrap_or(3600);
    let tags = p.tags("Tags")?;
    // Not implemented: refused, never stored and ignored (a role without the boundary asked
    // for would grant more than intended).
    if p.get("PermissionsBoundary").is_some() {
        return Err(IamError::not_implemented("PermissionsBoundary"));
    }
    let arn = cx.arn(&format!("role{path}{name}"));
    let facts = Facts::default().request_tags(&tags);
    cx.caller.allow_with("iam:CreateRole", &arn, &facts)?;
    if !tags.is_empty() {
        cx.caller.allow_with("iam:TagRole", &arn, &facts)?;
    }
    let r = cx
        .store()
        .create_role(
            cx.acct(),
            NewRole {
                name,
                path,
                trust: &trust,
                description,
                max_session: max,
                tags: &tags,
            },
        )
        .await?;
    Ok(xml::role_result("CreateRole", &view(&r), cx.rid))
}

async fn get_role(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let r = named(cx, p).await?;
    cx.caller.allow_with("iam:GetRole", &r.arn(), &on(&r))?;
    Ok(xml::role_result("GetRole", &view(&r), cx.rid))
}

async fn list_roles(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    cx.caller.allow("iam:ListRoles", &cx.arn("role/"))?;
    let prefix = p.checked("PathPrefix", validate::path_prefix)?;
    let page = cx
        .store()
        .list_roles(cx.acct(), prefix, p.marker()?, p.max_items()?)
        .await?;
    let roles: Vec<RoleView> = page.items.iter().map(view).collect();
    Ok(xml::list_roles(&roles, page.next.as_deref(), cx.rid))
}

fn conflict(what: &str) -> IamError {
    IamError::new(
        axum::http::StatusCode::CONFLICT,
        "ConcurrentModification",
        format!("The role's {what} changed while being written; try again."),
    )
}

async fn update_role(cx: &Cx<'_>, p: &Params, description_only: bool) -> IamResult<String> {
    let description = if description_only {
        Some(p.required_checked("Description", validate::description)?)
    } else {
        p.checked("Description", validate::description)?
    };
    let max = if description_only {
        None
    } else {
        max_session(p)?
    };
    let (action, answer) = if description_only {
        ("iam:UpdateRoleDescription", "UpdateRoleDescription")
    } else {
        ("iam:UpdateRole", "UpdateRole")
    };
    for _ in 0..5 {
        let r = named(cx, p).await?;
        cx.caller.allow_with(action, &r.arn(), &on(&r))?;
        if cx.store().update_role(&r, description, max).await? {
            if description_only {
                let r = named(cx, p).await?;
                return Ok(xml::update_role_description(&view(&r), cx.rid));
            }
            return Ok(super::xml::empty(answer, cx.rid));
        }
    }
    Err(conflict("settings"))
}

async fn delete_role(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let r = named(cx, p).await?;
    cx.caller.allow_with("iam:DeleteRole", &r.arn(), &on(&r))?;
    cx.store().delete_role(cx.acct(), &r.name).await?;
    Ok(super::xml::empty("DeleteRole", cx.rid))
}

async fn update_trust(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let trust = trust_document(p, "PolicyDocument")?;
    for _ in 0..5 {
        let r = named(cx, p).await?;
        cx.caller
            .allow_with("iam:UpdateAssumeRolePolicy", &r.arn(), &on(&r))?;
        if cx.store().set_role_trust(&r, &trust).await? {
            return Ok(super::xml::empty("UpdateAssumeRolePolicy", cx.rid));
        }
    }
    Err(conflict("trust policy"))
}

async fn tag_role(cx: &Cx<'_>, p: &Params, add: bool) -> IamResult<String> {
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
    for _ in 0..5 {
        let r = named(cx, p).await?;
        let facts = if add {
            on(&r).request_tags(&adding)
        } else {
            on(&r).tag_keys(&removing)
        };
        let action = if add { "iam:TagRole" } else { "iam:UntagRole" };
        cx.caller.allow_with(action, &r.arn(), &facts)?;
        let tags = super::context::merged_tags(&r.tags, &adding, &removing)?;
        if cx.store().set_role_tags(&r, &tags).await? {
            let answer = if add { "TagRole" } else { "UntagRole" };
            return Ok(super::xml::empty(answer, cx.rid));
        }
    }
    Err(conflict("tags"))
}

async fn list_tags(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let r = named(cx, p).await?;
    cx.caller
        .allow_with("iam:ListRoleTags", &r.arn(), &on(&r))?;
    Ok(xml::list_role_tags(&r.tags, cx.rid))
}
