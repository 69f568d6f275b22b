//! Server-side encryption at the S3 surface: the request headers of SSE-C, SSE-S3 and SSE-KMS,
//! AWS's errors for them, the bucket default, and the response headers. The keys themselves
//! are `crate::crypto`'s.

use axum::http::{HeaderMap, StatusCode};

use crate::crypto::{keys, SseError, SseMeta, SseSpec, MODE_KMS, MODE_S3};
use crate::error::{S3Error, S3Result};
use crate::s3::request::sse::{customer_key, error, COPY_SOURCE_CUSTOMER, CUSTOMER};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
pub use crate::storage::objects::sealed::SealedWrite;
use crate::storage::objects::{DataKey, ObjectInfo};

/// The S3 error of a key-handling failure.
pub fn sse_error(st: &AppState, e: SseError) -> S3Error {
    match e {
        SseError::NoMasterKey => S3Error::not_implemented().with_message(
            "Server-side encryption with server-managed keys (SSE-S3, SSE-KMS) needs a master key, and this gateway was started without GRIDS3_MASTER_KEY; nothing was stored",
        ),
        SseError::KmsNotFound(id) => error(
            "KMS.NotFoundException",
            StatusCode::BAD_REQUEST,
            format!("Invalid keyId {id}"),
        ),
        SseError::KmsDisabled(id) => error(
            "KMS.DisabledException",
            StatusCode::BAD_REQUEST,
            format!("{} is disabled.", st.keys.kms_key_ref(&id)),
        ),
        SseError::AliasExists(a) => S3Error::invalid_argument(format!("alias {a} is taken")),
        SseError::MissingCustomerKey => S3Error::invalid_request(
            "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object.",
        ),
        // AWS answers 400 for a key that is well-formed but not the object's.
        SseError::WrongCustomerKey => S3Error::invalid_argument(
            "The provided encryption key does not match the key the object was encrypted with.",
        ),
        // AWS has no such state; 503 because the object is intact and readable again once the
        // gateway is started with the key, and the message says which key, never a 500.
        SseError::UnknownMaster(id) => S3Error::service_unavailable().with_message(format!(
            "The object's key is sealed under master key {id}, which this gateway was not started with: set GRIDS3_MASTER_KEY (or GRIDS3_PREVIOUS_MASTER_KEYS) to it."
        )),
        SseError::Mongo(m) => m.into(),
        other => {
            tracing::error!(error = %other, "an object's key does not open");
            S3Error::internal()
        }
    }
}

/// SSE-C over plain HTTP is refused, as AWS refuses it: the key has crossed the network in
/// clear, and a client that sees it work will keep doing it. `--allow-insecure-sse-c` lets it
/// through when TLS ends at a proxy in front of grids3. Any header of either prefix counts
/// (an MD5 alone too, as at AWS), so the answer does not depend on which one came first.
pub fn require_secure_transport(
    st: &AppState,
    transport: crate::tls::Transport,
    h: &HeaderMap,
) -> S3Result<()> {
    if transport.tls || st.config.allow_insecure_sse_c {
        return Ok(());
    }
    let names_a_key = h.keys().any(|n| {
        let n = n.as_str();
        n.starts_with(CUSTOMER) || n.starts_with(COPY_SOURCE_CUSTOMER)
    });
    if names_a_key {
        return Err(S3Error::invalid_request(
            "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection.",
        ));
    }
    Ok(())
}

/// The bucket's default encryption as a write spec, if it has one.
fn bucket_default(b: &BucketInfo) -> Option<SseSpec> {
    let e = b.encryption.as_ref()?;
    Some(match e.algorithm.as_str() {
        MODE_KMS => SseSpec::Kms {
            key: e.kms_key.clone(),
            context: None,
            bucket_key: e.bucket_key,
        },
        _ => SseSpec::S3 {
            bucket_key: e.bucket_key,
        },
    })
}

/// The encryption of a new object: the request's, else the bucket's default, with a fresh
/// data key; `None` for an object stored in the clear.
pub async fn prepare(
    st: &AppState,
    spec: Option<SseSpec>,
    bucket: &BucketInfo,
    chunk: u32,
) -> S3Result<Option<SealedWrite>> {
    let Some(spec) = spec.or_else(|| bucket_default(bucket)) else {
        return Ok(None);
    };
    let default_kms = bucket
        .encryption
        .as_ref()
        .filter(|e| e.algorithm == MODE_KMS)
        .and_then(|e| e.kms_key.as_deref());
    let now = st.store.meta().clock().now();
    let (meta, key) = st
        .keys
        .new_data_key(&spec, default_kms, chunk, now)
        .await
        .map_err(|e| sse_error(st, e))?;
    let customer_md5 = match &spec {
        SseSpec::Customer { key_md5, .. } => Some(key_md5.clone()),
        _ => None,
    };
    Ok(Some(SealedWrite {
        meta,
        key: DataKey(key),
        customer_md5,
    }))
}

/// Opens the upload of a new object of `bucket` with the encryption `spec` asks for (or the
/// bucket's default): PutObject, CopyObject and POST uploads.
pub async fn open_upload(
    st: &AppState,
    bucket: &BucketInfo,
    key: &str,
    spec: Option<SseSpec>,
) -> S3Result<(crate::storage::objects::ObjectWrite, Option<SealedWrite>)> {
    let chunk = st.store.gridfs(&bucket.name).chunk_size();
    let sealed = prepare(st, spec, bucket, chunk).await?;
    let up = st
        .store
        .open_upload_sealed(&bucket.name, key, false, sealed.as_ref().map(|s| s.codec()))
        .await?;
    Ok((up, sealed))
}

/// Opens an object's data key for reading, with the SSE-C key of the headers under `prefix`
/// when it is an SSE-C object. Refuses SSE-C headers for an object that is not SSE-C, and an
/// SSE-C object read without (or with another) key, as AWS does. Returns the SSE-C key's MD5.
pub async fn open_object(
    st: &AppState,
    info: &mut ObjectInfo,
    h: &HeaderMap,
    prefix: &str,
) -> S3Result<Option<String>> {
    let customer = customer_key(h, prefix)?;
    let Some(sse) = &info.meta.sse else {
        if customer.is_some() {
            return Err(S3Error::invalid_request(
                "The encryption parameters are not applicable to this object.",
            ));
        }
        return Ok(None);
    };
    if !sse.is_customer() && customer.is_some() {
        return Err(S3Error::invalid_request(
            "The encryption parameters are not applicable to this object.",
        ));
    }
    let key = st
        .keys
        .data_key(sse, customer.as_ref().map(|(k, _)| &**k))
        .await
        .map_err(|e| sse_error(st, e))?;
    info.data_key = Some(DataKey(key));
    Ok(customer.map(|(_, md5)| md5))
}

/// The encryption of a multipart upload, opened for a request that writes to it (UploadPart,
/// UploadPartCopy, CompleteMultipartUpload): its metadata, data key and SSE-C key MD5. An
/// SSE-C upload needs the key it was started with in the headers (when `required`; Complete
/// needs it only to rewrite unaligned parts); SSE-C headers for an upload that is not SSE-C are
/// refused.
pub async fn upload_key(
    st: &AppState,
    up: &crate::storage::meta::UploadRecord,
    h: &HeaderMap,
    required: bool,
) -> S3Result<Option<(SseMeta, DataKey, Option<String>)>> {
    let customer = customer_key(h, CUSTOMER)?;
    let meta = crate::storage::objects::ObjectMeta::from_metadata(Some(&up.meta));
    let Some(sse) = meta.sse else {
        if customer.is_some() {
            return Err(S3Error::invalid_request(
                "The encryption parameters are not applicable to this object.",
            ));
        }
        return Ok(None);
    };
    if sse.is_customer() && customer.is_none() && !required {
        return Ok(None);
    }
    if !sse.is_customer() && customer.is_some() {
        return Err(S3Error::invalid_request(
            "The encryption parameters are not applicable to this object.",
        ));
    }
    let key = st
        .keys
        .data_key(&sse, customer.as_ref().map(|(k, _)| &**k))
        .await
        .map_err(|e| match e {
            // UploadPart of an SSE-C upload without (or with another) key.
            SseError::MissingCustomerKey => S3Error::invalid_request(
                "The multipart upload initiate requested encryption. Subsequent part requests must include the appropriate encryption parameters.",
            ),
            SseError::WrongCustomerKey => S3Error::invalid_request(
                "The provided encryption parameters did not match the ones used originally.",
            ),
            e => sse_error(st, e),
        })?;
    Ok(Some((sse, DataKey(key), customer.map(|(_, m)| m))))
}

/// A part's ETag (hex) from its MD5: the MD5 itself, except in SSE-C and SSE-KMS uploads.
pub fn part_etag(sse: Option<&(SseMeta, DataKey, Option<String>)>, md5: &[u8; 16]) -> String {
    match sse {
        Some((m, k, _)) if m.mode != MODE_S3 => keys::opaque_etag(&k.0, md5),
        _ => hex::encode(md5),
    }
}
