//! Block Public Access: Put/Get/DeletePublicAccessBlock, and the four settings honoured as
//! AWS honours them:
//! - `BlockPublicAcls`: a request that sets a public ACL (a grant to AllUsers or
//!   AuthenticatedUsers, canned or not) is refused with 403;
//! - `IgnorePublicAcls`: such grants, on the bucket and its objects, grant nothing;
//! - `BlockPublicPolicy`: PutBucketPolicy of a public policy is refused with 403;
//! - `RestrictPublicBuckets`: a public policy allows only signed requests (grids3's keys are
//!   all of its one account, which is whom AWS still lets in).
//!
//! A bucket without a configuration of its own uses the server-wide one
//! (`--block-public-access`), which by default blocks nothing.

use axum::http::StatusCode;
use axum::response::Response;

use super::acl::grants::{Grant, Grantee};
use super::{empty, require_bucket, xml_response, S3Request};
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::{BucketInfo, PublicAccessBlock};
use crate::xml;

/// Parses the server-wide setting: `all`, `none`, or a comma-separated list of the flags.
pub fn parse_flags(s: &str) -> Result<PublicAccessBlock, String> {
    let mut p = PublicAccessBlock::default();
    for f in s.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        match f.to_ascii_lowercase().as_str() {
            "all" => {
                p = PublicAccessBlock {
                    block_public_acls: true,
                    ignore_public_acls: true,
                    block_public_policy: true,
                    restrict_public_buckets: true,
                }
            }
            "none" => {}
            "blockpublicacls" => p.block_public_acls = true,
            "ignorepublicacls" => p.ignore_public_acls = true,
            "blockpublicpolicy" => p.block_public_policy = true,
            "restrictpublicbuckets" => p.restrict_public_buckets = true,
            other => return Err(format!("unknown Block Public Access setting: {other}")),
        }
    }
    Ok(p)
}

/// The configuration in force for a bucket: its own, else the server's.
pub fn effective(st: &AppState, b: &BucketInfo) -> PublicAccessBlock {
    b.public_access_block
        .or(st.config.block_public_access)
        .unwrap_or_default()
}

/// Whether a grant makes what it is on public (AWS counts AuthenticatedUsers as public too).
pub fn is_public(g: &Grant) -> bool {
    matches!(g.grantee, Grantee::AllUsers | Grantee::AuthenticatedUsers)
}

/// Refuses a public ACL where `BlockPublicAcls` is on.
pub fn check_acl(pab: PublicAccessBlock, acl: Option<&[Grant]>) -> S3Result<()> {
    if pab.block_public_acls && acl.is_some_and(|a| a.iter().any(is_public)) {
        return Err(S3Error::access_denied()
            .with_message("Access Denied: Block Public Access (BlockPublicAcls) refuses public ACLs on this bucket"));
    }
    Ok(())
}

/// `<PublicAccessBlockConfiguration>`.
#[derive(serde::Deserialize, Debug, Default)]
struct Configuration {
    #[serde(rename = "BlockPublicAcls", default)]
    block_public_acls: Option<String>,
    #[serde(rename = "IgnorePublicAcls", default)]
    ignore_public_acls: Option<String>,
    #[serde(rename = "BlockPublicPolicy", default)]
    block_public_policy: Option<String>,
    #[serde(rename = "RestrictPublicBuckets", default)]
    restrict_public_buckets: Option<String>,
}

fn flag(v: &Option<String>) -> S3Result<bool> {
    match v.as_deref().map(str::trim) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(_) => Err(S3Error::malformed_xml()),
    }
}

/// PutPublicAccessBlock.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let c: Configuration = xml::from_xml(&body)?;
    let pab = PublicAccessBlock {
        block_public_acls: flag(&c.block_public_acls)?,
        ignore_public_acls: flag(&c.ignore_public_acls)?,
        block_public_policy: flag(&c.block_public_policy)?,
        restrict_public_buckets: flag(&c.restrict_public_buckets)?,
    };
    st.store
        .meta()
        .set_public_access_block(&b.name, Some(pab))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetPublicAccessBlock: the bucket's own configuration (404 without one, as in S3, even
/// where the server-wide default applies).
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let p = b
        .public_access_block
        .ok_or_else(S3Error::no_such_public_access_block_configuration)?;
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<PublicAccessBlockConfiguration xmlns=\"{}\"><BlockPublicAcls>{}</BlockPublicAcls><IgnorePublicAcls>{}</IgnorePublicAcls><BlockPublicPolicy>{}</BlockPublicPolicy><RestrictPublicBuckets>{}</RestrictPublicBuckets></PublicAccessBlockConfiguration>",
            xml::S3_NS,
            p.block_public_acls,
            p.ignore_public_acls,
            p.block_public_policy,
            p.restrict_public_buckets
        ),
    ))
}

/// DeletePublicAccessBlock.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store
        .meta()
        .set_public_access_block(&b.name, None)
        .await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::acl::grants::{canned, Perm};

    #[test]
    fn flags_and_public_acls() {
        let all = parse_flags("all").unwrap();
        assert!(all.block_public_acls && all.restrict_public_buckets);
        let some = parse_flags("BlockPublicPolicy, ignorePublicAcls").unwrap();
        assert!(some.block_public_policy && some.ignore_public_acls && !some.block_public_acls);
        assert!(parse_flags("everything").is_err());
        let public = canned("public-read", true).unwrap();
        let auth = canned("authenticated-read", true).unwrap();
        let user = vec![Grant::new(Grantee::User("a".repeat(64)), Perm::Read)];
        assert_eq!(
            check_acl(all, Some(&public)).unwrap_err().code,
            "AccessDenied"
        );
        assert_eq!(
            check_acl(all, Some(&auth)).unwrap_err().code,
            "AccessDenied"
        );
        assert!(check_acl(all, Some(&user)).is_ok());
        assert!(check_acl(all, None).is_ok());
        assert!(check_acl(some, Some(&public)).is_ok());
    }
}
