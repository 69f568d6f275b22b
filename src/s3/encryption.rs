//! Bucket default encryption: PutBucketEncryption, GetBucketEncryption,
//! DeleteBucketEncryption. New objects whose request asks for no encryption get the bucket's
//! default (see `sse::prepare`); objects already stored keep theirs.

use axum::http::StatusCode;
use axum::response::Response;

use crate::crypto::{MODE_KMS, MODE_S3};
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::meta::BucketEncryption;
use crate::xml;

#[derive(serde::Deserialize, Debug, Default)]
struct Configuration {
    #[serde(rename = "Rule", default)]
    rules: Vec<Rule>,
}

#[derive(serde::Deserialize, Debug)]
struct Rule {
    #[serde(rename = "ApplyServerSideEncryptionByDefault")]
    default: Option<ByDefault>,
    #[serde(rename = "BucketKeyEnabled")]
    bucket_key: Option<String>,
}

#[derive(serde::Deserialize, Debug)]
struct ByDefault {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: String,
    #[serde(rename = "KMSMasterKeyID")]
    kms_key: Option<String>,
}

/// Parses a ServerSideEncryptionConfiguration as AWS validates it: one rule, AES256 or
/// aws:kms (a key id only with aws:kms), BucketKeyEnabled true or false.
fn parse(body: &[u8]) -> S3Result<BucketEncryption> {
    let c: Configuration = xml::from_xml("ServerSideEncryptionConfiguration", body)?;
    let [rule] = c.rules.as_slice() else {
        return Err(S3Error::malformed_xml());
    };
    let Some(d) = &rule.default else {
        return Err(S3Error::malformed_xml());
    };
    let bucket_key = match rule.bucket_key.as_deref().map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(S3Error::malformed_xml()),
    };
    let kms_key = d
        .kms_key
        .as_deref()
        .map(str::trim)
        .filter(|k| !k.is_empty());
    match d.algorithm.trim() {
        MODE_S3 if kms_key.is_some() => Err(S3Error::invalid_argument(
            "a KMSMasterKeyID is allowed only with SSEAlgorithm aws:kms",
        )),
        "aws:kms:dsse" => Err(S3Error::not_implemented()
            .with_message("DSSE-KMS (aws:kms:dsse) is not supported as a bucket default")),
        a @ (MODE_S3 | MODE_KMS) => Ok(BucketEncryption {
            algorithm: a.to_owned(),
            kms_key: kms_key.map(str::to_owned),
            bucket_key,
        }),
        _ => Err(S3Error::malformed_xml()),
    }
}

/// PutBucketEncryption. An aws:kms default must name a key that exists and is enabled (or
/// none: the keyring's default key), and a server-managed default needs the master key.
pub async fn put_bucket_encryption(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let mut config = parse(&body)?;
    if st.keys.masters().current.is_none() {
        return Err(super::sse::sse_error(
            st,
            crate::crypto::SseError::NoMasterKey,
        ));
    }
    if let Some(k) = &config.kms_key {
        // Kept as the id (an alias is resolved now, as AWS keeps what it was given but the
        // keyring's aliases are not meant to move).
        config.kms_key = Some(
            st.keys
                .usable_kms_key(k, st.store.meta().clock().now())
                .await
                .map_err(|e| super::sse::sse_error(st, e))?,
        );
    }
    st.store
        .meta()
        .set_bucket_encryption(&b.name, Some(&config))
        .await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketEncryption: the configuration, or ServerSideEncryptionConfigurationNotFoundError.
/// (AWS reports SSE-S3 for every bucket since 2023, because it encrypts everything; grids3
/// stores objects in the clear unless asked, so it reports what is configured.)
pub async fn get_bucket_encryption(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let Some(e) = &b.encryption else {
        return Err(S3Error {
            code: "ServerSideEncryptionConfigurationNotFoundError",
            status: StatusCode::NOT_FOUND,
            message: "The server side encryption configuration was not found".into(),
            headers: Vec::new(),
            extra: Vec::new(),
        });
    };
    let key = e
        .kms_key
        .as_deref()
        .map(|k| {
            format!(
                "<KMSMasterKeyID>{}</KMSMasterKeyID>",
                st.keys.kms_key_ref(k)
            )
        })
        .unwrap_or_default();
    Ok(xml_response(
        StatusCode::OK,
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ServerSideEncryptionConfiguration xmlns=\"{}\"><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>{}</SSEAlgorithm>{key}</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>{}</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>",
            xml::S3_NS,
            e.algorithm,
            e.bucket_key
        ),
    ))
}

/// DeleteBucketEncryption: new objects are stored in the clear again unless asked.
pub async fn delete_bucket_encryption(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_encryption(&b.name, None).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(inner: &str) -> Vec<u8> {
        format!("<ServerSideEncryptionConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{inner}</ServerSideEncryptionConfiguration>").into_bytes()
    }

    #[test]
    fn configurations_parse_as_aws_validates_them() {
        let kms = parse(&doc("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms</SSEAlgorithm><KMSMasterKeyID>k1</KMSMasterKeyID></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule>")).unwrap();
        assert_eq!(
            kms,
            BucketEncryption {
                algorithm: "aws:kms".into(),
                kms_key: Some("k1".into()),
                bucket_key: true
            }
        );
        let s3 = parse(&doc("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>")).unwrap();
        assert_eq!(s3.algorithm, "AES256");
        let err = |x: &str| parse(&doc(x)).unwrap_err().code;
        assert_eq!(err(""), "MalformedXML");
        assert_eq!(err("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES128</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"), "MalformedXML");
        assert_eq!(err("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID></ApplyServerSideEncryptionByDefault></Rule>"), "InvalidArgument");
        assert_eq!(err("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>aws:kms:dsse</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>"), "NotImplemented");
    }
}
