//! A bucket's quota in the console (issue 62): its limits and its usage, with a bar, on the
//! settings page, and a form that sets or clears them. Reading and setting are MinIO admin
//! commands (GetBucketQuota, SetBucketQuota) run as the signed-in key
//! (`minio_admin::entry::run_as`), so the console is authorized exactly as `mc quota` is: a
//! key without `admin:GetBucketQuota` sees the refusal instead of the figures, and a single
//! sign-on session (temporary credentials, which the admin API does not take) sees why.
//!
//! The usage shown is the bucket's counters (what counts against the limit: stored, parts
//! in progress and writes in flight). A bucket that never had a limit is not counted; the
//! section says so rather than show a recount that every page view would pay for.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::{field, see_other, signed_post, Ctx};
use crate::console::views::{AccountQuotaRow, QuotaView};
use crate::error::S3Error;
use crate::minio_admin::entry::{run_as, Reply};
use crate::minio_admin::error::AdminError;
use crate::minio_admin::route::Command;
use crate::state::AppState;
use crate::storage::meta::Counted;

/// A refusal of the admin API, as the console shows S3's.
fn as_s3(e: AdminError) -> S3Error {
    S3Error {
        code: e.code,
        status: e.status,
        message: e.message,
        headers: Vec::new(),
        extra: Vec::new(),
    }
}

/// The quota section of `bucket`'s settings page.
pub(super) async fn view(st: &AppState, ctx: &Ctx, bucket: &str) -> QuotaView {
    let query = vec![("bucket".to_owned(), bucket.to_owned())];
    let got = run_as(
        st,
        &ctx.signed.session.access_key,
        &ctx.parts,
        Command::GetBucketQuota,
        query,
        b"",
    )
    .await;
    let mut v = QuotaView::default();
    let answer = match got {
        Ok(Reply::Json(text)) => serde_json::from_str::<Value>(&text).unwrap_or_default(),
        Ok(_) => Value::Null,
        Err(e) => {
            v.error = Some(super::reason(&as_s3(e)));
            return v;
        }
    };
    let num = |k: &str| answer.get(k).and_then(Value::as_i64).filter(|n| *n > 0);
    v.limit_bytes = num("size");
    v.limit_objects = num("objects");
    if let Ok(Some(c)) = st.store.meta().bucket_counted(bucket).await {
        v.counted = true;
        v.used_bytes = c.used_bytes();
        v.used_objects = c.used_objects();
    }
    // The bucket's account's limits too, when it has any: they bind beside the bucket's.
    // (Whoever may read this bucket's quota may read its account's usage: the administrator,
    // or the account itself.)
    if let Ok(Some(a)) = st.store.meta().bucket_link(bucket).await {
        let account = a.strip_prefix("a:").unwrap_or(&a).to_owned();
        if let Ok(Some(c)) = st.store.account_counted(&account).await {
            v.account = Some(account_row("", account, Some(&c)));
        }
    }
    v.bytes_percent = percent(v.used_bytes, v.limit_bytes);
    v.objects_percent = percent(v.used_objects, v.limit_objects);
    v
}

/// An account's row: its limits and counters, if it is counted.
pub(super) fn account_row(key: &str, account: String, c: Option<&Counted>) -> AccountQuotaRow {
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

/// How full, in whole percent (at most 100 for the bar; the figures say the rest).
fn percent(used: i64, limit: Option<i64>) -> Option<i64> {
    limit.map(|l| (used.max(0).saturating_mul(100) / l.max(1)).min(100))
}

/// A size as typed: a whole number of bytes, or with a unit (KiB, MiB, GiB, TiB, or KB, MB,
/// GB, TB); empty is 0 (no limit).
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() {
        return Some(0);
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: u64 = n.parse().ok()?;
    let mul: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        "tib" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return None,
    };
    n.checked_mul(mul)
}

/// POST /settings/quota: sets (or, with both fields empty or 0, clears) the bucket's limits,
/// as `mc quota set` does: the whole configuration at once.
pub async fn save(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let back = format!(
        "/settings?bucket={}",
        crate::percent::uri_encode(&bucket, false)
    );
    let bytes = field(&f, "bytes").unwrap_or("");
    let objects = field(&f, "objects").unwrap_or("");
    let (Some(size), Ok(objects)) = (
        parse_size(bytes),
        objects.trim().parse::<u64>().or_else(|e| {
            if objects.trim().is_empty() {
                Ok(0)
            } else {
                Err(e)
            }
        }),
    ) else {
        let e = S3Error::invalid_argument(
            "A limit is a whole number: bytes (or with KiB, MiB, GiB, TiB), and objects",
        );
        return ctx.message(StatusCode::BAD_REQUEST, "Quota not set", Some(e), &back);
    };
    let body = serde_json::json!({"size": size, "quotatype": "hard", "objects": objects});
    let done = run_as(
        &st,
        &ctx.signed.session.access_key,
        &ctx.parts,
        Command::SetBucketQuota,
        vec![("bucket".to_owned(), bucket.clone())],
        body.to_string().as_bytes(),
    )
    .await;
    match done {
        Ok(_) => see_other(&format!("{back}#quota")),
        Err(e) => {
            let e = as_s3(e);
            ctx.message(e.status, "Quota not set", Some(e), &back)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_typed() {
        assert_eq!(parse_size(""), Some(0));
        assert_eq!(parse_size("1000"), Some(1000));
        assert_eq!(parse_size("10 GiB"), Some(10 << 30));
        assert_eq!(parse_size("5mb"), Some(5_000_000));
        assert_eq!(parse_size("5 parsecs"), None);
        assert_eq!(parse_size("-5"), None);
        assert_eq!(parse_size("99999999999999999999"), None);
        assert_eq!(parse_size("20000000 TiB"), None);
        assert_eq!(percent(50, Some(200)), Some(25));
        assert_eq!(percent(500, Some(200)), Some(100));
        assert_eq!(percent(5, None), None);
    }
}
