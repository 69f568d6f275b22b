//! The encryption headers of a request (SSE-C, SSE-S3, SSE-KMS), parsed once into a
//! `crypto::SseSpec` or an SSE-C key, with AWS's errors. Keys are opened and chunks sealed in
//! `s3::sse`, the step above.

use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use md5::{Digest, Md5};

use crate::crypto::{keys, SseSpec, MODE_KMS, MODE_S3};
use crate::error::{S3Error, S3Result};

/// The SSE-C headers of the object a request writes or reads.
pub const CUSTOMER: &str = "x-amz-server-side-encryption-customer-";

/// The SSE-C headers of a copy's source.
pub const COPY_SOURCE_CUSTOMER: &str = "x-amz-copy-source-server-side-encryption-customer-";

pub(crate) const SSE: &str = "x-amz-server-side-encryption";

pub(crate) const KMS_KEY: &str = "x-amz-server-side-encryption-aws-kms-key-id";

pub(crate) const CONTEXT: &str = "x-amz-server-side-encryption-context";

pub(crate) const BUCKET_KEY: &str = "x-amz-server-side-encryption-bucket-key-enabled";

pub(crate) fn error(code: &'static str, status: StatusCode, message: impl Into<String>) -> S3Error {
    S3Error {
        code,
        status,
        message: message.into(),
        headers: Vec::new(),
        extra: Vec::new(),
    }
}

pub(crate) fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).map(|v| v.to_str().unwrap_or("\u{0}"))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::request::test_headers as headers;

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
