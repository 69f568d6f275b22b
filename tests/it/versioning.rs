//! Versioning: boto3 and PyMongo (`tests/py/versioning.py`), the AWS SDK for Rust, two
//! instances racing on one versioned key, and the round trips of a versioned GET.

use std::collections::{HashMap, HashSet};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};

use crate::support;

pub(crate) async fn enable(s3: &aws_sdk_s3::Client, bucket: &str) {
    s3.put_bucket_versioning()
        .bucket(bucket)
        .versioning_configuration(
            VersioningConfiguration::builder()
                .status(BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
}

/// The new version's id: the answer's, or (in a suspended bucket, whose answer names none
/// since issue 40) the one HEAD names.
async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, body: &[u8]) -> String {
    let answered = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(body.to_vec()))
        .send()
        .await
        .unwrap()
        .version_id;
    if let Some(v) = answered {
        return v;
    }
    s3.head_object()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap()
        .version_id
        .expect("a version id")
}

async fn get(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    version: Option<&str>,
) -> Option<Vec<u8>> {
    let r = s3
        .get_object()
        .bucket(bucket)
        .key(key)
        .set_version_id(version.map(str::to_owned))
        .send()
        .await
        .ok()?;
    Some(r.body.collect().await.unwrap().into_bytes().to_vec())
}

#[test]
fn versioning_as_boto3_and_pymongo_see_it() {
    support::run(async {
        let gw = support::gateway("versioning").await;
        let db = gw.db.name().to_owned();
        support::run_py_checks(
            &gw,
            "versioning.py",
            "versioning",
            &[&support::db().uri, &db],
        )
        .await;
    });
}

#[test]
fn versioning_with_the_rust_sdk() {
    support::run(async {
        let gw = support::gateway("versdk").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("vsdk").send().await.unwrap();
        enable(&s3, "vsdk").await;
        let st = s3
            .get_bucket_versioning()
            .bucket("vsdk")
            .send()
            .await
            .unwrap();
        assert_eq!(st.status, Some(BucketVersioningStatus::Enabled));
        let a = put(&s3, "vsdk", "k", b"first").await;
        let b = put(&s3, "vsdk", "k", b"second").await;
        assert_ne!(a, b);
        assert_eq!(get(&s3, "vsdk", "k", None).await.unwrap(), b"second");
        assert_eq!(get(&s3, "vsdk", "k", Some(&a)).await.unwrap(), b"first");
        let d = s3
            .delete_object()
            .bucket("vsdk")
            .key("k")
            .send()
            .await
            .unwrap();
        assert_eq!(d.delete_marker, Some(true));
        let marker = d.version_id.unwrap();
        assert!(get(&s3, "vsdk", "k", None).await.is_none());
        let l = s3
            .list_object_versions()
            .bucket("vsdk")
            .send()
            .await
            .unwrap();
        let versions: Vec<(String, bool)> = l
            .versions()
            .iter()
            .map(|v| (v.version_id().unwrap().to_owned(), v.is_latest().unwrap()))
            .collect();
        assert_eq!(versions, vec![(b.clone(), false), (a.clone(), false)]);
        let markers: Vec<(String, bool)> = l
            .delete_markers()
            .iter()
            .map(|m| (m.version_id().unwrap().to_owned(), m.is_latest().unwrap()))
            .collect();
        assert_eq!(markers, vec![(marker.clone(), true)]);
        // The current listing skips the deleted key.
        let cur = s3.list_objects_v2().bucket("vsdk").send().await.unwrap();
        assert!(cur.contents().is_empty());
        s3.delete_object()
            .bucket("vsdk")
            .key("k")
            .version_id(&marker)
            .send()
            .await
            .unwrap();
        assert_eq!(get(&s3, "vsdk", "k", None).await.unwrap(), b"second");
        let cur = s3.list_objects_v2().bucket("vsdk").send().await.unwrap();
        assert_eq!(cur.contents().len(), 1);

        // Conditional deletes: a wrong ETag is 412, the right one deletes.
        let etag = s3
            .head_object()
            .bucket("vsdk")
            .key("k")
            .send()
            .await
            .unwrap()
            .e_tag
            .unwrap();
        let e = s3
            .delete_object()
            .bucket("vsdk")
            .key("k")
            .if_match("\"0000\"")
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().unwrap().status().as_u16(), 412);
        let d = s3
            .delete_object()
            .bucket("vsdk")
            .key("k")
            .if_match(&etag)
            .send()
            .await
            .unwrap();
        assert_eq!(d.delete_marker, Some(true));

        // Suspended: the null version is replaced.
        s3.put_bucket_versioning()
            .bucket("vsdk")
            .versioning_configuration(
                VersioningConfiguration::builder()
                    .status(BucketVersioningStatus::Suspended)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(put(&s3, "vsdk", "n", b"1").await, "null");
        assert_eq!(put(&s3, "vsdk", "n", b"2").await, "null");
        let l = s3
            .list_object_versions()
            .bucket("vsdk")
            .prefix("n")
            .send()
            .await
            .unwrap();
        assert_eq!(l.versions().len(), 1);
        assert_eq!(get(&s3, "vsdk", "n", Some("null")).await.unwrap(), b"2");

        // Object Lock: a version under a legal hold cannot be removed until it is lifted.
        s3.create_bucket()
            .bucket("vsdk-lock")
            .object_lock_enabled_for_bucket(true)
            .send()
            .await
            .unwrap();
        let v = s3
            .put_object()
            .bucket("vsdk-lock")
            .key("held")
            .object_lock_legal_hold_status(aws_sdk_s3::types::ObjectLockLegalHoldStatus::On)
            .body(ByteStream::from_static(b"held"))
            .send()
            .await
            .unwrap()
            .version_id
            .unwrap();
        let e = s3
            .delete_object()
            .bucket("vsdk-lock")
            .key("held")
            .version_id(&v)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().unwrap().status().as_u16(), 403);
        s3.put_object_legal_hold()
            .bucket("vsdk-lock")
            .key("held")
            .version_id(&v)
            .legal_hold(
                aws_sdk_s3::types::ObjectLockLegalHold::builder()
                    .status(aws_sdk_s3::types::ObjectLockLegalHoldStatus::Off)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        s3.delete_object()
            .bucket("vsdk-lock")
            .key("held")
            .version_id(&v)
            .send()
            .await
            .unwrap();
        assert!(get(&s3, "vsdk-lock", "held", Some(&v)).await.is_none());
    });
}

/// Two instances PUT, DELETE and DeleteObjects one versioned key at once, for a bounded
/// time: every acknowledged version is listed exactly once with its bytes, every
/// acknowledged delete left one marker, and a PUT after the race is the latest.
#[test]
fn two_instances_race_on_one_versioned_key() {
    support::run(async {
        let name = format!(
            "g_verrace_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let g1 = support::gateway_on(&name).await;
        let g2 = support::gateway_on(&name).await;
        // No SDK retries: a retried PUT or DELETE whose first attempt did land would add a
        // version or marker nobody was told about.
        let (s1, s2) = (g1.sdk_once(), g2.sdk_once());
        s1.create_bucket().bucket("race").send().await.unwrap();
        enable(&s1, "race").await;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(8);
        let mut tasks = Vec::new();
        for w in 0..6u32 {
            let s3 = if w % 2 == 0 { s1.clone() } else { s2.clone() };
            tasks.push(tokio::spawn(async move {
                let mut puts: Vec<(String, Vec<u8>)> = Vec::new();
                let mut markers: Vec<String> = Vec::new();
                let mut i = 0u32;
                while std::time::Instant::now() < deadline {
                    i += 1;
                    match (w + i) % 4 {
                        0 | 1 => {
                            let body = format!("w{w}-{i}").into_bytes();
                            let r = s3
                                .put_object()
                                .bucket("race")
                                .key("k")
                                .body(ByteStream::from(body.clone()))
                                .send()
                                .await;
                            if let Ok(r) = r {
                                puts.push((r.version_id.unwrap(), body));
                            }
                        }
                        2 => {
                            if let Ok(r) = s3.delete_object().bucket("race").key("k").send().await {
                                markers.push(r.version_id.unwrap());
                            }
                        }
                        _ => {
                            let del = aws_sdk_s3::types::Delete::builder()
                                .objects(
                                    aws_sdk_s3::types::ObjectIdentifier::builder()
                                        .key("k")
                                        .build()
                                        .unwrap(),
                                )
                                .build()
                                .unwrap();
                            if let Ok(r) =
                                s3.delete_objects().bucket("race").delete(del).send().await
                            {
                                for d in r.deleted() {
                                    markers.push(d.delete_marker_version_id().unwrap().to_owned());
                                }
                            }
                        }
                    }
                }
                (puts, markers)
            }));
        }
        let mut puts: HashMap<String, Vec<u8>> = HashMap::new();
        let mut markers: HashSet<String> = HashSet::new();
        for t in tasks {
            let (p, m) = t.await.unwrap();
            for (v, b) in p {
                assert!(
                    puts.insert(v, b).is_none(),
                    "a version id was handed out twice"
                );
            }
            for m in m {
                assert!(markers.insert(m), "a marker id was handed out twice");
            }
        }
        // Alone this makes dozens of each; on a loaded 2-core machine a handful.
        assert!(
            puts.len() >= 3 && !markers.is_empty(),
            "the race did work: {} puts, {} deletes",
            puts.len(),
            markers.len()
        );
        let last = put(&s2, "race", "k", b"final").await;
        // Every version once, page by page.
        let mut listed_versions: Vec<String> = Vec::new();
        let mut listed_markers: Vec<String> = Vec::new();
        let mut latest = Vec::new();
        let (mut km, mut vm): (Option<String>, Option<String>) = (None, None);
        loop {
            let r = s1
                .list_object_versions()
                .bucket("race")
                .max_keys(100)
                .set_key_marker(km.clone())
                .set_version_id_marker(vm.clone())
                .send()
                .await
                .unwrap();
            for v in r.versions() {
                listed_versions.push(v.version_id().unwrap().to_owned());
                if v.is_latest() == Some(true) {
                    latest.push(v.version_id().unwrap().to_owned());
                }
            }
            for m in r.delete_markers() {
                listed_markers.push(m.version_id().unwrap().to_owned());
                assert_ne!(
                    m.is_latest(),
                    Some(true),
                    "a marker is latest after the final PUT"
                );
            }
            if r.is_truncated() != Some(true) {
                break;
            }
            km = r.next_key_marker().map(str::to_owned);
            vm = r.next_version_id_marker().map(str::to_owned);
        }
        assert_eq!(
            latest,
            vec![last.clone()],
            "the last acknowledged write is the latest"
        );
        let unique: HashSet<&String> = listed_versions.iter().collect();
        assert_eq!(
            unique.len(),
            listed_versions.len(),
            "a version was listed twice"
        );
        assert_eq!(
            listed_versions.len(),
            puts.len() + 1,
            "every acknowledged version is listed"
        );
        for (v, body) in &puts {
            assert!(unique.contains(v), "version {v} is missing");
            assert_eq!(
                get(&s1, "race", "k", Some(v)).await.as_deref(),
                Some(body.as_slice()),
                "version {v} lost its data"
            );
        }
        let marker_set: HashSet<String> = listed_markers.iter().cloned().collect();
        assert_eq!(
            marker_set, markers,
            "every acknowledged delete left its marker"
        );
        assert_eq!(get(&s2, "race", "k", None).await.unwrap(), b"final");
    });
}

#[test]
fn a_versioned_get_takes_no_more_round_trips_than_an_unversioned_one() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (gw, commands) = support::gateway_counting("vergetrt").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("plain").send().await.unwrap();
        s3.create_bucket().bucket("ver").send().await.unwrap();
        enable(&s3, "ver").await;
        let data = support::random_bytes(4096, 7);
        let mut counts = Vec::new();
        for b in ["plain", "ver"] {
            s3.put_object()
                .bucket(b)
                .key("k")
                .body(ByteStream::from(data.clone()))
                .send()
                .await
                .unwrap();
            // Warm the bucket cache, then count a GET alone.
            assert_eq!(get(&s3, b, "k", None).await.unwrap(), data);
            support::quiesce(&commands).await;
            let _ = s3.head_bucket().bucket(b).send().await;
            let before = commands.load(Ordering::SeqCst);
            assert_eq!(get(&s3, b, "k", None).await.unwrap(), data);
            counts.push(commands.load(Ordering::SeqCst) - before);
        }
        println!(
            "GET of a 4 KiB object: {} round trips unversioned, {} versioned",
            counts[0], counts[1]
        );
        assert!(counts[1] <= counts[0] && counts[1] <= 2, "{counts:?}");
    });
}

/// A removal of a version that stopped right after its reclaim record (a crash): the janitor
/// removes the files document, the chunks and the version entry, so no listed version names
/// data that is gone and no GridFS revision is left behind.
#[test]
fn a_version_removal_cut_short_is_finished_by_the_janitor() {
    support::run(async {
        use mongodb::bson::{doc, Document};
        let gw = support::gateway("vercrash").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("vcrash").send().await.unwrap();
        enable(&s3, "vcrash").await;
        let old = put(&s3, "vcrash", "k", b"old").await;
        let new = put(&s3, "vcrash", "k", b"new").await;
        let files = gw.db.collection::<Document>("vcrash.files");
        let file = files
            .find_one(doc! {"metadata.s3VersionId": &old})
            .await
            .unwrap()
            .expect("the old version's files document");
        let id = file.get("_id").unwrap().clone();
        // The first step of `reclaim_of`, and nothing after it.
        gw.state
            .store
            .meta()
            .add_reclaim_of(
                "vcrash",
                &id,
                Some(&grids3::storage::versions::entry_id("k", &old)),
            )
            .await
            .unwrap();
        let finished = support::eventually(20, || async {
            let l = s3
                .list_object_versions()
                .bucket("vcrash")
                .send()
                .await
                .unwrap();
            let ids: Vec<String> = l
                .versions()
                .iter()
                .map(|v| v.version_id().unwrap().to_owned())
                .collect();
            ids == vec![new.clone()]
                && files
                    .find_one(doc! {"_id": id.clone()})
                    .await
                    .unwrap()
                    .is_none()
                && gw
                    .db
                    .collection::<Document>("vcrash.chunks")
                    .find_one(doc! {"files_id": id.clone()})
                    .await
                    .unwrap()
                    .is_none()
        })
        .await;
        assert!(finished, "the janitor finished the removal");
        assert_eq!(get(&s3, "vcrash", "k", None).await.unwrap(), b"new");
    });
}

/// A version index build whose instance died (the status is stored, the index is not
/// complete) is taken over by a janitor: until then reads fall back to the GridFS revisions,
/// afterwards the objects are null versions served through their masters.
#[test]
fn an_interrupted_index_build_is_finished_by_the_janitor() {
    support::run(async {
        let gw = support::gateway("verbuild").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("vbuild").send().await.unwrap();
        for k in ["a", "b/c"] {
            s3.put_object()
                .bucket("vbuild")
                .key(k)
                .body(ByteStream::from_static(b"data"))
                .send()
                .await
                .unwrap();
        }
        // What PutBucketVersioning stores before it builds, and nothing after.
        let meta = gw.state.store.meta();
        meta.set_bucket_versioning("vbuild", "Enabled", &Default::default(), false)
            .await
            .unwrap();
        meta.forget_bucket("vbuild");
        assert_eq!(get(&s3, "vbuild", "a", None).await.unwrap(), b"data");
        let built = support::eventually(60, || async {
            meta.get_bucket("vbuild")
                .await
                .unwrap()
                .is_some_and(|b| b.versions_indexed)
        })
        .await;
        assert!(built, "the janitor finished the build");
        let masters = gw
            .db
            .collection::<mongodb::bson::Document>("vbuild.versions")
            .count_documents(mongodb::bson::doc! {"filename": {"$exists": true}})
            .await
            .unwrap();
        assert_eq!(masters, 2);
        let h = s3
            .head_object()
            .bucket("vbuild")
            .key("b/c")
            .send()
            .await
            .unwrap();
        assert_eq!(h.version_id(), Some("null"));
        let v = put(&s3, "vbuild", "a", b"new").await;
        let l = s3
            .list_object_versions()
            .bucket("vbuild")
            .prefix("a")
            .send()
            .await
            .unwrap();
        let ids: Vec<&str> = l.versions().iter().filter_map(|v| v.version_id()).collect();
        assert_eq!(ids, vec![v.as_str(), "null"]);
    });
}
