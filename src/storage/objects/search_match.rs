//! Whether an object matches a search query (`crate::search::Query`, typed), evaluated here
//! on the object as HEAD and a listing show it. The database is asked only for key ranges
//! (`search.rs`), in filters flat enough that every MongoDB-compatible server plans them on
//! an index: the local database scans the whole collection for any filter with `$and` or
//! `$or` in it, so a query handed to it would cost a collection scan per page (measured:
//! 1.5 s for a range of 2,000 keys in 50,000 documents, against 3 ms for the flat range).
//! Evaluated here, nothing from the request reaches the database at all, and a pattern
//! runs on the `regex` crate, whose time is linear in the value whatever the pattern.
//!
//! **What a field is:**
//! - `key`: the key; `size`: the plaintext size of an encrypted object, else the length;
//!   `last-modified`: `uploadDate`.
//! - `etag`: the ETag without its quotes (a foreign file's `md5` when it has no grids3
//!   ETag); `content-type`: `binary/octet-stream` when there is none (as a GET answers);
//!   `storage-class`: `STANDARD` when there is none.
//! - `x-amz-meta-<name>`: the user metadata; for a file another GridFS client wrote, the
//!   field `<name>` of its `metadata` when the user metadata has no such name and the name is
//!   not one of grids3's own fields. Such a field is compared as MongoDB compares it with a
//!   text: only text (or text in an array) matches `=`, `<`, `LIKE` …; `!=` matches what `=`
//!   does not.
//! - `tags.<key>`: the tag's value.
//!
//! **A missing value** matches only `!=` (as in Zenko, which hands `$ne` to MongoDB), except
//! where a default stands in for it.
//!
//! **What the caller may read.** Metadata (`content-type`, `x-amz-meta-*`) and tags are
//! matched only where the caller may read them ([`View`]): elsewhere they are missing, and
//! no default stands in for a hidden `content-type`.

use mongodb::bson::Bson;

use super::ObjectInfo;
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
    /// What a listing shows only.
    pub const LISTED: View = View {
        meta: false,
        tags: false,
    };
}

/// A query made ready to evaluate (its patterns compiled once).
#[derive(Debug)]
pub struct Matcher {
    root: Node,
    /// Whether it names metadata or tags (what a [`View`] hides).
    hidden: bool,
}

#[derive(Debug)]
enum Node {
    All(Vec<Node>),
    Any(Vec<Node>),
    Compare(Field, Cmp, Value),
    Like(Field, regex::Regex),
}

/// A field's value on one object.
enum Seen<'a> {
    Missing,
    Text(&'a str),
    Number(i64),
    Date(i64),
    /// A foreign `metadata` field, compared as MongoDB compares it.
    Raw(&'a Bson),
}

impl Matcher {
    /// Prepares `q`; an error names a pattern the `regex` crate would not build.
    pub fn new(q: &Query) -> Result<Matcher, String> {
        let hidden = q
            .fields()
            .iter()
            .any(|f| matches!(f, Field::ContentType | Field::Meta(_) | Field::Tag(_)));
        Ok(Matcher {
            root: node(q)?,
            hidden,
        })
    }

    /// Whether what a [`View`] hides can change the answer.
    pub fn depends_on_view(&self) -> bool {
        self.hidden
    }

    /// Whether `o`, seen as `view`, matches.
    pub fn matches(&self, o: &ObjectInfo, view: View) -> bool {
        eval(&self.root, o, view)
    }
}

fn node(q: &Query) -> Result<Node, String> {
    Ok(match q {
        Query::And(qs) => Node::All(qs.iter().map(node).collect::<Result<_, _>>()?),
        Query::Or(qs) => Node::Any(qs.iter().map(node).collect::<Result<_, _>>()?),
        Query::Compare(f, c, v) => Node::Compare(f.clone(), *c, v.clone()),
        Query::Like(f, p) => Node::Like(f.clone(), p.to_regex()?),
    })
}

fn eval(n: &Node, o: &ObjectInfo, view: View) -> bool {
    match n {
        Node::All(ns) => ns.iter().all(|n| eval(n, o, view)),
        Node::Any(ns) => ns.iter().any(|n| eval(n, o, view)),
        Node::Compare(f, c, v) => compare(&seen(f, o, view), *c, v),
        Node::Like(f, r) => like(&seen(f, o, view), r),
    }
}

/// The value of `f` on `o` as `view` sees it.
fn seen<'a>(f: &Field, o: &'a ObjectInfo, view: View) -> Seen<'a> {
    let m = &o.meta;
    match f {
        Field::Key => Seen::Text(o.key()),
        Field::Size => Seen::Number(i64::try_from(o.size()).unwrap_or(i64::MAX)),
        Field::LastModified => Seen::Date(o.file.upload_date.timestamp_millis()),
        Field::ETag => match &m.etag {
            Some(e) => Seen::Text(unquoted(e)),
            None => Seen::Missing,
        },
        Field::StorageClass => Seen::Text(m.storage_class.as_deref().unwrap_or("STANDARD")),
        Field::ContentType if view.meta => {
            Seen::Text(m.content_type.as_deref().unwrap_or("binary/octet-stream"))
        }
        Field::Meta(n) if view.meta => {
            if let Some((_, v)) = m.user.iter().find(|(k, _)| k == n) {
                return Seen::Text(v);
            }
            let grids3s = super::meta::FIELDS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(n));
            match m.other.get(n) {
                Some(b) if !grids3s => Seen::Raw(b),
                _ => Seen::Missing,
            }
        }
        Field::Tag(k) if view.tags => match m.tags.iter().find(|(t, _)| t == k) {
            Some((_, v)) => Seen::Text(v),
            None => Seen::Missing,
        },
        Field::ContentType | Field::Meta(_) | Field::Tag(_) => Seen::Missing,
    }
}

/// An ETag as stored (`"…"`), without its quotes.
fn unquoted(e: &str) -> &str {
    e.strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or(e)
}

fn holds(o: std::cmp::Ordering, c: Cmp) -> bool {
    match c {
        Cmp::Eq => o.is_eq(),
        Cmp::Ne => o.is_ne(),
        Cmp::Lt => o.is_lt(),
        Cmp::Le => o.is_le(),
        Cmp::Gt => o.is_gt(),
        Cmp::Ge => o.is_ge(),
    }
}

fn compare(s: &Seen, c: Cmp, v: &Value) -> bool {
    match (s, v) {
        (Seen::Text(t), Value::Text(w)) => holds(t.as_bytes().cmp(w.as_bytes()), c),
        (Seen::Number(n), Value::Number(w)) => holds(n.cmp(w), c),
        (Seen::Date(d), Value::Date(w)) => holds(d.cmp(w), c),
        // MongoDB: `$ne` is "not `$eq`", and `$eq`, `$lt` … compare text with text only
        // (an array matches when one of its elements does).
        (Seen::Raw(b), Value::Text(_)) if c == Cmp::Ne => !raw(b, Cmp::Eq, v),
        (Seen::Raw(b), Value::Text(_)) => raw(b, c, v),
        // Missing, or of another kind: only `!=` holds.
        _ => c == Cmp::Ne,
    }
}

fn raw(b: &Bson, c: Cmp, v: &Value) -> bool {
    match b {
        Bson::String(t) => compare(&Seen::Text(t), c, v),
        Bson::Array(items) => items
            .iter()
            .any(|i| matches!(i, Bson::String(t) if compare(&Seen::Text(t), c, v))),
        _ => false,
    }
}

fn like(s: &Seen, r: &regex::Regex) -> bool {
    match s {
        Seen::Text(t) => r.is_match(t),
        Seen::Raw(Bson::String(t)) => r.is_match(t),
        Seen::Raw(Bson::Array(items)) => items
            .iter()
            .any(|i| matches!(i, Bson::String(t) if r.is_match(t))),
        _ => false,
    }
}

#[cfg(test)]
#[path = "search_match_tests.rs"]
mod tests;
