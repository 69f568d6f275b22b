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
mod website;

pub use bucket::*;
pub use delete::*;
pub use list::*;
pub use multipart::*;
pub use object::*;
pub use website::*;

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

/// Text escaped for an XML element or attribute value.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Parses a request body; anything that does not fit the shape is `MalformedXML`. Text content
/// is kept exactly as sent (see [`preserve_text`]): a key is a byte string, and `" "` or
/// `"_ "` must not become `""` or `"_"`.
///
/// Every element must be one the body's type knows: an unknown element (`<MaxAgeSecondz>`,
/// MinIO's `<ExcludedPrefixes>` in a versioning configuration) is `MalformedXML`, as AWS
/// answers, never silently dropped, since the client would believe it was applied.
/// Attributes (`xmlns`, `xsi:type`) are not elements and are let through.
///
/// The root element must be `root` (any namespace prefix): `<Bogus/>` sent as a tagging body
/// was read as an empty tag set and removed every tag.
///
/// The message says what did not fit where it can (the root found, serde's reason, the
/// unknown element): AWS's message is the same for every case, which leaves a person with a
/// long document guessing (issue 59).
pub fn from_xml<T: for<'de> Deserialize<'de>>(root: &str, body: &[u8]) -> S3Result<T> {
    let why = |what: String| {
        S3Error::malformed_xml().with_message(format!(
            "The XML you provided was not well-formed or did not validate against our published schema: {what}"
        ))
    };
    let text = std::str::from_utf8(body).map_err(|_| why("it is not UTF-8".into()))?;
    let (kept, found) = preserve_text(text).ok_or_else(|| why("it is not well-formed".into()))?;
    if found != root {
        return Err(why(format!("the root element is <{found}>, not <{root}>")));
    }
    let mut de = quick_xml::de::Deserializer::from_str(&kept);
    let mut unknown: Option<String> = None;
    let value = serde_ignored::deserialize(&mut de, |path| {
        let name = path.to_string();
        let last = name.rsplit('.').next().unwrap_or_default();
        if !last.starts_with('@') && unknown.is_none() {
            unknown = Some(name);
        }
    })
    .map_err(|e| why(format!("in <{root}>: {e}")))?;
    match unknown {
        Some(name) => Err(why(format!("unknown element {name}"))),
        None => Ok(value),
    }
}

/// The document with the text of every leaf element (`<Key> a </Key>`) turned into CDATA,
/// which quick-xml's deserializer never trims (it trims text at the edges of elements, so
/// that indentation between elements disappears). Text between elements (indentation) is
/// left as it is. Also returns the root element's local name. `None` when the document is
/// not well-formed XML.
fn preserve_text(text: &str) -> Option<(String, String)> {
    use quick_xml::events::{BytesCData, Event};
    let mut reader = quick_xml::Reader::from_str(text);
    let mut writer = quick_xml::Writer::new(Vec::with_capacity(text.len() + 64));
    // A text event right after a start tag, held until we know whether the element ends next.
    let mut held: Option<quick_xml::events::BytesText<'_>> = None;
    let mut after_start = false;
    let mut root: Option<String> = None;
    loop {
        let event = reader.read_event().ok()?;
        if let Some(t) = held.take() {
            if matches!(event, Event::End(_)) {
                let content = t.unescape().ok()?;
                for c in BytesCData::escaped(&content) {
                    writer.write_event(Event::CData(c)).ok()?;
                }
            } else {
                writer.write_event(Event::Text(t)).ok()?;
            }
        }
        match event {
            Event::Eof => break,
            Event::Text(t) if after_start => {
                held = Some(t);
                after_start = false;
                continue;
            }
            Event::Start(ref e) | Event::Empty(ref e) if root.is_none() => {
                root = Some(String::from_utf8_lossy(e.local_name().as_ref()).into_owned());
                after_start = matches!(event, Event::Start(_));
            }
            Event::Start(_) => after_start = true,
            _ => after_start = false,
        }
        writer.write_event(event).ok()?;
    }
    Some((String::from_utf8(writer.into_inner()).ok()?, root?))
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
    /// Further elements AWS adds for some errors (`HeadersNotSigned`).
    #[serde(flatten)]
    pub extra: std::collections::BTreeMap<&'a str, &'a str>,
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
