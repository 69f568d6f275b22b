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
