//! Smaller S3 behaviours that clients and conformance suites check (`tests/py/fidelity.py`).

use crate::authz::new_key;
use crate::support;

#[test]
fn behaviours_as_aws_documents_them() {
    support::run(async {
        let gw = support::gateway("fidelity").await;
        let (ak2, sk2) = new_key(&gw, "second").await;
        support::run_py_checks(&gw, "fidelity.py", "fidelity", &[&ak2, &sk2]).await;
    });
}

#[test]
fn lifecycle_rules_expire_objects_and_abort_uploads() {
    support::run(async {
        let name = format!(
            "g_lifecycle_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        // A lifecycle "day" of one second, so that expiry shows within the test.
        let gw = support::gateway_with(&name, |c| c.lifecycle_day_secs = 1).await;
        support::run_py_checks(&gw, "lifecycle.py", "lifecycle", &[]).await;
    });
}
