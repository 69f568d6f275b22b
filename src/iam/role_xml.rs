//! The answers of IAM's role actions (issue 61), in the envelope and writer of [`super::xml`]:
//! `Role` as CreateRole, GetRole and ListRoles write it (ListRoles without tags and
//! `RoleLastUsed`, as AWS lists them), the trust policy URL-encoded as AWS sends every policy
//! document.

use chrono::{DateTime, Utc};

use super::xml::{encode_document, envelope, W};

/// A role as the answers show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleView {
    /// Name.
    pub name: String,
    /// Unique id (`AROA...`).
    pub id: String,
    /// ARN.
    pub arn: String,
    /// Path.
    pub path: String,
    /// Created.
    pub created: DateTime<Utc>,
    /// The trust policy.
    pub trust: String,
    /// The description (omitted when empty).
    pub description: String,
    /// `MaxSessionDuration`, seconds.
    pub max_session: i64,
    /// Tags.
    pub tags: Vec<(String, String)>,
    /// When a session last assumed it.
    pub last_used: Option<DateTime<Utc>>,
}

fn role(w: &mut W, r: &RoleView, full: bool) {
    w.el("Path", &r.path)
        .el("RoleName", &r.name)
        .el("RoleId", &r.id)
        .el("Arn", &r.arn)
        .time("CreateDate", &r.created)
        .el("AssumeRolePolicyDocument", &encode_document(&r.trust));
    if !r.description.is_empty() {
        w.el("Description", &r.description);
    }
    w.el("MaxSessionDuration", &r.max_session.to_string());
    if full {
        if !r.tags.is_empty() {
            w.tags(&r.tags);
        }
        w.open("RoleLastUsed");
        if let Some(t) = &r.last_used {
            w.time("LastUsedDate", t);
        }
        w.close("RoleLastUsed");
    }
}

/// CreateRole and GetRole.
pub fn role_result(action: &str, r: &RoleView, request_id: &str) -> String {
    envelope(action, request_id, |w| {
        w.open("Role");
        role(w, r, true);
        w.close("Role");
    })
}

/// ListRoles.
pub fn list_roles(roles: &[RoleView], next_marker: Option<&str>, request_id: &str) -> String {
    envelope("ListRoles", request_id, |w| {
        w.list("Roles", roles, |w, r| role(w, r, false))
            .page(next_marker);
    })
}

/// UpdateRoleDescription: the role after the change.
pub fn update_role_description(r: &RoleView, request_id: &str) -> String {
    role_result("UpdateRoleDescription", r, request_id)
}

/// ListRoleTags.
pub fn list_role_tags(tags: &[(String, String)], request_id: &str) -> String {
    envelope("ListRoleTags", request_id, |w| {
        w.tags(tags).bool("IsTruncated", false);
    })
}

/// GetRolePolicy: a role's inline policy, its document URL-encoded.
pub fn get_role_policy(role: &str, policy: &str, document: &str, request_id: &str) -> String {
    envelope("GetRolePolicy", request_id, |w| {
        w.el("RoleName", role)
            .el("PolicyName", policy)
            .el("PolicyDocument", &encode_document(document));
    })
}

/// ListRolePolicies.
pub fn list_role_policies(names: &[String], request_id: &str) -> String {
    envelope("ListRolePolicies", request_id, |w| {
        w.open("PolicyNames");
        for n in names {
            w.el("member", n);
        }
        w.close("PolicyNames").page(None);
    })
}

/// ListAttachedRolePolicies.
pub fn list_attached_role_policies(arns: &[String], request_id: &str) -> String {
    envelope("ListAttachedRolePolicies", request_id, |w| {
        w.list("AttachedPolicies", arns, |w, arn| {
            w.el("PolicyName", arn.rsplit('/').next().unwrap_or_default())
                .el("PolicyArn", arn);
        })
        .page(None);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> RoleView {
        RoleView {
            name: "ci".into(),
            id: "AROAEXAMPLE".into(),
            arn: "arn:aws:iam::123456789012:role/ci".into(),
            path: "/".into(),
            created: DateTime::from_timestamp(1_800_000_000, 0).unwrap(),
            trust: r#"{"Statement":[]}"#.into(),
            description: "a & b".into(),
            max_session: 3600,
            tags: vec![("team".into(), "red".into())],
            last_used: None,
        }
    }

    #[test]
    fn a_role_is_written_as_aws_writes_it() {
        let x = role_result("GetRole", &view(), "rid");
        assert!(x.contains("<GetRoleResult><Role><Path>/</Path><RoleName>ci</RoleName>"));
        assert!(x.contains(
            "<AssumeRolePolicyDocument>%7B%22Statement%22%3A%5B%5D%7D</AssumeRolePolicyDocument>"
        ));
        assert!(x.contains("<Description>a &amp; b</Description>"));
        assert!(x.contains("<MaxSessionDuration>3600</MaxSessionDuration>"));
        assert!(x.contains("<Tags><member><Key>team</Key><Value>red</Value></member></Tags>"));
        assert!(x.contains("<RoleLastUsed></RoleLastUsed>"));
        let l = list_roles(&[view()], Some("m"), "rid");
        assert!(!l.contains("<Tags>") && !l.contains("RoleLastUsed"));
        assert!(l.contains("<IsTruncated>true</IsTruncated><Marker>m</Marker>"));
    }
}
