//! `GET datausageinfo` (issue 62): what the caller's account's buckets hold, in madmin's
//! `DataUsageInfo` shape, which `mc admin info`, `mc du` and minio-py's
//! `MinioAdmin.get_data_usage_info` read.
//!
//! Where MinIO answers from its scanner's last pass (so a figure may be minutes old), grids3
//! recounts from the data at each call (`storage::objects::usage`): the figures are always
//! true, and a call costs a read of each bucket's files. `lastUpdate` is the database's time
//! of the recount. Beyond madmin's fields, each bucket says its multipart uploads in progress,
//! their parts and the parts' bytes (`x-grids3-uploads`, `x-grids3-parts`,
//! `x-grids3-parts-size`), which issue 62's quotas count.

use serde_json::{json, Map, Value};

use super::entry::{rfc3339, Cx, Reply};
use super::error::{AdminError, AdminResult};

/// `GET datausageinfo`: `admin:DataUsageInfo`, over the buckets the caller's account owns.
pub async fn data_usage_info(cx: &Cx<'_>) -> AdminResult<Reply> {
    cx.caller.allow("admin:DataUsageInfo", &cx.arn("*"))?;
    // madmin's `capacity=true` asks for the disks' capacity too: MongoDB's storage is not
    // grids3's to measure, so it is refused rather than answered without it.
    for (k, v) in cx.query {
        match (k.as_str(), v.as_str()) {
            ("capacity", "false" | "") => {}
            ("capacity", _) => {
                return Err(AdminError::not_implemented(
                    "datausageinfo with capacity (grids3 does not measure MongoDB's disks)",
                ))
            }
            _ => {
                return Err(AdminError::not_implemented(&format!(
                    "datausageinfo with {k}"
                )))
            }
        }
    }
    let store = &cx.st.store;
    let owner = &cx.acct().key;
    let mut buckets = Map::new();
    let mut sizes = Map::new();
    let (mut objects, mut versions, mut markers, mut bytes) = (0_i64, 0_i64, 0_i64, 0_i64);
    for b in store.meta().list_buckets().await? {
        if &b.owner != owner {
            continue;
        }
        let u = store.recount_usage(&b.name).await?;
        objects += u.objects;
        versions += u.versions;
        markers += u.delete_markers;
        bytes += u.bytes;
        sizes.insert(b.name.clone(), json!(u.bytes));
        buckets.insert(
            b.name.clone(),
            json!({
                "size": u.bytes,
                "objectsCount": u.objects,
                "versionsCount": u.versions,
                "deleteMarkersCount": u.delete_markers,
                "objectsSizesHistogram": {},
                "objectsVersionsHistogram": {},
                "x-grids3-uploads": u.uploads,
                "x-grids3-parts": u.parts,
                "x-grids3-parts-size": u.part_bytes,
            }),
        );
    }
    let answer: Value = json!({
        "lastUpdate": rfc3339(store.meta().clock().now()),
        "objectsCount": objects,
        "versionsCount": versions,
        "deleteMarkersCount": markers,
        "objectsTotalSize": bytes,
        "bucketsCount": buckets.len(),
        "bucketsUsageInfo": buckets,
        "bucketsSizes": sizes,
    });
    Ok(Reply::Json(answer.to_string()))
}
