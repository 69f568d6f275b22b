//! Issue 62's hostile review (2026-12-07), each finding kept fixed:
//! - a write in flight when a bucket's first limit is set passed the limit (it began
//!   unmetered and published after the count that precedes the limit);
//! - a small body's hold, sent when its length is declared, was renewed only once the body
//!   began, so a client that waited 20 s lost it to the janitor (a false refusal);
//! - UploadPartCopy stored bytes before it was refused, and named a part of its size.

use std::time::Duration;

use aws_sdk_s3::primitives::ByteStream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::quota::{assert_counted_as_recounted, counters};
use crate::quota_overlap::chunks_of;
use crate::support;

async fn gateway(tag: &str) -> support::Gateway {
    let db = format!(
        "g_{tag}_{}",
        &uuid::Uuid::new_v4().simple().to_string()[..12]
    );
    support::gateway_with(&db, |c| c.janitor_interval = 3600).await
}

fn limits(bytes: i64) -> grids3::storage::meta::Limits {
    grids3::storage::meta::Limits {
        bytes: Some(bytes),
        objects: None,
    }
}

/// A PUT of `len` bytes by a presigned URL over a raw connection: the head and `first`
/// bytes of the body are sent now; the rest when the returned closure is called, which
/// answers the status line.
async fn slow_put(
    gw: &support::Gateway,
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    len: usize,
    first: usize,
) -> (tokio::net::TcpStream, usize) {
    let url = s3
        .put_object()
        .bucket(bucket)
        .key(key)
        .presigned(presigning())
        .await
        .unwrap();
    slow_send(gw, url.uri(), len, first).await
}

fn presigning() -> aws_sdk_s3::presigning::PresigningConfig {
    aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(300)).unwrap()
}

/// [`slow_put`] to a presigned URL.
async fn slow_send(
    gw: &support::Gateway,
    url: &str,
    len: usize,
    first: usize,
) -> (tokio::net::TcpStream, usize) {
    let uri: reqwest::Url = url.parse().unwrap();
    let target = format!("{}?{}", uri.path(), uri.query().unwrap_or_default());
    let host = format!("{}:{}", uri.host_str().unwrap(), uri.port().unwrap());
    let mut conn = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let head = format!("PUT {target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {len}\r\n\r\n");
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(&vec![7_u8; first]).await.unwrap();
    (conn, len - first)
}

/// Sends the rest of a [`slow_put`]'s body; the answer's status and body.
async fn finish(mut conn: tokio::net::TcpStream, rest: usize) -> (u16, String) {
    conn.write_all(&vec![7_u8; rest]).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0_u8; 4096];
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(end) = text.find("\r\n\r\n") {
                let length: usize = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (k, v) = l.split_once(':')?;
                        k.eq_ignore_ascii_case("content-length")
                            .then(|| v.trim().parse().ok())?
                    })
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    return (text[9..12].parse().unwrap(), text);
                }
            }
            let n = conn.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before the answer: {text}");
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("an answer")
}

#[test]
fn a_write_in_flight_when_a_first_limit_is_set_holds_its_size_before_it_publishes() {
    support::run(async {
        let gw = gateway("qreviewlate").await;
        let s3 = gw.sdk();
        let b = "late";
        s3.create_bucket().bucket(b).send().await.unwrap();
        // Two writes begin while the bucket has no limit: one that will fit, one that will
        // not; their bodies arrive only once the limit is set.
        let opened = grids3::failpoint::count("objects.opened", Some(b));
        let (fits, fits_rest) = slow_put(&gw, &s3, b, "fits", 2_000_000, 300_000).await;
        let (over, over_rest) = slow_put(&gw, &s3, b, "over", 4_000_000, 300_000).await;
        // Both began unmetered.
        opened.reached_n(2, Duration::from_secs(30)).await;
        assert!(gw
            .state
            .store
            .set_bucket_limits(b, limits(3_000_000))
            .await
            .unwrap());
        let (status, body) = finish(fits, fits_rest).await;
        assert_eq!(status, 200, "{body}");
        let (status, body) = finish(over, over_rest).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("XMinioAdminBucketQuotaExceeded"), "{body}");
        // The one that fit counts: a next write that would pass the limit is refused.
        assert_eq!(counters(&gw, b).await.0, 2_000_000);
        let refused = s3
            .put_object()
            .bucket(b)
            .key("next")
            .body(ByteStream::from(vec![1_u8; 2_000_000]))
            .send()
            .await;
        assert!(refused.is_err(), "a write past the limit was accepted");
        assert_counted_as_recounted(&gw, b).await;
        // Nothing of the refused write is left: only the first object's chunks.
        assert_eq!(chunks_of(&gw, b).await, 2_000_000_u64.div_ceil(255 * 1024));
    });
}

#[test]
fn a_small_bodys_hold_sent_ahead_is_renewed_from_when_it_is_stored() {
    support::run(async {
        use grids3::failpoint;
        let gw = gateway("qreviewrenew").await;
        let s3 = gw.sdk();
        let b = "renewed";
        s3.create_bucket().bucket(b).send().await.unwrap();
        assert!(gw
            .state
            .store
            .set_bucket_limits(b, limits(10_000_000))
            .await
            .unwrap());
        // Leases of 3 s, renewed each second.
        let _short = failpoint::shorten("quota.hold_lease", b, Duration::from_secs(3));
        let renewed = failpoint::count("quota.hold_renewed", Some(b));
        // A small body (one chunk, no `Expect`): its hold goes when its length is declared;
        // the client sends nothing of it for a while.
        let (conn, rest) = slow_put(&gw, &s3, b, "late", 150_000, 0).await;
        // Three renewals, a second apart: the hold outlived its first lease before a byte of
        // the body came (well within the body's first 30 s window).
        renewed.reached_n(3, Duration::from_secs(25)).await;
        // The janitor settles lapsed holds; this one has not lapsed.
        assert_eq!(gw.state.store.settle_lapsed_holds().await.unwrap(), 0);
        let (status, body) = finish(conn, rest).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(counters(&gw, b).await.0, 150_000);
        assert_counted_as_recounted(&gw, b).await;
    });
}

#[test]
fn an_upload_part_copy_that_cannot_fit_is_refused_before_a_byte_is_copied() {
    support::run(async {
        use aws_sdk_s3::error::ProvideErrorMetadata;
        let gw = gateway("qreviewpartcopy").await;
        let s3 = gw.sdk();
        let b = "partcopy";
        s3.create_bucket().bucket(b).send().await.unwrap();
        s3.put_object()
            .bucket(b)
            .key("src")
            .body(ByteStream::from(vec![3_u8; 600_000]))
            .send()
            .await
            .unwrap();
        assert!(gw
            .state
            .store
            .set_bucket_limits(b, limits(1_000_000))
            .await
            .unwrap());
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("m")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let before = chunks_of(&gw, b).await;
        let e = s3
            .upload_part_copy()
            .bucket(b)
            .key("m")
            .upload_id(id)
            .part_number(1)
            .copy_source(format!("{b}/src"))
            .send()
            .await
            .expect_err("a copy past the limit was accepted");
        assert_eq!(e.code(), Some("XMinioAdminBucketQuotaExceeded"), "{e:?}");
        let msg = e.message().unwrap_or_default().to_owned();
        assert!(msg.contains("600000 bytes"), "names the copy's size: {msg}");
        assert_eq!(
            chunks_of(&gw, b).await,
            before,
            "bytes were copied before the refusal"
        );
        // Nothing is held or counted for it.
        assert_eq!(counters(&gw, b).await, (600_000, 1, 0, 0, 0, 0));
        s3.abort_multipart_upload()
            .bucket(b)
            .key("m")
            .upload_id(id)
            .send()
            .await
            .unwrap();
        assert_counted_as_recounted(&gw, b).await;
    });
}

#[test]
fn a_part_in_flight_when_a_first_limit_is_set_holds_its_size_before_it_is_recorded() {
    support::run(async {
        let gw = gateway("qreviewlatepart").await;
        let s3 = gw.sdk();
        let b = "latepart";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("m")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap().to_owned();
        let url = s3
            .upload_part()
            .bucket(b)
            .key("m")
            .upload_id(&id)
            .part_number(1)
            .presigned(presigning())
            .await
            .unwrap();
        let opened = grids3::failpoint::count("parts.opened", Some(b));
        let (over, rest) = slow_send(&gw, url.uri(), 4_000_000, 300_000).await;
        // The part began unmetered.
        opened.reached_n(1, Duration::from_secs(30)).await;
        assert!(gw
            .state
            .store
            .set_bucket_limits(b, limits(3_000_000))
            .await
            .unwrap());
        let (status, body) = finish(over, rest).await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("XMinioAdminBucketQuotaExceeded"), "{body}");
        assert_eq!(counters(&gw, b).await, (0, 0, 0, 0, 0, 0));
        assert_eq!(
            chunks_of(&gw, b).await,
            0,
            "the refused part's chunks stayed"
        );
        s3.abort_multipart_upload()
            .bucket(b)
            .key("m")
            .upload_id(&id)
            .send()
            .await
            .unwrap();
        assert_counted_as_recounted(&gw, b).await;
    });
}
