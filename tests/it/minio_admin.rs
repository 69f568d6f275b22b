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
