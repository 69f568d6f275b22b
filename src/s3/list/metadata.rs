//! MinIO's `metadata=true` on ListObjectsV2 (minio-py's `include_user_meta`, minio-go's
//! `WithMetadata`): each listed object also carries its user metadata and content headers
//! (`<UserMetadata>`) and its tags (`<UserTags>`, `k=v&k2=v2`), as MinIO answers.
//!
//! An AWS client never sends the parameter, and a listing without it is unchanged. What it
//! adds is what a GetObject (HEAD) and a GetObjectTagging of each key would show, so each is
//! decided per key as those requests would be: an entry the caller may not read has no
//! `<UserMetadata>`, one whose tags it may not read no `<UserTags>`. Metadata names that are
//! not XML names (HTTP allows `!#$%&'*+^`|~` in a header name) are left out of the element,
//! since MinIO's answer would not parse. SSE-C objects are listed without either: their
//! attributes are told only to a request that carries their key.

use std::collections::BTreeMap;

use crate::error::S3Result;
use crate::s3::authz::per_key::{may, Caller};
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::storage::objects::ObjectInfo;
use crate::xml;

/// Whether the request asks for MinIO's metadata listing.
pub fn asked(req: &S3Request) -> bool {
    req.q("metadata") == Some("true")
}

/// Fills `contents` (the listed objects, in the order of `objects`) with what the caller may
/// read of each.
pub async fn fill(
    st: &AppState,
    who: &Caller,
    objects: &[&ObjectInfo],
    contents: &mut [xml::Contents],
) -> S3Result<()> {
    for (o, c) in objects.iter().zip(contents.iter_mut()) {
        // An SSE-C object tells nothing about itself without its key (HEAD answers 400), and
        // a listing cannot carry one key per object.
        if o.meta
            .sse
            .as_ref()
            .is_some_and(|s| s.mode == crate::crypto::MODE_C)
        {
            continue;
        }
        if may(st, who, &Op::GetObject, o).await? {
            c.user_metadata = Some(user_metadata(o));
        }
        if !o.meta.tags.is_empty() && may(st, who, &Op::GetObjectTagging, o).await? {
            c.user_tags = Some(tags(&o.meta.tags));
        }
    }
    Ok(())
}

/// The `<UserMetadata>` of an object: its content headers and `X-Amz-Meta-*` entries.
fn user_metadata(o: &ObjectInfo) -> BTreeMap<String, String> {
    let m = &o.meta;
    let mut out = BTreeMap::new();
    for (name, value) in [
        ("content-type", &m.content_type),
        ("cache-control", &m.cache_control),
        ("content-disposition", &m.content_disposition),
        ("content-encoding", &m.content_encoding),
        ("content-language", &m.content_language),
        ("expires", &m.expires),
    ] {
        if let Some(v) = value {
            out.insert(name.to_owned(), v.clone());
        }
    }
    for (name, value) in &m.user {
        let element = format!("X-Amz-Meta-{}", canonical(name));
        if xml_name(&element) {
            out.insert(element, value.clone());
        }
    }
    out
}

/// `foo-bar` as MinIO (Go's canonical header form) names it: `Foo-Bar`.
fn canonical(name: &str) -> String {
    name.split('-')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// Whether `s` is safe as an XML element name (a conservative subset).
fn xml_name(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Tags as MinIO lists them: `k=v&k2=v2`, each part URL-encoded.
fn tags(t: &[(String, String)]) -> String {
    t.iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                crate::auth::sigv4::uri_encode(k, true),
                crate::auth::sigv4::uri_encode(v, true)
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags() {
        assert_eq!(canonical("project-name"), "Project-Name");
        assert!(xml_name("X-Amz-Meta-Project-Name"));
        assert!(!xml_name("X-Amz-Meta-a*b"));
        assert_eq!(
            tags(&[("a b".into(), "1&2".into()), ("c".into(), "d".into())]),
            "a%20b=1%262&c=d"
        );
    }
}
