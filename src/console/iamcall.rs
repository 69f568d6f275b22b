//! The console's IAM requests: each identity action is the IAM Query API action the same key
//! would send, built as its parameters (`iam::query::Params`) and run by `iam::handle::dispatch`
//! as the signed-in key's caller, so that it is authorized by the same decision and answered
//! by the same handler as `aws iam` (a user without `iam:*` rights gets the API's
//! `AccessDenied`, and the console shows it). The XML answers are read back into the small
//! structs below.

use axum::http::request::Parts;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::iam::handle::{self, Caller, Cx};
use crate::iam::{IamError, IamResult, Params};
use crate::state::AppState;

/// At most this many pages of a list are read (each of `MaxItems` 1000): more than any
/// console page shows.
const MAX_PAGES: usize = 10;

/// Who acts: the signed-in key, and its browser request (whose address and transport an
/// identity policy's conditions may read).
pub struct IamCall<'a> {
    pub st: &'a AppState,
    pub access_key: &'a str,
    pub parts: &'a Parts,
    pub request_id: &'a str,
}

/// An IAM refusal as the console shows it: AWS's code and message.
pub fn reason(e: &IamError) -> String {
    format!("{}: {}", e.code, e.message)
}

impl IamCall<'_> {
    /// The IAM caller of the signed-in key, as it is now (its IAM user, its session policies;
    /// a key disabled or deleted since the sign-in acts no more).
    pub async fn caller(&self) -> IamResult<Caller> {
        let stored = self
            .st
            .creds
            .secret_of(self.access_key)
            .await?
            .ok_or_else(IamError::invalid_client_token_id)?;
        let auth = crate::auth::Auth::of_key(self.access_key.to_owned(), &stored);
        handle::caller_of(self.st, &auth, self.parts).await
    }

    /// Runs one IAM action with `params`, and returns its XML answer.
    pub async fn run(&self, action: &str, params: &[(&str, &str)]) -> IamResult<String> {
        let caller = self.caller().await?;
        let mut pairs: Vec<(String, String)> = vec![
            ("Action".to_owned(), action.to_owned()),
            (
                "Version".to_owned(),
                crate::iam::query::API_VERSION.to_owned(),
            ),
        ];
        pairs.extend(
            params
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
        );
        let params = Params::from_pairs(pairs)?;
        let cx = Cx {
            st: self.st,
            caller: &caller,
            rid: self.request_id,
        };
        let answer = handle::dispatch(&cx, &params, action).await;
        if !(action.starts_with("Get") || action.starts_with("List")) {
            // As `iam::handle` does: a change (or an attempt) holds on this instance at once.
            self.st.creds.forget(self.access_key);
        }
        answer
    }

    /// Runs one IAM action and reads the `<{action}Result>` of its answer as `T`.
    pub async fn read<T: DeserializeOwned>(
        &self,
        action: &str,
        params: &[(&str, &str)],
    ) -> IamResult<T> {
        let xml = self.run(action, params).await?;
        result_of(&xml, action)
    }

    /// Reads every page of a list (following `Marker`), at most [`MAX_PAGES`].
    pub async fn read_all<T: DeserializeOwned + Paged>(
        &self,
        action: &str,
        params: &[(&str, &str)],
    ) -> IamResult<Vec<T::Item>> {
        let mut out = Vec::new();
        let mut marker = String::new();
        for _ in 0..MAX_PAGES {
            let mut p: Vec<(&str, &str)> = params.to_vec();
            p.push(("MaxItems", "1000"));
            if !marker.is_empty() {
                p.push(("Marker", &marker));
            }
            let page: T = self.read(action, &p).await?;
            let (items, next) = page.into_page();
            out.extend(items);
            match next {
                Some(m) if !m.is_empty() => marker = m,
                _ => break,
            }
        }
        Ok(out)
    }
}

/// The `<{action}Result>` element of an answer, read as `T`.
pub fn result_of<T: DeserializeOwned>(xml: &str, action: &str) -> IamResult<T> {
    let open = format!("<{action}Result>");
    let close = format!("</{action}Result>");
    let inner = match (xml.find(&open), xml.rfind(&close)) {
        (Some(a), Some(b)) if a + open.len() <= b => &xml[a + open.len()..b],
        _ => "",
    };
    quick_xml::de::from_str(&format!("<r>{inner}</r>")).map_err(|e| {
        tracing::error!(error = %e, action, "the console could not read an IAM answer");
        IamError::service_failure()
    })
}

/// A paged list answer.
pub trait Paged {
    /// One entry.
    type Item;
    /// The entries, and the marker of the next page (when truncated).
    fn into_page(self) -> (Vec<Self::Item>, Option<String>);
}

/// `<member>` elements.
#[derive(Deserialize, Debug, Clone)]
pub struct Members<T> {
    #[serde(rename = "member", default = "Vec::new")]
    pub member: Vec<T>,
}

impl<T> Default for Members<T> {
    fn default() -> Self {
        Members { member: Vec::new() }
    }
}

macro_rules! paged {
    ($name:ident, $field:ident, $tag:literal, $item:ty) => {
        /// A page of a list answer.
        #[derive(Deserialize, Debug)]
        pub struct $name {
            #[serde(rename = $tag, default)]
            pub $field: Members<$item>,
            #[serde(rename = "IsTruncated", default)]
            pub truncated: bool,
            #[serde(rename = "Marker", default)]
            pub marker: Option<String>,
        }

        impl Paged for $name {
            type Item = $item;
            fn into_page(self) -> (Vec<$item>, Option<String>) {
                let next = if self.truncated { self.marker } else { None };
                (self.$field.member, next)
            }
        }
    };
}

/// A user (ListUsers, GetUser, GetGroup's members).
#[derive(Deserialize, Debug, Default, Clone)]
pub struct User {
    #[serde(rename = "Path", default)]
    pub path: String,
    #[serde(rename = "UserName")]
    pub name: String,
    #[serde(rename = "Arn", default)]
    pub arn: String,
    #[serde(rename = "CreateDate", default)]
    pub created: String,
    #[serde(rename = "Tags", default)]
    pub tags: Members<Tag>,
}

/// A tag.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Tag {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Value", default)]
    pub value: String,
}

/// A group.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Group {
    #[serde(rename = "Path", default)]
    pub path: String,
    #[serde(rename = "GroupName")]
    pub name: String,
    #[serde(rename = "Arn", default)]
    pub arn: String,
    #[serde(rename = "CreateDate", default)]
    pub created: String,
}

/// A managed policy.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Policy {
    #[serde(rename = "PolicyName")]
    pub name: String,
    #[serde(rename = "Arn")]
    pub arn: String,
    #[serde(rename = "Path", default)]
    pub path: String,
    #[serde(rename = "DefaultVersionId", default)]
    pub default_version: String,
    #[serde(rename = "AttachmentCount", default)]
    pub attachments: u64,
    #[serde(rename = "Description", default)]
    pub description: String,
    #[serde(rename = "UpdateDate", default)]
    pub updated: String,
}

/// A policy's version.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Version {
    #[serde(rename = "VersionId")]
    pub id: String,
    #[serde(rename = "IsDefaultVersion", default)]
    pub default: bool,
    #[serde(rename = "CreateDate", default)]
    pub created: String,
    /// URL-encoded, as IAM sends it (GetPolicyVersion only).
    #[serde(rename = "Document", default)]
    pub document: String,
}

/// A managed policy attached to a user or group.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Attached {
    #[serde(rename = "PolicyName")]
    pub name: String,
    #[serde(rename = "PolicyArn")]
    pub arn: String,
}

/// An access key (ListAccessKeys; CreateAccessKey adds its secret).
#[derive(Deserialize, Debug, Default, Clone)]
pub struct AccessKey {
    #[serde(rename = "AccessKeyId")]
    pub id: String,
    #[serde(rename = "Status", default)]
    pub status: String,
    #[serde(rename = "CreateDate", default)]
    pub created: String,
    #[serde(rename = "SecretAccessKey", default)]
    pub secret: String,
}

/// A user, group or role a policy is attached to.
#[derive(Deserialize, Debug, Default, Clone)]
pub struct Entity {
    #[serde(rename = "UserName", alias = "GroupName", default)]
    pub name: String,
}

paged!(UserList, users, "Users", User);
paged!(GroupList, groups, "Groups", Group);
paged!(PolicyList, policies, "Policies", Policy);
paged!(VersionList, versions, "Versions", Version);
paged!(AttachedList, attached, "AttachedPolicies", Attached);
paged!(KeyList, keys, "AccessKeyMetadata", AccessKey);
paged!(NameList, names, "PolicyNames", String);

/// GetUser / CreateUser.
#[derive(Deserialize, Debug, Default)]
pub struct UserResult {
    #[serde(rename = "User")]
    pub user: User,
}

/// GetGroup: the group and (a page of) its users.
#[derive(Deserialize, Debug)]
pub struct GroupResult {
    #[serde(rename = "Group")]
    pub group: Group,
    #[serde(rename = "Users", default)]
    pub users: Members<User>,
    #[serde(rename = "IsTruncated", default)]
    pub truncated: bool,
    #[serde(rename = "Marker", default)]
    pub marker: Option<String>,
}

impl Paged for GroupResult {
    type Item = User;
    fn into_page(self) -> (Vec<User>, Option<String>) {
        let next = if self.truncated { self.marker } else { None };
        (self.users.member, next)
    }
}

/// GetPolicy / CreatePolicy.
#[derive(Deserialize, Debug, Default)]
pub struct PolicyResult {
    #[serde(rename = "Policy")]
    pub policy: Policy,
}

/// GetPolicyVersion.
#[derive(Deserialize, Debug, Default)]
pub struct VersionResult {
    #[serde(rename = "PolicyVersion")]
    pub version: Version,
}

/// CreateAccessKey.
#[derive(Deserialize, Debug, Default)]
pub struct NewKeyResult {
    #[serde(rename = "AccessKey")]
    pub key: AccessKey,
}

/// GetUserPolicy / GetGroupPolicy: the document, URL-encoded.
#[derive(Deserialize, Debug, Default)]
pub struct InlineResult {
    #[serde(rename = "PolicyDocument", default)]
    pub document: String,
}

/// ListEntitiesForPolicy.
#[derive(Deserialize, Debug, Default)]
pub struct EntitiesResult {
    #[serde(rename = "PolicyGroups", default)]
    pub groups: Members<Entity>,
    #[serde(rename = "PolicyUsers", default)]
    pub users: Members<Entity>,
}

/// A document as IAM sends it (URL-encoded), as text.
pub fn document(encoded: &str) -> String {
    crate::percent::decode(encoded)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iam::xml as x;

    fn t() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap()
    }

    /// The console reads the answers the IAM API writes (`iam::xml`), field for field.
    #[test]
    fn reads_the_api_answers() {
        let u = x::UserView {
            path: "/team/".into(),
            name: "alice".into(),
            id: "AIDAX".into(),
            arn: "arn:aws:iam::123456789012:user/team/alice".into(),
            created: t(),
            tags: vec![("dept".into(), "a&b <c>".into())],
        };
        let got: UserResult = result_of(&x::get_user(&u, "r"), "GetUser").unwrap();
        assert_eq!(got.user.name, "alice");
        assert_eq!(got.user.path, "/team/");
        assert_eq!(got.user.tags.member[0].value, "a&b <c>");
        let list: UserList = result_of(
            &x::list_users(std::slice::from_ref(&u), Some("m1"), "r"),
            "ListUsers",
        )
        .unwrap();
        let (items, next) = list.into_page();
        assert_eq!((items.len(), next.as_deref()), (1, Some("m1")));
        let v = x::PolicyVersionView {
            document: "{\"Version\":\"2012-10-17\",\"Statement\":[]}".into(),
            version_id: "v2".into(),
            is_default: true,
            created: t(),
        };
        let got: VersionResult =
            result_of(&x::get_policy_version(&v, "r"), "GetPolicyVersion").unwrap();
        assert_eq!(document(&got.version.document), v.document);
        assert!(got.version.default);
        let names: NameList = result_of(
            &x::list_user_policies(&["a".into(), "b".into()], None, "r"),
            "ListUserPolicies",
        )
        .unwrap();
        assert_eq!(names.into_page().0, vec!["a", "b"]);
        let k = x::AccessKeyView {
            user_name: "alice".into(),
            id: "AKIAX".into(),
            status: crate::iam::validate::KeyStatus::Active,
            secret: Some("s3cr3t".into()),
            created: t(),
        };
        let got: NewKeyResult =
            result_of(&x::create_access_key(&k, "r"), "CreateAccessKey").unwrap();
        assert_eq!(
            (got.key.id.as_str(), got.key.secret.as_str()),
            ("AKIAX", "s3cr3t")
        );
        let empty: GroupList = result_of(&x::list_groups(&[], None, "r"), "ListGroups").unwrap();
        assert!(empty.into_page().0.is_empty());
    }
}
