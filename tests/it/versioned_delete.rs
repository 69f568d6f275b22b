//! DeleteObjects in a versioned bucket: delete markers for many keys in a fixed number of
//! commands, each key's answer what DeleteObject alone would give it.

use std::collections::HashMap;

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use mongodb::bson::{doc, Document};

use crate::support;
use crate::versioning::enable;

fn object(key: &str, version: Option<&str>) -> ObjectIdentifier {
    ObjectIdentifier::builder()
        .key(key)
        .set_version_id(version.map(str::to_owned))
        .build()
        .unwrap()
}

#[test]
fn delete_objects_writes_markers_in_a_fixed_number_of_commands() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (gw, counters) = support::gateway_counting_split("vdelrt", |_| {}).await;
        let commands = || {
            counters.all.load(Ordering::SeqCst)
                - counters.lookups.load(Ordering::SeqCst)
                - counters.chunk_reads.load(Ordering::SeqCst)
        };
        let s3 = gw.sdk();
        s3.create_bucket().bucket("vdel").send().await.unwrap();
        enable(&s3, "vdel").await;
        let keys: Vec<String> = (0..201).map(|i| format!("k{i:04}")).collect();
        let objects = keys.iter().map(|k| (k.clone(), k.as_bytes().to_vec()));
        support::put_many(&s3, "vdel", objects.collect()).await;
        // A second version of k0001: its marker must come after it.
        s3.put_object()
            .bucket("vdel")
            .key("k0001")
            .body(ByteStream::from_static(b"second"))
            .send()
            .await
            .unwrap();
        support::quiesce(&counters.all).await;
        let before = commands();
        let logged = counters.log.lock().unwrap().len();
        let t = std::time::Instant::now();
        let r = support::delete_objects(&s3, "vdel", &keys).await;
        let took = t.elapsed();
        let used = commands() - before;
        let sent = counters.log.lock().unwrap()[logged..].to_vec();
        println!(
            "DeleteObjects of 201 keys in a versioned bucket: {used} MongoDB commands, {took:?}"
        );
        // Locks, 2 finds of masters (slices of 200), markers, masters' removal, release.
        assert!(
            used <= 8,
            "{used} commands: {:?}",
            &sent[..sent.len().min(40)]
        );
        assert_eq!(r.deleted().len(), 201, "{:?}", r.errors());
        assert!(r
            .deleted()
            .iter()
            .all(|d| d.delete_marker() == Some(true) && d.delete_marker_version_id().is_some()));
        let marker_of: HashMap<String, String> = r
            .deleted()
            .iter()
            .map(|d| {
                let v = d.delete_marker_version_id().unwrap().to_owned();
                (d.key().unwrap().to_owned(), v)
            })
            .collect();
        // Every key is gone, its versions kept, its marker the latest.
        for k in ["k0000", "k0001", "k0200"] {
            let e = s3.get_object().bucket("vdel").key(k).send().await;
            assert!(e.is_err(), "{k} still answers");
        }
        let v = s3
            .list_object_versions()
            .bucket("vdel")
            .prefix("k0001")
            .send()
            .await
            .unwrap();
        assert_eq!(v.versions().len(), 2);
        let m = v.delete_markers();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].is_latest(), Some(true));
        assert_eq!(m[0].version_id(), Some(marker_of["k0001"].as_str()));
        assert!(v.versions().iter().all(|x| x.is_latest() == Some(false)));
        let all = s3.list_objects_v2().bucket("vdel").send().await.unwrap();
        assert_eq!(all.key_count(), Some(0));
        let locks = gw.db.collection::<Document>("__keylocks");
        assert_eq!(
            locks.count_documents(doc! {}).await.unwrap(),
            0,
            "no lock left"
        );
    });
}

/// The keys the batch leaves to the single path get the same answers: a key another writer
/// holds the lock of (waited for, then taken over once expired), a key that does not exist, a
/// key whose latest version is a marker already, a key listed twice, and a version named.
#[test]
fn delete_objects_in_a_versioned_bucket_handles_what_the_batch_cannot() {
    support::run(async {
        let gw = support::gateway("vdelmix").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mix").send().await.unwrap();
        enable(&s3, "mix").await;
        let mut vids = HashMap::new();
        for k in ["plain", "held", "marked", "twice", "named"] {
            let out = s3
                .put_object()
                .bucket("mix")
                .key(k)
                .body(ByteStream::from_static(b"data"))
                .send()
                .await
                .unwrap();
            vids.insert(k, out.version_id().unwrap().to_owned());
        }
        s3.delete_object()
            .bucket("mix")
            .key("marked")
            .send()
            .await
            .unwrap();
        // Another writer's lock on "held", expiring in two seconds by the database's clock
        // (a writer that died): the single path waits for it and takes it over.
        let now = gw.state.store.meta().clock().now().timestamp_millis();
        gw.db
            .collection::<Document>("__keylocks")
            .insert_one(doc! {
                "_id": "mix\u{0}held",
                "token": mongodb::bson::oid::ObjectId::new(),
                "expires": mongodb::bson::DateTime::from_millis(now + 2_000),
            })
            .await
            .unwrap();
        let asked = vec![
            object("plain", None),
            object("held", None),
            object("missing", None),
            object("marked", None),
            object("twice", None),
            object("twice", None),
            object("named", Some(&vids["named"])),
        ];
        let r = s3
            .delete_objects()
            .bucket("mix")
            .delete(Delete::builder().set_objects(Some(asked)).build().unwrap())
            .send()
            .await
            .unwrap();
        assert!(r.errors().is_empty(), "{:?}", r.errors());
        assert_eq!(r.deleted().len(), 7);
        let markers = r
            .deleted()
            .iter()
            .filter(|d| d.delete_marker() == Some(true) && d.version_id().is_none())
            .count();
        assert_eq!(markers, 6, "every entry without a version got a marker");
        let named = r
            .deleted()
            .iter()
            .find(|d| d.key() == Some("named"))
            .unwrap();
        assert_eq!(named.version_id(), Some(vids["named"].as_str()));
        assert_eq!(named.delete_marker(), None);
        let versions = s3
            .list_object_versions()
            .bucket("mix")
            .send()
            .await
            .unwrap();
        let count = |k: &str| {
            let data = versions.versions().iter().filter(|v| v.key() == Some(k));
            let marks = versions
                .delete_markers()
                .iter()
                .filter(|v| v.key() == Some(k));
            (data.count(), marks.count())
        };
        assert_eq!(count("plain"), (1, 1));
        assert_eq!(count("held"), (1, 1));
        assert_eq!(count("missing"), (0, 1));
        assert_eq!(count("marked"), (1, 2));
        assert_eq!(count("twice"), (1, 2));
        assert_eq!(count("named"), (0, 0));
        for m in versions.delete_markers() {
            let latest = versions
                .delete_markers()
                .iter()
                .filter(|x| x.key() == m.key())
                .filter(|x| x.is_latest() == Some(true))
                .count();
            assert_eq!(latest, 1, "one latest marker for {:?}", m.key());
        }
        let locks = gw.db.collection::<Document>("__keylocks");
        assert_eq!(
            locks.count_documents(doc! {}).await.unwrap(),
            0,
            "no lock left"
        );
    });
}

/// A batch stopped between its markers and the masters' removal (where an error or a
/// cancelled request would leave it): the keys already read as deleted, in GET, HEAD and
/// listings, and the batch then finishes.
#[test]
fn a_batch_of_markers_stopped_halfway_shows_no_deleted_object() {
    support::run(async {
        use grids3::failpoint;
        let gw = support::gateway("vdelcut").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("cut").send().await.unwrap();
        enable(&s3, "cut").await;
        let keys: Vec<String> = (0..3).map(|i| format!("c{i}")).collect();
        for k in &keys {
            s3.put_object()
                .bucket("cut")
                .key(k)
                .body(ByteStream::from_static(b"data"))
                .send()
                .await
                .unwrap();
        }
        let stop = failpoint::pause("markers.placed", Some("cut"));
        let (s, ks) = (s3.clone(), keys.clone());
        let del = tokio::spawn(async move { support::delete_objects(&s, "cut", &ks).await });
        stop.reached().await;
        for k in &keys {
            let g = s3.get_object().bucket("cut").key(k).send().await;
            assert!(g.is_err(), "{k} answers a GET halfway through its delete");
            let h = s3.head_object().bucket("cut").key(k).send().await;
            assert!(h.is_err(), "{k} answers a HEAD halfway through its delete");
        }
        let l = s3.list_objects_v2().bucket("cut").send().await.unwrap();
        assert_eq!(l.key_count(), Some(0), "{:?}", l.contents());
        stop.release();
        let r = del.await.unwrap();
        assert_eq!(r.deleted().len(), 3, "{:?}", r.errors());
        let v = s3
            .list_object_versions()
            .bucket("cut")
            .send()
            .await
            .unwrap();
        assert_eq!(v.versions().len(), 3);
        assert_eq!(v.delete_markers().len(), 3);
        assert!(v
            .delete_markers()
            .iter()
            .all(|m| m.is_latest() == Some(true)));
    });
}

/// A versioned PUT that published its files document and died before recording its version
/// (its lock expired, a DELETE wrote a marker since): the janitor records the version, as
/// an older one, and the key stays deleted.
#[test]
fn a_dead_write_indexed_after_a_delete_marker_does_not_come_back() {
    support::run(async {
        use grids3::storage::versions::{entry_id, make_vid};
        use mongodb::bson::{oid::ObjectId, Binary, Bson, DateTime};
        let gw = support::gateway_with(&format!("vdeldead_{}", std::process::id()), |c| {
            c.janitor_interval = 1
        })
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("jrn").send().await.unwrap();
        enable(&s3, "jrn").await;
        s3.put_object()
            .bucket("jrn")
            .key("k")
            .body(ByteStream::from_static(b"one"))
            .send()
            .await
            .unwrap();
        let now = gw.state.store.meta().clock().now().timestamp_millis();
        // The dead write's object, stamped a second ago (before the marker below).
        let id = ObjectId::new();
        let at = DateTime::from_millis(now - 1_000);
        let vid = make_vid(at, &Bson::ObjectId(id));
        support::plant(
            &gw.db.collection::<Document>("jrn.chunks"),
            doc! {"_id": ObjectId::new(), "files_id": id, "n": 0, "data": Binary {
            subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: b"two".to_vec() }},
        )
        .await;
        support::plant(
            &gw.db.collection::<Document>("jrn.files"),
            doc! {"_id": id, "filename": "k", "length": 3i64, "chunkSize": 261120,
            "uploadDate": at, "metadata": {"s3VersionId": &vid,
            "etag": "\"bb1e1d1f7b3c2b4a2bd0e38a0cfc2d21\""}},
        )
        .await;
        let d = s3
            .delete_object()
            .bucket("jrn")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(d.delete_marker(), Some(true));
        // Its registration, expired: the janitor finds the files document published and
        // records its version.
        support::plant(
            &gw.db.collection::<Document>("__writes"),
            doc! {"_id": ObjectId::new(), "bucket": "jrn", "fileIds": [id],
            "process": "dead", "started": DateTime::from_millis(now - 60_000),
            "expires": DateTime::from_millis(now - 30_000)},
        )
        .await;
        let entries = gw.db.collection::<Document>("jrn.versions");
        let indexed = support::eventually(60, || async {
            entries
                .find_one(doc! {"_id": entry_id("k", &vid)})
                .await
                .unwrap()
                .is_some()
        })
        .await;
        assert!(indexed, "the janitor recorded the dead write's version");
        let g = s3.get_object().bucket("jrn").key("k").send().await;
        assert!(g.is_err(), "the deleted key came back: {g:?}");
        let v = s3
            .list_object_versions()
            .bucket("jrn")
            .send()
            .await
            .unwrap();
        assert_eq!(v.versions().len(), 2, "{v:?}");
        assert!(v.versions().iter().all(|x| x.is_latest() == Some(false)));
        assert_eq!(v.delete_markers().len(), 1);
        assert_eq!(v.delete_markers()[0].is_latest(), Some(true));
        let l = s3.list_objects_v2().bucket("jrn").send().await.unwrap();
        assert_eq!(l.key_count(), Some(0));
    });
}
