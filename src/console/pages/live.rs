//! Live folders: an open folder page follows the bucket's changes through the listen stream
//! (MinIO's ListenBucketNotification on the S3 endpoint, `notify::listen`), which the browser
//! opens itself with a URL presigned as the signed-in key. The stream is therefore authorized
//! as that key's own `s3:ListenBucketNotification` request, and the console carries none of
//! it. New objects appear and deleted ones go without a reload.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::{field, signed_get, Ctx, Presigner};
use crate::state::AppState;

/// How long a live URL may be used to open the stream; the page asks for a new one
/// (`/live`) when its stream ends.
const LIVE_SECONDS: u64 = 3600;

/// The presigned ListenBucketNotification URL of a folder: created and removed objects
/// under `prefix`. `None` when the session's key cannot sign (it was deleted).
pub(super) async fn listen_url(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    prefix: &str,
) -> Option<String> {
    let signer = Presigner::new(st, ctx).await.ok()?;
    let mut extra = vec![
        ("events".to_owned(), "s3:ObjectCreated:*".to_owned()),
        ("events".to_owned(), "s3:ObjectRemoved:*".to_owned()),
    ];
    if !prefix.is_empty() {
        extra.push(("prefix".to_owned(), prefix.to_owned()));
    }
    Some(signer.url("GET", bucket, None, &extra, LIVE_SECONDS))
}

/// GET /live?bucket=&prefix=: a fresh live URL (JSON), for a page whose stream ended.
pub async fn live(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("");
    let prefix = field(&q, "prefix").unwrap_or("");
    match listen_url(&st, &ctx, bucket, prefix).await {
        Some(url) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            serde_json::json!({ "url": url }).to_string(),
        )
            .into_response(),
        None => StatusCode::FORBIDDEN.into_response(),
    }
}
