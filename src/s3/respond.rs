//! The shapes of answers: XML and empty responses, the owner element, the headers an object's
//! GET and HEAD carry, and the errors of blocked writes.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::Response;
use base64::Engine;

use crate::crypto::{SseMeta, MODE_C};
use crate::error::S3Error;
use crate::s3::request::headers::{http_date, iso8601};
use crate::s3::request::sse::CONTEXT;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::sealed::SealedWrite;
use crate::storage::objects::{Blocked, ObjectInfo};
use crate::xml::Owner;

/// A new request id (16 upper-case hex digits, as AWS's look).
pub fn new_request_id() -> String {
    uuid::Uuid::new_v4().simple().to_string()[..16].to_ascii_uppercase()
}

/// An XML response.
pub fn xml_response(status: axum::http::StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    r
}

/// An empty response with a status.
pub fn empty(status: axum::http::StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    r
}

/// The owner element for an access key (ID: hex SHA-256 of the key id, 64 hex digits like a
/// canonical user id).
pub fn owner_of(access_key: &str) -> Owner {
    Owner {
        id: crate::auth::sigv4::sha256_hex(access_key.as_bytes()),
        display_name: access_key.to_owned(),
    }
}

/// `x-amz-copy-source-version-id` (the source's version, when its bucket is versioned) and
/// `x-amz-version-id` (the new object's).
pub fn version_headers(r: &mut Response, src: &ObjectInfo, new: Option<&ObjectInfo>) {
    use axum::http::HeaderValue;
    let h = r.headers_mut();
    if let Some(v) = src
        .version_id
        .as_deref()
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        h.insert("x-amz-copy-source-version-id", v);
    }
    if let Some(v) = new.and_then(new_version_id) {
        h.insert("x-amz-version-id", v);
    }
}

/// The `x-amz-version-id` of a write's answer: the new version's id, and none for the null
/// version a versioning-suspended bucket writes (AWS answers a write there without the
/// header; GET and HEAD still name the version `null`).
pub fn new_version_id(info: &ObjectInfo) -> Option<axum::http::HeaderValue> {
    info.version_id
        .as_deref()
        .filter(|v| *v != "null")
        .and_then(|v| axum::http::HeaderValue::from_str(v).ok())
}

/// The object's headers on GET/HEAD, with the `response-*` query overrides applied.
pub fn object_headers(
    h: &mut HeaderMap,
    o: &ObjectInfo,
    query: &[(String, String)],
    checksum_mode: bool,
) {
    let q = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    put(h, "etag", o.etag());
    put(h, "last-modified", &http_date(o.file.upload_date));
    if let Some(v) = &o.version_id {
        put(h, "x-amz-version-id", v);
    }
    if let Some((mode, until)) = &o.meta.retention {
        put(h, "x-amz-object-lock-mode", mode);
        put(h, "x-amz-object-lock-retain-until-date", &iso8601(*until));
    }
    if o.meta.legal_hold {
        put(h, "x-amz-object-lock-legal-hold", "ON");
    }
    put(h, "accept-ranges", "bytes");
    let m = &o.meta;
    if let Some(r) = &m.website_redirect {
        put(h, "x-amz-website-redirect-location", r);
    }
    // AWS sends the class for every class but STANDARD.
    if let Some(c) = m
        .storage_class
        .as_deref()
        .map(|c| crate::model::storage_class::reported(Some(c)))
        .filter(|c| *c != crate::model::storage_class::STANDARD)
    {
        put(h, "x-amz-storage-class", c);
    }
    let ct = q("response-content-type")
        .or(m.content_type.as_deref())
        .unwrap_or("binary/octet-stream");
    put(h, "content-type", ct);
    for (header, over, val) in [
        ("cache-control", "response-cache-control", &m.cache_control),
        (
            "content-disposition",
            "response-content-disposition",
            &m.content_disposition,
        ),
        (
            "content-encoding",
            "response-content-encoding",
            &m.content_encoding,
        ),
        (
            "content-language",
            "response-content-language",
            &m.content_language,
        ),
        ("expires", "response-expires", &m.expires),
    ] {
        if let Some(v) = q(over).or(val.as_deref()) {
            put(h, header, v);
        }
    }
    for (k, v) in &m.user {
        if v.is_ascii() {
            put(h, &format!("x-amz-meta-{k}"), v);
        } else {
            // As S3 returns non-ASCII metadata: an RFC 2047 encoded-word of its UTF-8.
            let b64 = base64::engine::general_purpose::STANDARD.encode(v.as_bytes());
            put(h, &format!("x-amz-meta-{k}"), &format!("=?UTF-8?B?{b64}?="));
        }
    }
    if checksum_mode {
        for (alg, v) in &m.checksums {
            put(h, &format!("x-amz-checksum-{alg}"), v);
            put(
                h,
                "x-amz-checksum-type",
                crate::checksum::Algorithm::type_of(v),
            );
        }
    }
}

/// The checksum of part `n` on a GET or HEAD with `partNumber` and checksum mode: the part's
/// own, as UploadPart answered it, with the object's checksum type (ceph/s3-tests reads both
/// on part reads of FULL_OBJECT and COMPOSITE uploads alike). An object of one part (not a
/// multipart upload) is its own part 1, with its checksum when that is a full-object one.
pub fn part_checksum_headers(h: &mut HeaderMap, o: &ObjectInfo, n: usize) {
    let Some((alg, whole)) = o.meta.checksums.first() else {
        return;
    };
    let value = if o.meta.parts.is_empty() {
        // A composite checksum without its parts (a copy that replaced the metadata) is no
        // checksum of the one part read.
        (n == 1 && !whole.contains('-')).then_some(whole.as_str())
    } else {
        n.checked_sub(1)
            .and_then(|i| o.meta.parts.get(i))
            .and_then(|(_, c)| c.as_deref())
    };
    if let Some(v) = value {
        put(h, &format!("x-amz-checksum-{alg}"), v);
        put(
            h,
            "x-amz-checksum-type",
            crate::checksum::Algorithm::type_of(whole),
        );
    }
}

fn put(h: &mut HeaderMap, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        h.insert(n, v);
    }
}

/// The S3 error for a write that was not published.
pub fn blocked_error(b: Blocked) -> S3Error {
    match b {
        Blocked::PreconditionFailed => S3Error::precondition_failed(),
        Blocked::NoSuchKey => S3Error::no_such_key(),
        Blocked::Busy => S3Error::service_unavailable()
            .with_message("Another write of this key is in progress; please retry."),
        Blocked::Locked => S3Error::access_denied()
            .with_message("Access Denied because object protected by object lock."),
        Blocked::Conflict => S3Error::conditional_request_conflict(),
    }
}

/// Sets `x-amz-expiration` on a response about `o` when a rule of the bucket will expire it,
/// in S3's format (`expiry-date="<RFC 1123>", rule-id="<id>"`).
pub fn expiration_header(st: &AppState, b: &BucketInfo, o: &ObjectInfo, h: &mut HeaderMap) {
    let Some(text) = &b.lifecycle else { return };
    let Ok(rules) = crate::lifecycle::parse(text.as_bytes()) else {
        return;
    };
    let written = o.file.upload_date.to_chrono();
    let day = st.config.lifecycle_day_secs;
    if let Some((at, id)) =
        crate::lifecycle::object_expiry(&rules, o.key(), o.size(), &o.meta.tags, written, day)
    {
        let v = format!(
            "expiry-date=\"{}\", rule-id=\"{}\"",
            at.format("%a, %d %b %Y %H:%M:%S GMT"),
            id.replace('"', "")
        );
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert("x-amz-expiration", v);
        }
    }
}

/// The response headers that describe an object's encryption.
pub fn response_headers(
    st: &AppState,
    h: &mut HeaderMap,
    sse: Option<&SseMeta>,
    customer_md5: Option<&str>,
) {
    let Some(sse) = sse else { return };
    let mut put = |n: &'static str, v: &str| {
        if let Ok(v) = HeaderValue::from_str(v) {
            h.insert(HeaderName::from_static(n), v);
        }
    };
    match sse.mode.as_str() {
        MODE_C => {
            put("x-amz-server-side-encryption-customer-algorithm", "AES256");
            if let Some(m) = customer_md5 {
                put("x-amz-server-side-encryption-customer-key-md5", m);
            }
        }
        mode => {
            put("x-amz-server-side-encryption", mode);
            if let Some(k) = &sse.kms_key {
                put(
                    "x-amz-server-side-encryption-aws-kms-key-id",
                    &st.keys.kms_key_ref(k),
                );
            }
            if sse.bucket_key {
                put("x-amz-server-side-encryption-bucket-key-enabled", "true");
            }
        }
    }
}

/// [`response_headers`] of a write, plus the encryption context it was given (PutObject,
/// CopyObject and CreateMultipartUpload answer it).
pub fn write_response_headers(st: &AppState, h: &mut HeaderMap, sealed: Option<&SealedWrite>) {
    let Some(s) = sealed else { return };
    response_headers(st, h, Some(&s.meta), s.customer_md5.as_deref());
    if let Some(ctx) = &s.meta.context {
        let v = base64::engine::general_purpose::STANDARD.encode(ctx);
        if let Ok(v) = HeaderValue::from_str(&v) {
            h.insert(CONTEXT, v);
        }
    }
}

/// The answer to a write that published `info`: its ETag, version id, lifecycle expiration,
/// encryption and checksum headers (PutObject).
pub fn written(
    st: &AppState,
    b: &BucketInfo,
    info: &ObjectInfo,
    sealed: Option<&SealedWrite>,
) -> Response {
    let mut r = empty(axum::http::StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(info.etag()) {
        r.headers_mut().insert("etag", v);
    }
    if let Some(v) = new_version_id(info) {
        r.headers_mut().insert("x-amz-version-id", v);
    }
    expiration_header(st, b, info, r.headers_mut());
    write_response_headers(st, r.headers_mut(), sealed);
    for (alg, v) in &info.meta.checksums {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(format!("x-amz-checksum-{alg}").as_bytes()),
            HeaderValue::from_str(v),
        ) {
            r.headers_mut().insert(n, v);
        }
    }
    r
}

/// `s`, URL-encoded when the listing asked for `encoding-type=url`.
pub fn encode_if(url: bool, s: &str) -> String {
    if url {
        crate::auth::sigv4::uri_encode(s, true)
    } else {
        s.to_owned()
    }
}

/// An object's entry in a listing.
pub fn listed_contents(
    o: &crate::storage::objects::ObjectInfo,
    url: bool,
    owner: Option<crate::xml::Owner>,
) -> crate::xml::Contents {
    crate::xml::Contents {
        key: encode_if(url, o.key()),
        last_modified: crate::s3::request::headers::iso8601(o.file.upload_date),
        etag: o.etag().to_owned(),
        size: o.size(),
        owner,
        storage_class: crate::model::storage_class::reported(o.meta.storage_class.as_deref()),
        user_metadata: None,
        user_tags: None,
    }
}
