//! CompleteMultipartUpload: the parts checked against the request, a completion slot
//! (`--max-completions`, waiting `--completion-wait`), the completion as a task of its own that
//! outlives the connection, AWS's keep-alive answer for a long one, and the object's checksum
//! combined from the parts'.

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use md5::{Digest, Md5};

use super::{find_upload, MIN_PART_SIZE};
use crate::checksum::Algorithm;
use crate::error::{S3Error, S3Result};
use crate::notify::EventName;
use crate::s3::events;
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::meta::UploadRecord;
use crate::xml::{self, to_xml, S3_NS};

/// CompleteMultipartUpload.
pub async fn complete(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let up = find_upload(st, req.bucket(), req.key(), req.q("uploadId")).await?;
    let cond = crate::s3::request::headers::write_condition(&req.parts.headers)?;
    // `x-amz-checksum-<alg>` on a Complete is the whole object's checksum, which the SDKs'
    // upload helpers send, not the XML body's: taken out before the body is read, and checked
    // against the object's below.
    let given_checksum = take_object_checksum(&mut req.parts.headers)?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let request: xml::CompleteMultipartUpload = xml::from_xml("CompleteMultipartUpload", &body)?;
    if request.parts.is_empty() {
        return Err(S3Error::malformed_xml());
    }
    if request
        .parts
        .windows(2)
        .any(|w| w[0].part_number >= w[1].part_number)
    {
        return Err(S3Error::invalid_part_order());
    }
    // A Complete that published already (and may have deleted the part records since) is
    // answered from what it published, before any part is looked for: completed, or published
    // and not yet marked (a completion still finishing, or one that crashed there; the sweep
    // or the running task marks it).
    let published = match up.completed {
        Some(_) => None,
        None => st.store.completed_object(&up).await?,
    };
    if up.completed.is_some() || published.is_some() {
        // The same request gets the same answer: the ETag its parts make is compared with the
        // one the first Complete started with. Its condition held when first evaluated.
        let mut h = Md5::new();
        for p in &request.parts {
            let md5 = hex::decode(p.etag.trim().trim_matches('"'))
                .map_err(|_| S3Error::invalid_part())?;
            h.update(md5);
        }
        let etag = format!("\"{}-{}\"", hex::encode(h.finalize()), request.parts.len());
        let done = match &up.completed {
            Some(c) => c.get_str("etag").ok(),
            None => up.completing.as_deref(),
        };
        if done != Some(etag.as_str()) {
            return Err(S3Error::no_such_upload());
        }
        let info = match published {
            Some(info) => info,
            None => st
                .store
                .completed_object(&up)
                .await?
                .ok_or_else(S3Error::no_such_upload)?,
        };
        // Its event again: the first Complete may have published and then failed to queue
        // it (answering 503), and this is the answer the client takes as the acknowledgement.
        // A consumer may see it twice (at least once, as documented).
        let change = events::created(EventName::CompleteMultipartUpload, &info);
        events::record(st, &up.bucket, &events::origin(&req), &[change]).await?;
        return Ok(complete_result(st, &up, &info));
    }
    let stored = st.store.meta().list_parts(&up.id, 0, 0).await?;
    let mut parts = Vec::with_capacity(request.parts.len());
    for p in &request.parts {
        let found = stored
            .iter()
            .find(|s| {
                s.number == p.part_number
                    && s.md5_hex == p.etag.trim().trim_matches('"').to_ascii_lowercase()
            })
            .ok_or_else(S3Error::invalid_part)?;
        parts.push(found.clone());
    }
    if parts[..parts.len() - 1]
        .iter()
        .any(|p| p.size < MIN_PART_SIZE)
    {
        return Err(S3Error::entity_too_small());
    }
    // The S3 multipart ETag: MD5 of the concatenated binary part MD5s, then "-<count>".
    let mut h = Md5::new();
    for p in &parts {
        h.update(hex::decode(&p.md5_hex).map_err(|_| S3Error::internal())?);
    }
    let etag = format!("\"{}-{}\"", hex::encode(h.finalize()), parts.len());
    for (p, given) in parts.iter().zip(&request.parts) {
        if let Some((a, v)) = &p.checksum {
            let Some(g) = given.checksum(a) else { continue };
            if g != v {
                return Err(S3Error::invalid_part());
            }
        }
    }
    let object_sum = object_checksum(&up, &parts);
    if let Some(given) = &given_checksum {
        check_object_checksum(&up, object_sum.as_ref(), given)?;
    }
    let checksums = object_sum.into_iter().collect();
    let sse = crate::s3::sse::upload_key(st, &up, &req.parts.headers, false).await?;
    if sse.is_none() && up.meta.contains_key("s3Sse") {
        // An SSE-C upload completed without its key: fine while every part is adopted in
        // place; parts that are not a multiple of the chunk size are re-sealed, which needs
        // the key (a grids3 requirement beyond AWS's, which keeps no such layout).
        let cs = u64::from(up.chunk_size);
        if parts[..parts.len() - 1].iter().any(|p| p.size % cs != 0) {
            return Err(S3Error::invalid_request(format!(
                "This SSE-C upload has parts that are not a multiple of {cs} bytes: send the encryption key (x-amz-server-side-encryption-customer-*) with CompleteMultipartUpload"
            )));
        }
    }
    // The condition is checked under the key's lock before any chunk moves; a failed one leaves
    // the upload as it was (the client may retry or abort it), as in S3. (A retry of a Complete
    // that published already was answered above, whatever the condition says now.)
    // A slot among the `--max-completions` that may run at once; the task holds it to its end.
    let slot = match tokio::time::timeout(
        std::time::Duration::from_secs(st.config.completion_wait),
        st.completions.clone().acquire_owned(),
    )
    .await
    {
        Ok(Ok(p)) => p,
        _ => {
            crate::metrics::completion_refused();
            return Err(S3Error::slow_down());
        }
    };
    // The completion runs as a task of its own: a client that gives up (a read timeout) does
    // not stop it halfway, so its retry finds the upload completed instead of starting over.
    let work = {
        let (st, up) = (st.clone(), up.clone());
        let data_key = sse.map(|(_, k, _)| k);
        let origin = events::origin(&req);
        async move {
            let _slot = slot;
            crate::metrics::completions_running(1.0);
            let _running = scopeguard_running();
            let (info, stats) = st
                .store
                .with_key_locked(&up.bucket, &up.key, &cond, |lock| async {
                    let done = st
                        .store
                        .complete_multipart(&up, &parts, &etag, checksums, &lock, data_key.as_ref())
                        .await?;
                    Ok((done, lock))
                })
                .await?
                .map_err(crate::s3::respond::blocked_error)?
                .ok_or_else(S3Error::no_such_upload)?;
            tracing::info!(bucket = %up.bucket, key = %up.key, parts = parts.len(), adopted = stats.parts_adopted, bytes_rewritten = stats.bytes_rewritten, "multipart upload completed");
            // In the task, not the handler: a completion outlives a client that gave up, and
            // its event must not depend on that client.
            let change = events::created(EventName::CompleteMultipartUpload, &info);
            events::record(&st, &up.bucket, &origin, &[change]).await?;
            Ok::<_, S3Error>(info)
        }
    };
    let mut task = tokio::spawn(work);
    let patience = std::time::Duration::from_millis(st.config.complete_keepalive_ms);
    if let Ok(r) = tokio::time::timeout(patience, &mut task).await {
        return Ok(complete_result(st, &up, &joined(r)?));
    }
    // A versioned bucket's answer names the new version in a header, which the keep-alive form
    // would have to send before the version exists: that answer waits whole.
    let versioned = st
        .store
        .meta()
        .bucket_cached(&up.bucket)
        .await?
        .is_some_and(|b| b.versioning.is_some());
    if versioned {
        return Ok(complete_result(st, &up, &joined(task.await)?));
    }
    Ok(keepalive_response(st, up, task))
}

/// Counts a running completion down when it ends, however it ends.
fn scopeguard_running() -> impl Drop {
    struct Running;
    impl Drop for Running {
        fn drop(&mut self) {
            crate::metrics::completions_running(-1.0);
        }
    }
    Running
}

type Completion = S3Result<crate::storage::objects::ObjectInfo>;

/// A completion task's outcome (a task that panicked is an internal error).
fn joined(r: Result<Completion, tokio::task::JoinError>) -> Completion {
    r.unwrap_or_else(|e| {
        tracing::error!(error = %e, "a multipart completion task failed");
        Err(S3Error::internal())
    })
}

/// How often the keep-alive form sends a space while the completion runs.
const KEEPALIVE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// CompleteMultipartUpload's long form, as AWS answers a completion that takes a while: `200`
/// and the XML declaration at once, a space every few seconds, then the
/// `CompleteMultipartUploadResult`, or an `<Error>` document if the completion failed (the AWS
/// SDKs look for one in a 200 answer to this request).
fn keepalive_response(
    st: &AppState,
    up: UploadRecord,
    task: tokio::task::JoinHandle<Completion>,
) -> Response {
    const DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    let st2 = st.clone();
    let resource = format!("/{}/{}", up.bucket, up.key);
    let meta = crate::storage::objects::ObjectMeta::from_metadata(Some(&up.meta));
    let state = (Some(task), false);
    let body = futures::stream::unfold(state, move |(task, started)| {
        let (st, up, resource) = (st2.clone(), up.clone(), resource.clone());
        async move {
            if !started {
                return Some((
                    Ok::<_, std::io::Error>(bytes::Bytes::from(DECLARATION)),
                    (task, true),
                ));
            }
            let mut task = task?;
            tokio::select! {
                r = &mut task => {
                    let doc = match joined(r) {
                        Ok(info) => body_of(complete_result(&st, &up, &info)).await,
                        Err(e) => xml::to_xml("Error", &xml::ErrorDoc {
                            code: e.code,
                            message: &e.message,
                            resource: &resource,
                            request_id: "",
                            extra: Default::default(),
                        }),
                    };
                    let doc = doc.strip_prefix(DECLARATION).unwrap_or(&doc).to_owned();
                    Some((Ok(bytes::Bytes::from(doc)), (None, true)))
                }
                _ = tokio::time::sleep(KEEPALIVE_EVERY) => {
                    Some((Ok(bytes::Bytes::from_static(b" ")), (Some(task), true)))
                }
            }
        }
    });
    let mut r = Response::new(axum::body::Body::from_stream(body));
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    crate::s3::respond::response_headers(st, r.headers_mut(), meta.sse.as_ref(), None);
    r
}

/// A small response's body as text (the completion's result document).
async fn body_of(r: Response) -> String {
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 20)
        .await
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The CompleteMultipartUploadResult document.
fn complete_result(
    st: &AppState,
    up: &UploadRecord,
    info: &crate::storage::objects::ObjectInfo,
) -> Response {
    let checksum = info.meta.checksums.first();
    let mut c = xml::checksum_fields(
        checksum.map(|(a, _)| a.as_str()),
        checksum.map(|(_, v)| v.as_str()),
    );
    let body = xml::CompleteMultipartUploadResult {
        xmlns: S3_NS,
        location: format!(
            "/{}/{}",
            up.bucket,
            crate::auth::sigv4::uri_encode(&up.key, true)
        ),
        bucket: up.bucket.clone(),
        key: up.key.clone(),
        etag: info.etag().to_owned(),
        checksum_crc32: c[0].take(),
        checksum_crc32c: c[1].take(),
        checksum_crc64nvme: c[2].take(),
        checksum_sha1: c[3].take(),
        checksum_sha256: c[4].take(),
        checksum_type: checksum.map(|(_, v)| {
            if v.contains('-') {
                "COMPOSITE".to_owned()
            } else {
                "FULL_OBJECT".to_owned()
            }
        }),
    };
    let mut r = xml_response(
        StatusCode::OK,
        to_xml("CompleteMultipartUploadResult", &body),
    );
    if let Some(v) = crate::s3::respond::new_version_id(info) {
        r.headers_mut().insert("x-amz-version-id", v);
    }
    crate::s3::respond::response_headers(st, r.headers_mut(), info.meta.sse.as_ref(), None);
    r
}

/// The whole-object checksum a Complete names (`x-amz-checksum-<alg>`), removed from the
/// headers; more than one is `InvalidRequest`, as on a PUT.
fn take_object_checksum(h: &mut axum::http::HeaderMap) -> S3Result<Option<(Algorithm, String)>> {
    let found = Algorithm::named_in(|n| h.get(n).and_then(|v| v.to_str().ok()), true)
        .map_err(S3Error::invalid_request)?;
    for alg in Algorithm::ALL {
        h.remove(alg.header());
    }
    Ok(found)
}

/// Checks the whole-object checksum a Complete names against the one the parts make: the
/// upload's algorithm and type (a composite value may come with or without its `-<count>`),
/// `BadDigest` when it differs, `InvalidRequest` when the upload cannot have it (another
/// algorithm, or none, or parts without checksums).
fn check_object_checksum(
    up: &UploadRecord,
    computed: Option<&(String, String)>,
    given: &(Algorithm, String),
) -> S3Result<()> {
    let (alg, value) = given;
    let created = up.checksum_algorithm.as_deref().unwrap_or("null");
    if !created.eq_ignore_ascii_case(alg.name()) {
        return Err(S3Error::invalid_request(format!(
            "The upload was created using the {created} checksum algorithm but the request used {}",
            alg.name()
        )));
    }
    let Some((_, computed)) = computed else {
        return Err(S3Error::invalid_request(format!(
            "Not every part was uploaded with a {} checksum, so the object's cannot be checked",
            alg.name()
        )));
    };
    let base = |v: &str| v.split('-').next().unwrap_or_default().to_owned();
    let matches = if computed.contains('-') {
        base(value) == base(computed) && (!value.contains('-') || value == computed)
    } else {
        value == computed
    };
    if !matches {
        return Err(S3Error::bad_digest().with_message(format!(
            "The {} you specified did not match the calculated checksum.",
            alg.header()
        )));
    }
    Ok(())
}

/// A multipart object's checksum, when the upload named an algorithm at creation and every
/// part carries it: S3's composite form (the checksum of the concatenated binary part
/// checksums, then `-<count>`), or the full-object CRC, combined from the parts' CRCs and
/// sizes (no byte is read again).
fn object_checksum(
    up: &UploadRecord,
    parts: &[crate::storage::meta::PartRecord],
) -> Option<(String, String)> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let alg = Algorithm::from_name(up.checksum_algorithm.as_deref()?)?;
    let part_sums = parts
        .iter()
        .map(|p| {
            let (a, v) = p.checksum.as_ref()?;
            (a == alg.name()).then(|| b64.decode(v).ok()).flatten()
        })
        .collect::<Option<Vec<Vec<u8>>>>()?;
    if up.checksum_type.as_deref() == Some("FULL_OBJECT") {
        let crc_alg = match alg {
            Algorithm::Crc32 => crc_fast::CrcAlgorithm::Crc32IsoHdlc,
            Algorithm::Crc32c => crc_fast::CrcAlgorithm::Crc32Iscsi,
            Algorithm::Crc64Nvme => crc_fast::CrcAlgorithm::Crc64Nvme,
            _ => return None,
        };
        let mut whole: Option<u64> = None;
        for (sum, p) in part_sums.iter().zip(parts) {
            let v = sum.iter().fold(0u64, |acc, b| (acc << 8) | u64::from(*b));
            whole = Some(match whole {
                None => v,
                Some(w) => crc_fast::checksum_combine(crc_alg, w, v, p.size),
            });
        }
        let width = part_sums.first()?.len();
        let bytes = whole?.to_be_bytes();
        return Some((alg.name().to_owned(), b64.encode(&bytes[8 - width..])));
    }
    let mut h = alg.hasher();
    for s in &part_sums {
        h.update(s);
    }
    Some((
        alg.name().to_owned(),
        format!("{}-{}", h.finish_base64(), parts.len()),
    ))
}
