//! The CI smoke test: awscli, boto3 and curl against a real gateway (tests/py/smoke.py).

use crate::support;

#[test]
fn smoke_awscli_boto3_curl() {
    support::run(async {
        let gw = support::gateway("smoke").await;
        support::run_py_checks(&gw, "smoke.py", "smoke", &[]).await;
    });
}
