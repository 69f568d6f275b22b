//! ACLs, as far as grids3 has them. Buckets are private to their owner, plus the grants the
//! admin API gives other access keys (read, write, owner). Objects are private too, or carry a
//! canned ACL that opens them for reading: `public-read` (anyone, unsigned requests included)
//! or `authenticated-read` (any valid key); it is stored as `metadata.acl`. Get*Acl answer
//! that truth as an AccessControlPolicy. `x-amz-acl` on objects (PutObject, CopyObject,
//! CreateMultipartUpload, the POST form's `acl`, PutObjectAcl) is honoured for those values;
//! public bucket ACLs, `x-amz-grant-*` and grant lists other than the owner's are refused with
//! 501 NotImplemented, never accepted and ignored.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::object::require_object;
use super::{owner_of, require_bucket, xml_response, S3Request};
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::xml;

/// Canned ACLs AWS defines.
const CANNED: &[&str] = &[
    "private",
    "public-read",
    "public-read-write",
    "aws-exec-read",
    "authenticated-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
    "log-delivery-write",
];

/// Canned ACLs that describe what grids3 does anyway: only the bucket's owner has access
/// (grids3 has no object owners distinct from the bucket's).
const HONOURED: &[&str] = &["private", "bucket-owner-full-control"];

const GRANT_HEADERS: &[&str] = &[
    "x-amz-grant-read",
    "x-amz-grant-write",
    "x-amz-grant-read-acp",
    "x-amz-grant-write-acp",
    "x-amz-grant-full-control",
];

/// Object ACLs that open an object for reading.
const OBJECT_READABLE: &[&str] = &["public-read", "public-read-write", "authenticated-read"];

/// The object ACL `x-amz-acl` asks for, when it is not private (`public-read-write` is
/// `public-read` for an object: objects have no write permission). Checked beforehand by
/// [`check_object_headers`].
pub fn object_acl(headers: &HeaderMap) -> Option<String> {
    let acl = headers.get("x-amz-acl")?.to_str().ok()?.trim();
    match acl {
        "public-read" | "public-read-write" => Some("public-read".into()),
        "authenticated-read" => Some("authenticated-read".into()),
        _ => None,
    }
}

/// Checks `x-amz-acl` and `x-amz-grant-*` on a request that creates an object.
pub fn check_object_headers(headers: &HeaderMap) -> S3Result<()> {
    check(headers, OBJECT_READABLE)
}

/// Checks `x-amz-acl` and `x-amz-grant-*` on a request that creates a bucket.
pub fn check_headers(headers: &HeaderMap) -> S3Result<()> {
    check(headers, &[])
}

fn check(headers: &HeaderMap, also: &[&str]) -> S3Result<()> {
    if let Some(v) = headers.get("x-amz-acl") {
        let acl = v.to_str().unwrap_or_default().trim();
        if !CANNED.contains(&acl) {
            return Err(S3Error::invalid_argument(format!(
                "Invalid canned ACL: {acl}"
            )));
        }
        if !HONOURED.contains(&acl) && !also.contains(&acl) {
            return Err(S3Error::not_implemented().with_message(format!(
                "x-amz-acl: {acl} is not implemented: grids3 buckets and objects are private to the bucket's owner (and the keys the admin API grants access)"
            )));
        }
    }
    if let Some(h) = GRANT_HEADERS.iter().find(|h| headers.contains_key(**h)) {
        return Err(S3Error::not_implemented().with_message(format!(
            "{h} is not implemented: grants are given with the admin API"
        )));
    }
    Ok(())
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The AccessControlPolicy document: the owner with FULL_CONTROL, then `grants`.
fn policy(owner: &str, grants: &[(String, &'static str)]) -> String {
    let o = owner_of(owner);
    let user = |id: &str, name: &str| {
        format!(
            "<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\"><ID>{}</ID><DisplayName>{}</DisplayName></Grantee>",
            escape(id),
            escape(name)
        )
    };
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<AccessControlPolicy xmlns=\"{}\"><Owner><ID>{}</ID><DisplayName>{}</DisplayName></Owner><AccessControlList>",
        xml::S3_NS,
        escape(&o.id),
        escape(&o.display_name)
    );
    out.push_str(&format!(
        "<Grant>{}<Permission>FULL_CONTROL</Permission></Grant>",
        user(&o.id, &o.display_name)
    ));
    for (key, perm) in grants {
        let g = owner_of(key);
        out.push_str(&format!(
            "<Grant>{}<Permission>{perm}</Permission></Grant>",
            user(&g.id, &g.display_name)
        ));
    }
    out.push_str("</AccessControlList></AccessControlPolicy>");
    out
}

/// The admin API's grants as ACL permissions (bucket level, or object level).
fn grants(b: &BucketInfo, object: bool) -> Vec<(String, &'static str)> {
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

/// GetBucketAcl.
pub async fn get_bucket_acl(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    Ok(xml_response(
        StatusCode::OK,
        policy(&b.owner, &grants(&b, false)),
    ))
}

/// GetObjectAcl.
pub async fn get_object_acl(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let o = require_object(st, req.bucket(), req.key()).await?;
    let group = match o.meta.acl.as_deref() {
        Some("public-read") => Some("http://acs.amazonaws.com/groups/global/AllUsers"),
        Some("authenticated-read") => {
            Some("http://acs.amazonaws.com/groups/global/AuthenticatedUsers")
        }
        _ => None,
    };
    let mut doc = policy(&b.owner, &grants(&b, true));
    if let Some(uri) = group {
        let g = format!(
            "<Grant><Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\"><URI>{uri}</URI></Grantee><Permission>READ</Permission></Grant></AccessControlList>"
        );
        doc = doc.replace("</AccessControlList>", &g);
    }
    Ok(xml_response(StatusCode::OK, doc))
}

/// Whether an object's ACL lets a principal read it that the bucket grants nothing.
pub fn object_readable(acl: Option<&str>, anonymous: bool) -> bool {
    match acl {
        Some("public-read") => true,
        Some("authenticated-read") => !anonymous,
        _ => false,
    }
}

/// PutBucketAcl and PutObjectAcl: accepted only when they ask for what is already true.
pub async fn put_acl(st: &AppState, mut req: S3Request, object: bool) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    if object {
        require_object(st, req.bucket(), req.key()).await?;
    }
    let has_header = req.parts.headers.contains_key("x-amz-acl")
        || GRANT_HEADERS
            .iter()
            .any(|h| req.parts.headers.contains_key(*h));
    if object {
        check_object_headers(&req.parts.headers)?;
        if req.parts.headers.contains_key("x-amz-acl") {
            let acl = object_acl(&req.parts.headers);
            st.store
                .set_object_acl(req.bucket(), req.key(), acl)
                .await?
                .ok_or_else(S3Error::no_such_key)?;
            return Ok(super::empty(StatusCode::OK));
        }
    } else {
        check_headers(&req.parts.headers)?;
    }
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let body = String::from_utf8_lossy(&body);
    if body.trim().is_empty() {
        if !has_header {
            return Err(S3Error::malformed_xml());
        }
        return Ok(super::empty(StatusCode::OK));
    }
    // An AccessControlPolicy body: the owner's FULL_CONTROL must be there; the admin API's
    // grants may be echoed back unchanged (s3cmd sends back what it read); on an object,
    // READ for the AllUsers or AuthenticatedUsers group is the public-read or
    // authenticated-read canned ACL. Anything else is an ACL grids3 does not have.
    let doc: AclDoc = xml::from_xml(body.as_bytes())?;
    let owner_id = owner_of(&b.owner).id;
    let admin: Vec<(String, &str)> = grants(&b, object)
        .into_iter()
        .map(|(k, p)| (owner_of(&k).id, p))
        .collect();
    let mut owner_full = false;
    let mut canned: Option<&str> = None;
    for g in &doc.list.grants {
        let (id, uri, perm) = (
            g.grantee.id.as_deref(),
            g.grantee.uri.as_deref().unwrap_or_default(),
            g.permission.as_str(),
        );
        match (id, perm) {
            (Some(id), "FULL_CONTROL") if id == owner_id => owner_full = true,
            (Some(id), p) if admin.iter().any(|(a, ap)| a == id && *ap == p) => {}
            (None, "READ") if object && uri.ends_with("/groups/global/AllUsers") => {
                canned = Some("public-read")
            }
            (None, "READ") if object && uri.ends_with("/groups/global/AuthenticatedUsers") => {
                canned = canned.or(Some("authenticated-read"))
            }
            _ => {
                return Err(S3Error::not_implemented().with_message(
                    "This ACL grants what grids3 does not have (only the owner, the admin API's grants, and READ for AllUsers or AuthenticatedUsers on objects)",
                ))
            }
        }
    }
    if !owner_full {
        return Err(S3Error::not_implemented()
            .with_message("An ACL must keep the owner's FULL_CONTROL in grids3"));
    }
    if object {
        st.store
            .set_object_acl(req.bucket(), req.key(), canned.map(str::to_owned))
            .await?
            .ok_or_else(S3Error::no_such_key)?;
    }
    Ok(super::empty(StatusCode::OK))
}

/// `<AccessControlPolicy>` as PutBucketAcl / PutObjectAcl send it (the parts grids3 reads).
#[derive(serde::Deserialize, Debug)]
struct AclDoc {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn canned_acls_are_honoured_or_refused() {
        let with = |k: &'static str, v: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(k, HeaderValue::from_static(v));
            h
        };
        assert!(check_headers(&HeaderMap::new()).is_ok());
        assert!(check_headers(&with("x-amz-acl", "private")).is_ok());
        assert!(check_headers(&with("x-amz-acl", "bucket-owner-full-control")).is_ok());
        assert!(check_object_headers(&with("x-amz-acl", "public-read")).is_ok());
        assert_eq!(
            object_acl(&with("x-amz-acl", "public-read-write")).as_deref(),
            Some("public-read")
        );
        assert_eq!(
            check_object_headers(&with("x-amz-acl", "log-delivery-write"))
                .unwrap_err()
                .code,
            "NotImplemented"
        );
        assert_eq!(
            check_headers(&with("x-amz-acl", "public-read"))
                .unwrap_err()
                .code,
            "NotImplemented"
        );
        assert_eq!(
            check_headers(&with("x-amz-acl", "nonsense"))
                .unwrap_err()
                .code,
            "InvalidArgument"
        );
        assert_eq!(
            check_headers(&with(
                "x-amz-grant-read",
                "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""
            ))
            .unwrap_err()
            .code,
            "NotImplemented"
        );
    }
}
