//! Metadata search against the review of issue 63: a page ends on time whatever its query
//! costs, and paging still finds everything; a version is matched only where a GET of it is
//! allowed; a caller is never read by an index of what it may not read (a timing leak); and
//! a declaration made while another instance's build leads is built when that build ends.

use aws_sdk_s3::primitives::ByteStream;
use grids3::failpoint;
use std::time::Duration;

use crate::authz::{admin, new_key};
use crate::support::{self, Gateway, Raw};

/// Every (key, version) a search finds as `ak`, following its pages; and how many pages.
async fn search_as(
    gw: &Gateway,
    (ak, sk): (&str, &str),
    bucket: &str,
    q: &str,
    versions: bool,
) -> (u16, Vec<(String, String)>, usize) {
    let (mut found, mut pages) = (Vec::new(), 0);
    let (mut marker, mut vmarker) = (String::new(), String::new());
    loop {
        let enc = |s: &str| grids3::auth::sigv4::uri_encode(s, true);
        let path = if versions {
            format!(
                "/{bucket}?versions&search={}&key-marker={}&version-id-marker={}",
                enc(q),
                enc(&marker),
                enc(&vmarker)
            )
        } else {
            format!("/{bucket}?search={}&marker={}", enc(q), enc(&marker))
        };
        let mut r = Raw::new("GET", &path);
        (r.access_key, r.secret) = (ak, sk);
        let resp = r.send(gw).await;
        let status = resp.status().as_u16();
        let body = resp.text().await.unwrap();
        if status != 200 {
            return (status, found, pages);
        }
        pages += 1;
        let tag = |s: &str, t: &str| {
            s.split(&format!("<{t}>"))
                .nth(1)
                .and_then(|x| x.split(&format!("</{t}>")).next())
                .map(str::to_owned)
        };
        let items = if versions { "<Version>" } else { "<Contents>" };
        for part in body.split(items).skip(1) {
            found.push((
                tag(part, "Key").unwrap(),
                tag(part, "VersionId").unwrap_or_default(),
            ));
        }
        if !body.contains("<IsTruncated>true</IsTruncated>") {
            return (status, found, pages);
        }
        if versions {
            marker = tag(&body, "NextKeyMarker").expect("a next key marker");
            vmarker = tag(&body, "NextVersionIdMarker").unwrap_or_default();
        } else {
            marker = tag(&body, "NextMarker").expect("a next marker");
        }
    }
}

const ROOT: (&str, &str) = (support::AK, support::SK);

#[test]
fn a_page_ends_on_time_whatever_its_query_costs_and_paging_finds_everything() {
    support::run(async {
        let gw = support::gateway("search_budget").await;
        let s3 = gw.sdk();
        let b = "budget";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for i in 0..12 {
            s3.put_object()
                .bucket(b)
                .key(format!("k{i:02}"))
                .metadata("m", if i % 2 == 0 { "x" } else { "y" })
                .body(ByteStream::from_static(b"v"))
                .send()
                .await
                .unwrap();
        }
        // Its time spent before it begins: each page examines one key (never none), and
        // ends there with a marker; following them finds every match.
        let _spent = failpoint::shorten("search.page_budget", b, Duration::ZERO);
        let q = "x-amz-meta-m = x AND key LIKE '^k.{1,64}$'";
        let (status, found, pages) = search_as(&gw, ROOT, b, q, false).await;
        assert_eq!(status, 200);
        let keys: Vec<&str> = found.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["k00", "k02", "k04", "k06", "k08", "k10"]);
        assert!(pages >= 12, "one key a page: {pages} pages");
        let (_, found, pages) = search_as(&gw, ROOT, b, q, true).await;
        assert_eq!(found.len(), 6, "{found:?}");
        assert!(pages >= 12, "{pages} pages");
        // A pattern that would cost without bound is refused before it runs.
        let (status, _, _) = search_as(&gw, ROOT, b, "key LIKE 'a.{1000}[^ab]'", false).await;
        assert_eq!(status, 400);
    });
}

#[test]
fn a_version_is_matched_only_where_a_get_of_it_is_allowed() {
    support::run(async {
        let gw = support::gateway("search_version_rights").await;
        let s3 = gw.sdk();
        let b = "vrights";
        s3.create_bucket().bucket(b).send().await.unwrap();
        s3.put_bucket_versioning()
            .bucket(b)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        for secret in ["old", "new"] {
            s3.put_object()
                .bucket(b)
                .key("k")
                .metadata("secret", secret)
                .body(ByteStream::from_static(b"v"))
                .send()
                .await
                .unwrap();
        }
        let (ak, sk) = new_key(&gw, "noversions").await;
        let arn = format!("arn:aws:s3:::{b}");
        s3.put_bucket_policy()
            .bucket(b)
            .policy(
                serde_json::json!({"Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": &ak},
                     "Action": ["s3:ListBucket", "s3:ListBucketVersions"], "Resource": &arn},
                    {"Effect": "Allow", "Principal": {"AWS": &ak}, "Action": "s3:GetObject",
                     "Resource": format!("{arn}/*")},
                    {"Effect": "Deny", "Principal": {"AWS": &ak},
                     "Action": "s3:GetObjectVersion", "Resource": format!("{arn}/*")}]})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        let who = (ak.as_str(), sk.as_str());
        // Its current object it may read; no version of it (GetObjectVersion denied).
        let (_, found, _) = search_as(&gw, who, b, "x-amz-meta-secret = new", false).await;
        assert_eq!(found.len(), 1);
        for v in ["old", "new"] {
            let q = format!("x-amz-meta-secret = {v}");
            let (status, found, _) = search_as(&gw, who, b, &q, true).await;
            assert_eq!((status, found), (200, vec![]), "{q}");
            // The root key finds each.
            let (_, found, _) = search_as(&gw, ROOT, b, &q, true).await;
            assert_eq!(found.len(), 1, "{q}");
        }
    });
}

#[test]
fn a_caller_is_never_read_by_an_index_of_what_it_may_not_read() {
    support::run(async {
        let gw = support::gateway("search_index_rights").await;
        let s3 = gw.sdk();
        let b = "ixrights";
        s3.create_bucket().bucket(b).send().await.unwrap();
        for i in 0..4 {
            s3.put_object()
                .bucket(b)
                .key(format!("k{i}"))
                .metadata("secret", "s")
                .body(ByteStream::from(vec![b'x'; i]))
                .send()
                .await
                .unwrap();
        }
        let path = format!("/_grids3/admin/buckets/{b}/search-indexes");
        let (status, v) = admin(
            &gw,
            "PUT",
            &path,
            serde_json::json!({"fields": ["x-amz-meta-secret", "size"]}),
        )
        .await;
        assert_eq!(
            (status, v["fields"][0]["state"].as_str()),
            (200, Some("ready")),
            "{v}"
        );
        let (ak, sk) = new_key(&gw, "lister").await;
        s3.put_bucket_policy()
            .bucket(b)
            .policy(
                serde_json::json!({"Statement": [
                    {"Effect": "Allow", "Principal": {"AWS": &ak}, "Action": "s3:ListBucket",
                     "Resource": format!("arn:aws:s3:::{b}")}]})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        let who = (ak.as_str(), sk.as_str());
        let indexed = failpoint::count("search.indexed", Some(b));
        let (_, found, _) = search_as(&gw, who, b, "x-amz-meta-secret = s", false).await;
        assert_eq!(found, vec![], "metadata it may not read matches nothing");
        assert_eq!(
            indexed.hits(),
            0,
            "no index of metadata for a caller that may not read it"
        );
        // Sizes every lister sees: read by their index, for it too.
        let (_, found, _) = search_as(&gw, who, b, "size = 2", false).await;
        assert_eq!(found.len(), 1);
        assert_eq!(indexed.hits(), 1);
    });
}

#[test]
fn a_declaration_made_while_another_instance_builds_is_built_when_that_build_ends() {
    support::run(async {
        let db = format!(
            "g_ixlead_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let one = support::gateway_on(&db).await;
        let two = support::gateway_on(&db).await;
        let b = "ixlead";
        one.sdk().create_bucket().bucket(b).send().await.unwrap();
        let path = format!("/_grids3/admin/buckets/{b}/search-indexes");
        let _no_wait = failpoint::shorten("search_index.inline_build", b, Duration::ZERO);
        // The first instance's build leads, stopped before it creates anything.
        let building = failpoint::pause("search_index.building", Some(b));
        let (status, _) = admin(&one, "PUT", &path, serde_json::json!({"fields": ["size"]})).await;
        assert_eq!(status, 200);
        building.reached().await;
        // The second declares another field meanwhile: its own build cannot lead.
        let (status, v) = admin(
            &two,
            "PUT",
            &path,
            serde_json::json!({"fields": ["size", "x-amz-meta-a"]}),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        let finished = failpoint::count("search_index.finished", Some(b));
        building.release();
        // The leading build goes on to the field declared while it ran.
        let mut states = serde_json::Value::Null;
        for _ in 0..20 {
            let runs = finished.hits();
            let (_, v) = admin(&one, "GET", &path, serde_json::Value::Null).await;
            states = v["fields"].clone();
            if states
                .as_array()
                .is_some_and(|f| f.len() == 2 && f.iter().all(|f| f["state"] == "ready"))
            {
                break;
            }
            // Not yet: the next run's end (one that ended since `runs` was read counts).
            finished.reached_n(runs + 1, Duration::from_secs(60)).await;
        }
        assert_eq!(
            states,
            serde_json::json!([{"field": "size", "state": "ready", "declared": states[0]["declared"]},
                               {"field": "x-amz-meta-a", "state": "ready", "declared": states[1]["declared"]}])
        );
        let names = one
            .db
            .collection::<mongodb::bson::Document>(&format!("{b}.files"))
            .list_index_names()
            .await
            .unwrap();
        for want in [
            "s3search:length",
            "s3search:metadata.userMetadata.a",
            "s3search:metadata.a",
        ] {
            assert!(names.iter().any(|n| n == want), "{want}: {names:?}");
        }
    });
}
