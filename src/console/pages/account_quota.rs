//! Account quotas in the console (issue 62), for the administrator: on the administration
//! page, each account's limits across all its buckets, its counted usage with a bar, and a
//! form that sets or clears them (its handler is `admin`'s). Setting is the storage step the
//! admin API's `PUT /_grids3/admin/accounts/{id}/quota` takes (`set_account_limits_of_key`),
//! so the console and `grids3 admin account-quota` change the same records the same way.

use super::quota::parse_size;
use crate::console::views::AccountQuotaRow;
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::Limits;

/// A row per account (root access key), with its limits and counters if it has any.
pub(super) async fn rows(st: &AppState, keys: &[String]) -> Result<Vec<AccountQuotaRow>, S3Error> {
    let counted = st.store.meta().all_accounts_counted().await?;
    Ok(keys
        .iter()
        .map(|k| {
            let account = crate::storage::identity::account_id(k);
            let c = counted.iter().find(|(a, _)| *a == account).map(|(_, c)| c);
            super::quota::account_row(k, account, c)
        })
        .collect())
}

/// The limits the administration page's form asks for: `bytes` as typed (with a unit, or
/// empty) and `objects`; empty or 0 is no limit. `None`: not whole numbers.
pub(super) fn limits_from_form(bytes: &str, objects: &str) -> Option<Limits> {
    let bytes = parse_size(bytes)?;
    let objects = objects.trim();
    let objects = if objects.is_empty() {
        0
    } else {
        objects.parse::<u64>().ok()?
    };
    // 0 is no limit; a figure past i64 is refused, not wrapped.
    let one = |n: u64| match n {
        0 => Some(None),
        n => i64::try_from(n).ok().map(Some),
    };
    Some(Limits {
        bytes: one(bytes)?,
        objects: one(objects)?,
    })
}
