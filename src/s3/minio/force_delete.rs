//! MinIO's force delete: DeleteObject with `x-minio-force-delete: true` removes the key and
//! everything under it as a folder, every version included (minio-go's `ForceDelete`,
//! minio-js's `forceDelete`). As MinIO deletes a path, `logs` takes `logs` and `logs/...`, not
//! `logs-archive/...`; `logs/` takes `logs/...`. Leading slashes are dropped, as MinIO's
//! path cleaning drops them (minio-js sends `/my-prefix` as `DELETE /bucket//my-prefix`).
//!
//! Authorized as a listing and a DeleteObjects of those keys would be: the caller must be
//! allowed to list the bucket (the request tells which keys existed), and each key (each
//! version) is decided on its own, `s3:DeleteObject` (`s3:DeleteObjectVersion`) on the
//! object's ARN, so a bucket policy's Deny on part of the folder keeps that part (the answer is
//! then `403 AccessDenied`, after the rest was removed, as DeleteObjects reports such keys one
//! by one). Refused, never ignored: with `?versionId=` (the delete removes every version
//! already), in a bucket with Object Lock (retained versions cannot go, and MinIO refuses it
//! there too), and while a bucket's version index is still being built (`503 SlowDown`, retry).

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::notify::{Change, EventName};
use crate::s3::authz;
use crate::s3::lookup::require_bucket;
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
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

/// Keys (or versions) removed per round (each version is its own delete under its key's
/// lock, so a round is kept short).
const PAGE: usize = 200;

/// What one force delete takes: which listed keys are its own.
struct Scope {
    /// The key itself (a request without a trailing `/`), besides `folder`.
    exact: Option<String>,
    /// Keys starting with this are taken.
    folder: String,
}

impl Scope {
    fn of(key: &str) -> Self {
        if key.ends_with('/') {
            Self {
                exact: None,
                folder: key.to_owned(),
            }
        } else {
            Self {
                exact: Some(key.to_owned()),
                folder: format!("{key}/"),
            }
        }
    }

    fn takes(&self, key: &str) -> bool {
        self.exact.as_deref() == Some(key) || key.starts_with(&self.folder)
    }

    /// The listing queries: the folder, and the key itself when it is one.
    fn prefixes(&self) -> Vec<String> {
        let mut v = vec![self.folder.clone()];
        v.extend(self.exact.clone());
        v
    }
}

/// The key a force delete takes: the request's own, unless it begins with `/`. MinIO cleans
/// its paths, so `/my-prefix` means `my-prefix` there (minio-js's functional suite removes
/// `'/my-prefix'`, sent as `DELETE /bucket//my-prefix`); in S3 `/my-prefix` is a key of its
/// own, and grids3 stores such keys. Either reading would do what some caller did not mean,
/// and MinIO's would have the request authorized on one key and delete others (its policy
/// conditions, `s3:ExistingObjectTag` among them, read from the key named), so the request is
/// refused, never answered `204` with nothing removed.
fn unambiguous(key: &str) -> S3Result<&str> {
    if key.starts_with('/') {
        return Err(S3Error::invalid_argument(
            "x-minio-force-delete: the key begins with '/', which is part of an S3 key but \
             which MinIO drops; name the prefix without the leading slash",
        ));
    }
    Ok(key)
}

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
    let who = Who::of(st, &req);
    let scope = Scope::of(unambiguous(req.key())?);
    who.may_list(st, &scope).await?;
    let run = Run {
        st,
        who: &who,
        b: &b,
        scope: &scope,
    };
    let mut denied = 0usize;
    for prefix in scope.prefixes() {
        denied += if b.versioning.is_none() {
            run.unversioned(&prefix).await?
        } else {
            run.versioned(&prefix).await?
        };
    }
    if denied > 0 {
        return Err(S3Error::access_denied().with_message(
            "Access Denied: a policy keeps some of the objects or versions under the key",
        ));
    }
    Ok(empty(StatusCode::NO_CONTENT))
}

/// Who asks, as the deletes need it (the request itself is not `Sync`).
struct Who {
    auth: crate::auth::Auth,
    bucket: String,
    facts: std::collections::HashMap<String, Vec<String>>,
    per_key: Option<crate::s3::request::access::PerKey>,
    origin: crate::notify::Origin,
}

impl Who {
    fn of(st: &AppState, req: &S3Request) -> Self {
        Self {
            facts: authz::facts_of(st, req),
            auth: req.auth.clone(),
            bucket: req.bucket().to_owned(),
            per_key: req.per_key.clone(),
            origin: crate::s3::events::origin(req),
        }
    }

    /// The caller may list the bucket (a force delete's answer tells which keys existed).
    /// Decided for each listing the delete makes, with its prefix as `s3:prefix` (a key
    /// whose listing is allowed under its home prefix only may force delete there).
    async fn may_list(&self, st: &AppState, scope: &Scope) -> S3Result<()> {
        for prefix in scope.prefixes() {
            let mut facts = self.facts.clone();
            facts.insert("s3:prefix".to_owned(), vec![prefix]);
            let target = authz::Target {
                bucket: &self.bucket,
                key: None,
                facts: &facts,
                shape: Default::default(),
            };
            let ex = authz::explain(st, &Op::ListObjectsV2, &self.auth, &target).await?;
            if !matches!(ex.access, Access::Granted | Access::GrantedUnlisted) {
                return Err(S3Error::access_denied());
            }
        }
        Ok(())
    }

    fn allows(&self, key: &str, version: Option<&str>) -> bool {
        self.per_key
            .as_ref()
            .is_none_or(|check| check.allows(key, version))
    }
}

/// One force delete's removals.
#[derive(Clone, Copy)]
struct Run<'a> {
    st: &'a AppState,
    who: &'a Who,
    b: &'a BucketInfo,
    scope: &'a Scope,
}

impl Run<'_> {
    /// Removes the keys of an unversioned bucket listed under `prefix` that `scope` takes; the
    /// number the policy kept. Each round lists again from the last key kept (what was removed
    /// is gone from the listing).
    async fn unversioned(&self, prefix: &str) -> S3Result<usize> {
        let Run { st, who, b, scope } = *self;
        let origin = &who.origin;
        let mut after: Option<String> = None;
        let mut denied = 0;
        loop {
            let q = ListQuery {
                prefix: prefix.to_owned(),
                delimiter: None,
                after: after.clone(),
                max: PAGE,
            };
            let page = st.store.list(&b.name, &q).await?;
            let keys: Vec<(String, mongodb::bson::DateTime)> = page
                .entries
                .iter()
                .filter_map(|e| match e {
                    ListEntry::Object(o) if scope.takes(o.key()) => {
                        Some((o.key().to_owned(), o.file.upload_date))
                    }
                    _ => None,
                })
                .collect();
            let mut gone = Vec::new();
            for (k, at) in keys {
                if who.allows(&k, None) {
                    gone.push((k, at));
                } else {
                    denied += 1;
                    after = Some(k);
                }
            }
            // As listed: a revision written since the listing is newer and stays.
            crate::failpoint::hit("force_delete.listed", &b.name).await;
            st.store.delete_listed(&b.name, &gone).await?;
            let changes: Vec<Change> = gone.iter().map(|(k, _)| removed(k, None)).collect();
            crate::s3::events::record(st, &b.name, origin, &changes).await?;
            // The exact key's listing ends at the first other key.
            let past = page.entries.iter().any(|e| !scope.takes(e.name()));
            if !page.truncated || (scope.exact.as_deref() == Some(prefix) && past) {
                return Ok(denied);
            }
        }
    }

    /// [`Run::unversioned`] for a versioned bucket: every version and delete marker.
    async fn versioned(&self, prefix: &str) -> S3Result<usize> {
        let Run { st, who, b, scope } = *self;
        let origin = &who.origin;
        let none = DeleteCondition::default();
        let mut marker: Option<(String, String)> = None;
        let mut denied = 0;
        loop {
            let q = VersionListQuery {
                prefix: prefix.to_owned(),
                delimiter: None,
                key_marker: marker.as_ref().map(|m| m.0.clone()),
                version_marker: marker.as_ref().map(|m| m.1.clone()),
                max: PAGE,
            };
            let page = st.store.list_versions(&b.name, &q).await?;
            let mut changes = Vec::new();
            let mut past = false;
            for item in &page.items {
                let VersionItem::Version(e, _) = item else {
                    continue;
                };
                if !scope.takes(&e.key) {
                    past = true;
                    continue;
                }
                let vid = e.version_id();
                if !who.allows(&e.key, Some(vid)) {
                    // Listing again starts after the last version kept.
                    denied += 1;
                    marker = Some((e.key.clone(), vid.to_owned()));
                    continue;
                }
                let out = st
                    .store
                    .delete_object(&b.name, &e.key, Some(vid), &none, &who.auth.access_key)
                    .await?;
                if out.is_err() {
                    // Another writer holds the key: the client retries the whole delete.
                    crate::s3::events::record(st, &b.name, origin, &changes).await?;
                    return Err(S3Error::slow_down().with_message(
                        "A key under the prefix is being written: retry the force delete",
                    ));
                }
                changes.push(removed(&e.key, Some(vid)));
            }
            crate::s3::events::record(st, &b.name, origin, &changes).await?;
            if !page.truncated || (scope.exact.as_deref() == Some(prefix) && past) {
                return Ok(denied);
            }
        }
    }
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
