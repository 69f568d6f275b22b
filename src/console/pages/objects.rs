//! An object's page and its actions: download, tags, versions (restore, delete), share links.

use super::bytes::{object_bytes, preview_kind};
use super::*;

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
        let headers: Vec<(String, String)> = r
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
    let legal_hold = headers
        .iter()
        .find(|(k, _)| k == "x-amz-object-lock-legal-hold")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let caller = ctx.caller(st);
    // Object Lock's forms only where the bucket has it (issue 59: they were shown, with the
    // legal hold "On" preselected, on every object); S3 would refuse them anywhere else.
    let lock = caller
        .send_text(
            Method::GET,
            Some(bucket),
            None,
            &[("object-lock", "")],
            &[],
            Body::empty(),
            64 * 1024,
        )
        .await
        .is_ok_and(|t| t.contains("<ObjectLockEnabled>Enabled</ObjectLockEnabled>"));
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
    // Markdown is also shown rendered (raw HTML in it as text, only safe links).
    let markdown = text
        .as_deref()
        .filter(|_| crate::console::markdown::is_markdown(&content_type, key))
        .map(crate::console::markdown::render);
    // Tags and versions, when this key may read them (a refusal leaves them out).
    let tags: Vec<(String, String)> = caller
        .xml_of::<crate::console::s3call::Tagging>(
            Method::GET,
            Some(bucket),
            Some(key),
            &[("tagging", "")],
        )
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
            .and_then(|x| crate::console::s3call::versions_of(&x))
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
        markdown,
        tags,
        tags_text,
        versions,
        lock,
        legal_hold,
    })
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
    let t = Target::of(&f);
    let sent = match tagging_body(field(&f, "tags").unwrap_or("")) {
        Ok(body) => {
            let query = [("tagging", "")];
            let body = Body::from(body);
            ctx.caller(&st)
                .send(
                    Method::PUT,
                    Some(&t.bucket),
                    Some(&t.key),
                    &query,
                    &[],
                    body,
                )
                .await
        }
        Err(e) => Err(e),
    };
    t.answer(&ctx, sent, "The tags were not saved")
}

/// The object a form acts on (`bucket`, `key`, `version`), and the page to go back to.
pub(super) struct Target {
    pub bucket: String,
    pub key: String,
    pub version: String,
    back: String,
}

impl Target {
    pub fn of(f: &[(String, String)]) -> Self {
        let get = |n: &str| field(f, n).unwrap_or("").to_owned();
        let (bucket, key) = (get("bucket"), get("key"));
        Target {
            back: object_link(&bucket, &key),
            version: get("version"),
            bucket,
            key,
        }
    }

    /// Back to the object's page, or the refusal with AWS's reason.
    pub fn answer(
        &self,
        ctx: &Ctx,
        sent: crate::error::S3Result<Response>,
        failed: &str,
    ) -> Response {
        match sent {
            Ok(_) => see_other(&self.back),
            Err(e) => ctx.message(e.status, failed, Some(e), &self.back),
        }
    }
}

/// POST /objects/restore: a version made the latest again, as S3 does it (CopyObject of the
/// version onto its own key).
pub async fn restore(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let t = Target::of(&f);
    let source = format!(
        "/{}/{}?versionId={}",
        crate::percent::uri_encode(&t.bucket, false),
        crate::percent::uri_encode(&t.key, true),
        crate::percent::uri_encode(&t.version, false)
    );
    let headers = [("x-amz-copy-source", source)];
    let sent = ctx
        .caller(&st)
        .send(
            Method::PUT,
            Some(&t.bucket),
            Some(&t.key),
            &[],
            &headers,
            Body::empty(),
        )
        .await;
    t.answer(&ctx, sent, "The version was not restored")
}

/// POST /objects/delete-version: DeleteObject of one version.
pub async fn delete_version(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let t = Target::of(&f);
    let query = [("versionId", t.version.as_str())];
    let sent = ctx
        .caller(&st)
        .send(
            Method::DELETE,
            Some(&t.bucket),
            Some(&t.key),
            &query,
            &[],
            Body::empty(),
        )
        .await;
    t.answer(&ctx, sent, "The version was not deleted")
}

/// GET /object?bucket=&key=.
pub async fn object(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let key = field(&q, "key").unwrap_or("").to_owned();
    object_page(&st, &ctx, &bucket, &key, None).await
}

/// GET /download?bucket=&key=: GetObject as the key, streamed, as an attachment.
pub async fn download(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
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
    let Ok(signer) = Presigner::new(&st, &ctx).await else {
        return see_other("/login");
    };
    let url = signer.url("GET", &bucket, Some(&key), &[], seconds);
    let until = (signer.now + chrono::Duration::seconds(signer.lifetime(seconds) as i64))
        .format("%Y-%m-%d %H:%M:%S UTC")
        .to_string();
    object_page(&st, &ctx, &bucket, &key, Some((url, until))).await
}
