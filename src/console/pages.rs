//! The console's routes: gather the session and the form, send the S3 request as the
//! signed-in key, render the page.

use askama::Template;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};

use super::s3call::{BucketList, Caller, ObjectList};
use super::session::{self, Signed};
use super::views;
use crate::error::S3Error;
use crate::state::AppState;

/// Largest form body the console reads.
const MAX_FORM: usize = 256 * 1024;

/// Objects and folders on one page of a folder.
const PAGE: &str = "200";

fn html(t: impl Template) -> Response {
    match t.render() {
        Ok(body) => ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a console template failed");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    }
}

fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

fn tls(parts: &Parts) -> bool {
    crate::tls::Transport::of(&parts.extensions).tls
}

/// A form or query string, decoded (`+` is a space in forms).
fn pairs(raw: &str) -> Vec<(String, String)> {
    raw.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let d = |s: &str| crate::percent::decode(&s.replace('+', " "));
            (d(k), d(v))
        })
        .collect()
}

fn field<'a>(f: &'a [(String, String)], name: &str) -> Option<&'a str> {
    f.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

async fn form(body: Body) -> Result<Vec<(String, String)>, Response> {
    let bytes = axum::body::to_bytes(body, MAX_FORM)
        .await
        .map_err(|_| StatusCode::PAYLOAD_TOO_LARGE.into_response())?;
    Ok(pairs(&String::from_utf8_lossy(&bytes)))
}

/// What every signed-in page needs.
struct Ctx {
    parts: Parts,
    signed: Signed,
    request_id: String,
}

impl Ctx {
    fn caller<'a>(&'a self, st: &'a AppState) -> Caller<'a> {
        Caller {
            st,
            access_key: &self.signed.session.access_key,
            root: self.signed.root,
            parts: &self.parts,
            request_id: &self.request_id,
        }
    }

    fn who(&self) -> String {
        self.signed.session.access_key.clone()
    }

    fn csrf(&self) -> String {
        self.signed.session.csrf.clone()
    }

    /// A page saying what happened (an S3 refusal shows AWS's code and reason).
    fn message(
        &self,
        status: StatusCode,
        title: &str,
        error: Option<S3Error>,
        back: &str,
    ) -> Response {
        let mut r = html(views::Message {
            who: self.who(),
            csrf: self.csrf(),
            root: self.signed.root,
            error: error.map(|e| reason(&e)),
            title: title.to_owned(),
            back: back.to_owned(),
        });
        *r.status_mut() = status;
        r
    }
}

/// AWS's code and message of a refusal, as the console shows it.
fn reason(e: &S3Error) -> String {
    format!("{}: {}", e.code, e.message)
}

/// The session of a request, or the way to the login page.
async fn signed_in(st: &AppState, parts: Parts) -> Result<Ctx, Response> {
    match session::current(st, &parts).await {
        Ok(Some(signed)) => Ok(Ctx {
            parts,
            signed,
            request_id: crate::s3::respond::new_request_id(),
        }),
        Ok(None) => Err(see_other("/login")),
        Err(e) => Err((e.status, reason(&e)).into_response()),
    }
}

/// A signed-in POST: the session, its form, and the CSRF check.
async fn signed_post(
    st: &AppState,
    req: Request,
) -> Result<(Ctx, Vec<(String, String)>), Response> {
    let (parts, body) = req.into_parts();
    let ctx = signed_in(st, parts).await?;
    let f = form(body).await?;
    if let Err(e) = session::check_csrf(
        st,
        &ctx.parts,
        Some(&ctx.signed.session),
        field(&f, "csrf").unwrap_or(""),
    ) {
        return Err(ctx.message(StatusCode::FORBIDDEN, "Refused", Some(e), "/"));
    }
    Ok((ctx, f))
}

/// GET /login.
pub async fn login_page(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    if let Ok(Some(_)) = session::current(&st, &parts).await {
        return see_other("/");
    }
    html(views::Login {
        who: String::new(),
        csrf: String::new(),
        root: false,
        error: None,
    })
}

/// POST /login.
pub async fn login(State(st): State<AppState>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let f = match form(body).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let page = |status: StatusCode, error: &str| {
        let mut r = html(views::Login {
            who: String::new(),
            csrf: String::new(),
            root: false,
            error: Some(error.to_owned()),
        });
        *r.status_mut() = status;
        r
    };
    if let Err(e) = session::same_origin(&st, &parts) {
        return page(StatusCode::FORBIDDEN, &reason(&e));
    }
    let client = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip().to_string())
        .unwrap_or_default();
    let ak = field(&f, "access_key").unwrap_or("").trim();
    let secret = field(&f, "secret").unwrap_or("");
    match session::login(&st, &client, ak, secret).await {
        Ok(Ok(s)) => {
            let mut r = see_other("/");
            if let Ok(v) =
                HeaderValue::from_str(&session::set_cookie(&st, Some(&s.id), tls(&parts)))
            {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Ok(Err(session::Refused::Wrong)) => page(
            StatusCode::UNAUTHORIZED,
            "The access key and secret do not match a key of this server.",
        ),
        Ok(Err(session::Refused::Throttled)) => page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many failed sign-ins lately: wait a few minutes and try again.",
        ),
        Err(e) => page(e.status, &reason(&e)),
    }
}

/// POST /logout.
pub async fn logout(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if let Err(e) = session::logout(&st, &ctx.signed.session).await {
        return ctx.message(e.status, "Sign-out failed", Some(e), "/");
    }
    let mut r = see_other("/login");
    if let Ok(v) = HeaderValue::from_str(&session::set_cookie(&st, None, tls(&ctx.parts))) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// GET /: the buckets this key may list.
pub async fn buckets(State(st): State<AppState>, req: Request) -> Response {
    let ctx = match signed_in(&st, req.into_parts().0).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (list, error) = match ctx
        .caller(&st)
        .xml::<BucketList>(Method::GET, None, &[])
        .await
    {
        Ok(l) => (l, None),
        Err(e) => (BucketList::default(), Some(reason(&e))),
    };
    html(views::Buckets {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error,
        buckets: list
            .buckets
            .bucket
            .into_iter()
            .map(|b| views::BucketRow {
                name: b.name,
                created: b.creation_date,
            })
            .collect(),
    })
}

/// POST /buckets/create: CreateBucket (with Object Lock and the storage mode as its headers
/// ask), then PutBucketVersioning when asked.
pub async fn create_bucket(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let name = field(&f, "name").unwrap_or("").trim().to_owned();
    let caller = ctx.caller(&st);
    let mut headers = Vec::new();
    if field(&f, "object_lock") == Some("on") {
        headers.push(("x-amz-bucket-object-lock-enabled", "true".to_owned()));
    }
    if let Some(mode) = field(&f, "storage").filter(|m| !m.is_empty()) {
        headers.push(("x-grids3-storage-mode", mode.to_owned()));
    }
    if let Err(e) = caller
        .send(Method::PUT, Some(&name), None, &[], &headers, Body::empty())
        .await
    {
        return ctx.message(e.status, "The bucket was not created", Some(e), "/");
    }
    if field(&f, "versioning") == Some("on") {
        let body = format!(
            "<VersioningConfiguration xmlns=\"{}\"><Status>Enabled</Status></VersioningConfiguration>",
            crate::xml::S3_NS
        );
        if let Err(e) = caller
            .send(
                Method::PUT,
                Some(&name),
                None,
                &[("versioning", "")],
                &[],
                Body::from(body),
            )
            .await
        {
            return ctx.message(
                e.status,
                "The bucket was created without versioning",
                Some(e),
                "/",
            );
        }
    }
    see_other(&format!(
        "/browse?bucket={}",
        crate::percent::uri_encode(&name, false)
    ))
}

/// POST /buckets/delete: DeleteBucket.
pub async fn delete_bucket(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    match ctx
        .caller(&st)
        .send(Method::DELETE, Some(&bucket), None, &[], &[], Body::empty())
        .await
    {
        Ok(_) => see_other("/"),
        Err(e) => ctx.message(
            e.status,
            "The bucket was not deleted",
            Some(e),
            &format!(
                "/browse?bucket={}",
                crate::percent::uri_encode(&bucket, false)
            ),
        ),
    }
}

/// GET /browse?bucket=&prefix=&token=: one page of a folder (ListObjectsV2 with `/` as the
/// delimiter: bounded queries, so a page costs the same at 100k keys).
pub async fn browse(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let ctx = match signed_in(&st, parts).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let prefix = field(&q, "prefix").unwrap_or("").to_owned();
    let mut query = vec![
        ("list-type", "2"),
        ("delimiter", "/"),
        ("max-keys", PAGE),
        ("encoding-type", "url"),
        ("prefix", prefix.as_str()),
    ];
    if let Some(t) = field(&q, "token").filter(|t| !t.is_empty()) {
        query.push(("continuation-token", t));
    }
    let (list, error) = match ctx
        .caller(&st)
        .xml::<ObjectList>(Method::GET, Some(&bucket), &query)
        .await
    {
        Ok(l) => (l, None),
        Err(e) => (ObjectList::default(), Some(reason(&e))),
    };
    // Keys came URL-encoded (encoding-type=url): any byte a key holds survives the XML.
    let decode = |s: &str| crate::percent::decode(s);
    let short = |full: &str| {
        full.strip_prefix(prefix.as_str())
            .unwrap_or(full)
            .to_owned()
    };
    let mut crumbs = Vec::new();
    let mut at = String::new();
    for part in prefix.split_inclusive('/') {
        at.push_str(part);
        crumbs.push(views::Crumb {
            label: part.trim_end_matches('/').to_owned(),
            prefix: at.clone(),
        });
    }
    html(views::Browse {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error,
        crumbs,
        folders: list
            .prefixes
            .iter()
            .map(|p| {
                let full = decode(&p.prefix);
                views::Folder {
                    name: short(&full),
                    prefix: full,
                }
            })
            .collect(),
        objects: list
            .contents
            .iter()
            .map(|o| {
                let key = decode(&o.key);
                views::ObjectRow {
                    name: short(&key),
                    key,
                    size: o.size,
                    modified: o.last_modified.clone(),
                }
            })
            .collect(),
        next: list.next.filter(|_| list.truncated),
        bucket,
        prefix,
    })
}

fn parent_of(key: &str) -> String {
    match key.rfind('/') {
        Some(i) => key[..=i].to_owned(),
        None => String::new(),
    }
}

/// The object page (HeadObject), with a share link when one was just made.
async fn object_page(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    key: &str,
    share: Option<(String, String)>,
) -> Response {
    let head = ctx
        .caller(st)
        .send(
            Method::HEAD,
            Some(bucket),
            Some(key),
            &[],
            &[],
            Body::empty(),
        )
        .await;
    let back = format!(
        "/browse?bucket={}",
        crate::percent::uri_encode(bucket, false)
    );
    let r = match head {
        Ok(r) => r,
        Err(e) => return ctx.message(e.status, "The object cannot be shown", Some(e), &back),
    };
    // What the page shows of the answer, taken before anything else is awaited (the
    // response's body is not `Sync`).
    let (size, content_type, etag, modified, headers) = {
        let h = |n: &str| {
            r.headers()
                .get(n)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let headers = r
            .headers()
            .iter()
            .filter(|(k, _)| {
                let k = k.as_str();
                k.starts_with("x-amz-meta-")
                    || k.starts_with("x-amz-server-side-encryption")
                    || k.starts_with("x-amz-object-lock-")
                    || matches!(
                        k,
                        "cache-control"
                            | "content-encoding"
                            | "content-disposition"
                            | "x-amz-version-id"
                            | "x-amz-storage-class"
                            | "x-amz-website-redirect-location"
                    )
            })
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        (
            h("content-length"),
            h("content-type"),
            h("etag"),
            h("last-modified"),
            headers,
        )
    };
    drop(r);
    let (share, share_until) = share.unzip();
    let preview = preview_kind(&content_type);
    let raw_url = format!(
        "/raw?bucket={}&key={}",
        crate::percent::uri_encode(bucket, false),
        crate::percent::uri_encode(key, false)
    );
    let caller = ctx.caller(st);
    // The start of a text object, shown as text (escaped like every value).
    let text = if preview == "text" {
        let range = [("range", "bytes=0-65535".to_owned())];
        match caller
            .send(
                Method::GET,
                Some(bucket),
                Some(key),
                &[],
                &range,
                Body::empty(),
            )
            .await
        {
            Ok(r) => caller.text(r, 70_000).await.ok(),
            Err(_) => None,
        }
    } else {
        None
    };
    // Tags and versions, when this key may read them (a refusal leaves them out).
    let tags: Vec<(String, String)> = caller
        .xml_of::<super::s3call::Tagging>(Method::GET, Some(bucket), Some(key), &[("tagging", "")])
        .await
        .map(|t| {
            t.tag_set
                .tags
                .into_iter()
                .map(|t| (t.key, t.value))
                .collect()
        })
        .unwrap_or_default();
    let tags_text = tags.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    let versions = match caller
        .send(
            Method::GET,
            Some(bucket),
            None,
            &[
                ("versions", ""),
                ("prefix", key),
                ("encoding-type", "url"),
                ("max-keys", "100"),
            ],
            &[],
            Body::empty(),
        )
        .await
    {
        Ok(r) => caller
            .text(r, 4 * 1024 * 1024)
            .await
            .ok()
            .and_then(|x| super::s3call::versions_of(&x))
            .unwrap_or_default()
            .into_iter()
            .filter(|v| v.key == key)
            .map(|v| views::VersionRow {
                id: v.version_id,
                modified: v.last_modified,
                size: v.size,
                latest: v.latest,
                marker: v.delete_marker,
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    // A bucket that never had versioning lists its one "null" version: no history to show.
    let versions = if versions.len() == 1 && versions[0].id == "null" {
        Vec::new()
    } else {
        versions
    };
    html(views::Object {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: None,
        bucket: bucket.to_owned(),
        key: key.to_owned(),
        parent: parent_of(key),
        size,
        content_type,
        etag,
        modified,
        headers,
        share,
        share_until: share_until.unwrap_or_default(),
        preview: preview.to_owned(),
        raw_url,
        text,
        tags,
        tags_text,
        versions,
    })
}

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
fn preview_kind(content_type: &str) -> &'static str {
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
fn object_bytes(r: &mut Response, content_type: &'static str, disposition: Option<HeaderValue>) {
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
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let passed: Vec<(&str, String)> = ["range", "if-range", "if-none-match", "if-modified-since"]
        .into_iter()
        .filter_map(|n| Some((n, parts.headers.get(n)?.to_str().ok()?.to_owned())))
        .collect();
    let ctx = match signed_in(&st, parts).await {
        Ok(c) => c,
        Err(r) => return r,
    };
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

/// Parses `key=value` lines (blank lines skipped) into a Tagging body.
fn tagging_body(text: &str) -> Result<String, S3Error> {
    let mut out = format!("<Tagging xmlns=\"{}\"><TagSet>", crate::xml::S3_NS);
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (k, v) = line
            .split_once('=')
            .ok_or_else(|| S3Error::invalid_argument(format!("\"{line}\" is not key=value")))?;
        out.push_str(&format!(
            "<Tag><Key>{}</Key><Value>{}</Value></Tag>",
            crate::xml::escape(k.trim()),
            crate::xml::escape(v.trim())
        ));
    }
    out.push_str("</TagSet></Tagging>");
    Ok(out)
}

fn object_link(bucket: &str, key: &str) -> String {
    format!(
        "/object?bucket={}&key={}",
        crate::percent::uri_encode(bucket, false),
        crate::percent::uri_encode(key, false)
    )
}

/// POST /objects/tags: PutObjectTagging (or DeleteObjectTagging for none).
pub async fn tags(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let key = field(&f, "key").unwrap_or("").to_owned();
    let back = object_link(&bucket, &key);
    let body = match tagging_body(field(&f, "tags").unwrap_or("")) {
        Ok(b) => b,
        Err(e) => return ctx.message(e.status, "The tags were not saved", Some(e), &back),
    };
    let sent = ctx
        .caller(&st)
        .send(
            Method::PUT,
            Some(&bucket),
            Some(&key),
            &[("tagging", "")],
            &[],
            Body::from(body),
        )
        .await;
    match sent {
        Ok(_) => see_other(&back),
        Err(e) => ctx.message(e.status, "The tags were not saved", Some(e), &back),
    }
}

/// POST /objects/restore: a version made the latest again, as S3 does it (CopyObject of the
/// version onto its own key).
pub async fn restore(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let key = field(&f, "key").unwrap_or("").to_owned();
    let version = field(&f, "version").unwrap_or("").to_owned();
    let back = object_link(&bucket, &key);
    let source = format!(
        "/{}/{}?versionId={}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(&key, true),
        crate::percent::uri_encode(&version, false)
    );
    let sent = ctx
        .caller(&st)
        .send(
            Method::PUT,
            Some(&bucket),
            Some(&key),
            &[],
            &[("x-amz-copy-source", source)],
            Body::empty(),
        )
        .await;
    match sent {
        Ok(_) => see_other(&back),
        Err(e) => ctx.message(e.status, "The version was not restored", Some(e), &back),
    }
}

/// POST /objects/delete-version: DeleteObject of one version.
pub async fn delete_version(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let key = field(&f, "key").unwrap_or("").to_owned();
    let version = field(&f, "version").unwrap_or("").to_owned();
    let back = object_link(&bucket, &key);
    let sent = ctx
        .caller(&st)
        .send(
            Method::DELETE,
            Some(&bucket),
            Some(&key),
            &[("versionId", &version)],
            &[],
            Body::empty(),
        )
        .await;
    match sent {
        Ok(_) => see_other(&back),
        Err(e) => ctx.message(e.status, "The version was not deleted", Some(e), &back),
    }
}

/// GET /object?bucket=&key=.
pub async fn object(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let ctx = match signed_in(&st, parts).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let key = field(&q, "key").unwrap_or("").to_owned();
    object_page(&st, &ctx, &bucket, &key, None).await
}

/// GET /download?bucket=&key=: GetObject as the key, streamed, as an attachment.
pub async fn download(State(st): State<AppState>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let q = pairs(parts.uri.query().unwrap_or(""));
    let ctx = match signed_in(&st, parts).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let key = field(&q, "key").unwrap_or("").to_owned();
    let version: Vec<(&str, &str)> = field(&q, "version")
        .filter(|v| !v.is_empty())
        .map(|v| vec![("versionId", v)])
        .unwrap_or_default();
    match ctx
        .caller(&st)
        .send(
            Method::GET,
            Some(&bucket),
            Some(&key),
            &version,
            &[],
            Body::empty(),
        )
        .await
    {
        Ok(mut r) => {
            let name = key.rsplit('/').next().unwrap_or("download");
            let disposition = format!(
                "attachment; filename*=UTF-8''{}",
                crate::percent::uri_encode(name, false)
            );
            // Bytes to save, never a document or script of the console's origin (a
            // `text/javascript` object must not load as `<script src>` here).
            object_bytes(
                &mut r,
                "application/octet-stream",
                HeaderValue::from_str(&disposition).ok(),
            );
            r
        }
        Err(e) => ctx.message(e.status, "The object cannot be downloaded", Some(e), "/"),
    }
}

/// POST /objects/delete: DeleteObject of each selected key, each authorized on its own.
pub async fn delete_objects(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let prefix = field(&f, "prefix").unwrap_or("").to_owned();
    let back = format!(
        "/browse?bucket={}&prefix={}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(&prefix, false)
    );
    let caller = ctx.caller(&st);
    let keys: Vec<&String> = f
        .iter()
        .filter(|(k, _)| k == "key")
        .map(|(_, v)| v)
        .collect();
    // A page shows 200 keys: a form naming more did not come from it.
    if keys.len() > 1000 {
        let e = S3Error::invalid_argument("At most 1,000 objects are deleted at once");
        return ctx.message(
            StatusCode::BAD_REQUEST,
            "Nothing was deleted",
            Some(e),
            &back,
        );
    }
    for key in keys {
        if let Err(e) = caller
            .send(
                Method::DELETE,
                Some(&bucket),
                Some(key),
                &[],
                &[],
                Body::empty(),
            )
            .await
        {
            return ctx.message(e.status, &format!("{key} was not deleted"), Some(e), &back);
        }
    }
    see_other(&back)
}

/// POST /objects/share: a presigned GET of the object, signed with the session key's secret,
/// valid for the time chosen (at most 7 days, as SigV4 allows). Only a key that may read the
/// object gets a link (the HEAD first), and the link itself is checked again when used.
pub async fn share(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let key = field(&f, "key").unwrap_or("").to_owned();
    let seconds = field(&f, "seconds")
        .filter(|s| !s.is_empty())
        .or(field(&f, "expires"))
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|s| (1..=604_800).contains(s));
    let Some(seconds) = seconds else {
        let e =
            S3Error::invalid_argument("A link is valid for 1 second to 7 days (604800 seconds)");
        return ctx.message(StatusCode::BAD_REQUEST, "No link was made", Some(e), "/");
    };
    // Browsers resolve `.` and `..` segments of a URL's path before sending it: the link
    // would name another key than the one signed.
    if key.split('/').any(|s| s == "." || s == "..") {
        let e = S3Error::invalid_argument(
            "A key with . or .. segments cannot be shared as a link (browsers rewrite them)",
        );
        return ctx.message(StatusCode::BAD_REQUEST, "No link was made", Some(e), "/");
    }
    if let Err(e) = ctx
        .caller(&st)
        .send(
            Method::HEAD,
            Some(&bucket),
            Some(&key),
            &[],
            &[],
            Body::empty(),
        )
        .await
    {
        return ctx.message(e.status, "No link was made", Some(e), "/");
    }
    let secret = match st.creds.secret_of(&ctx.signed.session.access_key).await {
        Ok(Some(s)) => s,
        _ => return see_other("/login"),
    };
    let (base, host) = share_base(&st, &ctx.parts);
    let path = format!(
        "/{}/{}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(&key, true)
    );
    let now = st.store.meta().clock().now().to_chrono();
    let amz_date = now.format("%Y%m%dT%H%M%SZ").to_string();
    let query = crate::auth::sigv4::presign_query(&crate::auth::sigv4::Presign {
        access_key: &ctx.signed.session.access_key,
        secret: &secret.secret,
        region: &st.config.region,
        host: &host,
        method: "GET",
        path: &path,
        amz_date: &amz_date,
        expires: seconds,
        extra: &[],
    });
    let until = (now + chrono::Duration::seconds(seconds as i64))
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    let url = format!("{base}{path}?{query}");
    object_page(&st, &ctx, &bucket, &key, Some((url, until))).await
}

/// Where share links point, and the Host they sign: `--console-s3-url` (else the S3
/// listener), as a browser will send it (lower-case, without a default port). An unspecified
/// listen address (`0.0.0.0`) is replaced by the name the browser reached the console by.
fn share_base(st: &AppState, parts: &Parts) -> (String, String) {
    let base = super::s3_url(st);
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base.as_str()));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split('/').next().unwrap_or(rest).to_ascii_lowercase();
    let (name, port) = match authority.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(']') || n.starts_with('[') => {
            (n.to_owned(), Some(p.to_owned()))
        }
        _ => (authority.clone(), None),
    };
    let name = if matches!(name.as_str(), "0.0.0.0" | "[::]") {
        parts
            .headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| {
                h.rsplit_once(':')
                    .map_or(h, |(n, _)| n)
                    .to_ascii_lowercase()
            })
            .unwrap_or_else(|| "127.0.0.1".to_owned())
    } else {
        name
    };
    let port =
        port.filter(|p| !((scheme == "http" && p == "80") || (scheme == "https" && p == "443")));
    let host = match port {
        Some(p) => format!("{name}:{p}"),
        None => name,
    };
    (format!("{scheme}://{host}"), host)
}

/// Objects one folder deletion removes at most (more are left for the next request, and
/// the page says so).
const FOLDER_DELETE_MAX: usize = 10_000;

/// POST /folders/delete: every object under a folder's prefix (listed as the key lists them,
/// each DeleteObject authorized on its own), after the page's confirmation.
pub async fn delete_folder(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let folder = field(&f, "folder").unwrap_or("").to_owned();
    let back = format!(
        "/browse?bucket={}&prefix={}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(field(&f, "prefix").unwrap_or(""), false)
    );
    // A folder is a prefix ending in `/`; an empty one would be the whole bucket.
    if folder.is_empty() || !folder.ends_with('/') {
        let e = S3Error::invalid_argument("A folder is a prefix ending in /");
        return ctx.message(
            StatusCode::BAD_REQUEST,
            "Nothing was deleted",
            Some(e),
            &back,
        );
    }
    let caller = ctx.caller(&st);
    let mut deleted = 0usize;
    let mut token: Option<String> = None;
    loop {
        let mut query = vec![
            ("list-type", "2"),
            ("max-keys", "1000"),
            ("encoding-type", "url"),
            ("prefix", folder.as_str()),
        ];
        if let Some(t) = token.as_deref() {
            query.push(("continuation-token", t));
        }
        let list = match caller
            .xml::<ObjectList>(Method::GET, Some(&bucket), &query)
            .await
        {
            Ok(l) => l,
            Err(e) => return ctx.message(e.status, "The folder was not deleted", Some(e), &back),
        };
        for o in &list.contents {
            let key = crate::percent::decode(&o.key);
            if let Err(e) = caller
                .send(
                    Method::DELETE,
                    Some(&bucket),
                    Some(&key),
                    &[],
                    &[],
                    Body::empty(),
                )
                .await
            {
                let title = format!("{deleted} objects were deleted; {key} was not");
                return ctx.message(e.status, &title, Some(e), &back);
            }
            deleted += 1;
            if deleted >= FOLDER_DELETE_MAX {
                let title =
                    format!("{deleted} objects were deleted; more remain: delete the folder again");
                return ctx.message(StatusCode::OK, &title, None, &back);
            }
        }
        match list.next.filter(|_| list.truncated) {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    see_other(&back)
}
