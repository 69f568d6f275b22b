//! MinIO's force delete: DeleteObject with `x-minio-force-delete: true` removes every object
//! and every version whose key starts with the request's key (minio-go's `ForceDelete`,
//! minio-js's `forceDelete`, `mc rm --force --recursive` on one request).
//!
//! Authorized as a DeleteObjects of those keys would be: each key (each version) on its own,
//! `s3:DeleteObject` (`s3:DeleteObjectVersion`) on the object's ARN, so a bucket policy's Deny
//! on part of the prefix keeps that part (the answer is then `403 AccessDenied`, after the
//! rest was removed, as DeleteObjects reports such keys one by one). Refused, never ignored:
//! with `?versionId=` (the delete removes every version already), in a bucket with Object
//! Lock (retained versions cannot go, and MinIO refuses it there too), and while a bucket's
//! version index is still being built (`503 SlowDown`, retry).

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::notify::{Change, EventName};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::state::AppState;
use crate::storage::objects::{
    DeleteCondition, ListEntry, ListQuery, VersionItem, VersionListQuery,
};

/// The header.
pub const HEADER: &str = "x-minio-force-delete";

/// Whether a request asks for a force delete: `true` (any case); `false` or no header is an
/// ordinary delete; anything else is refused.
pub fn asked(headers: &axum::http::HeaderMap) -> S3Result<bool> {
    match headers.get(HEADER).map(|v| v.to_str().map(str::trim)) {
        None => Ok(false),
        Some(Ok(v)) if v.eq_ignore_ascii_case("true") => Ok(true),
        Some(Ok(v)) if v.eq_ignore_ascii_case("false") => Ok(false),
        Some(_) => Err(S3Error::invalid_argument(format!(
            "{HEADER} must be true or false"
        ))),
    }
}

/// Keys (or versions) removed per round.
const PAGE: usize = 1000;

/// DeleteObject with `x-minio-force-delete: true`.
pub async fn delete_prefix(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    if req.q("versionId").is_some() {
        return Err(S3Error::invalid_request(
            "x-minio-force-delete removes every version: it takes no versionId",
        ));
    }
    if b.object_lock.is_some() {
        return Err(S3Error::invalid_request(
            "x-minio-force-delete is not allowed on a bucket with Object Lock",
        ));
    }
    if b.versioning.is_some() && !b.versions_indexed {
        return Err(S3Error::slow_down()
            .with_message("The bucket's version index is being built: retry the force delete"));
    }
    let prefix = req.key().to_owned();
    let origin = crate::s3::events::origin(&req);
    let allows = |key: &str, version: Option<&str>| {
        req.per_key
            .as_ref()
            .is_none_or(|check| check.allows(key, version))
    };
    let mut denied = 0usize;
    if b.versioning.is_none() {
        let mut after: Option<String> = None;
        loop {
            let q = ListQuery {
                prefix: prefix.clone(),
                delimiter: None,
                after: after.clone(),
                max: PAGE,
            };
            let page = st.store.list(&b.name, &q).await?;
            let keys: Vec<String> = page
                .entries
                .iter()
                .filter_map(|e| match e {
                    ListEntry::Object(o) => Some(o.key().to_owned()),
                    ListEntry::Prefix(_) => None,
                })
                .collect();
            after = page.entries.last().map(|e| e.name().to_owned());
            let (gone, kept): (Vec<String>, Vec<String>) =
                keys.into_iter().partition(|k| allows(k, None));
            denied += kept.len();
            st.store.delete_keys(&b.name, &gone).await?;
            let changes: Vec<Change> = gone.iter().map(|k| removed(k, None)).collect();
            crate::s3::events::record(st, &b.name, &origin, &changes).await?;
            if !page.truncated {
                break;
            }
        }
    } else {
        let mut marker: Option<(String, String)> = None;
        let none = DeleteCondition::default();
        loop {
            let q = VersionListQuery {
                prefix: prefix.clone(),
                delimiter: None,
                key_marker: marker.as_ref().map(|m| m.0.clone()),
                version_marker: marker.as_ref().map(|m| m.1.clone()),
                max: PAGE,
            };
            let page = st.store.list_versions(&b.name, &q).await?;
            let mut changes = Vec::new();
            for item in &page.items {
                let VersionItem::Version(e, _) = item else {
                    continue;
                };
                marker = Some((e.key.clone(), e.version_id().to_owned()));
                let vid = e.version_id();
                if !allows(&e.key, Some(vid)) {
                    denied += 1;
                    continue;
                }
                match st
                    .store
                    .delete_object(&b.name, &e.key, Some(vid), &none, &req.auth.access_key)
                    .await?
                {
                    Ok(_) => changes.push(removed(&e.key, Some(vid))),
                    // Another writer holds the key: the client retries the whole delete.
                    Err(_) => {
                        crate::s3::events::record(st, &b.name, &origin, &changes).await?;
                        return Err(S3Error::slow_down().with_message(format!(
                            "{} is being written: retry the force delete",
                            e.key
                        )));
                    }
                }
            }
            crate::s3::events::record(st, &b.name, &origin, &changes).await?;
            if !page.truncated {
                break;
            }
        }
    }
    if denied > 0 {
        return Err(S3Error::access_denied().with_message(format!(
            "Access Denied: the bucket policy keeps {denied} of the objects or versions under the prefix"
        )));
    }
    Ok(empty(StatusCode::NO_CONTENT))
}

/// The event of one removal.
fn removed(key: &str, version: Option<&str>) -> Change {
    Change {
        event: EventName::Delete,
        key: key.to_owned(),
        size: None,
        etag: None,
        version_id: version.map(str::to_owned),
    }
}
