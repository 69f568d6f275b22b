//! Object operations: PutObject, GetObject, HeadObject, DeleteObject.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use futures::{StreamExt, TryStreamExt};

use crate::error::{S3Error, S3Result};
use crate::notify::{Change, EventName};
use crate::s3::events;
use crate::s3::lookup::find_version;
use crate::s3::lookup::require_bucket;
use crate::s3::lookup::{find_for, unversioned_id};
use crate::s3::request::read::ReadSpec;
use crate::s3::request::version_param;
use crate::s3::request::write::WriteSpec;
use crate::s3::request::S3Request;
use crate::s3::request::MAX_PUT_SIZE;
use crate::s3::respond::blocked_error;
use crate::s3::respond::empty;
use crate::s3::respond::object_headers;
use crate::s3::respond::written;
use crate::s3::rules::lock::for_new_object;
use crate::s3::rules::ownership::owner_for_write;
use crate::s3::rules::preconditions::evaluate;
use crate::s3::rules::preconditions::Precondition;
use crate::s3::write::store;
use crate::state::AppState;
use crate::storage::gridfs::GridFsError;

/// PutObject: parse, decide, store, respond. The body streams from the socket through the
/// verifiers into GridFS and is published only when everything verified; otherwise every chunk
/// written is removed.
pub async fn put_object(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let mut spec = WriteSpec::parse(&req.parts.headers)?;
    req.require_length()?;
    let reader = req.body_reader()?;
    if reader.declared_len().is_some_and(|l| l > MAX_PUT_SIZE) {
        return Err(S3Error::entity_too_large());
    }
    spec.meta.owner = Some(owner_for_write(&b, &req.auth, spec.canned_acl.as_deref()));
    (spec.meta.retention, spec.meta.legal_hold) =
        for_new_object(&b, &spec.lock, st.store.meta().clock().now())?;
    let (info, sealed) = store(st, &b, req.key(), spec, reader).await?;
    let change = events::created(EventName::Put, &info);
    events::record(st, req.bucket(), &events::origin(&req), &[change]).await?;
    Ok(written(st, &b, &info, sealed.as_ref()))
}

/// GetObject and HeadObject.
pub async fn get_object(st: &AppState, req: S3Request, head: bool) -> S3Result<Response> {
    ReadSpec::refuse_range_with_part(&req)?;
    // AWS takes the `response-*` overrides from signed requests only: on an unsigned one
    // they would let anyone serve a public object as, say, `text/html` from this origin.
    if req.auth.is_anonymous() && req.query.iter().any(|(k, _)| k.starts_with("response-")) {
        return Err(S3Error::invalid_request(
            "Request specific response headers cannot be used for anonymous GET requests.",
        ));
    }
    let bucket = req.bucket().to_owned();
    let b = require_bucket(st, &bucket).await?;
    let spec = ReadSpec::parse(&req)?;
    // A revision replaced between the lookup and the lease is looked up again.
    for _ in 0..3 {
        // A GET of a small object reads its data with the lookup; HEAD does not.
        let mut info = find_for(
            st,
            (&bucket, req.key()),
            &req.auth,
            req.access,
            spec.version.as_deref(),
            !head,
        )
        .await?;
        // The key is checked before anything about the object is told (HEAD too: an SSE-C
        // object without its key is 400, as on AWS).
        let customer_md5 = super::sse::open_object(
            st,
            &mut info,
            &req.parts.headers,
            crate::s3::request::sse::CUSTOMER,
        )
        .await?;
        let pre = evaluate(
            spec.if_match.as_deref(),
            spec.if_unmodified_since.as_deref(),
            spec.if_none_match.as_deref(),
            spec.if_modified_since.as_deref(),
            info.etag(),
            info.file.upload_date,
        );
        match pre {
            Precondition::Failed => return Err(S3Error::precondition_failed()),
            Precondition::NotModified => {
                let mut r = empty(StatusCode::NOT_MODIFIED);
                for h in ["etag", "last-modified"] {
                    let mut tmp = axum::http::HeaderMap::new();
                    object_headers(&mut tmp, &info, &[], false);
                    if let Some(v) = tmp.get(h) {
                        r.headers_mut().insert(h, v.clone());
                    }
                }
                return Ok(r);
            }
            Precondition::Proceed => {}
        }
        let len = info.size();
        let sizes: Vec<u64> = info.meta.parts.iter().map(|(size, _)| *size).collect();
        let holds = crate::s3::rules::preconditions::if_range_holds(
            spec.if_range.as_deref(),
            info.etag(),
            info.file.upload_date,
        );
        let (status, start, end) = spec.range(&sizes, len, holds)?;
        let mut r = if head {
            empty(status)
        } else {
            let chunk0 = info.first_chunk.take();
            match st
                .store
                .open_read_with(&bucket, &info, start, end, chunk0)
                .await
            {
                Ok(mut stream) => {
                    // The first piece is read before the status line goes out, so an object
                    // whose data is missing answers an error, not a 200 and a broken body.
                    let first = match stream.next().await {
                        Some(Err(GridFsError::FileNotFound)) => continue,
                        Some(Err(e)) => return Err(e.into()),
                        first => first,
                    };
                    let stream = futures::stream::iter(first).chain(stream);
                    // A chunk that turns out missing or corrupt later ends the body with an
                    // error, so the client sees a truncated transfer, never silent short data.
                    let body = Body::from_stream(stream.map_err(std::io::Error::other));
                    let mut r = Response::new(body);
                    *r.status_mut() = status;
                    r
                }
                Err(GridFsError::FileNotFound) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        let h = r.headers_mut();
        object_headers(
            h,
            &info,
            &req.query,
            spec.checksum_mode && status == StatusCode::OK,
        );
        crate::s3::respond::expiration_header(st, &b, &info, h);
        crate::s3::respond::response_headers(
            st,
            h,
            info.meta.sse.as_ref(),
            customer_md5.as_deref(),
        );
        h.insert("content-length", HeaderValue::from(end - start));
        if !info.meta.tags.is_empty() {
            h.insert(
                "x-amz-tagging-count",
                HeaderValue::from(info.meta.tags.len()),
            );
        }
        if status == StatusCode::PARTIAL_CONTENT && end > start {
            if let Ok(v) = HeaderValue::from_str(&format!("bytes {start}-{}/{len}", end - 1)) {
                h.insert("content-range", v);
            }
        }
        if spec.part_number.is_some() && !sizes.is_empty() {
            h.insert("x-amz-mp-parts-count", HeaderValue::from(sizes.len()));
        }
        if let Some(n) = spec
            .part_number
            .as_deref()
            .and_then(|n| n.trim().parse().ok())
        {
            if spec.checksum_mode && status == StatusCode::PARTIAL_CONTENT {
                crate::s3::respond::part_checksum_headers(h, &info, n);
            }
        }
        events::accessed(st, &b, &req, head, &info);
        return Ok(r);
    }
    // Every revision found was replaced before it could be read: the key exists all
    // along (a 404 would be a lie), so the client is told to retry.
    Err(S3Error::slow_down())
}

/// GetObjectAttributes: the attributes named in `x-amz-object-attributes`.
pub async fn get_object_attributes(st: &AppState, req: S3Request) -> S3Result<Response> {
    use crate::xml::{self, to_xml, S3_NS};
    // The request's attributes and paging, checked before anything is read: an unknown
    // attribute or a paging header that is not a number is refused, never ignored.
    const ATTRIBUTES: &[&str] = &[
        "ETag",
        "Checksum",
        "ObjectParts",
        "StorageClass",
        "ObjectSize",
    ];
    // The SDKs send the list as repeated headers, curl users as one comma-separated header.
    let wanted: Vec<String> = req
        .parts
        .headers
        .get_all("x-amz-object-attributes")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if wanted.is_empty() || wanted.iter().any(|w| !ATTRIBUTES.contains(&w.as_str())) {
        return Err(S3Error::invalid_argument(
            "Invalid attribute name specified.",
        ));
    }
    let number = |name: &str, default: usize| -> S3Result<usize> {
        match req.parts.headers.get(name).map(|v| v.to_str()) {
            None => Ok(default),
            Some(v) => v.ok().and_then(|v| v.trim().parse().ok()).ok_or_else(|| {
                S3Error::invalid_argument(format!("Invalid {name} value: it must be an integer"))
            }),
        }
    };
    let (marker, max) = (
        number("x-amz-part-number-marker", 0)?,
        number("x-amz-max-parts", 1000)?.min(1000),
    );
    let has = |a: &str| wanted.iter().any(|w| w == a);
    require_bucket(st, req.bucket()).await?;
    let version = version_param(&req)?;
    let mut o = find_version(st, req.bucket(), req.key(), version.as_deref())
        .await?
        .ok_or_else(S3Error::no_such_key)?;
    super::sse::open_object(
        st,
        &mut o,
        &req.parts.headers,
        crate::s3::request::sse::CUSTOMER,
    )
    .await?;
    let alg_of = |c: &str| {
        o.meta
            .checksums
            .first()
            .map(|(a, _)| (a.clone(), c.to_owned()))
    };
    let object_parts = (has("ObjectParts") && !o.meta.parts.is_empty()).then(|| {
        let all = &o.meta.parts;
        let page: Vec<xml::AttributesPart> = all
            .iter()
            .enumerate()
            .skip(marker)
            .take(max)
            .map(|(i, (size, c))| xml::AttributesPart {
                part_number: i + 1,
                size: *size,
                checksum: xml::ChecksumValues::from_pairs(
                    &c.as_deref()
                        .and_then(alg_of)
                        .into_iter()
                        .collect::<Vec<_>>(),
                ),
            })
            .collect();
        xml::ObjectParts {
            total_parts_count: all.len(),
            part_number_marker: marker,
            next_part_number_marker: page.last().map(|p| p.part_number).unwrap_or(marker),
            max_parts: max,
            is_truncated: marker + page.len() < all.len(),
            parts: page,
        }
    });
    let checksum = (has("Checksum") && !o.meta.checksums.is_empty())
        .then(|| xml::ChecksumValues::of_object(&o.meta.checksums));
    let body = xml::GetObjectAttributesResponse {
        xmlns: S3_NS,
        etag: has("ETag").then(|| o.etag().trim_matches('"').to_owned()),
        checksum,
        object_parts,
        storage_class: has("StorageClass")
            .then(|| crate::model::storage_class::reported(o.meta.storage_class.as_deref())),
        object_size: has("ObjectSize").then_some(o.size()),
    };
    let mut r = crate::s3::respond::xml_response(
        StatusCode::OK,
        to_xml("GetObjectAttributesOutput", &body),
    );
    if let Ok(v) =
        HeaderValue::from_str(&crate::s3::request::headers::http_date(o.file.upload_date))
    {
        r.headers_mut().insert("last-modified", v);
    }
    if let Some(v) = o
        .version_id
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        r.headers_mut().insert("x-amz-version-id", v);
    }
    Ok(r)
}

/// DeleteObject: 204 whether or not the key existed. In a versioned bucket it writes a delete
/// marker, or with `?versionId=` removes that version for good; `If-Match`,
/// `x-amz-if-match-last-modified-time` and `x-amz-if-match-size` make it conditional (412).
pub async fn delete_object(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    require_bucket(st, &bucket).await?;
    let version = version_param(&req)?;
    if version.as_deref().is_some_and(|v| v != "null") {
        unversioned_id(st, &bucket).await?;
    }
    let mut cond = crate::s3::request::headers::delete_condition(&req.parts.headers)?;
    cond.bypass_governance = req.bypass_governance;
    let out = crate::s3::lookup::within_request_timeout(
        st,
        st.store.delete_object(
            &bucket,
            req.key(),
            version.as_deref(),
            &cond,
            req.auth.account_key(),
        ),
    )
    .await??
    .map_err(blocked_error)?;
    let change = Change {
        event: if out.delete_marker && version.is_none() {
            EventName::DeleteMarkerCreated
        } else {
            EventName::Delete
        },
        key: req.key().to_owned(),
        size: None,
        etag: None,
        version_id: out.version_id.clone(),
    };
    events::record(st, &bucket, &events::origin(&req), &[change]).await?;
    let mut r = empty(StatusCode::NO_CONTENT);
    if let Some(v) = out.version_id.and_then(|v| HeaderValue::from_str(&v).ok()) {
        r.headers_mut().insert("x-amz-version-id", v);
    }
    if out.delete_marker {
        r.headers_mut()
            .insert("x-amz-delete-marker", HeaderValue::from_static("true"));
    }
    Ok(r)
}
