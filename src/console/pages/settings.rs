//! A bucket's settings: each one is shown as the document S3 returns for it and edited as
//! that document, sent as the S3 request the key would send (PutBucketCors, PutBucketPolicy,
//! ...). The S3 handler validates it, so the console accepts exactly what S3 accepts and a
//! refusal shows AWS's code and reason. A policy is parsed as JSON first, so that a syntax
//! error is shown with its line and column, and an XML document is checked to be well-formed
//! first, for the same reason.
//!
//! A setting that is not set shows an empty editor with an example as its placeholder (issue
//! 59: the example used to be the editor's value, so Save applied it); an empty document saves
//! nothing. A change that makes the bucket public is held until it is confirmed (`exposure`).

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;

use super::exposure;
use super::{field, html, reason, see_other, signed_get, signed_post, signed_post_with, Ctx};
use crate::console::views::{Setting, Settings, StorageView};
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::StorageMode;

/// A setting: its S3 sub-resource, its title, whether DELETE removes it, and an example shown
/// as the empty editor's placeholder when it is not set (never as its value).
struct Kind {
    sub: &'static str,
    title: &'static str,
    deletable: bool,
    json: bool,
    example: &'static str,
}

const KINDS: &[Kind] = &[
    Kind {
        sub: "versioning",
        title: "Versioning",
        deletable: false,
        json: false,
        example: "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>",
    },
    Kind {
        sub: "policy",
        title: "Bucket policy",
        deletable: true,
        json: true,
        example: "{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [\n    {\n      \"Effect\": \"Allow\",\n      \"Principal\": \"*\",\n      \"Action\": \"s3:GetObject\",\n      \"Resource\": \"arn:aws:s3:::BUCKET/*\"\n    }\n  ]\n}",
    },
    Kind {
        sub: "cors",
        title: "CORS",
        deletable: true,
        json: false,
        example: "<CORSConfiguration>\n  <CORSRule>\n    <AllowedOrigin>https://www.example.com</AllowedOrigin>\n    <AllowedMethod>GET</AllowedMethod>\n    <AllowedHeader>*</AllowedHeader>\n  </CORSRule>\n</CORSConfiguration>",
    },
    Kind {
        sub: "publicAccessBlock",
        title: "Block Public Access",
        deletable: true,
        json: false,
        example: "<PublicAccessBlockConfiguration>\n  <BlockPublicAcls>true</BlockPublicAcls>\n  <IgnorePublicAcls>true</IgnorePublicAcls>\n  <BlockPublicPolicy>true</BlockPublicPolicy>\n  <RestrictPublicBuckets>true</RestrictPublicBuckets>\n</PublicAccessBlockConfiguration>",
    },
    Kind {
        sub: "ownershipControls",
        title: "Object ownership",
        deletable: true,
        json: false,
        example: "<OwnershipControls>\n  <Rule><ObjectOwnership>BucketOwnerEnforced</ObjectOwnership></Rule>\n</OwnershipControls>",
    },
    Kind {
        sub: "lifecycle",
        title: "Lifecycle rules",
        deletable: true,
        json: false,
        example: "<LifecycleConfiguration>\n  <Rule>\n    <ID>expire-logs</ID>\n    <Filter><Prefix>logs/</Prefix></Filter>\n    <Status>Enabled</Status>\n    <Expiration><Days>30</Days></Expiration>\n  </Rule>\n</LifecycleConfiguration>",
    },
    Kind {
        sub: "encryption",
        title: "Default encryption",
        deletable: true,
        json: false,
        example: "<ServerSideEncryptionConfiguration>\n  <Rule>\n    <ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault>\n  </Rule>\n</ServerSideEncryptionConfiguration>",
    },
    Kind {
        sub: "object-lock",
        title: "Object Lock defaults",
        deletable: false,
        json: false,
        example: "<ObjectLockConfiguration>\n  <ObjectLockEnabled>Enabled</ObjectLockEnabled>\n  <Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>1</Days></DefaultRetention></Rule>\n</ObjectLockConfiguration>",
    },
    Kind {
        sub: "notification",
        title: "Event notifications",
        deletable: false,
        json: false,
        example: "<NotificationConfiguration>\n  <QueueConfiguration>\n    <Queue>arn:grids3:sqs::ID:webhook</Queue>\n    <Event>s3:ObjectCreated:*</Event>\n  </QueueConfiguration>\n</NotificationConfiguration>",
    },
    Kind {
        sub: "website",
        title: "Website",
        deletable: true,
        json: false,
        example: "<WebsiteConfiguration>\n  <IndexDocument><Suffix>index.html</Suffix></IndexDocument>\n  <ErrorDocument><Key>error.html</Key></ErrorDocument>\n</WebsiteConfiguration>",
    },
    Kind {
        sub: "tagging",
        title: "Bucket tags",
        deletable: true,
        json: false,
        example: "<Tagging>\n  <TagSet>\n    <Tag><Key>team</Key><Value>web</Value></Tag>\n  </TagSet>\n</Tagging>",
    },
];

/// Largest settings document the console reads or sends (a policy may be 20 KB, a lifecycle
/// configuration of 1,000 rules more).
const MAX_DOC: usize = 1024 * 1024;

/// The document, indented when it is XML (S3 answers on one line).
fn indent(xml: &str) -> String {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    r.config_mut().trim_text(true);
    let mut w = quick_xml::Writer::new_with_indent(Vec::new(), b' ', 2);
    loop {
        match r.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Decl(_)) => {}
            Ok(e) => {
                if w.write_event(e).is_err() {
                    return xml.to_owned();
                }
            }
            Err(_) => return xml.to_owned(),
        }
    }
    String::from_utf8(w.into_inner()).unwrap_or_else(|_| xml.to_owned())
}

/// Where a policy's JSON stops parsing: "line L, column C: what", and the character offset.
pub fn json_error(text: &str) -> Option<(String, usize)> {
    let e = serde_json::from_str::<serde_json::Value>(text).err()?;
    let (line, column) = (e.line(), e.column());
    let offset: usize = text
        .split('\n')
        .take(line.saturating_sub(1))
        .map(|l| l.chars().count() + 1)
        .sum::<usize>()
        + column.saturating_sub(1);
    let what = e.to_string();
    let what = what.split(" at line ").next().unwrap_or(&what).to_owned();
    Some((
        format!("The policy is not JSON: line {line}, column {column}: {what}"),
        offset,
    ))
}

/// Where an XML document stops being well-formed: "line L, column C: what", and the
/// character offset; `None` when it is well-formed. (S3 answers only `MalformedXML`.)
pub fn xml_error(title: &str, text: &str) -> Option<(String, usize)> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(text);
    r.config_mut().check_end_names = true;
    let mut depth = 0usize;
    let mut roots = 0usize;
    let what = loop {
        let before = r.buffer_position() as usize;
        match r.read_event() {
            Ok(Event::Eof) if depth > 0 => {
                break ("the document ends inside an element".to_owned(), text.len())
            }
            Ok(Event::Eof) if roots == 0 => break ("there is no element".to_owned(), text.len()),
            Ok(Event::Eof) => return None,
            Ok(Event::Start(_)) => {
                if depth == 0 {
                    roots += 1;
                }
                depth += 1;
            }
            Ok(Event::Empty(_)) if depth == 0 => roots += 1,
            Ok(Event::End(_)) => depth = depth.saturating_sub(1),
            Ok(Event::Text(t)) if depth == 0 && !t.iter().all(u8::is_ascii_whitespace) => {
                break ("text outside the root element".to_owned(), before)
            }
            Ok(_) => {}
            Err(e) => break (e.to_string(), r.error_position() as usize),
        }
        if roots > 1 {
            break ("a second root element".to_owned(), before);
        }
    };
    let (what, at) = what;
    let at = at.min(text.len());
    let at = (0..=at)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let head = &text[..at];
    let line = head.matches('\n').count() + 1;
    let column = head.rsplit('\n').next().unwrap_or("").chars().count() + 1;
    Some((
        format!(
            "The {title} document is not well-formed XML: line {line}, column {column}: {what}"
        ),
        head.chars().count(),
    ))
}

/// Whether a document S3 answered holds a setting: an empty configuration
/// (`<VersioningConfiguration/>` of a bucket never versioned, `<NotificationConfiguration/>`
/// without targets) is what S3 answers when nothing is set.
fn holds_something(doc: &str, json: bool) -> bool {
    if json {
        return !doc.trim().is_empty();
    }
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(doc);
    let mut elements = 0;
    loop {
        match r.read_event() {
            Ok(Event::Start(_)) | Ok(Event::Empty(_)) => {
                elements += 1;
                if elements > 1 {
                    return true;
                }
            }
            Ok(Event::Eof) => return false,
            Ok(_) => {}
            // Not XML: show it as it is, as set.
            Err(_) => return true,
        }
    }
}

/// Reads one setting as the key: its document, or `None` when it is not set.
async fn read(st: &AppState, ctx: &Ctx, bucket: &str, k: &Kind) -> Result<Option<String>, S3Error> {
    let read = ctx
        .caller(st)
        .send_text(
            Method::GET,
            Some(bucket),
            None,
            &[(k.sub, "")],
            &[],
            Body::empty(),
            MAX_DOC,
        )
        .await;
    match read {
        Ok(text) if !holds_something(&text, k.json) => Ok(None),
        Ok(text) => Ok(Some(if k.json { text } else { indent(&text) })),
        Err(e) if e.status == StatusCode::NOT_FOUND && e.code != "NoSuchBucket" => Ok(None),
        Err(e) => Err(e),
    }
}

/// A document sent back to its editor: refused (with the reason, and where), or held for a
/// confirmation that it may make the bucket public.
struct Edited<'a> {
    sub: &'a str,
    doc: String,
    error: Option<String>,
    offset: Option<usize>,
    /// What becomes public, as the question asks it (the answer must repeat it).
    confirm: Option<String>,
    /// The change held is a delete.
    delete: bool,
}

async fn page(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    edited: Option<Edited<'_>>,
    saved: Option<String>,
) -> Response {
    let mut settings = Vec::new();
    // The eleven reads at once: each is its own S3 request, none depends on another.
    let reads = futures::future::join_all(KINDS.iter().map(|k| read(st, ctx, bucket, k))).await;
    for (k, got) in KINDS.iter().zip(reads) {
        let mut s = Setting {
            sub: k.sub.to_owned(),
            title: k.title.to_owned(),
            deletable: k.deletable,
            doc: String::new(),
            example: k.example.replace("BUCKET", bucket),
            set: false,
            error: None,
            error_offset: None,
            confirm: None,
            confirm_delete: false,
        };
        match got {
            Ok(Some(doc)) => {
                s.doc = doc;
                s.set = true;
            }
            Ok(None) => {}
            Err(e) if e.code == "NoSuchBucket" => {
                return ctx.message(StatusCode::NOT_FOUND, "No such bucket", Some(e), "/")
            }
            Err(e) => s.error = Some(reason(&e)),
        }
        // The document just refused stays in its editor, with the reason.
        if let Some(e) = &edited {
            if e.sub == k.sub {
                s.doc = e.doc.clone();
                s.error = e.error.clone();
                s.error_offset = e.offset;
                s.confirm = e.confirm.clone();
                s.confirm_delete = e.delete;
            }
        }
        settings.push(s);
    }
    let storage = if ctx.signed.root {
        storage_view(st, bucket).await
    } else {
        None
    };
    let quota = super::quota::view(st, ctx, bucket).await;
    html(Settings {
        storage,
        quota,
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: None,
        bucket: bucket.to_owned(),
        settings,
        saved,
    })
}

/// The bucket's storage mode, and while it converts, how far it is.
async fn storage_view(st: &AppState, bucket: &str) -> Option<StorageView> {
    let b = st.store.meta().get_bucket(bucket).await.ok()??;
    let other = match b.storage {
        StorageMode::Gridfs => StorageMode::Content,
        StorageMode::Content => StorageMode::Gridfs,
    };
    let (done, total) = if b.converting {
        // Bounded: two counts over the bucket's files, on a page that reloads while it runs.
        let counted = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            st.store.conversion_left(bucket, b.storage),
        )
        .await;
        let (left, total) = match counted {
            Ok(Ok(c)) => c,
            _ => (0, 0),
        };
        (total.saturating_sub(left), total)
    } else {
        (0, 0)
    };
    Some(StorageView {
        mode: b.storage.as_str().to_owned(),
        other: other.as_str().to_owned(),
        converting: b.converting,
        done,
        total,
    })
}

/// POST /settings/convert (root only, as the admin API's conversion): starts converting the
/// bucket to `to`, in the background; the settings page shows its progress.
pub async fn convert(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    if !ctx.signed.root {
        let e = S3Error::access_denied().with_message("Only the root key converts buckets");
        return ctx.message(StatusCode::FORBIDDEN, "Refused", Some(e), "/");
    }
    let Some(to) = field(&f, "to").and_then(StorageMode::parse) else {
        let e = S3Error::invalid_argument("to must be gridfs or content");
        return ctx.message(StatusCode::BAD_REQUEST, "Not converted", Some(e), "/");
    };
    match st.store.begin_conversion(&bucket, to).await {
        // The settings page (a GET, which the progress reloads), not this POST's answer.
        Ok(Some(_)) => see_other(&format!(
            "/settings?bucket={}",
            crate::percent::uri_encode(&bucket, false)
        )),
        Ok(None) => ctx.message(
            StatusCode::NOT_FOUND,
            "Not converted",
            Some(S3Error::no_such_bucket()),
            "/",
        ),
        Err(e) => {
            let e = S3Error::from(e);
            ctx.message(e.status, "Not converted", Some(e), "/")
        }
    }
}

/// GET /settings?bucket=: every setting of a bucket.
pub async fn settings(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    page(&st, &ctx, &bucket, None, None).await
}

/// POST /settings/save and /settings/delete: one setting, put or deleted as the key.
pub async fn save(State(st): State<AppState>, req: Request) -> Response {
    change(st, req, false).await
}

/// See [`save`].
pub async fn delete(State(st): State<AppState>, req: Request) -> Response {
    change(st, req, true).await
}

async fn change(st: AppState, req: Request, delete: bool) -> Response {
    // A document the editor shows can be saved back: up to MAX_DOC, URL-encoded (3 bytes a
    // byte at worst).
    let (ctx, f) = match signed_post_with(&st, req, 3 * MAX_DOC + 64 * 1024).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let Some(k) = KINDS.iter().find(|k| Some(k.sub) == field(&f, "setting")) else {
        return see_other("/");
    };
    let doc = field(&f, "doc").unwrap_or("").replace("\r\n", "\n");
    let refused = |doc: String, error: String, offset: Option<usize>| Edited {
        sub: k.sub,
        doc,
        error: Some(error),
        offset,
        confirm: None,
        delete,
    };
    if delete && !k.deletable {
        return see_other("/");
    }
    // An empty editor (a setting not set, its example only a placeholder) saves nothing.
    if !delete && doc.trim().is_empty() {
        let note = format!("{}: nothing saved (the document is empty)", k.title);
        return page(&st, &ctx, &bucket, None, Some(note)).await;
    }
    if !delete {
        let checked = if k.json {
            json_error(&doc)
        } else {
            xml_error(k.title, &doc)
        };
        if let Some((error, offset)) = checked {
            let mut r = page(
                &st,
                &ctx,
                &bucket,
                Some(refused(doc, error, Some(offset))),
                None,
            )
            .await;
            *r.status_mut() = StatusCode::BAD_REQUEST;
            return r;
        }
    }
    // A change that makes the bucket public is applied only when the request repeats the
    // question it answers: the page asks (the script as a dialog), a form without the script
    // shows it with its own button; an answer to another question asks again.
    let public =
        exposure::newly_public(&st, &ctx, &bucket, k.sub, (!delete).then_some(doc.as_str())).await;
    if !public.is_empty() {
        let ask = format!(
            "This makes bucket {bucket} public: {}. Apply it?",
            public.join("; ")
        );
        if field(&f, "public_ok") != Some(ask.as_str()) {
            let held = Edited {
                sub: k.sub,
                doc,
                error: None,
                offset: None,
                confirm: Some(ask),
                delete,
            };
            return page(&st, &ctx, &bucket, Some(held), None).await;
        }
    }
    let (method, body) = if delete {
        (Method::DELETE, Body::empty())
    } else {
        (Method::PUT, Body::from(doc.clone()))
    };
    let sent = ctx
        .caller(&st)
        .send(method, Some(&bucket), None, &[(k.sub, "")], &[], body)
        .await;
    match sent {
        Ok(_) => {
            let done = if delete { "deleted" } else { "saved" };
            page(
                &st,
                &ctx,
                &bucket,
                None,
                Some(format!("{}: {done}", k.title)),
            )
            .await
        }
        Err(e) => {
            let error = format!("{}: {}", k.title, reason(&e));
            let mut r = page(&st, &ctx, &bucket, Some(refused(doc, error, None)), None).await;
            *r.status_mut() = e.status;
            r
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_error_has_its_line_and_column() {
        let text = "{\n  \"Version\": \"2012-10-17\"\n  \"Statement\": []\n}";
        let (msg, offset) = json_error(text).unwrap();
        assert!(
            msg.starts_with("The policy is not JSON: line 3, column 3:"),
            "{msg}"
        );
        assert_eq!(offset, text.find("\"Statement").unwrap());
        assert!(json_error("{\"a\": [1, 2]}").is_none());
    }

    #[test]
    fn an_xml_error_has_its_line_and_column() {
        let text = "<LifecycleConfiguration>\n  <Rule>\n    <ID>x</Id>\n  </Rule>\n</LifecycleConfiguration>";
        let (msg, offset) = xml_error("Lifecycle rules", text).unwrap();
        assert!(
            msg.starts_with("The Lifecycle rules document is not well-formed XML: line 3, column "),
            "{msg}"
        );
        assert_eq!(text[..offset].lines().count(), 3, "{msg}");
        let (msg, _) = xml_error("CORS", "<CORSConfiguration><CORSRule>").unwrap();
        assert!(
            msg.starts_with("The CORS document is not well-formed XML: line 1, column "),
            "{msg}"
        );
        let (msg, _) = xml_error("CORS", "<A/><B/>").unwrap();
        assert!(msg.contains("a second root element"), "{msg}");
        assert!(xml_error("CORS", "<A>\n  <B>x &amp; y</B>\n</A>\n").is_none());
    }

    #[test]
    fn an_empty_configuration_is_not_a_setting() {
        assert!(!holds_something(
            "<?xml version=\"1.0\"?>\n<VersioningConfiguration xmlns=\"x\"/>",
            false
        ));
        assert!(!holds_something(
            "<NotificationConfiguration></NotificationConfiguration>",
            false
        ));
        assert!(holds_something(
            "<VersioningConfiguration><Status>Suspended</Status></VersioningConfiguration>",
            false
        ));
        assert!(holds_something("{}", true));
    }

    #[test]
    fn xml_is_indented() {
        assert_eq!(
            indent("<?xml version=\"1.0\"?><A><B>x</B><C/></A>"),
            "<A>\n  <B>x</B>\n  <C/>\n</A>"
        );
        assert_eq!(
            indent("<A></B>"),
            "<A></B>",
            "a broken document is kept as it is"
        );
    }
}
