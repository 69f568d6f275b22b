//! What each gateway instance reports of itself (`__instances`), for the console's server
//! status: one document per instance, written by that instance only (so no two writers
//! race on it), with when it started, when it last reported (the database's time), and a
//! sample a minute of its request counters over the last hour.

use futures::TryStreamExt;
use mongodb::bson::{doc, DateTime, Document};

use super::MetaStore;

/// Samples kept per instance: an hour of minutes.
pub const SAMPLES: i32 = 60;

/// One minute of an instance's requests (differences of its running totals).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// When the minute ended (the database's time).
    pub at: DateTime,
    pub requests: i64,
    pub errors: i64,
    pub refused: i64,
    pub bytes_in: i64,
    pub bytes_out: i64,
    pub micros: i64,
}

/// An instance, as the console shows it.
#[derive(Clone, Debug)]
pub struct Instance {
    pub id: String,
    pub version: String,
    pub listen: String,
    pub started: DateTime,
    pub seen: DateTime,
    pub samples: Vec<Sample>,
}

impl Sample {
    fn to_document(&self) -> Document {
        doc! {
            "at": self.at, "requests": self.requests, "errors": self.errors,
            "refused": self.refused, "in": self.bytes_in, "out": self.bytes_out,
            "micros": self.micros,
        }
    }

    fn from_document(d: &Document) -> Option<Sample> {
        let n = |k: &str| d.get_i64(k).unwrap_or(0);
        Some(Sample {
            at: *d.get_datetime("at").ok()?,
            requests: n("requests"),
            errors: n("errors"),
            refused: n("refused"),
            bytes_in: n("in"),
            bytes_out: n("out"),
            micros: n("micros"),
        })
    }
}

impl MetaStore {
    fn instances(&self) -> mongodb::Collection<Document> {
        self.db.collection("__instances")
    }

    /// Records this instance's report: that it is alive, and (when given) a minute's sample,
    /// keeping the last [`SAMPLES`]. Instances silent for a day are removed.
    pub async fn instance_report(
        &self,
        id: &str,
        version: &str,
        listen: &str,
        started: DateTime,
        sample: Option<&Sample>,
    ) -> mongodb::error::Result<()> {
        let now = self.clock.now();
        let mut update = doc! {
            "$set": {"version": version, "listen": listen, "started": started, "seen": now},
        };
        if let Some(s) = sample {
            update.insert(
                "$push",
                doc! {"samples": {"$each": [s.to_document()], "$slice": -SAMPLES}},
            );
        }
        self.instances()
            .update_one(doc! {"_id": id}, update)
            .upsert(true)
            .await?;
        let day = self.clock.before(std::time::Duration::from_secs(86_400));
        self.instances()
            .delete_many(doc! {"seen": {"$lt": day}})
            .await?;
        Ok(())
    }

    /// Every instance that reported within the last day, newest report first.
    pub async fn instances_seen(&self) -> mongodb::error::Result<Vec<Instance>> {
        let docs: Vec<Document> = self
            .instances()
            .find(doc! {})
            .sort(doc! {"seen": -1})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                Some(Instance {
                    id: d.get_str("_id").ok()?.to_owned(),
                    version: d.get_str("version").unwrap_or_default().to_owned(),
                    listen: d.get_str("listen").unwrap_or_default().to_owned(),
                    started: *d.get_datetime("started").ok()?,
                    seen: *d.get_datetime("seen").ok()?,
                    samples: d
                        .get_array("samples")
                        .map(|a| {
                            a.iter()
                                .filter_map(|s| s.as_document().and_then(Sample::from_document))
                                .collect()
                        })
                        .unwrap_or_default(),
                })
            })
            .collect())
    }
}
