//! What queries compile into, for each view.

use super::*;
use crate::search::parse;

fn filter(q: &str, view: View) -> Compiled {
    compile(&parse(q).unwrap(), view)
}

#[test]
fn fields_compile_to_their_paths_and_unseen_ones_fold_away() {
    let none = View {
        meta: false,
        tags: false,
    };
    assert_eq!(
        filter("key = a", View::ALL),
        Compiled::Filter(doc! {"filename": {"$eq": "a"}})
    );
    assert_eq!(
        filter("tags.t != x", View::ALL),
        Compiled::Filter(doc! {"metadata.tags.t": {"$ne": "x"}})
    );
    // Hidden tags: missing, so `!=` holds and `=` does not.
    assert_eq!(filter("tags.t != x", none), Compiled::All);
    assert_eq!(filter("tags.t = x", none), Compiled::None);
    assert_eq!(filter("key = a AND x-amz-meta-c = 1", none), Compiled::None);
    assert_eq!(
        filter("key = a OR x-amz-meta-c = 1", none),
        Compiled::Filter(doc! {"filename": {"$eq": "a"}})
    );
    assert_eq!(filter("key = a OR tags.t != 1", none), Compiled::All);
    // A default stands in for a missing value.
    let Compiled::Filter(d) = filter("storage-class = standard", none) else {
        panic!()
    };
    assert!(d.to_string().contains("$exists"), "{d}");
    let Compiled::Filter(d) = filter("storage-class = GLACIER", none) else {
        panic!()
    };
    assert!(!d.to_string().contains("false"), "{d}");
    // An ETag is compared with its quotes where grids3 stored them.
    let Compiled::Filter(d) = filter("etag = abc", none) else {
        panic!()
    };
    assert!(d.to_string().contains("\"\"abc\"\""), "{d}");
    // A grids3 field is never taken for a foreign one.
    let Compiled::Filter(d) = filter("x-amz-meta-etag = 1", View::ALL) else {
        panic!()
    };
    assert_eq!(d, doc! {"metadata.userMetadata.etag": {"$eq": "1"}});
    // Typed values.
    assert!(filter("size > 10", none)
        .to_document()
        .to_string()
        .contains("$gt\": 10"));
}

#[test]
fn the_scan_filter_covers_every_view() {
    let q = parse("x-amz-meta-a != 1 AND tags.b = 2").unwrap();
    let views = [
        View::ALL,
        View {
            meta: false,
            tags: true,
        },
    ];
    let Compiled::Filter(d) = compile_any(&q, &views) else {
        panic!()
    };
    assert!(d.contains_key("$or"), "{d}");
}
