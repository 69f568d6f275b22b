//! Server-side encryption at the S3 surface: the request headers of SSE-C, SSE-S3 and SSE-KMS,
//! AWS's errors for them, the bucket default, and the response headers. The keys themselves
//! are `crate::crypto`'s.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use base64::Engine;
use md5::{Digest, Md5};

use crate::crypto::{keys, SseError, SseMeta, SseSpec, MODE_C, MODE_KMS, MODE_S3};
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::gridfs::ChunkCodec;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{DataKey, ObjectInfo};

/// The SSE-C headers of the object a request writes or reads.
pub const CUSTOMER: &str = "x-amz-server-side-encryption-customer-";
/// The SSE-C headers of a copy's source.
pub const COPY_SOURCE_CUSTOMER: &str = "x-amz-copy-source-server-side-encryption-customer-";

const SSE: &str = "x-amz-server-side-encryption";
const KMS_KEY: &str = "x-amz-server-side-encryption-aws-kms-key-id";
const CONTEXT: &str = "x-amz-server-side-encryption-context";
const BUCKET_KEY: &str = "x-amz-server-side-encryption-bucket-key-enabled";

fn error(code: &'static str, status: StatusCode, message: impl Into<String>) -> S3Error {
    S3Error {
        code,
        status,
        message: message.into(),
        headers: Vec::new(),
    }
}

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
            format!("{} is disabled.", st.keys.kms_arn(&id)),
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

fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).map(|v| v.to_str().unwrap_or("\u{0}"))
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

/// An SSE-C key from the headers under `prefix` (`CUSTOMER` or `COPY_SOURCE_CUSTOMER`), checked
/// as AWS checks it: the algorithm is AES256, the key 256 bits, and its MD5 the one sent.
pub fn customer_key(h: &HeaderMap, prefix: &str) -> S3Result<Option<(keys::Key, String)>> {
    let alg = header(h, &format!("{prefix}algorithm"));
    let key = header(h, &format!("{prefix}key"));
    let md5 = header(h, &format!("{prefix}key-md5"));
    if alg.is_none() && key.is_none() && md5.is_none() {
        return Ok(None);
    }
    let what =
        "Requests specifying Server Side Encryption with Customer provided keys must provide";
    let Some(alg) = alg else {
        return Err(S3Error::invalid_argument(format!(
            "{what} a valid encryption algorithm."
        )));
    };
    if alg != "AES256" {
        return Err(error(
            "InvalidEncryptionAlgorithmError",
            StatusCode::BAD_REQUEST,
            "The Encryption request you specified is not valid. Supported value: AES256.",
        ));
    }
    let Some(key) = key else {
        return Err(S3Error::invalid_argument(format!(
            "{what} an appropriate secret key."
        )));
    };
    let Some(md5) = md5 else {
        return Err(S3Error::invalid_argument(format!(
            "{what} the client calculated MD5 of the secret key."
        )));
    };
    let b64 = base64::engine::general_purpose::STANDARD;
    // The decoded bytes and the key are zeroed when dropped.
    let key: keys::Key = b64
        .decode(key.trim())
        .ok()
        .map(zeroize::Zeroizing::new)
        .and_then(|k| <[u8; 32]>::try_from(k.as_slice()).ok())
        .map(zeroize::Zeroizing::new)
        .ok_or_else(|| {
            S3Error::invalid_argument("The secret key was invalid for the specified algorithm.")
        })?;
    let sent = b64.decode(md5.trim()).unwrap_or_default();
    if !keys::same(&Md5::digest(&key[..]), &sent) {
        return Err(S3Error::invalid_argument(
            "The calculated MD5 hash of the key did not match the hash that was provided.",
        ));
    }
    Ok(Some((key, md5.trim().to_owned())))
}

/// What a write (PutObject, CopyObject's destination, CreateMultipartUpload) asks for, from
/// its headers; `None` when it asks for nothing (the bucket default may still apply).
pub fn write_spec(h: &HeaderMap) -> S3Result<Option<SseSpec>> {
    let customer = customer_key(h, CUSTOMER)?;
    let sse = header(h, SSE);
    let kms_key = header(h, KMS_KEY);
    let context = header(h, CONTEXT);
    let bucket_key =
        match header(h, BUCKET_KEY) {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("true") => true,
            Some(v) if v.eq_ignore_ascii_case("false") => false,
            Some(_) => return Err(S3Error::invalid_argument(
                "The x-amz-server-side-encryption-bucket-key-enabled header must be true or false",
            )),
        };
    if customer.is_some() && (sse.is_some() || kms_key.is_some() || context.is_some() || bucket_key)
    {
        return Err(S3Error::invalid_argument(
            "Server Side Encryption with Customer provided key is incompatible with the encryption method specified",
        ));
    }
    if let Some((key, key_md5)) = customer {
        return Ok(Some(SseSpec::Customer { key, key_md5 }));
    }
    let kms_only = |what: &str| {
        S3Error::invalid_argument(format!(
            "{what} is only allowed with x-amz-server-side-encryption: aws:kms"
        ))
    };
    match sse {
        None if kms_key.is_some() => Err(kms_only(KMS_KEY)),
        None if context.is_some() => Err(kms_only(CONTEXT)),
        None if bucket_key => Err(S3Error::invalid_argument(
            "x-amz-server-side-encryption-bucket-key-enabled needs x-amz-server-side-encryption",
        )),
        None => Ok(None),
        Some(MODE_S3) if kms_key.is_some() => Err(kms_only(KMS_KEY)),
        Some(MODE_S3) if context.is_some() => Err(kms_only(CONTEXT)),
        Some(MODE_S3) => Ok(Some(SseSpec::S3 { bucket_key })),
        Some(MODE_KMS) => {
            if kms_key.is_some_and(|k| k.trim().is_empty()) {
                return Err(S3Error::invalid_argument("Invalid keyId ''"));
            }
            let context = context.map(parse_context).transpose()?;
            Ok(Some(SseSpec::Kms {
                key: kms_key.map(|k| k.trim().to_owned()),
                context,
                bucket_key,
            }))
        }
        Some("aws:kms:dsse") => Err(S3Error::not_implemented().with_message(
            "DSSE-KMS (aws:kms:dsse) is not supported: grids3 encrypts once, with SSE-S3 (AES256) or SSE-KMS (aws:kms)",
        )),
        Some(_) => Err(S3Error::invalid_argument(
            "The encryption method specified is not supported",
        )),
    }
}

/// The encryption context header: base64 of a JSON object of strings; kept as its JSON text.
fn parse_context(v: &str) -> S3Result<String> {
    let bad = || S3Error::invalid_argument("Invalid x-amz-server-side-encryption-context");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(v.trim())
        .map_err(|_| bad())?;
    let json: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    let obj = json.as_object().ok_or_else(bad)?;
    if !obj.values().all(|v| v.is_string()) {
        return Err(bad());
    }
    // Canonical text (sorted keys), so that the same context binds the same way however it
    // was spelled.
    let sorted: std::collections::BTreeMap<_, _> = obj.iter().collect();
    serde_json::to_string(&sorted).map_err(|_| bad())
}

/// Refuses encryption headers on requests that do not write an object (GET, HEAD, UploadPart
/// of a multipart upload whose encryption was fixed at its start), as AWS does.
pub fn refuse_write_headers(h: &HeaderMap) -> S3Result<()> {
    for n in [SSE, KMS_KEY, CONTEXT, BUCKET_KEY] {
        if h.contains_key(n) {
            return Err(S3Error::invalid_argument(format!(
                "{n} is not allowed on this request: the object's encryption is chosen when it is written"
            )));
        }
    }
    Ok(())
}

/// A new object's encryption, ready to seal its chunks.
#[derive(Clone, Debug)]
pub struct SealedWrite {
    /// What the object keeps (its `size` is filled in at publish).
    pub meta: SseMeta,
    /// Its data key.
    pub key: DataKey,
    /// SSE-C: the key's MD5 as the client sent it (echoed back).
    pub customer_md5: Option<String>,
}

impl SealedWrite {
    /// The chunk sealer.
    pub fn codec(&self) -> Arc<dyn ChunkCodec> {
        self.key.codec()
    }

    /// The metadata the published object keeps, with its plain-text length.
    pub fn published(&self, size: u64) -> SseMeta {
        SseMeta {
            size,
            ..self.meta.clone()
        }
    }
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

/// Sets what a new object's content decides in its attributes: the ETag (see [`etag`]) and the
/// encryption it keeps.
pub fn set_content(
    meta: &mut crate::storage::objects::ObjectMeta,
    sealed: Option<&SealedWrite>,
    digests: &crate::storage::gridfs::Digests,
) {
    meta.etag = Some(etag(sealed, &digests.md5));
    meta.sse = sealed.map(|s| s.published(digests.length));
}

/// The quoted ETag of a new object: the MD5 of its bytes, except under SSE-C and SSE-KMS,
/// whose ETags (as on AWS) are not (see `crypto::keys::opaque_etag`).
pub fn etag(sealed: Option<&SealedWrite>, md5: &[u8; 16]) -> String {
    match sealed {
        Some(s) if s.meta.mode != MODE_S3 => {
            format!("\"{}\"", keys::opaque_etag(&s.key.0, md5))
        }
        _ => format!("\"{}\"", hex::encode(md5)),
    }
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
                    &st.keys.kms_arn(k),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn key_headers(key: &[u8]) -> Vec<(String, String)> {
        let b64 = base64::engine::general_purpose::STANDARD;
        vec![
            (format!("{CUSTOMER}algorithm"), "AES256".into()),
            (format!("{CUSTOMER}key"), b64.encode(key)),
            (format!("{CUSTOMER}key-MD5"), b64.encode(Md5::digest(key))),
        ]
    }

    fn code(r: S3Result<Option<SseSpec>>) -> &'static str {
        r.err().map(|e| e.code).unwrap_or("ok")
    }

    #[test]
    fn write_specs_follow_aws() {
        let kh = key_headers(&[5u8; 32]);
        let k: Vec<(&str, &str)> = kh.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert!(matches!(
            write_spec(&headers(&k)).unwrap(),
            Some(SseSpec::Customer { key, .. }) if *key == [5u8; 32]
        ));
        let mut with_sse = k.clone();
        with_sse.push((SSE, "AES256"));
        assert_eq!(code(write_spec(&headers(&with_sse))), "InvalidArgument");
        assert_eq!(code(write_spec(&headers(&k[1..]))), "InvalidArgument");
        assert_eq!(code(write_spec(&headers(&k[..2]))), "InvalidArgument");
        let mut bad_alg = k.clone();
        bad_alg[0].1 = "AES128";
        assert_eq!(
            code(write_spec(&headers(&bad_alg))),
            "InvalidEncryptionAlgorithmError"
        );
        let mut bad_md5 = k.clone();
        bad_md5[2].1 = "AAAAAAAAAAAAAAAAAAAAAA==";
        assert_eq!(code(write_spec(&headers(&bad_md5))), "InvalidArgument");
        let short = key_headers(&[5u8; 16]);
        let s: Vec<(&str, &str)> = short
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(code(write_spec(&headers(&s))), "InvalidArgument");

        assert_eq!(
            write_spec(&headers(&[(SSE, "AES256")])).unwrap(),
            Some(SseSpec::S3 { bucket_key: false })
        );
        assert_eq!(
            code(write_spec(&headers(&[(SSE, "aws:kms:dsse")]))),
            "NotImplemented"
        );
        assert_eq!(
            code(write_spec(&headers(&[(SSE, "AES512")]))),
            "InvalidArgument"
        );
        assert_eq!(
            code(write_spec(&headers(&[(KMS_KEY, "k")]))),
            "InvalidArgument"
        );
        assert_eq!(
            code(write_spec(&headers(&[(SSE, "AES256"), (KMS_KEY, "k")]))),
            "InvalidArgument"
        );
        let ctx = base64::engine::general_purpose::STANDARD.encode(r#"{"b":"2","a":"1"}"#);
        assert_eq!(
            write_spec(&headers(&[
                (SSE, "aws:kms"),
                (KMS_KEY, "k1"),
                (CONTEXT, &ctx)
            ]))
            .unwrap(),
            Some(SseSpec::Kms {
                key: Some("k1".into()),
                context: Some(r#"{"a":"1","b":"2"}"#.into()),
                bucket_key: false
            })
        );
        let not_strings = base64::engine::general_purpose::STANDARD.encode(r#"{"a":1}"#);
        assert_eq!(
            code(write_spec(&headers(&[
                (SSE, "aws:kms"),
                (CONTEXT, &not_strings)
            ]))),
            "InvalidArgument"
        );
        assert_eq!(write_spec(&headers(&[])).unwrap(), None);
    }
}
