//! Bucket shapes: ListBuckets, location, versioning, CreateBucketConfiguration.

use serde::{Deserialize, Serialize};

use super::*;

/// `<ListAllMyBucketsResult>`.
#[derive(Serialize, Debug)]
pub struct ListAllMyBucketsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Buckets.
    #[serde(rename = "Buckets")]
    pub buckets: Buckets,
    /// Where the next page starts (with max-buckets).
    #[serde(rename = "ContinuationToken", skip_serializing_if = "Option::is_none")]
    pub continuation_token: Option<String>,
    /// The prefix asked for.
    #[serde(rename = "Prefix", skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// `<Buckets>`.
#[derive(Serialize, Debug)]
pub struct Buckets {
    /// Each bucket.
    #[serde(rename = "Bucket", default)]
    pub bucket: Vec<BucketEntry>,
}

/// One `<Bucket>` of ListBuckets.
#[derive(Serialize, Debug)]
pub struct BucketEntry {
    /// Name.
    #[serde(rename = "Name")]
    pub name: String,
    /// ISO 8601 creation date.
    #[serde(rename = "CreationDate")]
    pub creation_date: String,
    /// Region.
    #[serde(rename = "BucketRegion")]
    pub region: String,
}

/// `<LocationConstraint>` of GetBucketLocation. us-east-1 answers an empty element, as AWS.
#[derive(Serialize, Debug)]
pub struct LocationConstraint {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// The region, empty for us-east-1.
    #[serde(rename = "$text")]
    pub region: String,
}

/// `<VersioningConfiguration>` (GetBucketVersioning): no Status element for a bucket that
/// never had versioning.
#[derive(Serialize, Debug)]
pub struct VersioningConfiguration {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// `Enabled` or `Suspended`.
    #[serde(rename = "Status", skip_serializing_if = "Option::is_none")]
    pub status: Option<&'static str>,
    /// MinIO's extension: keys left out of versioning, one element per pattern.
    #[serde(rename = "ExcludedPrefixes", skip_serializing_if = "Vec::is_empty")]
    pub excluded_prefixes: Vec<ExcludedPrefix>,
    /// MinIO's extension: folder objects left out of versioning (`true` only).
    #[serde(rename = "ExcludeFolders", skip_serializing_if = "Option::is_none")]
    pub exclude_folders: Option<bool>,
}

/// One `<ExcludedPrefixes><Prefix>…</Prefix></ExcludedPrefixes>` (MinIO's extension).
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct ExcludedPrefix {
    /// The pattern.
    #[serde(rename = "Prefix", default)]
    pub prefix: String,
}

/// `<VersioningConfiguration>` request body of PutBucketVersioning.
#[derive(Deserialize, Debug, Default)]
pub struct VersioningConfigurationIn {
    /// `Enabled` or `Suspended`.
    #[serde(rename = "Status", default)]
    pub status: Option<String>,
    /// `Enabled` or `Disabled`.
    #[serde(rename = "MfaDelete", default)]
    pub mfa_delete: Option<String>,
    /// MinIO's extension: patterns of keys left out of versioning.
    #[serde(rename = "ExcludedPrefixes", default)]
    pub excluded_prefixes: Vec<ExcludedPrefix>,
    /// MinIO's extension: whether folder objects are left out of versioning.
    #[serde(rename = "ExcludeFolders", default)]
    pub exclude_folders: Option<String>,
}

/// `<CreateBucketConfiguration>` request body.
#[derive(Deserialize, Debug, Default)]
pub struct CreateBucketConfiguration {
    /// Requested region.
    #[serde(rename = "LocationConstraint", default)]
    pub location_constraint: Option<String>,
}
