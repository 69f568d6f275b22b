//! Multipart uploads: Create, UploadPart, UploadPartCopy, Complete, Abort, ListParts,
//! ListMultipartUploads.

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use futures::TryStreamExt;

use crate::checksum::Algorithm;
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::headers::iso8601;
use crate::s3::request::headers::meta_from_headers;
use crate::s3::request::parse_copy_source;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::owner_of;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::gridfs::GridFsError;
use crate::storage::meta::UploadRecord;
use crate::xml::{self, to_xml, S3_NS};

/// Smallest part but the last, as in S3.
pub const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;
/// Largest part, as in S3.
pub const MAX_PART_SIZE: u64 = 5 * 1024 * 1024 * 1024;

mod complete;
pub use complete::complete;

/// The upload named by `uploadId`, which must belong to the request's bucket and key. (Takes
/// the strings, not the request: the request's body is not `Sync`, so a reference to it cannot
/// be held across an await in a `Send` future.)
async fn require_upload(
    st: &AppState,
    bucket: &str,
    key: &str,
    id: Option<&str>,
) -> S3Result<UploadRecord> {
    match find_upload(st, bucket, key, id).await? {
        u if u.is_open() => Ok(u),
        _ => Err(S3Error::no_such_upload()),
    }
}

/// The upload named by `uploadId`, also when it is completed (a retried Complete).
async fn find_upload(
    st: &AppState,
    bucket: &str,
    key: &str,
    id: Option<&str>,
) -> S3Result<UploadRecord> {
    match st
        .store
        .meta()
        .get_upload(bucket, id.unwrap_or_default())
        .await?
    {
        Some(u) if u.key == key && !u.aborting => Ok(u),
        _ => Err(S3Error::no_such_upload()),
    }
}

fn part_number(req: &S3Request) -> S3Result<i32> {
    req.q("partNumber")
        .and_then(|n| n.parse::<i32>().ok())
        .filter(|n| (1..=10_000).contains(n))
        .ok_or_else(|| {
            S3Error::invalid_argument(
                "Part number must be an integer between 1 and 10000, inclusive",
            )
        })
}

/// CreateMultipartUpload.
pub async fn create(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let mut meta = meta_from_headers(&req.parts.headers)?;
    meta.tags = crate::s3::request::tagging::from_header(req.header("x-amz-tagging"))?;
    meta.storage_class = crate::s3::request::headers::storage_class_of(&req.parts.headers)?;
    meta.website_redirect = crate::s3::request::headers::website_redirect_of(&req.parts.headers)?;
    meta.owner = Some(crate::s3::rules::ownership::owner_for_write(
        &b,
        &req.auth,
        req.header("x-amz-acl"),
    ));
    (meta.retention, meta.legal_hold) = crate::s3::rules::lock::for_new_object(
        &b,
        &crate::s3::request::write::LockHeaders::parse(&req.parts.headers),
        st.store.meta().clock().now(),
    )?;
    // The upload's encryption (and data key) is chosen now; every part is sealed with it.
    let spec = crate::s3::request::sse::write_spec(&req.parts.headers)?;
    let sealed =
        super::sse::prepare(st, spec, &b, crate::storage::objects::MULTIPART_CHUNK_SIZE).await?;
    meta.sse = sealed.as_ref().map(|s| s.meta.clone());
    // An additional checksum algorithm for the parts, and the object checksum's type: S3's
    // rules (CRC-64/NVME is full-object only, SHA-1 and SHA-256 composite only, the CRC-32s
    // either; the default is full-object for CRC-64/NVME and composite for the rest).
    let alg = crate::s3::request::checksum::algorithm(&req.parts.headers)?;
    let ctype = req
        .header("x-amz-checksum-type")
        .map(str::to_ascii_uppercase);
    let checksum = match (alg, ctype.as_deref()) {
        (None, None) => None,
        (None, Some(_)) => {
            return Err(S3Error::invalid_request(
                "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
            ))
        }
        (Some(a), t) => {
            let t = match (a, t) {
                (Algorithm::Crc64Nvme, None | Some("FULL_OBJECT")) => "FULL_OBJECT",
                (Algorithm::Crc32 | Algorithm::Crc32c, Some("FULL_OBJECT")) => "FULL_OBJECT",
                (Algorithm::Crc64Nvme, Some(_)) => {
                    return Err(S3Error::invalid_request(
                        "The CRC64NVME checksum algorithm supports only the FULL_OBJECT checksum type.",
                    ))
                }
                (_, None | Some("COMPOSITE")) => "COMPOSITE",
                (_, Some(other)) => {
                    return Err(S3Error::invalid_request(format!(
                        "The {} checksum algorithm does not support the {other} checksum type.",
                        a.name().to_ascii_uppercase()
                    )))
                }
            };
            Some((a.name().to_owned(), t.to_owned()))
        }
    };
    let up = st
        .store
        .create_multipart(
            req.bucket(),
            req.key(),
            req.auth.account_key(),
            &meta,
            checksum,
        )
        .await?;
    let body = xml::InitiateMultipartUploadResult {
        xmlns: S3_NS,
        bucket: up.bucket.clone(),
        key: up.key.clone(),
        upload_id: up.id.clone(),
    };
    let mut r = xml_response(
        StatusCode::OK,
        to_xml("InitiateMultipartUploadResult", &body),
    );
    crate::s3::respond::write_response_headers(st, r.headers_mut(), sealed.as_ref());
    if let (Some(a), Some(t)) = (&up.checksum_algorithm, &up.checksum_type) {
        for (h, v) in [
            ("x-amz-checksum-algorithm", a.to_ascii_uppercase()),
            ("x-amz-checksum-type", t.clone()),
        ] {
            if let Ok(v) = axum::http::HeaderValue::from_str(&v) {
                r.headers_mut().insert(h, v);
            }
        }
    }
    Ok(r)
}

/// UploadPart: streamed into chunks of the upload's chunk size, staged under the object's id.
pub async fn upload_part(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let number = part_number(&req)?;
    let up = require_upload(st, req.bucket(), req.key(), req.q("uploadId")).await?;
    crate::s3::request::sse::refuse_write_headers(&req.parts.headers)?;
    let sse = super::sse::upload_key(st, &up, &req.parts.headers, true).await?;
    let md5 = crate::s3::request::content_md5(&req)?;
    req.require_length()?;
    let mut reader = req.body_reader()?;
    if reader.declared_len().is_some_and(|l| l > MAX_PART_SIZE) {
        return Err(S3Error::entity_too_large());
    }
    let codec = sse.as_ref().map(|(_, k, _)| k.codec());
    let mut part = st
        .store
        .open_part(&up, codec)
        .await?
        .ok_or_else(S3Error::no_such_upload)?;
    let written: S3Result<()> = async {
        if let Some(n) = reader.declared_len() {
            // A metered upload holds the part's room before a byte of it is read.
            part.expect(n).await?;
        }
        while let Some(b) = reader.next().await? {
            // Chunked bodies declare no length: the cap holds while streaming.
            if part.length() + b.len() as u64 > MAX_PART_SIZE {
                return Err(S3Error::entity_too_large());
            }
            part.write(&b).await?;
        }
        let d = part.flush().await?;
        if md5.is_some_and(|m| m != d.md5) {
            return Err(S3Error::bad_digest());
        }
        Ok(())
    }
    .await;
    if let Err(e) = written {
        let _ = part.abort().await;
        return Err(e);
    }
    let checksum = reader
        .checksum()
        .map(|(a, v)| (a.name().to_owned(), v.clone()));
    let rec = st
        .store
        .commit_part(&up, number, part, checksum, |m| {
            super::sse::part_etag(sse.as_ref(), m)
        })
        .await?
        .ok_or_else(S3Error::no_such_upload)?;
    let mut r = empty(StatusCode::OK);
    crate::s3::respond::response_headers(
        st,
        r.headers_mut(),
        sse.as_ref().map(|(m, _, _)| m),
        sse.as_ref().and_then(|(_, _, c)| c.as_deref()),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", rec.md5_hex)) {
        r.headers_mut().insert("etag", v);
    }
    if let Some((a, v)) = &rec.checksum {
        let name = axum::http::HeaderName::from_bytes(format!("x-amz-checksum-{a}").as_bytes());
        if let (Ok(n), Ok(v)) = (name, HeaderValue::from_str(v)) {
            r.headers_mut().insert(n, v);
        }
    }
    Ok(r)
}

/// UploadPartCopy, with `x-amz-copy-source-range`.
pub async fn upload_part_copy(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let number = part_number(&req)?;
    let up = require_upload(st, req.bucket(), req.key(), req.q("uploadId")).await?;
    let (src_bucket, src_key) =
        parse_copy_source(req.header("x-amz-copy-source").unwrap_or_default())?;
    let src_version = crate::s3::request::copy_source_version(
        req.header("x-amz-copy-source").unwrap_or_default(),
    )?;
    require_bucket(st, &src_bucket).await?;
    let sse = super::sse::upload_key(st, &up, &req.parts.headers, true).await?;
    // An upload with a checksum algorithm gets each copied part's checksum, computed over the
    // bytes copied, as each uploaded part's is checked (without it Complete made an object
    // with no checksum at all). The request may name that algorithm, and no other, and may
    // give the value the copied bytes must have.
    let upload_alg = up
        .checksum_algorithm
        .as_deref()
        .and_then(Algorithm::from_name);
    let asked = crate::s3::request::checksum::CopyChecksum::parse(&req.parts.headers)?;
    if asked.algorithm.is_some() && asked.algorithm != upload_alg {
        return Err(S3Error::invalid_request(
            "The checksum algorithm of a part must be the one its multipart upload was created with.",
        ));
    }
    for _ in 0..3 {
        let src = crate::s3::lookup::open_copy_source(
            st,
            (&req.auth, req.source_access, &req.parts.headers),
            &src_bucket,
            &src_key,
            src_version.as_deref(),
        )
        .await?;
        let len = src.size();
        let (start, end) = match req.header("x-amz-copy-source-range") {
            None => (0, len),
            Some(r) => {
                let bad = || {
                    S3Error::invalid_argument("The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
                };
                let (a, b) = r
                    .trim()
                    .strip_prefix("bytes=")
                    .and_then(|s| s.split_once('-'))
                    .ok_or_else(bad)?;
                let (a, b): (u64, u64) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b || b >= len {
                    return Err(S3Error::invalid_range()
                        .with_message("The requested range is not satisfiable"));
                }
                (a, b + 1)
            }
        };
        if end - start > MAX_PART_SIZE {
            return Err(S3Error::entity_too_large());
        }
        // A whole object of the same content-addressed bucket: the part shares its content.
        let whole = (start, end) == (0, len);
        if whole
            && src_bucket == up.bucket
            && sse.is_none()
            && src.meta.sse.is_none()
            && upload_alg.is_none()
        {
            use crate::storage::objects::PartByReference;
            match st.store.reference_part(&up, number, &src).await {
                Ok(PartByReference::Done(rec)) => {
                    return Ok(copy_part_result(st, &rec, &src, None));
                }
                Ok(PartByReference::UploadClosed) => return Err(S3Error::no_such_upload()),
                Ok(PartByReference::NotApplicable) => {}
                Err(GridFsError::FileNotFound) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        let mut stream = match st.store.open_read(&src_bucket, &src, start, end).await {
            Ok(s) => s,
            Err(GridFsError::FileNotFound) => continue,
            Err(e) => return Err(e.into()),
        };
        let codec = sse.as_ref().map(|(_, k, _)| k.codec());
        let mut part = st
            .store
            .open_part(&up, codec)
            .await?
            .ok_or_else(S3Error::no_such_upload)?;
        let mut hasher = upload_alg.map(Algorithm::hasher);
        let copied: Result<(), GridFsError> = async {
            // A metered upload holds the copied range's room before a byte is copied (and a
            // range that cannot fit is refused whole, naming its whole size), as UploadPart
            // and CopyObject do.
            part.expect(end - start).await?;
            while let Some(b) = stream.try_next().await? {
                if let Some(h) = hasher.as_mut() {
                    h.update(&b);
                }
                part.write(&b).await?;
            }
            Ok(())
        }
        .await;
        let checksum = upload_alg
            .zip(hasher)
            .map(|(a, h)| (a.name().to_owned(), h.finish_base64()));
        if let Err(e) = copied {
            let _ = part.abort().await;
            return Err(e.into());
        }
        if !checksum.as_ref().is_none_or(|(_, v)| asked.holds(v)) {
            let _ = part.abort().await;
            return Err(S3Error::bad_digest());
        }
        let rec = st
            .store
            .commit_part(&up, number, part, checksum, |m| {
                super::sse::part_etag(sse.as_ref(), m)
            })
            .await?
            .ok_or_else(S3Error::no_such_upload)?;
        return Ok(copy_part_result(st, &rec, &src, sse.as_ref()));
    }
    // Every revision found was replaced before it could be read: the key exists all
    // along (a 404 would be a lie), so the client is told to retry.
    Err(S3Error::slow_down())
}

/// UploadPartCopy's answer.
fn copy_part_result(
    st: &AppState,
    rec: &crate::storage::meta::PartRecord,
    src: &crate::storage::objects::ObjectInfo,
    sse: Option<&(
        crate::crypto::SseMeta,
        crate::storage::objects::DataKey,
        Option<String>,
    )>,
) -> Response {
    let body = xml::CopyPartResult {
        xmlns: S3_NS,
        last_modified: iso8601(rec.last_modified),
        etag: format!("\"{}\"", rec.md5_hex),
        checksum: xml::ChecksumValues::from_pairs(rec.checksum.as_slice()),
    };
    let mut r = xml_response(StatusCode::OK, to_xml("CopyPartResult", &body));
    crate::s3::respond::version_headers(&mut r, src, None);
    crate::s3::respond::response_headers(
        st,
        r.headers_mut(),
        sse.map(|(m, _, _)| m),
        sse.and_then(|(_, _, c)| c.as_deref()),
    );
    r
}

/// A ListParts entry's checksum fields (the rest is filled in by the caller).
fn part_checksums(p: &crate::storage::meta::PartRecord) -> xml::PartEntry {
    let (a, v) = p
        .checksum
        .as_ref()
        .map(|(a, v)| (a.as_str(), v.as_str()))
        .unzip();
    let [crc32, crc32c, crc64nvme, sha1, sha256] = xml::checksum_fields(a, v);
    xml::PartEntry {
        part_number: 0,
        last_modified: String::new(),
        etag: String::new(),
        size: 0,
        checksum_crc32: crc32,
        checksum_crc32c: crc32c,
        checksum_crc64nvme: crc64nvme,
        checksum_sha1: sha1,
        checksum_sha256: sha256,
    }
}

/// AbortMultipartUpload.
pub async fn abort(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let up = require_upload(st, req.bucket(), req.key(), req.q("uploadId")).await?;
    st.store.abort_multipart(&up).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// An upload's `Owner` and `Initiator`, as AWS reports them: the initiator is the key that
/// started it; the owner is whoever will own the object (the bucket's owner under
/// `BucketOwnerEnforced`, or under `BucketOwnerPreferred` with `bucket-owner-full-control`;
/// the initiator otherwise), as decided when the upload was created.
fn owner_and_initiator(
    b: &crate::storage::meta::BucketInfo,
    initiator: &str,
    meta: &mongodb::bson::Document,
) -> (xml::Owner, xml::Owner) {
    let recorded = meta.get_str("s3Owner").ok().unwrap_or(initiator);
    let owner = crate::s3::rules::ownership::object_owner(b, Some(recorded));
    (owner_of(owner), owner_of(initiator))
}

/// ListParts (part-number-marker, max-parts).
pub async fn list_parts(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let up = require_upload(st, req.bucket(), req.key(), req.q("uploadId")).await?;
    // SSE-C key headers are optional here, but when sent they must be the upload's key.
    super::sse::upload_key(st, &up, &req.parts.headers, false).await?;
    let marker: i32 = req
        .q("part-number-marker")
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    let max: i64 = match req.q("max-parts") {
        None => 1000,
        Some(m) => m
            .parse::<i64>()
            .ok()
            .filter(|m| *m >= 0)
            .ok_or_else(|| S3Error::invalid_argument("max-parts must be an integer"))?
            .min(1000),
    };
    let mut parts = st.store.meta().list_parts(&up.id, marker, max + 1).await?;
    let truncated = parts.len() as i64 > max;
    parts.truncate(max as usize);
    let (owner, initiator) = owner_and_initiator(&bucket, &up.owner, &up.meta);
    let body = xml::ListPartsResult {
        xmlns: S3_NS,
        bucket: up.bucket.clone(),
        key: up.key.clone(),
        upload_id: up.id.clone(),
        part_number_marker: marker,
        next_part_number_marker: parts.last().map(|p| p.number),
        max_parts: max,
        is_truncated: truncated,
        parts: parts
            .iter()
            .map(|p| xml::PartEntry {
                part_number: p.number,
                last_modified: iso8601(p.last_modified),
                etag: format!("\"{}\"", p.md5_hex),
                size: p.size,
                ..part_checksums(p)
            })
            .collect(),
        initiator,
        owner,
        storage_class: crate::model::storage_class::reported(
            crate::storage::objects::ObjectMeta::storage_class_in(&up.meta),
        ),
        checksum_algorithm: up
            .checksum_algorithm
            .as_ref()
            .map(|a| a.to_ascii_uppercase()),
        checksum_type: up.checksum_type.clone(),
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListPartsResult", &body),
    ))
}

/// ListMultipartUploads (prefix, delimiter, key-marker, upload-id-marker, max-uploads).
pub async fn list_uploads(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let prefix = req.q("prefix").unwrap_or_default().to_owned();
    let delimiter = req
        .q("delimiter")
        .filter(|d| !d.is_empty())
        .map(str::to_owned);
    let key_marker = req.q("key-marker").unwrap_or_default().to_owned();
    let id_marker = req.q("upload-id-marker").unwrap_or_default().to_owned();
    // `encoding-type=url`: keys, prefixes, markers and the delimiter URL-encoded, as in the
    // object listings; any other value is refused as there.
    let url = req.url_encoding()?;
    let enc = |s: String| {
        if url {
            crate::auth::sigv4::uri_encode(&s, true)
        } else {
            s
        }
    };
    let max: usize = match req.q("max-uploads") {
        None => 1000,
        Some(m) => m
            .parse::<usize>()
            .map_err(|_| S3Error::invalid_argument("max-uploads must be an integer"))?
            .min(1000),
    };
    // Read in bounded ranges of keys, a batch at a time, until the page is full.
    // A key-marker that is a common prefix (a page that ended on one) continues past
    // everything under it, as in ListObjects; before, the next page began with the same
    // prefix again, and with max-uploads=1 every page was the same.
    let start = match delimiter.as_deref() {
        Some(d)
            if key_marker.starts_with(prefix.as_str())
                && key_marker.ends_with(d)
                && key_marker[prefix.len()..].find(d)
                    == Some(key_marker.len() - prefix.len() - d.len()) =>
        {
            Some(
                crate::storage::objects::prefix_successor(&key_marker)
                    .unwrap_or_else(crate::storage::ranges::top),
            )
        }
        _ => (!key_marker.is_empty()).then(|| key_marker.clone()),
    };
    // When the upload the marker names still exists, where it stands in the listing's order.
    let marker_at = if id_marker.is_empty() {
        None
    } else {
        st.store
            .meta()
            .get_upload(&bucket.name, &id_marker)
            .await?
            .filter(|m| m.key == key_marker)
            .map(|m| m.initiated)
    };
    let mut all =
        st.store
            .meta()
            .list_uploads(&bucket.name, &prefix, start.as_deref(), st.store.posts());
    let mut uploads = Vec::new();
    let mut prefixes: Vec<String> = Vec::new();
    let mut last: Option<(String, String)> = None;
    let mut truncated = false;
    let mut batch = std::collections::VecDeque::new();
    loop {
        if batch.is_empty() {
            let want = (max + 1).saturating_sub(uploads.len() + prefixes.len());
            batch.extend(all.next(want).await?);
        }
        let Some(u) = batch.pop_front() else {
            break;
        };
        let after_marker = key_marker.is_empty()
            || u.key > key_marker
            || (u.key == key_marker
                && !id_marker.is_empty()
                && match &marker_at {
                    // Uploads of a key are listed in the order they began (then by id), so
                    // the marker is passed in that order; comparing ids alone skipped uploads
                    // that began later under a smaller (random) id.
                    Some(at) => (u.initiated, u.id.as_str()) > (*at, id_marker.as_str()),
                    None => u.id.as_str() > id_marker.as_str(),
                });
        if !after_marker {
            continue;
        }
        let cp = delimiter.as_deref().and_then(|d| {
            let rest = &u.key[prefix.len()..];
            rest.find(d)
                .map(|i| u.key[..prefix.len() + i + d.len()].to_owned())
        });
        if let Some(cp) = &cp {
            if prefixes.last() == Some(cp) {
                continue;
            }
        }
        if uploads.len() + prefixes.len() == max {
            truncated = true;
            break;
        }
        match cp {
            Some(cp) => {
                last = Some((cp.clone(), String::new()));
                if let Some(s) = crate::storage::objects::prefix_successor(&cp) {
                    all.skip_to(s);
                }
                prefixes.push(cp);
            }
            None => {
                last = Some((u.key.clone(), u.id.clone()));
                let (owner, initiator) = owner_and_initiator(&bucket, &u.owner, &u.meta);
                uploads.push(xml::UploadEntry {
                    key: u.key,
                    upload_id: u.id,
                    initiator,
                    owner,
                    storage_class: crate::model::storage_class::reported(
                        crate::storage::objects::ObjectMeta::storage_class_in(&u.meta),
                    ),
                    initiated: iso8601(u.initiated),
                    checksum_algorithm: u
                        .checksum_algorithm
                        .as_ref()
                        .map(|a| a.to_ascii_uppercase()),
                    checksum_type: u.checksum_type.clone(),
                });
            }
        }
    }
    let body = xml::ListMultipartUploadsResult {
        xmlns: S3_NS,
        bucket: bucket.name,
        key_marker: enc(key_marker),
        upload_id_marker: id_marker,
        next_key_marker: truncated
            .then(|| last.as_ref().map(|l| enc(l.0.clone())))
            .flatten(),
        next_upload_id_marker: truncated
            .then(|| last.as_ref().map(|l| l.1.clone()))
            .flatten(),
        prefix: enc(prefix),
        delimiter: delimiter.map(enc),
        max_uploads: max as i64,
        is_truncated: truncated,
        encoding_type: url.then(|| "url".to_owned()),
        uploads: uploads
            .into_iter()
            .map(|mut u| {
                u.key = enc(u.key);
                u
            })
            .collect(),
        common_prefixes: prefixes
            .into_iter()
            .map(|prefix| xml::CommonPrefix {
                prefix: enc(prefix),
            })
            .collect(),
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListMultipartUploadsResult", &body),
    ))
}
