//! The races of issue 24 (content store, conversions, reclaims, fsck), each reproduced step by
//! step with fail points (`grids3::failpoint`) rather than by pausing a process or sleeping.
//! Every test names its buckets uniquely: a fail point stops only the tasks working on the
//! bucket it names, so tests running beside it are never stopped.

use std::time::Duration;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use grids3::failpoint;
use grids3::storage::meta::StorageMode;
use mongodb::bson::{doc, Bson, Document};

use crate::support::{self, random_bytes, Gateway};

fn fresh_name(tag: &str) -> String {
    format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    )
}

/// A gateway whose janitor never runs on its own (each test runs its passes when the race
/// needs them), with `tweak` applied.
async fn quiet_gateway(tag: &str, tweak: impl FnOnce(&mut grids3::config::Config)) -> Gateway {
    support::gateway_with(&fresh_name(tag), |c| {
        c.janitor_interval = 3600;
        tweak(c);
    })
    .await
}

async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, data: &[u8]) {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data.to_vec()))
        .send()
        .await
        .unwrap();
}

async fn get(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
    match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(o) => o
            .body
            .collect()
            .await
            .map(|b| b.into_bytes().to_vec())
            .map_err(|e| format!("body: {e}")),
        Err(e) => Err(format!(
            "{} {}",
            e.code().unwrap_or("?"),
            e.raw_response()
                .map(|r| r.status().as_u16())
                .unwrap_or_default()
        )),
    }
}

async fn create_content_bucket(s3: &aws_sdk_s3::Client, name: &str) {
    s3.create_bucket()
        .bucket(name)
        .customize()
        .mutate_request(|r| {
            r.headers_mut().insert("x-grids3-storage-mode", "content");
        })
        .send()
        .await
        .unwrap();
}

/// Checks every object reads back as written.
async fn all_read(s3: &aws_sdk_s3::Client, bucket: &str, objects: &[(String, Vec<u8>)]) {
    for (k, v) in objects {
        let got = get(s3, bucket, k).await;
        assert!(
            got.as_deref() == Ok(v.as_slice()),
            "{bucket}/{k}: {:?}",
            got.map(|b| b.len())
        );
    }
}

/// Item 1: a conversion started twice runs once. While one run is stopped inside the bucket,
/// a second start (the admin API's task, or the janitor's resume) is refused by the lead:
/// the lead used to be per process, so both ran side by side and one deleted the chunks the
/// other had just written. Then a run that stalled past its lead (its lead expired and
/// another run converted everything, and the janitor reclaimed the contents) wakes up and
/// must change nothing: it used to delete "a crashed attempt's" chunks, which were the
/// other run's, and the object was left with no chunks and no content.
#[test]
fn conversions_run_once_and_a_stalled_run_loses_nothing() {
    support::run(async {
        let gw = quiet_gateway("convrace", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-convert-twice";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let mut objects = Vec::new();
        for i in 0..4u64 {
            let v = random_bytes(600_000 + i as usize, 40 + i);
            put(&s3, b, &format!("o{i}"), &v).await;
            objects.push((format!("o{i}"), v));
        }
        objects.push(("small".into(), b"small object".to_vec()));
        put(&s3, b, "small", b"small object").await;

        // To content: the first run stops at its first object.
        let stop = failpoint::pause("convert.object", Some(b));
        assert!(store
            .meta()
            .start_conversion(b, StorageMode::Content)
            .await
            .unwrap());
        let first = {
            let store = store.clone();
            tokio::spawn(async move { store.run_conversion(b).await })
        };
        stop.reached().await;
        assert!(
            store.run_conversion(b).await.unwrap().is_none(),
            "a second run of a running conversion must not run"
        );
        assert_eq!(store.resume_conversions().await.unwrap(), 0);
        stop.release();
        let done = first
            .await
            .unwrap()
            .unwrap()
            .expect("the first run finished");
        assert_eq!(done.objects, objects.len() as u64);
        all_read(&s3, b, &objects).await;

        // Back to GridFS: run A stops at its first object, its lead expires, run B converts
        // everything and the janitor reclaims the contents; then A wakes up.
        let stop = failpoint::pause("convert.object", Some(b));
        assert!(store
            .meta()
            .start_conversion(b, StorageMode::Gridfs)
            .await
            .unwrap());
        let stalled = {
            let store = store.clone();
            tokio::spawn(async move { store.run_conversion(b).await })
        };
        stop.reached().await;
        drop_lead(&gw, b).await;
        let other = {
            // Run B passes the same point: let it through.
            let store = store.clone();
            tokio::spawn(async move { store.run_conversion(b).await })
        };
        let done = other.await.unwrap().unwrap().expect("run B converted");
        assert_eq!(done.objects, objects.len() as u64);
        store.janitor_pass().await.unwrap();
        store.janitor_pass().await.unwrap();
        all_read(&s3, b, &objects).await;
        stop.release();
        assert!(stalled.await.unwrap().unwrap().is_none());
        all_read(&s3, b, &objects).await;
        let report = grids3::janitor::fsck::run(&store, false).await.unwrap();
        assert_eq!(report.problems(), 0, "{}", report.render());
    });
}

/// Makes a conversion's lead look expired (as it would to another instance after the run
/// stalled for longer than the lead lasts).
async fn drop_lead(gw: &Gateway, bucket: &str) {
    let r = gw
        .db
        .collection::<Document>("__infostore")
        .update_one(
            doc! {"_id": format!("lead:convert\u{0}{bucket}")},
            doc! {"$set": {"expires": mongodb::bson::DateTime::from_millis(0)}},
        )
        .await
        .unwrap();
    assert_eq!(r.matched_count, 1, "the lead document");
}

/// Item 2: gridfs -> content -> gridfs while a GET streams the object. The conversion to
/// content leaves the old chunks to a reclaim that waits for the reader; the conversion back
/// used to write the new chunks under the same file id, and the pending reclaim then deleted
/// them all (`delete_many({files_id})`): 0 chunks, and GET answered 200 with 0 bytes. Now the
/// reclaim deletes only the chunks it recorded, and the conversion back waits for it.
#[test]
fn converting_back_under_a_reader_keeps_the_new_chunks() {
    support::run(async {
        let gw = quiet_gateway("convreader", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-convert-reader";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let data = random_bytes(3 * 1024 * 1024 + 7, 2);
        put(&s3, b, "x", &data).await;

        let meta = store.meta();
        // A reader holds the object's lease (taken when its stream opens, as a GET's).
        let info = store.head(b, "x").await.unwrap().unwrap();
        let held = store
            .open_read(b, &info, 0, data.len() as u64)
            .await
            .unwrap();
        assert!(meta
            .start_conversion(b, StorageMode::Content)
            .await
            .unwrap());
        assert!(store.run_conversion(b).await.unwrap().is_some());
        assert!(meta.start_conversion(b, StorageMode::Gridfs).await.unwrap());
        // The old chunks wait for the reader: the object waits too.
        assert!(store.run_conversion(b).await.unwrap().is_none());
        store.janitor_pass().await.unwrap();
        // The reader reads now (its bytes are the object's, from the old chunks it holds),
        // and lets go.
        let got: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(held).await.unwrap();
        assert!(got.concat() == data, "the reader's bytes");
        support::eventually(10, || async {
            store.run_conversion(b).await.unwrap().is_some()
        })
        .await;
        // Every reclaim there is to run, runs.
        store.janitor_pass().await.unwrap();
        store.janitor_pass().await.unwrap();
        let chunks = gw
            .db
            .collection::<Document>(&format!("{b}.chunks"))
            .count_documents(doc! {})
            .await
            .unwrap();
        let want = (data.len() as u64).div_ceil(u64::from(store.gridfs(b).chunk_size()));
        assert_eq!(chunks, want, "the object's chunks after both conversions");
        assert!(get(&s3, b, "x").await.as_deref() == Ok(data.as_slice()));
        assert!(!meta.get_bucket(b).await.unwrap().unwrap().converting);
    });
}

/// Item 3: a content PUT stalls past its write lease (its heartbeat stopped, as when the
/// process is paused); the janitor reaps its staged chunks; then the PUT goes on. It used to
/// adopt what was left as the content of the whole SHA-1 (answering 409 itself), and the
/// client's retry of the same bytes de-duplicated onto that broken blob and got 200, with
/// every later GET of those bytes failing. Now the adoption fences the registration first
/// and counts the chunks it adopts: the stalled PUT fails and adopts nothing, and the retry
/// stores the bytes afresh.
#[test]
fn a_stalled_content_put_never_poisons_deduplication() {
    support::run(async {
        let gw = quiet_gateway("stalledput", |c| c.write_lease = 2).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-stalled-put";
        create_content_bucket(&s3, b).await;
        let blobs = grids3::storage::content::blobs_name(b);
        let data = random_bytes(1024 * 1024 + 3, 3);
        let heartbeat = failpoint::pause("writes.heartbeat", Some(&blobs));
        let adopt = failpoint::pause("content.adopt", Some(b));
        let stalled = {
            let (s3, data) = (s3.clone(), data.clone());
            tokio::spawn(async move {
                s3.put_object()
                    .bucket(b)
                    .key("k")
                    .body(ByteStream::from(data))
                    .send()
                    .await
            })
        };
        adopt.reached().await;
        heartbeat.reached().await;
        // The registration expires (2 s without a heartbeat), and a janitor pass reaps the
        // staged chunks of the "dead" write.
        let writes = gw.db.collection::<Document>("__writes");
        assert!(
            support::eventually(10, || async {
                store.janitor_pass().await.unwrap();
                writes
                    .count_documents(doc! {"bucket": &blobs})
                    .await
                    .unwrap()
                    == 0
            })
            .await,
            "the janitor reaped the stalled write's registration"
        );
        adopt.release();
        heartbeat.release();
        let answer = stalled.await.unwrap();
        assert!(answer.is_err(), "the stalled PUT was answered {answer:?}");
        let blob_files = gw
            .db
            .collection::<Document>(&format!("{blobs}.files"))
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(blob_files, 0, "no blob was adopted from reaped chunks");
        // The client's retry, and a later object with the same bytes.
        put(&s3, b, "k", &data).await;
        put(&s3, b, "k2", &data).await;
        assert!(get(&s3, b, "k").await.as_deref() == Ok(data.as_slice()));
        assert!(get(&s3, b, "k2").await.as_deref() == Ok(data.as_slice()));
    });
}

/// Item 4: the reference collector found an object alive, and a DELETE of it came before it
/// cleared the reference's `purge` date. The unconditional clear erased the DELETE's release,
/// so the content was kept for ever. Now every write of the collector is compare-and-set on
/// the date it read.
#[test]
fn a_delete_during_reference_collection_is_not_lost() {
    support::run(async {
        let gw = quiet_gateway("refcas", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-ref-collect";
        create_content_bucket(&s3, b).await;
        // Above the inline limit: a content document of its own.
        let data = random_bytes(40 * 1024, 4);
        put(&s3, b, "k", &data).await;
        let content = gw.db.collection::<Document>(&format!("{b}._content"));
        assert_eq!(content.count_documents(doc! {}).await.unwrap(), 1);
        // The PUT's tentative date is due at once (no grace): the collector finds the object
        // alive and stops before it clears the date.
        let alive = failpoint::pause("refs.collect.alive", Some(b));
        let pass = {
            let store = store.clone();
            tokio::spawn(async move { store.janitor_pass().await })
        };
        alive.reached().await;
        s3.delete_object().bucket(b).key("k").send().await.unwrap();
        // The DELETE's own reclaim of the object, whichever pass runs it.
        alive.release();
        pass.await.unwrap().unwrap();
        assert!(
            support::eventually(10, || async {
                store.janitor_pass().await.unwrap();
                content.count_documents(doc! {}).await.unwrap() == 0
            })
            .await,
            "the deleted object's content was reclaimed"
        );
        let refs = gw.db.collection::<Document>(&format!("{b}._refs"));
        assert_eq!(refs.count_documents(doc! {}).await.unwrap(), 0);
    });
}

/// Item 9: `fsck --repair` on a content bucket whose object lost its `_refs` document used to
/// reclaim the object's content as unreferenced first and write the reference back after
/// (GET then answered 500). Now references go back first, and nothing an object names is
/// reclaimed. Also with a gateway serving, as `--help` promises.
#[test]
fn fsck_repair_writes_references_back_before_it_reclaims() {
    support::run(async {
        let gw = quiet_gateway("fsckrefs", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-fsck-refs";
        create_content_bucket(&s3, b).await;
        let small = random_bytes(40 * 1024, 5);
        let large = random_bytes(700 * 1024, 6);
        put(&s3, b, "small", &small).await;
        put(&s3, b, "large", &large).await;
        put(&s3, b, "orphan", &random_bytes(50 * 1024, 7)).await;
        // A multipart object: a `cat` content, whose `refBase` keeps its parts' contents.
        let (p1, p2) = (random_bytes(5 * 1024 * 1024, 14), b"tail".to_vec());
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("multi")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let mut parts = Vec::new();
        for (n, p) in [(1, &p1), (2, &p2)] {
            let r = s3
                .upload_part()
                .bucket(b)
                .key("multi")
                .upload_id(id)
                .part_number(n)
                .body(ByteStream::from(p.clone()))
                .send()
                .await
                .unwrap();
            parts.push(
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(r.e_tag().unwrap())
                    .build(),
            );
        }
        s3.complete_multipart_upload()
            .bucket(b)
            .key("multi")
            .upload_id(id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let multi = [p1, p2].concat();
        store.janitor_pass().await.unwrap();
        let refs = gw.db.collection::<Document>(&format!("{b}._refs"));
        let files = gw.db.collection::<Document>(&format!("{b}.files"));
        // The cat loses its refBase; a reference outlives its owner without a release.
        let cat = files
            .find_one(doc! {"filename": "multi"})
            .await
            .unwrap()
            .unwrap()
            .get("sha")
            .cloned()
            .unwrap();
        assert_eq!(
            refs.delete_one(doc! {"_id": cat})
                .await
                .unwrap()
                .deleted_count,
            1
        );
        let small_sha = files
            .find_one(doc! {"filename": "small"})
            .await
            .unwrap()
            .unwrap()
            .get("sha")
            .cloned()
            .unwrap();
        refs.insert_one(doc! {"_id": mongodb::bson::oid::ObjectId::new(), "refs": [small_sha.clone()], "refHistory": [small_sha]})
            .await
            .unwrap();
        // Damage: two objects lose their references; one content loses its object (a truly
        // unreferenced content, which repair may reclaim).
        for k in ["small", "large", "orphan"] {
            let id = files
                .find_one(doc! {"filename": k})
                .await
                .unwrap()
                .unwrap()
                .get("_id")
                .cloned()
                .unwrap();
            refs.delete_one(doc! {"_id": id.clone()}).await.unwrap();
            if k == "orphan" {
                files.delete_one(doc! {"_id": id}).await.unwrap();
            }
        }
        // With a gateway serving (this one), as `--help` promises: a reader runs throughout.
        let reading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let reader = {
            let (s3, reading, large) = (s3.clone(), reading.clone(), large.clone());
            tokio::spawn(async move {
                let mut reads = 0;
                while reading.load(std::sync::atomic::Ordering::SeqCst) {
                    assert!(get(&s3, b, "large").await.as_deref() == Ok(large.as_slice()));
                    reads += 1;
                }
                reads
            })
        };
        let report = grids3::janitor::fsck::run(&store, true).await.unwrap();
        let text = report.render();
        assert_eq!(report.unreferenced_objects.len(), 2, "{text}");
        assert_eq!(report.cats_without_bases.len(), 1, "{text}");
        assert_eq!(report.orphan_references.len(), 1, "{text}");
        assert_eq!(report.reclaimed_contents, 1, "{text}");
        assert!(text.contains("content store:"), "{text}");
        let check = || async {
            assert!(get(&s3, b, "small").await.as_deref() == Ok(small.as_slice()));
            assert!(get(&s3, b, "large").await.as_deref() == Ok(large.as_slice()));
            assert!(get(&s3, b, "multi").await.as_deref() == Ok(multi.as_slice()));
        };
        check().await;
        // The janitor, after the grace, keeps them too (their references are back), and
        // takes the released orphan reference.
        store.janitor_pass().await.unwrap();
        store.janitor_pass().await.unwrap();
        check().await;
        reading.store(false, std::sync::atomic::Ordering::SeqCst);
        assert!(reader.await.unwrap() > 0);
        let again = grids3::janitor::fsck::run(&store, false).await.unwrap();
        assert_eq!(again.problems(), 0, "{}", again.render());
    });
}

/// Item 10: a GridFS object whose first chunk is missing answered 200 with its full
/// Content-Length, then a broken body. The first piece is now read before the status line.
#[test]
fn an_object_missing_its_first_chunk_answers_an_error_not_200() {
    support::run(async {
        // Without the small-object cache: with it, the instance that wrote the small object
        // still holds its chunk 0 and serves the whole, right body (what the files document
        // names) rather than reading the damaged chunks collection.
        let gw = quiet_gateway("brokenfirst", |c| c.small_object_cache_mib = 0).await;
        let s3 = gw.sdk();
        let b = "fp-broken-first";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for (k, len) in [("large", 1024 * 1024 + 1), ("small", 1000)] {
            put(&s3, b, k, &random_bytes(len, 8)).await;
            let files = gw.db.collection::<Document>(&format!("{b}.files"));
            let id = files
                .find_one(doc! {"filename": k})
                .await
                .unwrap()
                .unwrap()
                .get("_id")
                .cloned()
                .unwrap();
            gw.db
                .collection::<Document>(&format!("{b}.chunks"))
                .delete_one(doc! {"files_id": id, "n": 0})
                .await
                .unwrap();
            let got = s3.get_object().bucket(b).key(k).send().await;
            let status = match &got {
                Ok(_) => 200,
                Err(e) => e.raw_response().map(|r| r.status().as_u16()).unwrap_or(0),
            };
            assert_eq!(
                status, 500,
                "{k}: a GET of an object without its first chunk"
            );
        }
    });
}

/// Item 11: a GET whose every looked-up revision is replaced before it can be read used to
/// run out of its three looks and answer 404 NoSuchKey, though the key held an object all
/// along. It answers a retryable 503 SlowDown now.
#[test]
fn a_key_replaced_under_every_look_answers_slow_down_not_404() {
    support::run(async {
        let gw = quiet_gateway("slowdown", |_| {}).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-slow-down";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let size = 700 * 1024;
        put(&s3, b, "k", &random_bytes(size, 0)).await;
        let files = gw.db.collection::<Document>(&format!("{b}.files"));
        let mut stop = failpoint::pause("read.open", Some(b));
        let reader = {
            // No retry: the SDK retries SlowDown by itself (as it should), which would hide
            // the answer this test is about.
            let s3 = aws_sdk_s3::Client::from_conf(
                s3.config()
                    .to_builder()
                    .retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled())
                    .build(),
            );
            tokio::spawn(async move { get(&s3, b, "k").await })
        };
        for round in 1..=3u64 {
            stop.reached().await;
            // The revision the GET found is replaced and reclaimed before it reads.
            put(&s3, b, "k", &random_bytes(size, round)).await;
            assert!(
                support::eventually(10, || async {
                    store.janitor_pass().await.unwrap();
                    files.count_documents(doc! {"filename": "k"}).await.unwrap() == 1
                })
                .await
            );
            // The next look stops too; this one goes on.
            let next = failpoint::pause("read.open", Some(b));
            stop.release();
            stop = next;
        }
        stop.release();
        let got = reader.await.unwrap();
        assert_eq!(got.map(|b| b.len()), Err("SlowDown 503".to_owned()));
        drop(stop);
        assert_eq!(get(&s3, b, "k").await.map(|b| b.len()), Ok(size));
    });
}

/// Item 12: a `cat` content's read used to open every base (two queries each) before its
/// first byte: about 20,000 round trips for 10,000 parts. Bases are opened as the stream
/// reaches them now. Counted on a cat of 200 bases written as another v7files writer would.
#[test]
fn a_cat_read_opens_its_bases_as_it_reaches_them() {
    support::run(async {
        use sha1::Digest;
        use std::sync::atomic::Ordering;
        let (gw, support::Counters { all, .. }) =
            support::gateway_counting_split("lazycat", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let b = "fp-lazy-cat";
        create_content_bucket(&s3, b).await;
        let content = gw.db.collection::<Document>(&format!("{b}._content"));
        let bin = |v: &[u8]| {
            Bson::Binary(mongodb::bson::Binary {
                subtype: mongodb::bson::spec::BinarySubtype::Generic,
                bytes: v.to_vec(),
            })
        };
        let mut whole = Vec::new();
        let mut base = Vec::new();
        for i in 0..200u64 {
            let piece = random_bytes(100, 1000 + i);
            let sha: [u8; 20] = sha1::Sha1::digest(&piece).into();
            content
                .insert_one(doc! {"_id": bin(&sha), "in": bin(&piece)})
                .await
                .unwrap();
            base.push(Bson::Document(doc! {"sha": bin(&sha), "length": 100_i64}));
            whole.extend(piece);
        }
        let sha: [u8; 20] = sha1::Sha1::digest(&whole).into();
        content
            .insert_one(
                doc! {"_id": bin(&sha), "store": "cat", "length": whole.len() as i64, "base": base},
            )
            .await
            .unwrap();
        let contents = gw.state.store.contents(b);
        let pointer = grids3::storage::content::Pointer::Sha(sha);
        let before = all.load(Ordering::SeqCst);
        let mut stream = contents
            .read(&pointer, whole.len() as u64, 0, whole.len() as u64)
            .await
            .unwrap();
        let opened = all.load(Ordering::SeqCst) - before;
        let first = futures::StreamExt::next(&mut stream)
            .await
            .unwrap()
            .unwrap();
        let to_first = all.load(Ordering::SeqCst) - before;
        let mut got = first.to_vec();
        while let Some(p) = futures::StreamExt::next(&mut stream).await {
            got.extend_from_slice(&p.unwrap());
        }
        let total = all.load(Ordering::SeqCst) - before;
        println!("cat of 200 bases: {opened} commands to open, {to_first} to the first byte, {total} in all");
        assert!(got == whole, "the cat's bytes");
        assert_eq!(opened, 1, "opening a cat reads the cat only");
        assert!(to_first <= 2, "{to_first} commands before the first byte");
        assert!(total >= 200, "each base read when reached ({total})");
    });
}

/// Item 5: `--content-grace` is how long a released content is kept. A deleted object's
/// content used to be due at once (reclaimed at the next janitor pass, 4 s after the DELETE
/// at a grace of 600 s), so a reader still streaming it could be cut. It waits out the grace
/// now (10 s here), then goes.
#[test]
fn a_released_content_waits_out_the_grace() {
    support::run(async {
        let gw = quiet_gateway("grace", |c| c.content_grace = 10).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-grace";
        create_content_bucket(&s3, b).await;
        put(&s3, b, "k", &random_bytes(40 * 1024, 9)).await;
        let content = gw.db.collection::<Document>(&format!("{b}._content"));
        // Taken before the DELETE, which releases the content: its grace ends 10 s after
        // some moment past this one.
        let before_delete = std::time::Instant::now();
        s3.delete_object().bucket(b).key("k").send().await.unwrap();
        store.janitor_pass().await.unwrap();
        store.janitor_pass().await.unwrap();
        assert_eq!(
            content.count_documents(doc! {}).await.unwrap(),
            1,
            "reclaimed within the grace ({:?} after the DELETE began)",
            before_delete.elapsed()
        );
        assert!(
            support::eventually(40, || async {
                store.janitor_pass().await.unwrap();
                content.count_documents(doc! {}).await.unwrap() == 0
            })
            .await,
            "reclaimed after the grace"
        );
        assert!(before_delete.elapsed() >= Duration::from_secs(10));
    });
}

/// Item 6: a versioned content bucket's PUT "crashes" between its object's document and its
/// version entry (its registration and key lock expire). The janitor's reaper used to look
/// the object up in the blobs bucket, where the write is registered, found nothing, and never
/// recorded the version. It looks in the bucket itself now and records it.
#[test]
fn a_versioned_content_write_that_died_before_its_version_is_indexed() {
    support::run(async {
        let gw = quiet_gateway("verreap", |c| c.write_lease = 2).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-versioned-reap";
        create_content_bucket(&s3, b).await;
        s3.put_bucket_versioning()
            .bucket(b)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let blobs = grids3::storage::content::blobs_name(b);
        let data = random_bytes(40 * 1024, 11);
        let recorded = failpoint::pause("publish.recorded", Some(b));
        let heartbeat = failpoint::pause("writes.heartbeat", Some(&blobs));
        let dying = {
            let (s3, data) = (s3.clone(), data.clone());
            tokio::spawn(async move { put(&s3, b, "k", &data).await })
        };
        recorded.reached().await;
        heartbeat.reached().await;
        // The writer is "dead": its key lock goes (as an expired one would be taken over),
        // and its registration expires; the janitor reaps it.
        gw.db
            .collection::<Document>("__keylocks")
            .delete_many(doc! {})
            .await
            .unwrap();
        let writes = gw.db.collection::<Document>("__writes");
        assert!(
            support::eventually(15, || async {
                store.janitor_pass().await.unwrap();
                writes
                    .count_documents(doc! {"bucket": &blobs})
                    .await
                    .unwrap()
                    == 0
            })
            .await
        );
        let versions = s3.list_object_versions().bucket(b).send().await.unwrap();
        assert_eq!(
            versions.versions().len(),
            1,
            "the reaper recorded the dead write's version"
        );
        assert!(get(&s3, b, "k").await.as_deref() == Ok(data.as_slice()));
        recorded.release();
        heartbeat.release();
        let _ = dying.await;
        assert!(get(&s3, b, "k").await.as_deref() == Ok(data.as_slice()));
    });
}

/// Item 7: a reclaim of a large content stalls after deleting its blob's files document,
/// past the content's lock; a PUT of the same bytes adopts a new blob meanwhile. The stalled
/// reclaim used to delete every chunk under the SHA-1, the new blob's too. It deletes the
/// chunks it read (by `_id`) now.
#[test]
fn a_stalled_content_reclaim_spares_a_blob_adopted_again() {
    support::run(async {
        let gw = quiet_gateway("reclaimfence", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-reclaim-fence";
        create_content_bucket(&s3, b).await;
        let data = random_bytes(1024 * 1024 + 9, 12);
        put(&s3, b, "k", &data).await;
        s3.delete_object().bucket(b).key("k").send().await.unwrap();
        let stop = failpoint::pause("content.reclaim.chunks", Some(b));
        let released = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let pass = {
            // Passes until the reclaim runs (the PUT's registration pool keeps its contents
            // until it retires, a second after the write).
            let (store, released) = (store.clone(), released.clone());
            tokio::spawn(async move {
                while !released.load(std::sync::atomic::Ordering::SeqCst) {
                    store.janitor_pass().await?;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok::<_, grids3::storage::gridfs::GridFsError>(())
            })
        };
        stop.reached().await;
        // The reclaim's lock is "lost" (it stalled past its expiry), and the same bytes are
        // stored again.
        gw.db
            .collection::<Document>("__keylocks")
            .delete_many(doc! {})
            .await
            .unwrap();
        put(&s3, b, "k2", &data).await;
        released.store(true, std::sync::atomic::Ordering::SeqCst);
        stop.release();
        pass.await.unwrap().unwrap();
        assert!(get(&s3, b, "k2").await.as_deref() == Ok(data.as_slice()));
        let report = grids3::janitor::fsck::run(&store, false).await.unwrap();
        assert_eq!(report.problems(), 0, "{}", report.render());
    });
}

/// Item 8: UploadPartCopy by reference waits for the upload's lock (up to 30 s) after it
/// referenced the source's content tentatively; meanwhile the source is deleted and the
/// janitor runs past the grace period. The part's owner was not registered, so the content
/// was reclaimed and the part named nothing. It is a registered write now.
#[test]
fn a_part_copied_by_reference_keeps_its_content_while_it_waits() {
    support::run(async {
        let gw = quiet_gateway("partref", |c| c.content_grace = 0).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-part-reference";
        create_content_bucket(&s3, b).await;
        let data = random_bytes(1024 * 1024 + 5, 13);
        // The source comes through another instance: its pool of write registrations is not
        // the one the waiting part takes its id from (a pool in use keeps all its ids'
        // references, which would hide the race).
        let other = support::gateway_with(gw.db.name(), |c| {
            c.janitor_interval = 3600;
            c.content_grace = 0;
        })
        .await;
        put(&other.sdk(), b, "src", &data).await;
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("dst")
            .send()
            .await
            .unwrap();
        let upload_id = up.upload_id().unwrap().to_owned();
        let stop = failpoint::pause("part.record", Some(b));
        let copy = {
            let (s3, upload_id) = (s3.clone(), upload_id.clone());
            tokio::spawn(async move {
                s3.upload_part_copy()
                    .bucket(b)
                    .key("dst")
                    .upload_id(upload_id)
                    .part_number(1)
                    .copy_source(format!("{b}/src"))
                    .send()
                    .await
            })
        };
        stop.reached().await;
        let src_id = gw
            .db
            .collection::<Document>(&format!("{b}.files"))
            .find_one(doc! {"filename": "src"})
            .await
            .unwrap()
            .unwrap()
            .get("_id")
            .cloned()
            .unwrap();
        s3.delete_object()
            .bucket(b)
            .key("src")
            .send()
            .await
            .unwrap();
        // Janitor passes until the source's own reference is collected (its PUT's pool of
        // registrations keeps it for a second or so): by then only the waiting part holds
        // the content.
        let refs = gw.db.collection::<Document>(&format!("{b}._refs"));
        assert!(
            support::eventually(20, || async {
                store.janitor_pass().await.unwrap();
                refs.count_documents(doc! {"_id": src_id.clone()})
                    .await
                    .unwrap()
                    == 0
            })
            .await,
            "the source's reference was collected"
        );
        store.janitor_pass().await.unwrap();
        stop.release();
        let part = copy.await.unwrap().unwrap();
        let etag = part.copy_part_result().unwrap().e_tag().unwrap().to_owned();
        s3.complete_multipart_upload()
            .bucket(b)
            .key("dst")
            .upload_id(upload_id)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(etag)
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        store.janitor_pass().await.unwrap();
        assert!(get(&s3, b, "dst").await.as_deref() == Ok(data.as_slice()));
    });
}

/// A CompleteMultipartUpload retried after the first one published the object and deleted
/// the part records, but before it marked the upload completed (a crash there, or a client
/// that gave up waiting): the retry answers the published object. It answered `400
/// InvalidPart` (the part records it checked were gone), so a client that retried a Complete
/// cut off at the wrong moment was told its upload failed although the object was there.
#[test]
fn a_complete_retried_between_its_publish_and_its_mark_answers_the_object() {
    support::run(async {
        let gw = quiet_gateway("completemark", |_| {}).await;
        let s3 = gw.sdk();
        let b = "completemark";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("k")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap().to_owned();
        let (one, two) = (random_bytes(5 * 1024 * 1024, 1), random_bytes(1000, 2));
        let mut parts = Vec::new();
        for (n, data) in [(1, &one), (2, &two)] {
            let p = s3
                .upload_part()
                .bucket(b)
                .key("k")
                .upload_id(&id)
                .part_number(n)
                .body(ByteStream::from(data.clone()))
                .send()
                .await
                .unwrap();
            parts.push(
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(p.e_tag().unwrap())
                    .build(),
            );
        }
        let body = aws_sdk_s3::types::CompletedMultipartUpload::builder()
            .set_parts(Some(parts))
            .build();
        let complete = |s3: aws_sdk_s3::Client| {
            let (id, body) = (id.clone(), body.clone());
            async move {
                s3.complete_multipart_upload()
                    .bucket(b)
                    .key("k")
                    .upload_id(id)
                    .multipart_upload(body)
                    .send()
                    .await
            }
        };
        let stop = failpoint::pause("complete.mark", Some(b));
        let first = tokio::spawn(complete(s3.clone()));
        stop.reached().await;
        // Published, part records deleted, not yet marked completed.
        let records = gw
            .db
            .collection::<Document>("__parts")
            .count_documents(doc! {"uploadId": &id})
            .await
            .unwrap();
        assert_eq!(
            records, 0,
            "the completion deleted the part records before its mark"
        );
        let retry = complete(s3.clone()).await;
        let retried = match retry {
            Ok(r) => r,
            Err(e) => panic!(
                "the retried Complete failed: {:?} {:?}",
                e.code(),
                e.message()
            ),
        };
        stop.release();
        let first = first.await.unwrap().unwrap();
        assert_eq!(retried.e_tag(), first.e_tag());
        let got = get(&s3, b, "k").await.unwrap();
        assert_eq!(got.len(), one.len() + two.len());
        assert!(got[..one.len()] == one[..] && got[one.len()..] == two[..]);
    });
}

/// PutBucketVersioning while another run leads the version index build (the janitor's resume,
/// or the same request on another instance): it answered at once, before the index was
/// complete, and a ListObjectVersions right after listed every key as one `null` version
/// (seen once in `sse::sse_as_boto3_and_pymongo_see_it` under load). It now waits for that
/// build as for its own.
#[test]
fn put_bucket_versioning_waits_for_a_build_another_run_leads() {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    support::run(async {
        let gw = quiet_gateway("versionwait", |_| {}).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "versionwait";
        s3.create_bucket().bucket(b).send().await.unwrap();
        put(&s3, b, "k", b"before").await;
        // Another run takes the build's lead and is held there.
        let led = failpoint::pause("index.led", Some(b));
        let other = {
            let store = store.clone();
            tokio::spawn(async move { store.finish_index(b).await })
        };
        led.reached().await;
        let waits = failpoint::pause("versioning.wait", Some(b));
        let enable = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                s3.put_bucket_versioning()
                    .bucket(b)
                    .versioning_configuration(
                        VersioningConfiguration::builder()
                            .status(BucketVersioningStatus::Enabled)
                            .build(),
                    )
                    .send()
                    .await
            })
        };
        // The request found the build led elsewhere, and waits for it.
        waits.reached().await;
        waits.release();
        assert!(
            !enable.is_finished(),
            "PutBucketVersioning answered before the index was built"
        );
        led.release();
        assert!(
            other.await.unwrap().unwrap(),
            "the other run built the index"
        );
        enable.await.unwrap().unwrap();
        // Right after the answer, the listing sees the index: the key's `null` version and a
        // new one.
        let v = s3
            .put_object()
            .bucket(b)
            .key("k")
            .body(ByteStream::from_static(b"after"))
            .send()
            .await
            .unwrap()
            .version_id()
            .unwrap()
            .to_owned();
        let listed = s3.list_object_versions().bucket(b).send().await.unwrap();
        let mut ids: Vec<&str> = listed
            .versions()
            .iter()
            .filter_map(|x| x.version_id())
            .collect();
        ids.sort();
        let mut want = vec!["null", v.as_str()];
        want.sort();
        assert_eq!(ids, want);
    });
}

/// Issue 28 item 9: two attempts of one part that overlap. The attempt that finishes last is
/// the part, as on AWS: its ETag lists, completes, and its bytes are the object's, whichever
/// started first.
#[test]
fn of_two_overlapping_attempts_of_a_part_the_last_to_finish_is_the_part() {
    support::run(async {
        let gw = quiet_gateway("partrace", |_| {}).await;
        let s3 = gw.sdk();
        let b = "partrace";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("k")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap().to_owned();
        let (first, second) = (random_bytes(3000, 7), random_bytes(2000, 8));
        let attempt = |s3: aws_sdk_s3::Client, data: Vec<u8>| {
            let id = id.clone();
            async move {
                s3.upload_part()
                    .bucket(b)
                    .key("k")
                    .upload_id(id)
                    .part_number(1)
                    .body(ByteStream::from(data))
                    .send()
                    .await
                    .unwrap()
                    .e_tag()
                    .unwrap()
                    .to_owned()
            }
        };
        // The first attempt stops after its chunks, before its record; the second runs whole.
        let stop = failpoint::pause("part.commit", Some(b));
        let early = tokio::spawn(attempt(s3.clone(), first.clone()));
        stop.reached().await;
        // The pause holds one hit: the second attempt passes the point and commits.
        let second_etag = attempt(s3.clone(), second.clone()).await;
        stop.release();
        let first_etag = early.await.unwrap();
        assert_ne!(first_etag, second_etag);
        let parts = s3
            .list_parts()
            .bucket(b)
            .key("k")
            .upload_id(&id)
            .send()
            .await
            .unwrap();
        let listed: Vec<&str> = parts.parts().iter().filter_map(|p| p.e_tag()).collect();
        assert_eq!(
            listed,
            [first_etag.as_str()],
            "the last to finish is listed"
        );
        let complete = |etag: &str| {
            s3.complete_multipart_upload()
                .bucket(b)
                .key("k")
                .upload_id(&id)
                .multipart_upload(
                    aws_sdk_s3::types::CompletedMultipartUpload::builder()
                        .parts(
                            aws_sdk_s3::types::CompletedPart::builder()
                                .part_number(1)
                                .e_tag(etag)
                                .build(),
                        )
                        .build(),
                )
                .send()
        };
        let e = complete(&second_etag).await.unwrap_err();
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
            Some("InvalidPart"),
            "the overtaken attempt is gone"
        );
        complete(&first_etag).await.unwrap();
        let got = s3.get_object().bucket(b).key("k").send().await.unwrap();
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            first
        );
    });
}

/// Issue 35 item 6: a PUT passes its fence, then stalls past its registration's lease (its
/// heartbeat stopped, as in a failover with the insert in TCP retransmit); the janitor reaps
/// its chunks and leaves a tombstone under its file id; the late publish collides with it
/// and fails. It used to land: an acknowledged object with no data.
#[test]
fn a_publish_that_outlives_its_fence_fails() {
    support::run(async {
        let gw = quiet_gateway("outlived", |c| c.write_lease = 2).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-outlived";
        s3.create_bucket().bucket(b).send().await.unwrap();
        // 300 KiB goes with its files document in one `bulkWrite`, after the fence; 6 MiB
        // sends its chunks before it (two batches), then the files document.
        for size in [300 * 1024, 6 * 1024 * 1024] {
            let data = random_bytes(size, 13);
            let fenced = failpoint::pause("publish.fenced", Some(b));
            let heartbeat = failpoint::pause("writes.heartbeat", Some(b));
            // A raw PUT (no SDK retry): what the first attempt itself was answered.
            let late = {
                let mut raw = support::Raw::new("PUT", "/fp-outlived/k");
                raw.body = data.clone();
                let headers = raw.signed_headers(&gw);
                let url = format!("{}/fp-outlived/k", gw.endpoint());
                let body = data.clone();
                tokio::spawn(async move {
                    let mut rb = reqwest::Client::new().put(url).body(body);
                    for (k, v) in headers {
                        if k != "host" {
                            rb = rb.header(k, v);
                        }
                    }
                    let r = rb.send().await.unwrap();
                    let status = r.status().as_u16();
                    (status, support::error_code(&r.text().await.unwrap()))
                })
            };
            fenced.reached().await;
            heartbeat.reached().await;
            let writes = gw.db.collection::<Document>("__writes");
            assert!(
                support::eventually(10, || async {
                    store.janitor_pass().await.unwrap();
                    writes.count_documents(doc! {"bucket": b}).await.unwrap() == 0
                })
                .await,
                "the janitor reaped the stalled write's registration"
            );
            assert_eq!(
                gw.chunk_count(b).await,
                0,
                "the stalled write's chunks are reaped"
            );
            fenced.release();
            heartbeat.release();
            let (status, code) = late.await.unwrap();
            assert_eq!(
                (status, code.as_str()),
                (409, "OperationAborted"),
                "the late publish fails"
            );
            assert_eq!(get(&s3, b, "k").await, Err("NoSuchKey 404".to_owned()));
            let listed = s3.list_objects_v2().bucket(b).send().await.unwrap();
            assert_eq!(
                listed.key_count(),
                Some(0),
                "the tombstone lists as nothing"
            );
            assert_eq!(
                gw.chunk_count(b).await,
                0,
                "the late publish left no chunk under the tombstone ({size} bytes)"
            );
        }
        // The client's retry stores the object whole; the bucket, emptied, can be deleted
        // (the tombstone is no object).
        let data = random_bytes(1000, 14);
        put(&s3, b, "k", &data).await;
        assert!(get(&s3, b, "k").await.as_deref() == Ok(data.as_slice()));
        s3.delete_object().bucket(b).key("k").send().await.unwrap();
        s3.delete_bucket().bucket(b).send().await.unwrap();
    });
}

/// The tombstone purge removes chunks under a tombstoned id (a late small publish's, whose
/// files document collided with the tombstone), but only while the tombstone is there: a
/// purge record that outlived its tombstone (an earlier purge stopped between the two
/// deletes) must not take the chunks of an object published under that id since.
#[test]
fn the_tombstone_purge_removes_chunks_only_under_a_tombstone() {
    support::run(async {
        let gw = quiet_gateway("purge", |_| {}).await;
        let s3 = gw.sdk();
        let store = gw.state.store.clone();
        let b = "fp-purge";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let data = random_bytes(1000, 21);
        put(&s3, b, "live", &data).await;
        let files = gw.db.collection::<Document>("fp-purge.files");
        let chunks = gw.db.collection::<Document>("fp-purge.chunks");
        let live = files
            .find_one(doc! {"filename": "live"})
            .await
            .unwrap()
            .unwrap()
            .get("_id")
            .cloned()
            .unwrap();
        // A tombstone with an orphan chunk under it.
        let dead = Bson::ObjectId(mongodb::bson::oid::ObjectId::new());
        let long_ago = mongodb::bson::DateTime::from_millis(0);
        files
            .insert_one(
                doc! {"_id": dead.clone(), "length": 0_i64, "chunkSize": 261120,
                "uploadDate": long_ago, "metadata": {"s3Reaped": long_ago}},
            )
            .await
            .unwrap();
        chunks
            .insert_one(doc! {"files_id": dead.clone(), "n": 0,
            "data": mongodb::bson::Binary {subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![1; 10]}})
            .await
            .unwrap();
        // Purge records, both due: one for the tombstone, one left over for the live id.
        let reaped = gw.db.collection::<Document>("__reaped");
        for id in [&dead, &live] {
            reaped
                .insert_one(doc! {"_id": {"bucket": b, "file": id.clone()}, "at": long_ago})
                .await
                .unwrap();
        }
        store.janitor_pass().await.unwrap();
        assert_eq!(
            chunks
                .count_documents(doc! {"files_id": dead.clone()})
                .await
                .unwrap(),
            0,
            "the chunk under the tombstone is purged"
        );
        assert!(files.find_one(doc! {"_id": dead}).await.unwrap().is_none());
        assert_eq!(
            chunks
                .count_documents(doc! {"files_id": live.clone()})
                .await
                .unwrap(),
            1,
            "the live object's chunk stays"
        );
        assert!(get(&s3, b, "live").await.as_deref() == Ok(data.as_slice()));
        assert_eq!(reaped.count_documents(doc! {}).await.unwrap(), 0);
    });
}

/// Issue 40: MinIO's force delete removes what its listing read, as of the revision read. A
/// PUT acknowledged between the listing and the delete (stopped at `force_delete.listed`)
/// writes a newer revision, which stays; the other listed key goes. Before, the delete went
/// by name and took the acknowledged newer revision too.
#[test]
fn a_force_delete_keeps_a_revision_written_after_its_listing() {
    support::run(async {
        let gw = support::gateway("force_race").await;
        let s3 = gw.sdk();
        let b = "force-race";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for (k, body) in [("p/a", "old"), ("p/b", "b")] {
            s3.put_object()
                .bucket(b)
                .key(k)
                .body(ByteStream::from(body.as_bytes().to_vec()))
                .send()
                .await
                .unwrap();
        }
        let stop = failpoint::pause("force_delete.listed", Some(b));
        let mut del = support::Raw::new("DELETE", "/force-race/p/");
        del.headers
            .push(("x-minio-force-delete".to_owned(), "true".to_owned()));
        let (answer, ()) = tokio::join!(del.send(&gw), async {
            stop.reached().await;
            s3.put_object()
                .bucket(b)
                .key("p/a")
                .body(ByteStream::from_static(b"new"))
                .send()
                .await
                .unwrap();
            drop(stop);
        });
        assert_eq!(answer.status().as_u16(), 204);
        let got = s3.get_object().bucket(b).key("p/a").send().await.unwrap();
        assert_eq!(
            &got.body.collect().await.unwrap().into_bytes()[..],
            b"new",
            "the revision acknowledged after the listing stays"
        );
        assert!(s3.head_object().bucket(b).key("p/b").send().await.is_err());
    });
}
