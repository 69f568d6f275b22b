//! POST Object with real clients (tests/py/post.py): boto3's presigned POST policies (SigV4
//! and SigV2) posted with curl -F; conditions, size ranges, expiry, redirects, 201 answers.

use crate::support;

#[test]
fn form_uploads_with_signed_policies() {
    support::run(async {
        let gw = support::gateway("post").await;
        support::run_py_checks(&gw, "post.py", "post", &[]).await;
    });
}
