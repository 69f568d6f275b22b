//! Multipart uploads through the AWS SDK for Rust, checked down to the GridFS layout.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use futures::TryStreamExt;
use md5::{Digest, Md5};
use mongodb::bson::{doc, Document};

use crate::gridfs_interop::pymongo_gridfs;
use crate::support::{self, random_bytes, Gateway};

const MIB: usize = 1024 * 1024;

async fn upload_parts(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    parts: &[&[u8]],
) -> (String, Vec<CompletedPart>) {
    let up = s3
        .create_multipart_upload()
        .bucket(bucket)
        .key(key)
        .content_type("application/x-mp")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap().to_owned();
    let mut done = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let r = s3
            .upload_part()
            .bucket(bucket)
            .key(key)
            .upload_id(&id)
            .part_number(i as i32 + 1)
            .body(ByteStream::from(p.to_vec()))
            .send()
            .await
            .unwrap();
        done.push(
            CompletedPart::builder()
                .part_number(i as i32 + 1)
                .e_tag(r.e_tag().unwrap())
                .build(),
        );
    }
    (id, done)
}

/// MD5 of the concatenated binary part MD5s, "-N": computed here independently of grids3.
fn multipart_etag(parts: &[&[u8]]) -> String {
    let mut h = Md5::new();
    for p in parts {
        h.update(Md5::digest(p));
    }
    format!("\"{}-{}\"", hex::encode(h.finalize()), parts.len())
}

async fn chunk_layout(gw: &Gateway, bucket: &str) -> (Vec<Document>, Vec<(i64, usize)>) {
    let files: Vec<Document> = gw
        .db
        .collection(&format!("{bucket}.files"))
        .find(doc! {})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let chunks: Vec<Document> = gw
        .db
        .collection::<Document>(&format!("{bucket}.chunks"))
        .find(doc! {})
        .sort(doc! {"n": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let layout = chunks
        .iter()
        .map(|c| {
            (
                // Int32, as the GridFS spec has it, after the renumbering too.
                i64::from(c.get_i32("n").expect("n is an Int32")),
                c.get_binary_generic("data").unwrap().len(),
            )
        })
        .collect();
    (files, layout)
}

#[test]
fn multipart_completes_in_place_as_one_gridfs_file() {
    support::run(async {
        let gw = support::gateway("mp").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let data = random_bytes(11 * MIB + 3, 21);
        let parts: Vec<&[u8]> = vec![
            &data[..5 * MIB],
            &data[5 * MIB..10 * MIB],
            &data[10 * MIB..],
        ];
        let (id, done) = upload_parts(&s3, "mpb", "big/object", &parts).await;
        // Parts are invisible until completion.
        assert_eq!(
            s3.list_objects_v2()
                .bucket("mpb")
                .send()
                .await
                .unwrap()
                .key_count(),
            Some(0)
        );
        // Parts are staged under the object's final file id (below n = 0): completion never
        // changes a chunk's files_id, the shard key of a sharded chunks collection.
        let staged: Vec<Document> = gw
            .db
            .collection::<Document>("mpb.chunks")
            .find(doc! {})
            .await
            .unwrap()
            .try_collect()
            .await
            .unwrap();
        let ids: std::collections::HashSet<String> = staged
            .iter()
            .map(|c| c.get_object_id("files_id").unwrap().to_hex())
            .collect();
        assert_eq!(ids.len(), 1, "one files_id for every part");
        assert!(staged.iter().all(|c| c.get_i32("n").unwrap() < 0));
        let r = s3
            .complete_multipart_upload()
            .bucket("mpb")
            .key("big/object")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.e_tag(), Some(multipart_etag(&parts).as_str()));

        let (files, layout) = chunk_layout(&gw, "mpb").await;
        assert_eq!(files.len(), 1);
        assert!(ids.contains(&files[0].get_object_id("_id").unwrap().to_hex()));
        assert_eq!(files[0].get_i64("length").unwrap(), data.len() as i64);
        assert_eq!(files[0].get_i32("chunkSize").unwrap(), MIB as i32);
        let expected: Vec<(i64, usize)> =
            (0..12).map(|n| (n, if n < 11 { MIB } else { 3 })).collect();
        assert_eq!(layout, expected, "chunks n = 0..N-1, full but the last");

        let got = s3
            .get_object()
            .bucket("mpb")
            .key("big/object")
            .send()
            .await
            .unwrap();
        assert_eq!(got.content_type(), Some("application/x-mp"));
        assert!(got.body.collect().await.unwrap().into_bytes().as_ref() == data.as_slice());
        let r = s3
            .get_object()
            .bucket("mpb")
            .key("big/object")
            .range("bytes=5242878-5242881")
            .send()
            .await
            .unwrap();
        assert_eq!(
            r.body.collect().await.unwrap().into_bytes().as_ref(),
            &data[5 * MIB - 2..5 * MIB + 2]
        );

        // PyMongo reads the completed file.
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("o");
        let (db, o) = (gw.db.name().to_owned(), out.clone());
        tokio::task::spawn_blocking(move || {
            pymongo_gridfs(
                &db,
                "mpb",
                serde_json::json!([{"op": "get", "name": "big/object", "path": o}]),
            )
        })
        .await
        .unwrap();
        assert!(std::fs::read(out).unwrap() == data);
        // No upload left open; the completed one stays as a tombstone (for a retried
        // Complete) until the sweep drops it.
        let open: u64 = gw
            .db
            .collection::<Document>("__uploads")
            .count_documents(doc! {"completed": {"$exists": false}})
            .await
            .unwrap();
        let part_docs: u64 = gw
            .db
            .collection::<Document>("__parts")
            .count_documents(doc! {})
            .await
            .unwrap();
        assert_eq!((open, part_docs), (0, 0));
    });
}

#[test]
fn misaligned_parts_complete_by_rewriting_the_tail() {
    support::run(async {
        let gw = support::gateway("mpmis").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let data = random_bytes(10 * MIB + 12345, 22);
        let parts: Vec<&[u8]> = vec![
            &data[..5 * MIB],
            &data[5 * MIB..10 * MIB + 7],
            &data[10 * MIB + 7..],
        ];
        let (id, done) = upload_parts(&s3, "mpb", "mis", &parts).await;
        s3.complete_multipart_upload()
            .bucket("mpb")
            .key("mis")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let (_, layout) = chunk_layout(&gw, "mpb").await;
        let n = data.len().div_ceil(MIB);
        let expected: Vec<(i64, usize)> = (0..n)
            .map(|i| {
                (
                    i as i64,
                    if i + 1 < n {
                        MIB
                    } else {
                        data.len() - (n - 1) * MIB
                    },
                )
            })
            .collect();
        assert_eq!(layout, expected);
        let got = s3
            .get_object()
            .bucket("mpb")
            .key("mis")
            .send()
            .await
            .unwrap();
        assert!(got.body.collect().await.unwrap().into_bytes().as_ref() == data.as_slice());
    });
}

#[test]
fn parts_listing_replacement_copy_abort_and_errors() {
    support::run(async {
        let gw = support::gateway("mpops").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let src = random_bytes(6 * MIB, 23);
        s3.put_object()
            .bucket("mpb")
            .key("source")
            .body(ByteStream::from(src.clone()))
            .send()
            .await
            .unwrap();
        let small = random_bytes(1000, 24);
        let (id, _) = upload_parts(&s3, "mpb", "obj", &[&small, &small, &small]).await;

        // ListParts paging.
        let p = s3
            .list_parts()
            .bucket("mpb")
            .key("obj")
            .upload_id(&id)
            .max_parts(2)
            .send()
            .await
            .unwrap();
        assert_eq!(p.parts().len(), 2);
        assert_eq!(p.is_truncated(), Some(true));
        let p = s3
            .list_parts()
            .bucket("mpb")
            .key("obj")
            .upload_id(&id)
            .part_number_marker(p.next_part_number_marker().unwrap())
            .send()
            .await
            .unwrap();
        assert_eq!(
            p.parts()
                .iter()
                .map(|x| x.part_number().unwrap())
                .collect::<Vec<_>>(),
            [3]
        );
        assert_eq!(p.is_truncated(), Some(false));

        // Re-uploading part 1 replaces it (and its chunks); UploadPartCopy with a range as part 2.
        let first = random_bytes(5 * MIB, 25);
        let r1 = s3
            .upload_part()
            .bucket("mpb")
            .key("obj")
            .upload_id(&id)
            .part_number(1)
            .body(ByteStream::from(first.clone()))
            .send()
            .await
            .unwrap();
        let r2 = s3
            .upload_part_copy()
            .bucket("mpb")
            .key("obj")
            .upload_id(&id)
            .part_number(2)
            .copy_source("mpb/source")
            .copy_source_range(format!("bytes=0-{}", 5 * MIB - 1))
            .send()
            .await
            .unwrap();
        let e2 = r2.copy_part_result().unwrap().e_tag().unwrap().to_owned();
        let p = s3
            .list_parts()
            .bucket("mpb")
            .key("obj")
            .upload_id(&id)
            .send()
            .await
            .unwrap();
        assert_eq!(
            p.parts()
                .iter()
                .map(|x| x.size().unwrap())
                .collect::<Vec<_>>(),
            [5 * MIB as i64, 5 * MIB as i64, 1000]
        );

        let ups = s3
            .list_multipart_uploads()
            .bucket("mpb")
            .send()
            .await
            .unwrap();
        assert_eq!(ups.uploads().len(), 1);
        assert_eq!(ups.uploads()[0].upload_id(), Some(id.as_str()));

        let complete = |parts: Vec<(i32, String)>| {
            let s3 = s3.clone();
            let id = id.clone();
            async move {
                let parts = parts
                    .into_iter()
                    .map(|(n, e)| CompletedPart::builder().part_number(n).e_tag(e).build())
                    .collect();
                s3.complete_multipart_upload()
                    .bucket("mpb")
                    .key("obj")
                    .upload_id(id)
                    .multipart_upload(
                        CompletedMultipartUpload::builder()
                            .set_parts(Some(parts))
                            .build(),
                    )
                    .send()
                    .await
            }
        };
        let code = |r: Result<_, aws_sdk_s3::error::SdkError<_>>| match r {
            Err(e) => aws_sdk_s3::error::ProvideErrorMetadata::code(&e).map(str::to_owned),
            Ok(_) => None,
        };
        let e1 = r1.e_tag().unwrap().to_owned();
        assert_eq!(
            code(complete(vec![(1, "\"0000\"".into())]).await).as_deref(),
            Some("InvalidPart")
        );
        assert_eq!(
            code(complete(vec![(2, e2.clone()), (1, e1.clone())]).await).as_deref(),
            Some("InvalidPartOrder")
        );
        let small_etag = format!("\"{}\"", hex::encode(Md5::digest(&small)));
        // Completing with parts 1 and 3 only: part 2 is discarded.
        complete(vec![(1, e1.clone()), (3, small_etag)])
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("mpb")
            .key("obj")
            .send()
            .await
            .unwrap();
        let body = got.body.collect().await.unwrap().into_bytes();
        assert!(body.as_ref() == [first.as_slice(), small.as_slice()].concat().as_slice());
        let total_chunks = gw.chunk_count("mpb").await;
        let source_chunks = (6 * MIB).div_ceil(255 * 1024) as u64; // a plain PUT: 255 KiB chunks
        assert_eq!(
            total_chunks,
            source_chunks + 5 + 1,
            "source + object (5 + 1); no leftover part chunks"
        );

        let (id2, done) = upload_parts(&s3, "mpb", "tiny", &[&small, &small]).await;
        let e = s3
            .complete_multipart_upload()
            .bucket("mpb")
            .key("tiny")
            .upload_id(&id2)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
            Some("EntityTooSmall")
        );
        s3.abort_multipart_upload()
            .bucket("mpb")
            .key("tiny")
            .upload_id(&id2)
            .send()
            .await
            .unwrap();
        let e = s3
            .list_parts()
            .bucket("mpb")
            .key("tiny")
            .upload_id(&id2)
            .send()
            .await
            .unwrap_err();
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
            Some("NoSuchUpload")
        );
        assert_eq!(
            gw.chunk_count("mpb").await,
            total_chunks,
            "abort removed the parts' chunks"
        );
    });
}

#[test]
fn stale_uploads_are_swept() {
    support::run(async {
        let name = format!(
            "g_sweep_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        // Stale after 5 s: with 1 s a loaded machine let the sweep abort the upload between
        // its part and the count of its chunks.
        let gw = support::gateway_with(&name, |c| c.multipart_max_age = 5).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let (id, _) = upload_parts(&s3, "mpb", "old", &[b"some bytes"]).await;
        assert_eq!(gw.chunk_count("mpb").await, 1);
        // The upload answers NoSuchUpload as soon as the sweep marks it aborting, before its
        // chunks are deleted (a CI run caught that moment twice), so the chunks are awaited
        // too, under the same deadline.
        let mut gone = false;
        let mut chunks = 1;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(40);
        while std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            if !gone {
                match s3
                    .list_parts()
                    .bucket("mpb")
                    .key("old")
                    .upload_id(&id)
                    .send()
                    .await
                {
                    Ok(_) => continue,
                    Err(e) => {
                        let code = aws_sdk_s3::error::ProvideErrorMetadata::code(&e);
                        assert_eq!(code, Some("NoSuchUpload"), "{e:?}");
                        gone = true;
                    }
                }
            }
            chunks = gw.chunk_count("mpb").await;
            if chunks == 0 {
                break;
            }
        }
        assert!(gone, "the sweep aborted the stale upload");
        assert_eq!(chunks, 0, "the sweep deleted the upload's chunks");
    });
}

#[test]
fn multipart_checksums_and_object_attributes() {
    use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, ObjectAttributes};
    use base64::Engine;
    support::run(async {
        let gw = support::gateway("mpsum").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let data = random_bytes(5 * MIB + 777, 26);
        let parts: Vec<&[u8]> = vec![&data[..5 * MIB], &data[5 * MIB..]];
        let up = s3
            .create_multipart_upload()
            .bucket("mpb")
            .key("sum")
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let mut done = Vec::new();
        let mut raw = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let r = s3
                .upload_part()
                .bucket("mpb")
                .key("sum")
                .upload_id(id)
                .part_number(i as i32 + 1)
                .checksum_algorithm(ChecksumAlgorithm::Crc32)
                .body(ByteStream::from(p.to_vec()))
                .send()
                .await
                .unwrap();
            let crc = crc32fast::hash(p).to_be_bytes();
            let want = base64::engine::general_purpose::STANDARD.encode(crc);
            assert_eq!(
                r.checksum_crc32(),
                Some(want.as_str()),
                "part checksum returned"
            );
            raw.extend_from_slice(&crc);
            done.push(
                CompletedPart::builder()
                    .part_number(i as i32 + 1)
                    .e_tag(r.e_tag().unwrap())
                    .checksum_crc32(want)
                    .build(),
            );
        }
        s3.complete_multipart_upload()
            .bucket("mpb")
            .key("sum")
            .upload_id(id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        // Composite: CRC32 of the concatenated binary part CRC32s, "-2".
        let composite = format!(
            "{}-2",
            base64::engine::general_purpose::STANDARD.encode(crc32fast::hash(&raw).to_be_bytes())
        );
        let h = s3
            .head_object()
            .bucket("mpb")
            .key("sum")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        assert_eq!(h.checksum_crc32(), Some(composite.as_str()));

        let a = s3
            .get_object_attributes()
            .bucket("mpb")
            .key("sum")
            .object_attributes(ObjectAttributes::Etag)
            .object_attributes(ObjectAttributes::ObjectSize)
            .object_attributes(ObjectAttributes::ObjectParts)
            .object_attributes(ObjectAttributes::Checksum)
            .object_attributes(ObjectAttributes::StorageClass)
            .send()
            .await
            .unwrap();
        assert_eq!(a.object_size(), Some(data.len() as i64));
        assert_eq!(a.e_tag(), Some(multipart_etag(&parts).trim_matches('"')));
        let op = a.object_parts().unwrap();
        assert_eq!(op.total_parts_count(), Some(2));
        assert_eq!(op.parts()[1].size(), Some(777));
        assert_eq!(
            a.checksum().unwrap().checksum_crc32(),
            Some(composite.as_str())
        );
        assert_eq!(a.storage_class().map(|s| s.as_str()), Some("STANDARD"));

        // CRC64NVME: full-object only, combined from the parts' CRCs and sizes.
        let up = s3
            .create_multipart_upload()
            .bucket("mpb")
            .key("full")
            .checksum_algorithm(ChecksumAlgorithm::Crc64Nvme)
            .send()
            .await
            .unwrap();
        assert_eq!(
            up.checksum_type(),
            Some(&aws_sdk_s3::types::ChecksumType::FullObject)
        );
        let id = up.upload_id().unwrap();
        let mut done = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            let r = s3
                .upload_part()
                .bucket("mpb")
                .key("full")
                .upload_id(id)
                .part_number(i as i32 + 1)
                .checksum_algorithm(ChecksumAlgorithm::Crc64Nvme)
                .body(ByteStream::from(p.to_vec()))
                .send()
                .await
                .unwrap();
            done.push(
                CompletedPart::builder()
                    .part_number(i as i32 + 1)
                    .e_tag(r.e_tag().unwrap())
                    .set_checksum_crc64_nvme(r.checksum_crc64_nvme().map(str::to_owned))
                    .build(),
            );
        }
        let listed = s3
            .list_parts()
            .bucket("mpb")
            .key("full")
            .upload_id(id)
            .send()
            .await
            .unwrap();
        assert_eq!(
            listed.checksum_algorithm(),
            Some(&ChecksumAlgorithm::Crc64Nvme)
        );
        assert!(listed.parts()[0].checksum_crc64_nvme().is_some());
        let c = s3
            .complete_multipart_upload()
            .bucket("mpb")
            .key("full")
            .upload_id(id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let mut digest = crc64fast_nvme::Digest::new();
        digest.write(&data);
        let whole = base64::engine::general_purpose::STANDARD.encode(digest.sum64().to_be_bytes());
        assert_eq!(
            c.checksum_crc64_nvme(),
            Some(whole.as_str()),
            "Complete's result"
        );
        assert_eq!(
            c.checksum_type(),
            Some(&aws_sdk_s3::types::ChecksumType::FullObject)
        );
        let h = s3
            .head_object()
            .bucket("mpb")
            .key("full")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        assert_eq!(
            h.checksum_crc64_nvme(),
            Some(whole.as_str()),
            "the object's"
        );
    });
}

#[test]
fn complete_interrupted_midway_is_retryable() {
    support::run(async {
        let gw = support::gateway("mpretry").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("mpb").send().await.unwrap();
        let data = random_bytes(10 * MIB + 99, 27);
        let parts: Vec<&[u8]> = vec![&data[..5 * MIB], &data[5 * MIB..]];
        let (id, done) = upload_parts(&s3, "mpb", "retry", &parts).await;
        // Simulate a gateway killed during Complete: the upload was marked completing with
        // this part list, part 1's chunks were already renumbered from their staging range into
        // the object's chunks 0..4, nothing else happened.
        let recs = gw.state.store.meta().list_parts(&id, 0, 0).await.unwrap();
        let etag = multipart_etag(&parts);
        assert!(gw
            .state
            .store
            .meta()
            .mark_upload_completing(&id, &etag)
            .await
            .unwrap());
        gw.db
            .collection::<Document>("mpb.chunks")
            .update_many(
                recs[0].chunk_filter(),
                doc! {"$inc": {"n": -(recs[0].base as i32)}},
            )
            .await
            .unwrap();
        // A Complete with another part list is refused now: the chunks were renumbered for
        // the first one.
        let e = s3
            .complete_multipart_upload()
            .bucket("mpb")
            .key("retry")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .parts(done[0].clone())
                    .build(),
            )
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("NoSuchUpload"));
        // The client retries the Complete: it finishes with the right bytes and layout.
        s3.complete_multipart_upload()
            .bucket("mpb")
            .key("retry")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let got = s3
            .get_object()
            .bucket("mpb")
            .key("retry")
            .send()
            .await
            .unwrap();
        assert!(got.body.collect().await.unwrap().into_bytes().as_ref() == data.as_slice());
        assert_eq!(gw.chunk_count("mpb").await, data.len().div_ceil(MIB) as u64);
    });
}

/// A completion that runs longer than `--complete-keepalive-ms` (0 here, so every one) answers
/// in AWS's keep-alive form: 200 and the XML declaration at once, then the result, or an
/// `<Error>` document when the completion fails. The raw body has that shape; the Rust SDK reads
/// the result, and sees the failure as an error, not as a success.
#[test]
fn a_long_completion_answers_in_the_keepalive_form() {
    support::run(async {
        let name = format!(
            "g_keepalive_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| c.complete_keepalive_ms = 0).await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("kalive").send().await.unwrap();
        let a = random_bytes(5 * MIB + 1, 41);
        let b = b"tail".to_vec();
        // Through the SDK: the result is read from the body.
        let (id, done) = upload_parts(&s3, "kalive", "sdk", &[&a, &b]).await;
        let r = s3
            .complete_multipart_upload()
            .bucket("kalive")
            .key("sdk")
            .upload_id(&id)
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.e_tag(), Some(multipart_etag(&[&a, &b]).as_str()));
        let got = s3
            .get_object()
            .bucket("kalive")
            .key("sdk")
            .send()
            .await
            .unwrap();
        let mut want = a.clone();
        want.extend_from_slice(&b);
        assert_eq!(
            got.body.collect().await.unwrap().into_bytes().as_ref(),
            want.as_slice()
        );
        // Raw: the shape of the answer.
        let (id, done) = upload_parts(&s3, "kalive", "raw", &[&a, &b]).await;
        let xml: String = done
            .iter()
            .map(|p| {
                format!(
                    "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                    p.part_number().unwrap(),
                    p.e_tag().unwrap()
                )
            })
            .collect();
        let mut raw = support::Raw::new("POST", "");
        let path = format!("/kalive/raw?uploadId={id}");
        raw.path_and_query = &path;
        raw.body = format!("<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>").into_bytes();
        let resp = raw.send(&gw).await;
        assert_eq!(resp.status().as_u16(), 200);
        // Streamed (the answer is sent before its length is known), unlike a whole answer.
        assert!(
            resp.headers().get("content-length").is_none(),
            "{:?}",
            resp.headers()
        );
        // The keep-alive form: the declaration at once, then a space every few seconds while
        // the completion runs (some on a loaded machine), then the result.
        let text = resp.text().await.unwrap();
        let decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
        assert!(
            text.strip_prefix(decl).is_some_and(|rest| rest
                .trim_start_matches(' ')
                .starts_with("<CompleteMultipartUploadResult"))
                && text.contains("<ETag>"),
            "{text}"
        );
        // A completion that fails after the 200 (its condition: the key exists now): raw,
        // the 200 carries the error document.
        let (id, done) = upload_parts(&s3, "kalive", "raw", &[&a, &b]).await;
        let xml: String = done
            .iter()
            .map(|p| {
                format!(
                    "<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>",
                    p.part_number().unwrap(),
                    p.e_tag().unwrap()
                )
            })
            .collect();
        let path = format!("/kalive/raw?uploadId={id}");
        let mut raw = support::Raw::new("POST", &path);
        raw.headers.push(("if-none-match".into(), "*".into()));
        raw.body = format!("<CompleteMultipartUpload>{xml}</CompleteMultipartUpload>").into_bytes();
        let resp = raw.send(&gw).await;
        assert_eq!(resp.status().as_u16(), 200);
        let text = resp.text().await.unwrap();
        assert!(
            text.strip_prefix(decl).is_some_and(|rest| rest
                .trim_start_matches(' ')
                .starts_with("<Error><Code>PreconditionFailed</Code>")),
            "{text}"
        );
        // The same through the SDK.
        let (id, done) = upload_parts(&s3, "kalive", "sdk", &[&a, &b]).await;
        let e = s3
            .complete_multipart_upload()
            .bucket("kalive")
            .key("sdk")
            .upload_id(&id)
            .if_none_match("*")
            .multipart_upload(
                CompletedMultipartUpload::builder()
                    .set_parts(Some(done))
                    .build(),
            )
            .send()
            .await
            .expect_err("a failure inside a 200 answer is an error to the SDK");
        assert_eq!(
            aws_sdk_s3::error::ProvideErrorMetadata::code(&e),
            Some("PreconditionFailed"),
            "{e:?}"
        );
    });
}
