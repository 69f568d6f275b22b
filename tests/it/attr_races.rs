//! Issue 35 item 3: attribute writes (tags, ACL, retention, legal hold) race each other step by
//! step, with the fail point `attrs.decided` stopping the first writer between its decision
//! and its write while the second one runs to the end. Both acknowledged changes must stay,
//! or the one whose decision no longer holds must be refused; never a 200 for a change that
//! is not kept.

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    BucketVersioningStatus, ObjectCannedAcl, ObjectLockConfiguration, ObjectLockEnabled,
    ObjectLockLegalHold, ObjectLockLegalHoldStatus, ObjectLockRetention, ObjectLockRetentionMode,
    Tag, Tagging, VersioningConfiguration,
};
use grids3::failpoint;

use crate::support;

fn code<T, E: ProvideErrorMetadata>(r: Result<T, E>) -> String {
    match r {
        Ok(_) => "ok".to_owned(),
        Err(e) => e.code().unwrap_or("?").to_owned(),
    }
}

fn tags(k: &str, v: &str) -> Tagging {
    Tagging::builder()
        .tag_set(Tag::builder().key(k).value(v).build().unwrap())
        .build()
        .unwrap()
}

fn retention(mode: ObjectLockRetentionMode, secs: i64) -> ObjectLockRetention {
    ObjectLockRetention::builder()
        .mode(mode)
        .retain_until_date(DateTime::from_secs(chrono::Utc::now().timestamp() + secs))
        .build()
}

async fn tag_of(s3: &aws_sdk_s3::Client, b: &str, k: &str, v: &str) -> Vec<(String, String)> {
    s3.get_object_tagging()
        .bucket(b)
        .key(k)
        .version_id(v)
        .send()
        .await
        .unwrap()
        .tag_set()
        .iter()
        .map(|t| (t.key().to_owned(), t.value().to_owned()))
        .collect()
}

async fn retention_of(s3: &aws_sdk_s3::Client, b: &str, k: &str, v: &str) -> Option<String> {
    s3.get_object_retention()
        .bucket(b)
        .key(k)
        .version_id(v)
        .send()
        .await
        .ok()
        .and_then(|r| {
            r.retention()
                .and_then(|r| r.mode().map(|m| m.as_str().to_owned()))
        })
}

async fn public(s3: &aws_sdk_s3::Client, b: &str, k: &str, v: &str) -> bool {
    s3.get_object_acl()
        .bucket(b)
        .key(k)
        .version_id(v)
        .send()
        .await
        .unwrap()
        .grants()
        .iter()
        .any(|g| {
            g.grantee()
                .and_then(|g| g.uri())
                .is_some_and(|u| u.ends_with("/AllUsers"))
        })
}

#[test]
fn racing_attribute_writes_keep_both_or_refuse_one() {
    support::run(async {
        let gw = support::gateway_with("attr_races", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let b = "attr-races";
        s3.create_bucket()
            .bucket(b)
            .object_lock_enabled_for_bucket(true)
            .object_ownership(aws_sdk_s3::types::ObjectOwnership::ObjectWriter)
            .send()
            .await
            .unwrap();
        let put = |k: &'static str| {
            s3.put_object()
                .bucket(b)
                .key(k)
                .body(ByteStream::from_static(b"x"))
                .send()
        };
        // A non-current version for the first pair, current ones for the others.
        let old = put("k1").await.unwrap().version_id().unwrap().to_owned();
        put("k1").await.unwrap();
        let k2 = put("k2").await.unwrap().version_id().unwrap().to_owned();
        let k3 = put("k3").await.unwrap().version_id().unwrap().to_owned();
        let k4 = put("k4").await.unwrap().version_id().unwrap().to_owned();
        let k5 = put("k5").await.unwrap().version_id().unwrap().to_owned();

        // 1. Tagging stopped after its decision; a retention lands; the tagging goes on.
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let (s3, v) = (s3.clone(), old.clone());
            tokio::spawn(async move {
                code(
                    s3.put_object_tagging()
                        .bucket(b)
                        .key("k1")
                        .version_id(v)
                        .tagging(tags("a", "1"))
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let second = s3
            .put_object_retention()
            .bucket(b)
            .key("k1")
            .version_id(&old)
            .retention(retention(ObjectLockRetentionMode::Compliance, 3))
            .send()
            .await;
        assert_eq!(code(second), "ok");
        drop(stop);
        assert_eq!(first.await.unwrap(), "ok");
        assert_eq!(tag_of(&s3, b, "k1", &old).await, [("a".into(), "1".into())]);
        assert_eq!(
            retention_of(&s3, b, "k1", &old).await.as_deref(),
            Some("COMPLIANCE"),
            "the acknowledged retention stayed"
        );

        // 2. Two ACL writes: the one acknowledged last is the ACL; and a tagging that read the
        // object while it was public does not make it public again.
        s3.put_object_acl()
            .bucket(b)
            .key("k2")
            .acl(ObjectCannedAcl::PublicRead)
            .send()
            .await
            .unwrap();
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_object_tagging()
                        .bucket(b)
                        .key("k2")
                        .tagging(tags("b", "2"))
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let private = s3
            .put_object_acl()
            .bucket(b)
            .key("k2")
            .acl(ObjectCannedAcl::Private)
            .send()
            .await;
        assert_eq!(code(private), "ok");
        drop(stop);
        assert_eq!(first.await.unwrap(), "ok");
        assert!(
            !public(&s3, b, "k2", &k2).await,
            "made private, stays private"
        );
        assert_eq!(tag_of(&s3, b, "k2", &k2).await, [("b".into(), "2".into())]);
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_object_acl()
                        .bucket(b)
                        .key("k3")
                        .acl(ObjectCannedAcl::PublicRead)
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let second = s3
            .put_object_acl()
            .bucket(b)
            .key("k3")
            .acl(ObjectCannedAcl::Private)
            .send()
            .await;
        assert_eq!(code(second), "ok");
        drop(stop);
        assert_eq!(first.await.unwrap(), "ok");
        assert!(
            public(&s3, b, "k3", &k3).await,
            "the ACL acknowledged last (public-read) is the ACL"
        );

        // 3. Two retention changes: a shortening of GOVERNANCE (with a bypass) decided, then
        // stopped; a change to COMPLIANCE lands; the shortening, decided again on COMPLIANCE,
        // is refused.
        s3.put_object_retention()
            .bucket(b)
            .key("k4")
            .retention(retention(ObjectLockRetentionMode::Governance, 7200))
            .send()
            .await
            .unwrap();
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_object_retention()
                        .bucket(b)
                        .key("k4")
                        .bypass_governance_retention(true)
                        .retention(retention(ObjectLockRetentionMode::Governance, 60))
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let second = s3
            .put_object_retention()
            .bucket(b)
            .key("k4")
            .bypass_governance_retention(true)
            .retention(retention(ObjectLockRetentionMode::Compliance, 7200))
            .send()
            .await;
        assert_eq!(code(second), "ok");
        drop(stop);
        assert_eq!(
            first.await.unwrap(),
            "AccessDenied",
            "the shortening no longer holds against COMPLIANCE"
        );
        assert_eq!(
            retention_of(&s3, b, "k4", &k4).await.as_deref(),
            Some("COMPLIANCE")
        );

        // 4. A tagging stopped after its decision; a legal hold lands; both stay, and the
        // version cannot be deleted.
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_object_tagging()
                        .bucket(b)
                        .key("k5")
                        .tagging(tags("c", "3"))
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let hold = s3
            .put_object_legal_hold()
            .bucket(b)
            .key("k5")
            .legal_hold(
                ObjectLockLegalHold::builder()
                    .status(ObjectLockLegalHoldStatus::On)
                    .build(),
            )
            .send()
            .await;
        assert_eq!(code(hold), "ok");
        drop(stop);
        assert_eq!(first.await.unwrap(), "ok");
        assert_eq!(tag_of(&s3, b, "k5", &k5).await, [("c".into(), "3".into())]);
        let held = s3
            .get_object_legal_hold()
            .bucket(b)
            .key("k5")
            .version_id(&k5)
            .send()
            .await
            .unwrap();
        assert_eq!(
            held.legal_hold().and_then(|h| h.status()),
            Some(&ObjectLockLegalHoldStatus::On)
        );
        assert_eq!(
            code(
                s3.delete_object()
                    .bucket(b)
                    .key("k5")
                    .version_id(&k5)
                    .bypass_governance_retention(true)
                    .send()
                    .await
            ),
            "AccessDenied",
            "the held version stays"
        );
        // 5. A legal hold decided, then stopped; the version is deleted meanwhile; the hold is
        // refused (NoSuchVersion), never acknowledged on a version that is gone.
        let k6 = put("k6").await.unwrap().version_id().unwrap().to_owned();
        let stop = failpoint::pause("attrs.decided", Some(b));
        let first = {
            let (s3, v) = (s3.clone(), k6.clone());
            tokio::spawn(async move {
                code(
                    s3.put_object_legal_hold()
                        .bucket(b)
                        .key("k6")
                        .version_id(v)
                        .legal_hold(
                            ObjectLockLegalHold::builder()
                                .status(ObjectLockLegalHoldStatus::On)
                                .build(),
                        )
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        let deleted = s3
            .delete_object()
            .bucket(b)
            .key("k6")
            .version_id(&k6)
            .send()
            .await;
        assert_eq!(code(deleted), "ok");
        drop(stop);
        assert_eq!(first.await.unwrap(), "NoSuchVersion");

        // Release the hold so the bucket's versions can go once the test ends.
        s3.put_object_legal_hold()
            .bucket(b)
            .key("k5")
            .legal_hold(
                ObjectLockLegalHold::builder()
                    .status(ObjectLockLegalHoldStatus::Off)
                    .build(),
            )
            .send()
            .await
            .unwrap();
    });
}

/// PutBucketVersioning with MinIO's exclusions (raw: the SDK has no such field).
async fn put_exclusions(gw: &support::Gateway, b: &str) -> (u16, String) {
    let path = format!("/{b}?versioning");
    let mut r = support::Raw::new("PUT", &path);
    r.body = b"<VersioningConfiguration><Status>Enabled</Status><ExcludedPrefixes><Prefix>tmp/</Prefix></ExcludedPrefixes></VersioningConfiguration>".to_vec();
    let resp = r.send(gw).await;
    let status = resp.status().as_u16();
    (status, support::error_code(&resp.text().await.unwrap()))
}

/// Issue 40: versioning exclusions and Object Lock exclude each other, and each write is
/// conditional on what its decision read. Stopped after deciding, each request meets the
/// other's write and is refused (409 InvalidBucketState) instead of storing both; before,
/// both were acknowledged and the bucket held a lock and exclusions at once. The same for a
/// suspension racing a lock.
#[test]
fn versioning_exclusions_and_object_lock_never_both_land() {
    support::run(async {
        let gw = support::gateway("excl_lock_race").await;
        let s3 = gw.sdk();
        let lock = || {
            s3.put_object_lock_configuration()
                .object_lock_configuration(
                    ObjectLockConfiguration::builder()
                        .object_lock_enabled(ObjectLockEnabled::Enabled)
                        .build(),
                )
        };
        let enabled = VersioningConfiguration::builder()
            .status(BucketVersioningStatus::Enabled)
            .build();
        for b in ["race-excl-first", "race-lock-first", "race-suspend"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
            s3.put_bucket_versioning()
                .bucket(b)
                .versioning_configuration(enabled.clone())
                .send()
                .await
                .unwrap();
        }

        // 1. Exclusions decided, then the lock lands: the exclusions are refused.
        let b = "race-excl-first";
        let stop = failpoint::pause("versioning.decided", Some(b));
        let (refused, ()) = tokio::join!(put_exclusions(&gw, b), async {
            stop.reached().await;
            assert_eq!(code(lock().bucket(b).send().await), "ok");
            drop(stop);
        });
        assert_eq!(refused, (409, "InvalidBucketState".to_owned()));
        let raw = support::Raw::new("GET", "/race-excl-first?versioning")
            .send(&gw)
            .await;
        assert!(!raw.text().await.unwrap().contains("ExcludedPrefixes"));

        // 2. A lock decided, then exclusions land: the lock is refused.
        let b = "race-lock-first";
        let stop = failpoint::pause("lock.decided", Some(b));
        let pending = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_object_lock_configuration()
                        .bucket(b)
                        .object_lock_configuration(
                            ObjectLockConfiguration::builder()
                                .object_lock_enabled(ObjectLockEnabled::Enabled)
                                .build(),
                        )
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        assert_eq!(put_exclusions(&gw, b).await, (200, String::new()));
        drop(stop);
        assert_eq!(pending.await.unwrap(), "InvalidBucketState");
        assert_eq!(
            code(s3.get_object_lock_configuration().bucket(b).send().await),
            "ObjectLockConfigurationNotFoundError"
        );

        // 3. A suspension decided, then a lock lands: the suspension is refused.
        let b = "race-suspend";
        let stop = failpoint::pause("versioning.decided", Some(b));
        let pending = {
            let s3 = s3.clone();
            tokio::spawn(async move {
                code(
                    s3.put_bucket_versioning()
                        .bucket(b)
                        .versioning_configuration(
                            VersioningConfiguration::builder()
                                .status(BucketVersioningStatus::Suspended)
                                .build(),
                        )
                        .send()
                        .await,
                )
            })
        };
        stop.reached().await;
        assert_eq!(code(lock().bucket(b).send().await), "ok");
        drop(stop);
        assert_eq!(pending.await.unwrap(), "InvalidBucketState");
        let v = s3.get_bucket_versioning().bucket(b).send().await.unwrap();
        assert_eq!(v.status(), Some(&BucketVersioningStatus::Enabled));
    });
}
