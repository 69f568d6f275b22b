//! A bucket's settings: each one is shown as the document S3 returns for it and edited as
//! that document, sent as the S3 request the key would send (PutBucketCors, PutBucketPolicy,
//! ...). The S3 handler validates it, so the console accepts exactly what S3 accepts and a
//! refusal shows AWS's code and reason. A policy is parsed as JSON first, so that a syntax
//! error is shown with its line and column.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::response::Response;

use super::{field, html, reason, see_other, signed_get, signed_post, signed_post_with, Ctx};
use crate::console::views::{Setting, Settings, StorageView};
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::StorageMode;

/// A setting: its S3 sub-resource, its title, whether DELETE removes it, and a starting
/// document shown when it is not set.
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
        Ok(text) => Ok(Some(if k.json { text } else { indent(&text) })),
        Err(e) if e.status == StatusCode::NOT_FOUND && e.code != "NoSuchBucket" => Ok(None),
        Err(e) => Err(e),
    }
}

async fn page(
    st: &AppState,
    ctx: &Ctx,
    bucket: &str,
    edited: Option<(&str, String, String, Option<usize>)>,
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
            set: false,
            error: None,
            error_offset: None,
        };
        match got {
            Ok(Some(doc)) => {
                s.doc = doc;
                s.set = true;
            }
            Ok(None) => s.doc = k.example.replace("BUCKET", bucket),
            Err(e) if e.code == "NoSuchBucket" => {
                return ctx.message(StatusCode::NOT_FOUND, "No such bucket", Some(e), "/")
            }
            Err(e) => s.error = Some(reason(&e)),
        }
        // The document just refused stays in its editor, with the reason.
        if let Some((sub, doc, error, offset)) = &edited {
            if *sub == k.sub {
                s.doc = doc.clone();
                s.error = Some(error.clone());
                s.error_offset = *offset;
            }
        }
        settings.push(s);
    }
    let storage = if ctx.signed.root {
        storage_view(st, bucket).await
    } else {
        None
    };
    html(Settings {
        storage,
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
    if !delete && k.json {
        if let Some((error, offset)) = json_error(&doc) {
            let mut r = page(
                &st,
                &ctx,
                &bucket,
                Some((k.sub, doc, error, Some(offset))),
                None,
            )
            .await;
            *r.status_mut() = StatusCode::BAD_REQUEST;
            return r;
        }
    }
    if delete && !k.deletable {
        return see_other("/");
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
            let mut r = page(
                &st,
                &ctx,
                &bucket,
                Some((k.sub, doc, reason(&e), None)),
                None,
            )
            .await;
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
