//! MinIO's extensions that the MinIO SDKs (minio-go, minio-js, minio-py) send, for the
//! applications that used MinIO as their S3 server: each is honoured as MinIO documents it,
//! or refused with an S3 error, and none changes what an AWS client sees (an AWS client
//! never sends them). Documented as extensions in docs/operations.md.
//!
//! - [`force_delete`]: `x-minio-force-delete: true` on DeleteObject removes every object and
//!   version under the key, as a prefix.
//! - [`snowball`]: `X-Amz-Meta-Snowball-Auto-Extract: true` on PutObject of a tar stores
//!   each member as an object.
//!
//! The other two live where their requests are answered: versioning exclusions
//! (`storage::versions::exclusions`, PutBucketVersioning in `s3::bucket`) and
//! ListObjectsV2's `metadata=true` (`s3::list::metadata`).

pub mod force_delete;
pub mod snowball;
mod tar;
