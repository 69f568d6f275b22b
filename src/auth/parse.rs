//! Parsing SigV4's two carriers, the Authorization header and a presigned URL's query, into
//! one [`Parsed`] (no signature is checked here: `super::authenticate` does that).

use axum::http::HeaderMap;
use chrono::{DateTime, NaiveDateTime, Utc};

use super::{MAX_PRESIGNED_EXPIRES, MAX_SKEW_SECS};
use crate::error::{S3Error, S3Result};

/// A SigV4 signature's parts, from either carrier.
pub(crate) struct Parsed {
    pub(super) access_key: String,
    pub(super) date: String,
    pub(super) region: String,
    pub(super) service: String,
    pub(super) signed_headers: String,
    pub(super) signature: String,
    pub(super) amz_date: String,
    pub(super) presigned: bool,
}

pub(super) fn header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(name).and_then(|v| v.to_str().ok())
}

pub(super) fn parse_amz_date(s: &str) -> Option<DateTime<Utc>> {
    NaiveDateTime::parse_from_str(s, "%Y%m%dT%H%M%SZ")
        .ok()
        .map(|d| d.and_utc())
}

fn parse_credential(
    cred: &str,
    malformed: fn(String) -> S3Error,
) -> S3Result<(String, String, String, String)> {
    let parts: Vec<&str> = cred.split('/').collect();
    if parts.len() != 5 || parts[4] != "aws4_request" {
        return Err(malformed(format!("the Credential '{cred}' is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")));
    }
    Ok((
        parts[0].to_owned(),
        parts[1].to_owned(),
        parts[2].to_owned(),
        parts[3].to_owned(),
    ))
}

pub(crate) fn parse_header_auth(value: &str, headers: &HeaderMap) -> S3Result<Parsed> {
    let malformed = |m: String| {
        S3Error::authorization_header_malformed(format!(
            "The authorization header is malformed; {m}"
        ))
    };
    let Some(rest) = value.strip_prefix("AWS4-HMAC-SHA256 ") else {
        if value.starts_with("AWS ") {
            return Err(S3Error::invalid_request(
                "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
            ));
        }
        // Another scheme altogether (`Basic`, `Bearer`): AWS answers `400 InvalidArgument`
        // "Unsupported Authorization Type".
        if !value.starts_with("AWS4-") {
            return Err(S3Error::invalid_argument("Unsupported Authorization Type"));
        }
        return Err(malformed(
            "the authorization mechanism is not AWS4-HMAC-SHA256.".into(),
        ));
    };
    let (mut cred, mut signed, mut sig) = (None, None, None);
    for part in rest.split(',') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("Credential=") {
            cred = Some(v);
        } else if let Some(v) = part.strip_prefix("SignedHeaders=") {
            signed = Some(v);
        } else if let Some(v) = part.strip_prefix("Signature=") {
            sig = Some(v);
        }
    }
    let (Some(cred), Some(signed), Some(sig)) = (cred, signed, sig) else {
        return Err(malformed(
            "it must contain Credential, SignedHeaders and Signature.".into(),
        ));
    };
    let (access_key, date, region, service) = parse_credential(cred, |m| {
        S3Error::authorization_header_malformed(format!(
            "The authorization header is malformed; {m}"
        ))
    })?;
    let amz_date = header(headers, "x-amz-date")
        .map(str::to_owned)
        .or_else(|| {
            header(headers, "date")
                .and_then(|d| httpdate::parse_http_date(d).ok())
                .map(|t| {
                    DateTime::<Utc>::from(t)
                        .format("%Y%m%dT%H%M%SZ")
                        .to_string()
                })
        })
        .ok_or_else(|| {
            S3Error::access_denied()
                .with_message("AWS authentication requires a valid Date or x-amz-date header")
        })?;
    Ok(Parsed {
        access_key,
        date,
        region,
        service,
        signed_headers: signed.to_owned(),
        signature: sig.to_owned(),
        amz_date,
        presigned: false,
    })
}

pub(crate) fn parse_query_auth(query: &[(String, String)], now: DateTime<Utc>) -> S3Result<Parsed> {
    let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let err = S3Error::authorization_query_parameters_error;
    if get("X-Amz-Algorithm") != Some("AWS4-HMAC-SHA256") {
        return Err(err("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\""));
    }
    let (Some(cred), Some(amz_date), Some(expires), Some(signed), Some(sig)) = (
        get("X-Amz-Credential"),
        get("X-Amz-Date"),
        get("X-Amz-Expires"),
        get("X-Amz-SignedHeaders"),
        get("X-Amz-Signature"),
    ) else {
        return Err(err("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters."));
    };
    let expires: i64 = expires
        .parse()
        .map_err(|_| err("X-Amz-Expires should be a number"))?;
    // An expiry out of range (1 s to a week) refuses the URL as an expired one does: 403
    // AccessDenied, which S3 conformance suites (Ceph's s3-tests) and the AWS SDKs' own
    // expectations agree on; the message is AWS's.
    if expires < 1 {
        return Err(S3Error::access_denied().with_message("X-Amz-Expires must be non-negative"));
    }
    if expires > MAX_PRESIGNED_EXPIRES {
        return Err(S3Error::access_denied()
            .with_message("X-Amz-Expires must be less than a week (in seconds) that is 604800"));
    }
    let start = parse_amz_date(amz_date).ok_or_else(|| {
        err("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"")
    })?;
    if now > start + chrono::Duration::seconds(expires) {
        return Err(S3Error::access_denied().with_message("Request has expired"));
    }
    if start > now + chrono::Duration::seconds(MAX_SKEW_SECS) {
        return Err(S3Error::access_denied().with_message("Request is not valid yet"));
    }
    let (access_key, date, region, service) = parse_credential(cred, |m| {
        S3Error::authorization_query_parameters_error(format!(
            "Error parsing the X-Amz-Credential parameter; {m}"
        ))
    })?;
    Ok(Parsed {
        access_key,
        date,
        region,
        service,
        signed_headers: signed.to_owned(),
        signature: sig.to_owned(),
        amz_date: amz_date.to_owned(),
        presigned: true,
    })
}
