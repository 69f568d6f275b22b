//! Signature Version 2 with real clients (tests/py/sigv2.py): boto3 signing with SigV2,
//! boto3's and awscli's default presigned URLs fetched with plain HTTP and curl, and
//! `--disable-sigv2`.

use crate::support;

#[test]
fn boto3_and_awscli_sigv2_requests_and_presigned_urls() {
    support::run(async {
        let gw = support::gateway("sigv2").await;
        support::run_py_checks(&gw, "sigv2.py", "sigv2", &[]).await;
    });
}

#[test]
fn sigv2_can_be_turned_off() {
    support::run(async {
        let name = format!(
            "g_nov2_{}",
            &uuid::Uuid::new_v4().simple().to_string()[..12]
        );
        let gw = support::gateway_with(&name, |c| c.disable_sigv2 = true).await;
        support::run_py_checks(&gw, "sigv2.py", "sigv2", &["disabled"]).await;
    });
}
