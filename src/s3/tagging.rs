//! Tagging: object tags (stored with the object's attributes in the files document's
//! `metadata`) and bucket tags (in the bucket's `__metastore` document), with S3's limits.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::tagging::read_object_tagging;
use crate::s3::request::tagging::read_tagging;
use crate::s3::request::tagging::MAX_BUCKET_TAGS;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::objects::{ObjectInfo, ObjectMeta};
use crate::xml::{self, to_xml, S3_NS};

fn tagging_xml(tags: &[(String, String)]) -> Response {
    let body = xml::Tagging {
        xmlns: S3_NS,
        tag_set: xml::TagSet {
            tags: tags
                .iter()
                .map(|(k, v)| xml::Tag {
                    key: k.clone(),
                    value: v.clone(),
                })
                .collect(),
        },
    };
    xml_response(StatusCode::OK, to_xml("Tagging", &body))
}

/// GetObjectTagging (of the current object or `?versionId=`'s).
pub async fn get_object_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let o = addressed(
        st,
        (req.bucket(), req.key()),
        crate::s3::request::version_param(&req)?,
    )
    .await?;
    let mut r = tagging_xml(&o.meta.tags);
    version_header(&mut r, &o);
    Ok(r)
}

/// The object a tagging request addresses.
async fn addressed(
    st: &AppState,
    (bucket, key): (&str, &str),
    version: Option<String>,
) -> S3Result<ObjectInfo> {
    crate::s3::lookup::find_version(st, bucket, key, version.as_deref())
        .await?
        .ok_or_else(S3Error::no_such_key)
}

fn version_header(r: &mut Response, o: &ObjectInfo) {
    if let Some(v) = o
        .version_id
        .as_deref()
        .and_then(|v| axum::http::HeaderValue::from_str(v).ok())
    {
        r.headers_mut().insert("x-amz-version-id", v);
    }
}

/// PutObjectTagging.
pub async fn put_object_tagging(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    require_bucket(st, &bucket).await?;
    let tags = match req.tagging.take() {
        Some(t) => t,
        None => read_object_tagging(&mut req).await?,
    };
    let version = crate::s3::request::version_param(&req)?;
    let named = version.is_some();
    let o = addressed(st, (req.bucket(), req.key()), version).await?;
    let o = crate::s3::attrs::update(st, &bucket, named, o, |o| {
        Ok(ObjectMeta {
            tags: tags.clone(),
            ..o.meta.clone()
        })
    })
    .await?;
    let change = crate::s3::events::created(crate::notify::EventName::TaggingPut, &o);
    crate::s3::events::record(st, &bucket, &crate::s3::events::origin(&req), &[change]).await?;
    let mut r = empty(StatusCode::OK);
    version_header(&mut r, &o);
    Ok(r)
}

/// DeleteObjectTagging.
pub async fn delete_object_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let version = crate::s3::request::version_param(&req)?;
    let named = version.is_some();
    let o = addressed(st, (req.bucket(), req.key()), version).await?;
    let o = crate::s3::attrs::update(st, req.bucket(), named, o, |o| {
        Ok(ObjectMeta {
            tags: Vec::new(),
            ..o.meta.clone()
        })
    })
    .await?;
    let change = crate::s3::events::created(crate::notify::EventName::TaggingDelete, &o);
    let origin = crate::s3::events::origin(&req);
    crate::s3::events::record(st, req.bucket(), &origin, &[change]).await?;
    let mut r = empty(StatusCode::NO_CONTENT);
    version_header(&mut r, &o);
    Ok(r)
}

/// GetBucketTagging.
pub async fn get_bucket_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let tags = st
        .store
        .meta()
        .bucket_tags(req.bucket())
        .await?
        .ok_or_else(S3Error::no_such_tag_set)?;
    Ok(tagging_xml(&tags))
}

/// PutBucketTagging.
pub async fn put_bucket_tagging(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    require_bucket(st, &bucket).await?;
    let tags = read_tagging(&mut req, MAX_BUCKET_TAGS).await?;
    st.store
        .meta()
        .set_bucket_tags(&bucket, Some(&tags))
        .await?;
    // 200, not the 204 of AWS's example: MinIO and Ceph answer 200, minio-js's
    // setBucketTagging takes nothing else (it reported an empty error with the tags stored),
    // ceph/s3-tests asserts 200, and the AWS SDKs take either.
    Ok(empty(StatusCode::OK))
}

/// DeleteBucketTagging.
pub async fn delete_bucket_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_tags(req.bucket(), None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}
