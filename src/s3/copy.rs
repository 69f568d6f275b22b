//! CopyObject: a server-side copy (GridFS files cannot share chunks, so the data is streamed
//! from the source's chunks into a new file and published like a PUT).

use axum::http::StatusCode;
use axum::response::Response;
use futures::TryStreamExt;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::copy_source_version;
use crate::s3::request::headers::meta_from_headers;
use crate::s3::request::parse_copy_source;
use crate::s3::request::S3Request;
use crate::s3::request::MAX_PUT_SIZE;
use crate::s3::respond::version_headers;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::gridfs::GridFsError;
use crate::storage::objects::WriteCondition;
use crate::xml::{self, to_xml, S3_NS};

/// CopyObject.
pub async fn copy_object(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    let dest = require_bucket(st, &bucket).await?;
    let (src_bucket, src_key) =
        parse_copy_source(req.header("x-amz-copy-source").unwrap_or_default())?;
    let src_version = copy_source_version(req.header("x-amz-copy-source").unwrap_or_default())?;
    require_bucket(st, &src_bucket).await?;
    let replace = match req.header("x-amz-metadata-directive") {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(_) => return Err(S3Error::invalid_argument("Unknown metadata directive.")),
    };
    let tags_replaced = match req.header("x-amz-tagging-directive") {
        None | Some("COPY") => false,
        Some("REPLACE") => true,
        Some(_) => return Err(S3Error::invalid_argument("Unknown tagging directive.")),
    };
    let spec = crate::s3::request::sse::write_spec(&req.parts.headers)?;
    // The copy's class is the request's, STANDARD if it names none: AWS does not carry the
    // source's class over.
    let storage_class = crate::s3::request::headers::storage_class_of(&req.parts.headers)?;
    // As on AWS, the redirect is never copied (whatever the metadata directive): the copy
    // has the one this request names, if any.
    let website_redirect = crate::s3::request::headers::website_redirect_of(&req.parts.headers)?;
    // Copying an older version onto its own key (a restore) is a change; the current
    // object onto itself without new metadata is not (new encryption, or naming a storage
    // class, is a change).
    if src_bucket == bucket
        && src_key == req.key()
        && !replace
        && req.header("x-amz-storage-class").is_none()
        && website_redirect.is_none()
        && src_version.is_none()
        && spec.is_none()
    {
        return Err(S3Error::invalid_request(
            "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes.",
        ));
    }
    // A checksum algorithm named for the copy (or the one of a value given) is computed over
    // the bytes copied, as AWS computes the copy's checksum with it, and a value given is
    // checked; without either the source's checksums are kept.
    let asked = crate::s3::request::checksum::CopyChecksum::parse(&req.parts.headers)?;
    let new_algorithm = asked.algorithm;
    for _ in 0..3 {
        let src = crate::s3::lookup::open_copy_source(
            st,
            (&req.auth, req.source_access, &req.parts.headers),
            &src_bucket,
            &src_key,
            src_version.as_deref(),
        )
        .await?;
        if src.size() > MAX_PUT_SIZE {
            return Err(S3Error::invalid_request("The specified copy source is larger than the maximum allowable size for a copy source: 5368709120"));
        }
        // Within one content-addressed bucket a copy is a new object pointing at the same
        // content: no byte is read or written.
        let by_reference = if src_bucket == bucket && spec.is_none() && new_algorithm.is_none() {
            st.store
                .open_reference_copy(&bucket, req.key(), &src)
                .await?
        } else {
            None
        };
        let (up, sealed, digests, hasher) = match by_reference {
            Some((up, digests)) => (up, None, digests, None),
            None => {
                let mut hasher = new_algorithm.map(crate::checksum::Algorithm::hasher);
                let mut stream = match st.store.open_read(&src_bucket, &src, 0, src.size()).await {
                    Ok(s) => s,
                    Err(GridFsError::FileNotFound) => continue,
                    Err(e) => return Err(e.into()),
                };
                // The copy's encryption is the request's (or the destination bucket's
                // default), never the source's, as on AWS; it gets its own data key.
                let (mut up, sealed) =
                    super::sse::open_upload(st, &dest, req.key(), spec.clone()).await?;
                let copied: Result<_, GridFsError> = async {
                    // A metered bucket holds the copy's room before a byte is copied.
                    up.expect(src.size()).await?;
                    while let Some(b) = stream.try_next().await? {
                        if let Some(h) = hasher.as_mut() {
                            h.update(&b);
                        }
                        up.write(&b).await?;
                    }
                    up.flush().await
                }
                .await;
                match copied {
                    Ok(d) => (up, sealed, d, hasher),
                    Err(e) => {
                        let _ = up.abort().await;
                        return Err(e.into());
                    }
                }
            }
        };
        let mut meta = if replace {
            let mut m = meta_from_headers(&req.parts.headers)?;
            m.checksums = src.meta.checksums.clone();
            m
        } else {
            src.meta.clone()
        };
        let computed = new_algorithm
            .zip(hasher)
            .map(|(a, h)| (a, h.finish_base64()));
        if let Some((_, v)) = &computed {
            if !asked.holds(v) {
                let _ = up.abort().await;
                return Err(S3Error::bad_digest());
            }
        }
        if let Some((a, v)) = computed {
            // The copy's own full-object checksum; the source's parts keep their sizes but
            // no checksum of another algorithm.
            meta.checksums = vec![(a.name().to_owned(), v)];
            for part in &mut meta.parts {
                part.1 = None;
            }
        }
        meta.storage_class = storage_class.clone();
        meta.website_redirect = website_redirect.clone();
        // The ACL is never copied: the new object's comes from this request (private by
        // default), as in S3.
        meta.acl = None;
        meta.grants = crate::s3::request::grants::object_grants_from_headers(&req.parts.headers);
        // The copy is a new object: its owner is this request's writer, never the source's.
        meta.owner = Some(crate::s3::rules::ownership::owner_for_write(
            &dest,
            &req.auth,
            req.header("x-amz-acl"),
        ));
        // Tags follow their own directive (COPY by default), as in S3.
        meta.tags = if tags_replaced {
            crate::s3::request::tagging::from_header(req.header("x-amz-tagging"))?
        } else {
            src.meta.tags.clone()
        };
        crate::s3::write::set_content(&mut meta, sealed.as_ref(), &digests);
        // Object Lock settings are never copied: the copy's come from this request or the
        // destination bucket's default, as in S3.
        (meta.retention, meta.legal_hold) = crate::s3::rules::lock::for_new_object(
            &dest,
            &crate::s3::request::write::LockHeaders::parse(&req.parts.headers),
            st.store.meta().clock().now(),
        )?;
        let info = crate::s3::lookup::within_request_timeout(
            st,
            st.store
                .publish_if(&bucket, up, meta, &WriteCondition::Always),
        )
        .await??
        .map_err(crate::s3::respond::blocked_error)?;
        let change = crate::s3::events::created(crate::notify::EventName::Copy, &info);
        let origin = crate::s3::events::origin(&req);
        crate::s3::events::record(st, &bucket, &origin, &[change]).await?;
        let body = xml::CopyObjectResult {
            xmlns: S3_NS,
            last_modified: crate::s3::request::headers::iso8601(info.file.upload_date),
            etag: info.etag().to_owned(),
            checksum: xml::ChecksumValues::of_object(&info.meta.checksums),
        };
        let mut r = xml_response(StatusCode::OK, to_xml("CopyObjectResult", &body));
        version_headers(&mut r, &src, Some(&info));
        crate::s3::respond::write_response_headers(st, r.headers_mut(), sealed.as_ref());
        return Ok(r);
    }
    // Every revision found was replaced before it could be read: the key exists all
    // along (a 404 would be a lie), so the client is told to retry.
    Err(S3Error::slow_down())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_sources() {
        assert_eq!(
            parse_copy_source("/b/a%20b/c").unwrap(),
            ("b".into(), "a b/c".into())
        );
        assert_eq!(
            parse_copy_source("b/k?versionId=null").unwrap(),
            ("b".into(), "k".into())
        );
        assert!(parse_copy_source("b").is_err());
        assert!(parse_copy_source("b/k?versionId=abc").is_err());
        let vid = format!("{}{}", "8".repeat(13), "a".repeat(24));
        assert_eq!(
            copy_source_version(&format!("b/k?versionId={vid}")).unwrap(),
            Some(vid)
        );
        assert_eq!(copy_source_version("b/k").unwrap(), None);
    }
}
