//! The grammar, as a table: what each query parses into, and where each bad one fails.

use super::*;
use crate::search::pattern::Pattern;

fn cmp(f: Field, c: Cmp, v: Value) -> Query {
    Query::Compare(f, c, v)
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn meta(n: &str) -> Field {
    Field::Meta(n.to_owned())
}

#[test]
fn every_operator_field_and_type() {
    let jan = 1_767_225_600_000; // 2026-01-01T00:00:00Z
    let table: Vec<(&str, Query)> = vec![
        ("key = a", cmp(Field::Key, Cmp::Eq, text("a"))),
        ("key != a", cmp(Field::Key, Cmp::Ne, text("a"))),
        ("key <> a", cmp(Field::Key, Cmp::Ne, text("a"))),
        ("key < a", cmp(Field::Key, Cmp::Lt, text("a"))),
        ("key <= a", cmp(Field::Key, Cmp::Le, text("a"))),
        ("key > a", cmp(Field::Key, Cmp::Gt, text("a"))),
        ("key >= a", cmp(Field::Key, Cmp::Ge, text("a"))),
        ("size>10", cmp(Field::Size, Cmp::Gt, Value::Number(10))),
        (
            "content-length <= '10'",
            cmp(Field::Size, Cmp::Le, Value::Number(10)),
        ),
        ("size = -1", cmp(Field::Size, Cmp::Eq, Value::Number(-1))),
        (
            "last-modified < 2026-01-01",
            cmp(Field::LastModified, Cmp::Lt, Value::Date(jan)),
        ),
        (
            "last-modified >= '2026-01-01T01:00:00+01:00'",
            cmp(Field::LastModified, Cmp::Ge, Value::Date(jan)),
        ),
        (
            "last-modified = \"Thu, 01 Jan 2026 00:00:00 GMT\"",
            cmp(Field::LastModified, Cmp::Eq, Value::Date(jan)),
        ),
        (
            "content-type = 'text/plain'",
            cmp(Field::ContentType, Cmp::Eq, text("text/plain")),
        ),
        ("etag = '\"abc\"'", cmp(Field::ETag, Cmp::Eq, text("abc"))),
        ("content-md5 = abc", cmp(Field::ETag, Cmp::Eq, text("abc"))),
        (
            "storage-class = standard",
            cmp(Field::StorageClass, Cmp::Eq, text("STANDARD")),
        ),
        (
            "x-amz-storage-class != GLACIER",
            cmp(Field::StorageClass, Cmp::Ne, text("GLACIER")),
        ),
        (
            "X-Amz-Meta-Color = blue",
            cmp(meta("color"), Cmp::Eq, text("blue")),
        ),
        // A number compared with text is text.
        (
            "x-amz-meta-customer = 42",
            cmp(meta("customer"), Cmp::Eq, text("42")),
        ),
        (
            "tags.Type = color",
            cmp(Field::Tag("Type".into()), Cmp::Eq, text("color")),
        ),
        (
            "key LIKE 'b.*'",
            Query::Like(Field::Key, Pattern::parse("b.*").unwrap()),
        ),
        (
            "x-amz-meta-color like \"/BL.*/i\"",
            Query::Like(meta("color"), Pattern::parse("/BL.*/i").unwrap()),
        ),
        // Quoting: all three quotes, doubled and escaped quotes, spaces and operators inside.
        ("key = 'it''s'", cmp(Field::Key, Cmp::Eq, text("it's"))),
        (
            "key = \"say \\\"hi\\\"\"",
            cmp(Field::Key, Cmp::Eq, text("say \"hi\"")),
        ),
        (
            "key = `a b = (c)`",
            cmp(Field::Key, Cmp::Eq, text("a b = (c)")),
        ),
        ("`x-amz-meta-a` = ''", cmp(meta("a"), Cmp::Eq, text(""))),
        ("key = 'AND'", cmp(Field::Key, Cmp::Eq, text("AND"))),
        ("key = 'ü/日本'", cmp(Field::Key, Cmp::Eq, text("ü/日本"))),
    ];
    for (q, want) in table {
        assert_eq!(parse(q), Ok(want), "{q}");
    }
}

#[test]
fn and_binds_tighter_than_or_and_parentheses_group() {
    let a = || cmp(Field::Key, Cmp::Eq, text("a"));
    let b = || cmp(Field::Key, Cmp::Eq, text("b"));
    let c = || cmp(Field::Key, Cmp::Eq, text("c"));
    let table: Vec<(&str, Query)> = vec![
        (
            "key=a OR key=b AND key=c",
            Query::Or(vec![a(), Query::And(vec![b(), c()])]),
        ),
        (
            "key=a AND key=b OR key=c",
            Query::Or(vec![Query::And(vec![a(), b()]), c()]),
        ),
        (
            "(key=a OR key=b) AND key=c",
            Query::And(vec![Query::Or(vec![a(), b()]), c()]),
        ),
        ("key=a and key=b and key=c", Query::And(vec![a(), b(), c()])),
        (
            "key=a AND (key=b AND key=c)",
            Query::And(vec![a(), b(), c()]),
        ),
        ("((key=a))", a()),
        ("key=a OR (key=b OR key=c)", Query::Or(vec![a(), b(), c()])),
    ];
    for (q, want) in table {
        assert_eq!(parse(q), Ok(want), "{q}");
    }
}

#[test]
fn malformed_and_hostile_queries_are_refused_where_they_go_wrong() {
    let deep = format!("{}key=a{}", "(".repeat(17), ")".repeat(17));
    let many = vec!["key=a"; 65].join(" OR ");
    let long = format!("key = '{}'", "a".repeat(4100));
    let table: Vec<(&str, usize, &str)> = vec![
        ("", 1, "empty"),
        ("   ", 1, "empty"),
        ("key", 4, "expected ="),
        ("key =", 6, "expected a value"),
        ("= a", 1, "expected a field"),
        ("colour = red", 1, "unknown field"),
        ("$where = 1", 1, "unknown field"),
        ("key = a AND", 12, "ends where a comparison"),
        ("key = a OR OR key = b", 12, "expected a field"),
        ("(key = a", 9, "expected ')'"),
        ("key = a)", 8, "closes nothing"),
        ("key = a key = b", 9, "AND, OR"),
        ("key = 'open", 7, "never closed"),
        ("key ! a", 5, "'!' must be"),
        ("size > ten", 8, "whole number"),
        ("size > 1.5", 8, "whole number"),
        ("size LIKE '1.*'", 6, "text fields only"),
        ("last-modified > yesterday", 17, "not a date"),
        ("key LIKE b.*", 10, "quoted"),
        ("key LIKE '(a+)+$'", 10, "repetition inside"),
        ("key LIKE '(a)\\1'", 10, "not a pattern"),
        ("storage-class > A", 15, "= or != only"),
        ("etag LIKE 'a.*'", 6, "= or != only"),
        ("tags.a.b = c", 1, "without"),
        ("x-amz-meta-$gt = c", 1, "without"),
        ("x-amz-meta- = c", 1, "unknown field"),
        // (Review: a name whose fifth byte is inside a character panicked.)
        ("tagsé = 1", 1, "unknown field"),
        ("ééé = 1", 1, "unknown field"),
        ("key = {\"$ne\": 1}", 8, "AND, OR"),
        (&deep, 17, "nest at most"),
        (&many, 577, "at most 64"),
        (&long, 4097, "at most 4096 bytes"),
    ];
    for (q, position, what) in table {
        let e = parse(q).expect_err(q);
        assert_eq!(e.position, position, "{q}: {e}");
        assert!(e.message.contains(what), "{q}: {e}");
    }
}
