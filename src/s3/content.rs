//! Content-addressed buckets (`x-grids3-storage-mode: content`, see `storage::content`): what
//! they do not support is refused with AWS's `501 NotImplemented`, never accepted and
//! ignored. That is server-side encryption: de-duplication finds equal contents by their
//! plain SHA-1, which encryption with per-object keys would defeat, and convergent encryption
//! (a key derived from the content) would tell anyone who can read the database which objects
//! hold a guessed content. An encrypted object goes in a `gridfs` bucket.

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
