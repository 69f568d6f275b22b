//! A role's inline policies (issue 61): Put/Get/Delete/List RolePolicy. Changes are
//! compare-and-set on the role's policies as read, as users' and groups' are (`inline`).
//! Attaching managed policies to roles is `policies`' (with users' and groups').

use super::context::Cx;
use super::error::{IamError, IamResult};
use super::query::Params;
use super::role_xml as xml;
use super::roles::{named, on};
use super::validate::{self, InlineOwner};

/// Handles the role policies' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "PutRolePolicy" => put(cx, p).await,
        "GetRolePolicy" => get(cx, p).await,
        "DeleteRolePolicy" => delete(cx, p).await,
        "ListRolePolicies" => list(cx, p).await,
        _ => return None,
    })
}

fn missing(role: &str, name: &str) -> IamError {
    IamError::no_such_entity(format!(
        "The role policy with name {name} cannot be found (role {role})."
    ))
}

fn conflict() -> IamError {
    IamError::new(
        axum::http::StatusCode::CONFLICT,
        "ConcurrentModification",
        "The role's policies changed while this one was being written; try again.",
    )
}

async fn put(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("PolicyName", validate::policy_name)?;
    let doc = super::policies::checked_document(p, "PolicyDocument")?;
    for _ in 0..5 {
        let r = named(cx, p).await?;
        cx.caller
            .allow_with("iam:PutRolePolicy", &r.arn(), &on(&r))?;
        let mut inline = r.inline.clone();
        inline.retain(|(n, _)| n != name);
        inline.push((name.to_owned(), doc.clone()));
        let total = inline.iter().map(|(_, d)| validate::policy_size(d)).sum();
        validate::inline_policies_size(InlineOwner::Role, &r.name, total)?;
        if cx.store().set_role_inline(&r, &inline).await? {
            return Ok(super::xml::empty("PutRolePolicy", cx.rid));
        }
    }
    Err(conflict())
}

async fn get(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("PolicyName", validate::policy_name)?;
    let r = named(cx, p).await?;
    cx.caller
        .allow_with("iam:GetRolePolicy", &r.arn(), &on(&r))?;
    let (n, d) = r
        .inline
        .iter()
        .find(|(n, _)| n == name)
        .ok_or_else(|| missing(&r.name, name))?;
    Ok(xml::get_role_policy(&r.name, n, d, cx.rid))
}

async fn delete(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("PolicyName", validate::policy_name)?;
    for _ in 0..5 {
        let r = named(cx, p).await?;
        cx.caller
            .allow_with("iam:DeleteRolePolicy", &r.arn(), &on(&r))?;
        if !r.inline.iter().any(|(n, _)| n == name) {
            return Err(missing(&r.name, name));
        }
        let mut inline = r.inline.clone();
        inline.retain(|(n, _)| n != name);
        if cx.store().set_role_inline(&r, &inline).await? {
            return Ok(super::xml::empty("DeleteRolePolicy", cx.rid));
        }
    }
    Err(conflict())
}

async fn list(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let r = named(cx, p).await?;
    cx.caller
        .allow_with("iam:ListRolePolicies", &r.arn(), &on(&r))?;
    let mut names: Vec<String> = r.inline.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    Ok(xml::list_role_policies(&names, cx.rid))
}
