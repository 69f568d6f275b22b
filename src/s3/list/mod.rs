//! Listings: ListObjectsV2, ListObjects (v1) and ListObjectVersions (in a bucket that never had
//! versioning, every current object once with version id `null`).

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::owner_of;
use crate::s3::respond::xml_response;
use crate::s3::respond::{encode_if as enc, listed_contents as contents};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{
    ListEntry, ListPage, ListQuery, ObjectInfo, ObjectMeta, VersionItem, VersionListQuery,
};
use crate::storage::versions;
use crate::xml::{self, to_xml, S3_NS};

mod metadata;

struct Common {
    prefix: String,
    delimiter: Option<String>,
    max_keys: usize,
    url: bool,
}

fn common(req: &S3Request) -> S3Result<Common> {
    let max_keys = req.max_keys()?;
    let url = req.url_encoding()?;
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

/// The owner element of an object in a listing.
fn owner_el(b: &BucketInfo, o: &ObjectInfo) -> xml::Owner {
    owner_of(crate::s3::rules::ownership::object_owner(
        b,
        o.meta.owner.as_deref(),
    ))
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
    let (mut contents, prefixes) = split(&page, c.url, fetch_owner.then_some(&bucket));
    if metadata::asked(&req) {
        let objects: Vec<&ObjectInfo> = page
            .entries
            .iter()
            .filter_map(|e| match e {
                ListEntry::Object(o) => Some(&**o),
                ListEntry::Prefix(_) => None,
            })
            .collect();
        let who = crate::s3::authz::per_key::Caller::of(st, &req);
        metadata::fill(st, &who, &objects, &mut contents).await?;
    }
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

/// ListObjectVersions: every version and delete marker of a versioned bucket; in a bucket
/// that never had versioning, one `null` version per key.
pub async fn list_object_versions(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let c = common(&req)?;
    let key_marker = req.q("key-marker").unwrap_or_default().to_owned();
    let version_marker = req.q("version-id-marker").unwrap_or_default().to_owned();
    if !version_marker.is_empty() {
        if key_marker.is_empty() {
            return Err(S3Error::invalid_argument(
                "A version-id marker cannot be specified without a key marker.",
            ));
        }
        if version_marker != "null" && !versions::is_valid_vid(&version_marker) {
            return Err(S3Error::invalid_argument("Invalid version id specified"));
        }
    }
    if bucket.versions_indexed {
        return list_versions_indexed(st, bucket, c, key_marker, version_marker).await;
    }
    let page = st.store.list(&bucket.name, &c.query(&key_marker)).await?;
    let mut versions = Vec::new();
    let mut prefixes = Vec::new();
    for e in &page.entries {
        match e {
            ListEntry::Object(o) => versions.push(xml::VersionItem::Version(xml::Version {
                key: enc(c.url, o.key()),
                version_id: "null".to_owned(),
                is_latest: true,
                last_modified: crate::s3::request::headers::iso8601(o.file.upload_date),
                etag: o.etag().to_owned(),
                size: o.size(),
                owner: owner_el(&bucket, o),
                storage_class: crate::model::storage_class::reported(
                    o.meta.storage_class.as_deref(),
                ),
            })),
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

/// ListObjectVersions of a bucket with a version index.
async fn list_versions_indexed(
    st: &AppState,
    bucket: BucketInfo,
    c: Common,
    key_marker: String,
    version_marker: String,
) -> S3Result<Response> {
    let q = VersionListQuery {
        prefix: c.prefix.clone(),
        delimiter: c.delimiter.clone(),
        key_marker: (!key_marker.is_empty()).then(|| key_marker.clone()),
        version_marker: (!version_marker.is_empty()).then(|| version_marker.clone()),
        max: c.max_keys,
    };
    let page = st.store.list_versions(&bucket.name, &q).await?;
    let mut versions = Vec::new();
    let mut prefixes = Vec::new();
    for item in &page.items {
        match item {
            VersionItem::Version(e, latest) => {
                let last_modified = crate::s3::request::headers::iso8601(e.at);
                match &e.file {
                    Some(f) => {
                        let meta = ObjectMeta::from_metadata(f.metadata.as_ref());
                        versions.push(xml::VersionItem::Version(xml::Version {
                            key: enc(c.url, &e.key),
                            version_id: e.version_id().to_owned(),
                            is_latest: *latest,
                            last_modified,
                            etag: meta.etag.clone().unwrap_or_else(|| "\"\"".to_owned()),
                            size: meta.sse.as_ref().map_or(f.length, |s| s.size),
                            owner: owner_of(crate::s3::rules::ownership::object_owner(
                                &bucket,
                                meta.owner.as_deref(),
                            )),
                            storage_class: crate::model::storage_class::reported(
                                meta.storage_class.as_deref(),
                            ),
                        }))
                    }
                    None => versions.push(xml::VersionItem::DeleteMarker(xml::DeleteMarkerEntry {
                        key: enc(c.url, &e.key),
                        version_id: e.version_id().to_owned(),
                        is_latest: *latest,
                        last_modified,
                        owner: owner_of(e.owner.as_deref().unwrap_or(&bucket.owner)),
                    })),
                }
            }
            VersionItem::Prefix(p) => prefixes.push(xml::CommonPrefix {
                prefix: enc(c.url, p),
            }),
        }
    }
    let last = page.items.last().filter(|_| page.truncated);
    let (next_key, next_version) = match last {
        Some(VersionItem::Version(e, _)) => (Some(e.key.clone()), Some(e.version_id().to_owned())),
        Some(VersionItem::Prefix(p)) => (Some(p.clone()), None),
        None => (None, None),
    };
    let body = xml::ListVersionsResult {
        xmlns: S3_NS,
        name: bucket.name,
        prefix: enc(c.url, &c.prefix),
        key_marker: enc(c.url, &key_marker),
        version_id_marker: version_marker,
        next_key_marker: next_key.map(|k| enc(c.url, &k)),
        next_version_id_marker: next_version,
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
