//! Fenced leads for background jobs (conversions, version index builds, lifecycle passes).
//!
//! A lead is one document of `__infostore` (`_id: "lead:<job>"`). Taking it writes a fresh
//! token (an ObjectId made for this run) and a `fence` number one higher than the last run's,
//! in one conditional update that succeeds only when no live run holds it (expiry compared in
//! the database's time, [`super::DbClock`]). Every later step of the run renews or checks the
//! lead by its token, so:
//! - two runs of one job never hold the lead at once, even in one process (the lead used to
//!   be per process: a conversion started by the admin API and the janitor's resume of it
//!   both "held" it and ran side by side);
//! - a run that stalled past its lead's expiry learns it at its next check ([`Lead::check`])
//!   and stops before its next destructive step, and the writes it made before that are
//!   compare-and-set on what it read, so the run that took over never loses data to it.

use mongodb::bson::{doc, oid::ObjectId, Document};
use mongodb::Collection;

use super::{is_duplicate_key, DbClock};

/// A run's hold on a background job's lead.
#[derive(Clone, Debug)]
pub struct Lead {
    info: Collection<Document>,
    clock: DbClock,
    id: String,
    token: ObjectId,
    fence: i64,
    ttl: std::time::Duration,
}

impl Lead {
    /// This run's fencing number: higher than every earlier run's of the same job.
    pub fn fence(&self) -> i64 {
        self.fence
    }

    /// Extends the lead by its ttl; `false` when this run no longer holds it (it expired and
    /// another run took it): the caller stops.
    pub async fn renew(&self) -> mongodb::error::Result<bool> {
        let r = self
            .info
            .update_one(
                doc! {"_id": &self.id, "token": self.token},
                doc! {"$set": {"expires": self.clock.after(self.ttl)}},
            )
            .await?;
        Ok(r.matched_count == 1)
    }

    /// Whether this run still holds the lead (renewing it): checked right before each
    /// destructive step.
    pub async fn check(&self) -> mongodb::error::Result<bool> {
        self.renew().await
    }

    /// Gives the lead up at the end of a run, whatever its outcome: a release that fails is
    /// logged, not returned, since the lead expires on its own. The one routine of "lead, run,
    /// give up, warn" for every job that takes a lead.
    pub async fn release_or_warn(&self) {
        if let Err(e) = self.release().await {
            tracing::warn!(error = %e, lead = %self.id, "could not give up a lead; it expires on its own");
        }
    }

    /// Gives the lead up, so that the next run need not wait for it to expire.
    pub async fn release(&self) -> mongodb::error::Result<()> {
        self.info
            .update_one(
                doc! {"_id": &self.id, "token": self.token},
                doc! {"$set": {"expires": self.clock.now()}, "$unset": {"token": ""}},
            )
            .await?;
        Ok(())
    }
}

impl super::MetaStore {
    /// Takes the lead of `job` for a run, for `ttl` (renew it with [`Lead::renew`]); `None`
    /// when another run holds it, in this process or another.
    pub async fn take_lead(
        &self,
        job: &str,
        ttl: std::time::Duration,
    ) -> mongodb::error::Result<Option<Lead>> {
        let id = format!("lead:{job}");
        let token = ObjectId::new();
        let now = self.clock.now();
        let r = self
            .info
            .find_one_and_update(
                doc! {"_id": &id, "$or": [{"token": {"$exists": false}}, {"expires": {"$lt": now}}]},
                doc! {
                    "$set": {"token": token, "holder": self.process_id.as_ref(), "expires": self.clock.after(ttl)},
                    "$inc": {"fence": 1_i64},
                },
            )
            .upsert(true)
            .return_document(mongodb::options::ReturnDocument::After)
            .await;
        match r {
            Ok(Some(d)) => Ok(Some(Lead {
                info: self.info.clone(),
                clock: self.clock.clone(),
                id,
                token,
                fence: d
                    .get("fence")
                    .and_then(crate::storage::gridfs::as_i64)
                    .unwrap_or(1),
                ttl,
            })),
            Ok(None) => Ok(None),
            // The document exists with another live holder: the upsert's insert collides.
            Err(e) if is_duplicate_key(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// A background job's lead as it stands, for the console's server status.
#[derive(Clone, Debug)]
pub struct LeadInfo {
    pub job: String,
    /// The process that took it last.
    pub holder: String,
    /// Until when that run holds it, unless it renews.
    pub expires: Option<mongodb::bson::DateTime>,
    /// How many runs have taken it.
    pub fence: i64,
}

impl super::MetaStore {
    /// Every job's lead (`lead:<job>` documents: a range of `_id`s, no regex).
    pub async fn leads(&self) -> mongodb::error::Result<Vec<LeadInfo>> {
        use futures::TryStreamExt;
        let docs: Vec<Document> = self
            .info
            .find(doc! {"_id": {"$gte": "lead:", "$lt": "lead;"}})
            .limit(1000)
            .await?
            .try_collect()
            .await?;
        Ok(docs
            .iter()
            .filter_map(|d| {
                Some(LeadInfo {
                    job: d.get_str("_id").ok()?.strip_prefix("lead:")?.to_owned(),
                    holder: d.get_str("holder").unwrap_or_default().to_owned(),
                    expires: d.get_datetime("expires").ok().copied(),
                    fence: d
                        .get("fence")
                        .and_then(crate::storage::gridfs::as_i64)
                        .unwrap_or(0),
                })
            })
            .collect())
    }
}
