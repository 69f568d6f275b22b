//! Object ownership: Put/Get/DeleteBucketOwnershipControls and `x-amz-object-ownership` on
//! CreateBucket. `BucketOwnerEnforced` disables ACLs: a request that sets any ACL but the
//! default (`private`, `bucket-owner-full-control`, or a document granting only the owner) is
//! refused with `AccessControlListNotSupported`, and grants stored before grant nothing.
//! `BucketOwnerPreferred` and `ObjectWriter` keep ACLs in force.
//!
//! grids3 has one account, whose keys all write as it: the bucket's owner owns every object
//! under all three settings, which is what AWS does within one account. New buckets get
//! `--default-object-ownership` (`BucketOwnerEnforced`, AWS's default since April 2023);
//! buckets made before grids3 had the setting behave as `ObjectWriter`, as AWS's older buckets
//! do.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::model::ownership::parse;
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::xml;

#[derive(serde::Deserialize, Debug, Default)]
struct Controls {
    #[serde(rename = "Rule", default)]
    rules: Vec<Rule>,
}

#[derive(serde::Deserialize, Debug)]
struct Rule {
    #[serde(rename = "ObjectOwnership")]
    ownership: String,
}

/// PutBucketOwnershipControls.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let c: Controls = xml::from_xml("OwnershipControls", &body)?;
    let [rule] = c.rules.as_slice() else {
        return Err(S3Error::malformed_xml());
    };
    let setting = parse(&rule.ownership).map_err(|_| S3Error::malformed_xml())?;
    // As in AWS: ACLs can be disabled only once the bucket's own ACL grants nobody else.
    let owner_id = crate::s3::respond::owner_of(&b.owner).id;
    let grants_others = crate::s3::request::grants::from_stored(&b.acl)
        .iter()
        .any(|g| g.grantee != crate::s3::request::grants::Grantee::User(owner_id.clone()));
    if setting == "BucketOwnerEnforced" && grants_others {
        return Err(S3Error::invalid_bucket_acl_with_object_ownership());
    }
    st.store
        .meta()
        .set_bucket_ownership(&b.name, Some(&setting))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketOwnershipControls.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let setting = b
        .ownership
        .ok_or_else(S3Error::ownership_controls_not_found)?;
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OwnershipControls xmlns=\"{}\"><Rule><ObjectOwnership>{setting}</ObjectOwnership></Rule></OwnershipControls>",
            xml::S3_NS
        ),
    ))
}

/// DeleteBucketOwnershipControls: the bucket behaves as `ObjectWriter` again.
pub async fn delete(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_ownership(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
