//! Reliability: the database's clock, crash points (the real binary killed with SIGKILL),
//! multipart races and re-completion, fsck, outages, edge inputs, key rotation.

use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart, Delete, ObjectIdentifier};
use futures::StreamExt;
use mongodb::bson::{doc, oid::ObjectId, Binary, Document};

use crate::support::{self, eventually, random_bytes, Gateway, Process, Raw};

const MIB: usize = 1024 * 1024;

async fn get_bytes(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> Option<Vec<u8>> {
    match s3.get_object().bucket(bucket).key(key).send().await {
        Ok(o) => Some(o.body.collect().await.unwrap().into_bytes().to_vec()),
        Err(e) if e.code() == Some("NoSuchKey") => None,
        Err(e) => panic!("GET {key}: {e:?}"),
    }
}

async fn put(s3: &aws_sdk_s3::Client, bucket: &str, key: &str, data: Vec<u8>) -> String {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(data))
        .send()
        .await
        .unwrap()
        .e_tag()
        .unwrap()
        .to_owned()
}

async fn fsck(gw: &Gateway, repair: bool) -> grids3::janitor::fsck::Report {
    grids3::janitor::fsck::run(&gw.state.store, repair)
        .await
        .unwrap()
}

/// Starts a PUT (or UploadPart) whose body sends `sent` bytes of a declared `total` and then
/// stalls; the request task is returned (it ends when the server goes away).
fn stalled_put(gw: &Gateway, path_and_query: &str, total: usize, sent: usize) {
    let mut raw = Raw::new("PUT", path_and_query);
    raw.payload_hash = Some("UNSIGNED-PAYLOAD".into());
    raw.headers
        .push(("content-length".into(), total.to_string()));
    let headers = raw.signed_headers(gw);
    let url = format!("{}{}", gw.endpoint(), path_and_query);
    let data = random_bytes(sent, 77);
    tokio::spawn(async move {
        let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
            data.chunks(64 * 1024).map(|c| Ok(c.to_vec())).collect();
        let body = futures::stream::iter(pieces).chain(futures::stream::pending());
        let mut rb = reqwest::Client::new().put(url);
        for (k, v) in headers {
            if k != "host" {
                rb = rb.header(k, v);
            }
        }
        if let Ok(r) = rb.body(reqwest::Body::wrap_stream(body)).send().await {
            println!(
                "stalled request answered {}: {}",
                r.status(),
                r.text().await.unwrap_or_default()
            );
        }
    });
}

#[test]
fn revision_order_and_leases_use_the_database_clock() {
    support::run(async {
        let a = support::gateway("clock").await;
        let lag = support::gateway_with(a.db.name(), |c| c.test_clock_skew_ms = -600_000).await;
        let lead = support::gateway_with(a.db.name(), |c| c.test_clock_skew_ms = 600_000).await;
        let (s3a, s3lag, s3lead) = (a.sdk(), lag.sdk(), lead.sdk());
        s3a.create_bucket().bucket("clk").send().await.unwrap();
        put(&s3a, "clk", "k", b"v1".to_vec()).await;
        // An overwrite made through an instance whose clock runs 10 minutes behind wins ...
        put(&s3lag, "clk", "k", b"v2".to_vec()).await;
        assert_eq!(get_bytes(&s3a, "clk", "k").await.unwrap(), b"v2");
        // ... and is stamped with the database's time, not its own.
        let head = s3a
            .head_object()
            .bucket("clk")
            .key("k")
            .send()
            .await
            .unwrap();
        let stamped = head.last_modified().unwrap().secs();
        let now = chrono::Utc::now().timestamp();
        assert!(
            (stamped - now).abs() < 120,
            "Last-Modified {stamped} vs now {now}"
        );
        put(&s3lead, "clk", "k", b"v3".to_vec()).await;
        put(&s3a, "clk", "k", b"v4".to_vec()).await;
        assert_eq!(get_bytes(&s3lag, "clk", "k").await.unwrap(), b"v4");
        assert!(
            eventually(10, || async { a.file_count("clk").await == 1 }).await,
            "older revisions reclaimed"
        );

        // A reader on the normal instance keeps its chunks while the instance 10 minutes
        // ahead deletes the key and runs its janitor (every second) meanwhile.
        let data = random_bytes(12 * MIB, 3);
        put(&s3a, "clk", "big", data.clone()).await;
        let got = s3a
            .get_object()
            .bucket("clk")
            .key("big")
            .send()
            .await
            .unwrap();
        let mut body = got.body;
        let mut received = body.next().await.unwrap().unwrap().to_vec();
        s3lead
            .delete_object()
            .bucket("clk")
            .key("big")
            .send()
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_secs(3)).await;
        while let Some(piece) = body.next().await {
            received.extend_from_slice(&piece.unwrap());
        }
        assert!(received == data, "the stream was not cut short");
        drop(body);
        assert!(eventually(15, || async { a.chunk_count("clk").await == 1 }).await);
    });
}

async fn create_upload(s3: &aws_sdk_s3::Client, bucket: &str, key: &str) -> String {
    s3.create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned()
}

async fn upload_part(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    id: &str,
    n: i32,
    data: Vec<u8>,
) -> CompletedPart {
    let r = s3
        .upload_part()
        .bucket(bucket)
        .key(key)
        .upload_id(id)
        .part_number(n)
        .body(ByteStream::from(data))
        .send()
        .await
        .unwrap();
    CompletedPart::builder()
        .part_number(n)
        .e_tag(r.e_tag().unwrap())
        .build()
}

fn completed(parts: &[CompletedPart]) -> CompletedMultipartUpload {
    CompletedMultipartUpload::builder()
        .set_parts(Some(parts.to_vec()))
        .build()
}

#[test]
fn multipart_complete_is_serialised_verified_and_repeatable() {
    support::run(async {
        let a = support::gateway("mprace").await;
        let b = support::gateway_on(a.db.name()).await;
        let (s3a, s3b) = (a.sdk(), b.sdk());
        s3a.create_bucket().bucket("mpr").send().await.unwrap();
        let data = random_bytes(10 * MIB + 12345, 9);
        let id = create_upload(&s3a, "mpr", "obj").await;
        let parts = vec![
            upload_part(&s3a, "mpr", "obj", &id, 1, data[..5 * MIB].to_vec()).await,
            upload_part(&s3b, "mpr", "obj", &id, 2, data[5 * MIB..].to_vec()).await,
        ];
        // Two Completes at once through two instances: both answer 200 with the same ETag.
        let (r1, r2) = tokio::join!(
            s3a.complete_multipart_upload()
                .bucket("mpr")
                .key("obj")
                .upload_id(&id)
                .multipart_upload(completed(&parts))
                .send(),
            s3b.complete_multipart_upload()
                .bucket("mpr")
                .key("obj")
                .upload_id(&id)
                .multipart_upload(completed(&parts))
                .send(),
        );
        let (r1, r2) = (r1.unwrap(), r2.unwrap());
        assert_eq!(r1.e_tag(), r2.e_tag());
        // Completing again later: the same answer.
        let r3 = s3a
            .complete_multipart_upload()
            .bucket("mpr")
            .key("obj")
            .upload_id(&id)
            .multipart_upload(completed(&parts))
            .send()
            .await
            .unwrap();
        assert_eq!(r3.e_tag(), r1.e_tag());
        assert!(get_bytes(&s3a, "mpr", "obj").await.unwrap() == data);
        assert_eq!(a.chunk_count("mpr").await, data.len().div_ceil(MIB) as u64);
        // With other parts it is not the same request: NoSuchUpload.
        let e = s3a
            .complete_multipart_upload()
            .bucket("mpr")
            .key("obj")
            .upload_id(&id)
            .multipart_upload(completed(&parts[..1]))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NoSuchUpload"));
        // A completed upload takes no parts and cannot be aborted.
        let e = s3a
            .upload_part()
            .bucket("mpr")
            .key("obj")
            .upload_id(&id)
            .part_number(3)
            .body(ByteStream::from_static(b"late"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NoSuchUpload"));
        let e = s3a
            .abort_multipart_upload()
            .bucket("mpr")
            .key("obj")
            .upload_id(&id)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("NoSuchUpload"));
        assert_eq!(a.chunk_count("mpr").await, data.len().div_ceil(MIB) as u64);

        // A part whose chunks went missing is never published short.
        let id = create_upload(&s3a, "mpr", "short").await;
        let parts = vec![
            upload_part(&s3a, "mpr", "short", &id, 1, random_bytes(5 * MIB, 1)).await,
            upload_part(&s3a, "mpr", "short", &id, 2, random_bytes(MIB, 2)).await,
        ];
        let recs = a.state.store.meta().list_parts(&id, 0, 0).await.unwrap();
        a.db.collection::<Document>("mpr.chunks")
            .delete_one(doc! {"files_id": recs[0].file_id, "n": recs[0].base + 2})
            .await
            .unwrap();
        let e = s3a
            .complete_multipart_upload()
            .bucket("mpr")
            .key("short")
            .upload_id(&id)
            .multipart_upload(completed(&parts))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(500));
        assert!(get_bytes(&s3a, "mpr", "short").await.is_none());
        // The upload can still be aborted, and leaves nothing behind.
        s3a.abort_multipart_upload()
            .bucket("mpr")
            .key("short")
            .upload_id(&id)
            .send()
            .await
            .unwrap();
        assert_eq!(a.chunk_count("mpr").await, data.len().div_ceil(MIB) as u64);
        assert_eq!(fsck(&a, false).await.problems(), 0);
    });
}

#[test]
fn a_failed_publish_does_not_leave_its_key_locked() {
    support::run(async {
        let gw = support::gateway("unlock").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("unl").send().await.unwrap();
        put(&s3, "unl", "k", b"one".to_vec()).await;
        for _ in 0..3 {
            let e = s3
                .put_object()
                .bucket("unl")
                .key("k")
                .if_none_match("*")
                .body(ByteStream::from_static(b"two"))
                .send()
                .await
                .unwrap_err();
            assert_eq!(e.code(), Some("PreconditionFailed"));
        }
        let t = Instant::now();
        put(&s3, "unl", "k", b"three".to_vec()).await;
        // No lock to wait for: well under one lease (10 s), with room for a loaded machine.
        assert!(t.elapsed() < Duration::from_secs(6), "{:?}", t.elapsed());
        let locks = gw
            .db
            .collection::<Document>("__keylocks")
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!(locks, 0);
        // A lock left by an instance that died (no renewals) blocks a write that takes it (a
        // conditional one: unconditional writes take none) for at most one lease.
        let clock = gw.state.store.meta().clock().clone();
        // Timed from before the lock's expiry is computed, so a slow insert cannot eat into
        // the wait the assertion expects.
        let t = Instant::now();
        gw.db
            .collection::<Document>("__keylocks")
            .insert_one(doc! {"_id": "unl\u{0}k", "token": ObjectId::new(), "expires": clock.after(Duration::from_secs(3))})
            .await
            .unwrap();
        s3.put_object()
            .bucket("unl")
            .key("k")
            .if_none_match("\"not-this\"")
            .body(ByteStream::from_static(b"four"))
            .send()
            .await
            .unwrap();
        let waited = t.elapsed();
        assert!(
            waited >= Duration::from_secs(2) && waited < Duration::from_secs(8),
            "waited {waited:?} for the dead holder's lock"
        );
        assert_eq!(get_bytes(&s3, "unl", "k").await.unwrap(), b"four");
    });
}

#[test]
fn fsck_reports_and_repairs_only_what_is_dead() {
    support::run(async {
        let gw = support::gateway("fsck").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("fsk").send().await.unwrap();
        let kept = random_bytes(600_000, 4);
        put(&s3, "fsk", "kept", kept.clone()).await;
        assert_eq!(fsck(&gw, false).await.problems(), 0);
        // An orphan: chunks under an id nothing references.
        let orphan = ObjectId::new();
        let chunks = gw.db.collection::<Document>("fsk.chunks");
        for n in 0..3 {
            chunks
                .insert_one(doc! {"files_id": orphan, "n": n, "data": Binary { subtype: mongodb::bson::spec::BinarySubtype::Generic, bytes: vec![1; 10] }})
                .await
                .unwrap();
        }
        // A part record whose upload is gone.
        gw.db
            .collection::<Document>("__parts")
            .insert_one(doc! {"_id": "gone:00001", "uploadId": "gone", "number": 1, "fileId": ObjectId::new(), "size": 1i64, "md5": "x", "lastModified": mongodb::bson::DateTime::now()})
            .await
            .unwrap();
        // A live upload in progress (registered, chunks written, not yet published).
        let mut live = gw
            .state
            .store
            .open_upload("fsk", "live", false)
            .await
            .unwrap();
        let live_data = random_bytes(3 * MIB, 5);
        live.write(&live_data).await.unwrap();
        live.flush().await.unwrap();

        let report = fsck(&gw, false).await;
        println!("{}", report.render());
        assert_eq!(report.orphan_chunks.len(), 1, "{}", report.render());
        // The command line says the same, and exits 1.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
            .arg("fsck")
            .env("MONGODB_URI", &support::db().uri)
            .env("GRIDS3_DATABASE", gw.db.name())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.contains(&format!("orphan chunks: bucket fsk file_id {orphan}")),
            "{text}"
        );
        assert_eq!(
            report.orphan_chunks[0].1,
            mongodb::bson::Bson::ObjectId(orphan)
        );
        assert_eq!(report.parts_without_upload.len(), 1);
        assert!(report.broken_files.is_empty());
        let report = fsck(&gw, true).await;
        assert_eq!(
            report.repaired.unwrap().0,
            3,
            "only the orphan's chunks are removed"
        );
        // The live upload was left intact: it publishes whole.
        gw.state
            .store
            .publish_if(
                "fsk",
                live,
                grids3::storage::objects::ObjectMeta::default(),
                &grids3::storage::objects::WriteCondition::Always,
            )
            .await
            .unwrap()
            .unwrap();
        assert!(get_bytes(&s3, "fsk", "live").await.unwrap() == live_data);
        assert!(get_bytes(&s3, "fsk", "kept").await.unwrap() == kept);
        assert_eq!(fsck(&gw, false).await.problems(), 0);
        // A published file that lost a chunk is reported as broken.
        let id = gw
            .db
            .collection::<Document>("fsk.files")
            .find_one(doc! {"filename": "kept"})
            .await
            .unwrap()
            .unwrap()
            .get_object_id("_id")
            .unwrap();
        chunks
            .delete_one(doc! {"files_id": id, "n": 1})
            .await
            .unwrap();
        let report = fsck(&gw, true).await;
        assert_eq!(report.broken_files.len(), 1, "{}", report.render());
    });
}

#[test]
fn sigkill_mid_put_part_complete_and_delete_leaves_nothing_half_done() {
    support::run(async {
        let a = support::gateway("crash").await;
        let s3 = a.sdk();
        s3.create_bucket().bucket("crash").send().await.unwrap();
        let env = [("GRIDS3_WRITE_LEASE", "3")];
        let v1 = random_bytes(300_000, 1);
        put(&s3, "crash", "k", v1.clone()).await;
        let base_chunks = a.chunk_count("crash").await;

        // 1. Mid PUT: 8 MiB of a declared 32 MiB sent, then SIGKILL.
        let mut p = Process::start(a.db.name(), &env).await;
        let g = p.as_gateway(&a);
        stalled_put(&g, "/crash/k", 32 * MIB, 8 * MIB);
        assert!(
            eventually(20, || async {
                a.chunk_count("crash").await > base_chunks + 8
            })
            .await,
            "the PUT wrote chunks"
        );
        p.kill();
        assert!(
            get_bytes(&s3, "crash", "k").await.unwrap() == v1,
            "the previous object is intact"
        );
        let _p = Process::start(a.db.name(), &env).await;
        // The reap takes a lease's expiry (3 s) and a janitor pass (every 5 s) of the new
        // process; the rest of the window is for a database loaded by the tests running
        // beside this one (a full-suite run left 19 chunks after 20 s, none when run alone).
        assert!(
            eventually(60, || async { a.chunk_count("crash").await == base_chunks }).await,
            "the dead write's chunks are reaped: {} left",
            a.chunk_count("crash").await
        );
        drop(_p);

        // 2. Mid UploadPart.
        let id = create_upload(&s3, "crash", "mpr").await;
        let part1 = upload_part(&s3, "crash", "mpr", &id, 1, random_bytes(5 * MIB, 2)).await;
        let with_part1 = a.chunk_count("crash").await;
        let mut p = Process::start(a.db.name(), &env).await;
        let g = p.as_gateway(&a);
        stalled_put(
            &g,
            &format!("/crash/mpr?partNumber=2&uploadId={id}"),
            16 * MIB,
            6 * MIB,
        );
        assert!(
            eventually(20, || async {
                a.chunk_count("crash").await >= with_part1 + 4
            })
            .await
        );
        p.kill();
        // The dead attempt's chunks are staged under the upload's file id, below n = 0: the
        // upload record owns them, and Complete (below) or Abort deletes them.
        let staged = || async {
            a.db.collection::<Document>("crash.chunks")
                .count_documents(doc! {"n": {"$lt": 0}})
                .await
                .unwrap()
        };
        assert!(
            staged().await >= 4 + 5,
            "part 1 and the dead attempt are staged"
        );
        // The upload is still usable.
        let tail = random_bytes(MIB + 7, 3);
        let part2 = upload_part(&s3, "crash", "mpr", &id, 2, tail.clone()).await;

        // 3. Mid Complete (a misaligned part makes it rewrite, so it takes a while), then the
        // client retries through another instance.
        let mut p = Process::start(a.db.name(), &env).await;
        let g = p.as_gateway(&a);
        let gs3 = g.sdk();
        let parts = vec![part1, part2];
        let body = completed(&parts);
        let (idc, body_c) = (id.clone(), body.clone());
        let racing = tokio::spawn(async move {
            let _ = gs3
                .complete_multipart_upload()
                .bucket("crash")
                .key("mpr")
                .upload_id(&idc)
                .multipart_upload(body_c)
                .send()
                .await;
        });
        tokio::time::sleep(Duration::from_millis(150)).await;
        p.kill();
        let _ = racing.await;
        s3.complete_multipart_upload()
            .bucket("crash")
            .key("mpr")
            .upload_id(&id)
            .multipart_upload(body)
            .send()
            .await
            .unwrap();
        let got = get_bytes(&s3, "crash", "mpr").await.unwrap();
        assert_eq!(got.len(), 5 * MIB + tail.len());
        assert!(got[5 * MIB..] == tail[..]);
        assert_eq!(staged().await, 0, "Complete deleted every staged chunk");
        assert_eq!(fsck(&a, false).await.problems(), 0);

        // 4. Mid DeleteObjects: every key is either whole or gone.
        let mut keys = Vec::new();
        for i in 0..60 {
            let k = format!("d/{i:03}");
            put(&s3, "crash", &k, random_bytes(1000 + i, i as u64)).await;
            keys.push(k);
        }
        let mut p = Process::start(a.db.name(), &env).await;
        let gs3 = p.as_gateway(&a).sdk();
        let objects: Vec<ObjectIdentifier> = keys
            .iter()
            .map(|k| ObjectIdentifier::builder().key(k).build().unwrap())
            .collect();
        let del = tokio::spawn(async move {
            let _ = gs3
                .delete_objects()
                .bucket("crash")
                .delete(
                    Delete::builder()
                        .set_objects(Some(objects))
                        .build()
                        .unwrap(),
                )
                .send()
                .await;
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        p.kill();
        let _ = del.await;
        for (i, k) in keys.iter().enumerate() {
            if let Some(b) = get_bytes(&s3, "crash", k).await {
                assert!(b == random_bytes(1000 + i, i as u64), "{k} is whole");
            }
        }
        // Once the janitor's grace period has passed, fsck finds nothing.
        assert!(
            eventually(20, || async { fsck(&a, false).await.problems() == 0 }).await,
            "{}",
            fsck(&a, false).await.render()
        );
    });
}

#[test]
fn outage_answers_503_fast_and_recovers_without_losing_acknowledged_writes() {
    support::run(async {
        let dir = tempfile::tempdir().unwrap();
        let port = grids3::devdb::free_port().unwrap();
        let storage = grids3::devdb::Storage::Dir(dir.path().to_owned());
        let db = grids3::devdb::LocalDb::start_server(port, storage.clone())
            .await
            .unwrap();
        let gw = support::gateway_on_uri(&db.uri, "outage", |c| c.request_timeout = 2).await;
        let s3 = gw.sdk_bounded(30);
        s3.create_bucket().bucket("out").send().await.unwrap();
        let data = random_bytes(700_000, 8);
        put(&s3, "out", "acked", data.clone()).await;
        // A key this gateway has not looked up yet: its first request must reach the database.
        let (ak2, sk2) = crate::authz::new_key(&gw, "outage-second").await;

        // A database that stops answering (SIGSTOP: connections stay open, nothing replies):
        // requests answer 503 after the request timeout instead of hanging.
        let pid = db.server_pid().unwrap().to_string();
        // Whatever happens from here on, the database is let go on again (a stopped process
        // does not die of the SIGTERM that ends it, and the test would hang in its drop).
        struct Resume(String);
        impl Drop for Resume {
            fn drop(&mut self) {
                let _ = std::process::Command::new("kill")
                    .args(["-CONT", &self.0])
                    .status();
            }
        }
        let _resume = Resume(pid.clone());
        assert!(std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success());
        // A stop is delivered asynchronously: wait until the kernel shows the process stopped.
        let stopped = eventually(5, || async {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .map(|r| r.trim_start().starts_with('T'))
                })
                .unwrap_or(false)
        })
        .await;
        assert!(stopped, "the database process did not stop");
        // (Bounded here too, so that a regression fails the test instead of hanging it.)
        let bounded = Duration::from_secs(10);
        let t = Instant::now();
        let r = tokio::time::timeout(bounded, Raw::new("HEAD", "/out/acked").send(&gw))
            .await
            .expect("HEAD during the outage hung");
        assert_eq!(
            r.status().as_u16(),
            503,
            "HEAD while the database is stopped"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        // Also when the key's lookup is what waits on the database (a key not in the cache).
        let t = Instant::now();
        let mut raw = Raw::new("HEAD", "/out/acked");
        (raw.access_key, raw.secret) = (&ak2, &sk2);
        let r = tokio::time::timeout(bounded, raw.send(&gw)).await;
        // Let the database go on whatever happened, so that nothing is left stopped.
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap();
        let r = r.expect("a request signed by an uncached key hung during the outage");
        assert_eq!(
            r.status().as_u16(),
            503,
            "an uncached key during the outage"
        );
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap();
        assert!(
            eventually(20, || async {
                s3.head_object()
                    .bucket("out")
                    .key("acked")
                    .send()
                    .await
                    .is_ok()
            })
            .await
        );

        // Writers keep going through the outage; every PUT that was acknowledged must survive.
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut writers = Vec::new();
        for w in 0..4u64 {
            let (s3, stop) = (gw.sdk_bounded(30), stop.clone());
            writers.push(tokio::spawn(async move {
                let mut acked = Vec::new();
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let key = format!("load/{w}/{i}");
                    let body = random_bytes(20_000 + i as usize, w * 1000 + i);
                    let r = s3
                        .put_object()
                        .bucket("out")
                        .key(&key)
                        .body(ByteStream::from(body))
                        .send()
                        .await;
                    if r.is_ok() {
                        acked.push((key, w * 1000 + i, 20_000 + i as usize));
                    }
                    i += 1;
                }
                acked
            }));
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;

        // SIGKILL the database (no clean shutdown).
        let pid = db.server_pid().unwrap();
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        drop(db);
        tokio::time::sleep(Duration::from_millis(300)).await;
        for (method, path) in [("GET", "/out/acked"), ("PUT", "/out/new")] {
            let mut raw = Raw::new(method, path);
            raw.body = b"x".to_vec();
            let t = Instant::now();
            let r = raw.send(&gw).await;
            let took = t.elapsed();
            assert_eq!(r.status().as_u16(), 503, "{method} during the outage");
            assert!(r.headers().contains_key("retry-after"));
            assert!(took < Duration::from_secs(5), "{method} took {took:?}");
        }
        let ready = reqwest::get(format!("{}/_grids3/ready", gw.endpoint()))
            .await
            .unwrap();
        assert_eq!(ready.status().as_u16(), 503);

        // The database comes back on the same port and data: the gateway recovers alone.
        let _db = grids3::devdb::LocalDb::start_server(port, storage)
            .await
            .unwrap();
        assert!(
            eventually(30, || async {
                s3.head_bucket().bucket("out").send().await.is_ok()
            })
            .await
        );
        assert!(get_bytes(&s3, "out", "acked").await.unwrap() == data);
        put(&s3, "out", "after", b"ok".to_vec()).await;
        assert_eq!(get_bytes(&s3, "out", "after").await.unwrap(), b"ok");
        tokio::time::sleep(Duration::from_millis(1000)).await;
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut total = 0;
        for w in writers {
            for (key, seed, len) in w.await.unwrap() {
                let got = get_bytes(&s3, "out", &key).await;
                assert!(
                    got == Some(random_bytes(len, seed)),
                    "acknowledged {key} survived"
                );
                total += 1;
            }
        }
        println!("outage: {total} acknowledged PUTs under load, all intact");
        assert!(total > 10, "the writers made progress: {total}");
    });
}

#[test]
fn edge_inputs_get_aws_errors() {
    support::run(async {
        let gw = support::gateway("edge").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("edg").send().await.unwrap();
        put(&s3, "edg", "ten", b"0123456789".to_vec()).await;
        // A last byte beyond the end (u64::MAX) means "to the end".
        let mut raw = Raw::new("GET", "/edg/ten");
        raw.headers
            .push(("range".into(), "bytes=0-18446744073709551615".into()));
        let r = raw.send(&gw).await;
        assert_eq!(r.status().as_u16(), 206);
        assert_eq!(r.headers()["content-range"], "bytes 0-9/10");
        assert_eq!(r.bytes().await.unwrap().as_ref(), b"0123456789");
        // A NUL in a tag key: InvalidTag before any byte is stored.
        let mut raw = Raw::new("PUT", "/edg/tagged");
        raw.headers.push(("x-amz-tagging".into(), "a%00b=1".into()));
        raw.body = b"data".to_vec();
        let r = raw.send(&gw).await;
        assert_eq!(r.status().as_u16(), 400);
        assert_eq!(support::error_code(&r.text().await.unwrap()), "InvalidTag");
        // Keys over 1024 bytes.
        let long = "k".repeat(1025);
        let e = s3
            .put_object()
            .bucket("edg")
            .key(&long)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.code(), Some("KeyTooLongError"));
        put(&s3, "edg", &"k".repeat(1024), b"x".to_vec()).await;
        // Invalid UTF-8 after percent-decoding.
        for path in ["/edg/%FF", "/edg/%FE"] {
            let mut raw = Raw::new("PUT", path);
            raw.body = b"x".to_vec();
            let r = raw.send(&gw).await;
            assert_eq!(r.status().as_u16(), 400, "{path}");
            assert_eq!(support::error_code(&r.text().await.unwrap()), "InvalidURI");
        }
        // The admin API refuses unsigned payloads (and so presigned URLs).
        let mut raw = Raw::new("POST", "/_grids3/admin/keys");
        raw.body = br#"{"name":"x"}"#.to_vec();
        raw.payload_hash = Some("UNSIGNED-PAYLOAD".into());
        assert_eq!(raw.send(&gw).await.status().as_u16(), 403);
        let mut raw = Raw::new("POST", "/_grids3/admin/keys");
        raw.body = br#"{"name":"x"}"#.to_vec();
        assert_eq!(
            raw.send(&gw).await.status().as_u16(),
            201,
            "a signed payload works"
        );
        assert_eq!(gw.file_count("edg").await, 2);
    });
}

#[test]
fn a_new_root_key_demotes_or_deletes_the_old_one() {
    support::run(async {
        let a = support::gateway("rotate").await;
        a.sdk().create_bucket().bucket("rot").send().await.unwrap();
        let b = support::gateway_with(a.db.name(), |c| {
            c.root_access_key = Some("newroot".into());
            c.root_secret_key = Some("newroot-secret".into());
        })
        .await;
        let old = b.sdk();
        // Demoted: an ordinary key that still owns its bucket but is no longer root.
        put(&old, "rot", "k", b"x".to_vec()).await;
        let r = Raw::new("GET", "/_grids3/admin/keys").send(&b).await;
        assert_eq!(
            r.status().as_u16(),
            403,
            "the old root key lost the admin API"
        );
        let new = b.sdk_as("newroot", "newroot-secret");
        new.list_buckets().send().await.unwrap();
        let c = support::gateway_with(a.db.name(), |c| {
            c.root_access_key = Some("newroot".into());
            c.root_secret_key = Some("newroot-secret".into());
            c.delete_old_root_keys = true;
        })
        .await;
        let e = c.sdk().list_buckets().send().await.unwrap_err();
        assert_eq!(e.code(), Some("InvalidAccessKeyId"));
    });
}

#[test]
fn a_deleted_bucket_is_not_resurrected_by_a_late_write() {
    support::run(async {
        let a = support::gateway("tomb").await;
        let b = support::gateway_on(a.db.name()).await;
        let s3 = a.sdk();
        s3.create_bucket().bucket("gone").send().await.unwrap();
        // Instance B caches its handle of the bucket.
        put(&b.sdk(), "gone", "k", b"x".to_vec()).await;
        s3.delete_object()
            .bucket("gone")
            .key("k")
            .send()
            .await
            .unwrap();
        s3.delete_bucket().bucket("gone").send().await.unwrap();
        // A write that raced the deletion lands in the dropped collections afterwards.
        let fs = grids3::storage::gridfs::GridFsBucket::new(
            &a.db,
            grids3::storage::gridfs::BucketOptions {
                bucket_name: "gone".into(),
                ..Default::default()
            },
        );
        fs.upload_from_stream(
            "late",
            futures::stream::iter([Ok::<_, std::io::Error>(b"late".to_vec())]),
            Default::default(),
        )
        .await
        .unwrap();
        // A restart does not adopt it as a new bucket owned by root.
        assert!(a.state.adopt_existing_buckets().await.unwrap().is_empty());
        let e = s3.head_bucket().bucket("gone").send().await.unwrap_err();
        assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404));
        // The name can be created again, through the instance with the stale handle, and the
        // new bucket gets its indexes.
        b.sdk().create_bucket().bucket("gone").send().await.unwrap();
        let indexes =
            a.db.collection::<Document>("gone.chunks")
                .list_index_names()
                .await
                .unwrap();
        assert!(indexes.len() >= 2, "{indexes:?}");
        // (Instance A learns of the new bucket within a second: bucket lookups are cached.)
        tokio::time::sleep(grids3::storage::meta::BUCKET_CACHE_TTL).await;
        let listed = s3.list_objects_v2().bucket("gone").send().await.unwrap();
        assert_eq!(listed.key_count(), Some(0), "the new bucket starts empty");
    });
}

#[test]
fn slow_clients_are_cut_off_and_connections_are_capped() {
    support::run(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let a = support::gateway("slowloris").await;
        let p = Process::start(
            a.db.name(),
            &[
                ("GRIDS3_HEADER_TIMEOUT", "2"),
                ("GRIDS3_MAX_CONNECTIONS", "2"),
            ],
        )
        .await;
        // Two clients that never finish their request heads take both connection slots.
        let mut slow = Vec::new();
        for _ in 0..2 {
            let mut s = tokio::net::TcpStream::connect(p.addr).await.unwrap();
            s.write_all(b"GET /_grids3/health HTTP/1.1\r\nHost: x\r\n")
                .await
                .unwrap();
            slow.push(s);
        }
        // Timed from the slow clients' last bytes, not from after the pause below, which a
        // loaded machine may stretch.
        let t = Instant::now();
        tokio::time::sleep(Duration::from_millis(200)).await;
        // A third client waits for a slot: the slow connection idle the longest is shed for
        // it once it has been idle for 1 s (before, the 2 s header timeout freed one).
        let r = reqwest::get(format!("http://{}/_grids3/health", p.addr))
            .await
            .unwrap();
        assert!(r.status().is_success());
        let waited = t.elapsed();
        assert!(
            // 700 ms from before the 200 ms pause: the bound this test had from after it.
            waited >= Duration::from_millis(700) && waited < Duration::from_secs(5),
            "waited {waited:?}"
        );
        // The slow clients were disconnected.
        for mut s in slow {
            let mut buf = [0u8; 256];
            let n = tokio::time::timeout(Duration::from_secs(5), s.read(&mut buf))
                .await
                .expect("closed within the timeout")
                .unwrap_or(0);
            let text = String::from_utf8_lossy(&buf[..n]);
            assert!(n == 0 || text.contains("408"), "{text}");
        }
    });
}

#[test]
fn local_db_keeps_acknowledged_writes_when_the_database_is_killed() {
    support::run(async {
        // `grids3 --local-db` in a project directory of its own (the venv is shared).
        let dir = tempfile::tempdir().unwrap();
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        support::python();
        std::os::unix::fs::symlink(root.join(".venv"), dir.path().join(".venv")).unwrap();
        std::fs::copy(
            root.join("requirements.txt"),
            dir.path().join("requirements.txt"),
        )
        .unwrap();
        let start = || {
            let port = grids3::devdb::free_port().unwrap();
            let child = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
                .args(["--local-db", "--listen", &format!("127.0.0.1:{port}")])
                .env_remove("MONGODB_URI")
                .env("GRIDS3_PROJECT_DIR", dir.path())
                .env("GRIDS3_ROOT_ACCESS_KEY", support::AK)
                .env("GRIDS3_ROOT_SECRET_KEY", support::SK)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            (
                Process {
                    child,
                    addr: format!("127.0.0.1:{port}").parse().unwrap(),
                },
                port,
            )
        };
        let wait_ready = |addr: std::net::SocketAddr| async move {
            eventually(60, || async move {
                reqwest::get(format!("http://{addr}/_grids3/ready"))
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await
        };
        let (mut p, _) = start();
        assert!(wait_ready(p.addr).await, "grids3 --local-db started");
        let peer = support::gateway("localdb").await;
        let g = p.as_gateway(&peer);
        let s3 = g.sdk();
        s3.create_bucket().bucket("dur").send().await.unwrap();
        let data = random_bytes(400_000, 6);
        put(&s3, "dur", "kept", data.clone()).await;
        // Which database did it start? Its first line names the URI.
        let mut out = String::new();
        {
            use std::io::BufRead;
            let stdout = p.child.stdout.take().unwrap();
            let mut lines = std::io::BufReader::new(stdout).lines();
            for l in lines.by_ref().take(3).map_while(Result::ok) {
                out.push_str(&l);
                out.push('\n');
            }
        }
        assert!(
            !out.contains(support::SK),
            "a secret from the environment is never printed: {out}"
        );
        let dbport = out
            .split("mongodb://127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split(['/', '?']).next())
            .unwrap_or_else(|| panic!("no database URI in {out}"))
            .to_owned();
        // SIGKILL the database, then the gateway, and start `grids3 --local-db` again.
        let killed = std::process::Command::new("pkill")
            .args(["-9", "-f", &format!("secantus.* --port {dbport} ")])
            .status()
            .unwrap();
        assert!(killed.success(), "killed the database on port {dbport}");
        p.kill();
        let (p2, _) = start();
        assert!(wait_ready(p2.addr).await, "grids3 --local-db restarted");
        let s3 = p2.as_gateway(&peer).sdk();
        assert!(get_bytes(&s3, "dur", "kept").await.unwrap() == data);
    });
}

#[test]
fn startup_waits_for_the_database() {
    support::run(async {
        let dbport = grids3::devdb::free_port().unwrap();
        let port = grids3::devdb::free_port().unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
            .env(
                "MONGODB_URI",
                format!("mongodb://127.0.0.1:{dbport}/?directConnection=true"),
            )
            .env("GRIDS3_LISTEN", format!("127.0.0.1:{port}"))
            .env("GRIDS3_DATABASE", "startup")
            .env("GRIDS3_ROOT_ACCESS_KEY", support::AK)
            .env("GRIDS3_ROOT_SECRET_KEY", support::SK)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(child.try_wait().unwrap().is_none(), "it kept waiting");
        let p = Process {
            child,
            addr: format!("127.0.0.1:{port}").parse().unwrap(),
        };
        let _db = grids3::devdb::LocalDb::start_server(dbport, grids3::devdb::Storage::Ephemeral)
            .await
            .unwrap();
        assert!(
            eventually(40, || async {
                reqwest::get(format!("http://{}/_grids3/ready", p.addr))
                    .await
                    .is_ok_and(|r| r.status().is_success())
            })
            .await,
            "ready once the database is up"
        );
        // The gateway goes first: the database's graceful shutdown waits on its clients.
        drop(p);
    });
}

#[test]
fn delete_objects_takes_a_fixed_number_of_round_trips() {
    support::run(async {
        use std::sync::atomic::Ordering;
        // Cache refreshes (bucket, authorization) are counted apart: one falls inside the count
        // or not depending on when its second ran out. So are chunk reads: the held GET below
        // reads its next chunks when its client's buffer takes them (a full-suite run caught
        // one inside the count), and DeleteObjects reads none.
        let (gw, counters) = support::gateway_counting_split("delrt", |_| {}).await;
        let commands = || {
            counters.all.load(Ordering::SeqCst)
                - counters.lookups.load(Ordering::SeqCst)
                - counters.chunk_reads.load(Ordering::SeqCst)
        };
        let s3 = gw.sdk();
        s3.create_bucket().bucket("del").send().await.unwrap();
        // AWS's most per request: 1,000 keys (999 here, and one missing).
        let keys: Vec<String> = (0..999).map(|i| format!("k{i:04}")).collect();
        let objects = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), vec![b'x'; 100 + i]))
            .collect();
        support::put_many(&s3, "del", objects).await;
        // A reader streaming a large one holds it: its chunks must wait for the janitor.
        let big = random_bytes(12 * MIB, 4);
        put(&s3, "del", "k0007", big.clone()).await;
        let big_chunks = gw.chunk_count("del").await - 998;
        let held = s3
            .get_object()
            .bucket("del")
            .key("k0007")
            .send()
            .await
            .unwrap();
        let mut asked = keys.clone();
        asked.push("missing".to_owned());
        // Nothing in the background while counting (see `support::quiesce`).
        support::quiesce(&counters.all).await;
        let before = commands();
        let logged = counters.log.lock().unwrap().len();
        let r = support::delete_objects(&s3, "del", &asked).await;
        let used = commands() - before;
        assert_eq!(r.deleted().len(), 1000);
        println!("DeleteObjects of 1,000 keys: {used} MongoDB commands");
        // 5 finds of names (slices of 200), reclaim records, files delete, lease find, chunks
        // delete, records delete.
        let sent = counters.log.lock().unwrap()[logged..].to_vec();
        assert!(
            used <= 10,
            "DeleteObjects of 1,000 keys took {used} round trips: {sent:?}"
        );
        assert_eq!(gw.file_count("del").await, 0);
        assert_eq!(
            gw.chunk_count("del").await,
            big_chunks,
            "the streamed object's chunks wait"
        );
        let body = held.body.collect().await.unwrap().into_bytes();
        assert!(body.as_ref() == big.as_slice(), "the reader got every byte");
    });
}

#[test]
fn a_small_get_takes_one_round_trip() {
    support::run(async {
        use std::sync::atomic::Ordering;
        let (
            gw,
            support::Counters {
                all,
                lookups,
                background,
                ..
            },
        ) = support::gateway_counting_split("getrt", |_| {}).await;
        // Bucket lookups are counted apart: the bucket cache's refresh falls inside a count or
        // not depending on when its second ran out (more often on a loaded machine).
        let commands = || all.load(Ordering::SeqCst) - lookups.load(Ordering::SeqCst);
        let s3 = gw.sdk();
        s3.create_bucket().bucket("small").send().await.unwrap();
        let data = random_bytes(4096, 1);
        // The counts hold the requests' own commands only (background tasks and amortized
        // commands are counted apart: see `support::Counters`), so one attempt tells. A first
        // PUT warms the bucket and authorization caches.
        put(&s3, "small", "warm", data.clone()).await;
        support::quiesce(&background).await;
        let before = commands();
        let queued_before = background.load(Ordering::SeqCst);
        put(&s3, "small", "k0", data.clone()).await;
        let put_commands = commands() - before;
        support::quiesce(&background).await;
        let put_background = background.load(Ordering::SeqCst) - queued_before;
        let put_total = put_commands + put_background;
        // This GET warms the bucket cache again (it lasts a second, less than the quiesce).
        assert_eq!(get_bytes(&s3, "small", "k0").await.unwrap(), data);
        let before = commands();
        assert_eq!(get_bytes(&s3, "small", "k0").await.unwrap(), data);
        let get_commands = commands() - before;
        println!(
            "4 KiB object: PUT of a new key {put_commands} MongoDB commands before its answer \
             ({put_total} with the background work it queued), GET {get_commands}"
        );
        // A PUT of a new key: revision lookup, then the chunk and the files document in one
        // ordered `bulkWrite` (no key lock for an unconditional write; its file id comes from
        // the process's registered pool). In the background, shared by every write of the
        // same 100 ms: one settling query for the bucket, and (after a second idle here) the
        // pool's retirement.
        assert_eq!(
            put_commands, 2,
            "a small PUT of a new key took {put_commands} round trips"
        );
        assert!(
            put_background <= 2,
            "a small PUT queued {put_background} background commands"
        );
        // One query: a `find` of the files document, the chunk kept from the PUT (see
        // `small_cache.rs`, which also counts the `$lookup` join the GET is with the cache off).
        assert_eq!(
            get_commands, 1,
            "a small GET took {get_commands} round trips"
        );
        // A Range read of a small object too.
        let before = commands();
        let r = s3
            .get_object()
            .bucket("small")
            .key("k0")
            .range("bytes=10-19")
            .send()
            .await
            .unwrap();
        assert!(r.body.collect().await.unwrap().into_bytes().as_ref() == &data[10..20]);
        assert_eq!(commands() - before, 1, "a small Range GET");
        // An object of two chunks: the lookup joins no chunk (a server that reads every chunk
        // of the file for the join would read them all), and the read is one more query.
        let two = random_bytes(256 * 1024 + 1, 2);
        put(&s3, "small", "two-chunks", two.clone()).await;
        assert_eq!(get_bytes(&s3, "small", "two-chunks").await.unwrap(), two);
        let before = commands();
        assert_eq!(get_bytes(&s3, "small", "two-chunks").await.unwrap(), two);
        assert_eq!(commands() - before, 2, "a GET of a two-chunk object");
    });
}

#[test]
fn multipart_completion_takes_one_round_trip_per_part() {
    support::run(async {
        use std::sync::atomic::Ordering;
        // The request's own commands: cache refreshes (`lookups`), which land in one count or
        // another depending on when a cache's second ran out, are left out.
        let (gw, counters) = support::gateway_counting_split("mprt", |_| {}).await;
        let own = || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mprt").send().await.unwrap();
        let mut counts = Vec::new();
        // Each size twice, and the lesser count kept: something else on a loaded machine (a
        // retried command, a cache's second running out) only ever adds to a count, and one
        // CI-like run on a busy machine counted 11 for ten more parts.
        for (key, n) in [
            ("two", 2),
            ("two-again", 2),
            ("twelve", 12),
            ("twelve-again", 12),
        ] {
            let id = create_upload(&s3, "mprt", key).await;
            let mut parts = Vec::new();
            for i in 1..=n {
                let size = if i < n { 5 * MIB } else { 1000 };
                parts.push(
                    upload_part(&s3, "mprt", key, &id, i, random_bytes(size, i as u64)).await,
                );
            }
            support::quiesce(&counters.all).await;
            let before = own();
            s3.complete_multipart_upload()
                .bucket("mprt")
                .key(key)
                .upload_id(&id)
                .multipart_upload(completed(&parts))
                .send()
                .await
                .unwrap();
            counts.push(own() - before);
            let got = get_bytes(&s3, "mprt", key).await.unwrap();
            assert_eq!(got.len(), (n as usize - 1) * 5 * MIB + 1000);
        }
        let counts = [counts[0].min(counts[1]), counts[2].min(counts[3])];
        println!(
            "CompleteMultipartUpload: 2 parts {} MongoDB commands, 12 parts {}",
            counts[0], counts[1]
        );
        // One round trip per part (its renumbering `$inc`) and a fixed number besides.
        // `GRIDS3_TEST_PRINT_COMMANDS=1` lists them.
        assert!(
            counts[1] - counts[0] <= 10,
            "ten more parts took {} more round trips",
            counts[1] - counts[0]
        );
    });
}

/// Upgrading over a database an older grids3 used: an index it made under a name the
/// metastore now gives other keys (the registrations' `bucket` index was `{bucket, fileId}`)
/// used to keep the gateway from opening the metastore at all (IndexKeySpecsConflict, retried
/// forever). It is replaced, and the gateway serves.
#[test]
fn an_older_index_under_the_same_name_is_replaced() {
    use futures::TryStreamExt;
    support::run(async {
        let db = support::fresh_db("oldindex").await;
        let writes = db.collection::<Document>("__writes");
        writes
            .create_index(
                mongodb::IndexModel::builder()
                    .keys(doc! {"bucket": 1, "fileId": 1})
                    .options(
                        mongodb::options::IndexOptions::builder()
                            .name("bucket".to_owned())
                            .build(),
                    )
                    .build(),
            )
            .await
            .unwrap();
        let gw = support::gateway_on(db.name()).await;
        let indexes: Vec<mongodb::IndexModel> = writes
            .list_indexes()
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let bucket = indexes
            .iter()
            .find(|i| i.options.as_ref().and_then(|o| o.name.as_deref()) == Some("bucket"))
            .expect("the bucket index");
        assert_eq!(bucket.keys, doc! {"bucket": 1}, "replaced by today's keys");
        let s3 = gw.sdk();
        s3.create_bucket().bucket("upgraded").send().await.unwrap();
        s3.put_object()
            .bucket("upgraded")
            .key("k")
            .body(ByteStream::from_static(b"after the upgrade"))
            .send()
            .await
            .unwrap();
    });
}
