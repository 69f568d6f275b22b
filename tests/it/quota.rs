//! Bucket quotas (issue 62): limits set through MinIO's admin API, refusals that real clients
//! understand, parts, fsck, and counters that equal a recount (the races are `quota_race`'s).

use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::{doc, Document};

use crate::support::{self, random_bytes};

/// The counters of `bucket`'s usage document once the writes that answered have been
/// converted (a published write's conversion goes on after its answer; it takes
/// milliseconds): (bytes, objects, part bytes, reserved bytes, reserved objects, holds).
pub(crate) async fn counters(
    gw: &support::Gateway,
    bucket: &str,
) -> (i64, i64, i64, i64, i64, usize) {
    support::eventually(10, || async { counters_now(gw, bucket).await.5 == 0 }).await;
    counters_now(gw, bucket).await
}

/// The counters of `bucket`'s usage document as they are, holds and all.
async fn counters_now(gw: &support::Gateway, bucket: &str) -> (i64, i64, i64, i64, i64, usize) {
    let d = gw
        .db
        .collection::<Document>("__usage")
        .find_one(doc! {"_id": format!("b:{bucket}")})
        .await
        .unwrap()
        .expect("a usage document");
    let n = |k: &str| d.get_i64(k).unwrap_or(0);
    (
        n("bytes"),
        n("objects"),
        n("partBytes"),
        n("reservedBytes"),
        n("reservedObjects"),
        d.get_array("holds").map_or(0, |a| a.len()),
    )
}

/// Counters at rest equal a recount: bytes and versions, nothing reserved or held.
pub(crate) async fn assert_counted_as_recounted(gw: &support::Gateway, bucket: &str) {
    let c = counters(gw, bucket).await;
    let r = gw.state.store.recount_usage(bucket).await.unwrap();
    assert_eq!(
        c,
        (r.bytes, r.versions + r.delete_markers, r.part_bytes, 0, 0, 0),
        "counters (bytes, objects, part bytes, reserved, reserved objects, holds) against the recount {r:?}"
    );
}

/// `grids3 fsck --usage` (with `--repair` if `repair`) on the gateway's database: its exit
/// code and what it printed.
pub(crate) fn fsck_usage(gw: &support::Gateway, repair: bool) -> (Option<i32>, String) {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"));
    cmd.args(["fsck", "--usage"]);
    if repair {
        cmd.arg("--repair");
    }
    let out = cmd
        .env("MONGODB_URI", &support::db().uri)
        .env("GRIDS3_DATABASE", gw.db.name())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn minio_py_sets_the_quota_and_boto3_and_minio_py_see_the_refusal() {
    support::run(async {
        let gw = support::gateway("quotaclients").await;
        let r = support::py_result(
            "quota.py",
            vec![
                gw.endpoint(),
                support::AK.to_owned(),
                support::SK.to_owned(),
            ],
        )
        .await;
        assert_eq!(
            r["get_unset"],
            serde_json::json!({"quota": 0, "size": 0, "rate": 0, "requests": 0}),
            "{r}"
        );
        assert_eq!(r["get_set"]["quota"], 1000, "{r}");
        assert_eq!(r["get_set"]["size"], 1000, "{r}");
        assert_eq!(r["get_set"]["quotatype"], "hard", "{r}");
        assert_eq!(
            r["fill"], "ok",
            "the write that fills the limit exactly: {r}"
        );
        assert_eq!(r["one_more"][0], 400, "{r}");
        assert_eq!(r["one_more"][1], "XMinioAdminBucketQuotaExceeded", "{r}");
        let msg = r["one_more"][2].as_str().unwrap();
        assert!(
            msg.starts_with("Bucket quota exceeded")
                && msg.contains("limit 1000 bytes")
                && msg.contains("usage 1000 bytes"),
            "the message gives the limit and the usage: {msg}"
        );
        assert_eq!(
            r["empty_object"], "ok",
            "an empty object fits a full bucket: {r}"
        );
        assert_eq!(r["minio_py"][0], "XMinioAdminBucketQuotaExceeded", "{r}");
        assert_eq!(r["over_by_one"][1], "XMinioAdminBucketQuotaExceeded", "{r}");
        assert_eq!(r["exactly"], "ok", "{r}");
        assert_eq!(r["get_cleared"]["quota"], 0, "{r}");
        assert!(r["get_cleared"].get("quotatype").is_none(), "{r}");
        assert_eq!(r["after_clear"], "ok", "{r}");
        // Nothing refused was stored, and the counters (which went on after the limit was
        // cleared) equal a recount.
        assert_counted_as_recounted(&gw, "quota-q").await;
        let r = gw.state.store.recount_usage("quota-q").await.unwrap();
        assert_eq!(
            (r.bytes, r.versions),
            (10 + 990 + 5000, 4),
            "before, fill2, empty and big are all that is stored"
        );
    });
}

async fn set_limit(gw: &support::Gateway, bucket: &str, bytes: i64) {
    assert!(gw
        .state
        .store
        .set_bucket_limits(
            bucket,
            grids3::storage::meta::Limits {
                bytes: Some(bytes),
                objects: None
            }
        )
        .await
        .unwrap());
    gw.state.store.meta().forget_bucket(bucket);
}

fn quota_code<E: aws_sdk_s3::error::ProvideErrorMetadata>(
    r: Result<impl Sized, E>,
) -> Option<String> {
    match r {
        Ok(_) => None,
        Err(e) => e.code().map(str::to_owned),
    }
}

/// Parts count from UploadPart until Complete or Abort: a PUT is refused while parts hold
/// the room, a replaced part counts once, Complete hands the parts' bytes to the object, and
/// Abort gives them back.
#[test]
fn parts_count_until_the_upload_completes_or_aborts() {
    support::run(async {
        let gw = support::gateway_with("g_quotaparts", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk_once();
        let b = "parts";
        s3.create_bucket().bucket(b).send().await.unwrap();
        const MIB: i64 = 1 << 20;
        set_limit(&gw, b, 12 * MIB).await;
        let part = |key: &'static str, up: String, n: i32, size: usize| {
            let s3 = s3.clone();
            async move {
                s3.upload_part()
                    .bucket(b)
                    .key(key)
                    .upload_id(up)
                    .part_number(n)
                    .body(ByteStream::from(random_bytes(size, n as u64)))
                    .send()
                    .await
            }
        };
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("big")
            .send()
            .await
            .unwrap()
            .upload_id()
            .unwrap()
            .to_string();
        let p1 = part("big", up.clone(), 1, 5 << 20).await.unwrap();
        let p2 = part("big", up.clone(), 2, 5 << 20).await.unwrap();
        assert_eq!(counters(&gw, b).await.2, 10 * MIB, "two parts counted");
        assert_eq!(
            quota_code(part("big", up.clone(), 3, 3 << 20).await).as_deref(),
            Some("XMinioAdminBucketQuotaExceeded"),
            "a third part past the limit"
        );
        let put = s3
            .put_object()
            .bucket(b)
            .key("small")
            .body(ByteStream::from(random_bytes(3 << 20, 9)))
            .send()
            .await;
        assert_eq!(
            quota_code(put).as_deref(),
            Some("XMinioAdminBucketQuotaExceeded"),
            "a PUT while parts hold the room"
        );
        // Part 2 again, smaller: counted once, at its new size.
        let p2 = {
            let _ = p2;
            part("big", up.clone(), 2, 1 << 20).await.unwrap()
        };
        assert_eq!(
            counters(&gw, b).await.2,
            6 * MIB,
            "a replaced part counts once"
        );
        let parts = [(1, p1.e_tag().unwrap()), (2, p2.e_tag().unwrap())]
            .into_iter()
            .map(|(n, e)| {
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(e)
                    .build()
            })
            .collect::<Vec<_>>();
        s3.complete_multipart_upload()
            .bucket(b)
            .key("big")
            .upload_id(&up)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let c = counters(&gw, b).await;
        assert_eq!(
            (c.0, c.1, c.2),
            (6 * MIB, 1, 0),
            "the parts became the object"
        );
        assert_counted_as_recounted(&gw, b).await;

        // An aborted upload gives its parts' room back.
        let up2 = s3
            .create_multipart_upload()
            .bucket(b)
            .key("other")
            .send()
            .await
            .unwrap()
            .upload_id()
            .unwrap()
            .to_string();
        part("other", up2.clone(), 1, 5 << 20).await.unwrap();
        assert_eq!(counters(&gw, b).await.2, 5 * MIB);
        s3.abort_multipart_upload()
            .bucket(b)
            .key("other")
            .upload_id(&up2)
            .send()
            .await
            .unwrap();
        assert_counted_as_recounted(&gw, b).await;
        assert_eq!(counters(&gw, b).await.2, 0);
        // And what is left fits exactly.
        s3.put_object()
            .bucket(b)
            .key("rest")
            .body(ByteStream::from(random_bytes(6 << 20, 10)))
            .send()
            .await
            .expect("the rest of the room, to the byte");
        assert_counted_as_recounted(&gw, b).await;
        // Prometheus shows it after a janitor pass.
        gw.state.store.janitor_pass().await.unwrap();
        let metrics = metrics_text(&gw).await;
        for line in [
            format!("grids3_quota_used_bytes{{bucket=\"{b}\"}} {}", 12 * MIB),
            format!("grids3_quota_limit_bytes{{bucket=\"{b}\"}} {}", 12 * MIB),
            format!("grids3_quota_objects{{bucket=\"{b}\"}} 2"),
        ] {
            assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
        }
        // A cleared limit is no longer exported (an alert on used > limit would fire on a
        // limit that is gone); the usage still is.
        let none = grids3::storage::meta::Limits {
            bytes: None,
            objects: None,
        };
        assert!(gw.state.store.set_bucket_limits(b, none).await.unwrap());
        gw.state.store.janitor_pass().await.unwrap();
        let metrics = metrics_text(&gw).await;
        let limit = format!("grids3_quota_limit_bytes{{bucket=\"{b}\"}}");
        assert!(
            !metrics.lines().any(|l| l.starts_with(&limit)),
            "{limit} still exported:\n{metrics}"
        );
        let used = format!("grids3_quota_used_bytes{{bucket=\"{b}\"}} {}", 12 * MIB);
        assert!(metrics.lines().any(|l| l == used), "{used} in\n{metrics}");
    });
}

async fn metrics_text(gw: &support::Gateway) -> String {
    reqwest::get(format!("{}/_grids3/metrics", gw.endpoint()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// `grids3 fsck --usage` says by how much the counters differ from a recount (exit 1), sets
/// them to it with `--repair`, and then finds them equal; files written before the bucket
/// was metered are counted first.
#[test]
fn fsck_usage_finds_and_repairs_drifted_counters() {
    support::run(async {
        let gw = support::gateway_with("g_quotafsck", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let b = "fsck-usage";
        s3.create_bucket().bucket(b).send().await.unwrap();
        s3.put_object()
            .bucket(b)
            .key("before")
            .body(ByteStream::from(random_bytes(1000, 1)))
            .send()
            .await
            .unwrap();
        set_limit(&gw, b, 1 << 20).await;
        s3.put_object()
            .bucket(b)
            .key("after")
            .body(ByteStream::from(random_bytes(2000, 2)))
            .send()
            .await
            .unwrap();
        assert_counted_as_recounted(&gw, b).await;
        // Drift, as a bug or a hand edit would leave it.
        gw.db
            .collection::<Document>("__usage")
            .update_one(
                doc! {"_id": format!("b:{b}")},
                doc! {"$inc": {"bytes": 12345_i64, "objects": -1_i64}},
            )
            .await
            .unwrap();
        let fsck = |repair: bool| fsck_usage(&gw, repair);
        let (code, text) = fsck(false);
        assert_eq!(code, Some(1), "{text}");
        assert!(
            text.contains(&format!("usage: bucket {b}: differ"))
                && text.contains("off by 12345 bytes, -1 objects, 0 part bytes"),
            "{text}"
        );
        let (code, text) = fsck(true);
        assert_eq!(code, Some(0), "{text}");
        assert!(
            text.contains(&format!("usage: bucket {b}: repaired")),
            "{text}"
        );
        assert_counted_as_recounted(&gw, b).await;
        let (code, text) = fsck(false);
        assert_eq!(code, Some(0), "{text}");
        assert!(
            text.contains(&format!("usage: bucket {b}: equal")),
            "{text}"
        );
    });
}

/// An upload begun before its bucket had a limit is metered at its next step: the parts it
/// has are counted then, and later ones are held (found in review: it used to ignore the
/// limit for its whole life). A foreign files document without `metadata` is counted too.
#[test]
fn an_upload_begun_before_the_limit_is_counted_from_its_next_step() {
    support::run(async {
        let gw = support::gateway_with("g_quotalate", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk_once();
        let b = "late-upload";
        s3.create_bucket().bucket(b).send().await.unwrap();
        const MIB: i64 = 1 << 20;
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("k")
            .send()
            .await
            .unwrap()
            .upload_id()
            .unwrap()
            .to_string();
        let part = |n: i32, size: usize| {
            let (s3, up) = (s3.clone(), up.clone());
            async move {
                s3.upload_part()
                    .bucket(b)
                    .key("k")
                    .upload_id(up)
                    .part_number(n)
                    .body(ByteStream::from(random_bytes(size, n as u64)))
                    .send()
                    .await
            }
        };
        let p1 = part(1, 5 << 20).await.unwrap();
        // Another GridFS client's file with `metadata: null`, 100 bytes.
        gw.db
            .collection::<Document>(&format!("{b}.files"))
            .insert_one(
                doc! {"_id": mongodb::bson::oid::ObjectId::new(), "length": 100_i64,
                "chunkSize": 261120, "uploadDate": mongodb::bson::DateTime::now(),
                "filename": "foreign", "metadata": mongodb::bson::Bson::Null},
            )
            .await
            .unwrap();
        set_limit(&gw, b, 6 * MIB + 100).await;
        assert_eq!(counters(&gw, b).await.0, 100, "the foreign file is counted");
        assert_eq!(
            quota_code(part(2, 2 << 20).await).as_deref(),
            Some("XMinioAdminBucketQuotaExceeded"),
            "part 1 counts now, and 2 MiB more do not fit"
        );
        assert_eq!(counters(&gw, b).await.2, 5 * MIB, "part 1 counted");
        let p2 = part(2, 1 << 20).await.expect("1 MiB fits to the byte");
        let parts = [(1, p1.e_tag().unwrap()), (2, p2.e_tag().unwrap())]
            .into_iter()
            .map(|(n, e)| {
                aws_sdk_s3::types::CompletedPart::builder()
                    .part_number(n)
                    .e_tag(e)
                    .build()
            })
            .collect::<Vec<_>>();
        s3.complete_multipart_upload()
            .bucket(b)
            .key("k")
            .upload_id(&up)
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .set_parts(Some(parts))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let c = counters(&gw, b).await;
        assert_eq!((c.0, c.1, c.2), (6 * MIB + 100, 2, 0));
        assert_counted_as_recounted(&gw, b).await;
    });
}

/// A removal racing the conversion of the hold it read: a writer published its object and
/// had not yet converted its hold when a DELETE's removal transaction read the usage (so it
/// meant to give the hold back); the writer (or the janitor) converts the hold then. The
/// removal's write conflicts with the conversion, is tried again on what is there now, and
/// subtracts the object instead: nothing is given back twice, nothing stays counted.
#[test]
fn a_removal_that_read_a_hold_converted_meanwhile_subtracts_the_object_instead() {
    support::run(async {
        use grids3::failpoint;
        let gw = support::gateway("quotaremoval").await;
        let s3 = gw.sdk_once();
        let b = "removal";
        s3.create_bucket().bucket(b).send().await.unwrap();
        set_limit(&gw, b, 1 << 20).await;
        s3.put_object()
            .bucket(b)
            .key("a")
            .body(ByteStream::from(vec![7u8; 100]))
            .send()
            .await
            .unwrap();
        assert_eq!(counters(&gw, b).await, (100, 1, 0, 0, 0, 0));
        // The state of a writer that published and has not converted its hold yet: the
        // object counted only through the hold.
        let id = gw
            .db
            .collection::<Document>(&format!("{b}.files"))
            .find_one(doc! {"filename": "a"})
            .await
            .unwrap()
            .unwrap()
            .get_object_id("_id")
            .unwrap()
            .to_hex();
        let meta = gw.state.store.meta();
        gw.db
            .collection::<Document>("__usage")
            .update_one(
                doc! {"_id": format!("b:{b}")},
                doc! {"$inc": {"bytes": -100_i64, "objects": -1_i64}},
            )
            .await
            .unwrap();
        let hold = meta.hold(b, &id, 100, 1).await.unwrap().expect("held");
        assert_eq!(counters_now(&gw, b).await, (0, 0, 0, 100, 1, 1));

        let stop = failpoint::pause("quota.removal_read", Some(b));
        let del = {
            let s3 = s3.clone();
            tokio::spawn(async move { s3.delete_object().bucket(b).key("a").send().await })
        };
        stop.reached().await;
        assert!(
            meta.settle_hold(b, &hold, 100, 1).await.unwrap(),
            "the conversion goes in while the removal waits"
        );
        stop.release();
        del.await.unwrap().unwrap();
        assert_eq!(
            counters(&gw, b).await,
            (0, 0, 0, 0, 0, 0),
            "the removal subtracted the converted object and gave nothing back"
        );
        assert_counted_as_recounted(&gw, b).await;
        assert!(
            !meta.settle_hold(b, &hold, 100, 1).await.unwrap(),
            "a hold is settled once"
        );
    });
}

/// Delete markers count as objects of 0 bytes: a DELETE that would write one past the
/// objects limit is refused (alone and in DeleteObjects) and writes nothing; removing a
/// marker by its version gives its room back; markers written before the limit are counted
/// when it is set; and the counters equal a recount throughout.
#[test]
fn delete_markers_count_as_objects() {
    support::run(async {
        let gw = support::gateway("quotamarkers").await;
        let s3 = gw.sdk_once();
        let b = "markers";
        s3.create_bucket().bucket(b).send().await.unwrap();
        support::enable_versioning(&s3, b).await;
        let put = |k: &'static str| {
            let s3 = s3.clone();
            async move {
                s3.put_object()
                    .bucket(b)
                    .key(k)
                    .body(ByteStream::from_static(b"12345"))
                    .send()
                    .await
            }
        };
        put("early").await.unwrap();
        s3.delete_object()
            .bucket(b)
            .key("early")
            .send()
            .await
            .unwrap();
        // Two objects before the limit: a version and a marker.
        assert!(gw
            .state
            .store
            .set_bucket_limits(
                b,
                grids3::storage::meta::Limits {
                    bytes: None,
                    objects: Some(4)
                }
            )
            .await
            .unwrap());
        gw.state.store.meta().forget_bucket(b);
        assert_eq!(counters(&gw, b).await, (5, 2, 0, 0, 0, 0));
        assert_counted_as_recounted(&gw, b).await;

        put("a").await.unwrap();
        let marker = s3.delete_object().bucket(b).key("a").send().await.unwrap();
        assert_eq!(marker.delete_marker(), Some(true));
        assert_eq!(counters(&gw, b).await, (10, 4, 0, 0, 0, 0));
        assert_counted_as_recounted(&gw, b).await;

        // Full: a marker would be a fifth object.
        assert_eq!(
            quota_code(put("b").await).as_deref(),
            Some("XMinioAdminBucketQuotaExceeded"),
            "a fifth object"
        );
        let refused = s3.delete_object().bucket(b).key("early").send().await;
        assert_eq!(
            quota_code(refused).as_deref(),
            Some("XMinioAdminBucketQuotaExceeded"),
            "a marker past the objects limit"
        );
        let many = support::delete_objects(&s3, b, &["early".to_owned(), "a".to_owned()]).await;
        assert!(many.deleted().is_empty(), "{:?}", many.deleted());
        assert_eq!(many.errors().len(), 2);
        assert!(many
            .errors()
            .iter()
            .all(|e| e.code() == Some("XMinioAdminBucketQuotaExceeded")));
        let versions = s3.list_object_versions().bucket(b).send().await.unwrap();
        assert_eq!(versions.delete_markers().len(), 2, "nothing was written");
        assert_counted_as_recounted(&gw, b).await;

        // Removing a marker by its version gives its room back.
        s3.delete_object()
            .bucket(b)
            .key("a")
            .version_id(marker.version_id().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(counters(&gw, b).await, (10, 3, 0, 0, 0, 0));
        s3.delete_object().bucket(b).key("a").send().await.unwrap();
        assert_eq!(counters(&gw, b).await, (10, 4, 0, 0, 0, 0));
        assert_counted_as_recounted(&gw, b).await;
        let check = gw.state.store.check_usage(false).await.unwrap();
        assert!(
            check.iter().all(|c| !c.differs()),
            "fsck --usage agrees: {check:?}"
        );
    });
}

/// Metered writes' holds and conversions go to the database together: 16 PUTs at once,
/// while the first batch of holds (then of conversions) is in flight, cost at most 2
/// updates of the usage document for their holds and 2 for their conversions, not 16 and
/// 16; and the counters are exact.
#[test]
fn holds_and_conversions_waiting_together_take_one_update() {
    support::run(async {
        use grids3::failpoint;
        use mongodb::event::command::CommandEvent;
        use std::sync::atomic::{AtomicU64, Ordering};
        let name = format!(
            "g_quotabatch_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let updates = std::sync::Arc::new(AtomicU64::new(0));
        let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
            .await
            .unwrap();
        let (u, db_name) = (updates.clone(), name.clone());
        opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
            move |ev: CommandEvent| {
                if let CommandEvent::Started(e) = ev {
                    if !support::usage_updates(&e.command_name, &db_name, &e.command).is_empty() {
                        u.fetch_add(1, Ordering::SeqCst);
                    }
                }
            },
        ));
        let client = mongodb::Client::with_options(opts).unwrap();
        let gw = support::gateway_with_client(client, &name, |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk_once();
        let b = "batched";
        s3.create_bucket().bucket(b).send().await.unwrap();
        set_limit(&gw, b, 1 << 20).await;
        const N: usize = 16;
        let hold_batch = failpoint::pause("quota.hold_batch", Some(b));
        let held = failpoint::count("quota.hold_queued", Some(b));
        let settle_batch = failpoint::pause("quota.settle_batch", Some(b));
        let settling = failpoint::count("quota.settle_queued", Some(b));
        let before = updates.load(Ordering::SeqCst);
        let puts: Vec<_> = (0..N)
            .map(|i| {
                let s3 = s3.clone();
                tokio::spawn(async move {
                    s3.put_object()
                        .bucket(b)
                        .key(format!("k{i}"))
                        .body(ByteStream::from(vec![1u8; 1000]))
                        .send()
                        .await
                })
            })
            .collect();
        let within = std::time::Duration::from_secs(60);
        hold_batch.reached().await;
        held.reached_n(N, within).await;
        hold_batch.release();
        settle_batch.reached().await;
        settling.reached_n(N, within).await;
        settle_batch.release();
        for p in puts {
            p.await.unwrap().unwrap();
        }
        // The conversions go on after the answers: counted, then compared.
        assert_eq!(counters(&gw, b).await, (16_000, 16, 0, 0, 0, 0));
        let sent = updates.load(Ordering::SeqCst) - before;
        // One or two of each: the first batch is whatever waited when it was taken, the
        // second the rest. One by one, they were 32.
        assert!(
            (2..=4).contains(&sent),
            "{sent} updates of the usage document for 16 holds and 16 conversions"
        );
        assert_eq!(counters(&gw, b).await, (16_000, 16, 0, 0, 0, 0));
        assert_counted_as_recounted(&gw, b).await;
    });
}

/// A body whose declared length cannot fit is refused before a byte of it is read: a client
/// that asks `Expect: 100-continue` is answered with the refusal, never told to send, even
/// when the body is within a step (8 MiB) of fitting (found in review: it used to be read and
/// refused only as it passed the limit, its partial hold meanwhile refusing writes that fit).
#[test]
fn a_declared_body_that_cannot_fit_is_refused_before_it_is_sent() {
    support::run(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let gw = support::gateway("quotadeclared").await;
        let s3 = gw.sdk_once();
        let b = "declared";
        s3.create_bucket().bucket(b).send().await.unwrap();
        set_limit(&gw, b, 1_000_000).await;
        let url = s3
            .put_object()
            .bucket(b)
            .key("doomed")
            .presigned(
                aws_sdk_s3::presigning::PresigningConfig::expires_in(
                    std::time::Duration::from_secs(300),
                )
                .unwrap(),
            )
            .await
            .unwrap();
        let uri: reqwest::Url = url.uri().parse().unwrap();
        let target = format!("{}?{}", uri.path(), uri.query().unwrap_or_default());
        let mut conn = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
        let head = format!(
            "PUT {target} HTTP/1.1\r\nHost: {}\r\nContent-Length: 1000001\r\n\
             Expect: 100-continue\r\n\r\n",
            uri.host_str().unwrap_or("127.0.0.1").to_owned()
                + &uri.port().map(|p| format!(":{p}")).unwrap_or_default()
        );
        conn.write_all(head.as_bytes()).await.unwrap();
        let mut answer = vec![0u8; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_secs(30), conn.read(&mut answer))
            .await
            .expect("an answer without the body")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..n]).to_string();
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(
            answer.contains("XMinioAdminBucketQuotaExceeded"),
            "{answer}"
        );
        assert!(
            answer.contains("this write needs 1000001 bytes"),
            "{answer}"
        );
        // Nothing is held for it; a write that fits goes in.
        assert_eq!(counters(&gw, b).await, (0, 0, 0, 0, 0, 0));
        s3.put_object()
            .bucket(b)
            .key("fits")
            .body(ByteStream::from(vec![0u8; 1_000_000]))
            .send()
            .await
            .unwrap();
    });
}
