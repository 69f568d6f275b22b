//! MinIO's admin API (`/minio/admin/v3/`) through minio-py's own `MinioAdmin` (sealed
//! payloads, signatures with an empty region): users, groups, canned policies, statuses and
//! service accounts, and what they then allow S3 calls (boto3), against a real gateway over
//! the real database (see `tests/py/minio_admin.py`).

use crate::authz::new_key;
use crate::support;

/// The whole round: a user and a group with canned policies attached, allowed and refused
/// exactly as the policies say; disabled users and groups; service accounts whose session
/// policies narrow (and never widen) their parent's rights, inherited along a chain; the
/// 2025-10 escalation (a restricted service account making an unrestricted one) refused, for
/// a user's and for the root's; MinIO's error codes; another account sees none of it.
#[test]
fn minio_py_administers_identity_and_s3_obeys_it() {
    support::run(async {
        let gw = support::gateway("madmin").await;
        let (ak2, sk2) = new_key(&gw, "other account").await;
        support::run_py_checks(&gw, "minio_admin.py", "minio_admin", &[&ak2, &sk2]).await;
    });
}

/// Sealed bodies cost an Argon2id derivation (64 MiB) each: at most two run at once per
/// instance, whatever number of signed requests arrive. Three sealed add-user requests at
/// once: two reach the derivation (held at a fail point) and the third waits for a turn; it
/// reaches it only when one of the two is let go. All three then succeed.
#[test]
fn sealed_payloads_open_two_at_a_time() {
    support::run(async {
        let db = format!(
            "g_madminkdf_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..10]
        );
        let gw = support::gateway_on(&db).await;
        assert_eq!(grids3::minio_admin::entry::KDF_AT_ONCE, 2);
        // Both armed before any request: the first two derivations stop at `first_two`, the
        // third at `third`.
        let first_two = grids3::failpoint::pause_times("madmin.kdf", Some(&db), 2);
        let third = grids3::failpoint::pause("madmin.kdf", Some(&db));
        let calls: Vec<_> = (0..3)
            .map(|i| {
                let gw = gw.clone();
                tokio::spawn(async move {
                    let body = grids3::minio_admin::crypto::encrypt(
                        support::SK,
                        format!(r#"{{"status":"enabled","secretKey":"user-{i}-secret"}}"#)
                            .as_bytes(),
                    );
                    let path = format!("/minio/admin/v3/add-user?accessKey=user{i}");
                    let mut raw = support::Raw::new("PUT", &path);
                    raw.body = body;
                    raw.send(&gw).await.status().as_u16()
                })
            })
            .collect();
        first_two
            .reached_n(2, std::time::Duration::from_secs(60))
            .await;
        // The third is signed and checked long before this, and then waits for a turn.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        assert_eq!(
            third.hits(),
            0,
            "a third derivation ran while two were held"
        );
        first_two.release();
        third.reached().await;
        third.release();
        for c in calls {
            assert_eq!(c.await.unwrap(), 200);
        }
    });
}

/// Issue 62: `datausageinfo` through minio-py's `get_data_usage_info` recounts what each
/// of the caller's buckets holds: every stored version (current and noncurrent) at its
/// size, current objects, delete markers, and multipart uploads in progress with their
/// parts' bytes; another account sees none of it.
#[test]
fn data_usage_info_counts_versions_markers_and_parts() {
    support::run(async {
        let gw = support::gateway("madminusage").await;
        let (ak2, sk2) = new_key(&gw, "other account").await;
        let mut args = vec![
            gw.endpoint(),
            support::AK.to_owned(),
            support::SK.to_owned(),
        ];
        args.extend([ak2, sk2]);
        let r = support::py_result("minio_usage.py", args).await;
        let root = &r["root"];
        assert_eq!(root["bucketsCount"], 2, "{r}");
        let plain = &root["bucketsUsageInfo"]["plain"];
        assert_eq!(
            (
                &plain["size"],
                &plain["objectsCount"],
                &plain["versionsCount"]
            ),
            (
                &serde_json::json!(8),
                &serde_json::json!(2),
                &serde_json::json!(2)
            ),
            "{r}"
        );
        assert_eq!(plain["deleteMarkersCount"], 0, "{r}");
        assert_eq!(
            (
                &plain["x-grids3-uploads"],
                &plain["x-grids3-parts"],
                &plain["x-grids3-parts-size"]
            ),
            (
                &serde_json::json!(1),
                &serde_json::json!(2),
                &serde_json::json!(150)
            ),
            "{r}"
        );
        let ver = &root["bucketsUsageInfo"]["ver"];
        // k: 4 and 6 bytes (both kept, the latest a marker); j: 1 byte.
        assert_eq!(
            (
                &ver["size"],
                &ver["objectsCount"],
                &ver["versionsCount"],
                &ver["deleteMarkersCount"]
            ),
            (
                &serde_json::json!(11),
                &serde_json::json!(1),
                &serde_json::json!(3),
                &serde_json::json!(1)
            ),
            "{r}"
        );
        assert_eq!(root["objectsTotalSize"], 19, "{r}");
        assert_eq!(root["objectsCount"], 3, "{r}");
        assert_eq!(r["other"]["bucketsCount"], 0, "{r}");
        assert_eq!(
            r["capacity"],
            serde_json::json!([501, "NotImplemented"]),
            "{r}"
        );

        // `grids3 admin usage` says the same, per bucket and per account.
        let endpoint = gw.endpoint();
        let u = tokio::task::spawn_blocking(move || support::admin_cli(&endpoint, &["usage"]))
            .await
            .unwrap();
        let plain = u["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["bucket"] == "plain")
            .unwrap();
        assert_eq!(
            (&plain["bytes"], &plain["objects"], &plain["partBytes"]),
            (
                &serde_json::json!(8),
                &serde_json::json!(2),
                &serde_json::json!(150)
            ),
            "{u}"
        );
        let account = grids3::storage::identity::account_id(support::AK);
        let mine = u["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["account"] == account.as_str())
            .unwrap();
        assert_eq!(
            (&mine["bytes"], &mine["versions"], &mine["deleteMarkers"]),
            (
                &serde_json::json!(19),
                &serde_json::json!(5),
                &serde_json::json!(1)
            ),
            "{u}"
        );
    });
}
