//! Bucket operations: ListBuckets, CreateBucket, HeadBucket, DeleteBucket, GetBucketLocation,
//! GetBucketVersioning.

use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use base64::Engine;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::grants;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::owner_of;
use crate::s3::respond::xml_response;
use crate::s3::rules::lock::invalid_state;
use crate::state::AppState;
use crate::storage::meta::{BucketInfo, StorageMode};
use crate::storage::versions::Versioning;
use crate::xml::{self, to_xml, S3_NS};

/// S3's bucket naming rules for new buckets.
pub fn valid_bucket_name(name: &str) -> bool {
    let b = name.as_bytes();
    let ip_like = name.split('.').count() == 4
        && name
            .split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit()));
    (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && !name.contains("..")
        && !name.contains("-.")
        && !name.contains(".-")
        && !ip_like
        && !["xn--", "sthree-", "amzn-s3-demo-"]
            .iter()
            .any(|p| name.starts_with(p))
        && !["-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// ListBuckets.
pub async fn list_buckets(st: &AppState, req: S3Request) -> S3Result<Response> {
    // A key sees the buckets it owns or was granted; the root key sees all.
    let prefix = req.q("prefix").unwrap_or_default().to_owned();
    let region = req.q("bucket-region").map(str::to_owned);
    let max = match req.q("max-buckets") {
        None => usize::MAX,
        Some(v) => v
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=10_000).contains(n))
            .ok_or_else(|| {
                S3Error::invalid_argument("max-buckets must be an integer from 1 to 10000")
            })?,
    };
    // The continuation token is the last name of the previous page, base64url-encoded.
    let after = match req.q("continuation-token") {
        None => None,
        Some(t) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    S3Error::invalid_argument("The continuation token provided is incorrect")
                })?,
        ),
    };
    let mut buckets: Vec<_> = st
        .store
        .meta()
        .list_buckets()
        .await?
        .into_iter()
        // An IAM user sees its account's buckets (and those granted to its key).
        .filter(|b| {
            b.owner == req.auth.account_key()
                || crate::s3::rules::authz::role_on(&req.auth, b).is_some()
        })
        .filter(|b| b.name.starts_with(&prefix))
        .filter(|b| region.as_ref().is_none_or(|r| *r == b.region))
        .filter(|b| after.as_ref().is_none_or(|a| b.name > *a))
        .collect();
    let token = (buckets.len() > max).then(|| {
        buckets.truncate(max);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
            buckets
                .last()
                .map(|b| b.name.as_bytes())
                .unwrap_or_default(),
        )
    });
    let body = xml::ListAllMyBucketsResult {
        xmlns: S3_NS,
        owner: owner_of(req.auth.account_key()),
        continuation_token: token,
        prefix: req.q("prefix").map(str::to_owned),
        buckets: xml::Buckets {
            bucket: buckets
                .into_iter()
                .map(|b| xml::BucketEntry {
                    name: b.name,
                    creation_date: crate::s3::request::headers::iso8601(b.creation_date),
                    region: b.region,
                })
                .collect(),
        },
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListAllMyBucketsResult", &body),
    ))
}

/// CreateBucket.
pub async fn create_bucket(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let name = req.bucket().to_owned();
    if !valid_bucket_name(&name) {
        return Err(S3Error::invalid_bucket_name());
    }
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    if !body.iter().all(u8::is_ascii_whitespace) {
        let conf: xml::CreateBucketConfiguration =
            xml::from_xml("CreateBucketConfiguration", &body)?;
        if let Some(lc) = conf.location_constraint.filter(|l| !l.is_empty()) {
            if lc != st.config.region {
                return Err(S3Error::illegal_location_constraint(format!(
                    "The {lc} location constraint is incompatible for the region specific endpoint this request was sent to."
                )));
            }
        }
    }
    // Checked before the handler ran (`acl::request_acl`).
    let acl = grants::from_headers(&req.parts.headers, false)
        .ok()
        .flatten();
    let ownership =
        crate::s3::rules::ownership::for_new_bucket(st, &req.parts.headers, acl.as_deref())?;
    // Object Lock needs versioning: a bucket created with it starts versioned, with an empty
    // (so complete) version index.
    let lock = req
        .header("x-amz-bucket-object-lock-enabled")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let requested = storage_mode(&req)?;
    let storage = requested.unwrap_or_default();
    let info = BucketInfo {
        acl: grants::to_stored_as(
            acl.as_deref().unwrap_or_default(),
            grants::explicit_in_headers(&req.parts.headers),
        ),
        ownership: Some(ownership),
        versioning: lock.then(|| "Enabled".to_owned()),
        versions_indexed: lock,
        object_lock: lock.then(crate::storage::meta::ObjectLockConfig::default),
        storage,
        // A bucket an IAM user creates belongs to its account, as on AWS.
        ..BucketInfo::new(
            &name,
            req.auth.account_key(),
            &st.config.region,
            st.store.meta().clock().now(),
        )
    };
    if !store_new_bucket(st, &info).await? {
        let existing = st.store.meta().get_bucket(&name).await?;
        let owner = existing.as_ref().map(|b| b.owner.clone());
        if owner.as_deref() == Some(req.auth.account_key()) || req.auth.root {
            // A storage mode asked for that the existing bucket does not have is never
            // answered as done.
            if existing.is_some_and(|b| requested.is_some_and(|m| m != b.storage)) {
                return Err(S3Error::bucket_already_owned_by_you().with_message(
                    "The bucket exists with another storage mode; a bucket's mode cannot change.",
                ));
            }
            // AWS's legacy us-east-1 behaviour, which awscli and s3cmd meet: creating a bucket
            // one already owns succeeds (and changes nothing). Other regions answer 409, and
            // so does us-east-1 when the request asks for an ACL, which it would not get.
            if st.config.region == "us-east-1" && acl.is_none() {
                let mut r = empty(StatusCode::OK);
                if let Ok(v) = HeaderValue::from_str(&format!("/{name}")) {
                    r.headers_mut().insert("location", v);
                }
                return Ok(r);
            }
            return Err(S3Error::bucket_already_owned_by_you());
        }
        return Err(S3Error::bucket_already_exists());
    }
    let mut r = empty(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&format!("/{name}")) {
        r.headers_mut().insert("location", v);
    }
    Ok(r)
}

/// Records a new bucket and prepares its collections (CreateBucket, and the admin API's
/// bucket creation); `false` when a bucket of that name exists.
pub async fn store_new_bucket(st: &AppState, info: &BucketInfo) -> S3Result<bool> {
    let name = &info.name;
    let was_deleted = st.store.meta().is_tombstone(name).await?;
    // Metered and linked from the start when its account has a quota.
    if !st.store.record_new_bucket(info).await? {
        return Ok(false);
    }
    // (Where a test writes into the bucket before its collections are prepared.)
    crate::failpoint::hit("bucket.recorded", name).await;
    // A fresh handle: this process may have cached one from before the bucket was deleted
    // and recreated through another instance, and that one would skip the indexes.
    st.store.forget_gridfs(name);
    if was_deleted {
        // Whatever a write racing the old bucket's deletion left behind belongs to nobody.
        st.store.drop_bucket(name).await?;
    }
    st.store.gridfs(name).ensure_indexes().await?;
    if info.storage == StorageMode::Content {
        st.store.contents(name).ensure_indexes().await?;
    }
    if info.object_lock.is_some() {
        st.store.versions(name).ensure_indexes().await?;
    }
    if st.config.shard_buckets {
        // Never a bucket left unsharded on a cluster meant to spread it: a failure undoes
        // the creation (the tombstone has the janitor drop the collections, and a retried
        // CreateBucket starts over) and is the client's error.
        if let Err(e) = st.store.shard_bucket(name).await {
            tracing::error!(bucket = %name, error = %e, "could not shard the bucket's collections");
            st.store.meta().delete_bucket(name).await?;
            return Err(e.into());
        }
    }
    Ok(true)
}

/// The storage mode a CreateBucket asks for (`x-grids3-storage-mode: gridfs | content`, a
/// grids3 header; `None` without it, which creates a `gridfs` bucket).
fn storage_mode(req: &S3Request) -> S3Result<Option<StorageMode>> {
    match req.header("x-grids3-storage-mode") {
        None => Ok(None),
        Some(v) => StorageMode::parse(v).map(Some).ok_or_else(|| {
            S3Error::invalid_argument("x-grids3-storage-mode must be gridfs or content")
        }),
    }
}

/// HeadBucket.
pub async fn head_bucket(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let mut r = empty(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&b.region) {
        r.headers_mut().insert("x-amz-bucket-region", v);
    }
    Ok(r)
}

/// DeleteBucket: only an empty bucket.
pub async fn delete_bucket(st: &AppState, req: S3Request) -> S3Result<Response> {
    let name = req.bucket();
    require_bucket(st, name).await?;
    if !st.store.is_empty(name).await? {
        return Err(S3Error::bucket_not_empty());
    }
    // Mark it first (new requests see no bucket), wait for writes already under way to end,
    // and look again: a write that was racing either shows up now or never publishes here.
    if !st.store.meta().mark_bucket_deleting(name).await? {
        return Err(S3Error::no_such_bucket());
    }
    let settled = async {
        // This instance's idle registration pools go now; other instances' within a second.
        // A content-addressed bucket's writes are registered under its blobs bucket.
        let blobs = crate::storage::content::blobs_name(name);
        st.store.meta().retire_idle_pool(name).await?;
        st.store.meta().retire_idle_pool(&blobs).await?;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while st.store.meta().has_live_writes(name).await?
            || st.store.meta().has_live_writes(&blobs).await?
        {
            if tokio::time::Instant::now() > deadline {
                return Err(S3Error::operation_aborted());
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        Ok(st.store.is_empty(name).await?)
    }
    .await;
    match settled {
        Ok(true) => {}
        Ok(false) => {
            st.store.meta().unmark_bucket_deleting(name).await?;
            return Err(S3Error::bucket_not_empty());
        }
        Err(e) => {
            st.store.meta().unmark_bucket_deleting(name).await?;
            return Err(e);
        }
    }
    st.store.meta().delete_bucket(name).await?;
    st.store.drop_bucket(name).await?;
    st.store.meta().forget_bucket(name);
    Ok(empty(StatusCode::NO_CONTENT))
}

/// GetBucketLocation: an empty constraint means us-east-1, as in AWS.
pub async fn get_location(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let region = if b.region == "us-east-1" {
        String::new()
    } else {
        b.region
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml(
            "LocationConstraint",
            &xml::LocationConstraint {
                xmlns: S3_NS,
                region,
            },
        ),
    ))
}

/// GetBucketVersioning: `Enabled` or `Suspended`, or no Status for a bucket that never had
/// versioning.
pub async fn get_versioning(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let status = Versioning::from_status(b.versioning.as_deref()).status();
    // Under Object Lock no exclusion applies (storage versions every key there), so none is
    // shown, whatever a race with PutObjectLockConfiguration left stored.
    let none = Default::default();
    let e = if b.object_lock.is_some() {
        &none
    } else {
        &b.versioning_exclusions
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml(
            "VersioningConfiguration",
            &xml::VersioningConfiguration {
                xmlns: S3_NS,
                status,
                excluded_prefixes: e
                    .prefixes
                    .iter()
                    .map(|p| xml::ExcludedPrefix { prefix: p.clone() })
                    .collect(),
                exclude_folders: e.folders.then_some(true),
            },
        ),
    ))
}

/// PutBucketVersioning. The first time versioning is enabled (or suspended) the version index
/// is built before the answer (see `ObjectStore::set_versioning`), so the request takes a
/// second or more. MFA Delete is refused: grids3 has no MFA devices.
pub async fn put_versioning(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    let b = require_bucket(st, &bucket).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let conf: xml::VersioningConfigurationIn = xml::from_xml("VersioningConfiguration", &body)?;
    match conf.mfa_delete.as_deref() {
        None | Some("Disabled") => {}
        Some("Enabled") => {
            return Err(S3Error::not_implemented()
                .with_message("MFA Delete is not supported: grids3 has no MFA devices"))
        }
        Some(_) => return Err(S3Error::malformed_xml()),
    }
    let status = match conf.status.as_deref() {
        Some("Enabled") => Versioning::Enabled,
        Some("Suspended") => {
            if b.object_lock.is_some() {
                return Err(invalid_state(LOCKED_SUSPEND));
            }
            Versioning::Suspended
        }
        None if conf.excluded_prefixes.is_empty() && conf.exclude_folders.is_none() => {
            // AWS accepts a configuration without Status and changes nothing.
            return Ok(empty(StatusCode::OK));
        }
        None => {
            return Err(S3Error::invalid_argument(
                "ExcludedPrefixes and ExcludeFolders need a Status of Enabled",
            ))
        }
        Some(_) => return Err(S3Error::malformed_xml()),
    };
    let exclusions = exclusions_of(&conf, status)?;
    if !exclusions.is_empty() && b.object_lock.is_some() {
        // A version under retention must never be replaced: with Object Lock every key is
        // versioned (MinIO refuses exclusions there too).
        return Err(invalid_state(LOCKED_EXCLUSIONS));
    }
    crate::failpoint::hit("versioning.decided", &bucket).await;
    // Written only if Object Lock is still off where that was decided (exclusions, or a
    // suspension): a lock set since makes the write match nothing.
    if !st
        .store
        .set_versioning(&bucket, status, &exclusions)
        .await?
    {
        if st.store.meta().get_bucket(&bucket).await?.is_none() {
            return Err(S3Error::no_such_bucket());
        }
        return Err(invalid_state(if exclusions.is_empty() {
            LOCKED_SUSPEND
        } else {
            LOCKED_EXCLUSIONS
        }));
    }
    Ok(empty(StatusCode::OK))
}

const LOCKED_SUSPEND: &str = "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.";
const LOCKED_EXCLUSIONS: &str =
    "Versioning exclusions are not allowed on a bucket with Object Lock";

/// MinIO's versioning exclusions in a PutBucketVersioning (`ExcludedPrefixes`, up to 10, and
/// `ExcludeFolders`): only with `Enabled`, as MinIO takes them; an empty or over-long pattern
/// and more than 10 are refused, never cut.
fn exclusions_of(
    conf: &xml::VersioningConfigurationIn,
    status: Versioning,
) -> S3Result<crate::storage::versions::exclusions::Exclusions> {
    use crate::storage::versions::exclusions::{Exclusions, MAX_PREFIXES};
    let folders = match conf.exclude_folders.as_deref().map(str::trim) {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(S3Error::malformed_xml()),
    };
    let prefixes: Vec<String> = conf
        .excluded_prefixes
        .iter()
        .map(|p| p.prefix.clone())
        .collect();
    let e = Exclusions { prefixes, folders };
    if e.is_empty() {
        return Ok(e);
    }
    if status != Versioning::Enabled {
        return Err(S3Error::invalid_argument(
            "ExcludedPrefixes and ExcludeFolders apply only when versioning is Enabled",
        ));
    }
    if e.prefixes.len() > MAX_PREFIXES {
        return Err(S3Error::invalid_argument(format!(
            "At most {MAX_PREFIXES} ExcludedPrefixes are allowed"
        )));
    }
    if e.prefixes.iter().any(|p| p.is_empty() || p.len() > 1024) {
        return Err(S3Error::invalid_argument(
            "An ExcludedPrefixes Prefix must be 1 to 1024 characters",
        ));
    }
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::valid_bucket_name as v;

    #[test]
    fn naming_rules() {
        assert!(v("my-bucket") && v("a.b.c") && v("abc") && v("0ab"));
        for bad in [
            "ab",
            "My-bucket",
            "-ab",
            "ab-",
            "a..b",
            "192.168.1.1",
            "xn--ab",
            "ab-s3alias",
            "a_b",
            &"a".repeat(64),
        ] {
            assert!(!v(bad), "{bad}");
        }
    }
}
