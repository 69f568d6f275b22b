//! The door from the S3 handlers to event notifications (`crate::notify`): a handler that
//! changed objects calls [`record`] after the change and before it answers. It knows nothing
//! of targets; a bucket without a notification configuration or a listener costs a cache
//! lookup (and a read of the listener registry at most once a second per instance).

use crate::error::{S3Error, S3Result};
use crate::notify::{Change, Origin};
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::storage::objects::ObjectInfo;

/// Who made a request's changes, as its event records name it.
pub fn origin(req: &S3Request) -> Origin {
    origin_of(
        (!req.auth.is_anonymous()).then_some(req.auth.access_key.as_str()),
        req.source_ip,
        &req.request_id,
    )
}

/// [`origin`] from its parts (POST Object, which has no `S3Request`).
pub fn origin_of(
    access_key: Option<&str>,
    source_ip: Option<std::net::IpAddr>,
    request_id: &str,
) -> Origin {
    Origin {
        principal: access_key.unwrap_or("Anonymous").to_owned(),
        source_ip: source_ip.map(|ip| ip.to_string()).unwrap_or_default(),
        request_id: request_id.to_owned(),
    }
}

/// The origin of a lifecycle expiration: AWS's service principal (which consumers know), no
/// client address, and an id of its own.
pub fn lifecycle_origin() -> Origin {
    Origin {
        principal: "s3.amazonaws.com".to_owned(),
        source_ip: String::new(),
        request_id: mongodb::bson::oid::ObjectId::new().to_hex().to_uppercase(),
    }
}

/// The change of a lifecycle expiration of `key` (`version_id`: the version removed, or the
/// delete marker written when `marker`).
pub fn expired(key: &str, version_id: Option<String>, marker: bool) -> Change {
    Change {
        event: if marker {
            crate::notify::EventName::LifecycleDeleteMarkerCreated
        } else {
            crate::notify::EventName::LifecycleDelete
        },
        key: key.to_owned(),
        size: None,
        etag: None,
        version_id,
    }
}

/// The change of an object that was written, as its event names it.
pub fn created(event: crate::notify::EventName, info: &ObjectInfo) -> Change {
    Change {
        event,
        key: info.key().to_owned(),
        size: Some(info.size()),
        etag: Some(info.etag().trim_matches('"').to_owned()),
        version_id: info.version_id.clone(),
    }
}

/// Records the events of `changes` to objects of `bucket`, durable before this returns.
/// When they cannot be queued the request fails with `503 SlowDown`: its change was made,
/// but the client must not take it as acknowledged without its event (a retry records it).
pub async fn record(
    st: &AppState,
    bucket: &str,
    origin: &Origin,
    changes: &[Change],
) -> S3Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let Some(b) = st.store.meta().bucket_cached(bucket).await? else {
        return Ok(());
    };
    st.notify.record(&b, origin, changes).await.map_err(|e| {
        tracing::warn!(error = %e, bucket, "could not queue event notifications");
        S3Error::slow_down().with_message(
            "The change was made, but its event notification could not be queued: please retry",
        )
    })
}

/// Tells the bucket's listeners (ListenBucketNotification) of a read of an object, without
/// holding up the answer: a read is not a change, and listening is live and best effort.
/// Costs nothing while this instance knows no listener of the bucket wants reads.
pub fn accessed(
    st: &AppState,
    bucket: &crate::storage::meta::BucketInfo,
    req: &S3Request,
    head: bool,
    info: &ObjectInfo,
) {
    if st.notify.surely_no_readers(&bucket.name) {
        return;
    }
    let event = if head {
        crate::notify::EventName::AccessedHead
    } else {
        crate::notify::EventName::AccessedGet
    };
    let change = created(event, info);
    let (notify, bucket, origin) = (st.notify.clone(), bucket.clone(), origin(req));
    crate::background::spawn("listen", async move {
        notify.record_read(&bucket, &origin, &change).await;
    });
}
