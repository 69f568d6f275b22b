//! GetAccountAuthorizationDetails: every user, group and customer managed policy of the
//! caller's account with what is attached to each and the documents, in one answer (as AWS
//! has it, for audits). Pages of up to `MaxItems` entities each kind; grids3 answers the
//! whole account in one page up to 1,000 of each kind and refuses a larger account's request
//! with a marker it cannot honour rather than cut it silently.

use super::context::{time, Cx};
use super::error::{IamError, IamResult};
use super::query::Params;
use super::xml::{encode_document, timestamp};
use crate::xml::escape;

/// Handles GetAccountAuthorizationDetails (`None`: another action).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    (action == "GetAccountAuthorizationDetails").then_some(())?;
    Some(details(cx, p).await)
}

fn el(out: &mut String, tag: &str, text: &str) {
    out.push_str(&format!("<{tag}>{}</{tag}>", escape(text)));
}

fn attached(out: &mut String, arns: &[String]) {
    out.push_str("<AttachedManagedPolicies>");
    for a in arns {
        out.push_str("<member>");
        el(out, "PolicyName", a.rsplit('/').next().unwrap_or_default());
        el(out, "PolicyArn", a);
        out.push_str("</member>");
    }
    out.push_str("</AttachedManagedPolicies>");
}

fn inline(out: &mut String, tag: &str, list: &[(String, String)]) {
    out.push_str(&format!("<{tag}>"));
    for (n, d) in list {
        out.push_str("<member>");
        el(out, "PolicyName", n);
        el(out, "PolicyDocument", &encode_document(d));
        out.push_str("</member>");
    }
    out.push_str(&format!("</{tag}>"));
}

async fn details(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    cx.caller.allow("iam:GetAccountAuthorizationDetails", "*")?;
    if p.marker()?.is_some() {
        return Err(IamError::invalid_input(
            "grids3 answers GetAccountAuthorizationDetails in one page; this Marker is not one it gave.",
        ));
    }
    let filter = p.list("Filter")?;
    for f in &filter {
        super::validate::one_of(
            "Filter",
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
    let wants = |k: &str| filter.is_empty() || filter.contains(&k);
    const ALL: usize = 1000;
    let s = cx.store();
    let too_many = || {
        IamError::limit_exceeded(
            "The account has more than 1,000 users, groups or policies: GetAccountAuthorizationDetails is answered in one page by grids3.",
        )
    };
    let mut out = String::new();
    out.push_str("<UserDetailList>");
    if wants("User") {
        let users = s.list_users(cx.acct(), None, None, ALL).await?;
        if users.next.is_some() {
            return Err(too_many());
        }
        for u in &users.items {
            let groups = s
                .groups_by_id(&u.groups)
                .await
                .map_err(super::context::db)?;
            out.push_str("<member>");
            el(&mut out, "Path", &u.path);
            el(&mut out, "UserName", &u.name);
            el(&mut out, "UserId", &u.id);
            el(&mut out, "Arn", &u.arn());
            el(&mut out, "CreateDate", &timestamp(&time(u.created)));
            inline(&mut out, "UserPolicyList", &u.inline);
            out.push_str("<GroupList>");
            for g in &groups {
                el(&mut out, "member", &g.name);
            }
            out.push_str("</GroupList>");
            attached(&mut out, &u.attached);
            out.push_str("<Tags>");
            for (k, v) in &u.tags {
                out.push_str("<member>");
                el(&mut out, "Key", k);
                el(&mut out, "Value", v);
                out.push_str("</member>");
            }
            out.push_str("</Tags></member>");
        }
    }
    out.push_str("</UserDetailList><GroupDetailList>");
    if wants("Group") {
        let groups = s.list_groups(cx.acct(), None, None, ALL).await?;
        if groups.next.is_some() {
            return Err(too_many());
        }
        for g in &groups.items {
            out.push_str("<member>");
            el(&mut out, "Path", &g.path);
            el(&mut out, "GroupName", &g.name);
            el(&mut out, "GroupId", &g.id);
            el(&mut out, "Arn", &g.arn());
            el(&mut out, "CreateDate", &timestamp(&time(g.created)));
            inline(&mut out, "GroupPolicyList", &g.inline);
            attached(&mut out, &g.attached);
            out.push_str("</member>");
        }
    }
    out.push_str("</GroupDetailList><RoleDetailList/><Policies>");
    if wants("LocalManagedPolicy") {
        let policies = s.list_policies(cx.acct(), false, None, None, ALL).await?;
        if policies.next.is_some() {
            return Err(too_many());
        }
        for m in &policies.items {
            out.push_str("<member>");
            el(&mut out, "PolicyName", &m.name);
            el(&mut out, "PolicyId", &m.id);
            el(&mut out, "Arn", &m.arn());
            el(&mut out, "Path", &m.path);
            el(&mut out, "DefaultVersionId", &m.default_version);
            el(
                &mut out,
                "AttachmentCount",
                &m.attachments.max(0).to_string(),
            );
            el(&mut out, "IsAttachable", "true");
            el(&mut out, "CreateDate", &timestamp(&time(m.created)));
            el(&mut out, "UpdateDate", &timestamp(&time(m.updated)));
            out.push_str("<PolicyVersionList>");
            for v in &m.versions {
                out.push_str("<member>");
                el(&mut out, "Document", &encode_document(&v.document));
                el(&mut out, "VersionId", &v.id);
                el(
                    &mut out,
                    "IsDefaultVersion",
                    if v.id == m.default_version {
                        "true"
                    } else {
                        "false"
                    },
                );
                el(&mut out, "CreateDate", &timestamp(&time(v.created)));
                out.push_str("</member>");
            }
            out.push_str("</PolicyVersionList></member>");
        }
    }
    out.push_str("</Policies>");
    Ok(format!(
        "<GetAccountAuthorizationDetailsResponse xmlns=\"{ns}\"><GetAccountAuthorizationDetailsResult>{out}<IsTruncated>false</IsTruncated></GetAccountAuthorizationDetailsResult><ResponseMetadata><RequestId>{rid}</RequestId></ResponseMetadata></GetAccountAuthorizationDetailsResponse>",
        ns = super::error::IAM_NS,
        rid = escape(cx.rid)
    ))
}
