//! Listings: ListObjectsV2, ListObjects (v1) and ListObjectVersions (every current object once,
//! with version id `null`, until versioning exists).

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;

use super::{owner_of, require_bucket, xml_response, S3Request};
use crate::auth::sigv4::uri_encode;
use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{ListEntry, ListPage, ListQuery, ObjectInfo};
use crate::xml::{self, to_xml, S3_NS};

struct Common {
    prefix: String,
    delimiter: Option<String>,
    max_keys: usize,
    url: bool,
}

fn common(req: &S3Request) -> S3Result<Common> {
    let max_keys = match req.q("max-keys") {
        None => 1000,
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| {
                S3Error::invalid_argument(
                    "Provided max-keys not an integer or within integer range",
                )
            })?
            .min(1000) as usize,
    };
    let url = match req.q("encoding-type") {
        None => false,
        Some("url") => true,
        Some(_) => {
            return Err(S3Error::invalid_argument(
                "Invalid Encoding Method specified in Request",
            ))
        }
    };
    Ok(Common {
        prefix: req.q("prefix").unwrap_or_default().to_owned(),
        delimiter: req
            .q("delimiter")
            .filter(|d| !d.is_empty())
            .map(str::to_owned),
        max_keys,
        url,
    })
}

impl Common {
    /// The storage query for these parameters, starting after `after` (empty: the start).
    fn query(&self, after: &str) -> ListQuery {
        ListQuery {
            prefix: self.prefix.clone(),
            delimiter: self.delimiter.clone(),
            after: (!after.is_empty()).then(|| after.to_owned()),
            max: self.max_keys,
        }
    }
}

fn enc(url: bool, s: &str) -> String {
    if url {
        uri_encode(s, true)
    } else {
        s.to_owned()
    }
}

/// The owner element of an object in a listing.
fn owner_el(b: &BucketInfo, o: &ObjectInfo) -> xml::Owner {
    owner_of(super::ownership::object_owner(b, o.meta.owner.as_deref()))
}

fn contents(o: &ObjectInfo, url: bool, owner: Option<xml::Owner>) -> xml::Contents {
    xml::Contents {
        key: enc(url, o.key()),
        last_modified: super::headers::iso8601(o.file.upload_date),
        etag: o.etag().to_owned(),
        size: o.file.length,
        owner,
        storage_class: "STANDARD",
    }
}

fn split(
    page: &ListPage,
    url: bool,
    owners: Option<&BucketInfo>,
) -> (Vec<xml::Contents>, Vec<xml::CommonPrefix>) {
    let mut c = Vec::new();
    let mut p = Vec::new();
    for e in &page.entries {
        match e {
            ListEntry::Object(o) => c.push(contents(o, url, owners.map(|b| owner_el(b, o)))),
            ListEntry::Prefix(s) => p.push(xml::CommonPrefix {
                prefix: enc(url, s),
            }),
        }
    }
    (c, p)
}

/// ListObjectsV2.
pub async fn list_objects_v2(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let c = common(&req)?;
    let token = req.q("continuation-token").map(str::to_owned);
    let after = match &token {
        Some(t) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    S3Error::invalid_argument("The continuation token provided is incorrect")
                })?,
        ),
        None => req
            .q("start-after")
            .filter(|s| !s.is_empty())
            .map(str::to_owned),
    };
    let page = st
        .store
        .list(&bucket.name, &c.query(after.as_deref().unwrap_or_default()))
        .await?;
    let fetch_owner = req.q("fetch-owner") == Some("true");
    let (contents, prefixes) = split(&page, c.url, fetch_owner.then_some(&bucket));
    let next = page
        .truncated
        .then(|| {
            page.entries
                .last()
                .map(|e| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(e.name()))
        })
        .flatten();
    let body = xml::ListBucketResultV2 {
        xmlns: S3_NS,
        name: bucket.name,
        prefix: enc(c.url, &c.prefix),
        delimiter: c.delimiter.as_deref().map(|d| enc(c.url, d)),
        max_keys: c.max_keys,
        key_count: contents.len() + prefixes.len(),
        is_truncated: page.truncated,
        encoding_type: c.url.then(|| "url".to_owned()),
        continuation_token: token,
        next_continuation_token: next,
        start_after: req.q("start-after").map(|s| enc(c.url, s)),
        contents,
        common_prefixes: prefixes,
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListBucketResult", &body),
    ))
}

/// ListObjects (v1): marker; NextMarker only with a delimiter, as S3 does.
pub async fn list_objects_v1(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let c = common(&req)?;
    let marker = req.q("marker").unwrap_or_default().to_owned();
    let page = st.store.list(&bucket.name, &c.query(&marker)).await?;
    let (contents, prefixes) = split(&page, c.url, Some(&bucket));
    let next_marker = (page.truncated && c.delimiter.is_some())
        .then(|| page.entries.last().map(|e| enc(c.url, e.name())))
        .flatten();
    let body = xml::ListBucketResultV1 {
        xmlns: S3_NS,
        name: bucket.name,
        // S3 leaves ListObjects v1's own Prefix unencoded even with encoding-type=url (and
        // botocore, which decodes Marker, NextMarker, Delimiter and the keys, relies on it).
        prefix: c.prefix.clone(),
        marker: enc(c.url, &marker),
        next_marker,
        max_keys: c.max_keys,
        delimiter: c.delimiter.as_deref().map(|d| enc(c.url, d)),
        is_truncated: page.truncated,
        encoding_type: c.url.then(|| "url".to_owned()),
        contents,
        common_prefixes: prefixes,
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListBucketResult", &body),
    ))
}

/// ListObjectVersions for a bucket that never had versioning: one `null` version per key.
pub async fn list_object_versions(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let c = common(&req)?;
    let key_marker = req.q("key-marker").unwrap_or_default().to_owned();
    let page = st.store.list(&bucket.name, &c.query(&key_marker)).await?;
    let mut versions = Vec::new();
    let mut prefixes = Vec::new();
    for e in &page.entries {
        match e {
            ListEntry::Object(o) => versions.push(xml::Version {
                key: enc(c.url, o.key()),
                version_id: "null",
                is_latest: true,
                last_modified: super::headers::iso8601(o.file.upload_date),
                etag: o.etag().to_owned(),
                size: o.file.length,
                owner: owner_el(&bucket, o),
                storage_class: "STANDARD",
            }),
            ListEntry::Prefix(p) => prefixes.push(xml::CommonPrefix {
                prefix: enc(c.url, p),
            }),
        }
    }
    let last = page.entries.last().filter(|_| page.truncated);
    let body = xml::ListVersionsResult {
        xmlns: S3_NS,
        name: bucket.name,
        prefix: enc(c.url, &c.prefix),
        key_marker: enc(c.url, &key_marker),
        version_id_marker: req.q("version-id-marker").unwrap_or_default().to_owned(),
        next_key_marker: last.map(|e| enc(c.url, e.name())),
        next_version_id_marker: last
            .and_then(|e| matches!(e, ListEntry::Object(_)).then(|| "null".to_owned())),
        max_keys: c.max_keys,
        delimiter: c.delimiter.as_deref().map(|d| enc(c.url, d)),
        is_truncated: page.truncated,
        encoding_type: c.url.then(|| "url".to_owned()),
        versions,
        common_prefixes: prefixes,
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListVersionsResult", &body),
    ))
}
