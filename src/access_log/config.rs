//! A bucket's logging configuration (`BucketLoggingStatus`, PutBucketLogging's body): parsed
//! and checked once, stored as the canonical XML it renders to, read back for GetBucketLogging
//! and for delivery.

use serde::Deserialize;

use crate::error::{S3Error, S3Result};

/// How log object keys are made (`TargetObjectKeyFormat`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyFormat {
    /// `SimplePrefix` (the default): `<prefix>YYYY-mm-DD-HH-MM-SS-<unique>`.
    Simple,
    /// `PartitionedPrefix`:
    /// `<prefix><account>/<region>/<bucket>/YYYY/mm/DD/YYYY-mm-DD-HH-MM-SS-<unique>`, dated by
    /// the delivery time (`DeliveryTime`) or by the records' time (`EventTime`).
    Partitioned {
        /// `EventTime` (true) or `DeliveryTime`.
        event_time: bool,
    },
}

/// Where a bucket's access log goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// The target bucket.
    pub bucket: String,
    /// The key prefix of log objects.
    pub prefix: String,
    /// How log object keys are made.
    pub format: KeyFormat,
}

#[derive(Deserialize, Debug, Default)]
struct StatusXml {
    #[serde(rename = "LoggingEnabled", default)]
    enabled: Option<EnabledXml>,
}

#[derive(Deserialize, Debug, Default)]
struct EnabledXml {
    #[serde(rename = "TargetBucket", default)]
    bucket: Option<String>,
    #[serde(rename = "TargetPrefix", default)]
    prefix: Option<String>,
    /// Read so that it can be refused: grants to log objects are ACLs, which a log delivery
    /// to a bucket with ACLs disabled cannot take, and grids3 does not apply them.
    #[serde(rename = "TargetGrants", default)]
    grants: Option<GrantsXml>,
    #[serde(rename = "TargetObjectKeyFormat", default)]
    format: Option<FormatXml>,
}

#[derive(Deserialize, Debug, Default)]
struct GrantsXml {
    #[serde(rename = "Grant", default)]
    grants: Vec<GrantXml>,
}

#[derive(Deserialize, Debug, Default)]
#[allow(dead_code)]
struct GrantXml {
    #[serde(rename = "Grantee", default)]
    grantee: Option<GranteeXml>,
    #[serde(rename = "Permission", default)]
    permission: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
#[allow(dead_code)]
struct GranteeXml {
    #[serde(rename = "ID", default)]
    id: Option<String>,
    #[serde(rename = "DisplayName", default)]
    display_name: Option<String>,
    #[serde(rename = "URI", default)]
    uri: Option<String>,
    #[serde(rename = "EmailAddress", default)]
    email: Option<String>,
}

#[derive(Deserialize, Debug, Default)]
struct FormatXml {
    #[serde(rename = "SimplePrefix", default)]
    simple: Option<EmptyXml>,
    #[serde(rename = "PartitionedPrefix", default)]
    partitioned: Option<PartitionedXml>,
}

#[derive(Deserialize, Debug, Default)]
struct EmptyXml {}

#[derive(Deserialize, Debug, Default)]
struct PartitionedXml {
    #[serde(rename = "PartitionDateSource", default)]
    source: Option<String>,
}

/// Parses a `BucketLoggingStatus`: `Ok(None)` turns logging off (an empty status), `Ok(Some)`
/// names the target. The target bucket's existence and permission are checked by the caller.
pub fn parse(body: &[u8]) -> S3Result<Option<Target>> {
    let s: StatusXml = crate::xml::from_xml("BucketLoggingStatus", body)?;
    let Some(e) = s.enabled else { return Ok(None) };
    let bucket = e
        .bucket
        .map(|b| b.trim().to_owned())
        .filter(|b| !b.is_empty())
        .ok_or_else(S3Error::malformed_xml)?;
    if e.grants.is_some_and(|g| !g.grants.is_empty()) {
        return Err(S3Error::not_implemented().with_message(
            "TargetGrants are not implemented: log objects belong to the target bucket's owner",
        ));
    }
    let format = match e.format {
        None => KeyFormat::Simple,
        Some(FormatXml {
            simple: Some(_),
            partitioned: None,
        }) => KeyFormat::Simple,
        Some(FormatXml {
            simple: None,
            partitioned: Some(p),
        }) => match p.source.as_deref().map(str::trim) {
            None | Some("DeliveryTime") => KeyFormat::Partitioned { event_time: false },
            Some("EventTime") => KeyFormat::Partitioned { event_time: true },
            Some(_) => return Err(S3Error::malformed_xml()),
        },
        Some(_) => return Err(S3Error::malformed_xml()),
    };
    Ok(Some(Target {
        bucket,
        prefix: e.prefix.unwrap_or_default(),
        format,
    }))
}

use crate::xml::escape;

/// The `BucketLoggingStatus` document of a target (`None`: logging off), as stored and as
/// GetBucketLogging answers it.
pub fn render(target: Option<&Target>) -> String {
    let inner = match target {
        None => String::new(),
        Some(t) => {
            let format = match t.format {
                KeyFormat::Simple => "<SimplePrefix/>".to_owned(),
                KeyFormat::Partitioned { event_time } => format!(
                    "<PartitionedPrefix><PartitionDateSource>{}</PartitionDateSource></PartitionedPrefix>",
                    if event_time { "EventTime" } else { "DeliveryTime" }
                ),
            };
            format!(
                "<LoggingEnabled><TargetBucket>{}</TargetBucket><TargetPrefix>{}</TargetPrefix><TargetObjectKeyFormat>{format}</TargetObjectKeyFormat></LoggingEnabled>",
                escape(&t.bucket),
                escape(&t.prefix)
            )
        }
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<BucketLoggingStatus xmlns=\"{}\">{inner}</BucketLoggingStatus>",
        crate::xml::S3_NS
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        assert_eq!(parse(b"<BucketLoggingStatus/>").unwrap(), None);
        let t = parse(b"<BucketLoggingStatus xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LoggingEnabled><TargetBucket>logs</TargetBucket><TargetPrefix>a/ </TargetPrefix></LoggingEnabled></BucketLoggingStatus>").unwrap().unwrap();
        assert_eq!(
            t,
            Target {
                bucket: "logs".into(),
                prefix: "a/ ".into(),
                format: KeyFormat::Simple
            }
        );
        let p = parse(b"<BucketLoggingStatus><LoggingEnabled><TargetBucket>logs</TargetBucket><TargetPrefix>p/</TargetPrefix><TargetObjectKeyFormat><PartitionedPrefix><PartitionDateSource>EventTime</PartitionDateSource></PartitionedPrefix></TargetObjectKeyFormat></LoggingEnabled></BucketLoggingStatus>").unwrap().unwrap();
        assert_eq!(p.format, KeyFormat::Partitioned { event_time: true });
        // Round trip.
        assert_eq!(parse(render(Some(&p)).as_bytes()).unwrap(), Some(p));
        assert_eq!(parse(render(None).as_bytes()).unwrap(), None);
        for bad in [
            &b"<BucketLoggingStatus><LoggingEnabled><TargetPrefix>p</TargetPrefix></LoggingEnabled></BucketLoggingStatus>"[..],
            b"<BucketLoggingStatus><LoggingEnabled><TargetBucket>l</TargetBucket><TargetObjectKeyFormat><SimplePrefix/><PartitionedPrefix/></TargetObjectKeyFormat></LoggingEnabled></BucketLoggingStatus>",
            b"<BucketLoggingStatus><LoggingEnabled><TargetBucket>l</TargetBucket><Colour/></LoggingEnabled></BucketLoggingStatus>",
            b"<LoggingStatus/>",
        ] {
            assert_eq!(parse(bad).unwrap_err().code, "MalformedXML");
        }
    }
}
