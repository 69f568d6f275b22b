//! POST Object: browser form uploads (`multipart/form-data` to `POST /bucket`).
//!
//! The form authenticates itself: a base64 policy document (`expiration` and `conditions`)
//! signed with SigV4 (`x-amz-algorithm`, `x-amz-credential`, `x-amz-date`,
//! `x-amz-signature`: hex HMAC-SHA256 of the policy with the SigV4 signing key) or SigV2
//! (`AWSAccessKeyId`, `signature`: base64 HMAC-SHA1 of the policy). Every field but the
//! signature, `policy`, `file` and `x-ignore-*` must satisfy a condition (`eq` or an exact
//! `{field: value}`, `starts-with`), and `content-length-range` bounds the file, checked while
//! it streams into GridFS (never buffered whole). Fields after the file are ignored, as AWS
//! ignores them. `${filename}` in the key is the uploaded file's name. The answer follows
//! `success_action_redirect` (303) or `success_action_status` (204 by default, 200, or 201
//! with a `PostResponse` document). Anonymous POSTs are refused: grids3 has no public-write
//! buckets yet.

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{request::Parts, HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine;
use chrono::{DateTime, Utc};

use super::authz;
use super::op::Op;
use crate::auth::{sigv2, sigv4, Auth};
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::headers::meta_from_headers;
use crate::s3::request::MAX_PUT_SIZE;
use crate::s3::respond::blocked_error;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::objects::WriteCondition;
use crate::xml;

/// Largest form field other than the file (AWS allows 20 KB for the whole form before it).
const MAX_FIELD: u64 = 20 * 1024;

fn bad(msg: impl Into<String>) -> S3Error {
    S3Error::invalid_argument(msg)
}

fn policy_error(msg: impl Into<String>) -> S3Error {
    S3Error::access_denied().with_message(format!("Invalid according to Policy: {}", msg.into()))
}

/// A read from the form, or RequestTimeout when the client sends nothing for a minute (as a
/// PUT body's reader does).
async fn idle<T>(f: impl std::future::Future<Output = T>) -> S3Result<T> {
    tokio::time::timeout(crate::auth::body::BODY_IDLE, f)
        .await
        .map_err(|_| S3Error::request_timeout())
}

/// A parsed policy: its expiration and conditions.
struct Policy {
    expiration: DateTime<Utc>,
    /// `(field, kind, value)`: kind `eq` or `starts-with`, field lower-case without `$`.
    matches: Vec<(String, String, String)>,
    length: Option<(u64, u64)>,
}

fn parse_policy(b64: &str) -> S3Result<Policy> {
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|_| bad("Invalid Policy: Invalid 'Base64' encoded string."))?;
    let v: serde_json::Value =
        serde_json::from_slice(&raw).map_err(|_| bad("Invalid Policy: Invalid JSON."))?;
    let expiration = v["expiration"]
        .as_str()
        .and_then(|e| DateTime::parse_from_rfc3339(e).ok())
        .ok_or_else(|| bad("Invalid Policy: Policy missing expiration."))?
        .with_timezone(&Utc);
    // An empty list, or an empty condition, is malformed (AWS: 400), not a policy that no
    // field can satisfy.
    let conds = v["conditions"]
        .as_array()
        .filter(|c| !c.is_empty())
        .ok_or_else(|| bad("Invalid Policy: Policy missing conditions."))?;
    let mut p = Policy {
        expiration,
        matches: Vec::new(),
        length: None,
    };
    let text = |x: &serde_json::Value| -> S3Result<String> {
        match x {
            serde_json::Value::String(s) => Ok(s.clone()),
            serde_json::Value::Number(n) => Ok(n.to_string()),
            _ => Err(bad("Invalid Policy: Invalid Condition.")),
        }
    };
    for c in conds {
        match c {
            serde_json::Value::Object(m) if m.is_empty() => {
                return Err(bad("Invalid Policy: Invalid Condition."))
            }
            serde_json::Value::Object(m) => {
                for (k, val) in m {
                    p.matches
                        .push((k.to_ascii_lowercase(), "eq".into(), text(val)?));
                }
            }
            serde_json::Value::Array(a) if a.len() == 3 => {
                let op = a[0].as_str().unwrap_or_default().to_ascii_lowercase();
                if op == "content-length-range" {
                    let n = |x: &serde_json::Value| {
                        x.as_u64()
                            .or_else(|| x.as_str().and_then(|s| s.parse().ok()))
                            .ok_or_else(|| bad("Invalid Policy: Invalid content-length-range."))
                    };
                    p.length = Some((n(&a[1])?, n(&a[2])?));
                    continue;
                }
                let field = a[1]
                    .as_str()
                    .and_then(|f| f.strip_prefix('$'))
                    .ok_or_else(|| bad("Invalid Policy: Invalid Condition."))?
                    .to_ascii_lowercase();
                if op != "eq" && op != "starts-with" {
                    return Err(bad(format!(
                        "Invalid Policy: Invalid Condition: unknown operation {op}."
                    )));
                }
                p.matches.push((field, op, text(&a[2])?));
            }
            _ => return Err(bad("Invalid Policy: Invalid Condition.")),
        }
    }
    Ok(p)
}

/// Fields no condition needs to cover.
fn exempt(field: &str) -> bool {
    matches!(
        field,
        "policy" | "x-amz-signature" | "signature" | "awsaccesskeyid" | "file"
    ) || field.starts_with("x-ignore-")
}

/// The `x-amz-checksum-<alg>` field of a form, checked as the header is: one at most, of a
/// known algorithm, a well-formed value (and `x-amz-checksum-algorithm`, if given, naming it).
fn form_checksum(
    fields: &BTreeMap<String, String>,
) -> S3Result<Option<(crate::checksum::Algorithm, String)>> {
    use crate::checksum::Algorithm;
    // A field naming no algorithm grids3 knows is refused, as it would be ignored.
    if let Some(k) = fields.keys().find(|k| {
        k.strip_prefix("x-amz-checksum-")
            .is_some_and(|n| n != "algorithm" && Algorithm::from_name(n).is_none())
    }) {
        return Err(S3Error::invalid_request(format!(
            "{k} is not a checksum field"
        )));
    }
    let found = Algorithm::named_in(|n| fields.get(n).map(String::as_str), false)
        .map_err(S3Error::invalid_request)?;
    if let Some(named) = fields.get("x-amz-checksum-algorithm") {
        if found.as_ref().map(|(a, _)| *a) != Algorithm::from_name(named) {
            return Err(S3Error::invalid_request(
                "Value for x-amz-checksum-algorithm is invalid: it must name the form's x-amz-checksum- field.",
            ));
        }
    }
    Ok(found)
}

/// Checks every field against the policy's conditions, AWS's way.
fn check_conditions(p: &Policy, fields: &BTreeMap<String, String>) -> S3Result<()> {
    for (field, op, want) in &p.matches {
        let have = fields.get(field).map(String::as_str).unwrap_or("");
        let ok = match op.as_str() {
            "eq" => have == want,
            // A starts-with condition on Content-Type holds for each comma-separated value.
            _ if field == "content-type" => {
                have.split(',').all(|v| v.trim().starts_with(want.as_str()))
            }
            _ => have.starts_with(want.as_str()),
        };
        if !ok {
            return Err(policy_error(format!(
                "Policy Condition failed: [\"{op}\", \"${field}\", \"{want}\"]"
            )));
        }
    }
    for name in fields.keys() {
        if !exempt(name) && !p.matches.iter().any(|(f, _, _)| f == name) {
            return Err(policy_error(format!("Extra input fields: {name}")));
        }
    }
    Ok(())
}

/// Verifies the form's signature over the policy; the signing key's owner.
async fn verify(st: &AppState, fields: &BTreeMap<String, String>) -> S3Result<Auth> {
    let get = |k: &str| fields.get(k).map(String::as_str);
    let signed = [
        "policy",
        "x-amz-signature",
        "x-amz-credential",
        "signature",
        "awsaccesskeyid",
    ];
    if signed.iter().all(|k| !fields.contains_key(*k)) {
        // No policy and no signature: an anonymous POST, which the bucket's ACL must allow
        // (WRITE for AllUsers), as in AWS.
        return Ok(Auth::anonymous());
    }
    let policy = get("policy").ok_or_else(S3Error::access_denied)?;
    let (access_key, stored, ok) = if let Some(sig) = get("x-amz-signature") {
        if get("x-amz-algorithm") != Some("AWS4-HMAC-SHA256") {
            return Err(bad("Unsupported x-amz-algorithm"));
        }
        // The form's date as SigV4 writes it (`20260101T000000Z`); anything else is 400.
        let date = get("x-amz-date").unwrap_or_default();
        if chrono::NaiveDateTime::parse_from_str(date, "%Y%m%dT%H%M%SZ").is_err() {
            return Err(bad(format!("Invalid x-amz-date: {date:?}")));
        }
        let cred = get("x-amz-credential").ok_or_else(|| bad("Missing x-amz-credential"))?;
        let parts: Vec<&str> = cred.split('/').collect();
        if parts.len() != 5 || parts[4] != "aws4_request" || parts[3] != "s3" {
            return Err(bad(format!("Invalid x-amz-credential: {cred}")));
        }
        if parts[2] != st.config.region {
            return Err(S3Error::authorization_query_parameters_error(format!(
                "the region '{}' is wrong; expecting '{}'",
                parts[2], st.config.region
            )));
        }
        // Temporary credentials come with their session token as a form field (which the
        // policy must name, as every field): checked as a header's would be.
        let secret =
            crate::auth::token::signing_secret(&st.creds, parts[0], get("x-amz-security-token"))
                .await?;
        let key = sigv4::signing_key(&secret.secret, parts[1], parts[2], parts[3]);
        let ok = sigv4::signatures_equal(&sigv4::sign(&key, policy), &sig.to_ascii_lowercase());
        (parts[0].to_owned(), secret, ok)
    } else if let (Some(ak), Some(sig)) = (get("awsaccesskeyid"), get("signature")) {
        if st.config.disable_sigv2 {
            return Err(S3Error::invalid_request(
                "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
            ));
        }
        let secret =
            crate::auth::token::signing_secret(&st.creds, ak, get("x-amz-security-token")).await?;
        let ok = sigv4::signatures_equal(&sigv2::sign(&secret.secret, policy), sig);
        (ak.to_owned(), secret, ok)
    } else {
        // A policy without a signature (or a signature without its key) proves nothing; AWS
        // answers it as a malformed form (400), naming the field that is missing.
        let missing =
            if fields.contains_key("x-amz-credential") || fields.contains_key("x-amz-algorithm") {
                "x-amz-signature"
            } else if fields.contains_key("awsaccesskeyid") {
                "Signature"
            } else {
                "AWSAccessKeyId"
            };
        return Err(bad(format!(
            "Bucket POST must contain a field named '{missing}'.  If it is specified, please check the order of the fields."
        )));
    };
    if !ok {
        return Err(S3Error::signature_does_not_match());
    }
    Ok(Auth::of_key(access_key, &stored))
}

/// POST Object, answered before (and instead of) header authentication.
pub async fn post_object(
    st: &AppState,
    bucket: &str,
    parts: &Parts,
    body: Body,
    source_ip: Option<std::net::IpAddr>,
    request_id: &str,
) -> S3Result<Response> {
    let ctype = parts
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multer::parse_boundary(ctype).map_err(|_| {
        S3Error::invalid_request("Bucket POST must be of the enclosure-type multipart/form-data")
    })?;
    let mut form = multer::Multipart::with_constraints(
        body.into_data_stream(),
        boundary,
        multer::Constraints::new().size_limit(
            multer::SizeLimit::new()
                .per_field(MAX_PUT_SIZE + 1)
                .whole_stream(MAX_PUT_SIZE + 64 * 1024),
        ),
    );
    let malformed = |e: multer::Error| {
        S3Error::malformed_post_request().with_message(format!(
            "The body of your POST request is not well-formed multipart/form-data: {e}"
        ))
    };
    // Fields up to the file (names compare case-insensitively, as AWS compares them).
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    let mut file = loop {
        let Some(mut f) = idle(form.next_field()).await?.map_err(malformed)? else {
            return Err(bad("POST requires exactly one file upload per request."));
        };
        let name = f.name().unwrap_or_default().to_ascii_lowercase();
        if name == "file" {
            break f;
        }
        let mut value = Vec::new();
        while let Some(c) = idle(f.chunk()).await?.map_err(malformed)? {
            value.extend_from_slice(&c);
            if value.len() as u64 > MAX_FIELD {
                return Err(S3Error::max_post_pre_data_length_exceeded());
            }
        }
        fields.insert(name, String::from_utf8_lossy(&value).into_owned());
    };
    // Form fields that would change what is stored but that this handler does not apply
    // are refused, never accepted and ignored.
    if let Some(f) = fields.keys().find(|k| {
        *k == "x-amz-object-lock-mode"
            || *k == "x-amz-object-lock-retain-until-date"
            || *k == "x-amz-object-lock-legal-hold"
    }) {
        return Err(S3Error::not_implemented().with_message(format!(
            "The form field {f} is not implemented for POST uploads"
        )));
    }
    let filename = file.file_name().unwrap_or_default().to_owned();
    let key_field = fields
        .get("key")
        .cloned()
        .ok_or_else(|| bad("Bucket POST must contain a field named 'key'.  If it is specified, please check the order of the fields."))?;
    let key = key_field.replace("${filename}", &filename);
    let auth = verify(st, &fields).await?;
    // An anonymous form has no policy to satisfy: the bucket's ACL alone decides.
    let policy = if auth.is_anonymous() {
        None
    } else {
        let policy = parse_policy(fields.get("policy").map(String::as_str).unwrap_or_default())?;
        if Utc::now() > policy.expiration {
            return Err(S3Error::access_denied()
                .with_message("Invalid according to Policy: Policy expired."));
        }
        // Conditions on the key hold for the key as stored, `${filename}` replaced (AWS
        // checks `["starts-with", "$key", "foo"]` against `foo.txt` for `${filename}`).
        let mut checked = fields.clone();
        checked.insert("bucket".into(), bucket.to_owned());
        checked.insert("key".into(), key.clone());
        check_conditions(&policy, &checked)?;
        Some(policy)
    };
    // The bucket policy sees the form's fields where a PUT has headers (`x-amz-acl`, ...).
    // Only the form's fields, never the HTTP request's own `x-amz-*` headers, which the
    // stored object does not take: a condition must see what is stored.
    let mut form_headers = parts.headers.clone();
    let amz: Vec<HeaderName> = form_headers
        .keys()
        .filter(|k| k.as_str().starts_with("x-amz-"))
        .cloned()
        .collect();
    for k in amz {
        form_headers.remove(k);
    }
    for (k, v) in &fields {
        if let (Ok(n), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            form_headers.insert(n, v);
        }
    }
    let facts = authz::facts(
        &form_headers,
        &[],
        &auth,
        source_ip,
        crate::tls::Transport::of(&parts.extensions),
        st.store.meta().clock().now().to_chrono(),
    );
    let target = authz::Target {
        bucket,
        key: Some(&key),
        facts: &facts,
        // POST refuses the lock fields (above); a `tagging` field needs s3:PutObjectTagging,
        // as `x-amz-tagging` on a PUT does.
        shape: crate::s3::actions::Shape {
            tagging: fields.contains_key("tagging"),
            ..Default::default()
        },
    };
    authz::authorize(st, &Op::PutObject, &auth, &target, None).await?;
    require_bucket(st, bucket).await?;
    if key.is_empty() || key.len() > 1024 {
        return Err(if key.is_empty() {
            bad("User key must have a length greater than 0.")
        } else {
            S3Error::key_too_long()
        });
    }
    // Object attributes from the fields, as a PUT takes them from its headers.
    let mut h = HeaderMap::new();
    if let Some(acl) = fields
        .get("acl")
        .and_then(|v| HeaderValue::from_str(v).ok())
    {
        // The form's `acl` field is the header's `x-amz-acl`: honoured or refused the same.
        h.insert("x-amz-acl", acl);
    }
    for (k, v) in &fields {
        let attr = matches!(
            k.as_str(),
            "content-type"
                | "cache-control"
                | "content-disposition"
                | "content-encoding"
                | "expires"
                | "x-amz-acl"
                | "x-amz-storage-class"
                | "x-amz-website-redirect-location"
        ) || k.starts_with("x-amz-meta-")
            || k.starts_with("x-amz-grant-")
            || k.starts_with("x-amz-server-side-encryption");
        if attr {
            // A value no header could carry is refused, as the same header would be: dropped,
            // the form would store an object without what it asked for.
            match (
                HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                (Ok(n), Ok(v)) => {
                    h.insert(n, v);
                }
                _ => {
                    return Err(S3Error::invalid_argument(format!(
                        "The form field {k} has a value no header can carry"
                    )))
                }
            }
        }
    }
    super::sse::require_secure_transport(st, crate::tls::Transport::of(&parts.extensions), &h)?;
    crate::s3::lookup::resolve_grant_emails(st, &mut h).await?;
    let acl = crate::s3::lookup::request_acl(st, &h, true).await?;
    let b = require_bucket(st, bucket).await?;
    crate::s3::rules::ownership::check_acl(
        crate::s3::rules::ownership::acls_disabled(&b),
        h.get("x-amz-acl").and_then(|v| v.to_str().ok()),
        acl.as_deref(),
        &crate::s3::respond::owner_of(&b.owner).id,
    )?;
    crate::s3::rules::public_access::check_acl(
        crate::s3::rules::public_access::effective(st, &b),
        acl.as_deref(),
    )?;
    let mut meta = meta_from_headers(&h)?;
    meta.storage_class = crate::s3::request::headers::storage_class_of(&h)?;
    meta.website_redirect = crate::s3::request::headers::website_redirect_of(&h)?;
    // The `tagging` field is the XML tag set that PutObjectTagging takes.
    if let Some(t) = fields.get("tagging") {
        meta.tags = crate::s3::request::tagging::from_xml_body(t.as_bytes())?;
    }
    let checksum = form_checksum(&fields)?;
    let mut hasher = checksum.as_ref().map(|(alg, _)| alg.hasher());
    meta.owner = Some(crate::s3::rules::ownership::owner_for_write(
        &b,
        &auth,
        h.get("x-amz-acl").and_then(|v| v.to_str().ok()),
    ));
    let (min, max) = policy.and_then(|p| p.length).unwrap_or((0, MAX_PUT_SIZE));
    let spec = crate::s3::request::sse::write_spec(&h)?;
    let (mut up, sealed) = super::sse::open_upload(st, &b, &key, spec).await?;
    let streamed: S3Result<()> = async {
        while let Some(c) = idle(file.chunk()).await?.map_err(malformed)? {
            if up.length() + c.len() as u64 > max.min(MAX_PUT_SIZE) {
                return Err(S3Error::entity_too_large());
            }
            if let Some(h) = hasher.as_mut() {
                h.update(&c);
            }
            up.write(&c).await?;
        }
        Ok(())
    }
    .await;
    // The file's checksum, when the form names one: BadDigest on a mismatch, stored and
    // returned as a PUT's.
    let streamed = streamed.and_then(|()| match (&checksum, hasher) {
        (Some((alg, want)), Some(h)) => {
            let got = h.finish_base64();
            if &got != want {
                return Err(S3Error::bad_digest().with_message(format!(
                    "The {} you specified did not match the calculated checksum.",
                    alg.header()
                )));
            }
            meta.checksums = vec![(alg.name().to_owned(), got)];
            Ok(())
        }
        _ => Ok(()),
    });
    if let Err(e) = streamed {
        let _ = up.abort().await;
        return Err(e);
    }
    if up.length() < min {
        let _ = up.abort().await;
        return Err(S3Error::entity_too_small());
    }
    let digests = up.end().await?;
    crate::s3::write::set_content(&mut meta, sealed.as_ref(), &digests);
    let info = crate::s3::lookup::within_request_timeout(
        st,
        st.store
            .publish_if(bucket, up, meta, &WriteCondition::Always),
    )
    .await??
    .map_err(blocked_error)?;
    let origin = crate::s3::events::origin_of(
        (!auth.is_anonymous()).then_some(auth.access_key.as_str()),
        source_ip,
        request_id,
    );
    let change = crate::s3::events::created(crate::notify::EventName::Post, &info);
    crate::s3::events::record(st, bucket, &origin, &[change]).await?;
    // Fields after the file are not read: AWS ignores them.
    let etag = info.etag().to_owned();
    if let Some(url) = fields
        .get("success_action_redirect")
        .or(fields.get("redirect"))
        .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
    {
        let enc = |v: &str| sigv4::uri_encode(v, false);
        let sep = if url.contains('?') { '&' } else { '?' };
        let to = format!(
            "{url}{sep}bucket={}&key={}&etag={}",
            enc(bucket),
            enc(&key),
            enc(&etag)
        );
        let mut r = empty(StatusCode::SEE_OTHER);
        if let Ok(v) = HeaderValue::from_str(&to) {
            r.headers_mut().insert("location", v);
        }
        return Ok(r);
    }
    let location = format!("/{bucket}/{}", sigv4::uri_encode(&key, true));
    let mut r = match fields.get("success_action_status").map(String::as_str) {
        Some("200") => empty(StatusCode::OK),
        Some("201") => xml_response(
            StatusCode::CREATED,
            xml::to_xml(
                "PostResponse",
                &xml::PostResponse {
                    location: location.clone(),
                    bucket: bucket.to_owned(),
                    key: key.clone(),
                    etag: etag.clone(),
                },
            ),
        ),
        _ => empty(StatusCode::NO_CONTENT),
    };
    if let Ok(v) = HeaderValue::from_str(&etag) {
        r.headers_mut().insert("etag", v);
    }
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert("location", v);
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(s)
    }

    #[test]
    fn policies_and_conditions() {
        let p = parse_policy(&b64(
            r#"{"expiration": "2030-01-01T00:00:00.000Z", "conditions": [
                {"bucket": "b"}, ["starts-with", "$key", "uploads/"], {"acl": "private"},
                ["content-length-range", 1, 1048576], ["starts-with", "$Content-Type", "image/"]]}"#,
        ))
        .unwrap();
        assert_eq!(p.length, Some((1, 1_048_576)));
        let mut f: BTreeMap<String, String> = [
            ("bucket", "b"),
            ("key", "uploads/${filename}"),
            ("acl", "private"),
            ("content-type", "image/png"),
            ("policy", "x"),
            ("x-ignore-me", "1"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        assert!(check_conditions(&p, &f).is_ok());
        f.insert("key".into(), "elsewhere/x".into());
        assert!(check_conditions(&p, &f).is_err());
        f.insert("key".into(), "uploads/x".into());
        f.insert("x-amz-meta-extra".into(), "1".into());
        let e = check_conditions(&p, &f).unwrap_err();
        assert!(e.message.contains("Extra input fields: x-amz-meta-extra"));
        assert!(parse_policy("not base64!").is_err());
        assert!(parse_policy(&b64(r#"{"conditions": []}"#)).is_err());
    }
}
