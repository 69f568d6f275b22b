//! The query's grammar, by recursive descent over tokens that know their position:
//!
//! ```text
//! query      := or
//! or         := and ( OR and )*
//! and        := primary ( AND primary )*          AND binds tighter than OR
//! primary    := "(" or ")" | field cmp value | field LIKE text
//! cmp        := = | != | <> | < | <= | > | >=
//! value      := a bare word | 'text' | "text" | `text`
//! ```
//!
//! Keywords are case-insensitive. A quoted text takes its own quote doubled (`'it''s'`) or
//! after a backslash (`'it\'s'`); any other backslash stays as it is, for patterns.

use super::pattern::Pattern;
use super::{Cmp, Field, Kind, Query, QueryError, Value, MAX_DEPTH, MAX_QUERY_LEN, MAX_TERMS};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Open,
    Close,
    Cmp(Cmp),
    Like,
    And,
    Or,
    /// A bare word (a name, a number, an unquoted value).
    Word(String),
    /// A quoted text.
    Quoted(String),
}

/// A token and its position (1-based, in characters).
type Spanned = (Tok, usize);

fn err(position: usize, message: impl Into<String>) -> QueryError {
    QueryError {
        position,
        message: message.into(),
    }
}

fn tokens(q: &str) -> Result<Vec<Spanned>, QueryError> {
    let chars: Vec<char> = q.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
        let (tok, len) = match (c, two.as_str()) {
            ('(', _) => (Tok::Open, 1),
            (')', _) => (Tok::Close, 1),
            (_, "!=") | (_, "<>") => (Tok::Cmp(Cmp::Ne), 2),
            (_, "<=") => (Tok::Cmp(Cmp::Le), 2),
            (_, ">=") => (Tok::Cmp(Cmp::Ge), 2),
            ('=', _) => (Tok::Cmp(Cmp::Eq), 1),
            ('<', _) => (Tok::Cmp(Cmp::Lt), 1),
            ('>', _) => (Tok::Cmp(Cmp::Gt), 1),
            ('!', _) => return Err(err(at, "'!' must be followed by '='")),
            ('\'' | '"' | '`', _) => {
                let (text, end) = quoted(&chars, i)?;
                out.push((Tok::Quoted(text), at));
                i = end;
                continue;
            }
            _ => {
                let start = i;
                while i < chars.len() && !ends_word(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let tok = match word.to_ascii_uppercase().as_str() {
                    "AND" => Tok::And,
                    "OR" => Tok::Or,
                    "LIKE" => Tok::Like,
                    _ => Tok::Word(word),
                };
                out.push((tok, at));
                continue;
            }
        };
        out.push((tok, at));
        i += len;
    }
    Ok(out)
}

fn ends_word(c: char) -> bool {
    c.is_whitespace() || matches!(c, '(' | ')' | '=' | '<' | '>' | '!' | '\'' | '"' | '`')
}

/// The text quoted from `chars[start]` and the index after its closing quote.
fn quoted(chars: &[char], start: usize) -> Result<(String, usize), QueryError> {
    let q = chars[start];
    let mut text = String::new();
    let mut i = start + 1;
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && i + 1 < chars.len() && (chars[i + 1] == q || chars[i + 1] == '\\') {
            text.push(chars[i + 1]);
            i += 2;
        } else if c == q {
            if chars.get(i + 1) == Some(&q) {
                text.push(q);
                i += 2;
            } else {
                return Ok((text, i + 1));
            }
        } else {
            text.push(c);
            i += 1;
        }
    }
    Err(err(
        start + 1,
        format!("the text opened by {q} is never closed"),
    ))
}

struct Parser {
    toks: Vec<Spanned>,
    at: usize,
    /// Where the query ends (for errors at its end).
    end: usize,
    terms: usize,
}

/// Parses a `search` parameter.
pub fn parse(q: &str) -> Result<Query, QueryError> {
    if q.len() > MAX_QUERY_LEN {
        return Err(err(
            MAX_QUERY_LEN + 1,
            format!("a query is at most {MAX_QUERY_LEN} bytes"),
        ));
    }
    let toks = tokens(q)?;
    let mut p = Parser {
        toks,
        at: 0,
        end: q.chars().count() + 1,
        terms: 0,
    };
    if p.toks.is_empty() {
        return Err(err(1, "the query is empty"));
    }
    let tree = p.or(0)?;
    if let Some((t, pos)) = p.toks.get(p.at) {
        let what = match t {
            Tok::Close => "a ')' that closes nothing".to_owned(),
            _ => "AND, OR or the end of the query".to_owned(),
        };
        return Err(err(*pos, format!("expected {what}")));
    }
    Ok(tree)
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at).map(|(t, _)| t)
    }

    /// The position of the next token, or the end.
    fn here(&self) -> usize {
        self.toks.get(self.at).map_or(self.end, |(_, p)| *p)
    }

    fn or(&mut self, depth: usize) -> Result<Query, QueryError> {
        let mut all = vec![self.and(depth)?];
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            all.push(self.and(depth)?);
        }
        Ok(join(all, Query::Or))
    }

    fn and(&mut self, depth: usize) -> Result<Query, QueryError> {
        let mut all = vec![self.primary(depth)?];
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            all.push(self.primary(depth)?);
        }
        Ok(join(all, Query::And))
    }

    fn primary(&mut self, depth: usize) -> Result<Query, QueryError> {
        let at = self.here();
        match self.toks.get(self.at).cloned() {
            Some((Tok::Open, _)) => {
                if depth >= MAX_DEPTH {
                    return Err(err(
                        at,
                        format!("parentheses nest at most {MAX_DEPTH} deep"),
                    ));
                }
                self.at += 1;
                let inner = self.or(depth + 1)?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(err(self.here(), "expected ')'"));
                }
                self.at += 1;
                Ok(inner)
            }
            Some((Tok::Word(name) | Tok::Quoted(name), _)) => {
                self.at += 1;
                self.comparison(&name, at)
            }
            Some(_) => Err(err(at, "expected a field name or '('")),
            None => Err(err(at, "the query ends where a comparison was expected")),
        }
    }

    fn comparison(&mut self, name: &str, at: usize) -> Result<Query, QueryError> {
        self.terms += 1;
        if self.terms > MAX_TERMS {
            return Err(err(
                at,
                format!("a query has at most {MAX_TERMS} comparisons"),
            ));
        }
        let field = field(name, at)?;
        let op_at = self.here();
        let op = match self.peek() {
            Some(Tok::Cmp(c)) => Some(*c),
            Some(Tok::Like) => None,
            _ => {
                return Err(err(
                    op_at,
                    "expected =, !=, <>, <, <=, >, >= or LIKE after the field",
                ))
            }
        };
        self.at += 1;
        let value_at = self.here();
        let text = match self.toks.get(self.at).cloned() {
            Some((Tok::Word(w), _)) => (w, false),
            Some((Tok::Quoted(w), _)) => (w, true),
            _ => return Err(err(value_at, "expected a value")),
        };
        self.at += 1;
        match op {
            Some(cmp) => {
                if field == Field::StorageClass && !matches!(cmp, Cmp::Eq | Cmp::Ne) {
                    return Err(err(op_at, "a storage class is compared with = or != only"));
                }
                let value = typed(&field, &text.0, value_at)?;
                Ok(Query::Compare(field, cmp, value))
            }
            None => {
                if field.kind() != Kind::Text {
                    return Err(err(op_at, "LIKE compares text fields only"));
                }
                // Stored with its quotes, or defaulted: compared by value only.
                if matches!(field, Field::ETag | Field::StorageClass) {
                    return Err(err(
                        op_at,
                        "an ETag or a storage class is compared with = or != only",
                    ));
                }
                if !text.1 {
                    return Err(err(value_at, "a LIKE pattern is quoted"));
                }
                let p = Pattern::parse(&text.0).map_err(|m| err(value_at, m))?;
                Ok(Query::Like(field, p))
            }
        }
    }
}

/// One query, or several joined.
fn join(mut all: Vec<Query>, make: fn(Vec<Query>) -> Query) -> Query {
    if all.len() == 1 {
        return all.pop().expect("one");
    }
    // `a AND (b AND c)` is one AND of three.
    let flat = all
        .into_iter()
        .flat_map(|q| match (q, make(Vec::new())) {
            (Query::And(qs), Query::And(_)) | (Query::Or(qs), Query::Or(_)) => qs,
            (q, _) => vec![q],
        })
        .collect();
    make(flat)
}

fn field(name: &str, at: usize) -> Result<Field, QueryError> {
    Field::checked(name).map_err(|e| err(at, e))
}

fn typed(field: &Field, text: &str, at: usize) -> Result<Value, QueryError> {
    match field.kind() {
        Kind::Text => Ok(Value::Text(match field {
            // An ETag is compared without its quotes, however it was written.
            Field::ETag => text.trim_matches('"').to_owned(),
            Field::StorageClass => text.to_ascii_uppercase(),
            _ => text.to_owned(),
        })),
        Kind::Number => text
            .parse::<i64>()
            .map(Value::Number)
            .map_err(|_| err(at, format!("{text:?} is not a whole number of bytes"))),
        Kind::Date => date(text).map(Value::Date).ok_or_else(|| {
            err(
                at,
                format!(
                    "{text:?} is not a date (ISO 8601, such as 2026-01-31 or 2026-01-31T12:00:00Z)"
                ),
            )
        }),
    }
}

/// Milliseconds since the epoch of an ISO 8601 date or date-time (UTC unless it says), or an
/// HTTP date (as `Last-Modified` answers).
fn date(text: &str) -> Option<i64> {
    use chrono::{NaiveDate, NaiveDateTime};
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(t.timestamp_millis());
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S%.f",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(text, f) {
            return Some(t.and_utc().timestamp_millis());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis());
    }
    let t = httpdate::parse_http_date(text).ok()?;
    let ms = t.duration_since(std::time::UNIX_EPOCH).ok()?.as_millis();
    i64::try_from(ms).ok()
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
