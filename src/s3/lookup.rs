//! Shared steps that read storage for the handlers: the addressed bucket, object or version,
//! the grantees an ACL names, and the request-timeout guard of bookkeeping steps.

use std::collections::HashMap;

use axum::http::HeaderMap;

use crate::auth::Auth;
use crate::error::{S3Error, S3Result};
use crate::s3::request::access::Access;
use crate::s3::request::grants::{self, Grant, Grantee};
use crate::s3::respond::owner_of;
use crate::s3::rules::acl::require_object_access;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{Lookup, ObjectInfo};
use crate::storage::versions;

/// The bucket's attributes, or `NoSuchBucket` (cached for at most a second, see
/// `meta::BUCKET_CACHE_TTL`).
pub async fn require_bucket(st: &AppState, name: &str) -> S3Result<BucketInfo> {
    st.store
        .meta()
        .bucket_cached(name)
        .await?
        .ok_or_else(S3Error::no_such_bucket)
}

/// Runs `f` within the request timeout (`--request-timeout`), or answers 503: for the steps of
/// data-moving operations that are bookkeeping (the publish after a PUT's body), which a
/// database that stops answering would otherwise hang. Dropping `f` midway is safe: every write
/// path leaves a state the janitor or a retry finishes.
pub async fn within_request_timeout<T>(
    st: &AppState,
    f: impl std::future::Future<Output = T>,
) -> S3Result<T> {
    let limit = std::time::Duration::from_secs(st.config.request_timeout.max(1));
    tokio::time::timeout(limit, f).await.map_err(|_| {
        tracing::warn!(limit_secs = limit.as_secs(), "request timed out");
        S3Error::service_unavailable()
    })
}

/// The current object, or `NoSuchKey`.
pub async fn require_object(st: &AppState, bucket: &str, key: &str) -> S3Result<ObjectInfo> {
    st.store
        .head(bucket, key)
        .await?
        .ok_or_else(S3Error::no_such_key)
}

/// The object a request addresses: the current one (`None` when there is none) or the
/// version named (`NoSuchVersion` when there is none). A delete marker is answered as S3
/// does: the current one with 404 and `x-amz-delete-marker: true`, a named one with 405.
pub async fn find_version(
    st: &AppState,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> S3Result<Option<ObjectInfo>> {
    find_version_as(st, bucket, key, version, false).await
}

/// [`find_version`]; with `read`, a small object comes with its data (see
/// `ObjectStore::lookup_to_read`), for a GET.
async fn find_version_as(
    st: &AppState,
    bucket: &str,
    key: &str,
    version: Option<&str>,
    read: bool,
) -> S3Result<Option<ObjectInfo>> {
    if version.is_some_and(|v| v != "null") {
        unversioned_id(st, bucket).await?;
    }
    let found = if read {
        st.store.lookup_to_read(bucket, key, version).await?
    } else {
        st.store.lookup(bucket, key, version).await?
    };
    match found {
        Lookup::Object(o) => Ok(Some(*o)),
        Lookup::DeleteMarker { version_id, at } => {
            let e = match version {
                Some(_) => S3Error::method_not_allowed()
                    .with_header("allow", "DELETE")
                    .with_header("last-modified", crate::s3::request::headers::http_date(at)),
                None => S3Error::no_such_key(),
            };
            Err(e
                .with_header("x-amz-delete-marker", "true")
                .with_header("x-amz-version-id", version_id))
        }
        Lookup::Missing => match version {
            Some(_) => Err(S3Error::no_such_version()),
            None => Ok(None),
        },
    }
}

/// [`find_version`] for a request whose access may depend on the object's ACL: a delete
/// marker is told only to whoever may list the bucket (anyone else gets what a missing
/// object gets). With `read` (a GET), a small object comes with its data: one query for the
/// whole read.
pub(crate) async fn find_for(
    st: &AppState,
    (bucket, key): (&str, &str),
    auth: &crate::auth::Auth,
    access: crate::s3::request::access::Access,
    version: Option<&str>,
    read: bool,
) -> S3Result<ObjectInfo> {
    let found = match find_version_as(st, bucket, key, version, read).await {
        Err(e)
            if !matches!(access, crate::s3::request::access::Access::Granted)
                && !e.headers.is_empty() =>
        {
            None
        }
        other => other?,
    };
    crate::s3::rules::acl::require_object_access(auth, access, found)
}

/// Canonical user id -> access key id, for every key (to check grantees and to name them).
pub(crate) async fn known_users(st: &AppState) -> S3Result<HashMap<String, String>> {
    let keys = st.store.meta().list_access_keys().await?;
    Ok(keys
        .into_iter()
        .map(|k| (owner_of(&k.id).id, k.id))
        .collect())
}

/// Canonical ids by the e-mail address of their key (lower-case).
pub(crate) async fn users_by_email(st: &AppState) -> S3Result<HashMap<String, String>> {
    let keys = st.store.meta().list_access_keys().await?;
    Ok(keys
        .into_iter()
        .filter_map(|k| Some((k.email?.to_ascii_lowercase(), owner_of(&k.id).id)))
        .collect())
}

/// Rewrites `emailAddress="…"` in `x-amz-grant-*` headers to `id="…"`, the canonical id of
/// the key with that address (`UnresolvableGrantByEmailAddress` for an address no key has,
/// as AWS answers). Done once where a request enters, so every later reading of the headers
/// (the ACL checks, the stored grants) sees canonical ids only.
pub(crate) async fn resolve_grant_emails(st: &AppState, h: &mut HeaderMap) -> S3Result<()> {
    use axum::http::HeaderValue;
    let named = |h: &HeaderMap| {
        crate::s3::request::grants::GRANT_HEADERS
            .iter()
            .any(|(n, _)| {
                h.get_all(*n).iter().any(|v| {
                    v.to_str()
                        .is_ok_and(|v| v.to_ascii_lowercase().contains("emailaddress"))
                })
            })
    };
    if !named(h) {
        return Ok(());
    }
    let emails = users_by_email(st).await?;
    for (name, _) in crate::s3::request::grants::GRANT_HEADERS {
        let values: Vec<String> = h
            .get_all(*name)
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        if values.is_empty() {
            continue;
        }
        let mut rewritten = Vec::with_capacity(values.len());
        for v in values {
            let mut items = Vec::new();
            for item in v.split(',') {
                match item.split_once('=') {
                    Some((k, addr)) if k.trim().eq_ignore_ascii_case("emailaddress") => {
                        let addr = addr.trim().trim_matches('"').to_ascii_lowercase();
                        let id = emails
                            .get(&addr)
                            .ok_or_else(S3Error::unresolvable_grant_by_email)?;
                        items.push(format!("id=\"{id}\""));
                    }
                    _ => items.push(item.trim().to_owned()),
                }
            }
            rewritten.push(items.join(", "));
        }
        h.remove(*name);
        for v in rewritten {
            let v = HeaderValue::from_str(&v)
                .map_err(|_| S3Error::invalid_argument(format!("Invalid {name} header value")))?;
            h.append(*name, v);
        }
    }
    Ok(())
}

/// Refuses grants to canonical ids that name no key, as AWS refuses unknown ids.
pub(crate) async fn check_users(st: &AppState, grants: &[Grant]) -> S3Result<()> {
    if !grants.iter().any(|g| matches!(g.grantee, Grantee::User(_))) {
        return Ok(());
    }
    let known = known_users(st).await?;
    for g in grants {
        if let Grantee::User(id) = &g.grantee {
            if !known.contains_key(id) {
                return Err(S3Error::invalid_argument("Invalid id"));
            }
        }
    }
    Ok(())
}

/// The ACL a request that creates a bucket or an object asks for (`None`: none), checked:
/// refused as AWS refuses it, or with 501 where grids3 does not have what it asks for.
pub async fn request_acl(
    st: &AppState,
    h: &HeaderMap,
    object: bool,
) -> S3Result<Option<Vec<Grant>>> {
    let acl = grants::from_headers(h, object)?;
    if let Some(g) = &acl {
        check_users(st, g).await?;
    }
    Ok(acl)
}

/// A copy's source object, when the request may read it (see [`require_object_access`]).
pub async fn require_copy_source(
    st: &AppState,
    auth: &Auth,
    access: Access,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> S3Result<ObjectInfo> {
    let found = match crate::s3::lookup::find_version(st, bucket, key, version).await {
        Err(e) if e.code == "MethodNotAllowed" => {
            return Err(S3Error::invalid_request(
                "The source of a copy request may not specifically refer to a delete marker by version id.",
            ))
        }
        Err(e) if !matches!(access, Access::Granted) && !e.headers.is_empty() => None,
        other => other?,
    };
    require_object_access(auth, access, found)
}

/// A bucket that never had versioning has no version but `null`: any other id is
/// `InvalidArgument`, as AWS answers it (and a DELETE of it must not delete the object).
pub(crate) async fn unversioned_id(st: &AppState, bucket: &str) -> S3Result<()> {
    if st.store.versioning(bucket).await?.0 == versions::Versioning::Off {
        return Err(S3Error::invalid_argument("Invalid version id specified"));
    }
    Ok(())
}

/// A copy's source, ready to read: found and readable by the request (see
/// [`require_copy_source`]), its data key opened with the copy-source SSE-C headers where it is
/// SSE-C, and the `x-amz-copy-source-if-*` conditions checked (CopyObject and UploadPartCopy).
// (Takes the request's parts, not the request: its body is not `Sync`, and this future is held
// across awaits by handlers that must be `Send`.)
pub async fn open_copy_source(
    st: &AppState,
    (auth, access, headers): (&Auth, Access, &HeaderMap),
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> S3Result<ObjectInfo> {
    let mut src = require_copy_source(st, auth, access, bucket, key, version).await?;
    crate::s3::sse::open_object(
        st,
        &mut src,
        headers,
        crate::s3::request::sse::COPY_SOURCE_CUSTOMER,
    )
    .await?;
    crate::s3::rules::preconditions::check_copy_source(headers, &src)?;
    Ok(src)
}
