//! Issue 60: IAM users, groups and identity policies through real clients (boto3's `iam`
//! client, awscli's `aws iam`), and what they then allow a user's S3 calls, against a real
//! gateway over the real database.

use crate::authz::new_key;
use crate::support;

/// The whole round: users, groups, managed and inline policies, keys, AWS's evaluation cases
/// (identity Allow alone, a bucket policy naming the user alone, across accounts both, a
/// group's Deny over a user's Allow, NotAction/NotResource, tag and username conditions, the
/// home-folder policy), a user's attempts to grant itself more, another account's reach, and
/// awscli (see `tests/py/iam_boto3.py`).
#[test]
fn boto3_and_awscli_manage_identity_and_s3_obeys_it() {
    support::run(async {
        let gw = support::gateway("iam").await;
        let (ak2, sk2) = new_key(&gw, "other account").await;
        support::run_py_checks(&gw, "iam_boto3.py", "iam_boto3", &[&ak2, &sk2]).await;
    });
}
