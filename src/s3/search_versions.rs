//! A metadata search of versions (issue 63): `GET /<bucket>?versions&search=<query>`,
//! answered as ListObjectVersions answers (`ListVersionsResult`), with the versions that
//! match, in its order (key, then newest first), paged by `key-marker` and
//! `version-id-marker`.
//!
//! - **Authorization:** `s3:ListBucketVersions`, as ListObjectVersions, with the request's
//!   `prefix` as `s3:prefix`; each version is matched with what the caller may read of that
//!   version, as a GET of it (`?versionId=`) would be authorized: `s3:GetObjectVersion` and
//!   `s3:GetObjectVersionTagging`, `s3:versionid`, and the version's own tags for
//!   `s3:ExistingObjectTag` (`search.rs`).
//! - **What is found:** versions that are objects. A delete marker has no size, metadata or
//!   tags, and is never found, whatever the query. (grids3's choice: Zenko's own answer
//!   depends on how its metadata backend stores markers.)
//! - **A bucket without a version index** (never versioned, or its first index still being
//!   built) has one `null` version per key, its current object, as ListObjectVersions says.
//! - A truncated page always names where the next starts (`NextKeyMarker`,
//!   `NextVersionIdMarker`): the last version found, or, when the page's time ran out, the
//!   last one examined, which need not be found.

use axum::http::StatusCode;
use axum::response::Response;

use super::search::Searcher;
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::{encode_if, owner_of, xml_response};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{ObjectInfo, SearchScan, VersionSearchPage};
use crate::storage::versions;
use crate::xml::{self, to_xml, S3_NS};

/// `GET /<bucket>?versions&search=…`.
pub async fn search_object_versions(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let searcher = Searcher::of(st, &req, &bucket, true)?;
    let max = req.max_keys()?;
    let url = req.url_encoding()?;
    let prefix = req.q("prefix").unwrap_or_default().to_owned();
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
    let s = SearchScan {
        prefix: prefix.clone(),
        after: (!key_marker.is_empty()).then(|| key_marker.clone()),
        max,
        budget: searcher.budget,
        // Versions are read as ListObjectVersions reads them; the current objects of a
        // bucket without a version index by its declared index, as a search of them is.
        driver: (!bucket.versions_indexed)
            .then(|| searcher.driver.clone())
            .flatten(),
    };
    let searcher = &searcher;
    let page = if bucket.versions_indexed {
        let vm = (!version_marker.is_empty()).then(|| version_marker.clone());
        st.store
            .search_versions(&bucket.name, &s, vm, |batch| searcher.keep(st, batch))
            .await?
    } else {
        // One null version per key: the current objects.
        let p = st
            .store
            .search(&bucket.name, &s, |batch| searcher.keep(st, batch))
            .await?;
        VersionSearchPage {
            versions: p.objects.into_iter().map(|o| (o, true)).collect(),
            truncated: p.truncated,
            next_version_marker: p.next_marker.as_ref().map(|_| "null".to_owned()),
            next_key_marker: p.next_marker,
        }
    };
    let versions = page
        .versions
        .iter()
        .map(|(o, latest)| xml::VersionItem::Version(version_of(&bucket, o, *latest, url)))
        .collect();
    let body = xml::ListVersionsResult {
        xmlns: S3_NS,
        name: bucket.name.clone(),
        prefix: encode_if(url, &prefix),
        key_marker: encode_if(url, &key_marker),
        version_id_marker: version_marker,
        next_key_marker: page.next_key_marker.map(|k| encode_if(url, &k)),
        next_version_id_marker: page.next_version_marker,
        max_keys: max,
        delimiter: None,
        is_truncated: page.truncated,
        encoding_type: url.then(|| "url".to_owned()),
        versions,
        common_prefixes: Vec::new(),
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListVersionsResult", &body),
    ))
}

/// A found version as ListObjectVersions shows it.
fn version_of(bucket: &BucketInfo, o: &ObjectInfo, latest: bool, url: bool) -> xml::Version {
    xml::Version {
        key: encode_if(url, o.key()),
        version_id: o.version_id.clone().unwrap_or_else(|| "null".to_owned()),
        is_latest: latest,
        last_modified: crate::s3::request::headers::iso8601(o.file.upload_date),
        etag: o.etag().to_owned(),
        size: o.size(),
        owner: owner_of(crate::s3::rules::ownership::object_owner(
            bucket,
            o.meta.owner.as_deref(),
        )),
        storage_class: crate::model::storage_class::reported(o.meta.storage_class.as_deref()),
    }
}
