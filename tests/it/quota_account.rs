//! Account quotas (issue 62): one limit across every bucket of an account, set and read with
//! `grids3 admin account-quota`, binding exactly at its boundary, beside bucket limits, over
//! parts and buckets created after it, and checked by `fsck --usage` (the race is
//! `quota_race`'s).

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use mongodb::bson::{doc, Document};

use crate::support::{self, random_bytes};

const QUOTA: &str = "XMinioAdminBucketQuotaExceeded";

/// The account's counters equal the sum of its buckets', and nothing is held at rest.
pub(crate) async fn assert_account_is_its_buckets(gw: &support::Gateway, buckets: &[&str]) {
    let usage = gw.db.collection::<Document>("__usage");
    let fields = [
        "bytes",
        "objects",
        "partBytes",
        "reservedBytes",
        "reservedObjects",
    ];
    let read = |d: &Document| fields.map(|f| d.get_i64(f).unwrap_or(0));
    let mut sum = [0_i64; 5];
    let mut acct = None;
    for b in buckets {
        let d = usage
            .find_one(doc! {"_id": format!("b:{b}")})
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("{b} is metered"));
        let a = d.get_str("acct").expect("linked").to_owned();
        assert!(acct.as_ref().is_none_or(|x| *x == a), "one account");
        acct = Some(a);
        for (s, v) in sum.iter_mut().zip(read(&d)) {
            *s += v;
        }
    }
    let a = usage
        .find_one(doc! {"_id": acct.unwrap()})
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        read(&a),
        sum,
        "the account's {fields:?} against its buckets' sum"
    );
    assert_eq!((sum[3], sum[4]), (0, 0), "nothing held at rest");
}

/// An SDK client of the grids3 process `other`, on `gw`'s database, as the root key.
fn sdk_of(gw: &support::Gateway, other: &support::Process) -> aws_sdk_s3::Client {
    support::Gateway {
        addr: other.addr,
        state: gw.state.clone(),
        db: gw.db.clone(),
        owned: None,
    }
    .sdk()
}

/// `grids3 admin <args>` as the root key, off the runtime's threads.
async fn cli(gw: &support::Gateway, args: &[&str]) -> serde_json::Value {
    let endpoint = gw.endpoint();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        support::admin_cli(&endpoint, &args)
    })
    .await
    .unwrap()
}

/// A PUT of `size` bytes: `Ok`, or the error's code and message.
async fn put(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    key: &str,
    size: usize,
) -> Result<(), (String, String)> {
    s3.put_object()
        .bucket(bucket)
        .key(key)
        .body(ByteStream::from(random_bytes(size, size as u64 + 7)))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            (
                e.code().unwrap_or("no code").to_owned(),
                e.message().unwrap_or("").to_owned(),
            )
        })
}

/// Whether `bucket`'s holds are all settled within `secs` (a published write's conversion
/// follows its answer by milliseconds; a dead writer's hold lapses in a lease).
pub(crate) async fn holds_settled(gw: &support::Gateway, bucket: &str, secs: u64) -> bool {
    let usage = gw.db.collection::<Document>("__usage");
    support::eventually(secs, || async {
        let d = usage
            .find_one(doc! {"_id": format!("b:{bucket}")})
            .await
            .unwrap()
            .unwrap();
        d.get_array("holds").map_or(0, |h| h.len()) == 0
    })
    .await
}

/// Sets `account`'s limits over its one bucket `bucket` in a task of its own (for a test
/// that stops it at a fail point on the way).
pub(crate) fn set_account_limits_meanwhile(
    gw: &support::Gateway,
    account: &str,
    bucket: &'static str,
    limits: grids3::storage::meta::Limits,
) -> tokio::task::JoinHandle<grids3::storage::gridfs::Result<()>> {
    let (st, account) = (gw.state.clone(), account.to_owned());
    tokio::spawn(async move {
        st.store
            .set_account_limits(&account, &[bucket.to_owned()], limits)
            .await
    })
}

/// `account`'s counters once `bucket`'s holds are settled, checked against its buckets'.
pub(crate) async fn settled_account(
    gw: &support::Gateway,
    bucket: &str,
    account: &str,
) -> grids3::storage::meta::Counted {
    assert!(holds_settled(gw, bucket, 10).await);
    assert_account_is_its_buckets(gw, &[bucket]).await;
    gw.state
        .store
        .account_counted(account)
        .await
        .unwrap()
        .unwrap()
}

/// Converted holds.
async fn settled(gw: &support::Gateway, buckets: &[&str]) {
    for b in buckets {
        assert!(holds_settled(gw, b, 10).await, "{b}'s holds converted");
    }
}

#[test]
fn an_account_limit_binds_across_its_buckets_exactly() {
    support::run(async {
        let gw = support::gateway_with("g_quotaacct", |c| c.janitor_interval = 3600).await;
        // An account of its own: a key the admin API makes.
        let created = cli(&gw, &["create-key", "--name", "team"]).await;
        let ak = created["accessKeyId"].as_str().unwrap().to_owned();
        let sk = created["secretAccessKey"].as_str().unwrap().to_owned();
        let account = grids3::storage::identity::account_id(&ak);
        let s3 = gw.sdk_as(&ak, &sk);
        for b in ["acct-a", "acct-b"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
        }
        put(&s3, "acct-a", "before", 1000).await.unwrap();

        // Set by the root key id, read back by the account id: what it held is counted.
        let got = cli(&gw, &["account-quota", &ak]).await;
        assert_eq!(got["counted"], false, "never limited: not counted: {got}");
        let set = cli(&gw, &["account-quota", &ak, "--bytes", "5000"]).await;
        assert_eq!(set["counted"], true, "{set}");
        assert_eq!(set["account"], account.as_str(), "{set}");
        assert_eq!(set["limits"]["bytes"], 5000, "{set}");
        assert_eq!(set["usage"]["bytes"], 1000, "{set}");
        let got = cli(&gw, &["account-quota", &account]).await;
        assert_eq!(got["limits"], set["limits"], "{got}");

        // The boundary across buckets: one byte over is refused, exactly full is not.
        put(&s3, "acct-b", "x", 2000).await.unwrap();
        let (code, msg) = put(&s3, "acct-a", "y", 2001).await.unwrap_err();
        assert_eq!(code, QUOTA, "{msg}");
        assert!(
            msg.contains("the account's limit 5000 bytes") && !msg.contains("usage"),
            "the message names the account's limit, and not its usage (which spans buckets \
             whose writers need not see each other's): {msg}"
        );
        put(&s3, "acct-a", "y", 2000).await.unwrap();
        put(&s3, "acct-b", "empty", 0).await.unwrap();
        // A bucket created after the limit counts from its first byte.
        s3.create_bucket().bucket("acct-c").send().await.unwrap();
        assert_eq!(put(&s3, "acct-c", "one", 1).await.unwrap_err().0, QUOTA);
        // Another account is not limited by it.
        gw.sdk()
            .create_bucket()
            .bucket("root-free")
            .send()
            .await
            .unwrap();
        put(&gw.sdk(), "root-free", "big", 10_000).await.unwrap();

        // Both limits bind: a bucket limit under the account's room refuses on its own.
        s3.delete_object()
            .bucket("acct-a")
            .key("before")
            .send()
            .await
            .unwrap();
        assert!(gw
            .state
            .store
            .set_bucket_limits(
                "acct-b",
                grids3::storage::meta::Limits {
                    bytes: Some(2100),
                    objects: None
                }
            )
            .await
            .unwrap());
        gw.state.store.meta().forget_bucket("acct-b");
        let (code, msg) = put(&s3, "acct-b", "more", 200).await.unwrap_err();
        assert_eq!(code, QUOTA, "{msg}");
        assert!(
            msg.contains("limit 2100 bytes") && !msg.contains("account's"),
            "the bucket's limit refused it: {msg}"
        );
        put(&s3, "acct-b", "more", 100).await.unwrap();
        assert_eq!(put(&s3, "acct-c", "c", 901).await.unwrap_err().0, QUOTA);
        put(&s3, "acct-c", "c", 900).await.unwrap();

        // Parts in progress count for the account until aborted.
        s3.delete_object()
            .bucket("acct-a")
            .key("y")
            .send()
            .await
            .unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket("acct-a")
            .key("mp")
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap().to_owned();
        s3.upload_part()
            .bucket("acct-a")
            .key("mp")
            .upload_id(&id)
            .part_number(1)
            .body(ByteStream::from(random_bytes(1500, 3)))
            .send()
            .await
            .unwrap();
        assert_eq!(put(&s3, "acct-c", "d", 501).await.unwrap_err().0, QUOTA);
        s3.abort_multipart_upload()
            .bucket("acct-a")
            .key("mp")
            .upload_id(&id)
            .send()
            .await
            .unwrap();
        put(&s3, "acct-c", "d", 501).await.unwrap();
        let buckets = ["acct-a", "acct-b", "acct-c"];
        settled(&gw, &buckets).await;
        let got = cli(&gw, &["account-quota", &account]).await;
        assert_eq!(got["usage"]["bytes"], 2000 + 100 + 900 + 501, "{got}");
        assert_account_is_its_buckets(&gw, &buckets).await;

        // An objects limit: the account holds 5 objects (x, empty, more, c, d; a's are gone).
        let n = got["usage"]["objects"].as_i64().unwrap();
        assert_eq!(n, 5, "{got}");
        let set = cli(&gw, &["account-quota", &account, "--objects", "5"]).await;
        // (`--objects` alone says the whole limit: the bytes limit is gone.)
        assert_eq!(set["limits"]["bytes"], serde_json::Value::Null, "{set}");
        assert_eq!(put(&s3, "acct-a", "new", 1).await.unwrap_err().0, QUOTA);
        // An overwrite too: until the old version goes, both are stored, as for buckets.
        assert_eq!(put(&s3, "acct-c", "d", 3000).await.unwrap_err().0, QUOTA);
        cli(&gw, &["account-quota", &account, "--objects", "0"]).await;
        put(&s3, "acct-c", "d", 3000).await.unwrap();
        put(&s3, "acct-a", "new", 1).await.unwrap();
        settled(&gw, &buckets).await;
        assert_account_is_its_buckets(&gw, &buckets).await;
        for b in buckets {
            crate::quota::assert_counted_as_recounted(&gw, b).await;
        }

        // fsck --usage checks the account against its buckets, and repairs drift.
        gw.db
            .collection::<Document>("__usage")
            .update_one(
                doc! {"_id": format!("a:{account}")},
                doc! {"$inc": {"bytes": 77_i64}},
            )
            .await
            .unwrap();
        let fsck = |repair: bool| crate::quota::fsck_usage(&gw, repair);
        let (code, text) = fsck(false);
        assert_eq!(code, Some(1), "{text}");
        assert!(
            text.contains(&format!("usage: account {account}: differ"))
                && text.contains("off by 77 bytes, 0 objects, 0 part bytes"),
            "{text}"
        );
        let (code, text) = fsck(true);
        assert_eq!(code, Some(0), "{text}");
        assert!(
            text.contains(&format!("usage: account {account}: repaired")),
            "{text}"
        );
        assert_account_is_its_buckets(&gw, &buckets).await;
    });
}

/// Deleting a linked bucket takes what it still counted off the account's counters; an
/// unknown account and a body with unknown fields are refused.
#[test]
fn a_deleted_bucket_leaves_its_account_and_bad_requests_are_refused() {
    support::run(async {
        let gw = support::gateway_with("g_quotaacct2", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        for b in ["keep", "gone"] {
            s3.create_bucket().bucket(b).send().await.unwrap();
        }
        let account = grids3::storage::identity::account_id(support::AK);
        cli(&gw, &["account-quota", &account, "--bytes", "100000"]).await;
        put(&s3, "keep", "k", 300).await.unwrap();
        put(&s3, "gone", "g", 700).await.unwrap();
        // Parts left in progress go with the bucket.
        let up = s3
            .create_multipart_upload()
            .bucket("gone")
            .key("mp")
            .send()
            .await
            .unwrap();
        s3.upload_part()
            .bucket("gone")
            .key("mp")
            .upload_id(up.upload_id().unwrap())
            .part_number(1)
            .body(ByteStream::from(random_bytes(50, 9)))
            .send()
            .await
            .unwrap();
        settled(&gw, &["keep", "gone"]).await;
        s3.delete_object()
            .bucket("gone")
            .key("g")
            .send()
            .await
            .unwrap();
        s3.delete_bucket().bucket("gone").send().await.unwrap();
        let got = cli(&gw, &["account-quota", &account]).await;
        assert_eq!(got["usage"]["bytes"], 300, "{got}");
        assert_eq!(got["usage"]["objects"], 1, "{got}");
        assert_account_is_its_buckets(&gw, &["keep"]).await;

        let refused = |args: &'static [&'static str]| {
            let endpoint = gw.endpoint();
            tokio::task::spawn_blocking(move || support::admin_cli_failure(&endpoint, args))
        };
        let out = refused(&["account-quota", "123456789012"]).await.unwrap();
        assert!(out.contains("NoSuchAccount"), "{out}");
        // Unknown fields are refused, never ignored.
        let (status, v) = crate::authz::admin(
            &gw,
            "PUT",
            &format!("/_grids3/admin/accounts/{account}/quota"),
            serde_json::json!({"bytes": 5, "buckets": 2}),
        )
        .await;
        assert_eq!(
            (status, v["error"].as_str()),
            (400, Some("MalformedJSON")),
            "{v}"
        );
        let got = cli(&gw, &["account-quota", &account]).await;
        assert_eq!(got["limits"]["bytes"], 100000, "unchanged: {got}");
    });
}

/// The two races of linking a bucket to its account, made deterministic:
/// - a write starts between the link and the count of what the bucket held: it waits for the
///   link's transaction and then counts for the account too (fail point `quota.link_read`);
/// - an instance that has never seen the bucket linked (a process started afterwards) writes
///   into it: its update, conditional on no link, matches nothing, and it goes the linked way.
#[test]
fn a_write_racing_the_link_and_an_instance_unaware_of_it_are_counted_for_the_account() {
    support::run(async {
        use grids3::failpoint;
        let gw = support::gateway_with("g_quotalink", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let b = "linkrace";
        s3.create_bucket().bucket(b).send().await.unwrap();
        assert!(gw
            .state
            .store
            .set_bucket_limits(
                b,
                grids3::storage::meta::Limits {
                    bytes: Some(1 << 20),
                    objects: None
                }
            )
            .await
            .unwrap());
        gw.state.store.meta().forget_bucket(b);
        put(&s3, b, "first", 1000).await.unwrap();
        assert!(holds_settled(&gw, b, 10).await);

        let account = grids3::storage::identity::account_id(support::AK);
        let paused = failpoint::pause("quota.link_read", Some(b));
        let setting = set_account_limits_meanwhile(
            &gw,
            &account,
            b,
            grids3::storage::meta::Limits {
                bytes: Some(10_000),
                objects: None,
            },
        );
        paused.reached().await;
        // The link is written, its count not yet: a PUT now waits for the link's short
        // transaction (its update of the bucket's counters is held behind it), then finds
        // the bucket linked and counts for the account too.
        let queued = failpoint::count("quota.hold_queued", Some(b));
        let meanwhile = {
            let s3 = s3.clone();
            tokio::spawn(async move { put(&s3, b, "meanwhile", 2000).await })
        };
        queued.reached().await;
        paused.release();
        setting.await.unwrap().unwrap();
        meanwhile.await.unwrap().unwrap();
        let a = settled_account(&gw, b, &account).await;
        assert_eq!((a.bytes, a.objects), (3000, 2), "{a:?}");

        // A process that has never seen the link: its writes count for the account too, and
        // the account's limit binds there.
        let other = support::Process::start(gw.db.name(), &[]).await;
        let o3 = sdk_of(&gw, &other);
        put(&o3, b, "other", 4000).await.unwrap();
        assert_eq!(put(&o3, b, "over", 3001).await.unwrap_err().0, QUOTA);
        put(&o3, b, "over", 3000).await.unwrap();
        let a = settled_account(&gw, b, &account).await;
        assert_eq!(
            (a.bytes, a.objects, a.limits.bytes),
            (10_000, 4, Some(10_000))
        );
        crate::quota::assert_counted_as_recounted(&gw, b).await;
        drop(other);
    });
}

/// Found in review: a bucket created in an account with a quota was recorded unmetered and
/// linked only afterwards, so writes that came in meanwhile passed the account's limit
/// (4,800x over). It is now recorded metered and linked in one transaction: a write into it
/// before CreateBucket has even answered is counted and refused (fail point
/// `bucket.recorded`). And an instance that cached a bucket unmetered meters it once the
/// account's limit is set: the set waits out the bucket caches.
#[test]
fn a_bucket_is_counted_from_its_creation_and_on_instances_that_cached_it_unmetered() {
    support::run(async {
        use grids3::failpoint;
        let gw = support::gateway_with("g_quotacreate", |c| c.janitor_interval = 3600).await;
        let s3 = gw.sdk();
        let account = grids3::storage::identity::account_id(support::AK);
        s3.create_bucket().bucket("early").send().await.unwrap();
        // Another instance, which caches "early" unmetered before the limit.
        let other = support::Process::start(gw.db.name(), &[]).await;
        let o3 = sdk_of(&gw, &other);
        put(&o3, "early", "warm", 1000).await.unwrap();
        cli(&gw, &["account-quota", &account, "--bytes", "3000"]).await;
        // Right after the set answered: the other instance meters it.
        assert_eq!(put(&o3, "early", "big", 2001).await.unwrap_err().0, QUOTA);
        put(&o3, "early", "fits", 1000).await.unwrap();

        let paused = failpoint::pause("bucket.recorded", Some("late"));
        let creating = {
            let s3 = s3.clone();
            tokio::spawn(async move { s3.create_bucket().bucket("late").send().await })
        };
        paused.reached().await;
        assert_eq!(put(&s3, "late", "x", 1001).await.unwrap_err().0, QUOTA);
        put(&s3, "late", "x", 1000).await.unwrap();
        paused.release();
        creating.await.unwrap().unwrap();
        assert_eq!(put(&s3, "late", "y", 1).await.unwrap_err().0, QUOTA);
        for b in ["early", "late"] {
            assert!(holds_settled(&gw, b, 10).await);
        }
        assert_account_is_its_buckets(&gw, &["early", "late"]).await;
        let a = gw
            .state
            .store
            .account_counted(&account)
            .await
            .unwrap()
            .unwrap();
        assert_eq!((a.bytes, a.objects), (3000, 3), "{a:?}");
        drop(other);
    });
}
