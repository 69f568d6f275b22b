//! Account limits in the object layer (issue 62; the counting is `meta::quota_account`'s):
//! setting one meters and links every bucket of the account, and a bucket created in an
//! account with a usage document is metered and linked as it is created.
//!
//! Order matters for exactness:
//! - the account's document is opened (without limits) **before** its buckets are listed; a
//!   new bucket is recorded in a transaction that reads it, and both write the account's
//!   creation counter, so they conflict: every bucket is either listed or recorded linked;
//! - buckets made metered now are left a bucket cache's lifetime, so that every write that
//!   starts afterwards, on any instance, is metered;
//! - each is linked, then its files from before it was metered are counted (all of them) by
//!   the fold, which counts for the account too;
//! - the limits are set only then, so they never apply to a partial count.

use super::*;
use crate::storage::meta::{Counted, Limits};

impl ObjectStore {
    /// Records a new bucket (`false`: the name is taken), metered and linked from the start
    /// when its account has a usage document (see `MetaStore::create_bucket_counted`).
    pub async fn record_new_bucket(&self, info: &crate::storage::meta::BucketInfo) -> Result<bool> {
        let account = crate::storage::identity::account_id(&info.owner);
        match self.meta.create_bucket_counted(info, &account).await? {
            None => Ok(false),
            Some(metered) => {
                if metered {
                    self.index_counted(&info.name).await?;
                }
                Ok(true)
            }
        }
    }

    /// Sets the limits of the account whose root access key id is `key` (or, with `None`,
    /// of `account` alone, whose key is gone), over every bucket it owns.
    pub async fn set_account_limits_of(
        &self,
        account: &str,
        key: Option<&str>,
        limits: Limits,
    ) -> Result<()> {
        // Clearing the limit of an account that never had one meters nothing.
        if limits.is_none() && self.meta.account_counted(account).await?.is_none() {
            return Ok(());
        }
        // Opened before its buckets are listed (see the module's doc).
        self.meta.open_account_usage(account).await?;
        let buckets: Vec<String> = self
            .meta
            .list_buckets()
            .await?
            .into_iter()
            .filter(|b| match key {
                Some(k) => b.owner == k,
                None => crate::storage::identity::account_id(&b.owner) == account,
            })
            .map(|b| b.name)
            .collect();
        self.limit_listed(account, &buckets, limits).await
    }

    /// Sets the limits of `account` (its 12-digit id), whose buckets are `buckets` (listed
    /// after its usage document was opened): each is metered, linked and counted whole first.
    pub async fn set_account_limits(
        &self,
        account: &str,
        buckets: &[String],
        limits: Limits,
    ) -> Result<()> {
        self.meta.open_account_usage(account).await?;
        self.limit_listed(account, buckets, limits).await
    }

    /// [`Self::set_account_limits`] once the account's usage document is open (its opening
    /// is a transaction: done once).
    async fn limit_listed(&self, account: &str, buckets: &[String], limits: Limits) -> Result<()> {
        let mut fresh = false;
        for b in buckets {
            fresh |= self.start_metering(b).await?;
        }
        if fresh {
            self.outwait_bucket_caches().await;
        }
        for b in buckets {
            if self.meta.link_bucket(b, account).await? {
                self.fold_whole(b).await?;
            }
        }
        self.meta.set_account_limits(account, limits).await?;
        Ok(())
    }

    /// Makes a bucket metered (and its indexes); whether it was not before (`false` too when
    /// it does not exist).
    pub(super) async fn start_metering(&self, bucket: &str) -> Result<bool> {
        let before = self.meta.get_bucket(bucket).await?;
        if before.as_ref().is_none_or(|b| b.metered) {
            return Ok(false);
        }
        self.index_counted(bucket).await?;
        Ok(self.meta.meter_bucket(bucket).await?)
    }

    /// Waits until every instance's bucket cache has seen a bucket made metered just now, so
    /// that every write that starts afterwards is metered: a limit is set only then. (Each
    /// instance keeps a lookup at most `BUCKET_CACHE_TTL`, by its own monotonic clock; a
    /// write that started before is counted by the fold once it is published.)
    pub(super) async fn outwait_bucket_caches(&self) {
        tokio::time::sleep(
            crate::storage::meta::BUCKET_CACHE_TTL + std::time::Duration::from_millis(250),
        )
        .await;
    }

    /// Counts every file and marker of a metered bucket that is not counted yet, before a
    /// limit is set on it, so that the limit never applies to a partial count (a bucket of
    /// many files takes a while: a batch of 500 per transaction).
    pub(super) async fn fold_whole(&self, bucket: &str) -> Result<()> {
        self.fold_uncounted(bucket, usize::MAX).await?;
        Ok(())
    }

    /// Links the buckets of accounts with a usage document that are not linked yet (a
    /// gateway that died while setting a limit), for the janitor; how many. One bucket that
    /// cannot be linked now does not stop the others.
    pub async fn link_account_buckets(&self) -> Result<usize> {
        let accounts = self.meta.all_accounts_counted().await?;
        if accounts.is_empty() {
            return Ok(0);
        }
        let linked = self.meta.linked_buckets().await?;
        let mut n = 0;
        for b in self.meta.list_buckets().await? {
            let account = crate::storage::identity::account_id(&b.owner);
            if linked.contains(&b.name) || !accounts.iter().any(|(a, _)| *a == account) {
                continue;
            }
            let done = async {
                self.start_metering(&b.name).await?;
                if self.meta.link_bucket(&b.name, &account).await? {
                    self.fold_now(&b.name).await;
                    return Ok::<_, GridFsError>(true);
                }
                Ok(false)
            };
            match done.await {
                Ok(true) => n += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(bucket = %b.name, error = %e, "could not link a bucket to its account's quota; the next pass tries again")
                }
            }
        }
        Ok(n)
    }

    /// An account's counted usage and limits (`None`: never limited).
    pub async fn account_counted(&self, account: &str) -> Result<Option<Counted>> {
        Ok(self.meta.account_counted(account).await?)
    }
}
