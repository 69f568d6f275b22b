//! Bucket sub-resources grids3 has no configuration for (replication, acceleration,
//! request payment, analytics, metrics, inventory, intelligent tiering). Their GETs answer what AWS answers
//! for a bucket where nothing was configured, so that clients that read them (consoles, sync
//! tools, conformance suites) see a truthful "none"; their PUTs and DELETEs stay
//! `501 NotImplemented`, naming the sub-resource, since grids3 could not honour them.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::xml;

fn not_found(code: &'static str, message: &str) -> S3Error {
    S3Error {
        code,
        status: StatusCode::NOT_FOUND,
        message: message.to_owned(),
        headers: Vec::new(),
        extra: Vec::new(),
    }
}

/// The GET of an unconfigured sub-resource.
pub async fn get(st: &AppState, req: S3Request, sub: &str) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let one = req.q("id").is_some();
    let body = |root: &str, inner: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<{root} xmlns=\"{}\">{inner}</{root}>",
            xml::S3_NS
        )
    };
    let listing = |root: &str| Ok(body(root, "<IsTruncated>false</IsTruncated>"));
    let doc: S3Result<String> = match sub {
        "replication" => Err(not_found(
            "ReplicationConfigurationNotFoundError",
            "The replication configuration was not found",
        )),
        "accelerate" => Ok(body("AccelerateConfiguration", "")),
        "requestPayment" => Ok(body(
            "RequestPaymentConfiguration",
            "<Payer>BucketOwner</Payer>",
        )),
        "analytics" | "metrics" | "inventory" | "intelligent-tiering" if one => Err(not_found(
            "NoSuchConfiguration",
            "The specified configuration does not exist.",
        )),
        "analytics" => listing("ListBucketAnalyticsConfigurationResult"),
        "metrics" => listing("ListMetricsConfigurationsResult"),
        "inventory" => listing("ListInventoryConfigurationsResult"),
        "intelligent-tiering" => listing("ListBucketIntelligentTieringConfigurationsOutput"),
        _ => Err(S3Error::not_implemented()),
    };
    Ok(xml_response(StatusCode::OK, doc?))
}

/// GetObjectTorrent: `404 NoSuchKey` for a key without an object, as AWS answers, and
/// `501 NotImplemented` for one that has an object, since grids3 makes no torrent files.
pub async fn get_object_torrent(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    crate::s3::lookup::find_version(st, req.bucket(), req.key(), None)
        .await?
        .ok_or_else(S3Error::no_such_key)?;
    Err(S3Error::not_implemented()
        .with_message("GetObjectTorrent is not implemented: grids3 makes no torrent files"))
}
