//! AWS Signature Version 2, in the `Authorization: AWS <key>:<signature>` header and in query
//! strings (`AWSAccessKeyId`, `Signature`, `Expires`): what boto3's and awscli's
//! `generate_presigned_url` / `aws s3 presign` produce by default, and what older SDKs sign.
//! The signature is base64(HMAC-SHA1(secret, StringToSign)), with
//!
//! ```text
//! StringToSign = Method \n Content-MD5 \n Content-Type \n Date-or-Expires \n
//!                CanonicalizedAmzHeaders CanonicalizedResource
//! ```
//!
//! SigV2 signs no payload: the body is taken as unsigned (a Content-MD5, when sent, is still
//! checked against the body by the handlers). `--disable-sigv2` refuses it.

use axum::http::HeaderMap;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha1::Sha1;

/// `CanonicalizedResource`: `/bucket` (for virtual-hosted requests) and the path as sent,
/// then the signed sub-resources (`crate::subresource`), sorted, with decoded values.
pub fn canonical_resource(
    virtual_bucket: Option<&str>,
    raw_path: &str,
    query: &[(String, String)],
) -> String {
    let mut out = String::new();
    if let Some(b) = virtual_bucket {
        out.push('/');
        out.push_str(b);
    }
    out.push_str(if raw_path.is_empty() { "/" } else { raw_path });
    let mut subs: Vec<&(String, String)> = query
        .iter()
        .filter(|(k, _)| crate::subresource::sigv2_signs(k))
        .collect();
    subs.sort_by(|a, b| a.0.cmp(&b.0));
    for (i, (k, v)) in subs.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(k);
        if !v.is_empty() {
            out.push('=');
            out.push_str(v);
        }
    }
    out
}

/// `CanonicalizedAmzHeaders`: every `x-amz-*` header, lower-case, sorted, values joined with
/// commas, one `name:value\n` each.
pub fn canonical_amz_headers(headers: &HeaderMap) -> String {
    let mut names: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("x-amz-"))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut out = String::new();
    for n in names {
        let values: Vec<String> = headers
            .get_all(n)
            .iter()
            .map(|v| super::header_text(v.as_bytes()))
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        out.push_str(n);
        out.push(':');
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out
}

/// The StringToSign; `date` is the Date header (empty when `x-amz-date` is sent, which then
/// signs among the amz headers) or, for a query signature, `Expires`.
pub fn string_to_sign(method: &str, headers: &HeaderMap, date: &str, resource: &str) -> String {
    let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).unwrap_or("");
    format!(
        "{method}\n{}\n{}\n{date}\n{}{resource}",
        h("content-md5"),
        h("content-type"),
        canonical_amz_headers(headers)
    )
}

/// base64(HMAC-SHA1(secret, string_to_sign)).
pub fn sign(secret: &str, string_to_sign: &str) -> String {
    let mut mac = Hmac::<Sha1>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(string_to_sign.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    /// The examples of the AWS documentation ("Signing and authenticating REST requests",
    /// Signature Version 2), with its example credentials (the query-string example is from
    /// the edition that used the bucket `johnsmith`).
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    #[test]
    fn object_get_from_the_aws_documentation() {
        let mut h = HeaderMap::new();
        h.insert(
            "date",
            HeaderValue::from_static("Tue, 27 Mar 2007 19:36:42 +0000"),
        );
        let sts = string_to_sign(
            "GET",
            &h,
            "Tue, 27 Mar 2007 19:36:42 +0000",
            &canonical_resource(Some("awsexamplebucket1"), "/photos/puppy.jpg", &[]),
        );
        assert_eq!(
            sts,
            "GET\n\n\nTue, 27 Mar 2007 19:36:42 +0000\n/awsexamplebucket1/photos/puppy.jpg"
        );
        assert_eq!(sign(SECRET, &sts), "qgk2+6Sv9/oM7G3qLEjTH1a1l1g=");
    }

    #[test]
    fn query_string_example_from_the_aws_documentation() {
        let sts = string_to_sign(
            "GET",
            &HeaderMap::new(),
            "1175139620",
            &canonical_resource(Some("johnsmith"), "/photos/puppy.jpg", &[]),
        );
        assert_eq!(sign(SECRET, &sts), "NpgCjnDzrM+WFzoENXmpNDUsSn8=");
    }

    #[test]
    fn subresources_sorted_and_amz_headers_canonical() {
        let q = vec![
            ("uploadId".to_owned(), "abc".to_owned()),
            ("partNumber".to_owned(), "2".to_owned()),
            ("prefix".to_owned(), "x".to_owned()),
            ("acl".to_owned(), String::new()),
        ];
        assert_eq!(
            canonical_resource(None, "/b/k", &q),
            "/b/k?acl&partNumber=2&uploadId=abc"
        );
        let mut h = HeaderMap::new();
        h.insert("x-amz-meta-b", HeaderValue::from_static("  two   words "));
        h.append("x-amz-meta-a", HeaderValue::from_static("1"));
        h.append("x-amz-meta-a", HeaderValue::from_static("2"));
        h.insert("content-type", HeaderValue::from_static("text/plain"));
        assert_eq!(
            canonical_amz_headers(&h),
            "x-amz-meta-a:1,2\nx-amz-meta-b:two words\n"
        );
    }
}
