//! Object bytes served by the console (previews): in a sandbox, as media or as text.

use super::*;

/// The media types the console serves as themselves (exactly these, lower-case, nothing
/// after them): anything else is served as plain text, so that no stored Content-Type
/// (`text/html`, `image/SVG+xml`, `image/png, text/html`) makes object bytes a document of
/// the console's origin.
const MEDIA: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "image/avif",
    "video/mp4",
    "video/webm",
    "video/ogg",
    "audio/mpeg",
    "audio/ogg",
    "audio/wav",
    "audio/webm",
    "audio/mp4",
    "audio/flac",
    "application/pdf",
];

/// The media type a stored Content-Type is served as: one of [`MEDIA`] when it is exactly
/// that (parameters aside), else `None` (plain text).
fn media_type(content_type: &str) -> Option<&'static str> {
    if content_type.contains(',') {
        return None;
    }
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    MEDIA.iter().copied().find(|m| *m == essence)
}

/// How the console previews a content type.
pub(super) fn preview_kind(content_type: &str) -> &'static str {
    if let Some(m) = media_type(content_type) {
        return match m.split('/').next() {
            Some("image") => "image",
            Some("video") => "video",
            Some("audio") => "audio",
            _ => "pdf",
        };
    }
    let ct = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if ct.starts_with("text/")
        || matches!(
            ct.as_str(),
            "application/json" | "application/xml" | "application/x-ndjson" | "application/yaml"
        )
    {
        "text"
    } else {
        ""
    }
}

/// Headers of object bytes served by the console: a sandbox (no script, no plugin, an
/// origin of their own), never cached (they were read under a session), and the type given.
pub(super) fn object_bytes(
    r: &mut Response,
    content_type: &'static str,
    disposition: Option<HeaderValue>,
) {
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(
        header::CONTENT_DISPOSITION,
        disposition.unwrap_or(HeaderValue::from_static("inline")),
    );
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("sandbox; default-src 'none'"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("private, no-store"),
    );
    h.remove(header::EXPIRES);
}

/// GET /raw?bucket=&key=: the object for a preview, read as the key with the browser's Range
/// and conditionals passed on (a video seeks). It is served in a sandbox (no script, no
/// plugin, an origin of its own), and as plain text unless it is an image, video, audio or
/// PDF: an object that is HTML or SVG never runs in the console's origin.
pub async fn raw(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    // The browser's Range and conditionals (a video seeks), nothing else of its request.
    let passed: Vec<(&str, String)> = ["range", "if-range", "if-none-match", "if-modified-since"]
        .into_iter()
        .filter_map(|n| Some((n, ctx.parts.headers.get(n)?.to_str().ok()?.to_owned())))
        .collect();
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let key = field(&q, "key").unwrap_or("").to_owned();
    match ctx
        .caller(&st)
        .send(
            Method::GET,
            Some(&bucket),
            Some(&key),
            &[],
            &passed,
            Body::empty(),
        )
        .await
    {
        Ok(mut r) => {
            let ct = r
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned();
            let served = media_type(&ct).unwrap_or("text/plain; charset=utf-8");
            object_bytes(&mut r, served, None);
            r
        }
        Err(e) => ctx.message(e.status, "The object cannot be shown", Some(e), "/"),
    }
}
