//! Account quotas in the console (issue 62), for the administrator: on the administration
//! page, each account's limits across all its buckets, its counted usage with a bar, and a
//! form that sets or clears them. Setting is the storage step the admin API's
//! `PUT /_grids3/admin/accounts/{id}/quota` takes (`set_account_limits_of_key`), so the
//! console and `grids3 admin account-quota` change the same records the same way.

use axum::extract::{Request, State};
use axum::response::Response;

use super::quota::{parse_size, percent};
use super::{field, signed_post};
use crate::console::views::AccountQuotaRow;
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::{Counted, Limits};

/// A row per account (root access key), with its limits and counters if it has any.
pub(super) async fn rows(st: &AppState, keys: &[String]) -> Result<Vec<AccountQuotaRow>, S3Error> {
    let counted = st.store.meta().all_accounts_counted().await?;
    Ok(keys
        .iter()
        .map(|k| {
            let account = crate::storage::identity::account_id(k);
            let c = counted.iter().find(|(a, _)| *a == account).map(|(_, c)| c);
            row(k, account, c)
        })
        .collect())
}

/// An account's row: its limits and counters, if it is counted.
pub(super) fn row(key: &str, account: String, c: Option<&Counted>) -> AccountQuotaRow {
    let mut row = AccountQuotaRow {
        key: key.to_owned(),
        account,
        counted: c.is_some(),
        ..Default::default()
    };
    if let Some(c) = c {
        row.limit_bytes = c.limits.bytes;
        row.limit_objects = c.limits.objects;
        row.used_bytes = c.used_bytes();
        row.used_objects = c.used_objects();
        row.bytes_percent = percent(row.used_bytes, row.limit_bytes);
        row.objects_percent = percent(row.used_objects, row.limit_objects);
    }
    row
}

/// POST /admin/quota: sets (or, with both fields empty or 0, clears) the limits of the
/// account whose root key is `id`.
pub async fn save(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        return super::admin::not_root(&ctx);
    }
    let key = field(&f, "id").unwrap_or("").to_owned();
    let known = match st.store.meta().list_access_keys().await {
        Ok(keys) => keys.iter().any(|k| k.id == key),
        Err(e) => return super::admin::page(&st, &ctx, None, None, Some(e.into())).await,
    };
    if !known {
        let e = S3Error::invalid_argument("no account has that root access key id");
        return super::admin::page(&st, &ctx, None, None, Some(e)).await;
    }
    let objects = field(&f, "objects").unwrap_or("").trim();
    let limits = parse_size(field(&f, "bytes").unwrap_or("")).and_then(|bytes| {
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
    });
    let Some(limits) = limits else {
        let e = S3Error::invalid_argument(
            "A limit is a whole number: bytes (or with KiB, MiB, GiB, TiB), and objects",
        );
        return super::admin::page(&st, &ctx, None, None, Some(e)).await;
    };
    match st.store.set_account_limits_of_key(&key, limits).await {
        Ok(account) => {
            let done = format!("Account {account}: quota saved");
            super::admin::page(&st, &ctx, None, Some(done), None).await
        }
        Err(e) => super::admin::page(&st, &ctx, None, None, Some(e.into())).await,
    }
}
