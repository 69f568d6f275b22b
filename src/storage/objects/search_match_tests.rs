//! What each field is and how values compare, for each view.

use mongodb::bson::{doc, DateTime, Document};

use super::*;
use crate::search::parse;
use crate::storage::objects::ObjectStore;

fn object(metadata: Option<Document>, extra: Document) -> ObjectInfo {
    let mut d = doc! {
        "_id": 1, "filename": "photos/a.jpg", "length": 2000_i64, "chunkSize": 261120,
        "uploadDate": DateTime::from_millis(1_700_000_000_000),
    };
    if let Some(m) = metadata {
        d.insert("metadata", m);
    }
    d.extend(extra);
    ObjectStore::object_of(d).unwrap()
}

fn grids3s() -> ObjectInfo {
    object(
        Some(doc! {
            "etag": "\"abc\"", "contentType": "image/jpeg",
            "userMetadata": {"camera": "X100", "n": "42"},
            "tags": {"project": "apollo"},
        }),
        doc! {},
    )
}

fn is(q: &str, o: &ObjectInfo, view: View) -> bool {
    Matcher::new(&parse(q).unwrap()).unwrap().matches(o, view)
}

#[test]
fn fields_are_what_head_and_a_listing_show() {
    let o = grids3s();
    assert!(!o.meta.tags.is_empty(), "the test object has its tag");
    for yes in [
        "key = 'photos/a.jpg'",
        "key > photos AND key < photot",
        "size = 2000 AND content-length >= 2000 AND size < 2001",
        "last-modified < 2023-11-15 AND last-modified > 2023-11-14",
        "etag = abc AND etag = '\"abc\"' AND etag != abd",
        "content-type = 'image/jpeg'",
        "storage-class = STANDARD",
        "x-amz-meta-camera = X100 AND x-amz-meta-CAMERA LIKE '/x1/i'",
        "x-amz-meta-n = 42 AND x-amz-meta-n > 4 AND x-amz-meta-n < 5",
        "tags.project = apollo",
        "tags.Project != apollo",
        "x-amz-meta-missing != 1",
        "key LIKE '^photos/' AND key LIKE 'jpg$'",
        "size > 5000 OR tags.project = apollo",
        "(size > 5000 OR key = x) OR (size < 5000 AND etag = abc)",
    ] {
        assert!(is(yes, &o, View::ALL), "{yes}");
    }
    for no in [
        "key = 'photos/a.JPG'",
        "size > 2000",
        "x-amz-meta-missing = 1",
        "x-amz-meta-missing LIKE '.*'",
        "tags.project LIKE '^Apollo'",
        "storage-class != STANDARD",
        "size > 5000 AND tags.project = apollo",
    ] {
        assert!(!is(no, &o, View::ALL), "{no}");
    }
}

#[test]
fn hidden_values_are_missing_and_no_default_stands_in() {
    let o = grids3s();
    let listed = View::LISTED;
    assert!(!is("tags.project = apollo", &o, listed));
    assert!(is("tags.project != apollo", &o, listed));
    assert!(!is("x-amz-meta-camera = X100", &o, listed));
    assert!(!is(
        "content-type = 'binary/octet-stream'",
        &o,
        View {
            meta: false,
            tags: true
        }
    ));
    assert!(is(
        "tags.project = apollo",
        &o,
        View {
            meta: false,
            tags: true
        }
    ));
    // What a listing shows is matched whatever the view.
    assert!(is("etag = abc AND size = 2000", &o, listed));
}

#[test]
fn defaults_stand_in_for_missing_values() {
    let bare = object(None, doc! {"md5": "D41D8CD98F00B204E9800998ECF8427E"});
    assert!(is("content-type = 'binary/octet-stream'", &bare, View::ALL));
    assert!(is("content-type LIKE 'octet'", &bare, View::ALL));
    assert!(is("storage-class = STANDARD", &bare, View::ALL));
    // A foreign file's ETag is its md5.
    assert!(is(
        "etag = d41d8cd98f00b204e9800998ecf8427e",
        &bare,
        View::ALL
    ));
    let glacier = object(Some(doc! {"s3StorageClass": "GLACIER"}), doc! {});
    assert!(is("storage-class = GLACIER", &glacier, View::ALL));
    assert!(!is("storage-class = STANDARD", &glacier, View::ALL));
}

#[test]
fn foreign_metadata_compares_as_mongodb_compares_it() {
    let o = object(
        Some(doc! {
            "customer": "42", "count": 42, "labels": ["red", "blue"], "gone": null,
            "contentType": "text/plain", "userMetadata": {"owner": "grids3"}, "owner": "pymongo",
        }),
        doc! {},
    );
    assert!(is("x-amz-meta-customer = 42", &o, View::ALL));
    // A number is not the text 42: `=` fails and `!=` holds.
    assert!(!is("x-amz-meta-count = 42", &o, View::ALL));
    assert!(!is("x-amz-meta-count > 1", &o, View::ALL));
    assert!(is("x-amz-meta-count != 42", &o, View::ALL));
    // An array matches when an element does; `!=` when none is equal.
    assert!(is("x-amz-meta-labels = blue", &o, View::ALL));
    assert!(is("x-amz-meta-labels LIKE '^r'", &o, View::ALL));
    assert!(!is("x-amz-meta-labels != blue", &o, View::ALL));
    assert!(is("x-amz-meta-labels != green", &o, View::ALL));
    // Null is present and equal to no text.
    assert!(!is("x-amz-meta-gone = ''", &o, View::ALL));
    assert!(is("x-amz-meta-gone != ''", &o, View::ALL));
    // grids3's own fields are never taken for user metadata; user metadata comes first.
    assert!(!is("x-amz-meta-contenttype = 'text/plain'", &o, View::ALL));
    assert!(is("x-amz-meta-owner = grids3", &o, View::ALL));
}

#[test]
fn an_encrypted_objects_size_is_its_plaintexts() {
    let mut o = object(None, doc! {});
    o.meta.sse = Some(crate::crypto::SseMeta {
        mode: "AES256".into(),
        size: 1000,
        ..Default::default()
    });
    assert!(is("size = 1000", &o, View::ALL));
    assert!(!is("size = 2000", &o, View::ALL));
}
