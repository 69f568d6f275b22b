//! Server access logging: a record per request to a bucket whose logging is on, in AWS's
//! format ([`record`]), delivered as log objects into the target bucket ([`config`]).
//!
//! The way a record goes, and what a crash loses:
//! 1. each instance keeps its records in memory ([`Recorder::push`]);
//! 2. every staging period (a quarter of `--access-log-flush-secs`, at most 5 s, or as soon as
//!    10,000 records wait) it stages them in `__accesslog`, one `insert_many`: an instance that
//!    dies loses at most the records of one staging period, never more than a flush interval;
//! 3. every half flush interval one instance, the holder of the fenced `access-log` lead,
//!    delivers: per source bucket it claims the staged records (`batch`, a fresh id, set on
//!    those without one), writes them as one log object named after the batch
//!    (`If-None-Match: *`: a retry after a crash writes the same object once), checks that it
//!    still holds the lead, then deletes exactly the records of that batch. A crash between
//!    the object and the delete leaves a claimed batch, which the next delivery finds, sees
//!    written, and deletes. So a record is delivered once, within a flush interval of its
//!    staging.
//!
//! Where grids3 differs from AWS: AWS delivers "best effort", usually within hours, and may
//! lose or repeat records; grids3 delivers within a flush interval and repeats none. Cipher
//! suites, TLS versions and the "ACL required" field are not recorded (`-`).

pub mod config;
pub mod record;

use std::sync::Mutex;
use std::time::Duration;

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};
use mongodb::{Collection, Database};

use crate::storage::objects::{ObjectMeta, ObjectStore, WriteCondition};
pub use record::Record;

/// Records an instance holds before it stages them early.
const STAGE_AT: usize = 10_000;

/// Records one log object holds at most.
const BATCH: i64 = 50_000;

/// Records an instance keeps while it cannot stage them (the database away): beyond this the
/// newest are dropped and counted, so an outage never grows the gateway's memory without
/// bound.
const KEEP_AT_MOST: usize = 200_000;

/// An instance's records waiting to be staged.
pub struct Recorder {
    waiting: Mutex<Vec<Document>>,
    staged: Collection<Document>,
    full: tokio::sync::Notify,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Recorder")
    }
}

impl Recorder {
    /// The recorder of `db`.
    pub fn new(db: &Database) -> Self {
        Self {
            waiting: Mutex::new(Vec::new()),
            staged: db.collection("__accesslog"),
            full: tokio::sync::Notify::new(),
        }
    }

    /// Keeps a record of a request to `source` (a bucket whose logging is on).
    pub fn push(&self, source: &str, r: &Record) {
        let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
        if w.len() >= KEEP_AT_MOST {
            crate::metrics::access_log_dropped();
            return;
        }
        w.push(doc! {
            "source": source,
            "at": DateTime::from_chrono(r.time),
            "line": r.line(),
        });
        if w.len() >= STAGE_AT {
            self.full.notify_one();
        }
    }

    /// Waits until records should be staged early (a full buffer).
    pub async fn filled(&self) {
        self.full.notified().await
    }

    /// Stages the waiting records in `__accesslog`; how many. Records that fail to stage are
    /// kept for the next try.
    pub async fn stage(&self) -> mongodb::error::Result<usize> {
        let docs = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()));
        if docs.is_empty() {
            return Ok(0);
        }
        let n = docs.len();
        if let Err(e) = self.staged.insert_many(docs.clone()).await {
            // An ordered insert_many that a write error stopped wrote the records before the
            // first failing one: those are not kept again. Any other error (the connection
            // lost) cannot tell what was written, so all are kept: a repeat is possible
            // there, a loss is not.
            let written = match e.kind.as_ref() {
                mongodb::error::ErrorKind::InsertMany(m) => m
                    .write_errors
                    .as_ref()
                    .and_then(|w| w.iter().map(|x| x.index).min())
                    .unwrap_or(0),
                _ => 0,
            };
            let mut w = self.waiting.lock().unwrap_or_else(|e| e.into_inner());
            let mut rest: Vec<Document> = docs.into_iter().skip(written).collect();
            rest.append(&mut w);
            *w = rest;
            return Err(e);
        }
        Ok(n)
    }

    /// Records waiting in this instance (for tests and metrics).
    pub fn waiting(&self) -> usize {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// How often records are staged, for a flush interval.
pub fn stage_every(flush: Duration) -> Duration {
    (flush / 4).clamp(Duration::from_millis(100), Duration::from_secs(5))
}

/// One delivery by the lead holder: every source bucket's staged records as log objects.
/// Returns the log objects written.
pub async fn deliver(
    store: &ObjectStore,
    keys: &crate::crypto::Keys,
    region: &str,
    lead: &crate::storage::meta::Lead,
) -> anyhow::Result<usize> {
    let staged: Collection<Document> = store.db().collection("__accesslog");
    let sources: Vec<String> = staged
        .distinct("source", doc! {})
        .await?
        .into_iter()
        .filter_map(|b| b.as_str().map(str::to_owned))
        .collect();
    let mut written = 0;
    for source in sources {
        let target = store
            .meta()
            .get_bucket(&source)
            .await?
            .and_then(|b| b.logging)
            .and_then(|x| config::parse(x.as_bytes()).ok().flatten());
        let Some(target) = target else {
            // Logging was turned off (or the bucket deleted) since: AWS stops delivering too.
            if lead.check().await? {
                staged.delete_many(doc! {"source": &source}).await?;
            }
            continue;
        };
        let Some(owner) = store
            .meta()
            .get_bucket(&target.bucket)
            .await?
            .map(|b| b.owner)
        else {
            tracing::warn!(
                source,
                target = target.bucket,
                "access log target bucket is gone; records kept"
            );
            continue;
        };
        // Claim what is staged now under a new batch id (a crashed delivery's batches first).
        let mut batches: Vec<String> = staged
            .distinct(
                "batch",
                doc! {"source": &source, "batch": {"$type": "string"}},
            )
            .await?
            .into_iter()
            .filter_map(|b| b.as_str().map(str::to_owned))
            .collect();
        let fresh = uuid::Uuid::new_v4().simple().to_string();
        let ids: Vec<mongodb::bson::Bson> = staged
            .find(doc! {"source": &source, "batch": {"$exists": false}})
            .projection(doc! {"_id": 1})
            .sort(doc! {"_id": 1})
            .limit(BATCH)
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .into_iter()
            .filter_map(|d| d.get("_id").cloned())
            .collect();
        if !ids.is_empty() {
            // The claim's time (the database's) is the delivery time the log object is named
            // and dated by: fixed with the batch, so a retried delivery makes the same key.
            staged
                .update_many(
                    doc! {"_id": {"$in": ids}, "batch": {"$exists": false}},
                    doc! {"$set": {"batch": &fresh, "claimed": store.meta().clock().now()}},
                )
                .await?;
            batches.push(fresh);
        }
        for batch in batches {
            let docs: Vec<Document> = staged
                .find(doc! {"batch": &batch})
                .sort(doc! {"at": 1, "_id": 1})
                .await?
                .try_collect()
                .await?;
            let Some(first) = docs.first() else { continue };
            let time_of = |field: &str| {
                first
                    .get_datetime(field)
                    .map(|d| d.to_chrono())
                    .unwrap_or_else(|_| store.meta().clock().now().to_chrono())
            };
            let (event, delivery) = (time_of("at"), time_of("claimed"));
            let mut body = String::new();
            for d in &docs {
                body.push_str(d.get_str("line").unwrap_or_default());
                body.push('\n');
            }
            // Named after the batch and its claim, so a retried delivery of the same batch
            // writes the same key (and is refused as already there).
            let unique = batch[..16].to_ascii_uppercase();
            let key = record::object_key(&target, &source, region, delivery, event, &unique);
            // One target that cannot be written (a busy key, a target that turned to SSE-KMS)
            // holds back its own source's records only, never another bucket's.
            if let Err(e) =
                write_log_object(store, keys, &target.bucket, &key, &owner, body.as_bytes()).await
            {
                tracing::warn!(source, target = target.bucket, error = %e, "a log object was not written; its records wait for the next delivery");
                break;
            }
            written += 1;
            // A delivery that dies here has written its object and kept its records: the
            // next one must write nothing twice (a test stops here and drops the delivery).
            crate::failpoint::hit("access_log.written", &source).await;
            // Fenced: only the lead's holder deletes, and only the records it delivered.
            if !lead.check().await? {
                anyhow::bail!("the access-log lead was lost");
            }
            staged.delete_many(doc! {"batch": &batch}).await?;
        }
    }
    Ok(written)
}

async fn write_log_object(
    store: &ObjectStore,
    keys: &crate::crypto::Keys,
    bucket: &str,
    key: &str,
    owner: &str,
    body: &[u8],
) -> anyhow::Result<()> {
    // A target with default encryption gets its log objects encrypted: SSE-S3, as AWS
    // delivers them (PutBucketLogging refuses an SSE-KMS target; one that turned to SSE-KMS
    // since is not written to in the clear either, but left for the next delivery).
    let chunk = store.gridfs(bucket).chunk_size();
    let sealed = match store
        .meta()
        .bucket_cached(bucket)
        .await?
        .and_then(|b| b.encryption)
    {
        Some(e) if e.algorithm == crate::crypto::MODE_KMS => anyhow::bail!(
            "the log target {bucket} has SSE-KMS default encryption, which log delivery does not write"
        ),
        Some(e) => {
            let spec = crate::crypto::SseSpec::S3 {
                bucket_key: e.bucket_key,
            };
            let now = store.meta().clock().now();
            let (meta, key) = keys
                .new_data_key(&spec, None, chunk, now)
                .await
                .map_err(|e| anyhow::anyhow!("sealing a log object: {e:?}"))?;
            Some(crate::storage::objects::sealed::SealedWrite {
                meta,
                key: crate::storage::objects::DataKey(key),
                customer_md5: None,
            })
        }
        None => None,
    };
    let mut up = store
        .open_upload_sealed(bucket, key, false, sealed.as_ref().map(|s| s.codec()))
        .await?;
    up.write(body).await?;
    let digests = up.flush().await?;
    let meta = ObjectMeta {
        etag: Some(format!("\"{}\"", hex::encode(digests.md5))),
        content_type: Some("text/plain".to_owned()),
        owner: Some(owner.to_owned()),
        sse: sealed.map(|s| s.published(digests.length)),
        ..Default::default()
    };
    match store
        .publish_if(bucket, up, meta, &WriteCondition::IfAbsent)
        .await?
    {
        // Written now, or by an earlier try of this batch (the key is named after it).
        Ok(_) | Err(crate::storage::objects::Blocked::PreconditionFailed) => Ok(()),
        // A busy key is not a written one: the batch's records stay for the next delivery.
        Err(other) => anyhow::bail!(
            "the log object {key} was not written ({other:?}); the next delivery retries"
        ),
    }
}

/// The loop of staging and delivery (spawned once per instance).
pub async fn run(
    store: ObjectStore,
    keys: std::sync::Arc<crate::crypto::Keys>,
    recorder: std::sync::Arc<Recorder>,
    region: String,
    flush: Duration,
) {
    let stage_every = stage_every(flush);
    let deliver_every = (flush / 2).max(Duration::from_millis(200));
    let lead_for = (deliver_every * 4).max(Duration::from_secs(30));
    let mut last_delivery = std::time::Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(stage_every) => {}
            _ = recorder.filled() => {}
        }
        if let Err(e) = recorder.stage().await {
            tracing::warn!(error = %e, "staging access log records failed; they are kept");
        }
        if last_delivery.elapsed() < deliver_every {
            continue;
        }
        last_delivery = std::time::Instant::now();
        let t = std::time::Instant::now();
        let outcome = match store.meta().take_lead("access-log", lead_for).await {
            Ok(Some(lead)) => {
                let r = deliver(&store, &keys, &region, &lead).await;
                lead.release_or_warn().await;
                match r {
                    Ok(n) => {
                        if n > 0 {
                            tracing::debug!(objects = n, "delivered access logs");
                        }
                        "ok"
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "access log delivery failed; the next one retries");
                        "error"
                    }
                }
            }
            Ok(None) => "follower",
            Err(e) => {
                tracing::warn!(error = %e, "taking the access-log lead failed");
                "error"
            }
        };
        crate::metrics::background_run("access_log", outcome, t.elapsed().as_secs_f64());
    }
}
