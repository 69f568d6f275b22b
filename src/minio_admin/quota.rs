//! `PUT set-bucket-quota` and `GET get-bucket-quota` (issue 62), as madmin-go's
//! `SetBucketQuota`/`GetBucketQuota`, minio-py's `MinioAdmin.bucket_quota_set/get/clear` and
//! `mc quota` send them: a JSON `BucketQuota` in the clear.
//!
//! - The limit is `size`, else the deprecated `quota` (what minio-py sends); 0 clears it.
//! - `quotatype` must be `hard` when a limit is set (MinIO refuses anything else too).
//! - `rate` and `requests` (MinIO's unused throttling fields) are refused when non-zero,
//!   never accepted and ignored.
//! - grids3's own `objects` field limits the number of versions and delete markers
//!   (0 clears it); madmin's clients leave it out, and ignore it in answers.
//!
//! Unlike MinIO's (a scanner's figure, checked with `>=`), the limit holds exactly: a write
//! is refused only when it would pass it (see `storage::objects::quota`).

use serde_json::{json, Value};

use super::entry::{Cx, Reply};
use super::error::{AdminError, AdminResult};
use crate::storage::meta::Limits;

/// Whether the caller is the deployment's administrator: its root key (or a service account
/// of it without session policies), signing as itself.
async fn administrator(cx: &Cx<'_>) -> AdminResult<bool> {
    if cx.caller.user.is_some() || !cx.caller.sessions.is_empty() {
        return Ok(false);
    }
    Ok(cx
        .st
        .creds
        .secret_of(&cx.acct().key)
        .await?
        .is_some_and(|k| k.root))
}

/// The bucket the query names, if the caller may see its quota: the administrator any
/// bucket, an account its own; else MinIO's `NoSuchBucket` (another account's bucket is not
/// told apart from a missing one).
async fn quota_bucket(cx: &Cx<'_>, admin: bool) -> AdminResult<String> {
    let name = cx
        .q("bucket")
        .filter(|b| !b.is_empty())
        .ok_or_else(|| AdminError::invalid_argument("bucket is required"))?;
    match cx.st.store.meta().get_bucket(name).await? {
        Some(b) if admin || b.owner == cx.acct().key => Ok(name.to_owned()),
        _ => Err(AdminError::no_such_bucket()),
    }
}

/// The limits a `BucketQuota` body sets.
pub fn parse_limits(body: &[u8]) -> AdminResult<Limits> {
    let v: Value = serde_json::from_slice(body).map_err(|e| AdminError::bad_json(e.to_string()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| AdminError::bad_json("not an object"))?;
    let num = |k: &str| -> AdminResult<u64> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(0),
            Some(n) => n
                .as_u64()
                .ok_or_else(|| AdminError::bad_json(format!("{k} is not a whole number"))),
        }
    };
    for k in ["rate", "requests"] {
        if num(k)? != 0 {
            return Err(AdminError::not_implemented(&format!(
                "a bucket quota's {k} (MinIO does not enforce it either)"
            )));
        }
    }
    let size = match num("size")? {
        0 => num("quota")?,
        n => n,
    };
    let objects = num("objects")?;
    let kind = obj.get("quotatype").and_then(Value::as_str).unwrap_or("");
    if (size > 0 || objects > 0) && kind != "hard" {
        return Err(AdminError::invalid_argument(format!(
            "quotatype {kind:?}: only \"hard\" quotas exist"
        )));
    }
    let limit = |n: u64| -> AdminResult<Option<i64>> {
        match n {
            0 => Ok(None),
            n => i64::try_from(n)
                .map(Some)
                .map_err(|_| AdminError::invalid_argument("a limit above 2^63")),
        }
    };
    Ok(Limits {
        bytes: limit(size)?,
        objects: limit(objects)?,
    })
}

/// `PUT set-bucket-quota?bucket=`: `admin:SetBucketQuota`, the administrator only.
pub async fn set(cx: &Cx<'_>) -> AdminResult<Reply> {
    cx.caller.allow("admin:SetBucketQuota", &cx.arn("*"))?;
    // A quota limits an account: the account must not be able to lift it. Only the
    // deployment's administrator sets one, on any account's bucket, as only MinIO's admins
    // do.
    if !administrator(cx).await? {
        return Err(AdminError::from(
            crate::error::S3Error::access_denied().with_message(
                "Only the deployment's administrator (its root key) sets bucket quotas",
            ),
        ));
    }
    let bucket = quota_bucket(cx, true).await?;
    let limits = parse_limits(cx.body)?;
    let set = cx
        .st
        .store
        .set_bucket_limits(&bucket, limits)
        .await
        .map_err(crate::error::S3Error::from)?;
    if !set {
        return Err(AdminError::no_such_bucket());
    }
    Ok(Reply::Done)
}

/// `GET get-bucket-quota?bucket=`: `admin:GetBucketQuota`, on the caller's account's buckets
/// (the administrator's: any bucket). A bucket without a limit answers
/// MinIO's empty quota (all zeros), as MinIO does.
pub async fn get(cx: &Cx<'_>) -> AdminResult<Reply> {
    cx.caller.allow("admin:GetBucketQuota", &cx.arn("*"))?;
    let bucket = quota_bucket(cx, administrator(cx).await?).await?;
    let counted = cx.st.store.meta().bucket_counted(&bucket).await?;
    let limits = counted.as_ref().map(|c| c.limits).unwrap_or_default();
    let size = limits.bytes.unwrap_or(0);
    let mut answer = json!({"quota": size, "size": size, "rate": 0, "requests": 0});
    if !limits.is_none() {
        answer["quotatype"] = json!("hard");
    }
    if let Some(o) = limits.objects {
        answer["objects"] = json!(o);
    }
    Ok(Reply::Json(answer.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_map_to_limits() {
        let l = |b: &str| parse_limits(b.as_bytes());
        assert_eq!(
            l(r#"{"quota":100,"quotatype":"hard"}"#).unwrap(),
            Limits {
                bytes: Some(100),
                objects: None
            }
        );
        assert_eq!(
            l(r#"{"size":7,"quota":100,"rate":0,"requests":0,"quotatype":"hard"}"#).unwrap(),
            Limits {
                bytes: Some(7),
                objects: None
            }
        );
        assert_eq!(
            l(r#"{"quota":0,"quotatype":"hard"}"#).unwrap(),
            Limits::default()
        );
        assert_eq!(
            l(r#"{"size":0,"objects":5,"quotatype":"hard"}"#).unwrap(),
            Limits {
                bytes: None,
                objects: Some(5)
            }
        );
        assert_eq!(
            l(r#"{"quota":5}"#).unwrap_err().code,
            "XMinioAdminInvalidArgument"
        );
        assert_eq!(
            l(r#"{"quota":5,"quotatype":"fifo"}"#).unwrap_err().code,
            "XMinioAdminInvalidArgument"
        );
        assert_eq!(l(r#"{"rate":5}"#).unwrap_err().code, "NotImplemented");
        assert_eq!(
            l(r#"{"quota":-1}"#).unwrap_err().code,
            "XMinioAdminConfigBadJSON"
        );
        assert_eq!(l("[1]").unwrap_err().code, "XMinioAdminConfigBadJSON");
    }
}
