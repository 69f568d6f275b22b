//! Issue 59: "A few MB of gzip made of tar headers can create about 12 million empty objects
//! (the only cap is 6 GiB expanded)." A snowball upload stores at most
//! `--snowball-max-members` members (10,000 by default); an archive with more stores none.

use std::io::Write;

use crate::support;

/// A ustar header block of an empty member (`dir`: a directory).
fn header(name: &str, dir: bool) -> [u8; 512] {
    let mut h = [0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(b"00000000000\0");
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = if dir { b'5' } else { b'0' };
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|b| u32::from(*b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A gzipped tar of `files` empty files, and `dirs` directories before them.
fn tar_gz(files: usize, dirs: usize) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    for d in 0..dirs {
        gz.write_all(&header(&format!("d{d}/"), true)).unwrap();
    }
    for f in 0..files {
        gz.write_all(&header(&format!("f/{f:06}"), false)).unwrap();
    }
    gz.write_all(&[0u8; 1024]).unwrap();
    gz.finish().unwrap()
}

/// A snowball upload of `body` (with `Ignore-Dirs` when `ignore_dirs`): its status, its
/// error code, and the objects it says it made.
async fn snowball(
    gw: &support::Gateway,
    bucket: &str,
    body: Vec<u8>,
    ignore_dirs: bool,
) -> (u16, String, Option<String>) {
    let path = format!("/{bucket}/batch.tar.gz");
    let mut raw = support::Raw::new("PUT", &path);
    raw.body = body;
    raw.headers
        .push(("x-amz-meta-snowball-auto-extract".into(), "true".into()));
    if ignore_dirs {
        raw.headers.push((
            "x-amz-meta-minio-snowball-ignore-dirs".into(),
            "true".into(),
        ));
    }
    let r = raw.send(gw).await;
    let status = r.status().as_u16();
    let made = r
        .headers()
        .get("x-grids3-snowball-objects")
        .map(|v| v.to_str().unwrap().to_owned());
    let code = support::error_code(&r.text().await.unwrap());
    (status, code, made)
}

async fn object_count(s3: &aws_sdk_s3::Client, bucket: &str) -> usize {
    let mut n = 0;
    let mut pages = s3.list_objects_v2().bucket(bucket).into_paginator().send();
    while let Some(p) = pages.next().await {
        n += p.unwrap().contents().len();
    }
    n
}

#[test]
fn an_archive_over_the_default_member_bound_stores_nothing() {
    support::run(async {
        let gw = support::gateway("snowmax").await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("snow").send().await.unwrap();
        // 10,001 empty files: 5 MB of tar, a few KB gzipped.
        let body = tar_gz(10_001, 0);
        assert!(body.len() < 100_000, "{}", body.len());
        let (status, code, made) = snowball(&gw, "snow", body, false).await;
        assert_eq!((status, code.as_str(), made), (400, "InvalidRequest", None));
        assert_eq!(object_count(&s3, "snow").await, 0);
        assert_eq!(gw.file_count("snow").await, 0);
    });
}

#[test]
fn the_member_bound_counts_what_would_be_stored() {
    support::run(async {
        let gw = support::gateway_with(
            &format!("g_snowcfg_{}", uuid::Uuid::new_v4().simple()),
            |c| {
                c.snowball_max_members = 20;
            },
        )
        .await;
        let s3 = gw.sdk();
        s3.create_bucket().bucket("snow").send().await.unwrap();
        // Over the bound by one (directories are stored as `dir/` objects, and count).
        let (status, code, _) = snowball(&gw, "snow", tar_gz(18, 3), false).await;
        assert_eq!((status, code.as_str()), (400, "InvalidRequest"));
        assert_eq!(object_count(&s3, "snow").await, 0);
        // The same archive without its directories is within it.
        let (status, _, made) = snowball(&gw, "snow", tar_gz(18, 3), true).await;
        assert_eq!((status, made.as_deref()), (200, Some("18")));
        // Exactly at the bound.
        let (status, _, made) = snowball(&gw, "snow", tar_gz(17, 3), false).await;
        assert_eq!((status, made.as_deref()), (200, Some("20")));
        assert_eq!(object_count(&s3, "snow").await, 21);
    });
}
