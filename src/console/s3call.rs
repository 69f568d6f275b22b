//! The console's S3 requests: each action is the S3 request the same key would send, parsed
//! by the router's own parser (`s3::op::parse`) and run by `s3::dispatch`, so that it is
//! authorized by the same decision code and answered by the same handler. A refusal is the
//! S3 error itself, with AWS's code and reason.

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::response::Response;
use serde::Deserialize;

use crate::error::{S3Error, S3Result};
use crate::s3::request::S3Request;
use crate::state::AppState;

/// Who acts: the signed-in key, and the facts of the browser's request that a bucket policy
/// may read (its address, transport, Referer, User-Agent).
pub struct Caller<'a> {
    pub st: &'a AppState,
    pub access_key: &'a str,
    pub parts: &'a Parts,
    pub request_id: &'a str,
}

impl Caller<'_> {
    /// Sends one S3 request as the signed-in key.
    pub async fn send(
        &self,
        method: Method,
        bucket: Option<&str>,
        key: Option<&str>,
        query: &[(&str, &str)],
        headers: &[(&str, String)],
        body: Body,
    ) -> S3Result<Response> {
        let mut path = String::from("/");
        if let Some(b) = bucket {
            path.push_str(&crate::percent::uri_encode(b, false));
            if let Some(k) = key {
                path.push('/');
                path.push_str(&crate::percent::uri_encode(k, true));
            }
        }
        let (mut p, ()) = Request::builder()
            .method(method.clone())
            .uri(path)
            .body(())
            .map_err(|_| S3Error::invalid_uri())?
            .into_parts();
        p.extensions = self.parts.extensions.clone();
        for name in [axum::http::header::REFERER, axum::http::header::USER_AGENT] {
            if let Some(v) = self.parts.headers.get(&name) {
                p.headers.insert(name, v.clone());
            }
        }
        for (k, v) in headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| S3Error::invalid_argument("bad header"))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| S3Error::invalid_argument(format!("{k} cannot carry this value")))?;
            p.headers.insert(name, value);
        }
        let query: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let op = crate::s3::op::parse(&method, bucket, key, &query, &p.headers);
        if let crate::s3::op::Op::NotImplemented(what) = &op {
            return Err(S3Error::not_implemented()
                .with_message(format!("{what} is not implemented by grids3")));
        }
        // As the key is now (cached): its IAM user and session policies come with it, and a
        // key disabled or deleted since the sign-in acts no more.
        let stored = self
            .st
            .creds
            .secret_of(self.access_key)
            .await?
            .ok_or_else(S3Error::invalid_access_key_id)?;
        let auth = crate::auth::Auth::of_key(self.access_key.to_owned(), &stored);
        let req = S3Request::on_behalf(
            p,
            query,
            bucket.map(str::to_owned),
            key.map(str::to_owned),
            auth,
            body,
            self.request_id,
        );
        if op.moves_data() {
            crate::s3::dispatch(self.st, op, req).await
        } else {
            crate::s3::lookup::within_request_timeout(
                self.st,
                crate::s3::dispatch(self.st, op, req),
            )
            .await?
        }
    }

    /// Sends a request whose answer is XML, and reads it as `T`.
    pub async fn xml<T: for<'de> Deserialize<'de>>(
        &self,
        method: Method,
        bucket: Option<&str>,
        query: &[(&str, &str)],
    ) -> S3Result<T> {
        self.xml_of(method, bucket, None, query).await
    }

    /// [`Caller::xml`] of an object's sub-resource.
    pub async fn xml_of<T: for<'de> Deserialize<'de>>(
        &self,
        method: Method,
        bucket: Option<&str>,
        key: Option<&str>,
        query: &[(&str, &str)],
    ) -> S3Result<T> {
        let r = self
            .send(method, bucket, key, query, &[], Body::empty())
            .await?;
        let bytes = axum::body::to_bytes(r.into_body(), 16 * 1024 * 1024)
            .await
            .map_err(|_| S3Error::internal())?;
        let text = std::str::from_utf8(&bytes).map_err(|_| S3Error::internal())?;
        quick_xml::de::from_str(text).map_err(|e| {
            tracing::error!(error = %e, "the console could not read an S3 answer");
            S3Error::internal()
        })
    }
}

/// `ListAllMyBucketsResult`, as the console reads it.
#[derive(Deserialize, Debug, Default)]
pub struct BucketList {
    #[serde(rename = "Buckets", default)]
    pub buckets: Buckets,
}

#[derive(Deserialize, Debug, Default)]
pub struct Buckets {
    #[serde(rename = "Bucket", default)]
    pub bucket: Vec<BucketEntry>,
}

#[derive(Deserialize, Debug, Default)]
pub struct BucketEntry {
    #[serde(rename = "Name")]
    pub name: String,
    #[serde(rename = "CreationDate", default)]
    pub creation_date: String,
}

/// `ListBucketResult` (ListObjectsV2), as the console reads it.
#[derive(Deserialize, Debug, Default)]
pub struct ObjectList {
    #[serde(rename = "Contents", default)]
    pub contents: Vec<ObjectEntry>,
    #[serde(rename = "CommonPrefixes", default)]
    pub prefixes: Vec<PrefixEntry>,
    #[serde(rename = "IsTruncated", default)]
    pub truncated: bool,
    #[serde(rename = "NextContinuationToken", default)]
    pub next: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
pub struct ObjectEntry {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Size", default)]
    pub size: u64,
    #[serde(rename = "LastModified", default)]
    pub last_modified: String,
}

#[derive(Deserialize, Debug, Default)]
pub struct PrefixEntry {
    #[serde(rename = "Prefix")]
    pub prefix: String,
}

/// `Tagging`, as the console reads it.
#[derive(Deserialize, Debug, Default)]
pub struct Tagging {
    #[serde(rename = "TagSet", default)]
    pub tag_set: TagSet,
}

#[derive(Deserialize, Debug, Default)]
pub struct TagSet {
    #[serde(rename = "Tag", default)]
    pub tags: Vec<Tag>,
}

#[derive(Deserialize, Debug, Default)]
pub struct Tag {
    #[serde(rename = "Key")]
    pub key: String,
    #[serde(rename = "Value", default)]
    pub value: String,
}

/// One version (or delete marker) of ListObjectVersions.
#[derive(Debug, Default, Clone)]
pub struct VersionEntry {
    pub key: String,
    pub version_id: String,
    pub latest: bool,
    pub last_modified: String,
    pub size: String,
    pub delete_marker: bool,
}

/// The versions and delete markers of a `ListVersionsResult`, in order (they interleave,
/// which a derived reader does not take: read by events).
pub fn versions_of(xml: &str) -> Option<Vec<VersionEntry>> {
    use quick_xml::events::Event;
    let mut r = quick_xml::Reader::from_str(xml);
    let mut out = Vec::new();
    let mut current: Option<VersionEntry> = None;
    let mut field = String::new();
    loop {
        match r.read_event().ok()? {
            Event::Start(e) => {
                let name = String::from_utf8_lossy(e.local_name().as_ref()).into_owned();
                match name.as_str() {
                    "Version" | "DeleteMarker" => {
                        current = Some(VersionEntry {
                            delete_marker: name == "DeleteMarker",
                            ..Default::default()
                        })
                    }
                    _ => field = name,
                }
            }
            Event::Text(t) => {
                if let Some(v) = current.as_mut() {
                    let text = t.unescape().ok()?.into_owned();
                    match field.as_str() {
                        "Key" => v.key = crate::percent::decode(&text),
                        "VersionId" => v.version_id = text,
                        "IsLatest" => v.latest = text == "true",
                        "LastModified" => v.last_modified = text,
                        "Size" => v.size = text,
                        _ => {}
                    }
                }
            }
            Event::End(e) => {
                let name = e.local_name();
                if matches!(name.as_ref(), b"Version" | b"DeleteMarker") {
                    out.extend(current.take());
                }
                field.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Some(out)
}

impl Caller<'_> {
    /// Sends one S3 request as the key and reads its answer's body as text (at most `limit`
    /// bytes).
    #[allow(clippy::too_many_arguments)]
    pub async fn send_text(
        &self,
        method: Method,
        bucket: Option<&str>,
        key: Option<&str>,
        query: &[(&str, &str)],
        headers: &[(&str, String)],
        body: Body,
        limit: usize,
    ) -> S3Result<String> {
        let r = self.send(method, bucket, key, query, headers, body).await?;
        self.text(r, limit).await
    }

    /// The body of a successful answer, as text (at most `limit` bytes).
    pub async fn text(&self, r: Response, limit: usize) -> S3Result<String> {
        let bytes = axum::body::to_bytes(r.into_body(), limit)
            .await
            .map_err(|_| S3Error::internal())?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
}
