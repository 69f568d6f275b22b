//! S3 request and response bodies as typed structs, (de)serialized with quick-xml.

use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};

/// The S3 XML namespace.
pub const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Largest request XML body grids3 parses (DeleteObjects with 1000 long keys fits).
pub const MAX_XML_BODY: usize = 2 * 1024 * 1024;

/// Serializes a response body with the XML declaration.
pub fn to_xml<T: Serialize>(root: &str, value: &T) -> String {
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let mut ser = quick_xml::se::Serializer::with_root(&mut out, Some(root)).expect("root name");
    ser.expand_empty_elements(false);
    value.serialize(ser).expect("serializing response XML");
    out
}

/// Parses a request body; anything that does not fit the shape is `MalformedXML`.
pub fn from_xml<T: for<'de> Deserialize<'de>>(body: &[u8]) -> S3Result<T> {
    let text = std::str::from_utf8(body).map_err(|_| S3Error::malformed_xml())?;
    quick_xml::de::from_str(text).map_err(|_| S3Error::malformed_xml())
}

/// `<Error>`: the error document.
#[derive(Serialize, Debug)]
pub struct ErrorDoc<'a> {
    /// AWS error code.
    #[serde(rename = "Code")]
    pub code: &'a str,
    /// Message.
    #[serde(rename = "Message")]
    pub message: &'a str,
    /// The bucket or object the request addressed.
    #[serde(rename = "Resource")]
    pub resource: &'a str,
    /// The request's id.
    #[serde(rename = "RequestId")]
    pub request_id: &'a str,
}

/// An owner (`<Owner>`).
#[derive(Serialize, Debug, Clone)]
pub struct Owner {
    /// Canonical id.
    #[serde(rename = "ID")]
    pub id: String,
    /// Display name.
    #[serde(rename = "DisplayName")]
    pub display_name: String,
}

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
}

/// `<CreateBucketConfiguration>` request body.
#[derive(Deserialize, Debug, Default)]
pub struct CreateBucketConfiguration {
    /// Requested region.
    #[serde(rename = "LocationConstraint", default)]
    pub location_constraint: Option<String>,
}

/// `<Delete>` request body of DeleteObjects.
#[derive(Deserialize, Debug)]
pub struct Delete {
    /// Keys to delete.
    #[serde(rename = "Object", default)]
    pub objects: Vec<DeleteObjectId>,
    /// Report only errors.
    #[serde(rename = "Quiet", default)]
    pub quiet: bool,
}

/// One `<Object>` of DeleteObjects.
#[derive(Deserialize, Debug)]
pub struct DeleteObjectId {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id.
    #[serde(rename = "VersionId", default)]
    pub version_id: Option<String>,
    /// Conditional delete: the ETag the object must have.
    #[serde(rename = "ETag", default)]
    pub etag: Option<String>,
    /// Conditional delete: the last-modified time it must have.
    #[serde(rename = "LastModifiedTime", default)]
    pub last_modified_time: Option<String>,
    /// Conditional delete: the size it must have.
    #[serde(rename = "Size", default)]
    pub size: Option<u64>,
}

/// `<DeleteResult>`.
#[derive(Serialize, Debug)]
pub struct DeleteResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Deleted keys (left out in Quiet mode).
    #[serde(rename = "Deleted", default)]
    pub deleted: Vec<Deleted>,
    /// Per-key errors.
    #[serde(rename = "Error", default)]
    pub errors: Vec<DeleteError>,
}

/// One `<Deleted>`.
#[derive(Serialize, Debug)]
pub struct Deleted {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Version id, when the request named one.
    #[serde(rename = "VersionId", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// A delete marker was written or removed.
    #[serde(rename = "DeleteMarker", skip_serializing_if = "Option::is_none")]
    pub delete_marker: Option<bool>,
    /// The delete marker's version id.
    #[serde(
        rename = "DeleteMarkerVersionId",
        skip_serializing_if = "Option::is_none"
    )]
    pub delete_marker_version_id: Option<String>,
}

/// One `<Error>` of DeleteObjects.
#[derive(Serialize, Debug)]
pub struct DeleteError {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Error code.
    #[serde(rename = "Code")]
    pub code: String,
    /// Message.
    #[serde(rename = "Message")]
    pub message: String,
}

/// `<CopyObjectResult>`.
#[derive(Serialize, Debug)]
pub struct CopyObjectResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Last-Modified of the new object.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// ETag of the new object.
    #[serde(rename = "ETag")]
    pub etag: String,
}

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

/// `<InitiateMultipartUploadResult>`.
#[derive(Serialize, Debug)]
pub struct InitiateMultipartUploadResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
}

/// `<CompleteMultipartUpload>` request body.
#[derive(Deserialize, Debug)]
pub struct CompleteMultipartUpload {
    /// Parts, in the order given.
    #[serde(rename = "Part", default)]
    pub parts: Vec<CompletedPart>,
}

/// One `<Part>` of CompleteMultipartUpload.
#[derive(Deserialize, Debug)]
pub struct CompletedPart {
    /// Part number.
    #[serde(rename = "PartNumber")]
    pub part_number: i32,
    /// ETag as returned by UploadPart.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// CRC32 checksum as returned by UploadPart.
    #[serde(rename = "ChecksumCRC32", default)]
    pub crc32: Option<String>,
    /// CRC32C checksum.
    #[serde(rename = "ChecksumCRC32C", default)]
    pub crc32c: Option<String>,
    /// SHA-1 checksum.
    #[serde(rename = "ChecksumSHA1", default)]
    pub sha1: Option<String>,
    /// SHA-256 checksum.
    #[serde(rename = "ChecksumSHA256", default)]
    pub sha256: Option<String>,
    /// CRC64/NVME checksum.
    #[serde(rename = "ChecksumCRC64NVME", default)]
    pub crc64nvme: Option<String>,
}

impl CompletedPart {
    /// The checksum the client gave for `alg` (lower-case name).
    pub fn checksum(&self, alg: &str) -> Option<&str> {
        match alg {
            "crc32" => self.crc32.as_deref(),
            "crc32c" => self.crc32c.as_deref(),
            "sha1" => self.sha1.as_deref(),
            "sha256" => self.sha256.as_deref(),
            "crc64nvme" => self.crc64nvme.as_deref(),
            _ => None,
        }
    }
}

/// `<CompleteMultipartUploadResult>`.
#[derive(Serialize, Debug)]
pub struct CompleteMultipartUploadResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Object URL path.
    #[serde(rename = "Location")]
    pub location: String,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Multipart ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// `ChecksumCRC32`.
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    pub checksum_crc32: Option<String>,
    /// `ChecksumCRC32C`.
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub checksum_crc32c: Option<String>,
    /// `ChecksumCRC64NVME`.
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub checksum_crc64nvme: Option<String>,
    /// `ChecksumSHA1`.
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    pub checksum_sha1: Option<String>,
    /// `ChecksumSHA256`.
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    pub checksum_sha256: Option<String>,
    /// `ChecksumType` (COMPOSITE or FULL_OBJECT), with a checksum.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
}

/// The five checksum fields of S3's XML documents, from an algorithm name and a value.
pub fn checksum_fields(alg: Option<&str>, value: Option<&str>) -> [Option<String>; 5] {
    let mut out: [Option<String>; 5] = Default::default();
    if let (Some(a), Some(v)) = (alg, value) {
        let i = match a.to_ascii_lowercase().as_str() {
            "crc32" => 0,
            "crc32c" => 1,
            "crc64nvme" => 2,
            "sha1" => 3,
            "sha256" => 4,
            _ => return out,
        };
        out[i] = Some(v.to_owned());
    }
    out
}

/// `<CopyPartResult>`.
#[derive(Serialize, Debug)]
pub struct CopyPartResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// When the part was stored.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// The part's ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// One `<Part>` of ListParts.
#[derive(Serialize, Debug)]
pub struct PartEntry {
    /// Number.
    #[serde(rename = "PartNumber")]
    pub part_number: i32,
    /// Upload time.
    #[serde(rename = "LastModified")]
    pub last_modified: String,
    /// ETag.
    #[serde(rename = "ETag")]
    pub etag: String,
    /// Size.
    #[serde(rename = "Size")]
    pub size: u64,
    /// `ChecksumCRC32`.
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    pub checksum_crc32: Option<String>,
    /// `ChecksumCRC32C`.
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub checksum_crc32c: Option<String>,
    /// `ChecksumCRC64NVME`.
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub checksum_crc64nvme: Option<String>,
    /// `ChecksumSHA1`.
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    pub checksum_sha1: Option<String>,
    /// `ChecksumSHA256`.
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    pub checksum_sha256: Option<String>,
}

/// `<ListPartsResult>`.
#[derive(Serialize, Debug)]
pub struct ListPartsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    /// Echoed marker.
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: i32,
    /// Next marker when truncated.
    #[serde(
        rename = "NextPartNumberMarker",
        skip_serializing_if = "Option::is_none"
    )]
    pub next_part_number_marker: Option<i32>,
    /// max-parts.
    #[serde(rename = "MaxParts")]
    pub max_parts: i64,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Parts.
    #[serde(rename = "Part", default)]
    pub parts: Vec<PartEntry>,
    /// Initiator.
    #[serde(rename = "Initiator")]
    pub initiator: Owner,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    /// The upload's `ChecksumAlgorithm`.
    #[serde(rename = "ChecksumAlgorithm", skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// The upload's `ChecksumType`.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
}

/// One `<Upload>` of ListMultipartUploads.
#[derive(Serialize, Debug)]
pub struct UploadEntry {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Upload id.
    #[serde(rename = "UploadId")]
    pub upload_id: String,
    /// Initiator.
    #[serde(rename = "Initiator")]
    pub initiator: Owner,
    /// Owner.
    #[serde(rename = "Owner")]
    pub owner: Owner,
    /// Storage class.
    #[serde(rename = "StorageClass")]
    pub storage_class: &'static str,
    /// When it was created.
    #[serde(rename = "Initiated")]
    pub initiated: String,
    /// `ChecksumAlgorithm`.
    #[serde(rename = "ChecksumAlgorithm", skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<String>,
    /// `ChecksumType`.
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
}

/// `<ListMultipartUploadsResult>`.
#[derive(Serialize, Debug)]
pub struct ListMultipartUploadsResult {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Echoed key-marker.
    #[serde(rename = "KeyMarker")]
    pub key_marker: String,
    /// Echoed upload-id-marker.
    #[serde(rename = "UploadIdMarker")]
    pub upload_id_marker: String,
    /// Next key marker when truncated.
    #[serde(rename = "NextKeyMarker", skip_serializing_if = "Option::is_none")]
    pub next_key_marker: Option<String>,
    /// Next upload id marker when truncated.
    #[serde(rename = "NextUploadIdMarker", skip_serializing_if = "Option::is_none")]
    pub next_upload_id_marker: Option<String>,
    /// Prefix.
    #[serde(rename = "Prefix")]
    pub prefix: String,
    /// Delimiter.
    #[serde(rename = "Delimiter", skip_serializing_if = "Option::is_none")]
    pub delimiter: Option<String>,
    /// max-uploads.
    #[serde(rename = "MaxUploads")]
    pub max_uploads: i64,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Uploads.
    #[serde(rename = "Upload", default)]
    pub uploads: Vec<UploadEntry>,
    /// Common prefixes.
    #[serde(rename = "CommonPrefixes", default)]
    pub common_prefixes: Vec<CommonPrefix>,
}

/// `<Tagging>`, request and response of the tagging operations.
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct Tagging {
    /// Namespace (responses).
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    pub xmlns: &'static str,
    /// The tag set.
    #[serde(rename = "TagSet", default)]
    pub tag_set: TagSet,
}

/// `<TagSet>`.
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct TagSet {
    /// Tags.
    #[serde(rename = "Tag", default)]
    pub tags: Vec<Tag>,
}

/// One `<Tag>`.
#[derive(Serialize, Deserialize, Debug)]
pub struct Tag {
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// Value.
    #[serde(rename = "Value", default)]
    pub value: String,
}

/// `<PostResponse>`, the answer to a POST Object with `success_action_status` 201.
#[derive(Serialize, Debug)]
pub struct PostResponse {
    /// The object's URL path.
    #[serde(rename = "Location")]
    pub location: String,
    /// Bucket.
    #[serde(rename = "Bucket")]
    pub bucket: String,
    /// Key.
    #[serde(rename = "Key")]
    pub key: String,
    /// ETag (quoted).
    #[serde(rename = "ETag")]
    pub etag: String,
}

/// `<CORSConfiguration>`, request of PutBucketCors and response of GetBucketCors.
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct CorsConfiguration {
    /// Namespace (responses).
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    pub xmlns: &'static str,
    /// The rules, in order.
    #[serde(rename = "CORSRule", default)]
    pub rules: Vec<CorsRuleXml>,
}

/// One `<CORSRule>`.
#[derive(Serialize, Deserialize, Debug, Default)]
pub struct CorsRuleXml {
    /// `ID`.
    #[serde(rename = "ID", default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `AllowedHeader`s.
    #[serde(rename = "AllowedHeader", default)]
    pub allowed_headers: Vec<String>,
    /// `AllowedMethod`s.
    #[serde(rename = "AllowedMethod", default)]
    pub allowed_methods: Vec<String>,
    /// `AllowedOrigin`s.
    #[serde(rename = "AllowedOrigin", default)]
    pub allowed_origins: Vec<String>,
    /// `ExposeHeader`s.
    #[serde(rename = "ExposeHeader", default)]
    pub expose_headers: Vec<String>,
    /// `MaxAgeSeconds`.
    #[serde(
        rename = "MaxAgeSeconds",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub max_age_seconds: Option<i64>,
}

/// Additional checksum values (`<Checksum>` and the per-part ones).
#[derive(Serialize, Debug, Default)]
pub struct ChecksumValues {
    /// CRC32.
    #[serde(rename = "ChecksumCRC32", skip_serializing_if = "Option::is_none")]
    pub crc32: Option<String>,
    /// CRC32C.
    #[serde(rename = "ChecksumCRC32C", skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<String>,
    /// SHA-1.
    #[serde(rename = "ChecksumSHA1", skip_serializing_if = "Option::is_none")]
    pub sha1: Option<String>,
    /// SHA-256.
    #[serde(rename = "ChecksumSHA256", skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// CRC64/NVME.
    #[serde(rename = "ChecksumCRC64NVME", skip_serializing_if = "Option::is_none")]
    pub crc64nvme: Option<String>,
    /// COMPOSITE or FULL_OBJECT (object level only).
    #[serde(rename = "ChecksumType", skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<String>,
}

impl ChecksumValues {
    /// From (algorithm, value) pairs.
    pub fn from_pairs(pairs: &[(String, String)]) -> Self {
        let mut c = Self::default();
        for (a, v) in pairs {
            let slot = match a.as_str() {
                "crc32" => &mut c.crc32,
                "crc32c" => &mut c.crc32c,
                "sha1" => &mut c.sha1,
                "sha256" => &mut c.sha256,
                "crc64nvme" => &mut c.crc64nvme,
                _ => continue,
            };
            *slot = Some(v.clone());
        }
        c
    }
}

/// One `<Part>` of GetObjectAttributes.
#[derive(Serialize, Debug)]
pub struct AttributesPart {
    /// Number.
    #[serde(rename = "PartNumber")]
    pub part_number: usize,
    /// Size.
    #[serde(rename = "Size")]
    pub size: u64,
    /// Checksum of the part.
    #[serde(flatten)]
    pub checksum: ChecksumValues,
}

/// `<ObjectParts>` of GetObjectAttributes.
#[derive(Serialize, Debug)]
pub struct ObjectParts {
    /// Parts in all.
    #[serde(rename = "PartsCount")]
    pub total_parts_count: usize,
    /// Echoed marker.
    #[serde(rename = "PartNumberMarker")]
    pub part_number_marker: usize,
    /// Next marker.
    #[serde(rename = "NextPartNumberMarker")]
    pub next_part_number_marker: usize,
    /// max-parts.
    #[serde(rename = "MaxParts")]
    pub max_parts: usize,
    /// More to come.
    #[serde(rename = "IsTruncated")]
    pub is_truncated: bool,
    /// Parts.
    #[serde(rename = "Part", default)]
    pub parts: Vec<AttributesPart>,
}

/// `<GetObjectAttributesOutput>`: only the attributes asked for.
#[derive(Serialize, Debug)]
pub struct GetObjectAttributesResponse {
    /// Namespace.
    #[serde(rename = "@xmlns")]
    pub xmlns: &'static str,
    /// ETag, without quotes (as S3 answers it here).
    #[serde(rename = "ETag", skip_serializing_if = "Option::is_none")]
    pub etag: Option<String>,
    /// Checksum.
    #[serde(rename = "Checksum", skip_serializing_if = "Option::is_none")]
    pub checksum: Option<ChecksumValues>,
    /// Parts of a multipart object.
    #[serde(rename = "ObjectParts", skip_serializing_if = "Option::is_none")]
    pub object_parts: Option<ObjectParts>,
    /// Storage class.
    #[serde(rename = "StorageClass", skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<&'static str>,
    /// Size.
    #[serde(rename = "ObjectSize", skip_serializing_if = "Option::is_none")]
    pub object_size: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_listing_golden() {
        let owner = || Owner {
            id: "i".into(),
            display_name: "d".into(),
        };
        let xml = to_xml(
            "ListVersionsResult",
            &ListVersionsResult {
                xmlns: S3_NS,
                name: "b".into(),
                prefix: String::new(),
                key_marker: String::new(),
                version_id_marker: String::new(),
                next_key_marker: None,
                next_version_id_marker: None,
                max_keys: 1000,
                delimiter: None,
                is_truncated: false,
                encoding_type: None,
                versions: vec![
                    VersionItem::DeleteMarker(DeleteMarkerEntry {
                        key: "k".into(),
                        version_id: "2".into(),
                        is_latest: true,
                        last_modified: "t2".into(),
                        owner: owner(),
                    }),
                    VersionItem::Version(Version {
                        key: "k".into(),
                        version_id: "1".into(),
                        is_latest: false,
                        last_modified: "t1".into(),
                        etag: "\"e\"".into(),
                        size: 3,
                        owner: owner(),
                        storage_class: "STANDARD",
                    }),
                ],
                common_prefixes: Vec::new(),
            },
        );
        // Markers and versions interleaved in listing order, as S3 sends them.
        assert!(xml.contains(
            "<IsTruncated>false</IsTruncated><DeleteMarker><Key>k</Key><VersionId>2</VersionId><IsLatest>true</IsLatest><LastModified>t2</LastModified><Owner><ID>i</ID><DisplayName>d</DisplayName></Owner></DeleteMarker><Version><Key>k</Key><VersionId>1</VersionId><IsLatest>false</IsLatest>"
        ), "{xml}");
    }

    #[test]
    fn error_document_golden() {
        let xml = to_xml(
            "Error",
            &ErrorDoc {
                code: "NoSuchKey",
                message: "m",
                resource: "/b/k",
                request_id: "R1",
            },
        );
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code><Message>m</Message><Resource>/b/k</Resource><RequestId>R1</RequestId></Error>"
        );
    }

    #[test]
    fn list_v2_golden() {
        let xml = to_xml(
            "ListBucketResult",
            &ListBucketResultV2 {
                xmlns: S3_NS,
                name: "b".into(),
                prefix: "".into(),
                delimiter: Some("/".into()),
                max_keys: 1000,
                key_count: 2,
                is_truncated: false,
                encoding_type: None,
                continuation_token: None,
                next_continuation_token: None,
                start_after: None,
                contents: vec![Contents {
                    key: "a&b".into(),
                    last_modified: "2026-01-01T00:00:00.000Z".into(),
                    etag: "\"x\"".into(),
                    size: 3,
                    owner: None,
                    storage_class: "STANDARD",
                }],
                common_prefixes: vec![CommonPrefix {
                    prefix: "d/".into(),
                }],
            },
        );
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix/><Delimiter>/</Delimiter><MaxKeys>1000</MaxKeys><KeyCount>2</KeyCount><IsTruncated>false</IsTruncated><Contents><Key>a&amp;b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>\"x\"</ETag><Size>3</Size><StorageClass>STANDARD</StorageClass></Contents><CommonPrefixes><Prefix>d/</Prefix></CommonPrefixes></ListBucketResult>"
        );
    }

    #[test]
    fn location_constraint_golden() {
        let xml = to_xml(
            "LocationConstraint",
            &LocationConstraint {
                xmlns: S3_NS,
                region: String::new(),
            },
        );
        assert!(
            xml.ends_with(
                "<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>"
            ),
            "{xml}"
        );
    }

    #[test]
    fn delete_request_parses() {
        let d: Delete = from_xml(
            b"<Delete xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Quiet>true</Quiet><Object><Key>a</Key></Object><Object><Key>b/c</Key><VersionId>null</VersionId></Object></Delete>",
        )
        .unwrap();
        assert!(d.quiet);
        assert_eq!(d.objects.len(), 2);
        assert_eq!(d.objects[1].version_id.as_deref(), Some("null"));
        assert!(from_xml::<Delete>(b"<Delete><Object>").is_err());
    }
}
