//! Issue 59: GridFS files another program wrote (PyMongo here, not grids3) list at the cost of
//! grids3's own: a page of them is the same few range queries, with no chunk read and no
//! write per key (before: each key without an MD5 cost a chunk query and a conditional
//! update, about 2,000 commands a page).

use std::sync::atomic::Ordering;

use crate::gridfs_interop::pymongo_gridfs;
use crate::support;

/// Keys PyMongo writes: more than a page, so the page is bounded on both sides.
const KEYS: usize = 1_200;

#[test]
fn a_listing_page_of_pymongo_files_costs_what_one_of_our_own_does() {
    support::run(async {
        let (gw, counters) = support::gateway_counting_split("foreign", |_| {}).await;
        let db = gw.db.name().to_owned();
        // 100-byte files through PyMongo's GridFSBucket: no `md5`, no `metadata`, one chunk.
        tokio::task::spawn_blocking(move || {
            pymongo_gridfs(
                &db,
                "pyfs",
                serde_json::json!([{"op": "put_many", "prefix": "k", "count": KEYS, "size": 100}]),
            )
        })
        .await
        .unwrap();
        let adopted = gw.state.adopt_existing_buckets().await.unwrap();
        assert_eq!(adopted, vec!["pyfs".to_owned()]);
        let s3 = gw.sdk();
        // The same keys through grids3, for the same page's count side by side.
        s3.create_bucket().bucket("ours").send().await.unwrap();
        for i in 0..KEYS {
            s3.put_object()
                .bucket("ours")
                .key(format!("k{i:05}"))
                .body(aws_sdk_s3::primitives::ByteStream::from(vec![7u8; 100]))
                .send()
                .await
                .unwrap();
        }
        let own = || counters.all.load(Ordering::SeqCst) - counters.lookups.load(Ordering::SeqCst);
        let mut costs = Vec::new();
        for bucket in ["pyfs", "ours"] {
            // Warm the bucket cache, so both counts hold the page's own commands.
            s3.head_bucket().bucket(bucket).send().await.unwrap();
            support::quiesce(&counters.background).await;
            counters.log.lock().unwrap().clear();
            let before = own();
            let chunk_reads = counters.chunk_reads.load(Ordering::SeqCst);
            let page = s3
                .list_objects_v2()
                .bucket(bucket)
                .max_keys(1000)
                .send()
                .await
                .unwrap();
            let cost = own() - before;
            let log = counters.log.lock().unwrap().clone();
            assert_eq!(page.contents().len(), 1000);
            assert_eq!(page.is_truncated(), Some(true));
            for o in page.contents() {
                let etag = o.e_tag().unwrap_or_default();
                assert!(etag.len() >= 34, "{bucket}: no ETag for {:?}", o.key());
            }
            assert_eq!(
                counters.chunk_reads.load(Ordering::SeqCst),
                chunk_reads,
                "{bucket}: the listing read chunks: {log:?}"
            );
            assert!(
                !log.iter().any(|c| c.starts_with("update")),
                "{bucket}: the listing wrote: {log:?}"
            );
            println!("{bucket}: a page of 1,000 keys cost {cost} commands: {log:?}");
            costs.push(cost);
        }
        let (foreign, ours) = (costs[0], costs[1]);
        // A page is a handful of bounded range queries (and a settings lookup): never a
        // command per key. The same shape of page costs the same, give or take a query that
        // the fence posts (recorded by grids3's writes, learned for PyMongo's by this page)
        // save.
        // (Measured: 5 and 6, the 6th ours's one read of the posts grids3's writes recorded.)
        assert!(foreign <= 8, "PyMongo's page: {foreign} commands");
        assert!(foreign <= ours + 2, "PyMongo's page {foreign}, ours {ours}");
    });
}
