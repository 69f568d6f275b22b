//! S3 request and response bodies as typed structs, (de)serialized with quick-xml.

use serde::{Deserialize, Serialize};

use crate::error::{S3Error, S3Result};

mod bucket;
mod delete;
mod list;
mod multipart;
mod object;
#[cfg(test)]
mod tests;

pub use bucket::*;
pub use delete::*;
pub use list::*;
pub use multipart::*;
pub use object::*;

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
