//! The gateway as a GridFS citizen: what it stores PyMongo reads, what PyMongo stores in an
//! adopted bucket it serves, and a streaming GET survives an overwrite and a delete made
//! through another gateway instance.

use aws_sdk_s3::primitives::ByteStream;
use md5::{Digest, Md5};
use mongodb::bson::doc;

use crate::gridfs_interop::pymongo_gridfs;
use crate::support::{self, random_bytes};

#[test]
fn pymongo_reads_what_the_gateway_stores() {
    support::run(async {
        let gw = support::gateway("g2py").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("shared").send().await.unwrap();
        let data = random_bytes(1_000_003, 11);
        s3.put_object()
            .bucket("shared")
            .key("docs/report.bin")
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out");
        let (db, o) = (gw.db.name().to_owned(), out.clone());
        tokio::task::spawn_blocking(move || {
            pymongo_gridfs(
                &db,
                "shared",
                serde_json::json!([{"op": "get", "name": "docs/report.bin", "path": o}]),
            )
        })
        .await
        .unwrap();
        assert!(
            std::fs::read(&out).unwrap() == data,
            "PyMongo read different bytes"
        );
    });
}

#[test]
fn adopted_bucket_written_by_pymongo_is_served() {
    support::run(async {
        let db = support::fresh_db("adopt").await;
        let tmp = tempfile::tempdir().unwrap();
        let data = random_bytes(600_000, 12);
        let input = tmp.path().join("in");
        std::fs::write(&input, &data).unwrap();
        let name = db.name().to_owned();
        tokio::task::spawn_blocking(move || {
            pymongo_gridfs(
                &name,
                "fs",
                serde_json::json!([{"op": "put", "name": "from/pymongo.bin", "path": input}]),
            )
        })
        .await
        .unwrap();
        // A gateway started on that database adopts `fs` at start-up.
        let gw = support::gateway_on(db.name()).await;
        let s3 = gw.sdk();
        let md5 = format!("\"{}\"", hex::encode(Md5::digest(&data)));
        // PyMongo writes no MD5: the listing derives an opaque ETag from the files document
        // (600,000 bytes are 3 chunks of 255 KiB), reading no chunk (issue 59).
        let listed = s3.list_objects_v2().bucket("fs").send().await.unwrap();
        assert_eq!(listed.contents().len(), 1);
        assert_eq!(listed.contents()[0].key(), Some("from/pymongo.bin"));
        assert_eq!(listed.contents()[0].size(), Some(600_000));
        let etag = listed.contents()[0].e_tag().unwrap().to_owned();
        assert!(etag.len() == 36 && etag.ends_with("-3\""), "{etag}");
        assert_ne!(etag, md5);
        let got = s3
            .get_object()
            .bucket("fs")
            .key("from/pymongo.bin")
            .send()
            .await
            .unwrap();
        assert_eq!(got.content_length(), Some(600_000));
        assert_eq!(got.e_tag(), Some(etag.as_str()));
        assert!(got.body.collect().await.unwrap().into_bytes().as_ref() == data.as_slice());
        assert!(
            gw.state
                .store
                .meta()
                .get_bucket("fs")
                .await
                .unwrap()
                .unwrap()
                .adopted
        );
    });
}

#[test]
fn streaming_get_survives_overwrite_and_delete_on_another_instance() {
    support::run(async {
        let a = support::gateway("lease").await;
        let b = support::gateway_on(a.db.name()).await;
        let s3a = a.sdk();
        let s3b = b.sdk();
        s3a.create_bucket().bucket("media").send().await.unwrap();
        let data = random_bytes(24 * 1024 * 1024, 5);
        s3a.put_object()
            .bucket("media")
            .key("movie")
            .body(ByteStream::from(data.clone()))
            .send()
            .await
            .unwrap();
        let old_chunks = a.chunk_count("media").await;

        // Start reading through instance A, take the first piece, then replace and delete the
        // key through instance B while A is still streaming.
        let got = s3a
            .get_object()
            .bucket("media")
            .key("movie")
            .send()
            .await
            .unwrap();
        let mut body = got.body;
        let mut received = body.next().await.unwrap().unwrap().to_vec();
        s3b.put_object()
            .bucket("media")
            .key("movie")
            .body(ByteStream::from_static(b"new"))
            .send()
            .await
            .unwrap();
        s3b.delete_object()
            .bucket("media")
            .key("movie")
            .send()
            .await
            .unwrap();
        assert_eq!(
            a.file_count("media").await,
            0,
            "the key is gone for new readers"
        );
        assert_eq!(
            a.chunk_count("media").await,
            old_chunks,
            "the streamed revision's chunks are kept"
        );
        // One file's reclaim is deferred. It may be recorded twice: a settling pass (in the
        // background, `storage::objects::settle`, queued by the first PUT) and the overwrite
        // can both reclaim the old revision at once, each with a record of its own; whichever
        // the janitor finishes first, the other then finds nothing to do.
        let pending: Vec<mongodb::bson::Bson> =
            a.db.collection::<mongodb::bson::Document>("__reclaim")
                .distinct("file_id", doc! {})
                .await
                .unwrap();
        assert_eq!(pending.len(), 1, "its reclaim is deferred: {pending:?}");
        while let Some(piece) = body.next().await {
            received.extend_from_slice(&piece.unwrap());
        }
        assert!(
            received == data,
            "the stream finished with the original bytes"
        );
        drop(body);

        // With the reader gone, a janitor reclaims the chunks, then drops the reclaim's
        // record (two writes: wait for both, not for the first alone).
        let pending = || async {
            a.db.collection::<mongodb::bson::Document>("__reclaim")
                .count_documents(doc! {})
                .await
                .unwrap()
        };
        for _ in 0..100 {
            if a.chunk_count("media").await == 0 && pending().await == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(a.chunk_count("media").await, 0);
        assert_eq!(pending().await, 0);
    });
}

#[test]
fn instances_agree_on_identity() {
    support::run(async {
        let db = format!(
            "g_ident_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let (a, b) = tokio::join!(support::gateway_on(&db), support::gateway_on(&db));
        assert!(!a.state.instance_id.is_empty());
        assert_eq!(a.state.instance_id, b.state.instance_id);
    });
}
