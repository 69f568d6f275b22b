//! LIKE patterns: regular expressions, as Zenko takes them (`'b.*'`, or `'/b.*/i'` for a
//! case-insensitive one), with the meaning MongoDB's `$regex` (PCRE) gives them, which Zenko
//! hands them to. grids3 evaluates them itself, with the `regex` crate (linear in the
//! value's length whatever the pattern: [`Pattern::to_regex`] says how the meanings are
//! kept alike). It still takes only what a backtracking engine could not be made to work
//! without end on, so that a query means the same wherever it is evaluated:
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
//! What stays is at worst polynomial in the value's length for a backtracking engine, and
//! linear for the one grids3 runs.

use regex_syntax::ast::{self, Ast};

/// The longest pattern taken, in characters.
pub const MAX_PATTERN_LEN: usize = 256;
/// The most repetitions in one pattern.
pub const MAX_REPETITIONS: usize = 16;
/// The largest count of a counted repetition (`{n}`, `{n,m}`): a count is a copy of what
/// it repeats, each of which every value is run through.
pub const MAX_COUNT: u32 = 64;

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
        Walk {
            reps: 0,
            case_insensitive,
        }
        .check(&ast, false, true)?;
        Ok(Pattern {
            source: source.to_owned(),
            case_insensitive,
        })
    }
}

impl Pattern {
    /// The pattern as the `regex` crate reads it with the meaning MongoDB's `$regex` (PCRE,
    /// without the `m`, `s` or `x` flags) gives it: `\d`, `\w`, `\s` and `\b` are ASCII,
    /// `^` is the start of the value, and `$` its end or before a newline that ends it. The
    /// rest of what [`Pattern::parse`] takes reads alike in both.
    pub fn to_regex(&self) -> Result<regex::Regex, String> {
        let ast = ast::parse::Parser::new()
            .parse(&self.source)
            .map_err(|e| format!("not a pattern grids3 takes: {}", e.kind()))?;
        let mut edits: Vec<(ast::Span, &'static str)> = Vec::new();
        pcre_edits(&ast, &mut edits);
        edits.sort_by_key(|(s, _)| std::cmp::Reverse(s.start.offset));
        let mut source = self.source.clone();
        for (span, with) in edits {
            source.replace_range(span.start.offset..span.end.offset, with);
        }
        regex::RegexBuilder::new(&source)
            .case_insensitive(self.case_insensitive)
            .size_limit(1 << 20)
            .build()
            .map_err(|e| format!("not a pattern grids3 takes: {e}"))
    }
}

/// What a Perl class is in PCRE (ASCII, and never case-folded: `(?-i:…)`), alone or inside
/// brackets (where a case-insensitive pattern may not have one: `Walk::class_item`).
fn perl_class(c: &ast::ClassPerl, bracketed: bool) -> &'static str {
    use ast::ClassPerlKind::{Digit, Space, Word};
    match (&c.kind, c.negated, bracketed) {
        (Digit, false, false) => "(?-i:[0-9])",
        (Digit, false, true) => "0-9",
        (Digit, true, false) => "(?-i:[^0-9])",
        (Digit, true, true) => "[^0-9]",
        (Word, false, false) => "(?-i:[0-9A-Za-z_])",
        (Word, false, true) => "0-9A-Za-z_",
        (Word, true, false) => "(?-i:[^0-9A-Za-z_])",
        (Word, true, true) => "[^0-9A-Za-z_]",
        (Space, false, false) => "(?-i:[\\t\\n\\x0B\\x0C\\r ])",
        (Space, false, true) => "\\t\\n\\x0B\\x0C\\r ",
        (Space, true, false) => "(?-i:[^\\t\\n\\x0B\\x0C\\r ])",
        (Space, true, true) => "[^\\t\\n\\x0B\\x0C\\r ]",
    }
}

fn pcre_edits(a: &Ast, out: &mut Vec<(ast::Span, &'static str)>) {
    match a {
        Ast::ClassPerl(c) => out.push((c.span, perl_class(c, false))),
        Ast::Assertion(x) => {
            use ast::AssertionKind as K;
            let with = match x.kind {
                K::StartLine => "\\A",
                K::EndLine => "(?:\\n?\\z)",
                K::WordBoundary => "(?-u:\\b)",
                K::NotWordBoundary => "(?-u:\\B)",
                _ => return,
            };
            out.push((x.span, with));
        }
        Ast::ClassBracketed(c) => class_edits(&c.kind, out),
        Ast::Repetition(r) => pcre_edits(&r.ast, out),
        Ast::Group(g) => pcre_edits(&g.ast, out),
        Ast::Alternation(alt) => alt.asts.iter().for_each(|a| pcre_edits(a, out)),
        Ast::Concat(c) => c.asts.iter().for_each(|a| pcre_edits(a, out)),
        _ => {}
    }
}

fn class_edits(s: &ast::ClassSet, out: &mut Vec<(ast::Span, &'static str)>) {
    match s {
        ast::ClassSet::Item(ast::ClassSetItem::Perl(c)) => out.push((c.span, perl_class(c, true))),
        ast::ClassSet::Item(ast::ClassSetItem::Union(u)) => {
            for i in &u.items {
                if let ast::ClassSetItem::Perl(c) = i {
                    out.push((c.span, perl_class(c, true)));
                }
            }
        }
        _ => {}
    }
}

/// What a walk of a pattern knows.
struct Walk {
    reps: usize,
    case_insensitive: bool,
}

impl Walk {
    /// Checks a node: `under` is whether a repetition encloses it, `at_end` whether nothing
    /// can follow it in a match.
    fn check(&mut self, a: &Ast, under: bool, at_end: bool) -> Result<(), String> {
        match a {
            Ast::Repetition(r) => {
                if under {
                    return Err("a repetition inside a repetition is not taken".into());
                }
                self.reps += 1;
                if self.reps > MAX_REPETITIONS {
                    return Err(format!(
                        "a pattern has at most {MAX_REPETITIONS} repetitions"
                    ));
                }
                if let ast::RepetitionKind::Range(range) = &r.op.kind {
                    let (ast::RepetitionRange::Exactly(n)
                    | ast::RepetitionRange::AtLeast(n)
                    | ast::RepetitionRange::Bounded(_, n)) = range;
                    if *n > MAX_COUNT {
                        return Err(format!("a counted repetition is at most {{{MAX_COUNT}}}"));
                    }
                }
                // PCRE: "quantifier does not follow a repeatable item".
                if matches!(*r.ast, Ast::Assertion(_) | Ast::Empty(_)) {
                    return Err("nothing to repeat".into());
                }
                self.check(&r.ast, true, false)
            }
            Ast::Alternation(alt) => {
                if under {
                    return Err("an alternation inside a repetition is not taken".into());
                }
                alt.asts
                    .iter()
                    .try_for_each(|a| self.check(a, under, at_end))
            }
            Ast::Concat(c) => {
                let last = c.asts.len().saturating_sub(1);
                c.asts
                    .iter()
                    .enumerate()
                    .try_for_each(|(i, a)| self.check(a, under, at_end && i == last))
            }
            Ast::Group(g) => {
                if let ast::GroupKind::NonCapturing(flags) = &g.kind {
                    if !flags.items.is_empty() {
                        return Err("inline flags are not taken (use /…/i)".into());
                    }
                }
                self.check(&g.ast, under, at_end)
            }
            Ast::Flags(_) => Err("inline flags are not taken (use /…/i)".into()),
            Ast::ClassBracketed(c) => self.class_set(&c.kind),
            Ast::ClassUnicode(_) => Err("Unicode classes (\\p) are not taken".into()),
            Ast::Assertion(x) => {
                use ast::AssertionKind as K;
                match x.kind {
                    // PCRE's `$` also matches before a newline that ends the value, which is
                    // kept (`to_regex`) only where nothing follows it.
                    K::EndLine if !at_end => {
                        Err("$ is taken only at the end of the pattern".into())
                    }
                    K::StartLine
                    | K::EndLine
                    | K::StartText
                    | K::EndText
                    | K::WordBoundary
                    | K::NotWordBoundary => Ok(()),
                    // `\b{start}`, `\<` …: not PCRE's.
                    _ => Err("word boundaries other than \\b and \\B are not taken".into()),
                }
            }
            Ast::Literal(l) => literal(l),
            Ast::ClassPerl(_) | Ast::Empty(_) | Ast::Dot(_) => Ok(()),
        }
    }

    fn class_set(&mut self, s: &ast::ClassSet) -> Result<(), String> {
        match s {
            ast::ClassSet::BinaryOp(_) => Err("class set operations ([a&&b]) are not taken".into()),
            ast::ClassSet::Item(i) => self.class_item(i),
        }
    }

    fn class_item(&mut self, i: &ast::ClassSetItem) -> Result<(), String> {
        match i {
            ast::ClassSetItem::Bracketed(_) => Err("a class inside a class is not taken".into()),
            ast::ClassSetItem::Unicode(_) => Err("Unicode classes (\\p) are not taken".into()),
            ast::ClassSetItem::Union(u) => u.items.iter().try_for_each(|i| self.class_item(i)),
            // PCRE does not fold the case of `\w` or `[:alpha:]` (ASCII, matched as they are);
            // inside brackets no rewriting keeps them from being folded under `/…/i`.
            ast::ClassSetItem::Perl(_) | ast::ClassSetItem::Ascii(_) if self.case_insensitive => {
                Err("\\d, \\w, \\s and [:class:] inside brackets are not taken with /…/i".into())
            }
            ast::ClassSetItem::Literal(l) => literal(l),
            ast::ClassSetItem::Range(r) => literal(&r.start).and_then(|()| literal(&r.end)),
            _ => Ok(()),
        }
    }
}

/// A literal PCRE spells alike.
fn literal(l: &ast::Literal) -> Result<(), String> {
    use ast::{HexLiteralKind as H, LiteralKind as L, SpecialLiteralKind as S};
    match &l.kind {
        // PCRE's `\v` is any vertical space; `\u` and `\U` are not PCRE's.
        L::Special(S::VerticalTab) => Err("\\v is not taken (PCRE reads it as a class)".into()),
        L::HexFixed(H::UnicodeShort | H::UnicodeLong)
        | L::HexBrace(H::UnicodeShort | H::UnicodeLong) => {
            Err("\\u and \\U are not taken (write \\x{…})".into())
        }
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
        assert!(Pattern::parse("\\<a")
            .unwrap_err()
            .contains("word boundaries"));
        // Review of issue 63: what PCRE reads otherwise, or what would cost without bound.
        for (bad, why) in [
            ("c$\\n", "only at the end"),
            ("(a$)+", "only at the end"),
            ("a\\vb", "\\v"),
            ("\\u0041", "\\u"),
            ("^*", "nothing to repeat"),
            ("a.{65}b", "at most {64}"),
            ("/[x\\w]/i", "inside brackets"),
            ("/[[:alpha:]]/i", "inside brackets"),
        ] {
            let e = Pattern::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
        for ok in ["a$|b$", "(a|b$)", "x{64}", "[x\\w]", "/\\w/i", "\\x{41}"] {
            assert!(Pattern::parse(ok).is_ok(), "{ok}");
        }
        assert!(Pattern::parse(&"a".repeat(257)).is_err());
        assert!(Pattern::parse(&"a*".repeat(17)).is_err());
    }

    /// What patterns mean, as MongoDB's `$regex` (PCRE) gives it.
    #[test]
    fn patterns_mean_what_pcre_makes_them_mean() {
        let m = |p: &str, v: &str| Pattern::parse(p).unwrap().to_regex().unwrap().is_match(v);
        // Anywhere in the value unless anchored.
        assert!(m("b.c", "abxcd"));
        assert!(!m("^b", "abc"));
        // `$`: the end, or before a newline that ends the value.
        assert!(m("c$", "abc"));
        assert!(m("c$", "abc\n"));
        assert!(!m("c$", "abc\nx"));
        assert!(!m("c\\z", "abc\n"));
        // `^` is the start of the value only (no `m` flag).
        assert!(!m("^x", "abc\nx"));
        // ASCII classes: a Unicode digit, letter or space is none of them.
        assert!(m("^\\d+$", "123"));
        assert!(!m("\\d", "\u{0663}"));
        assert!(m("\\D", "\u{0663}"));
        assert!(!m("\\w", "\u{e9}"));
        assert!(m("^[\\w.]+$", "a_b.c9"));
        assert!(!m("[\\w]", "\u{e9}"));
        assert!(m("[x\\D]", "\u{e9}"));
        assert!(!m("\\s", "\u{a0}"));
        assert!(m("a\\sb", "a\u{b}b"));
        assert!(m("\\S", "\u{a0}"));
        // `\b` between ASCII word characters and others.
        assert!(m("\\bcat\\b", "a cat."));
        assert!(!m("\\bcat", "scat"));
        assert!(m("\\bcat", "\u{e9}cat"));
        // `.` is a character, not a byte, and not a newline.
        assert!(m("^a.c$", "a\u{e9}c"));
        assert!(!m("^a.c$", "a\nc"));
        // Case: ASCII classes are not folded (PCRE: the Kelvin sign is no word character).
        assert!(!m("/^\\w$/i", "\u{212A}"));
        assert!(m("/^\\W$/i", "\u{212A}"));
        assert!(m("/^\\w+$/i", "Ab_9"));
        assert!(m("c$|x", "abc\n"));
        assert!(m("(b|c$)", "abc\n"));
        assert!(m("/BLUE/i", "blue sky"));
        assert!(!m("BLUE", "blue sky"));
    }
}
