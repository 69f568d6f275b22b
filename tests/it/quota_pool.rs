//! Transactions never wait for a connection behind the writers they hold up (issue 62, found
//! in review: two account limits set at once beside busy writers hung both instances).
//!
//! A write outside a transaction waits, on the server, for an open transaction that wrote the
//! same document. Here the gateway's main pool has one connection: a PUT's hold update takes
//! it and waits behind the link's transaction, paused after its first statement (fail point
//! `quota.link_read`). Had the transaction's next statement needed that pool, neither could
//! ever finish; it runs on the transactions' own pool, so both do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aws_sdk_s3::primitives::ByteStream;
use mongodb::event::command::CommandEvent;
use mongodb::event::EventHandler;

use crate::quota_account::{holds_settled, set_account_limits_meanwhile, settled_account};
use crate::support;

#[test]
fn a_transaction_never_waits_for_a_connection_behind_the_writes_it_holds_up() {
    support::run(async {
        use grids3::failpoint;
        // The main client: one connection, and a count of the usage updates it has sent (a
        // started command holds its connection until its reply).
        let started = Arc::new(AtomicU64::new(0));
        let mut opts = mongodb::options::ClientOptions::parse(&support::db().uri)
            .await
            .unwrap();
        opts.max_pool_size = Some(1);
        let seen = started.clone();
        let name = support::fresh_db("qpool").await.name().to_owned();
        let db_name = name.clone();
        opts.command_event_handler = Some(EventHandler::callback(move |ev: CommandEvent| {
            if let CommandEvent::Started(e) = ev {
                let usage = e.command.get_str(&e.command_name).ok() == Some("__usage");
                if (usage && matches!(e.command_name.as_str(), "update" | "findAndModify"))
                    || !support::usage_updates(&e.command_name, &db_name, &e.command).is_empty()
                {
                    seen.fetch_add(1, Ordering::SeqCst);
                }
            }
        }));
        let client = mongodb::Client::with_options(opts).unwrap();
        let gw = support::gateway_with_client(client, &name, |c| {
            c.janitor_interval = 3600;
            c.mongodb_uri = Some(support::db().uri.clone());
        })
        .await;
        let s3 = gw.sdk();
        let b = "poolwait";
        s3.create_bucket().bucket(b).send().await.unwrap();
        // The same limits for the bucket and its account (`Limits` is `Copy`).
        let limits = grids3::storage::meta::Limits {
            bytes: Some(64 << 20),
            objects: None,
        };
        assert!(gw.state.store.set_bucket_limits(b, limits).await.unwrap());
        let body = |n: usize| ByteStream::from(vec![7_u8; n]);
        s3.put_object()
            .bucket(b)
            .key("first")
            .body(body(1000))
            .send()
            .await
            .unwrap();
        assert!(holds_settled(&gw, b, 10).await);

        let account = grids3::storage::identity::account_id(support::AK);
        let paused = failpoint::pause("quota.link_read", Some(b));
        let setting = set_account_limits_meanwhile(&gw, &account, b, limits);
        paused.reached().await;
        // The link holds the bucket's usage document. A PUT's hold update now takes the one
        // connection and waits on the server behind it.
        let before = started.load(Ordering::SeqCst);
        let meanwhile = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                s3.put_object()
                    .bucket(b)
                    .key("meanwhile")
                    .body(body(2000))
                    .send()
                    .await
            })
        };
        assert!(
            support::eventually(10, || async { started.load(Ordering::SeqCst) > before }).await,
            "the PUT's hold update was never sent"
        );
        paused.release();
        // Both end: the transaction's next statements and its commit run on its own pool.
        let ended = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            setting.await.unwrap().unwrap();
            meanwhile.await.unwrap().unwrap();
        })
        .await;
        assert!(
            ended.is_ok(),
            "the link's transaction and the PUT it held up waited for each other"
        );
        let a = settled_account(&gw, b, &account).await;
        assert_eq!((a.bytes, a.objects), (3000, 2), "{a:?}");

        // A body larger than a hold's step grows its hold as it arrives: in a linked bucket,
        // in a transaction with the account's counters (the growth names the hold by the
        // positional operator, which the local database takes in an update only).
        let big = 12 << 20;
        s3.put_object()
            .bucket(b)
            .key("big")
            .body(body(big))
            .send()
            .await
            .unwrap();
        let a = settled_account(&gw, b, &account).await;
        assert_eq!((a.bytes, a.objects), (3000 + big as i64, 3), "{a:?}");
    });
}
