//! Canned policies (the account's customer managed policies, at path `/`) and their mapping
//! to users and groups: add-, remove-, info-, list-canned-policies, set-user-or-group-policy
//! (replaces the set) and `idp/builtin/policy/attach|detach` (add to it, take from it).
//! Documents are checked by the parser that evaluates them (`auth::policy::parse_identity`).

use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::entry::{rfc3339, Cx, Reply};
use super::error::{AdminError, AdminResult};
use crate::storage::identity::{Group, Holder, IdentityError, ManagedPolicy, User, MAX_VERSIONS};

/// Largest canned policy MinIO takes (20 KiB).
const MAX_POLICY: usize = 20 * 1024;

/// A canned policy's name as MinIO and IAM both accept it.
pub fn check_name(name: &str) -> AdminResult<()> {
    if name.contains(',') {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "PolicyInvalidName",
            "policy name may not contain comma",
        ));
    }
    let iam = !name.is_empty()
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+=.@_-".contains(&b));
    if !iam {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioInvalidResource",
            "a policy name is 1 to 128 characters of letters, digits and +=.@_-",
        ));
    }
    Ok(())
}

/// A policy document as the policy engine accepts it (MinIO's errors).
pub fn check_document(text: &[u8]) -> AdminResult<String> {
    let v: Value = serde_json::from_slice(text)
        .map_err(|e| AdminError::malformed_policy(format!("invalid JSON: {e}")))?;
    if v.get("Version")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .is_empty()
    {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "MalformedPolicy",
            "The policy must contain a valid version string",
        ));
    }
    let text = v.to_string();
    crate::auth::policy::parse_identity(&text)
        .map_err(|e| AdminError::malformed_policy(e.message))?;
    Ok(text)
}

fn no_policy(name: &str) -> impl FnOnce(IdentityError) -> AdminError + '_ {
    move |e| match e {
        IdentityError::NoSuchEntity(_) => AdminError::no_such_policy(name),
        e => e.into(),
    }
}

/// `PUT add-canned-policy?name=`: creates the policy, or gives an existing one a new default
/// version (the oldest other version goes when five exist).
pub async fn add(cx: &Cx<'_>) -> AdminResult<Reply> {
    let name = cx.required("name")?;
    check_name(name)?;
    if cx.body.is_empty() {
        return Err(AdminError::new(
            StatusCode::LENGTH_REQUIRED,
            "MissingContentLength",
            "You must provide the Content-Length HTTP header.",
        ));
    }
    if cx.body.len() > MAX_POLICY {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "EntityTooLarge",
            "Your proposed upload exceeds the maximum allowed object size.",
        ));
    }
    let text = check_document(cx.body)?;
    let arn = cx.policy_arn(name);
    cx.caller.allow("admin:CreatePolicy", &arn)?;
    let store = cx.store();
    for _ in 0..3 {
        match store.policy(cx.acct(), &arn).await {
            Ok(p) => {
                if p.versions.len() >= MAX_VERSIONS {
                    if let Some(old) = p.versions.iter().find(|v| v.id != p.default_version) {
                        match store.delete_policy_version(cx.acct(), &arn, &old.id).await {
                            Ok(()) | Err(IdentityError::NoSuchEntity(_)) => {}
                            Err(e) => return Err(e.into()),
                        }
                    }
                }
                match store
                    .create_policy_version(cx.acct(), &arn, &text, true)
                    .await
                {
                    // Another version was added meanwhile: read again.
                    Err(IdentityError::LimitExceeded(_)) => continue,
                    r => {
                        r?;
                        return Ok(Reply::Done);
                    }
                }
            }
            Err(IdentityError::NoSuchEntity(_)) => {
                match store
                    .create_policy(cx.acct(), name, "/", None, &text, &[])
                    .await
                {
                    Err(IdentityError::EntityAlreadyExists(_)) => continue,
                    r => {
                        r?;
                        return Ok(Reply::Done);
                    }
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(AdminError::new(
        StatusCode::CONFLICT,
        "XMinioAdminInvalidArgument",
        "the policy changed while it was updated; try again",
    ))
}

/// `DELETE remove-canned-policy?name=`: refused while it is attached (MinIO's
/// `XMinioIAMPolicyInUse`); a missing policy is no error.
pub async fn remove(cx: &Cx<'_>) -> AdminResult<Reply> {
    let name = cx.required("name")?;
    let arn = cx.policy_arn(name);
    cx.caller.allow("admin:DeletePolicy", &arn)?;
    let store = cx.store();
    let in_use = || {
        AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioIAMPolicyInUse",
            "The policy cannot be removed, as it is in use",
        )
    };
    let p = match store.policy(cx.acct(), &arn).await {
        Ok(p) => p,
        Err(IdentityError::NoSuchEntity(_)) => return Ok(Reply::Done),
        Err(e) => return Err(e.into()),
    };
    if p.attachments > 0 {
        return Err(in_use());
    }
    for v in p.versions.iter().filter(|v| v.id != p.default_version) {
        match store.delete_policy_version(cx.acct(), &arn, &v.id).await {
            Ok(()) | Err(IdentityError::NoSuchEntity(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    match store.delete_policy(cx.acct(), &arn).await {
        Ok(()) | Err(IdentityError::NoSuchEntity(_)) => Ok(Reply::Done),
        Err(IdentityError::DeleteConflict(_)) => Err(in_use()),
        Err(e) => Err(e.into()),
    }
}

fn document(p: &ManagedPolicy) -> Value {
    p.default_document()
        .and_then(|d| serde_json::from_str(d).ok())
        .unwrap_or(Value::Null)
}

/// `GET info-canned-policy?name=[&v=2]`: the document (or, with `v=2`, MinIO's `PolicyInfo`).
pub async fn info(cx: &Cx<'_>) -> AdminResult<Reply> {
    let name = cx.required("name")?;
    let v2 = match cx.q("v") {
        None | Some("") | Some("1") => false,
        Some("2") => true,
        Some(_) => return Err(AdminError::invalid_argument("v must be 2")),
    };
    let arn = cx.policy_arn(name);
    cx.caller.allow("admin:GetPolicy", &arn)?;
    let p = cx
        .store()
        .policy(cx.acct(), &arn)
        .await
        .map_err(no_policy(name))?;
    let text = if v2 {
        serde_json::to_string_pretty(&json!({
            "PolicyName": p.name,
            "Policy": document(&p),
            "CreateDate": rfc3339(p.created),
            "UpdateDate": rfc3339(p.updated),
        }))
    } else {
        serde_json::to_string_pretty(&document(&p))
    }
    .expect("JSON");
    Ok(Reply::Json(text))
}

/// `GET list-canned-policies`: `{ "<name>": <document>, ... }`.
pub async fn list(cx: &Cx<'_>) -> AdminResult<Reply> {
    // MinIO's action for this listing (sic).
    cx.caller
        .allow("admin:ListUserPolicies", &cx.policy_arn("*"))?;
    let mut out = Map::new();
    let mut marker: Option<String> = None;
    loop {
        let page = cx
            .store()
            .list_policies(cx.acct(), false, None, marker.as_deref(), 1000)
            .await?;
        for p in &page.items {
            out.insert(p.name.clone(), document(p));
        }
        match page.next {
            Some(m) => marker = Some(m),
            None => break,
        }
    }
    Ok(Reply::Json(format!("{}\n", Value::Object(out))))
}

/// A user or group that policies are attached to.
enum Entity {
    User(User),
    Group(Group),
}

impl Entity {
    fn holder(&self) -> (Holder, &str, &[String]) {
        match self {
            Entity::User(u) => (Holder::User, &u.id, &u.attached),
            Entity::Group(g) => (Holder::Group, &g.id, &g.attached),
        }
    }
}

async fn entity(cx: &Cx<'_>, name: &str, group: bool) -> AdminResult<Entity> {
    if group {
        return match cx.store().group(cx.acct(), name).await {
            Ok(g) => Ok(Entity::Group(g)),
            Err(IdentityError::NoSuchEntity(_)) => Err(AdminError::no_such_group(name)),
            Err(e) => Err(e.into()),
        };
    }
    if name == cx.acct().key {
        return Err(AdminError::action_not_allowed(
            "Specified IAM action is not allowed: the account's root credentials have no policies",
        ));
    }
    match cx.store().user(cx.acct(), name).await {
        Ok(u) => Ok(Entity::User(u)),
        Err(IdentityError::NoSuchEntity(_)) => Err(AdminError::no_such_user(name)),
        Err(e) => Err(e.into()),
    }
}

/// The ARNs of the named policies, each of which must exist.
async fn existing(cx: &Cx<'_>, names: &[String]) -> AdminResult<Vec<String>> {
    let mut arns = Vec::new();
    for n in names {
        let p = cx
            .store()
            .policy(cx.acct(), &cx.policy_arn(n))
            .await
            .map_err(no_policy(n))?;
        arns.push(p.arn());
    }
    Ok(arns)
}

async fn attach_all(cx: &Cx<'_>, e: &Entity, arns: &[String], on: bool) -> AdminResult<()> {
    let (holder, id, _) = e.holder();
    for arn in arns {
        let r = if on {
            cx.store().attach(cx.acct(), holder, id, arn).await
        } else {
            cx.store().detach(cx.acct(), holder, id, arn).await
        };
        match r {
            Ok(()) => {}
            // Detached by someone else meanwhile: as asked.
            Err(IdentityError::NoSuchEntity(_)) if !on => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// `PUT set-user-or-group-policy?policyName=a,b&userOrGroup=&isGroup=`: the entity's policies
/// become exactly the listed ones (none when `policyName` is empty).
pub async fn set(cx: &Cx<'_>) -> AdminResult<Reply> {
    let who = cx.required("userOrGroup")?;
    let group = match cx.q("isGroup") {
        Some("true") => true,
        Some("false") => false,
        _ => {
            return Err(AdminError::invalid_argument(
                "isGroup must be true or false",
            ))
        }
    };
    let names: Vec<String> = cx
        .q("policyName")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect();
    let kind = if group { "group" } else { "user" };
    cx.caller.allow(
        "admin:AttachUserOrGroupPolicy",
        &cx.arn(&format!("{kind}/{who}")),
    )?;
    let e = entity(cx, who, group).await?;
    let want = existing(cx, &names).await?;
    let have = e.holder().2.to_vec();
    let add: Vec<String> = want.iter().filter(|a| !have.contains(a)).cloned().collect();
    let drop: Vec<String> = have.iter().filter(|a| !want.contains(a)).cloned().collect();
    attach_all(cx, &e, &add, true).await?;
    attach_all(cx, &e, &drop, false).await?;
    Ok(Reply::Done)
}

#[derive(Deserialize, Debug)]
struct Association {
    #[serde(default)]
    policies: Vec<String>,
    #[serde(default)]
    user: String,
    #[serde(default)]
    group: String,
}

impl Association {
    /// madmin's `PolicyAssociationReq.IsValid`: one policy at least, none empty, exactly one
    /// of user and group.
    fn check(&self) -> AdminResult<()> {
        if self.policies.is_empty() || self.policies.iter().any(|p| p.trim().is_empty()) {
            return Err(AdminError::invalid_argument("no policy names were given"));
        }
        if self.user.is_empty() == self.group.is_empty() {
            return Err(AdminError::invalid_argument(
                "exactly one of user and group must be given",
            ));
        }
        Ok(())
    }
}

/// `POST idp/builtin/policy/attach|detach` (sealed both ways): adds the policies not yet
/// attached, or takes away those attached; nothing to change is MinIO's
/// `XMinioAdminPolicyChangeAlreadyApplied`.
pub async fn attach(cx: &Cx<'_>, on: bool) -> AdminResult<Reply> {
    let req: Association = cx.json()?;
    req.check()?;
    let group = !req.group.is_empty();
    let who = if group { &req.group } else { &req.user };
    let kind = if group { "group" } else { "user" };
    let res = cx.arn(&format!("{kind}/{who}"));
    // MinIO takes either action for these.
    if cx
        .caller
        .allow("admin:UpdatePolicyAssociation", &res)
        .is_err()
    {
        cx.caller.allow("admin:AttachUserOrGroupPolicy", &res)?;
    }
    let e = entity(cx, who, group).await?;
    if let (Entity::Group(g), true) = (&e, on) {
        if g.disabled {
            return Err(AdminError::invalid_argument(format!(
                "the group {} is disabled",
                g.name
            )));
        }
    }
    let arns = existing(cx, &req.policies).await?;
    let have = e.holder().2;
    let change: Vec<String> = arns
        .into_iter()
        .filter(|a| have.contains(a) != on)
        .collect();
    if change.is_empty() {
        return Err(AdminError::new(
            StatusCode::BAD_REQUEST,
            "XMinioAdminPolicyChangeAlreadyApplied",
            "The specified policy change is already in effect.",
        ));
    }
    attach_all(cx, &e, &change, on).await?;
    let names = super::entry::policy_names(&change);
    let field = if on {
        "policiesAttached"
    } else {
        "policiesDetached"
    };
    let now = rfc3339(cx.meta().clock().now());
    Ok(Reply::Json(
        json!({field: names, "updatedAt": now}).to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_names_and_documents_are_checked() {
        assert!(check_name("readwrite-2").is_ok());
        assert_eq!(check_name("a,b").unwrap_err().code, "PolicyInvalidName");
        assert!(check_name(" a").is_err());
        let ok = br#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::b/*"]}]}"#;
        assert!(check_document(ok).is_ok());
        let no_version =
            br#"{"Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["*"]}]}"#;
        assert_eq!(
            check_document(no_version).unwrap_err().code,
            "MalformedPolicy"
        );
        assert_eq!(
            check_document(b"{not json").unwrap_err().code,
            "XMinioMalformedIAMPolicy"
        );
        let bad_effect = br#"{"Version":"2012-10-17","Statement":[{"Effect":"Maybe","Action":"s3:*","Resource":"*"}]}"#;
        assert_eq!(
            check_document(bad_effect).unwrap_err().code,
            "XMinioMalformedIAMPolicy"
        );
    }

    #[test]
    fn associations_name_one_entity_and_some_policies() {
        let parse = |s: &str| serde_json::from_str::<Association>(s).unwrap().check();
        assert!(parse(r#"{"policies":["p"],"user":"bob"}"#).is_ok());
        assert!(parse(r#"{"policies":["p"],"group":"g"}"#).is_ok());
        assert!(parse(r#"{"policies":["p"],"user":"bob","group":"g"}"#).is_err());
        assert!(parse(r#"{"policies":[],"user":"bob"}"#).is_err());
        assert!(parse(r#"{"policies":[""],"user":"bob"}"#).is_err());
        assert!(parse(r#"{"policies":["p"]}"#).is_err());
    }
}
