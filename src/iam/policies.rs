//! Customer managed policies, their versions and attachments: CreatePolicy, GetPolicy,
//! ListPolicies, DeletePolicy, CreatePolicyVersion, GetPolicyVersion, ListPolicyVersions,
//! SetDefaultPolicyVersion, DeletePolicyVersion, Attach/Detach/ListAttached User/Group
//! Policies, ListEntitiesForPolicy. Documents are checked by the same parser that evaluates
//! them (`auth::policy::parse_identity`): what is stored is what is enforced.

use super::context::{time, Cx, Facts};
use super::error::{IamError, IamResult};
use super::query::Params;
use super::validate;
use super::xml::{self, AttachedPolicyView, EntityView, PolicyVersionView, PolicyView};
use crate::storage::identity::{Holder, ManagedPolicy};

/// A policy document as the protocol allows it and the policy engine accepts it.
pub fn checked_document(p: &Params, param: &str) -> IamResult<String> {
    let doc = p.required_checked(param, validate::policy_document)?;
    crate::auth::policy::parse_identity(doc)
        .map_err(|e| IamError::malformed_policy_document(e.message))?;
    Ok(doc.to_owned())
}

fn view(p: &ManagedPolicy) -> PolicyView {
    PolicyView {
        name: p.name.clone(),
        id: p.id.clone(),
        arn: p.arn(),
        path: p.path.clone(),
        default_version_id: p.default_version.clone(),
        attachment_count: p.attachments.max(0) as u64,
        is_attachable: true,
        description: p.description.clone(),
        created: time(p.created),
        updated: time(p.updated),
        tags: p.tags.clone(),
    }
}

/// Handles the managed policies' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "CreatePolicy" => create_policy(cx, p).await,
        "GetPolicy" => get_policy(cx, p).await,
        "ListPolicies" => list_policies(cx, p).await,
        "DeletePolicy" => delete_policy(cx, p).await,
        "CreatePolicyVersion" => create_version(cx, p).await,
        "GetPolicyVersion" => get_version(cx, p).await,
        "ListPolicyVersions" => list_versions(cx, p).await,
        "SetDefaultPolicyVersion" => set_default(cx, p).await,
        "DeletePolicyVersion" => delete_version(cx, p).await,
        "AttachUserPolicy" => attach(cx, p, Holder::User, true).await,
        "DetachUserPolicy" => attach(cx, p, Holder::User, false).await,
        "AttachGroupPolicy" => attach(cx, p, Holder::Group, true).await,
        "DetachGroupPolicy" => attach(cx, p, Holder::Group, false).await,
        "ListAttachedUserPolicies" => list_attached(cx, p, Holder::User).await,
        "ListAttachedGroupPolicies" => list_attached(cx, p, Holder::Group).await,
        "AttachRolePolicy" => attach(cx, p, Holder::Role, true).await,
        "DetachRolePolicy" => attach(cx, p, Holder::Role, false).await,
        "ListAttachedRolePolicies" => list_attached(cx, p, Holder::Role).await,
        "ListEntitiesForPolicy" => entities(cx, p).await,
        _ => return None,
    })
}

/// The policy `PolicyArn` names, in the caller's account.
async fn named(cx: &Cx<'_>, p: &Params) -> IamResult<ManagedPolicy> {
    let arn = validate::policy_arn("PolicyArn", p.required("PolicyArn")?)?;
    Ok(cx.store().policy(cx.acct(), &arn.to_string()).await?)
}

async fn create_policy(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let name = p.required_checked("PolicyName", validate::policy_name)?;
    let path = p.checked("Path", validate::policy_path)?.unwrap_or("/");
    let description = p.checked("Description", validate::description)?;
    let tags = p.tags("Tags")?;
    let doc = checked_document(p, "PolicyDocument")?;
    validate::managed_policy_size(&doc)?;
    let arn = cx.arn(&format!("policy{path}{name}"));
    let facts = Facts::default().request_tags(&tags);
    cx.caller.allow_with("iam:CreatePolicy", &arn, &facts)?;
    if !tags.is_empty() {
        cx.caller.allow_with("iam:TagPolicy", &arn, &facts)?;
    }
    let created = cx
        .store()
        .create_policy(cx.acct(), name, path, description, &doc, &tags)
        .await?;
    Ok(xml::create_policy(&view(&created), cx.rid))
}

async fn get_policy(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:GetPolicy", &pol.arn())?;
    Ok(xml::get_policy(&view(&pol), cx.rid))
}

async fn list_policies(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    cx.caller.allow("iam:ListPolicies", &cx.arn("policy/"))?;
    let scope = p.get("Scope").unwrap_or("All");
    validate::one_of("Scope", scope, &["All", "AWS", "Local"])?;
    let prefix = p.checked("PathPrefix", validate::path_prefix)?;
    let only_attached = p.bool("OnlyAttached")?.unwrap_or(false);
    // Every policy grids3 stores is a permissions policy; none is a permissions boundary
    // (boundaries are not implemented), so that filter selects none.
    let usage = p.get("PolicyUsageFilter");
    if let Some(u) = usage {
        validate::one_of(
            "PolicyUsageFilter",
            u,
            &["PermissionsPolicy", "PermissionsBoundary"],
        )?;
    }
    if scope == "AWS" || usage == Some("PermissionsBoundary") {
        // grids3 has no AWS managed policies.
        return Ok(xml::list_policies(&[], None, cx.rid));
    }
    let page = cx
        .store()
        .list_policies(
            cx.acct(),
            only_attached,
            prefix,
            p.marker()?,
            p.max_items()?,
        )
        .await?;
    let views: Vec<PolicyView> = page.items.iter().map(view).collect();
    Ok(xml::list_policies(&views, page.next.as_deref(), cx.rid))
}

async fn delete_policy(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:DeletePolicy", &pol.arn())?;
    cx.store().delete_policy(cx.acct(), &pol.arn()).await?;
    Ok(xml::empty("DeletePolicy", cx.rid))
}

async fn create_version(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let doc = checked_document(p, "PolicyDocument")?;
    validate::managed_policy_size(&doc)?;
    let default = p.bool("SetAsDefault")?.unwrap_or(false);
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:CreatePolicyVersion", &pol.arn())?;
    let v = cx
        .store()
        .create_policy_version(cx.acct(), &pol.arn(), &doc, default)
        .await?;
    Ok(xml::create_policy_version(
        &PolicyVersionView {
            document: v.document,
            version_id: v.id,
            is_default: default,
            created: time(v.created),
        },
        cx.rid,
    ))
}

async fn get_version(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let id = p.required_checked("VersionId", validate::version_id)?;
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:GetPolicyVersion", &pol.arn())?;
    let v = pol.versions.iter().find(|v| v.id == id).ok_or_else(|| {
        IamError::no_such_entity(format!(
            "Policy {} version {id} does not exist or is not attachable.",
            pol.arn()
        ))
    })?;
    Ok(xml::get_policy_version(
        &PolicyVersionView {
            document: v.document.clone(),
            version_id: v.id.clone(),
            is_default: v.id == pol.default_version,
            created: time(v.created),
        },
        cx.rid,
    ))
}

async fn list_versions(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:ListPolicyVersions", &pol.arn())?;
    // Newest first, as AWS lists them.
    let versions: Vec<PolicyVersionView> = pol
        .versions
        .iter()
        .rev()
        .map(|v| PolicyVersionView {
            document: v.document.clone(),
            version_id: v.id.clone(),
            is_default: v.id == pol.default_version,
            created: time(v.created),
        })
        .collect();
    Ok(xml::list_policy_versions(&versions, None, cx.rid))
}

async fn set_default(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let id = p.required_checked("VersionId", validate::version_id)?;
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:SetDefaultPolicyVersion", &pol.arn())?;
    cx.store()
        .set_default_version(cx.acct(), &pol.arn(), id)
        .await?;
    Ok(xml::empty("SetDefaultPolicyVersion", cx.rid))
}

async fn delete_version(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let id = p.required_checked("VersionId", validate::version_id)?;
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:DeletePolicyVersion", &pol.arn())?;
    cx.store()
        .delete_policy_version(cx.acct(), &pol.arn(), id)
        .await?;
    Ok(xml::empty("DeletePolicyVersion", cx.rid))
}

/// The user or group a request names: its id, ARN, attached policies and the condition keys
/// of acting on it (a user's tags).
async fn holder(
    cx: &Cx<'_>,
    p: &Params,
    h: Holder,
) -> IamResult<(String, String, Vec<String>, Facts)> {
    Ok(match h {
        Holder::User => {
            let name = p.required_checked("UserName", validate::existing_user_name)?;
            let u = cx.store().user(cx.acct(), name).await?;
            let facts = Facts::default().resource_tags(&u.tags);
            (u.id.clone(), u.arn(), u.attached, facts)
        }
        Holder::Group => {
            let name = p.required_checked("GroupName", validate::group_name)?;
            let g = cx.store().group(cx.acct(), name).await?;
            (g.id.clone(), g.arn(), g.attached, Facts::default())
        }
        Holder::Role => {
            let r = super::roles::named(cx, p).await?;
            let facts = super::roles::on(&r);
            (r.id.clone(), r.arn(), r.attached, facts)
        }
    })
}

async fn attach(cx: &Cx<'_>, p: &Params, h: Holder, on: bool) -> IamResult<String> {
    let arn = validate::policy_arn("PolicyArn", p.required("PolicyArn")?)?.to_string();
    let (id, holder_arn, _, facts) = holder(cx, p, h).await?;
    let (action, answer) = match (h, on) {
        (Holder::User, true) => ("iam:AttachUserPolicy", "AttachUserPolicy"),
        (Holder::User, false) => ("iam:DetachUserPolicy", "DetachUserPolicy"),
        (Holder::Group, true) => ("iam:AttachGroupPolicy", "AttachGroupPolicy"),
        (Holder::Group, false) => ("iam:DetachGroupPolicy", "DetachGroupPolicy"),
        (Holder::Role, true) => ("iam:AttachRolePolicy", "AttachRolePolicy"),
        (Holder::Role, false) => ("iam:DetachRolePolicy", "DetachRolePolicy"),
    };
    // AWS authorizes attaching on the user or group (iam:PolicyARN is the condition key
    // that limits which policies).
    cx.caller
        .allow_with(action, &holder_arn, &facts.policy_arn(&arn))?;
    if on {
        cx.store().attach(cx.acct(), h, &id, &arn).await?;
    } else {
        cx.store().detach(cx.acct(), h, &id, &arn).await?;
    }
    Ok(xml::empty(answer, cx.rid))
}

async fn list_attached(cx: &Cx<'_>, p: &Params, h: Holder) -> IamResult<String> {
    let (_, holder_arn, attached, facts) = holder(cx, p, h).await?;
    let action = match h {
        Holder::User => "iam:ListAttachedUserPolicies",
        Holder::Group => "iam:ListAttachedGroupPolicies",
        Holder::Role => "iam:ListAttachedRolePolicies",
    };
    cx.caller.allow_with(action, &holder_arn, &facts)?;
    let list: Vec<AttachedPolicyView> = attached
        .iter()
        .map(|arn| AttachedPolicyView {
            name: arn.rsplit('/').next().unwrap_or_default().to_owned(),
            arn: arn.clone(),
        })
        .collect();
    Ok(match h {
        Holder::User => xml::list_attached_user_policies(&list, None, cx.rid),
        Holder::Group => xml::list_attached_group_policies(&list, None, cx.rid),
        Holder::Role => super::role_xml::list_attached_role_policies(&attached, cx.rid),
    })
}

async fn entities(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pol = named(cx, p).await?;
    cx.caller.allow("iam:ListEntitiesForPolicy", &pol.arn())?;
    let found = cx
        .store()
        .entities_for_policy(cx.acct(), &pol.arn())
        .await?;
    let filter = p.get("EntityFilter");
    if let Some(f) = filter {
        validate::one_of(
            "EntityFilter",
            f,
            &[
                "User",
                "Role",
                "Group",
                "LocalManagedPolicy",
                "AWSManagedPolicy",
            ],
        )?;
    }
    let keep = |kind: &str| filter.is_none_or(|f| f == kind);
    let as_views = |v: Vec<(String, String)>| -> Vec<EntityView> {
        v.into_iter()
            .map(|(name, id)| EntityView { name, id })
            .collect()
    };
    let pick = |kind: &str, v: Vec<(String, String)>| {
        if keep(kind) {
            as_views(v)
        } else {
            Vec::new()
        }
    };
    let users = pick("User", found.users);
    let groups = pick("Group", found.groups);
    let roles = pick("Role", found.roles);
    Ok(xml::list_entities_for_policy(
        &groups, &users, &roles, None, cx.rid,
    ))
}
