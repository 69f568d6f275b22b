//! Listings: ListObjects (v1 and v2) and ListObjectVersions.

use serde::Serialize;

use super::*;

/// One `<Contents>` of a listing.
#[derive(Serialize, Debug)]
pub struct Contents {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Last modified.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Size.
    #[serde(rename = "Size")]
    pub size: u64,
    /// Owner (v1 always, v2 with fetch-owner).
    #[serde(rename = "Owner", skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    /// MinIO's `metadata=true`: content headers and `X-Amz-Meta-*`, one element each.
    #[serde(rename = "UserMetadata", skip_serializing_if = "Option::is_none")]
    pub user_metadata: Option<std::collections::BTreeMap<String, String>>,
    /// MinIO's `metadata=true`: the object's tags, `k=v&k2=v2`.
    #[serde(rename = "UserTags", skip_serializing_if = "Option::is_none")]
    pub user_tags: Option<String>,
}

/// One `<CommonPrefixes>`.
#[derive(Serialize, Debug)]
pub struct CommonPrefix {
    /// The prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
}

/// `<ListBucketResult>` of ListObjectsV2.
#[derive(Serialize, Debug)]
pub struct ListBucketResultV2 {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// max-keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Entries returned.
    #[serde(rename = "KeyCount")]
    pub key_count: usize,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Echoed encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Echoed token.
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    /// Token for the next page.
    #[serde(
        rename = "NextContinuationToken",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_continuation_token: Option<String>,
    /// Echoed start-after.
    #[serde(rename = "StartAfter", skip_serializing_if = "Option::is_none")]
    pub start_after: Option<String>,
    /// Objects.
    #[serde(rename = "Contents", default)]
    pub contents: Vec<Contents>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// `<ListBucketResult>` of ListObjects (v1).
#[derive(Serialize, Debug)]
pub struct ListBucketResultV1 {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Echoed marker.
    #[serde(rename = "Marker")]
    pub marker: String,
    /// Next marker (with a delimiter, when truncated).
    #[serde(rename = "NextMarker", skip_serializing_if = "Option::is_none")]
    pub next_marker: Option<String>,
    /// max-keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Echoed encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Objects.
    #[serde(rename = "Contents", default)]
    pub contents: Vec<Contents>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// One `<Version>` of ListObjectVersions.
#[derive(Serialize, Debug)]
pub struct Version {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id (`null` in a bucket that never had versioning).
    #[serde(rename = "VersionId")]
    pub version_id: String,
    /// Whether it is the key's latest version.
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    /// Last modified.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Size.
    #[serde(rename = "Size")]
    pub size: u64,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
}

/// `<ListVersionsResult>`.
#[derive(Serialize, Debug)]
pub struct ListVersionsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Name")]
    pub name: String,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Echoed key-marker.
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    /// Echoed version-id-marker.
    #[serde(rename = "VersionIdMarker")]
    pub version_id_marker: String,
    /// Next key marker when truncated.
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    /// Next version marker when truncated.
    #[serde(
        rename = "NextVersionIdMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_version_id_marker: Option<String>,
    /// max-keys.
    #[serde(rename = "MaxKeys")]
    pub max_keys: usize,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Echoed encoding type.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
    /// Versions and delete markers, in key and then newest-first order.
    #[serde(rename = "$value", default)]
    pub versions: Vec<VersionItem>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// A `<Version>` or a `<DeleteMarker>` of ListObjectVersions.
#[derive(Serialize, Debug)]
pub enum VersionItem {
    /// A data version.
    Version(Version),
    /// A delete marker.
    DeleteMarker(DeleteMarkerEntry),
}

/// One `<DeleteMarker>` of ListObjectVersions.
#[derive(Serialize, Debug)]
pub struct DeleteMarkerEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Its version id.
    #[serde(rename = "VersionId")]
    pub version_id: String,
    /// Whether it is the key's latest version.
    #[serde(rename = "IsLatest")]
    pub is_latest: bool,
    /// When it was written.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// Who wrote it.
    #[serde(rename = "Owner")]
    pub owner: Owner,
}
