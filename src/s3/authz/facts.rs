//! The condition keys of a request, for bucket policies' `Condition` blocks.

use std::collections::HashMap;

use crate::auth::Auth;

/// The condition keys of a request (names lower-case), for bucket policies: the global keys
/// grids3 knows (`aws:SourceIp`, `aws:SecureTransport`, `aws:Referer`, `aws:UserAgent`,
/// `aws:CurrentTime`, `aws:EpochTime`, `aws:username`, `aws:userid`) and S3's (`s3:prefix`,
/// `s3:delimiter`, `s3:max-keys`, `s3:x-amz-*` request headers, `s3:VersionId`,
/// `s3:RequestObjectTag/<key>`, `s3:RequestObjectTagKeys`). `s3:ExistingObjectTag/<key>` is
/// added when a policy asks for it ([`authorize`]).
pub fn facts(
    headers: &axum::http::HeaderMap,
    query: &[(String, String)],
    auth: &Auth,
    source_ip: Option<std::net::IpAddr>,
    transport: crate::tls::Transport,
    now: chrono::DateTime<chrono::Utc>,
) -> HashMap<String, Vec<String>> {
    let mut v: HashMap<String, Vec<String>> = HashMap::new();
    let mut put = |k: &str, val: String| v.entry(k.to_owned()).or_default().push(val);
    if let Some(ip) = source_ip {
        put("aws:sourceip", ip.to_string());
    }
    // True only for TLS that grids3 itself ended: behind a TLS proxy it cannot tell, and a
    // policy denying `aws:SecureTransport: false` then denies (the safe way to be wrong).
    put("aws:securetransport", transport.tls.to_string());
    put(
        "aws:currenttime",
        now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    );
    put("aws:epochtime", now.timestamp().to_string());
    if !auth.is_anonymous() {
        // An account's own key is its root credentials: as on AWS it has no `aws:username`
        // (an IAM user of any account may be named like a key id, and would otherwise share
        // its `${aws:username}` home), and its principal is the account. An IAM user's
        // request replaces these with the user's (`auth::principal`).
        put("aws:userid", auth.access_key.clone());
        let account = crate::storage::identity::account_id(auth.account_key());
        put("aws:principalarn", format!("arn:aws:iam::{account}:root"));
        put("aws:principalaccount", account);
        put("aws:principaltype", "Account".to_owned());
    }
    // Temporary credentials: when they were issued (by the database's clock), which AWS's way
    // of revoking a role's sessions tests (`DateLessThan` on `aws:TokenIssueTime`).
    if let Some(t) = &auth.token {
        put(
            "aws:tokenissuetime",
            t.issued
                .to_chrono()
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        );
    }
    let header = |n: &str| headers.get(n).and_then(|h| h.to_str().ok());
    if let Some(r) = header("referer") {
        put("aws:referer", r.to_owned());
    }
    if let Some(u) = header("user-agent") {
        put("aws:useragent", u.to_owned());
    }
    for (name, value) in headers {
        let n = name.as_str();
        let s3_key = n.starts_with("x-amz-acl")
            || n.starts_with("x-amz-grant-")
            || n.starts_with("x-amz-server-side-encryption")
            || matches!(
                n,
                "x-amz-copy-source"
                    | "x-amz-metadata-directive"
                    | "x-amz-content-sha256"
                    | "x-amz-storage-class"
                    | "x-amz-object-lock-mode"
                    | "x-amz-object-lock-legal-hold"
            );
        // The SSE-C key itself is never a condition value (AWS offers only its MD5,
        // `s3:x-amz-server-side-encryption-customer-key-MD5`, which the prefix above keeps).
        if s3_key && !crate::auth::SECRET_HEADERS.contains(&n) {
            if let Ok(val) = value.to_str() {
                put(&format!("s3:{n}"), val.to_owned());
            }
        }
    }
    for (k, val) in query {
        match k.as_str() {
            "prefix" => put("s3:prefix", val.clone()),
            "delimiter" => put("s3:delimiter", val.clone()),
            "max-keys" => put("s3:max-keys", val.clone()),
            "versionId" => put("s3:versionid", val.clone()),
            _ => {}
        }
    }
    if let Some(t) = header("x-amz-tagging") {
        for (k, val) in crate::auth::sigv4::parse_query(Some(t)) {
            add_request_tag(&mut v, &k, &val);
        }
    }
    v
}

/// Adds one tag a request sets (`x-amz-tagging`, PutObjectTagging's body) to its condition
/// keys.
pub fn add_request_tag(v: &mut HashMap<String, Vec<String>>, key: &str, value: &str) {
    v.entry("s3:requestobjecttagkeys".into())
        .or_default()
        .push(key.to_owned());
    v.entry(format!("s3:requestobjecttag/{}", key.to_ascii_lowercase()))
        .or_default()
        .push(value.to_owned());
}
