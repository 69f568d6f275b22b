//! ACLs: the canned ACLs, `x-amz-grant-*` headers and AccessControlPolicy documents of S3, on
//! buckets and objects (the model and its decisions are in [`grants`]). A bucket's owner has
//! FULL_CONTROL of the bucket and of every object in it; ACLs give others access: one key by
//! its canonical user id, any key (AuthenticatedUsers), or everyone, unsigned requests
//! included (AllUsers). Bucket grants are stored in the bucket's `__metastore` document,
//! object grants under the files document's `metadata.grants`.
//!
//! Where grids3 differs from AWS, on purpose:
//! - The admin API's grants (read, write, owner) are not ACL entries. Get*Acl lists them, so
//!   that the document says who has access, and Put*Acl neither adds nor removes them (echoing
//!   them back, as read-modify-write clients do, changes nothing).
//! - Grants to e-mail addresses name the key given that address (`grids3 admin create-key
//!   --email`); an address no key has is `UnresolvableGrantByEmailAddress`, as on AWS.
//!   Canonical ids must name an existing key (`InvalidArgument`, as AWS answers).
//! - An ACL given by grant headers or a document is kept exactly as given (the owner's own
//!   grants included, or none), and listed so; a canned ACL implies the owner's FULL_CONTROL.
//!   Either way the owner keeps access to its bucket and objects, as an AWS account does to
//!   its own resources whatever their ACLs say: an ACL gives others access, it never takes
//!   the owner's.
//! - `aws-exec-read`, `log-delivery-write` and the LogDelivery group name services grids3 does
//!   not have: 501, never accepted and ignored.

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::check_users;
use crate::s3::lookup::known_users;
use crate::s3::lookup::request_acl;
use crate::s3::lookup::require_bucket;
use crate::s3::request::grants::Grantee;
use crate::s3::request::grants::Perm;
use crate::s3::request::grants::{self, Grant};
use crate::s3::request::S3Request;
use crate::s3::respond::owner_of;
use crate::s3::respond::xml_response;
use crate::s3::rules::acl::object_grants;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::xml;

use crate::xml::escape;

/// The AccessControlPolicy document: the owner with FULL_CONTROL, the admin API's grants,
/// then the ACL's grants (users named by their key when it still exists).
fn policy(
    owner: &str,
    admin: &[(String, &'static str)],
    acl: &[Grant],
    exact: bool,
    names: &HashMap<String, String>,
) -> String {
    let o = owner_of(owner);
    let user = |id: &str, name: Option<&str>| {
        let name = name
            .map(|n| format!("<DisplayName>{}</DisplayName>", escape(n)))
            .unwrap_or_default();
        format!(
            "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>{}</ID>{name}</Grantee>",
            escape(id),
        )
    };
    let group = |uri: &str| {
        format!(
            "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>{uri}</URI></Grantee>"
        )
    };
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy xmlns=\"{}\"><Owner><ID>{}</ID><DisplayName>{}</DisplayName></Owner><AccessControlList>",
        xml::S3_NS,
        escape(&o.id),
        escape(&o.display_name)
    );
    let mut grant = |grantee: String, perm: &str| {
        out.push_str(&format!(
            "<Grant>{grantee}<Permission>{perm}</Permission></Grant>"
        ));
    };
    // Groups first, then users (AWS's order); the owner's implied FULL_CONTROL leads the
    // users unless the ACL was given exactly, then the admin API's grants.
    let ordered = grants::listing_order(acl);
    let (groups, users) = ordered.split_at(
        ordered
            .iter()
            .take_while(|g| !matches!(g.grantee, Grantee::User(_)))
            .count(),
    );
    for g in groups {
        let uri = match g.grantee {
            Grantee::AllUsers => grants::ALL_USERS,
            _ => grants::AUTHENTICATED_USERS,
        };
        grant(group(uri), g.perm.as_str());
    }
    if !exact {
        grant(user(&o.id, Some(&o.display_name)), "FULL_CONTROL");
    }
    for (key, perm) in admin {
        let g = owner_of(key);
        grant(user(&g.id, Some(&g.display_name)), perm);
    }
    for g in users {
        if let Grantee::User(id) = &g.grantee {
            let name = names
                .get(id)
                .map(String::as_str)
                .or((*id == o.id).then_some(o.display_name.as_str()));
            grant(user(id, name), g.perm.as_str());
        }
    }
    out.push_str("</AccessControlList></AccessControlPolicy>");
    out
}

/// The admin API's grants as ACL permissions (bucket level, or object level).
fn admin_grants(b: &BucketInfo, object: bool) -> Vec<(String, &'static str)> {
    b.grants
        .iter()
        .filter_map(|(key, role)| {
            let perm = match (role.as_str(), object) {
                ("owner", _) => "FULL_CONTROL",
                ("read", _) => "READ",
                ("write", false) => "WRITE",
                // Object ACLs have no write permission: writers act on the bucket.
                ("write", true) => return None,
                _ => return None,
            };
            Some((key.clone(), perm))
        })
        .collect()
}

/// Names for the user grantees of an ACL (one key lookup, only when there are any).
async fn names_for(st: &AppState, acl: &[Grant]) -> S3Result<HashMap<String, String>> {
    if acl.iter().any(|g| matches!(g.grantee, Grantee::User(_))) {
        known_users(st).await
    } else {
        Ok(HashMap::new())
    }
}

/// GetBucketAcl.
pub async fn get_bucket_acl(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let mut acl = grants::from_stored(&b.acl);
    let disabled = crate::s3::rules::ownership::acls_disabled(&b);
    if disabled {
        acl.clear();
    }
    let exact = !disabled && grants::is_exact(&b.acl);
    let names = names_for(st, &acl).await?;
    Ok(xml_response(
        StatusCode::OK,
        policy(&b.owner, &admin_grants(&b, false), &acl, exact, &names),
    ))
}

/// GetObjectAcl.
pub async fn get_object_acl(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let o = crate::s3::lookup::find_for(
        st,
        (req.bucket(), req.key()),
        &req.auth,
        req.access,
        version.as_deref(),
        false,
    )
    .await?;
    let mut acl = object_grants(&o.meta);
    let disabled = crate::s3::rules::ownership::acls_disabled(&b);
    if disabled {
        acl.clear();
    }
    let exact = !disabled && grants::is_exact(&o.meta.grants);
    let names = names_for(st, &acl).await?;
    let owner = crate::s3::rules::ownership::object_owner(&b, o.meta.owner.as_deref());
    let mut admin = admin_grants(&b, true);
    if owner != b.owner && !exact {
        // The bucket's owner has FULL_CONTROL of every object in its bucket in grids3.
        admin.insert(0, (b.owner.clone(), "FULL_CONTROL"));
    }
    Ok(xml_response(
        StatusCode::OK,
        policy(owner, &admin, &acl, exact, &names),
    ))
}

/// PutBucketAcl and PutObjectAcl: a canned ACL or grant headers, or an AccessControlPolicy
/// body (not both), replacing the ACL's grants.
pub async fn put_acl(st: &AppState, mut req: S3Request, object: bool) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let target = if object {
        let version = crate::s3::request::version_param(&req)?;
        Some(
            crate::s3::lookup::find_for(
                st,
                (req.bucket(), req.key()),
                &req.auth,
                req.access,
                version.as_deref(),
                false,
            )
            .await?,
        )
    } else {
        None
    };
    let from_headers = request_acl(st, &req.parts.headers, object).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let body_given = !body.iter().all(u8::is_ascii_whitespace);
    let exact = body_given || grants::explicit_in_headers(&req.parts.headers);
    let acl = match (from_headers, body_given) {
        (Some(_), true) => {
            return Err(S3Error::unexpected_content().with_message(
                "This request does not support content: an ACL is given either in headers or in the body, not both",
            ))
        }
        (Some(g), false) => g,
        (None, false) => return Err(S3Error::missing_security_header()),
        (None, true) => {
            let doc: AclDoc = xml::from_xml("AccessControlPolicy", &body)?;
            let emails = if doc.list.grants.iter().any(|g| g.grantee.email.is_some()) {
                crate::s3::lookup::users_by_email(st).await?
            } else {
                HashMap::new()
            };
            let acl = from_document(&doc, &b, object, &emails)?;
            check_users(st, &acl).await?;
            acl
        }
    };
    crate::s3::rules::ownership::check_acl(
        crate::s3::rules::ownership::acls_disabled(&b),
        req.header("x-amz-acl"),
        Some(&acl),
        &owner_of(&b.owner).id,
    )?;
    crate::s3::rules::public_access::check_acl(
        crate::s3::rules::public_access::effective(st, &b),
        Some(&acl),
    )?;
    let stored = grants::to_stored_as(&acl, exact);
    if let Some(o) = target {
        let named = crate::s3::request::version_param(&req)?.is_some();
        let o = crate::s3::attrs::update(st, req.bucket(), named, o, |o| {
            // Decided again on each fresh read: a caller that holds WRITE_ACP only through
            // the object's ACL must still hold it on the ACL it replaces.
            let o = crate::s3::rules::acl::require_object_access(
                &req.auth,
                req.access,
                Some(o.clone()),
            )?;
            Ok(crate::storage::objects::ObjectMeta {
                acl: None,
                grants: stored.clone(),
                ..o.meta
            })
        })
        .await?;
        let change = crate::s3::events::created(crate::notify::EventName::AclPut, &o);
        let origin = crate::s3::events::origin(&req);
        crate::s3::events::record(st, req.bucket(), &origin, &[change]).await?;
    } else if !st
        .store
        .meta()
        .set_bucket_acl(req.bucket(), &stored)
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    Ok(crate::s3::respond::empty(StatusCode::OK))
}

/// The grants of an AccessControlPolicy document, exactly (the owner's own included, and
/// stored as given), less echoes of the admin API's grants (which the document cannot change).
fn from_document(
    doc: &AclDoc,
    b: &BucketInfo,
    object: bool,
    emails: &HashMap<String, String>,
) -> S3Result<Vec<Grant>> {
    let admin: Vec<(String, &str)> = admin_grants(b, object)
        .into_iter()
        .map(|(k, p)| (owner_of(&k).id, p))
        .collect();
    let mut out = Vec::new();
    for g in &doc.list.grants {
        // WRITE on an object is kept and listed but gives nothing, as on AWS (whose
        // `public-read-write` object ACL lists it, so a read-modify-write sends it back).
        let perm = Perm::parse(g.permission.trim()).ok_or_else(S3Error::malformed_acl_error)?;
        let grantee = match (&g.grantee.id, &g.grantee.uri, &g.grantee.email) {
            (Some(id), None, None) => grants::user(id)?,
            (None, Some(uri), None) => Grantee::group(uri)?,
            // A key named by its e-mail address (`create-key --email`).
            (None, None, Some(addr)) => Grantee::User(
                emails
                    .get(&addr.trim().to_ascii_lowercase())
                    .cloned()
                    .ok_or_else(S3Error::unresolvable_grant_by_email)?,
            ),
            _ => return Err(S3Error::malformed_acl_error()),
        };
        if let Grantee::User(id) = &grantee {
            if admin.iter().any(|(a, p)| a == id && *p == perm.as_str()) {
                continue;
            }
        }
        let grant = Grant::new(grantee, perm);
        if !out.contains(&grant) {
            out.push(grant);
        }
    }
    Ok(out)
}

/// `<AccessControlPolicy>` as PutBucketAcl / PutObjectAcl send it (the parts grids3 reads).
#[derive(serde::Deserialize, Debug)]
struct AclDoc {
    /// The owner the client read with GetAcl and sends back: an ACL cannot change the owner,
    /// so it is read and not used (as AWS does).
    #[serde(rename = "Owner", default)]
    _owner: Option<OwnerXml>,
    #[serde(rename = "AccessControlList", default)]
    list: AclList,
}

#[derive(serde::Deserialize, Debug, Default)]
struct AclList {
    #[serde(rename = "Grant", default)]
    grants: Vec<GrantXml>,
}

#[derive(serde::Deserialize, Debug)]
struct GrantXml {
    #[serde(rename = "Grantee")]
    grantee: GranteeXml,
    #[serde(rename = "Permission")]
    permission: String,
}

#[derive(serde::Deserialize, Debug)]
struct GranteeXml {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(rename = "URI", default)]
    uri: Option<String>,
    #[serde(rename = "EmailAddress", default)]
    email: Option<String>,
    /// Shown by GetAcl and sent back; a display name grants nothing.
    #[serde(rename = "DisplayName", default)]
    _display_name: Option<String>,
}

#[derive(serde::Deserialize, Debug)]
struct OwnerXml {
    #[serde(rename = "ID", default)]
    _id: Option<String>,
    #[serde(rename = "DisplayName", default)]
    _display_name: Option<String>,
}
