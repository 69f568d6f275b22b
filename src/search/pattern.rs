//! LIKE patterns: regular expressions, as Zenko takes them (`'b.*'`, or `'/b.*/i'` for a
//! case-insensitive one), that the database evaluates (MongoDB's `$regex`, PCRE): what a
//! pattern means is the database's. What grids3 adds is a gate, so that no pattern can make
//! the database work without end:
//!
//! - at most [`MAX_PATTERN_LEN`] characters, and the flag `i` only;
//! - it must parse as a pattern of the `regex-syntax` crate, which has no back-references and
//!   no look-around (the constructs that make matching exponential by design);
//! - no repetition contains another repetition or an alternation (`(a+)+`, `(a|aa)*`: the
//!   shapes that make a backtracking engine exponential), and at most
//!   [`MAX_REPETITIONS`] repetitions in all;
//! - no inline flags, and no class set operations (`[a&&b]`), which `regex-syntax` reads
//!   differently from PCRE.
//!
//! What stays is at worst polynomial in the value's length, and values are short (a key is
//! at most 1,024 bytes, metadata 2 KiB); each query also runs under a time limit.

use regex_syntax::ast::{self, Ast};

/// The longest pattern taken, in characters.
pub const MAX_PATTERN_LEN: usize = 256;
/// The most repetitions in one pattern.
pub const MAX_REPETITIONS: usize = 16;

/// A checked pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The regular expression, as given.
    pub source: String,
    /// Matched without regard to case (`/…/i`).
    pub case_insensitive: bool,
}

impl Pattern {
    /// Checks a LIKE operand: `/source/flags` or a bare source.
    pub fn parse(text: &str) -> Result<Pattern, String> {
        let (source, flags) = match text.strip_prefix('/').and_then(|t| t.rsplit_once('/')) {
            Some((s, f)) => (s, f),
            None => (text, ""),
        };
        let case_insensitive = match flags {
            "" => false,
            "i" => true,
            other => return Err(format!("the pattern flag {other:?} is not taken (only i)")),
        };
        if source.chars().count() > MAX_PATTERN_LEN {
            return Err(format!("a pattern is at most {MAX_PATTERN_LEN} characters"));
        }
        let ast = ast::parse::Parser::new()
            .parse(source)
            .map_err(|e| format!("not a pattern grids3 takes: {}", e.kind()))?;
        let mut reps = 0;
        check(&ast, false, &mut reps)?;
        Ok(Pattern {
            source: source.to_owned(),
            case_insensitive,
        })
    }
}

/// Walks the pattern: `under` is whether a repetition encloses this node.
fn check(a: &Ast, under: bool, reps: &mut usize) -> Result<(), String> {
    match a {
        Ast::Repetition(r) => {
            if under {
                return Err("a repetition inside a repetition is not taken".into());
            }
            *reps += 1;
            if *reps > MAX_REPETITIONS {
                return Err(format!(
                    "a pattern has at most {MAX_REPETITIONS} repetitions"
                ));
            }
            check(&r.ast, true, reps)
        }
        Ast::Alternation(alt) => {
            if under {
                return Err("an alternation inside a repetition is not taken".into());
            }
            alt.asts.iter().try_for_each(|a| check(a, under, reps))
        }
        Ast::Concat(c) => c.asts.iter().try_for_each(|a| check(a, under, reps)),
        Ast::Group(g) => {
            if let ast::GroupKind::NonCapturing(flags) = &g.kind {
                if !flags.items.is_empty() {
                    return Err("inline flags are not taken (use /…/i)".into());
                }
            }
            check(&g.ast, under, reps)
        }
        Ast::Flags(_) => Err("inline flags are not taken (use /…/i)".into()),
        Ast::ClassBracketed(c) => class_set(&c.kind),
        Ast::ClassUnicode(_) => Err("Unicode classes (\\p) are not taken".into()),
        Ast::Empty(_) | Ast::Literal(_) | Ast::Dot(_) | Ast::Assertion(_) | Ast::ClassPerl(_) => {
            Ok(())
        }
    }
}

fn class_set(s: &ast::ClassSet) -> Result<(), String> {
    match s {
        ast::ClassSet::BinaryOp(_) => Err("class set operations ([a&&b]) are not taken".into()),
        ast::ClassSet::Item(i) => class_item(i),
    }
}

fn class_item(i: &ast::ClassSetItem) -> Result<(), String> {
    match i {
        ast::ClassSetItem::Bracketed(_) => Err("a class inside a class is not taken".into()),
        ast::ClassSetItem::Unicode(_) => Err("Unicode classes (\\p) are not taken".into()),
        ast::ClassSetItem::Union(u) => u.items.iter().try_for_each(class_item),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_are_taken_or_refused_with_a_reason() {
        for ok in [
            "b.*",
            "^photos/[0-9]+\\.jpg$",
            "/BLUE/i",
            "a|b",
            "(ab)+",
            "x{2,5}",
        ] {
            assert!(Pattern::parse(ok).is_ok(), "{ok}");
        }
        let p = Pattern::parse("/a.c/i").unwrap();
        assert_eq!((p.source.as_str(), p.case_insensitive), ("a.c", true));
        // A slash that does not close a flagged pattern is part of the source.
        assert_eq!(Pattern::parse("a/b").unwrap().source, "a/b");
        for (bad, why) in [
            ("(a+)+$", "repetition inside"),
            ("(a|aa)*b", "alternation inside"),
            ("(.*a){20}", "repetition inside"),
            ("(a)\\1", "not a pattern"),
            ("(?=a)b", "not a pattern"),
            ("(?i)abc", "inline flags"),
            ("[a&&b]", "class set"),
            ("\\p{L}", "Unicode"),
            ("/a/g", "flag"),
            ("(", "not a pattern"),
        ] {
            let e = Pattern::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        assert!(Pattern::parse(&"a".repeat(257)).is_err());
        assert!(Pattern::parse(&"a*".repeat(17)).is_err());
    }
}
