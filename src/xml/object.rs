//! Object shapes: CopyObject, tagging, POST responses, CORS, checksums and GetObjectAttributes.

use serde::{Deserialize, Serialize};

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
    /// The new object's additional checksum, with its type.
    #[serde(flatten)]
    pub checksum: ChecksumValues,
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
    /// An object's checksums (algorithm, value) with their type, as CopyObjectResult and
    /// GetObjectAttributes give them.
    pub fn of_object(pairs: &[(String, String)]) -> Self {
        let mut c = Self::from_pairs(pairs);
        c.checksum_type = pairs
            .first()
            .map(|(_, v)| crate::checksum::Algorithm::type_of(v).to_owned());
        c
    }

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
