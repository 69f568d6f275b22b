//! Account limits in the object layer (issue 62; the counting is `meta::quota_account`'s):
//! setting one meters and links every bucket of the account, and a bucket created in an
//! account with a usage document is metered and linked as it is created.
//!
//! Order matters for exactness:
//! - the account's document is opened (without limits) **before** its buckets are listed, and
//!   a new bucket looks for it **after** it is recorded, so every bucket is linked by one side
//!   or the other (or both: linking twice links once);
//! - the limits are set only **after** every listed bucket is linked, so they never apply to
//!   a partial count;
//! - a bucket's files from before it was metered are counted by the fold after the link, so
//!   they count for the account too.

use super::*;
use crate::storage::meta::{Counted, Limits};

impl ObjectStore {
    /// Sets the limits of `account` (its 12-digit id), whose buckets are `buckets`: each is
    /// metered and linked first.
    pub async fn set_account_limits(
        &self,
        account: &str,
        buckets: &[String],
        limits: Limits,
    ) -> Result<()> {
        self.meta.open_account_usage(account).await?;
        for b in buckets {
            self.link_to_account(b, account).await?;
        }
        self.meta.set_account_limits(account, limits).await?;
        Ok(())
    }

    /// Sets the limits of the account whose root access key id is `key`, over every bucket
    /// it owns; the account's id.
    pub async fn set_account_limits_of_key(&self, key: &str, limits: Limits) -> Result<String> {
        let account = crate::storage::identity::account_id(key);
        let buckets: Vec<String> = self
            .meta
            .list_buckets()
            .await?
            .into_iter()
            .filter(|b| b.owner == key)
            .map(|b| b.name)
            .collect();
        // Clearing the limit of an account that never had one meters nothing.
        if limits.is_none() && self.meta.account_counted(&account).await?.is_none() {
            return Ok(account);
        }
        self.set_account_limits(&account, &buckets, limits).await?;
        Ok(account)
    }

    /// Meters and links a bucket to its account's usage, if the account has one (a bucket
    /// just created); whether it did.
    pub async fn link_if_account_metered(&self, bucket: &str, account: &str) -> Result<bool> {
        if !self.meta.account_metered(account).await? {
            return Ok(false);
        }
        self.link_to_account(bucket, account).await
    }

    async fn link_to_account(&self, bucket: &str, account: &str) -> Result<bool> {
        self.index_counted(bucket).await?;
        if !self.meta.meter_bucket(bucket).await? {
            // Deleted meanwhile.
            return Ok(false);
        }
        let linked = self.meta.link_bucket(bucket, account).await?;
        if linked {
            self.fold_now(bucket).await;
        }
        Ok(linked)
    }

    /// Links the buckets of accounts with a usage document that are not linked yet (a
    /// gateway that died between recording a bucket and linking it, or while setting a
    /// limit), for the janitor; how many.
    pub async fn link_account_buckets(&self) -> Result<usize> {
        let accounts = self.meta.all_accounts_counted().await?;
        if accounts.is_empty() {
            return Ok(0);
        }
        let mut n = 0;
        for b in self.meta.list_buckets().await? {
            let account = crate::storage::identity::account_id(&b.owner);
            if !accounts.iter().any(|(a, _)| *a == account) {
                continue;
            }
            if self.meta.bucket_link(&b.name).await?.is_none()
                && self.link_to_account(&b.name, &account).await?
            {
                n += 1;
            }
        }
        Ok(n)
    }

    /// An account's counted usage and limits (`None`: never limited).
    pub async fn account_counted(&self, account: &str) -> Result<Option<Counted>> {
        Ok(self.meta.account_counted(account).await?)
    }
}
