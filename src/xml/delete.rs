//! DeleteObjects: the request and the result.

use serde::{Deserialize, Serialize};

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
    /// The version the request named, if any (AWS reports it with the error, so a client
    /// knows which version of a key was refused).
    #[serde(rename = "VersionId", skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Error code.
    #[serde(rename = "Code")]
    pub code: String,
    /// Message.
    #[serde(rename = "Message")]
    pub message: String,
}
