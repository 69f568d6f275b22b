//! Tagging: object tags (stored with the object's attributes in the files document's
//! `metadata`) and bucket tags (in the bucket's `__metastore` document), with S3's limits.

use axum::http::StatusCode;
use axum::response::Response;

use super::{empty, require_bucket, xml_response, S3Request};
use crate::auth::sigv4::parse_query;
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::objects::ObjectInfo;
use crate::xml::{self, to_xml, S3_NS};

/// At most 10 tags on an object, 50 on a bucket.
const MAX_OBJECT_TAGS: usize = 10;
const MAX_BUCKET_TAGS: usize = 50;

/// S3's tag rules: keys 1..=128 characters, values up to 256, keys unique, not `aws:`.
pub fn validate(tags: &[(String, String)], max: usize) -> S3Result<()> {
    if tags.len() > max {
        return Err(S3Error::invalid_tag(format!(
            "Object tags cannot be greater than {max}"
        )));
    }
    for (i, (k, v)) in tags.iter().enumerate() {
        if k.is_empty() || k.chars().count() > 128 {
            return Err(S3Error::invalid_tag(
                "The TagKey you have provided is invalid",
            ));
        }
        if v.chars().count() > 256 {
            return Err(S3Error::invalid_tag(
                "The TagValue you have provided is invalid",
            ));
        }
        // S3's tag alphabet: letters, digits, spaces and `+ - = . _ : / @` (so no control
        // characters, which also keeps NULs out of the stored documents).
        let allowed = |c: char| c.is_alphanumeric() || c == ' ' || "+-=._:/@".contains(c);
        if !k.chars().all(allowed) {
            return Err(S3Error::invalid_tag(
                "The TagKey you have provided is invalid",
            ));
        }
        if !v.chars().all(allowed) {
            return Err(S3Error::invalid_tag(
                "The TagValue you have provided is invalid",
            ));
        }
        if k.starts_with("aws:") {
            return Err(S3Error::invalid_tag(
                "Your TagKey cannot be prefixed with aws:",
            ));
        }
        if tags[..i].iter().any(|(other, _)| other == k) {
            return Err(S3Error::invalid_tag(
                "Cannot provide multiple Tags with the same key",
            ));
        }
    }
    Ok(())
}

/// Tags from an `x-amz-tagging` header (URL query encoded), validated.
pub fn from_header(value: Option<&str>) -> S3Result<Vec<(String, String)>> {
    let tags = parse_query(value);
    validate(&tags, MAX_OBJECT_TAGS)?;
    Ok(tags)
}

async fn read_tagging(req: &mut S3Request, max: usize) -> S3Result<Vec<(String, String)>> {
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let t: xml::Tagging = xml::from_xml(&body)?;
    let tags: Vec<(String, String)> = t
        .tag_set
        .tags
        .into_iter()
        .map(|t| (t.key, t.value))
        .collect();
    validate(&tags, max)?;
    Ok(tags)
}

/// PutObjectTagging's tag set (read before the authorization, see `S3Request::tagging`).
pub async fn read_object_tagging(req: &mut S3Request) -> S3Result<Vec<(String, String)>> {
    read_tagging(req, MAX_OBJECT_TAGS).await
}

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
        super::object::version_param(&req)?,
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
    super::object::find_version(st, bucket, key, version.as_deref())
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
    let o = addressed(
        st,
        (req.bucket(), req.key()),
        super::object::version_param(&req)?,
    )
    .await?;
    st.store.set_object_tags(&bucket, o.clone(), &tags).await?;
    let mut r = empty(StatusCode::OK);
    version_header(&mut r, &o);
    Ok(r)
}

/// DeleteObjectTagging.
pub async fn delete_object_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let o = addressed(
        st,
        (req.bucket(), req.key()),
        super::object::version_param(&req)?,
    )
    .await?;
    st.store
        .set_object_tags(req.bucket(), o.clone(), &[])
        .await?;
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
    Ok(empty(StatusCode::NO_CONTENT))
}

/// DeleteBucketTagging.
pub async fn delete_bucket_tagging(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_tags(req.bucket(), None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let t = |n: usize| {
            (0..n)
                .map(|i| (format!("k{i}"), "v".to_owned()))
                .collect::<Vec<_>>()
        };
        assert!(validate(&t(10), 10).is_ok());
        assert!(validate(&t(11), 10).is_err());
        assert!(validate(&[("k".repeat(129), String::new())], 10).is_err());
        assert!(validate(&[("k".into(), "v".repeat(257))], 10).is_err());
        assert!(validate(&[("a".into(), "1".into()), ("a".into(), "2".into())], 10).is_err());
        assert_eq!(
            from_header(Some("a=1&b=two%20words")).unwrap()[1].1,
            "two words"
        );
    }
}
