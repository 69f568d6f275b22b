//! Browser uploads: the console starts a multipart upload as the signed-in key, signs one
//! presigned URL per part with that key's secret, and the browser sends the parts straight to
//! the S3 endpoint (no copy through the console), in parallel, retrying a failed part. The
//! console then completes (or aborts) the upload as the same key.
//!
//! Every step is the S3 request the key would send: CreateMultipartUpload, UploadPart (each
//! presigned URL is checked again by the S3 endpoint when used), CompleteMultipartUpload and
//! AbortMultipartUpload, so a key that may not write gets AWS's refusal at the first step.
//!
//! The answers are JSON, read by the console's script.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::{field, reason, signed_post, Ctx, Presigner};
use crate::error::S3Error;
use crate::state::AppState;

/// The smallest part the console asks for (S3's minimum is 5 MiB; 8 MiB as the AWS CLI).
const MIN_PART: u64 = 8 * 1024 * 1024;

/// Parts of one upload the console signs at most: a file needs more than this many parts of
/// `MIN_PART` only above 8 GB, and then gets larger parts.
const MAX_PARTS: u64 = 1000;

/// S3's largest part, and so (with `MAX_PARTS`) the largest file the console uploads: 5,000
/// GiB, a little under S3's 5 TiB (larger files: the AWS CLI).
const MAX_PART: u64 = 5 * 1024 * 1024 * 1024;

/// How long a part URL stays valid: a slow upload of a large file must not outlive it.
const PART_URL_SECONDS: u64 = 6 * 3600;

/// The part size for a file of `size` bytes, and how many parts it makes (at least one: an
/// empty file is one empty part). `None` when the file is larger than S3 allows.
pub fn plan(size: u64) -> Option<(u64, u64)> {
    const MIB: u64 = 1024 * 1024;
    let part = size.div_ceil(MAX_PARTS).div_ceil(MIB) * MIB;
    let part = part.max(MIN_PART);
    if part > MAX_PART {
        return None;
    }
    Some((part, size.div_ceil(part).max(1)))
}

fn json(status: StatusCode, v: serde_json::Value) -> Response {
    (
        status,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn refused(e: &S3Error) -> Response {
    json(e.status, serde_json::json!({ "error": reason(e) }))
}

/// The bucket and key of an upload form, with the checks a browser needs: a URL path with
/// `.` or `..` segments is rewritten by the browser before it is sent.
fn target(f: &[(String, String)]) -> Result<(String, String), S3Error> {
    let bucket = field(f, "bucket").unwrap_or("").to_owned();
    let key = field(f, "key").unwrap_or("").to_owned();
    if bucket.is_empty() || key.is_empty() {
        return Err(S3Error::invalid_argument("A bucket and a key are needed"));
    }
    if key.split('/').any(|s| s == "." || s == "..") {
        return Err(S3Error::invalid_argument(
            "A key with . or .. segments cannot be uploaded from a browser (browsers rewrite them)",
        ));
    }
    Ok((bucket, key))
}

#[derive(Deserialize)]
struct Initiated {
    #[serde(rename = "UploadId")]
    upload_id: String,
}

/// POST /uploads/start: CreateMultipartUpload as the key (with the file's content type), and
/// the presigned URL of each part.
pub async fn start(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let (bucket, key) = match target(&f) {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let Some((part, parts)) = field(&f, "size")
        .and_then(|s| s.parse::<u64>().ok())
        .and_then(plan)
    else {
        return refused(&S3Error::invalid_argument(
            "The file's size is missing, or larger than the console uploads (5,000 GiB)",
        ));
    };
    let mut headers = Vec::new();
    if let Some(t) = field(&f, "type").filter(|t| !t.is_empty()) {
        headers.push(("content-type", t.to_owned()));
    }
    let created = ctx
        .caller(&st)
        .send_text(
            Method::POST,
            Some(&bucket),
            Some(&key),
            &[("uploads", "")],
            &headers,
            Body::empty(),
            64 * 1024,
        )
        .await;
    let text = match created {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let Ok(init) = quick_xml::de::from_str::<Initiated>(&text) else {
        return refused(&S3Error::internal());
    };
    match part_urls(&st, &ctx, &bucket, &key, &init.upload_id, parts).await {
        Ok(urls) => json(
            StatusCode::OK,
            serde_json::json!({ "uploadId": init.upload_id, "partSize": part, "urls": urls }),
        ),
        Err(e) => refused(&e),
    }
}

/// The presigned UploadPart URL of parts 1..=`parts`.
async fn part_urls(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    key: &str,
    upload_id: &str,
    parts: u64,
) -> Result<Vec<String>, S3Error> {
    let signer = Presigner::new(st, ctx).await?;
    Ok((1..=parts)
        .map(|n| {
            let extra = [
                ("partNumber".to_owned(), n.to_string()),
                ("uploadId".to_owned(), upload_id.to_owned()),
            ];
            signer.url("PUT", bucket, Some(key), &extra, PART_URL_SECONDS)
        })
        .collect())
}

/// The CompleteMultipartUpload body for the parts' ETags, in order.
fn complete_body(etags: &[&str]) -> String {
    let mut x = String::from("<CompleteMultipartUpload>");
    for (i, e) in etags.iter().enumerate() {
        x.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
            i + 1,
            quick_xml::escape::escape(*e)
        ));
    }
    x.push_str("</CompleteMultipartUpload>");
    x
}

/// POST /uploads/complete: CompleteMultipartUpload as the key, with the ETags the browser
/// read from each part's answer (one a line, in part order).
pub async fn complete(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let (bucket, key) = match target(&f) {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let upload_id = field(&f, "uploadId").unwrap_or("");
    let etags: Vec<&str> = field(&f, "etags")
        .unwrap_or("")
        .split('\n')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .collect();
    if upload_id.is_empty() || etags.is_empty() {
        return refused(&S3Error::invalid_argument(
            "An upload id and the parts' ETags are needed",
        ));
    }
    let done = ctx
        .caller(&st)
        .send_text(
            Method::POST,
            Some(&bucket),
            Some(&key),
            &[("uploadId", upload_id)],
            &[],
            Body::from(complete_body(&etags)),
            64 * 1024,
        )
        .await;
    let text = match done {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    // CompleteMultipartUpload may fail after its 200 has started: the error is in the body.
    if text.contains("<Error>") {
        return json(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::json!({ "error": "CompleteMultipartUpload failed after it started; retry the upload" }),
        );
    }
    json(StatusCode::OK, serde_json::json!({ "ok": true }))
}

/// POST /uploads/abort: AbortMultipartUpload as the key (a cancelled upload leaves no parts).
pub async fn abort(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let (bucket, key) = match target(&f) {
        Ok(t) => t,
        Err(e) => return refused(&e),
    };
    let upload_id = field(&f, "uploadId").unwrap_or("");
    if upload_id.is_empty() {
        return refused(&S3Error::invalid_argument("An upload id is needed"));
    }
    match ctx
        .caller(&st)
        .send(
            Method::DELETE,
            Some(&bucket),
            Some(&key),
            &[("uploadId", upload_id)],
            &[],
            Body::empty(),
        )
        .await
    {
        Ok(_) => json(StatusCode::OK, serde_json::json!({ "ok": true })),
        Err(e) => refused(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_planned_within_s3s_limits() {
        const MIB: u64 = 1024 * 1024;
        assert_eq!(plan(0), Some((8 * MIB, 1)));
        assert_eq!(plan(1), Some((8 * MIB, 1)));
        assert_eq!(plan(8 * MIB), Some((8 * MIB, 1)));
        assert_eq!(plan(50 * MIB), Some((8 * MIB, 7)));
        // Past 1,000 parts of 8 MiB, parts grow (whole MiB) so that there are at most 1,000.
        let (p, n) = plan(10_000 * MIB).unwrap();
        assert_eq!((p, n), (10 * MIB, 1000));
        assert_eq!(plan(MAX_PARTS * MAX_PART), Some((MAX_PART, MAX_PARTS)));
        assert_eq!(plan(MAX_PARTS * MAX_PART + 1), None);
    }

    #[test]
    fn the_complete_body_escapes_etags() {
        assert_eq!(
            complete_body(&["\"a\"", "<b>"]),
            "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>&quot;a&quot;</ETag></Part><Part><PartNumber>2</PartNumber><ETag>&lt;b&gt;</ETag></Part></CompleteMultipartUpload>"
        );
    }
}
