//! One access log record, in AWS's server access log format: space-separated fields, `-` for
//! none, the time in brackets, the request line, referrer and user agent in quotes.

use chrono::{DateTime, Utc};

/// What a record says of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// The source bucket's owner (canonical id).
    pub bucket_owner: String,
    /// The source bucket.
    pub bucket: String,
    /// When the request was received.
    pub time: DateTime<Utc>,
    /// The client's address.
    pub remote_ip: Option<String>,
    /// The requester's canonical id (`None`: unsigned).
    pub requester: Option<String>,
    /// The request id.
    pub request_id: String,
    /// `REST.<METHOD>.<RESOURCE>` (see [`operation`]).
    pub operation: String,
    /// The key, URL-encoded as AWS writes it.
    pub key: Option<String>,
    /// `METHOD /path?query HTTP/1.1`.
    pub request_uri: String,
    /// The HTTP status.
    pub status: u16,
    /// The S3 error code, if any.
    pub error_code: Option<String>,
    /// Response body bytes sent (`None`: none).
    pub bytes_sent: Option<u64>,
    /// The object's size, for object operations that know it.
    pub object_size: Option<u64>,
    /// Milliseconds from receipt to the response.
    pub total_ms: u64,
    /// Milliseconds spent processing, before the response began.
    pub turn_around_ms: u64,
    /// `Referer`.
    pub referrer: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// The version id a request named or made.
    pub version_id: Option<String>,
    /// The host id (`x-amz-id-2`).
    pub host_id: String,
    /// `SigV2`, `SigV4`, or none.
    pub signature_version: Option<&'static str>,
    /// The TLS cipher suite (grids3 does not record it: `-`).
    pub cipher_suite: Option<String>,
    /// `AuthHeader`, `QueryString`, or none.
    pub auth_type: Option<&'static str>,
    /// The `Host` header.
    pub host_header: Option<String>,
    /// `TLSv1.2`, `TLSv1.3`, or none for plain HTTP.
    pub tls_version: Option<String>,
    /// Whether an ACL decided the request (`Yes`), else none.
    pub acl_required: bool,
}

fn dash(v: Option<&str>) -> &str {
    v.filter(|s| !s.is_empty()).unwrap_or("-")
}

fn quoted(v: Option<&str>) -> String {
    match v.filter(|s| !s.is_empty()) {
        // A quote inside would end the field early: AWS escapes it the same way.
        Some(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
        None => "\"-\"".to_owned(),
    }
}

fn number(v: Option<u64>) -> String {
    v.map_or_else(|| "-".to_owned(), |n| n.to_string())
}

impl Record {
    /// The record's line (without the newline).
    pub fn line(&self) -> String {
        let fields: Vec<String> = vec![
            dash(Some(&self.bucket_owner)).to_owned(),
            dash(Some(&self.bucket)).to_owned(),
            self.time.format("[%d/%b/%Y:%H:%M:%S %z]").to_string(),
            dash(self.remote_ip.as_deref()).to_owned(),
            dash(self.requester.as_deref()).to_owned(),
            self.request_id.clone(),
            self.operation.clone(),
            dash(self.key.as_deref()).to_owned(),
            quoted(Some(&self.request_uri)),
            self.status.to_string(),
            dash(self.error_code.as_deref()).to_owned(),
            number(self.bytes_sent.filter(|n| *n > 0)),
            number(self.object_size),
            self.total_ms.to_string(),
            self.turn_around_ms.to_string(),
            quoted(self.referrer.as_deref()),
            quoted(self.user_agent.as_deref()),
            dash(self.version_id.as_deref()).to_owned(),
            self.host_id.clone(),
            dash(self.signature_version).to_owned(),
            dash(self.cipher_suite.as_deref()).to_owned(),
            dash(self.auth_type).to_owned(),
            dash(self.host_header.as_deref()).to_owned(),
            dash(self.tls_version.as_deref()).to_owned(),
            // The access point ARN: grids3 has no access points.
            "-".to_owned(),
            if self.acl_required { "Yes" } else { "-" }.to_owned(),
        ];
        fields.join(" ")
    }
}

/// The operation field, as AWS names them: `REST.<METHOD>.<RESOURCE>`, the resource being
/// the sub-resource a query names (`ACL`, `TAGGING`, `VERSIONING`, `UPLOADS`, `UPLOAD` for an
/// upload id, `PART` for a part), else `OBJECT` or `BUCKET`.
pub fn operation(method: &str, has_key: bool, query: &[(String, String)]) -> String {
    let has = |w: &str| query.iter().any(|(k, _)| k == w);
    let resource = if has("partNumber") && has("uploadId") {
        "PART".to_owned()
    } else if has("uploadId") {
        "UPLOAD".to_owned()
    } else if let Some(w) = query.iter().map(|(k, _)| k.as_str()).find(|k| {
        crate::subresource::ALL
            .iter()
            .any(|(s, _)| s == k && !matches!(*k, "versionId" | "partNumber"))
    }) {
        match w {
            "logging" => "LOGGING_STATUS".to_owned(),
            "object-lock" => "OBJECT_LOCK_CONFIGURATION".to_owned(),
            "legal-hold" => "LEGAL_HOLD".to_owned(),
            "delete" => "MULTI_OBJECT_DELETE".to_owned(),
            "versions" => "BUCKETVERSIONS".to_owned(),
            other => other.to_ascii_uppercase().replace('-', "_"),
        }
    } else if has_key {
        "OBJECT".to_owned()
    } else {
        "BUCKET".to_owned()
    };
    format!("REST.{}.{resource}", method.to_ascii_uppercase())
}

/// The key of a log object delivered at `at`, with `unique` (16 upper-case hex) to tell
/// deliveries apart.
pub fn object_key(
    target: &super::config::Target,
    source_bucket: &str,
    region: &str,
    at: DateTime<Utc>,
    event_time: DateTime<Utc>,
    unique: &str,
) -> String {
    let stamp = |t: DateTime<Utc>| t.format("%Y-%m-%d-%H-%M-%S").to_string();
    match target.format {
        super::config::KeyFormat::Simple => {
            format!("{}{}-{unique}", target.prefix, stamp(at))
        }
        super::config::KeyFormat::Partitioned {
            event_time: by_event,
        } => {
            let day = if by_event { event_time } else { at };
            // grids3 has no account ids: the all-zero account, as its ARNs use.
            format!(
                "{}000000000000/{region}/{source_bucket}/{}/{}",
                target.prefix,
                day.format("%Y/%m/%d"),
                format_args!("{}-{unique}", stamp(at))
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_line_as_aws_writes_it() {
        let r = Record {
            bucket_owner: "o".repeat(64),
            bucket: "photos".into(),
            time: Utc.with_ymd_and_hms(2026, 2, 6, 0, 0, 38).unwrap(),
            remote_ip: Some("192.0.2.3".into()),
            requester: None,
            request_id: "3E57427F3EXAMPLE".into(),
            operation: operation("GET", false, &[("versioning".into(), String::new())]),
            key: None,
            request_uri: "GET /photos?versioning HTTP/1.1".into(),
            status: 200,
            bytes_sent: Some(113),
            total_ms: 7,
            user_agent: Some("S3Console/0.4 \"x\"".into()),
            host_id: "3E57427F3EXAMPLE".into(),
            signature_version: Some("SigV4"),
            auth_type: Some("AuthHeader"),
            host_header: Some("127.0.0.1:9000".into()),
            ..Default::default()
        };
        assert_eq!(
            r.line(),
            format!(
                "{} photos [06/Feb/2026:00:00:38 +0000] 192.0.2.3 - 3E57427F3EXAMPLE REST.GET.VERSIONING - \"GET /photos?versioning HTTP/1.1\" 200 - 113 - 7 0 \"-\" \"S3Console/0.4 \\\"x\\\"\" - 3E57427F3EXAMPLE SigV4 - AuthHeader 127.0.0.1:9000 - - -",
                "o".repeat(64)
            )
        );
    }

    #[test]
    fn operations_and_keys() {
        let q = |ws: &[&str]| -> Vec<(String, String)> {
            ws.iter().map(|w| (w.to_string(), String::new())).collect()
        };
        assert_eq!(operation("PUT", true, &[]), "REST.PUT.OBJECT");
        assert_eq!(
            operation("GET", false, &q(&["list-type"])),
            "REST.GET.BUCKET"
        );
        assert_eq!(operation("HEAD", false, &[]), "REST.HEAD.BUCKET");
        assert_eq!(
            operation("PUT", true, &q(&["partNumber", "uploadId"])),
            "REST.PUT.PART"
        );
        assert_eq!(
            operation("POST", true, &q(&["uploads"])),
            "REST.POST.UPLOADS"
        );
        assert_eq!(operation("GET", true, &q(&["acl"])), "REST.GET.ACL");
        assert_eq!(
            operation("GET", true, &q(&["versionId"])),
            "REST.GET.OBJECT"
        );
        assert_eq!(
            operation("POST", false, &q(&["delete"])),
            "REST.POST.MULTI_OBJECT_DELETE"
        );
        let at = Utc.with_ymd_and_hms(2026, 11, 25, 23, 5, 9).unwrap();
        let simple = super::super::config::Target {
            bucket: "logs".into(),
            prefix: "photos/".into(),
            format: super::super::config::KeyFormat::Simple,
        };
        assert_eq!(
            object_key(&simple, "photos", "us-east-1", at, at, "ABCDEF0123456789"),
            "photos/2026-11-25-23-05-09-ABCDEF0123456789"
        );
        let partitioned = super::super::config::Target {
            format: super::super::config::KeyFormat::Partitioned { event_time: false },
            ..simple
        };
        assert_eq!(
            object_key(
                &partitioned,
                "photos",
                "us-east-1",
                at,
                at,
                "ABCDEF0123456789"
            ),
            "photos/000000000000/us-east-1/photos/2026/11/25/2026-11-25-23-05-09-ABCDEF0123456789"
        );
        // Dated by the delivery or by the records' time, as PartitionDateSource says.
        let delivered = Utc.with_ymd_and_hms(2026, 11, 26, 0, 0, 1).unwrap();
        assert_eq!(
            object_key(&partitioned, "photos", "us-east-1", delivered, at, "A"),
            "photos/000000000000/us-east-1/photos/2026/11/26/2026-11-26-00-00-01-A"
        );
        let by_event = super::super::config::Target {
            format: super::super::config::KeyFormat::Partitioned { event_time: true },
            ..partitioned
        };
        assert_eq!(
            object_key(&by_event, "photos", "us-east-1", delivered, at, "A"),
            "photos/000000000000/us-east-1/photos/2026/11/25/2026-11-26-00-00-01-A"
        );
    }
}
