//! Tag sets: the `x-amz-tagging` header and the Tagging document, validated as AWS validates
//! them.

use crate::error::{S3Error, S3Result};
use crate::percent::parse_query;
use crate::s3::request::S3Request;
use crate::xml;

/// At most 10 tags on an object, 50 on a bucket.
pub(crate) const MAX_OBJECT_TAGS: usize = 10;

pub(crate) const MAX_BUCKET_TAGS: usize = 50;

/// S3's tag rules: keys 1..=128 characters, values up to 256, keys unique, not `aws:`.
pub fn validate(tags: &[(String, String)], max: usize) -> S3Result<()> {
    if tags.len() > max {
        return Err(S3Error::invalid_tag(format!(
            "Object tags cannot be greater than {max}"
        )));
    }
    for (i, (k, v)) in tags.iter().enumerate() {
        if k.is_empty() || k.chars().count() > 128 {
            return Err(S3Error::invalid_tag(
                "The TagKey you have provided is invalid",
            ));
        }
        if v.chars().count() > 256 {
            return Err(S3Error::invalid_tag(
                "The TagValue you have provided is invalid",
            ));
        }
        // S3's tag alphabet: letters, digits, spaces and `+ - = . _ : / @` (so no control
        // characters, which also keeps NULs out of the stored documents).
        let allowed = |c: char| c.is_alphanumeric() || c == ' ' || "+-=._:/@".contains(c);
        if !k.chars().all(allowed) {
            return Err(S3Error::invalid_tag(
                "The TagKey you have provided is invalid",
            ));
        }
        if !v.chars().all(allowed) {
            return Err(S3Error::invalid_tag(
                "The TagValue you have provided is invalid",
            ));
        }
        if k.starts_with("aws:") {
            return Err(S3Error::invalid_tag(
                "Your TagKey cannot be prefixed with aws:",
            ));
        }
        if tags[..i].iter().any(|(other, _)| other == k) {
            return Err(S3Error::invalid_tag(
                "Cannot provide multiple Tags with the same key",
            ));
        }
    }
    Ok(())
}

/// Tags from an `x-amz-tagging` header (URL query encoded), validated.
pub fn from_header(value: Option<&str>) -> S3Result<Vec<(String, String)>> {
    let tags = parse_query(value);
    validate(&tags, MAX_OBJECT_TAGS)?;
    Ok(tags)
}

pub(crate) async fn read_tagging(
    req: &mut S3Request,
    max: usize,
) -> S3Result<Vec<(String, String)>> {
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    tags_of_xml(&body, max)
}

fn tags_of_xml(body: &[u8], max: usize) -> S3Result<Vec<(String, String)>> {
    let t: xml::Tagging = xml::from_xml("Tagging", body)?;
    let tags: Vec<(String, String)> = t
        .tag_set
        .tags
        .into_iter()
        .map(|t| (t.key, t.value))
        .collect();
    validate(&tags, max)?;
    Ok(tags)
}

/// An object's tags from a `<Tagging>` document (a POST form's `tagging` field), validated.
pub fn from_xml_body(body: &[u8]) -> S3Result<Vec<(String, String)>> {
    tags_of_xml(body, MAX_OBJECT_TAGS)
}

/// PutObjectTagging's tag set (read before the authorization, see `S3Request::tagging`).
pub async fn read_object_tagging(req: &mut S3Request) -> S3Result<Vec<(String, String)>> {
    read_tagging(req, MAX_OBJECT_TAGS).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let t = |n: usize| {
            (0..n)
                .map(|i| (format!("k{i}"), "v".to_owned()))
                .collect::<Vec<_>>()
        };
        assert!(validate(&t(10), 10).is_ok());
        assert!(validate(&t(11), 10).is_err());
        assert!(validate(&[("k".repeat(129), String::new())], 10).is_err());
        assert!(validate(&[("k".into(), "v".repeat(257))], 10).is_err());
        assert!(validate(&[("a".into(), "1".into()), ("a".into(), "2".into())], 10).is_err());
        assert_eq!(
            from_header(Some("a=1&b=two%20words")).unwrap()[1].1,
            "two words"
        );
    }
}
