//! Issue 35 item 9: the distributed engine's guarantees are stated, not left to defaults.
//! Every write grids3 sends carries `writeConcern: {w: "majority", j: true}` and every read
//! `readConcern: {level: "majority"}`, as command monitoring sees them; both are configurable.

use std::sync::{Arc, Mutex};

use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::Document;

use crate::support;

/// A gateway whose every command (name, body) on its database is recorded.
async fn recording(
    tag: &str,
    tweak: impl FnOnce(&mut grids3::config::Config),
) -> (support::Gateway, Arc<Mutex<Vec<(String, Document)>>>) {
    use mongodb::event::command::CommandEvent;
    let name = format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
        .await
        .unwrap();
    let (log, db) = (seen.clone(), name.clone());
    opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
        move |ev: CommandEvent| {
            if let CommandEvent::Started(e) = ev {
                // `bulkWrite` and `commitTransaction` go to `admin`; this client serves this
                // gateway alone.
                if e.db == db
                    || e.command_name == "bulkWrite"
                    || e.command_name == "commitTransaction"
                {
                    log.lock().unwrap().push((e.command_name, e.command));
                }
            }
        },
    ));
    let client = mongodb::Client::with_options(opts).unwrap();
    let gw = support::gateway_with_client(client, &name, tweak).await;
    (gw, seen)
}

async fn workload(s3: &aws_sdk_s3::Client, b: &str) {
    s3.create_bucket().bucket(b).send().await.unwrap();
    for k in ["a", "b/c"] {
        s3.put_object()
            .bucket(b)
            .key(k)
            .body(ByteStream::from_static(b"data"))
            .send()
            .await
            .unwrap();
    }
    s3.get_object().bucket(b).key("a").send().await.unwrap();
    s3.head_object().bucket(b).key("b/c").send().await.unwrap();
    s3.list_objects_v2().bucket(b).send().await.unwrap();
    s3.put_object_tagging()
        .bucket(b)
        .key("a")
        .tagging(
            aws_sdk_s3::types::Tagging::builder()
                .tag_set(
                    aws_sdk_s3::types::Tag::builder()
                        .key("t")
                        .value("v")
                        .build()
                        .unwrap(),
                )
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    s3.delete_object().bucket(b).key("a").send().await.unwrap();
}

fn gw_seen_len(log: &Arc<Mutex<Vec<(String, Document)>>>) -> usize {
    log.lock().unwrap().len()
}

const WRITES: &[&str] = &["insert", "update", "delete", "findAndModify", "bulkWrite"];
const READS: &[&str] = &["find", "aggregate", "count", "distinct"];

#[test]
fn every_write_and_read_carries_the_configured_concern() {
    support::run(async {
        let (gw, seen_log) = recording("concerns", |_| {}).await;
        workload(&gw.sdk(), "concerns").await;
        let seen = seen_log.lock().unwrap().clone();
        let (mut writes, mut reads, mut commits) = (0, 0, 0);
        for (name, cmd) in &seen {
            // A transaction's statements may carry no concern of their own (the server
            // refuses them): its first statement carries its read concern, and its commit
            // the write concern (CreateBucket records the bucket in one).
            if cmd.get_bool("autocommit") == Ok(false) {
                if cmd.get_bool("startTransaction") == Ok(true) {
                    let rc = cmd.get_document("readConcern").unwrap_or_else(|_| {
                        panic!("a transaction begun without a readConcern: {cmd}");
                    });
                    assert_eq!(rc.get_str("level"), Ok("majority"), "{name}: {cmd}");
                }
                if name == "commitTransaction" {
                    commits += 1;
                    let wc = cmd.get_document("writeConcern").unwrap_or_else(|_| {
                        panic!("a commit without a writeConcern: {cmd}");
                    });
                    assert_eq!(wc.get_str("w"), Ok("majority"), "{name}: {cmd}");
                    assert_eq!(wc.get_bool("j"), Ok(true), "{name}: {cmd}");
                }
                continue;
            }
            if WRITES.contains(&name.as_str()) {
                writes += 1;
                let wc = cmd.get_document("writeConcern").unwrap_or_else(|_| {
                    panic!("{name} without a writeConcern: {cmd}");
                });
                assert_eq!(wc.get_str("w"), Ok("majority"), "{name}: {cmd}");
                assert_eq!(wc.get_bool("j"), Ok(true), "{name}: {cmd}");
            }
            if READS.contains(&name.as_str()) {
                reads += 1;
                let rc = cmd.get_document("readConcern").unwrap_or_else(|_| {
                    panic!("{name} without a readConcern: {cmd}");
                });
                assert_eq!(rc.get_str("level"), Ok("majority"), "{name}: {cmd}");
            }
        }
        assert!(
            seen.iter().any(|(n, _)| n == "bulkWrite"),
            "the workload sent no bulkWrite"
        );
        assert!(commits > 0, "the workload committed no transaction");
        // DeleteObjects of more keys than one `$in` slice: one `delete` command of several
        // statements, built by hand (`gridfs::batch`), with the concern too.
        let s3 = gw.sdk();
        let keys: Vec<String> = (0..150).map(|i| format!("many/{i:03}")).collect();
        let objects = keys.iter().map(|k| (k.clone(), b"x".to_vec())).collect();
        support::put_many(&s3, "concerns", objects).await;
        let before = gw_seen_len(&seen_log);
        support::delete_objects(&s3, "concerns", &keys).await;
        let after: Vec<(String, Document)> = seen_log.lock().unwrap()[before..].to_vec();
        let multi: Vec<&Document> = after
            .iter()
            .filter(|(n, c)| n == "delete" && c.get_array("deletes").is_ok_and(|d| d.len() > 1))
            .map(|(_, c)| c)
            .collect();
        assert!(!multi.is_empty(), "no delete command of several statements");
        for cmd in multi {
            let wc = cmd.get_document("writeConcern").unwrap();
            assert_eq!(wc.get_str("w"), Ok("majority"), "{cmd}");
            assert_eq!(wc.get_bool("j"), Ok(true), "{cmd}");
        }
        assert!(
            writes >= 10 && reads >= 10,
            "the workload sent {writes} writes and {reads} reads"
        );

        // Configurable: w 1 and local reads, for a standalone server.
        let (gw, seen) = recording("concerns1", |c| {
            c.write_concern = "1".into();
            c.read_concern = "local".into();
        })
        .await;
        workload(&gw.sdk(), "concerns1").await;
        let seen = seen.lock().unwrap().clone();
        // (Outside transactions: their statements carry no concern of their own.)
        let alone = |c: &Document| c.get_bool("autocommit").is_err();
        let insert = seen
            .iter()
            .find(|(n, c)| n == "insert" && alone(c))
            .expect("an insert");
        let wc = insert.1.get_document("writeConcern").unwrap();
        assert_eq!(
            wc.get_i32("w")
                .ok()
                .or(wc.get_i64("w").ok().map(|n| n as i32)),
            Some(1)
        );
        let find = seen
            .iter()
            .find(|(n, c)| n == "find" && alone(c))
            .expect("a find");
        assert_eq!(
            find.1.get_document("readConcern").unwrap().get_str("level"),
            Ok("local")
        );
    });
}
