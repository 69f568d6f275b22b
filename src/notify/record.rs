//! The event record, in AWS's format (event structure 2.1), so that consumers written for S3
//! (Lambda-style handlers, MinIO consumers) parse it unchanged. Pure: the record is made from a
//! change and the request's origin, already in its final shape, before it is queued.

use serde_json::json;

/// The event types grids3 produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventName {
    /// PutObject.
    Put,
    /// POST Object (a browser form).
    Post,
    /// CopyObject.
    Copy,
    /// CompleteMultipartUpload.
    CompleteMultipartUpload,
    /// An object (or a version) deleted.
    Delete,
    /// A delete marker made by a delete in a versioned bucket.
    DeleteMarkerCreated,
    /// PutObjectTagging.
    TaggingPut,
    /// DeleteObjectTagging.
    TaggingDelete,
    /// PutObjectAcl.
    AclPut,
    /// An object deleted by a lifecycle expiration.
    LifecycleDelete,
    /// A delete marker made by a lifecycle expiration.
    LifecycleDeleteMarkerCreated,
    /// GetObject (MinIO's type: for listeners only, as AWS has no such event).
    AccessedGet,
    /// HeadObject (as [`EventName::AccessedGet`]).
    AccessedHead,
}

impl EventName {
    /// The configuration's name of the type (`s3:ObjectCreated:Put`).
    pub fn configured(self) -> &'static str {
        match self {
            EventName::Put => "s3:ObjectCreated:Put",
            EventName::Post => "s3:ObjectCreated:Post",
            EventName::Copy => "s3:ObjectCreated:Copy",
            EventName::CompleteMultipartUpload => "s3:ObjectCreated:CompleteMultipartUpload",
            EventName::Delete => "s3:ObjectRemoved:Delete",
            EventName::DeleteMarkerCreated => "s3:ObjectRemoved:DeleteMarkerCreated",
            EventName::TaggingPut => "s3:ObjectTagging:Put",
            EventName::TaggingDelete => "s3:ObjectTagging:Delete",
            EventName::AclPut => "s3:ObjectAcl:Put",
            EventName::LifecycleDelete => "s3:LifecycleExpiration:Delete",
            EventName::LifecycleDeleteMarkerCreated => "s3:LifecycleExpiration:DeleteMarkerCreated",
            EventName::AccessedGet => "s3:ObjectAccessed:Get",
            EventName::AccessedHead => "s3:ObjectAccessed:Head",
        }
    }

    /// The record's `eventName`: the type without `s3:`, as AWS sends it.
    pub fn record_name(self) -> &'static str {
        &self.configured()[3..]
    }

    /// Whether the type names a removal (the record then carries no size or ETag).
    fn removes(self) -> bool {
        matches!(
            self,
            EventName::Delete
                | EventName::DeleteMarkerCreated
                | EventName::LifecycleDelete
                | EventName::LifecycleDeleteMarkerCreated
        )
    }
}

/// One change to one object, as the request that made it saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What happened.
    pub event: EventName,
    /// The object's key.
    pub key: String,
    /// Its size in bytes (creations; tagging and ACL changes when known).
    pub size: Option<u64>,
    /// Its ETag, without quotes.
    pub etag: Option<String>,
    /// The version created or removed (versioned buckets only, as AWS sends it).
    pub version_id: Option<String>,
}

/// Who made a change, and where the request came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origin {
    /// The principal: the requester's access key id; `Anonymous` for unsigned requests, and
    /// `s3.amazonaws.com` for lifecycle expirations (AWS's value, which consumers know).
    pub principal: String,
    /// The client's address (empty for lifecycle expirations).
    pub source_ip: String,
    /// The request id (also `x-amz-id-2`, as grids3 answers both with one id).
    pub request_id: String,
}

/// The facts of the bucket a record names.
#[derive(Clone, Debug)]
pub struct BucketFacts<'a> {
    /// Its name.
    pub name: &'a str,
    /// Its owner's canonical id.
    pub owner_id: &'a str,
    /// The region grids3 answers with.
    pub region: &'a str,
}

/// An event's sequencer: a hex string that grows with later events on the same key, made of
/// the database's time in milliseconds and a counter (see [`crate::notify`]).
pub fn sequencer(seq: i64) -> String {
    format!("{seq:016X}")
}

/// The sequencer a record is rendered with before its change has its own (see
/// `outbox::Outbox::push`, which writes it in with [`set_sequencer`]).
pub const UNSEQUENCED: i64 = 0;

/// Writes `seq` into a record rendered with [`UNSEQUENCED`], in place (16 hex digits for 16).
/// The rendered JSON has no spaces, and a `"` inside a string value is escaped, so the only
/// `"sequencer":"` in it is the object's own; a record without one (a TestEvent) is left as
/// it is.
pub fn set_sequencer(body: &mut String, seq: i64) {
    const FIELD: &str = "\"sequencer\":\"";
    let placeholder = sequencer(UNSEQUENCED);
    let Some(at) = body.find(FIELD) else {
        return;
    };
    let start = at + FIELD.len();
    let value = sequencer(seq);
    if body.get(start..start + placeholder.len()) == Some(placeholder.as_str())
        && value.len() == placeholder.len()
    {
        body.replace_range(start..start + value.len(), &value);
    }
}

/// The key as AWS puts it in a record: URL-encoded, a space as `+`, `/` kept.
pub fn encode_key(key: &str) -> String {
    crate::percent::uri_encode(key, true).replace("%20", "+")
}

/// How a record names its event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Naming {
    /// AWS's records (`ObjectCreated:Put`): notification targets.
    Aws,
    /// MinIO's (`s3:ObjectCreated:Put`): ListenBucketNotification, MinIO's own API, whose
    /// clients compare the name with the configured one (minio-js's listener tests do).
    Minio,
}

/// The `Records` document of one change, for one configuration (`configuration_id`), at
/// `time` (RFC 3339 with milliseconds, the database's clock).
pub fn render(
    change: &Change,
    origin: &Origin,
    bucket: &BucketFacts<'_>,
    (configuration_id, naming): (&str, Naming),
    time: &str,
    seq: i64,
) -> String {
    let mut object = json!({
        "key": encode_key(&change.key),
        "sequencer": sequencer(seq),
    });
    if !change.event.removes() {
        if let Some(size) = change.size {
            object["size"] = json!(size);
        }
        if let Some(etag) = &change.etag {
            object["eTag"] = json!(etag.trim_matches('"'));
        }
    }
    if let Some(v) = &change.version_id {
        object["versionId"] = json!(v);
    }
    json!({"Records": [{
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": bucket.region,
        "eventTime": time,
        "eventName": match naming {
            Naming::Aws => change.event.record_name(),
            Naming::Minio => change.event.configured(),
        },
        "userIdentity": {"principalId": origin.principal},
        "requestParameters": {"sourceIPAddress": origin.source_ip},
        "responseElements": {
            "x-amz-request-id": origin.request_id,
            "x-amz-id-2": origin.request_id,
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": configuration_id,
            "bucket": {
                "name": bucket.name,
                "ownerIdentity": {"principalId": bucket.owner_id},
                "arn": format!("arn:aws:s3:::{}", bucket.name),
            },
            "object": object,
        },
    }]})
    .to_string()
}

/// The `s3:TestEvent` a target is sent when a configuration names it, in AWS's shape.
pub fn test_event(bucket: &str, time: &str, request_id: &str) -> String {
    json!({
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": time,
        "Bucket": bucket,
        "RequestId": request_id,
        "HostId": request_id,
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_has_aws_fields() {
        let c = Change {
            event: EventName::Put,
            key: "photos/a b+c.jpg".into(),
            size: Some(42),
            etag: Some("\"abc\"".into()),
            version_id: None,
        };
        let o = Origin {
            principal: "AKIA".into(),
            source_ip: "127.0.0.1".into(),
            request_id: "R1".into(),
        };
        let b = BucketFacts {
            name: "bk",
            owner_id: "own",
            region: "us-east-1",
        };
        let r: serde_json::Value = serde_json::from_str(&render(
            &c,
            &o,
            &b,
            ("cfg", Naming::Aws),
            "2026-01-01T00:00:00.000Z",
            255,
        ))
        .unwrap();
        let rec = &r["Records"][0];
        assert_eq!(rec["eventName"], "ObjectCreated:Put");
        // A listener's record names the event as MinIO does.
        let minio: serde_json::Value =
            serde_json::from_str(&render(&c, &o, &b, ("", Naming::Minio), "t", 255)).unwrap();
        assert_eq!(minio["Records"][0]["eventName"], "s3:ObjectCreated:Put");
        assert_eq!(rec["eventVersion"], "2.1");
        assert_eq!(rec["s3"]["object"]["key"], "photos/a+b%2Bc.jpg");
        assert_eq!(rec["s3"]["object"]["size"], 42);
        assert_eq!(rec["s3"]["object"]["eTag"], "abc");
        assert_eq!(rec["s3"]["object"]["sequencer"], "00000000000000FF");
        assert_eq!(rec["s3"]["bucket"]["arn"], "arn:aws:s3:::bk");
        assert_eq!(rec["s3"]["configurationId"], "cfg");
        assert!(rec["s3"]["object"].get("versionId").is_none());
        let d = Change {
            event: EventName::DeleteMarkerCreated,
            version_id: Some("v1".into()),
            ..c
        };
        let r: serde_json::Value =
            serde_json::from_str(&render(&d, &o, &b, ("cfg", Naming::Aws), "t", 256)).unwrap();
        let obj = &r["Records"][0]["s3"]["object"];
        assert!(obj.get("size").is_none() && obj.get("eTag").is_none());
        assert_eq!(obj["versionId"], "v1");
        assert!(sequencer(256) > sequencer(255));
    }

    #[test]
    fn the_sequencer_is_written_into_the_object_only() {
        let c = Change {
            event: EventName::Put,
            key: "k\"sequencer\":\"0000000000000000".into(),
            size: Some(1),
            etag: None,
            version_id: None,
        };
        let o = Origin {
            principal: "\"sequencer\":\"0000000000000000\"".into(),
            source_ip: String::new(),
            request_id: "R".into(),
        };
        let b = BucketFacts {
            name: "bk",
            owner_id: "own",
            region: "us-east-1",
        };
        // A configuration id and a principal that spell the field are escaped in the JSON.
        let id = "\"sequencer\":\"0000000000000000\"";
        let mut body = render(&c, &o, &b, (id, Naming::Aws), "t", UNSEQUENCED);
        set_sequencer(&mut body, 0x0123_4567_89AB_CDEF);
        let r: serde_json::Value = serde_json::from_str(&body).unwrap();
        let rec = &r["Records"][0];
        assert_eq!(rec["s3"]["object"]["sequencer"], "0123456789ABCDEF");
        assert_eq!(rec["s3"]["configurationId"], id);
        assert_eq!(rec["userIdentity"]["principalId"], o.principal);
        // A record without a sequencer (a TestEvent) is left as it is.
        let mut test = test_event("bk", "t", "R");
        let before = test.clone();
        set_sequencer(&mut test, 5);
        assert_eq!(test, before);
    }
}
