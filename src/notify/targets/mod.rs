//! Where events go: targets, each with an id and a type, named by the ARN
//! `arn:grids3:sqs::<id>:<type>` (`arn:minio:sqs::<id>:<type>` is taken as the same target, so
//! that configurations written for MinIO keep working).
//!
//! Targets come from two places: the environment of each instance
//! (`GRIDS3_NOTIFY_WEBHOOK_<ID>=<url>`, `GRIDS3_NOTIFY_NATS_<ID>=nats://host:port`, see
//! [`from_env`]) and the database (`__notify_targets`, written by the admin API and
//! `grids3 admin notify`), which every instance shares. Ids are case-insensitive (kept
//! lower-case), since environment variables are usually upper-case.
//!
//! A type is a small trait ([`Sender`]): webhook and NATS today; Kafka, AMQP and Redis can
//! follow as one file each.

pub mod nats;
pub mod webhook;

use std::time::Duration;

use futures::future::BoxFuture;
use mongodb::bson::{doc, Document};
use serde::{Deserialize, Serialize};

/// How one target is reached.
#[derive(Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Endpoint {
    /// An HTTP(S) POST of the event JSON.
    Webhook {
        /// The URL events are POSTed to.
        url: String,
        /// Sent as `Authorization: Bearer <token>` when set.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        auth_token: Option<String>,
    },
    /// A NATS publish (JetStream with publish acknowledgements when `jetstream`).
    Nats {
        /// `nats://host:port` (or `tls://`).
        url: String,
        /// The subject events are published on.
        subject: String,
        /// Publish through JetStream, waiting for the stream's acknowledgement.
        #[serde(default)]
        jetstream: bool,
    },
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bearer token is a secret: never printed.
        match self {
            Endpoint::Webhook { url, auth_token } => f
                .debug_struct("Webhook")
                .field("url", url)
                .field("auth_token", &auth_token.as_ref().map(|_| "<set>"))
                .finish(),
            Endpoint::Nats {
                url,
                subject,
                jetstream,
            } => f
                .debug_struct("Nats")
                .field("url", url)
                .field("subject", subject)
                .field("jetstream", jetstream)
                .finish(),
        }
    }
}

impl Endpoint {
    /// The type's name, as it appears in the ARN.
    pub fn type_name(&self) -> &'static str {
        match self {
            Endpoint::Webhook { .. } => "webhook",
            Endpoint::Nats { .. } => "nats",
        }
    }

    /// Checks what can be checked without reaching the target.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Endpoint::Webhook { url, .. } => {
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(format!(
                        "a webhook URL must start with http:// or https://: {url}"
                    ));
                }
            }
            Endpoint::Nats { url, subject, .. } => {
                if !(url.starts_with("nats://") || url.starts_with("tls://")) {
                    return Err(format!(
                        "a NATS URL must start with nats:// or tls://: {url}"
                    ));
                }
                if subject.is_empty() || subject.contains(char::is_whitespace) {
                    return Err(format!("not a NATS subject: {subject:?}"));
                }
            }
        }
        Ok(())
    }
}

/// A target: its id and how it is reached.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TargetSpec {
    /// The id (lower-case).
    pub id: String,
    /// How it is reached.
    #[serde(flatten)]
    pub endpoint: Endpoint,
}

impl TargetSpec {
    /// The target's key in queues and metrics: `<id>:<type>`.
    pub fn name(&self) -> String {
        format!("{}:{}", self.id, self.endpoint.type_name())
    }

    /// Its ARN.
    pub fn arn(&self) -> String {
        format!("arn:grids3:sqs::{}", self.name())
    }
}

/// The target name (`<id>:<type>`) an ARN names, if it is one of grids3's (or MinIO's) forms.
pub fn name_of_arn(arn: &str) -> Option<String> {
    let rest = arn
        .strip_prefix("arn:grids3:sqs:")
        .or_else(|| arn.strip_prefix("arn:minio:sqs:"))?;
    // A region may be named (`mc` names the server's): targets belong to the deployment, not
    // to a region, so any well-formed one names the same target.
    let (region, rest) = rest.split_once(':')?;
    if !region
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
    {
        return None;
    }
    let (id, kind) = rest.rsplit_once(':')?;
    let (id, kind) = (id.trim(), kind.trim());
    // Only names a target could have: an ARN goes into every event of its rule and names a
    // queue of its own in the outbox, so nothing longer or stranger is taken.
    if !valid_id(id) || !["webhook", "nats"].contains(&kind.to_ascii_lowercase().as_str()) {
        return None;
    }
    Some(format!(
        "{}:{}",
        id.to_ascii_lowercase(),
        kind.to_ascii_lowercase()
    ))
}

/// Whether an id is acceptable: letters, digits, `-` and `_`, at most 64.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The targets configured in the environment:
/// - `GRIDS3_NOTIFY_WEBHOOK_<ID>=<url>`, with `GRIDS3_NOTIFY_WEBHOOK_<ID>_AUTH_TOKEN`;
/// - `GRIDS3_NOTIFY_NATS_<ID>=nats://host:port`, with `GRIDS3_NOTIFY_NATS_<ID>_SUBJECT`
///   (default `grids3.events`) and `GRIDS3_NOTIFY_NATS_<ID>_JETSTREAM=on`.
///
/// The suffixes `_AUTH_TOKEN`, `_SUBJECT` and `_JETSTREAM` are therefore not part of an id.
pub fn from_env(vars: impl Iterator<Item = (String, String)>) -> Result<Vec<TargetSpec>, String> {
    let vars: std::collections::BTreeMap<String, String> = vars.collect();
    let mut out = Vec::new();
    for (k, v) in &vars {
        if let Some(id) = k.strip_prefix("GRIDS3_NOTIFY_WEBHOOK_") {
            if id.ends_with("_AUTH_TOKEN") {
                continue;
            }
            let token = vars.get(&format!("{k}_AUTH_TOKEN")).cloned();
            out.push((
                id,
                Endpoint::Webhook {
                    url: v.clone(),
                    auth_token: token.filter(|t| !t.is_empty()),
                },
            ));
        } else if let Some(id) = k.strip_prefix("GRIDS3_NOTIFY_NATS_") {
            if id.ends_with("_SUBJECT") || id.ends_with("_JETSTREAM") {
                continue;
            }
            let subject = vars
                .get(&format!("{k}_SUBJECT"))
                .cloned()
                .unwrap_or_else(|| "grids3.events".into());
            let jetstream = vars.get(&format!("{k}_JETSTREAM")).is_some_and(|j| {
                matches!(j.to_ascii_lowercase().as_str(), "on" | "1" | "true" | "yes")
            });
            out.push((
                id,
                Endpoint::Nats {
                    url: v.clone(),
                    subject,
                    jetstream,
                },
            ));
        }
    }
    out.into_iter()
        .map(|(id, endpoint)| {
            if !valid_id(id) {
                return Err(format!(
                    "not a target id: {id:?} (letters, digits, - and _)"
                ));
            }
            endpoint.validate()?;
            Ok(TargetSpec {
                id: id.to_ascii_lowercase(),
                endpoint,
            })
        })
        .collect()
}

/// Why a delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The target could not be reached or did not answer in time.
    #[error("unreachable: {0}")]
    Unreachable(String),
    /// The target answered, but did not take the event this time (a 5xx, a 408 or 429, a
    /// JetStream refusal): worth trying again.
    #[error("refused: {0}")]
    Refused(String),
    /// The target answered that it will never take this event (an HTTP 4xx other than 408 and
    /// 429, a payload over the NATS server's limit): after [`REJECTED_TRIES`] tries the event
    /// goes to the dead letters, so that it holds up neither its key nor its target.
    #[error("rejected: {0}")]
    Rejected(String),
}

/// How often an event is tried before a rejection (see [`SendError::Rejected`]) buries it: a
/// receiver being redeployed may answer 404 for a moment.
pub const REJECTED_TRIES: u32 = 3;

/// One target type's way of delivering an event.
pub trait Sender: Send + Sync {
    /// Delivers one event body (its stable id given for deduplication where the target has
    /// it); `Ok` only once the target has taken it (a 2xx, a flushed publish, a JetStream
    /// acknowledgement).
    fn send<'a>(&'a self, id: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<(), SendError>>;
}

/// How long one delivery may take before it counts as failed.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// A sender for a target.
pub fn sender(spec: &TargetSpec) -> Box<dyn Sender> {
    match &spec.endpoint {
        Endpoint::Webhook { url, auth_token } => {
            Box::new(webhook::Webhook::new(url.clone(), auth_token.clone()))
        }
        Endpoint::Nats {
            url,
            subject,
            jetstream,
        } => Box::new(nats::Nats::new(url.clone(), subject.clone(), *jetstream)),
    }
}

/// The targets the database holds (`__notify_targets`), shared by every instance.
pub struct Stored {
    coll: mongodb::Collection<Document>,
    /// Their names as last read, and when (see [`Stored::names`]), with how many times this
    /// instance changed the targets (a reading begun before a change is not kept).
    names: std::sync::Mutex<(u64, Option<(std::time::Instant, NameSet)>)>,
}

/// A set of target names (`<id>:<type>`).
pub type NameSet = std::sync::Arc<std::collections::HashSet<String>>;

/// How long the write path trusts its reading of the stored targets' names.
const NAMES_FOR: Duration = Duration::from_secs(1);

impl Stored {
    /// The stored targets of `db`.
    pub fn new(db: &mongodb::Database) -> Self {
        Self {
            coll: db.collection("__notify_targets"),
            names: std::sync::Mutex::default(),
        }
    }

    /// The stored targets' names, for the write path (which makes events only for targets
    /// that exist): read at most once a second, and again after this instance added or
    /// removed one. Another instance's change is seen within a second.
    pub async fn names(&self) -> mongodb::error::Result<NameSet> {
        let changes = {
            let n = self.names.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((at, names)) = &n.1 {
                if at.elapsed() < NAMES_FOR {
                    return Ok(names.clone());
                }
            }
            n.0
        };
        let read = std::time::Instant::now();
        let names: NameSet =
            std::sync::Arc::new(self.list().await?.iter().map(TargetSpec::name).collect());
        let mut n = self.names.lock().unwrap_or_else(|e| e.into_inner());
        if n.0 == changes {
            n.1 = Some((read, names.clone()));
        }
        Ok(names)
    }

    /// Forgets the names read (this instance changed the targets).
    fn forget_names(&self) {
        let mut n = self.names.lock().unwrap_or_else(|e| e.into_inner());
        n.0 += 1;
        n.1 = None;
    }

    /// Every stored target.
    pub async fn list(&self) -> mongodb::error::Result<Vec<TargetSpec>> {
        use futures::TryStreamExt;
        let docs: Vec<Document> = self.coll.find(doc! {}).await?.try_collect().await?;
        Ok(docs
            .into_iter()
            .filter_map(|d| mongodb::bson::from_document(d).ok())
            .collect())
    }

    /// Adds or replaces a target.
    pub async fn put(&self, spec: &TargetSpec) -> mongodb::error::Result<()> {
        let mut d = mongodb::bson::to_document(spec).map_err(|e| {
            mongodb::error::Error::custom(format!("a target that does not serialize: {e}"))
        })?;
        d.insert("_id", spec.name());
        let r = self
            .coll
            .replace_one(doc! {"_id": spec.name()}, d)
            .upsert(true)
            .await;
        self.forget_names();
        r?;
        Ok(())
    }

    /// Removes a target by name (`<id>:<type>`); whether it existed.
    pub async fn remove(&self, name: &str) -> mongodb::error::Result<bool> {
        let r = self.coll.delete_one(doc! {"_id": name}).await;
        self.forget_names();
        Ok(r?.deleted_count == 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_targets_and_arns() {
        let vars = [
            ("GRIDS3_NOTIFY_WEBHOOK_THUMBS", "http://127.0.0.1:1/h"),
            ("GRIDS3_NOTIFY_WEBHOOK_THUMBS_AUTH_TOKEN", "s3cr3t"),
            ("GRIDS3_NOTIFY_NATS_BUS", "nats://127.0.0.1:4222"),
            ("GRIDS3_NOTIFY_NATS_BUS_SUBJECT", "s3.ev"),
            ("GRIDS3_NOTIFY_NATS_BUS_JETSTREAM", "on"),
            ("PATH", "/bin"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()));
        let t = from_env(vars.into_iter()).unwrap();
        assert_eq!(t.len(), 2);
        let web = t.iter().find(|t| t.id == "thumbs").unwrap();
        assert_eq!(web.arn(), "arn:grids3:sqs::thumbs:webhook");
        assert!(!format!("{web:?}").contains("s3cr3t"));
        let bus = t.iter().find(|t| t.id == "bus").unwrap();
        assert_eq!(
            bus.endpoint,
            Endpoint::Nats {
                url: "nats://127.0.0.1:4222".into(),
                subject: "s3.ev".into(),
                jetstream: true
            }
        );
        assert_eq!(
            name_of_arn("arn:grids3:sqs::Thumbs:webhook").as_deref(),
            Some("thumbs:webhook")
        );
        assert_eq!(
            name_of_arn("arn:minio:sqs::thumbs:webhook").as_deref(),
            Some("thumbs:webhook")
        );
        assert_eq!(
            name_of_arn("arn:minio:sqs:us-east-1:thumbs:webhook").as_deref(),
            Some("thumbs:webhook")
        );
        assert_eq!(name_of_arn("arn:minio:sqs:us east:thumbs:webhook"), None);
        assert_eq!(name_of_arn("arn:grids3:sqs::thumbs:kafka"), None);
        let long = format!("arn:grids3:sqs::{}:webhook", "x".repeat(65));
        assert_eq!(name_of_arn(&long), None);
        assert_eq!(name_of_arn("arn:aws:sqs:us-east-1:123:q"), None);
        let bad =
            [("GRIDS3_NOTIFY_WEBHOOK_X", "ftp://h")].map(|(a, b)| (a.to_owned(), b.to_owned()));
        assert!(from_env(bad.into_iter()).is_err());
    }
}
