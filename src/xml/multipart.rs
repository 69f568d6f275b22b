//! Multipart uploads: initiate, complete, copy part, list parts and uploads.

use serde::{Deserialize, Serialize};

use super::*;

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
    /// The part's checksum, when the upload has an algorithm.
    #[serde(flatten)]
    pub checksum: super::ChecksumValues,
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
    /// `url` when the request asked for `encoding-type=url`.
    #[serde(rename = "EncodingType", skip_serializing_if = "Option::is_none")]
    pub encoding_type: Option<String>,
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
