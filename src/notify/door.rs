//! The door to event notifications for whatever changed objects: the S3 handlers (through
//! `s3/events.rs`, which adds what a request knows) and the background jobs (lifecycle
//! expiries in `janitor/`) alike. It knows nothing of targets; a bucket without a notification
//! configuration or a listener costs a cache lookup.

use crate::error::{S3Error, S3Result};
use crate::storage::meta::MetaStore;
use crate::storage::objects::ObjectInfo;

use super::{Change, EventName, Notifier, Origin};

/// Who made a change, as its event records name it: the access key (`Anonymous` without
/// one), the client's address and the request's id.
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
            EventName::LifecycleDeleteMarkerCreated
        } else {
            EventName::LifecycleDelete
        },
        key: key.to_owned(),
        size: None,
        etag: None,
        version_id,
    }
}

/// The change of an object that was written (or read, for listeners), as its event names it.
pub fn created(event: EventName, info: &ObjectInfo) -> Change {
    Change {
        event,
        key: info.key().to_owned(),
        size: Some(info.size()),
        etag: Some(info.etag().trim_matches('"').to_owned()),
        version_id: info.version_id.clone(),
    }
}

/// Records the events of `changes` to objects of `bucket`, durable before this returns.
/// When they cannot be queued this fails with `503 SlowDown`: the change was made, but the
/// client must not take it as acknowledged without its event (a retry records it), and a
/// background job leaves its step to be done again.
pub async fn record(
    notify: &Notifier,
    meta: &MetaStore,
    bucket: &str,
    origin: &Origin,
    changes: &[Change],
) -> S3Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let Some(b) = meta.bucket_cached(bucket).await? else {
        return Ok(());
    };
    notify.record(&b, origin, changes).await.map_err(|e| {
        tracing::warn!(error = %e, bucket, "could not queue event notifications");
        S3Error::slow_down().with_message(
            "The change was made, but its event notification could not be queued: please retry",
        )
    })
}
