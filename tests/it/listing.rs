//! Issue 36: listings read in range queries bounded on both sides. Whatever the bounds are,
//! the answer is the model's: every key once, newest revision, common prefixes in order,
//! pages joined without gaps, on a fresh instance (no fence posts) and on one that learned
//! them.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Document};

use crate::support;

/// The keys: a dense numbered run, numbered folders, a long common prefix, scattered names
/// in other scripts, and the ends of the key space.
fn keys() -> BTreeSet<String> {
    let mut k = BTreeSet::new();
    for i in 0..1500 {
        k.insert(format!("key-{i:05}"));
    }
    for p in 0..40 {
        for f in 0..10 {
            k.insert(format!("p{p:03}/f{f:02}"));
        }
    }
    let long = "a".repeat(100);
    for i in 0..50 {
        k.insert(format!("z/{long}/{i:03}"));
    }
    let words = [
        "caf\u{e9}",
        "\u{65e5}\u{672c}",
        "\u{1F600}",
        "tab\there",
        "~~~",
        "\u{7f}x",
        "A",
        "B/c",
        "!",
        " space",
        "a-b-c",
        "a-b",
        "x/y/z",
        "x/y",
        "x/",
        "\u{10FFFF}end",
    ];
    let mut seed = 7u64;
    for i in 0..200 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let w = words[(seed >> 33) as usize % words.len()];
        k.insert(format!("{w}{}", i % 37));
    }
    for w in words {
        k.insert(w.to_owned());
    }
    k
}

/// The listing S3 answers for these parameters: keys and common prefixes in order.
fn model(keys: &BTreeSet<String>, prefix: &str, delimiter: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for k in keys.iter().filter(|k| k.starts_with(prefix)) {
        let entry = match delimiter.and_then(|d| k[prefix.len()..].find(d).map(|i| (i, d))) {
            Some((i, d)) => k[..prefix.len() + i + d.len()].to_owned(),
            None => k.clone(),
        };
        if out.last() != Some(&entry) {
            out.push(entry);
        }
    }
    out
}

async fn listed(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    prefix: &str,
    delimiter: Option<&str>,
    max: i32,
) -> (Vec<String>, Vec<(String, String)>) {
    let mut seen = Vec::new();
    let mut etags = Vec::new();
    let mut token = None;
    loop {
        let r = s3
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .set_delimiter(delimiter.map(String::from))
            .max_keys(max)
            .set_continuation_token(token.clone())
            .send()
            .await
            .unwrap();
        let mut page: Vec<String> = r
            .contents()
            .iter()
            .filter_map(|o| o.key().map(String::from))
            .chain(
                r.common_prefixes()
                    .iter()
                    .filter_map(|p| p.prefix().map(String::from)),
            )
            .collect();
        assert!(
            page.len() <= max as usize,
            "a page of {} over {max}",
            page.len()
        );
        etags.extend(
            r.contents()
                .iter()
                .map(|o| (o.key().unwrap().to_owned(), o.e_tag().unwrap().to_owned())),
        );
        page.sort();
        seen.extend(page);
        if !r.is_truncated().unwrap_or(false) {
            break;
        }
        token = r.next_continuation_token().map(String::from);
        assert!(token.is_some(), "truncated without a token");
    }
    (seen, etags)
}

#[test]
fn listings_match_the_model_on_fresh_and_warm_instances() {
    support::run(async {
        let seen_cmds: Arc<Mutex<Vec<Document>>> = Arc::default();
        let name = format!("g_lst_{}", &uuid::Uuid::new_v4().simple().to_string()[..12]);
        let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
            .await
            .unwrap();
        let (log, dbn) = (seen_cmds.clone(), name.clone());
        opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
            move |ev: mongodb::event::command::CommandEvent| {
                if let mongodb::event::command::CommandEvent::Started(e) = ev {
                    if e.db == dbn && e.command.get_str("find") == Ok("lst.files") {
                        log.lock().unwrap().push(e.command);
                    }
                }
            },
        ));
        let client = mongodb::Client::with_options(opts).unwrap();
        let gw = support::gateway_with_client(client, &name, |_| {}).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("lst").send().await.unwrap();
        let keys = keys();
        let files = gw.db.collection::<Document>("lst.files");
        let now = mongodb::bson::DateTime::now().timestamp_millis();
        let etag = |n: u32| format!("\"{n:032x}\"");
        let docs: Vec<Document> = keys
            .iter()
            .map(|k| {
                doc! {"length": 0i64, "chunkSize": 261120,
                "uploadDate": mongodb::bson::DateTime::from_millis(now - 10_000),
                "filename": k, "metadata": {"etag": etag(1)}}
            })
            .collect();
        files.insert_many(docs).await.unwrap();
        // Two more revisions of one key, the newest in the middle of the insert order: the
        // listing names the newest, whichever order the server returns them in.
        for (age, n) in [(1_000, 3), (5_000, 2)] {
            files
                .insert_one(doc! {"length": 0i64, "chunkSize": 261120,
                "uploadDate": mongodb::bson::DateTime::from_millis(now - age),
                "filename": "key-00007", "metadata": {"etag": etag(n)}})
                .await
                .unwrap();
        }
        let cases: &[(&str, Option<&str>, i32)] = &[
            ("", None, 1000),
            ("", None, 7),
            ("", Some("/"), 1000),
            ("", Some("/"), 3),
            ("p0", Some("/"), 5),
            ("key-01", None, 100),
            ("z/", Some("/"), 10),
            ("z/a", None, 17),
            ("\u{65e5}", None, 1000),
            ("", Some("-"), 50),
            ("x/", Some("/"), 1),
            ("nothing", None, 10),
        ];
        // A fresh instance each time, then the first instance again and again (its posts
        // learned): the same answers.
        for round in 0..3 {
            for (prefix, delimiter, max) in cases {
                let fresh;
                let client = if round == 1 {
                    fresh = support::gateway_on(gw.db.name()).await;
                    fresh.sdk()
                } else {
                    s3.clone()
                };
                let (got, etags) = listed(&client, "lst", prefix, *delimiter, *max).await;
                let want = model(&keys, prefix, *delimiter);
                assert_eq!(
                    got.len(),
                    want.len(),
                    "round {round} {prefix:?} {delimiter:?} {max}"
                );
                assert!(
                    got == want,
                    "round {round} {prefix:?} {delimiter:?} {max}: first difference at {:?}",
                    got.iter().zip(&want).position(|(a, b)| a != b)
                );
                for (k, e) in etags {
                    let n = if k == "key-00007" { 3 } else { 1 };
                    assert_eq!(e, etag(n), "{k}");
                }
            }
        }
        // Every range query this instance sent was bounded on both sides (or named one key).
        let cmds = seen_cmds.lock().unwrap().clone();
        let ranges = cmds
            .iter()
            .filter(|c| {
                let f = c.get_document("filter").unwrap();
                match f.get("filename") {
                    Some(mongodb::bson::Bson::Document(r)) => {
                        assert!(
                            (r.contains_key("$gt") || r.contains_key("$gte"))
                                && r.contains_key("$lt"),
                            "an unbounded listing query: {f}"
                        );
                        true
                    }
                    _ => false,
                }
            })
            .count();
        assert!(ranges > 50, "only {ranges} range queries seen");
    });
}

/// ListMultipartUploads paged one entry at a time with a delimiter: a page that ends on a
/// common prefix continues past it (before, the next page began with the same prefix, and
/// every page was the same).
#[test]
fn upload_listings_page_past_common_prefixes() {
    support::run(async {
        let gw = support::gateway("lstup").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("upl").send().await.unwrap();
        for k in ["a/1", "a/2", "b", "c/x"] {
            s3.create_multipart_upload()
                .bucket("upl")
                .key(k)
                .send()
                .await
                .unwrap();
        }
        let seen: Vec<String> = upload_pages(&s3, "upl", Some("/"))
            .await
            .iter()
            .flat_map(|r| {
                r.uploads()
                    .iter()
                    .map(|u| u.key().unwrap().to_owned())
                    .chain(
                        r.common_prefixes()
                            .iter()
                            .map(|p| p.prefix().unwrap().to_owned()),
                    )
                    .collect::<Vec<_>>()
            })
            .collect();
        assert_eq!(seen, ["a/", "b", "c/"]);
    });
}

/// ListMultipartUploads paged one upload at a time over several uploads of one key: each comes
/// once, in the order they began, whatever their (random) ids.
#[test]
fn uploads_of_one_key_page_in_the_order_they_began() {
    support::run(async {
        let gw = support::gateway("lstupk").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("upk").send().await.unwrap();
        let mut began = Vec::new();
        for _ in 0..6 {
            let r = s3
                .create_multipart_upload()
                .bucket("upk")
                .key("k")
                .send()
                .await
                .unwrap();
            began.push(r.upload_id().unwrap().to_owned());
            // Distinct initiation times (milliseconds).
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let seen: Vec<String> = upload_pages(&s3, "upk", None)
            .await
            .iter()
            .flat_map(|r| {
                r.uploads()
                    .iter()
                    .map(|u| u.upload_id().unwrap().to_owned())
            })
            .collect();
        assert_eq!(seen, began);
    });
}

/// ListMultipartUploads of `bucket` paged one entry at a time with its markers, every page
/// (at most 20: a listing that never ends fails the test that reads it).
async fn upload_pages(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    delimiter: Option<&str>,
) -> Vec<aws_sdk_s3::operation::list_multipart_uploads::ListMultipartUploadsOutput> {
    let (mut marker, mut id_marker) = (None::<String>, None::<String>);
    let mut pages = Vec::new();
    for _ in 0..20 {
        let r = s3
            .list_multipart_uploads()
            .bucket(bucket)
            .set_delimiter(delimiter.map(String::from))
            .max_uploads(1)
            .set_key_marker(marker.clone())
            .set_upload_id_marker(id_marker.clone())
            .send()
            .await
            .unwrap();
        let more = r.is_truncated().unwrap_or(false);
        marker = r.next_key_marker().map(String::from);
        id_marker = r.next_upload_id_marker().map(String::from);
        pages.push(r);
        if !more {
            break;
        }
    }
    pages
}

/// The range queries (lower, upper) a listing client's finds on `coll` sent.
fn range_bounds(cmds: &[Document]) -> Vec<(String, String)> {
    cmds.iter()
        .filter_map(|c| {
            let r = c
                .get_document("filter")
                .ok()?
                .get_document("filename")
                .ok()?;
            let lower = r.get_str("$gt").or_else(|_| r.get_str("$gte")).ok()?;
            Some((lower.to_owned(), r.get_str("$lt").ok()?.to_owned()))
        })
        .collect()
}

/// A gateway on database `name` whose finds on `coll` are logged.
async fn logged_gateway(name: &str, coll: &str) -> (support::Gateway, Arc<Mutex<Vec<Document>>>) {
    let log: Arc<Mutex<Vec<Document>>> = Arc::default();
    let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
        .await
        .unwrap();
    let (l, dbn, coll) = (log.clone(), name.to_owned(), coll.to_owned());
    opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
        move |ev: mongodb::event::command::CommandEvent| {
            if let mongodb::event::command::CommandEvent::Started(e) = ev {
                if e.db == dbn && e.command.get_str("find") == Ok(coll.as_str()) {
                    l.lock().unwrap().push(e.command);
                }
            }
        },
    ));
    let client = mongodb::Client::with_options(opts).unwrap();
    (
        support::gateway_with_client(client, name, |_| {}).await,
        log,
    )
}

/// Issue 36: a cold instance's first listing of a dense run of keys after an empty start
/// used to read the whole run in its first range. Fence posts are kept in `__posts` (written
/// by PUTs of sampled keys and by listings), and an instance takes them before its first
/// listing, so each of its ranges holds about a page.
#[test]
fn a_fresh_instance_bounds_its_first_listing_with_the_posts_in_the_database() {
    support::run(async {
        use grids3::storage::ranges::posts::is_post;
        let name = format!(
            "g_hint_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_on(&name).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("hint").send().await.unwrap();
        // 6,000 keys in one dense run (written directly, as another GridFS writer would: no
        // posts yet).
        let keys: BTreeSet<String> = (0..6000).map(|i| format!("data/k{i:05}")).collect();
        let docs: Vec<Document> = keys
            .iter()
            .map(|k| {
                doc! {"length": 0i64, "chunkSize": 261120,
                "uploadDate": mongodb::bson::DateTime::now(), "filename": k,
                "metadata": {"etag": "\"d41d8cd98f00b204e9800998ecf8427e\""}}
            })
            .collect();
        gw.db
            .collection::<Document>("hint.files")
            .insert_many(docs)
            .await
            .unwrap();
        let posts = gw.db.collection::<Document>("__posts");
        let sampled = keys.iter().filter(|k| is_post(k)).count() as u64;
        assert!(sampled > 20, "{sampled} posts among the keys");
        // A full listing records the posts it sees.
        let (all, _) = listed(&s3, "hint", "", None, 1000).await;
        assert_eq!(all.len(), keys.len());
        assert!(
            support::eventually(20, || async {
                posts.count_documents(doc! {"b": "hint"}).await.unwrap() == sampled
            })
            .await,
            "the listing recorded every post it saw"
        );
        // A fresh instance: each range of its first listings holds about a page (pages of
        // 100 ask for two posts ahead, about 256 keys).
        for start_after in [None, Some("data/k03000")] {
            let (fresh, log) = logged_gateway(&name, "hint.files").await;
            let mut req = fresh.sdk().list_objects_v2().bucket("hint").max_keys(100);
            if let Some(a) = start_after {
                req = req.start_after(a);
            }
            let r = req.send().await.unwrap();
            assert_eq!(r.contents().len(), 100);
            let bounds = range_bounds(&log.lock().unwrap());
            assert!(!bounds.is_empty());
            for (lo, hi) in &bounds {
                let held = keys
                    .range::<String, _>((
                        std::ops::Bound::Included(lo.clone()),
                        std::ops::Bound::Excluded(hi.clone()),
                    ))
                    .count();
                let short: String = hi.chars().take(24).collect();
                assert!(
                    held <= 1000,
                    "a fresh instance's range [{lo:?}, {short:?}..) holds {held} of 6,000 keys (after {start_after:?})"
                );
            }
        }
        // Posts are hints, never answers: posts of keys that do not exist (between keys,
        // past them, a key of 1 KiB, control characters) change no listing of a fresh
        // instance.
        // (Each made a post by the hash, or an instance would not take it.)
        let post_like = |base: String| {
            (0..)
                .map(|i| format!("{base}{i}"))
                .find(|k| is_post(k))
                .unwrap()
        };
        let bogus: Vec<Document> = [
            "data/k00100x".to_owned(),
            "data/k00100\u{1}".to_owned(),
            "data/k0".to_owned(),
            format!("data/k02000{}", "z".repeat(1010)),
            "zzz".to_owned(),
            "\u{1}".to_owned(),
        ]
        .into_iter()
        .map(|k| doc! {"b": "hint", "k": post_like(k)})
        .collect();
        posts.insert_many(bogus).await.unwrap();
        for (prefix, delimiter, max) in [("", None, 1000), ("data/", Some("/"), 7), ("", None, 333)]
        {
            let fresh = support::gateway_on(&name).await;
            let (got, _) = listed(&fresh.sdk(), "hint", prefix, delimiter, max).await;
            assert!(
                got == model(&keys, prefix, delimiter),
                "{prefix:?} {delimiter:?} {max}: a fresh instance listed {} keys",
                got.len()
            );
        }
        // PUTs record the posts among their keys, and only those.
        let (mut post_keys, mut other_keys) = (Vec::new(), Vec::new());
        for i in 0.. {
            let k = format!("put/{i}");
            if is_post(&k) {
                post_keys.push(k);
            } else if other_keys.len() < 3 {
                other_keys.push(k);
            }
            if post_keys.len() == 2 && other_keys.len() == 3 {
                break;
            }
        }
        for k in post_keys.iter().chain(&other_keys) {
            s3.put_object()
                .bucket("hint")
                .key(k)
                .body(aws_sdk_s3::primitives::ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap();
        }
        assert!(
            support::eventually(20, || async {
                posts
                    .count_documents(doc! {"b": "hint", "k": {"$in": post_keys.clone()}})
                    .await
                    .unwrap()
                    == 2
            })
            .await,
            "PUTs of sampled keys recorded them"
        );
        assert_eq!(
            posts
                .count_documents(doc! {"b": "hint", "k": {"$in": other_keys.clone()}})
                .await
                .unwrap(),
            0
        );
        // A bucket deleted takes its posts with it.
        gw.db
            .collection::<Document>("hint.files")
            .delete_many(doc! {})
            .await
            .unwrap();
        gw.db
            .collection::<Document>("hint.chunks")
            .delete_many(doc! {})
            .await
            .unwrap();
        s3.delete_bucket().bucket("hint").send().await.unwrap();
        assert_eq!(posts.count_documents(doc! {"b": "hint"}).await.unwrap(), 0);
    });
}
