//! The keyring's writes against a database that answers a landed write with an error.

use std::time::Duration;

use crate::support;

/// CI saw `create-kms-key --id testkey-1` answer 409 "exists" on a database where no such key
/// had been made: the insert landed, its answer was lost, and the driver's retry met the
/// first attempt's document. A named key's creation now tells its own landed insert (the
/// fresh sealed material is there) from another key of that name.
#[test]
fn a_retried_key_creation_that_met_its_own_insert_succeeds() {
    support::run(async {
        let db = format!(
            "g_kmsretry_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&db, |c| {
            c.master_key = Some(crate::sse::MASTER.to_owned().into());
        })
        .await;
        let name = format!(
            "replayed-{}",
            &uuid::Uuid::new_v4().simple().to_string()[..8]
        );
        let _replay =
            grids3::failpoint::shorten("keyring.insert_replayed", &name, Duration::from_millis(1));
        let endpoint = gw.endpoint();
        let n = name.clone();
        let made = tokio::task::spawn_blocking(move || {
            support::admin_cli(&endpoint, &["create-kms-key", "--id", &n])
        })
        .await
        .unwrap();
        assert_eq!(made["keyId"], name.as_str(), "{made}");
        // A second key of that name is still refused.
        let endpoint = gw.endpoint();
        let n = name.clone();
        let again = tokio::task::spawn_blocking(move || {
            support::admin_cli_failure(&endpoint, &["create-kms-key", "--id", &n])
        })
        .await
        .unwrap();
        assert!(again.contains("exists"), "{again}");
    });
}
