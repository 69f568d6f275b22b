//! Content-addressed buckets (`x-grids3-storage-mode: content`, see `storage::content`): what
//! they do not support yet is refused with AWS's `501 NotImplemented`, never accepted and
//! ignored.

use crate::error::{S3Error, S3Result};
use crate::storage::meta::{BucketInfo, StorageMode};

/// `NotImplemented` for `what` in a content-addressed bucket.
pub fn refuse(bucket: &BucketInfo, what: &str) -> S3Result<()> {
    if bucket.storage == StorageMode::Content {
        return Err(S3Error::not_implemented().with_message(format!(
            "Content-addressed buckets (storage mode content) do not support {what} yet."
        )));
    }
    Ok(())
}
