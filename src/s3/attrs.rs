//! The one way an object's attributes (tags, ACL, retention, legal hold) change: decide on
//! the revision as read, write under a compare-and-set on what was read
//! (`ObjectStore::write_attrs_if`), and when another write got there first, read again and
//! decide again. A change is acknowledged only once it is stored on top of every change
//! acknowledged before it; one that no longer holds on the fresh read (a retention a
//! COMPLIANCE mode now forbids) is refused with the decision's own error.

use crate::error::{S3Error, S3Result};
use crate::state::AppState;
use crate::storage::objects::{AttrWrite, ObjectInfo, ObjectMeta};

/// How many times a write that keeps losing its race decides again before it answers
/// `409 OperationAborted` (retryable, as AWS answers a conflicting operation in progress).
const ATTEMPTS: usize = 16;

/// Changes the attributes of the revision `found` (as the request's lookup found and
/// authorized it): `decide` maps the revision as read to its new attributes, or refuses.
/// Returns the revision as written. `version_named`: the request named the version (a
/// revision gone since it was found is then NoSuchVersion, else NoSuchKey).
pub async fn update(
    st: &AppState,
    bucket: &str,
    version_named: bool,
    mut found: ObjectInfo,
    mut decide: impl FnMut(&ObjectInfo) -> S3Result<ObjectMeta>,
) -> S3Result<ObjectInfo> {
    for _ in 0..ATTEMPTS {
        let new = decide(&found)?;
        crate::failpoint::hit("attrs.decided", bucket).await;
        match st.store.write_attrs_if(bucket, &found, &new).await? {
            AttrWrite::Written(info) => return Ok(*info),
            AttrWrite::Changed(fresh) => found = *fresh,
            AttrWrite::Gone => {
                return Err(if version_named {
                    S3Error::no_such_version()
                } else {
                    S3Error::no_such_key()
                })
            }
        }
    }
    Err(S3Error::operation_aborted())
}
