//! The S3 handlers' side of the door to event notifications (`crate::notify::door`, which
//! background jobs use too): a handler that changed objects calls [`record`] after the change
//! and before it answers; this adds what a request knows (its origin) and reads.

use crate::error::S3Result;
pub use crate::notify::door::{created, expired, lifecycle_origin, origin_of};
use crate::notify::{door, Change, Origin};
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

/// Records the events of `changes` to objects of `bucket` (see [`door::record`]).
pub async fn record(
    st: &AppState,
    bucket: &str,
    origin: &Origin,
    changes: &[Change],
) -> S3Result<()> {
    door::record(&st.notify, st.store.meta(), bucket, origin, changes).await
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
