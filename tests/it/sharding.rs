//! `--shard-buckets`: CreateBucket asks the cluster to shard the new bucket's collections on
//! the keys grids3 supports. SecantusDB is not a sharded cluster, so what is checked here is
//! the commands grids3 sends (seen by command monitoring) and that a cluster's refusal undoes
//! the creation instead of leaving an unsharded bucket; the keys themselves are argued in
//! `src/storage/sharding.rs`.

use std::sync::{Arc, Mutex};

use mongodb::bson::{doc, Document};
use mongodb::event::command::CommandEvent;

use crate::support;

#[test]
fn create_bucket_shards_its_collections_or_undoes_itself() {
    support::run(async {
        let name = format!(
            "g_shard_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let seen: Arc<Mutex<Vec<Document>>> = Arc::default();
        let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
            .await
            .unwrap();
        let s = seen.clone();
        opts.command_event_handler = Some(mongodb::event::EventHandler::callback(
            move |ev: CommandEvent| {
                if let CommandEvent::Started(e) = ev {
                    if e.command_name == "shardCollection" {
                        s.lock().unwrap().push(e.command.clone());
                    }
                }
            },
        ));
        let client = mongodb::Client::with_options(opts).unwrap();
        let gw = support::gateway_with_client(client, &name, |c| c.shard_buckets = true).await;
        let s3 = gw.sdk();
        let created = s3.create_bucket().bucket("sharded").send().await;
        let sent: Vec<(String, Document)> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c.get_str("shardCollection").unwrap().to_owned(),
                    c.get_document("key").unwrap().clone(),
                )
            })
            .collect();
        assert_eq!(
            sent[0],
            (format!("{name}.sharded.chunks"), doc! {"files_id": 1}),
            "chunks sharded on files_id"
        );
        let listed = s3.list_buckets().send().await.unwrap();
        let names: Vec<&str> = listed.buckets().iter().filter_map(|b| b.name()).collect();
        match created {
            // A server that is no sharded cluster refuses the first command: the bucket
            // must not exist (unsharded) afterwards.
            Err(e) => {
                assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(500));
                // (The SDK retried the 500: each attempt created the bucket again, was
                // refused again, and undid itself again.)
                assert!(sent.iter().all(|c| c == &sent[0]), "{sent:?}");
                assert!(!names.contains(&"sharded"), "the creation was undone");
            }
            Ok(_) => {
                assert_eq!(
                    sent[1],
                    (format!("{name}.sharded.files"), doc! {"filename": 1})
                );
                assert_eq!(
                    sent[2],
                    (format!("{name}.sharded.versions"), doc! {"_id": 1})
                );
                assert!(names.contains(&"sharded"));
            }
        }
    });
}
