//! A search query (`crate::search::Query`, typed) compiled into the filter a files document
//! (or a master) must match. Every operator in it is one this module writes; from the
//! query only field names it knows and typed values arrive, so nothing a request holds
//! reaches the database as an operator (`$where`, `$expr`, `$function` cannot be written).
//!
//! **What a field is**, as HEAD and a listing show it:
//! - `key`: `filename`; `size`: the plaintext size of an encrypted object
//!   (`metadata.s3Sse.size`), else `length`; `last-modified`: `uploadDate`.
//! - `etag`: `metadata.etag` (stored with its quotes), else a foreign file's `md5`.
//! - `content-type`: `metadata.contentType`, `binary/octet-stream` when there is none (as a
//!   GET answers); `storage-class`: `metadata.s3StorageClass`, `STANDARD` when there is none.
//! - `x-amz-meta-<name>`: `metadata.userMetadata.<name>`; for a file another GridFS client
//!   wrote, a field `<name>` of its `metadata` (compared as text) when `userMetadata` has no
//!   such name and the name is not one of grids3's own fields.
//! - `tags.<key>`: `metadata.tags.<key>`.
//!
//! A missing value: only `!=` matches it (as in Zenko, which hands `$ne` to MongoDB), except
//! where a default stands in for it.
//!
//! **What the caller may read.** Metadata (`content-type`, `x-amz-meta-*`) and tags are
//! matched only where the caller may read them (GetObject, GetObjectTagging): compiled for a
//! [`View`] without them, those comparisons are what they are for an object without the
//! value, constants folded away.

use mongodb::bson::{doc, Bson, Document};

use crate::search::pattern::Pattern;
use crate::search::{Cmp, Field, Query, Value};

/// What of an object the caller may read besides what a listing shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct View {
    /// Its metadata (`content-type`, `x-amz-meta-*`): GetObject.
    pub meta: bool,
    /// Its tags: GetObjectTagging.
    pub tags: bool,
}

impl View {
    /// Everything.
    pub const ALL: View = View {
        meta: true,
        tags: true,
    };
}

/// A compiled filter: a document, or a constant.
#[derive(Clone, Debug, PartialEq)]
pub enum Compiled {
    /// Matches every object.
    All,
    /// Matches none.
    None,
    /// Matches what the document matches.
    Filter(Document),
}

impl Compiled {
    /// As a filter (`None` as a filter no document matches).
    pub fn to_document(&self) -> Document {
        match self {
            Compiled::All => Document::new(),
            Compiled::None => doc! {"_id": {"$in": []}},
            Compiled::Filter(d) => d.clone(),
        }
    }
}

/// The filter of `q` for an object the caller sees as `view`.
pub fn compile(q: &Query, view: View) -> Compiled {
    match q {
        Query::And(qs) => {
            let mut all = Vec::new();
            for q in qs {
                match compile(q, view) {
                    Compiled::None => return Compiled::None,
                    Compiled::All => {}
                    Compiled::Filter(d) => all.push(d),
                }
            }
            join("$and", all, Compiled::All)
        }
        Query::Or(qs) => {
            let mut any = Vec::new();
            for q in qs {
                match compile(q, view) {
                    Compiled::All => return Compiled::All,
                    Compiled::None => {}
                    Compiled::Filter(d) => any.push(d),
                }
            }
            join("$or", any, Compiled::None)
        }
        Query::Compare(f, c, v) => compare(f, *c, v, view),
        Query::Like(f, p) => like(f, p, view),
    }
}

/// The filter that matches what any of `views` would: what a search reads, before each
/// object is checked with its own.
pub fn compile_any(q: &Query, views: &[View]) -> Compiled {
    let mut any = Vec::new();
    for v in views {
        match compile(q, *v) {
            Compiled::All => return Compiled::All,
            Compiled::None => {}
            Compiled::Filter(d) => {
                if !any.contains(&d) {
                    any.push(d)
                }
            }
        }
    }
    join("$or", any, Compiled::None)
}

fn join(op: &str, mut parts: Vec<Document>, empty: Compiled) -> Compiled {
    match parts.len() {
        0 => empty,
        1 => Compiled::Filter(parts.pop().expect("one")),
        _ => Compiled::Filter(doc! {op: parts}),
    }
}

/// Where a field's value is: the first path present wins; `quoted` paths hold it in quotes.
struct Source {
    paths: Vec<(String, bool)>,
    /// What stands in when no path is present.
    default: Option<&'static str>,
}

/// Where `f` is, or `None` when the view hides it.
fn source(f: &Field, view: View) -> Option<Source> {
    let plain = |p: &str| (p.to_owned(), false);
    let (paths, default) = match f {
        Field::Key => (vec![plain("filename")], None),
        Field::Size => (vec![plain("metadata.s3Sse.size"), plain("length")], None),
        Field::LastModified => (vec![plain("uploadDate")], None),
        Field::ETag => (vec![("metadata.etag".to_owned(), true), plain("md5")], None),
        Field::StorageClass => (vec![plain("metadata.s3StorageClass")], Some("STANDARD")),
        Field::ContentType if view.meta => (
            vec![plain("metadata.contentType")],
            Some("binary/octet-stream"),
        ),
        Field::Meta(n) if view.meta => {
            let mut p = vec![plain(&format!("metadata.userMetadata.{n}"))];
            if !super::meta::FIELDS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(n))
            {
                p.push(plain(&format!("metadata.{n}")));
            }
            (p, None)
        }
        Field::Tag(k) if view.tags => (vec![plain(&format!("metadata.tags.{k}"))], None),
        Field::ContentType | Field::Meta(_) | Field::Tag(_) => return None,
    };
    Some(Source { paths, default })
}

fn op(c: Cmp) -> &'static str {
    match c {
        Cmp::Eq => "$eq",
        Cmp::Ne => "$ne",
        Cmp::Lt => "$lt",
        Cmp::Le => "$lte",
        Cmp::Gt => "$gt",
        Cmp::Ge => "$gte",
    }
}

fn bson(v: &Value, quoted: bool) -> Bson {
    match v {
        Value::Text(t) if quoted => Bson::String(format!("\"{t}\"")),
        Value::Text(t) => Bson::String(t.clone()),
        Value::Number(n) => Bson::Int64(*n),
        Value::Date(ms) => Bson::DateTime(mongodb::bson::DateTime::from_millis(*ms)),
    }
}

/// `default cmp v`, decided here (a text default against a text value).
fn holds(default: &str, c: Cmp, v: &Value) -> bool {
    let Value::Text(t) = v else { return false };
    let o = default.as_bytes().cmp(t.as_bytes());
    match c {
        Cmp::Eq => o.is_eq(),
        Cmp::Ne => o.is_ne(),
        Cmp::Lt => o.is_lt(),
        Cmp::Le => o.is_le(),
        Cmp::Gt => o.is_gt(),
        Cmp::Ge => o.is_ge(),
    }
}

fn compare(f: &Field, c: Cmp, v: &Value, view: View) -> Compiled {
    match source(f, view) {
        // Unseen, so missing: only `!=` matches a missing value.
        None => match c {
            Cmp::Ne => Compiled::All,
            _ => Compiled::None,
        },
        Some(s) => {
            let when_missing = match s.default {
                Some(d) => holds(d, c, v),
                None => c == Cmp::Ne,
            };
            alternatives(&s, when_missing, |path, quoted| {
                doc! {path: {op(c): bson(v, quoted)}}
            })
        }
    }
}

fn like(f: &Field, p: &Pattern, view: View) -> Compiled {
    match source(f, view) {
        None => Compiled::None,
        Some(s) => {
            let when_missing = s.default.is_some_and(|d| matches_default(p, d));
            alternatives(&s, when_missing, |path, _| {
                let mut r = doc! {"$regex": &p.source};
                if p.case_insensitive {
                    r.insert("$options", "i");
                }
                doc! {path: r}
            })
        }
    }
}

/// Whether a pattern matches a default value (decided here, by the `regex` crate: the
/// defaults are plain ASCII words, on which it and the database's PCRE agree).
fn matches_default(p: &Pattern, d: &str) -> bool {
    regex::RegexBuilder::new(&p.source)
        .case_insensitive(p.case_insensitive)
        .size_limit(1 << 20)
        .build()
        .is_ok_and(|r| r.is_match(d))
}

/// The first present path's comparison, or `when_missing` when none is present.
fn alternatives(s: &Source, when_missing: bool, test: impl Fn(&str, bool) -> Document) -> Compiled {
    let absent = |p: &str| doc! {p: {"$exists": false}};
    let mut any = Vec::new();
    for (i, (path, quoted)) in s.paths.iter().enumerate() {
        let mut all: Vec<Document> = s.paths[..i].iter().map(|(p, _)| absent(p)).collect();
        all.push(doc! {path: {"$exists": true}});
        all.push(test(path, *quoted));
        any.push(doc! {"$and": all});
    }
    if when_missing {
        any.push(doc! {"$and": s.paths.iter().map(|(p, _)| absent(p)).collect::<Vec<_>>()});
    }
    // A single plain path needs no `$exists`: `{p: {$ne: v}}` matches a missing p already.
    if s.paths.len() == 1 && s.default.is_none() {
        let (p, q) = &s.paths[0];
        return Compiled::Filter(test(p, *q));
    }
    join("$or", any, Compiled::None)
}

#[cfg(test)]
#[path = "search_filter_tests.rs"]
mod tests;
