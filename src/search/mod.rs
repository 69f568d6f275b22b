//! Metadata search queries (issue 63): the `search` parameter of `GET /<bucket>?search=…`,
//! Zenko CloudServer's pseudo-SQL WHERE clause, parsed into a typed tree ([`Query`]). The
//! tree is all that leaves this module: the storage layer evaluates it on each object it
//! reads (`storage::objects::search_match`), so nothing from the request ever reaches the
//! database.
//!
//! Where grids3 differs from Zenko (whose parser is `sql-where-parser`):
//! - **Typed fields.** A size is compared as a number and a date as a date (ISO 8601), so
//!   `size > 9` is not a string comparison; Zenko compares what the JSON holds.
//! - **The names of its documentation work:** `size`, `etag` and `storage-class` beside
//!   `content-length`, `content-md5` and `x-amz-storage-class` (Zenko's docs show `size`, its
//!   code refuses it).
//! - **Errors name the place:** `400 InvalidArgument` with the position (1-based, in
//!   characters) and what was expected; Zenko answers one message for every error.
//! - **Bounded patterns:** see [`pattern`].

mod parse;
pub mod pattern;

pub use parse::parse;

/// The longest query taken, in bytes.
pub const MAX_QUERY_LEN: usize = 4096;
/// The most comparisons in one query.
pub const MAX_TERMS: usize = 64;
/// How deep parentheses may nest.
pub const MAX_DEPTH: usize = 16;
/// The longest metadata name or tag key a search names, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// A field of an object that a query compares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Field {
    /// The key.
    Key,
    /// The size in bytes (`size`, `content-length`).
    Size,
    /// When the object was written (`last-modified`).
    LastModified,
    /// `content-type`.
    ContentType,
    /// The ETag, without its quotes (`etag`, `content-md5`).
    ETag,
    /// The storage class (`storage-class`, `x-amz-storage-class`): `STANDARD` when unset.
    StorageClass,
    /// A user metadata value (`x-amz-meta-<name>`, the name in lower case).
    Meta(String),
    /// A tag's value (`tags.<key>`).
    Tag(String),
}

/// What kind of value a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Text, compared in binary (UTF-8) order.
    Text,
    /// A whole number.
    Number,
    /// An instant.
    Date,
}

impl Field {
    /// The kind of its values.
    pub fn kind(&self) -> Kind {
        match self {
            Field::Size => Kind::Number,
            Field::LastModified => Kind::Date,
            _ => Kind::Text,
        }
    }

    /// The field a name denotes, checked as a search and a declared index take it: a
    /// metadata name or tag key is 1 to 128 bytes without `.`, `$` or control characters
    /// (stored as the field names of a document, where a dot or a dollar cannot be named).
    pub fn checked(name: &str) -> Result<Field, String> {
        let f = Field::named(name).ok_or_else(|| {
            format!(
                "unknown field {name:?} (key, size, content-length, last-modified, \
                 content-type, etag, content-md5, storage-class, x-amz-meta-<name>, tags.<key>)"
            )
        })?;
        if let Field::Meta(n) | Field::Tag(n) = &f {
            if n.is_empty()
                || n.contains(['.', '$'])
                || n.chars().any(char::is_control)
                || n.len() > MAX_NAME_LEN
            {
                return Err(format!(
                    "{name:?}: a metadata name or tag key of 1 to {MAX_NAME_LEN} bytes without \
                     '.', '$' or control characters"
                ));
            }
        }
        Ok(f)
    }

    /// The field a name denotes, if any.
    pub fn named(name: &str) -> Option<Field> {
        let lower = name.to_ascii_lowercase();
        if let Some(meta) = lower.strip_prefix("x-amz-meta-") {
            return (!meta.is_empty()).then(|| Field::Meta(meta.to_owned()));
        }
        // A tag's key keeps its case: tags are case-sensitive. (Sliced by bytes that may not
        // end a character: `get`, never an index, which would panic.)
        if let (Some(head), Some(tail)) = (name.get(..5), name.get(5..)) {
            if head.eq_ignore_ascii_case("tags.") && !tail.is_empty() {
                return Some(Field::Tag(tail.to_owned()));
            }
        }
        Some(match lower.as_str() {
            "key" => Field::Key,
            "size" | "content-length" => Field::Size,
            "last-modified" => Field::LastModified,
            "content-type" => Field::ContentType,
            "etag" | "content-md5" => Field::ETag,
            "storage-class" | "x-amz-storage-class" => Field::StorageClass,
            _ => return None,
        })
    }
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    /// `=`
    Eq,
    /// `!=`, `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A value, typed by the field it is compared with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Value {
    /// Text.
    Text(String),
    /// A whole number.
    Number(i64),
    /// An instant, in milliseconds since the epoch.
    Date(i64),
}

/// A parsed query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Query {
    /// Every one holds.
    And(Vec<Query>),
    /// One of them holds.
    Or(Vec<Query>),
    /// `field cmp value`.
    Compare(Field, Cmp, Value),
    /// `field LIKE pattern`: the pattern matches somewhere in the value.
    Like(Field, pattern::Pattern),
}

impl Query {
    /// Every field it names.
    pub fn fields(&self) -> Vec<&Field> {
        match self {
            Query::And(qs) | Query::Or(qs) => qs.iter().flat_map(Query::fields).collect(),
            Query::Compare(f, ..) | Query::Like(f, _) => vec![f],
        }
    }
}

/// Why a query was refused: where, and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    /// The position (1-based, in characters) where it went wrong.
    pub position: usize,
    /// What was wrong there.
    pub message: String,
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Invalid search query at position {}: {}",
            self.position, self.message
        )
    }
}
