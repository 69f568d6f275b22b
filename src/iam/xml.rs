//! The answers of the IAM Query API: one function per response shape, from plain view structs
//! (no store types), in AWS's envelope:
//!
//! ```xml
//! <CreateUserResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/">
//!   <CreateUserResult><User>...</User></CreateUserResult>
//!   <ResponseMetadata><RequestId>...</RequestId></ResponseMetadata>
//! </CreateUserResponse>
//! ```
//!
//! An operation without output (DeleteUser, TagUser, AttachUserPolicy...) has no `Result`
//! element: [`empty`]. Lists are `<member>` elements; a paged list ends with `IsTruncated`
//! and, when true, the `Marker` to continue from. Timestamps are ISO 8601 in UTC with `Z`, to
//! the second (`2026-12-06T09:00:00Z`), as AWS writes them.
//!
//! Listings return fewer attributes than Get, as AWS does: ListUsers and GetGroup's users
//! carry no `Tags`, ListPolicies no `Description` or `Tags`, ListPolicyVersions and
//! CreatePolicyVersion no `Document`.
//!
//! Policy documents (GetPolicyVersion, GetUserPolicy, GetGroupPolicy) are sent URL-encoded
//! (RFC 3986: every byte but `A-Z a-z 0-9 - . _ ~` as `%XX`), as AWS sends them: botocore's
//! `json_decode_policies` handler `unquote`s the text and parses the JSON, so boto3 users see
//! a dict (and a client that does not decode sees what AWS's clients see).

use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use chrono::{DateTime, SecondsFormat, Utc};

use super::error::{xml_text as escape, IAM_NS};
use super::validate::KeyStatus;

/// A user as the answers show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserView {
    /// `/` or `/a/b/`.
    pub path: String,
    /// The user's name.
    pub name: String,
    /// The stable id (`AIDA...`).
    pub id: String,
    /// `arn:aws:iam::<account>:user<path><name>`.
    pub arn: String,
    /// When the user was created.
    pub created: DateTime<Utc>,
    /// The user's tags, in order (shown by CreateUser and GetUser only).
    pub tags: Vec<(String, String)>,
}

/// A group as the answers show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupView {
    /// `/` or `/a/b/`.
    pub path: String,
    /// The group's name.
    pub name: String,
    /// The stable id (`AGPA...`).
    pub id: String,
    /// `arn:aws:iam::<account>:group<path><name>`.
    pub arn: String,
    /// When the group was created.
    pub created: DateTime<Utc>,
}

/// A managed policy as the answers show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyView {
    /// The policy's name.
    pub name: String,
    /// The stable id (`ANPA...`).
    pub id: String,
    /// `arn:aws:iam::<account>:policy<path><name>`.
    pub arn: String,
    /// `/` or `/a/b/`.
    pub path: String,
    /// `v1`, `v2`...
    pub default_version_id: String,
    /// Users, groups and roles it is attached to.
    pub attachment_count: u64,
    /// Whether it can be attached (always true for a customer-managed policy).
    pub is_attachable: bool,
    /// The description given at creation (CreatePolicy and GetPolicy only).
    pub description: Option<String>,
    /// When the policy was created.
    pub created: DateTime<Utc>,
    /// When its default version last changed.
    pub updated: DateTime<Utc>,
    /// Its tags (CreatePolicy and GetPolicy only).
    pub tags: Vec<(String, String)>,
}

/// One version of a managed policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyVersionView {
    /// The JSON text as stored (URL-encoded on the wire by [`get_policy_version`]).
    pub document: String,
    /// `v1`, `v2`...
    pub version_id: String,
    /// Whether this is the default (operative) version.
    pub is_default: bool,
    /// When the version was created.
    pub created: DateTime<Utc>,
}

/// An access key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccessKeyView {
    /// The owner's name.
    pub user_name: String,
    /// The access key id.
    pub id: String,
    /// Active or Inactive.
    pub status: KeyStatus,
    /// The secret: only CreateAccessKey ever shows it.
    pub secret: Option<String>,
    /// When the key was created.
    pub created: DateTime<Utc>,
}

/// When and where an access key was last used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyLastUsedView {
    /// When.
    pub date: DateTime<Utc>,
    /// The service (`s3`, `iam`).
    pub service_name: String,
    /// The region the request named.
    pub region: String,
}

/// A managed policy attached to a user or group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttachedPolicyView {
    /// The policy's name.
    pub name: String,
    /// The policy's ARN.
    pub arn: String,
}

/// A user, group or role a policy is attached to (ListEntitiesForPolicy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityView {
    /// Its name.
    pub name: String,
    /// Its stable id.
    pub id: String,
}

/// A timestamp as AWS writes it: `2026-12-06T09:00:00Z`.
pub fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A policy document as AWS sends it: RFC 3986 percent-encoding of its UTF-8 bytes.
pub fn encode_document(doc: &str) -> String {
    crate::percent::uri_encode(doc, false)
}

/// A body under construction.
pub(super) struct W(pub(super) String);

impl W {
    pub(super) fn open(&mut self, tag: &str) -> &mut Self {
        self.0.push('<');
        self.0.push_str(tag);
        self.0.push('>');
        self
    }

    pub(super) fn close(&mut self, tag: &str) -> &mut Self {
        self.0.push_str("</");
        self.0.push_str(tag);
        self.0.push('>');
        self
    }

    /// `<tag>text</tag>`, the text escaped.
    pub(super) fn el(&mut self, tag: &str, text: &str) -> &mut Self {
        self.open(tag);
        self.0.push_str(&escape(text));
        self.close(tag)
    }

    pub(super) fn time(&mut self, tag: &str, t: &DateTime<Utc>) -> &mut Self {
        self.el(tag, &timestamp(t))
    }

    pub(super) fn bool(&mut self, tag: &str, b: bool) -> &mut Self {
        self.el(tag, if b { "true" } else { "false" })
    }

    /// `<tag><member>..</member>...</tag>`.
    pub(super) fn list<T>(
        &mut self,
        tag: &str,
        items: &[T],
        mut each: impl FnMut(&mut W, &T),
    ) -> &mut Self {
        self.open(tag);
        for item in items {
            self.open("member");
            each(self, item);
            self.close("member");
        }
        self.close(tag)
    }

    /// `IsTruncated`, and `Marker` when there is more.
    pub(super) fn page(&mut self, next_marker: Option<&str>) -> &mut Self {
        self.bool("IsTruncated", next_marker.is_some());
        if let Some(m) = next_marker {
            self.el("Marker", m);
        }
        self
    }

    pub(super) fn tags(&mut self, tags: &[(String, String)]) -> &mut Self {
        self.list("Tags", tags, |w, (k, v)| {
            w.el("Key", k).el("Value", v);
        })
    }

    fn user(&mut self, u: &UserView, with_tags: bool) -> &mut Self {
        self.el("Path", &u.path)
            .el("UserName", &u.name)
            .el("UserId", &u.id)
            .el("Arn", &u.arn)
            .time("CreateDate", &u.created);
        if with_tags && !u.tags.is_empty() {
            self.tags(&u.tags);
        }
        self
    }

    fn group(&mut self, g: &GroupView) -> &mut Self {
        self.el("Path", &g.path)
            .el("GroupName", &g.name)
            .el("GroupId", &g.id)
            .el("Arn", &g.arn)
            .time("CreateDate", &g.created)
    }

    fn policy(&mut self, p: &PolicyView, full: bool) -> &mut Self {
        self.el("PolicyName", &p.name)
            .el("PolicyId", &p.id)
            .el("Arn", &p.arn)
            .el("Path", &p.path)
            .el("DefaultVersionId", &p.default_version_id)
            .el("AttachmentCount", &p.attachment_count.to_string())
            // grids3 has no permissions boundaries: no policy is ever used as one.
            .el("PermissionsBoundaryUsageCount", "0")
            .bool("IsAttachable", p.is_attachable);
        if full {
            if let Some(d) = &p.description {
                self.el("Description", d);
            }
        }
        self.time("CreateDate", &p.created)
            .time("UpdateDate", &p.updated);
        if full && !p.tags.is_empty() {
            self.tags(&p.tags);
        }
        self
    }

    fn version(&mut self, v: &PolicyVersionView, with_document: bool) -> &mut Self {
        if with_document {
            self.el("Document", &encode_document(&v.document));
        }
        self.el("VersionId", &v.version_id)
            .bool("IsDefaultVersion", v.is_default)
            .time("CreateDate", &v.created)
    }

    fn attached(&mut self, list: &[AttachedPolicyView], next_marker: Option<&str>) -> &mut Self {
        self.list("AttachedPolicies", list, |w, p| {
            w.el("PolicyName", &p.name).el("PolicyArn", &p.arn);
        })
        .page(next_marker)
    }

    fn names(&mut self, tag: &str, names: &[String], next_marker: Option<&str>) -> &mut Self {
        self.open(tag);
        for n in names {
            self.el("member", n);
        }
        self.close(tag).page(next_marker)
    }
}

/// The envelope around a result written by `result`.
pub(super) fn envelope(action: &str, request_id: &str, result: impl FnOnce(&mut W)) -> String {
    let mut w = W(String::with_capacity(512));
    w.0.push_str(&format!("<{action}Response xmlns=\"{IAM_NS}\">"));
    w.open(&format!("{action}Result"));
    result(&mut w);
    w.close(&format!("{action}Result"));
    metadata(&mut w, request_id);
    w.close(&format!("{action}Response"));
    w.0
}

fn metadata(w: &mut W, request_id: &str) {
    w.open("ResponseMetadata")
        .el("RequestId", request_id)
        .close("ResponseMetadata");
}

/// The answer of an operation without output (UpdateUser, DeleteUser, TagUser, UntagUser,
/// UpdateAccessKey, DeleteAccessKey, DeleteGroup, AddUserToGroup, RemoveUserFromGroup,
/// DeletePolicy, SetDefaultPolicyVersion, DeletePolicyVersion, Attach/Detach User/Group
/// Policy, Put/Delete User/Group Policy): the envelope with no `Result` element.
pub fn empty(action: &'static str, request_id: &str) -> String {
    debug_assert!(action.bytes().all(|b| b.is_ascii_alphanumeric()));
    let mut w = W(String::with_capacity(256));
    w.0.push_str(&format!("<{action}Response xmlns=\"{IAM_NS}\">"));
    metadata(&mut w, request_id);
    w.close(&format!("{action}Response"));
    w.0
}

/// CreateUser: the user, with its tags.
pub fn create_user(u: &UserView, request_id: &str) -> String {
    envelope("CreateUser", request_id, |w| {
        w.open("User").user(u, true).close("User");
    })
}

/// GetUser: the user, with its tags.
pub fn get_user(u: &UserView, request_id: &str) -> String {
    envelope("GetUser", request_id, |w| {
        w.open("User").user(u, true).close("User");
    })
}

/// ListUsers: a page of users (no tags, as AWS lists them).
pub fn list_users(users: &[UserView], next_marker: Option<&str>, request_id: &str) -> String {
    envelope("ListUsers", request_id, |w| {
        w.list("Users", users, |w, u| {
            w.user(u, false);
        })
        .page(next_marker);
    })
}

/// ListUserTags: a page of a user's tags.
pub fn list_user_tags(
    tags: &[(String, String)],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListUserTags", request_id, |w| {
        w.tags(tags).page(next_marker);
    })
}

/// CreateAccessKey: the key with its secret (the only answer that shows it).
pub fn create_access_key(k: &AccessKeyView, request_id: &str) -> String {
    envelope("CreateAccessKey", request_id, |w| {
        w.open("AccessKey")
            .el("UserName", &k.user_name)
            .el("AccessKeyId", &k.id)
            .el("Status", k.status.as_str())
            .el("SecretAccessKey", k.secret.as_deref().unwrap_or_default())
            .time("CreateDate", &k.created)
            .close("AccessKey");
    })
}

/// ListAccessKeys: a page of a user's keys, without secrets.
pub fn list_access_keys(
    keys: &[AccessKeyView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListAccessKeys", request_id, |w| {
        w.list("AccessKeyMetadata", keys, |w, k| {
            w.el("UserName", &k.user_name)
                .el("AccessKeyId", &k.id)
                .el("Status", k.status.as_str())
                .time("CreateDate", &k.created);
        })
        .page(next_marker);
    })
}

/// GetAccessKeyLastUsed: the owner, and when/where the key was last used; a key never used
/// shows `N/A` for service and region and no date, as AWS answers.
pub fn get_access_key_last_used(
    user_name: &str,
    last_used: Option<&KeyLastUsedView>,
    request_id: &str,
) -> String {
    envelope("GetAccessKeyLastUsed", request_id, |w| {
        w.el("UserName", user_name).open("AccessKeyLastUsed");
        match last_used {
            Some(u) => {
                w.time("LastUsedDate", &u.date)
                    .el("ServiceName", &u.service_name)
                    .el("Region", &u.region);
            }
            None => {
                w.el("ServiceName", "N/A").el("Region", "N/A");
            }
        }
        w.close("AccessKeyLastUsed");
    })
}

/// CreateGroup: the group.
pub fn create_group(g: &GroupView, request_id: &str) -> String {
    envelope("CreateGroup", request_id, |w| {
        w.open("Group").group(g).close("Group");
    })
}

/// GetGroup: the group and a page of its users (no tags).
pub fn get_group(
    g: &GroupView,
    users: &[UserView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("GetGroup", request_id, |w| {
        w.open("Group")
            .group(g)
            .close("Group")
            .list("Users", users, |w, u| {
                w.user(u, false);
            })
            .page(next_marker);
    })
}

/// ListGroups: a page of groups.
pub fn list_groups(groups: &[GroupView], next_marker: Option<&str>, request_id: &str) -> String {
    envelope("ListGroups", request_id, |w| {
        w.list("Groups", groups, |w, g| {
            w.group(g);
        })
        .page(next_marker);
    })
}

/// ListGroupsForUser: a page of the groups a user is in.
pub fn list_groups_for_user(
    groups: &[GroupView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListGroupsForUser", request_id, |w| {
        w.list("Groups", groups, |w, g| {
            w.group(g);
        })
        .page(next_marker);
    })
}

/// CreatePolicy: the policy (description and tags included).
pub fn create_policy(p: &PolicyView, request_id: &str) -> String {
    envelope("CreatePolicy", request_id, |w| {
        w.open("Policy").policy(p, true).close("Policy");
    })
}

/// GetPolicy: the policy (description and tags included).
pub fn get_policy(p: &PolicyView, request_id: &str) -> String {
    envelope("GetPolicy", request_id, |w| {
        w.open("Policy").policy(p, true).close("Policy");
    })
}

/// ListPolicies: a page of policies (no description, no tags, as AWS lists them).
pub fn list_policies(
    policies: &[PolicyView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListPolicies", request_id, |w| {
        w.list("Policies", policies, |w, p| {
            w.policy(p, false);
        })
        .page(next_marker);
    })
}

/// CreatePolicyVersion: the new version, without its document (as AWS answers).
pub fn create_policy_version(v: &PolicyVersionView, request_id: &str) -> String {
    envelope("CreatePolicyVersion", request_id, |w| {
        w.open("PolicyVersion")
            .version(v, false)
            .close("PolicyVersion");
    })
}

/// GetPolicyVersion: the version with its document, URL-encoded.
pub fn get_policy_version(v: &PolicyVersionView, request_id: &str) -> String {
    envelope("GetPolicyVersion", request_id, |w| {
        w.open("PolicyVersion")
            .version(v, true)
            .close("PolicyVersion");
    })
}

/// ListPolicyVersions: a page of versions, without documents.
pub fn list_policy_versions(
    versions: &[PolicyVersionView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListPolicyVersions", request_id, |w| {
        w.list("Versions", versions, |w, v| {
            w.version(v, false);
        })
        .page(next_marker);
    })
}

/// ListAttachedUserPolicies: a page of the managed policies attached to a user.
pub fn list_attached_user_policies(
    list: &[AttachedPolicyView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListAttachedUserPolicies", request_id, |w| {
        w.attached(list, next_marker);
    })
}

/// ListAttachedGroupPolicies: a page of the managed policies attached to a group.
pub fn list_attached_group_policies(
    list: &[AttachedPolicyView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListAttachedGroupPolicies", request_id, |w| {
        w.attached(list, next_marker);
    })
}

/// ListEntitiesForPolicy: a page of the groups, users and roles a policy is attached to
/// (grids3 has no roles: `roles` is empty, and the element is still there, as AWS sends it).
pub fn list_entities_for_policy(
    groups: &[EntityView],
    users: &[EntityView],
    roles: &[EntityView],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListEntitiesForPolicy", request_id, |w| {
        w.list("PolicyGroups", groups, |w, e| {
            w.el("GroupName", &e.name).el("GroupId", &e.id);
        })
        .list("PolicyUsers", users, |w, e| {
            w.el("UserName", &e.name).el("UserId", &e.id);
        })
        .list("PolicyRoles", roles, |w, e| {
            w.el("RoleName", &e.name).el("RoleId", &e.id);
        })
        .page(next_marker);
    })
}

/// GetUserPolicy: a user's inline policy, its document URL-encoded.
pub fn get_user_policy(
    user_name: &str,
    policy_name: &str,
    document: &str,
    request_id: &str,
) -> String {
    envelope("GetUserPolicy", request_id, |w| {
        w.el("UserName", user_name)
            .el("PolicyName", policy_name)
            .el("PolicyDocument", &encode_document(document));
    })
}

/// GetGroupPolicy: a group's inline policy, its document URL-encoded.
pub fn get_group_policy(
    group_name: &str,
    policy_name: &str,
    document: &str,
    request_id: &str,
) -> String {
    envelope("GetGroupPolicy", request_id, |w| {
        w.el("GroupName", group_name)
            .el("PolicyName", policy_name)
            .el("PolicyDocument", &encode_document(document));
    })
}

/// ListUserPolicies: a page of a user's inline policy names.
pub fn list_user_policies(names: &[String], next_marker: Option<&str>, request_id: &str) -> String {
    envelope("ListUserPolicies", request_id, |w| {
        w.names("PolicyNames", names, next_marker);
    })
}

/// ListGroupPolicies: a page of a group's inline policy names.
pub fn list_group_policies(
    names: &[String],
    next_marker: Option<&str>,
    request_id: &str,
) -> String {
    envelope("ListGroupPolicies", request_id, |w| {
        w.names("PolicyNames", names, next_marker);
    })
}

/// A 200 answer with an IAM body: `Content-Type: text/xml` (as AWS sends) and the request id
/// in `x-amzn-RequestId` too.
pub fn response(body: String, request_id: &str) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = StatusCode::OK;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/xml"));
    if let Ok(v) = HeaderValue::from_str(request_id) {
        h.insert("x-amzn-requestid", v);
    }
    r
}

#[cfg(test)]
#[path = "xml_tests.rs"]
mod tests;
