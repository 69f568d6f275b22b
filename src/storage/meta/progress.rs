//! Where a background pass stopped, so that the next run (on any instance) resumes there
//! instead of starting over: one document of `__infostore` per job (`_id: "progress:<job>"`),
//! written under the run's fence, so that a run that lost its lead never moves the position
//! of the run that took over.

use mongodb::bson::{doc, Document};

use super::is_duplicate_key;

/// A pass's position: the bucket it was in, the step of that bucket's work, and the last key
/// (or entry) that step finished.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The bucket.
    pub bucket: String,
    /// The step within the bucket.
    pub step: i64,
    /// The last key (or index entry) the step finished, if it finished any.
    pub after: Option<String>,
    /// What the position is valid for (the job's own fingerprint of the bucket's settings).
    pub tag: Option<String>,
}

impl super::MetaStore {
    /// The position `job`'s last run stopped at (`None`: start from the beginning).
    pub async fn progress(&self, job: &str) -> mongodb::error::Result<Option<Progress>> {
        let d = self
            .info
            .find_one(doc! {"_id": format!("progress:{job}")})
            .await?;
        Ok(d.and_then(|d| {
            Some(Progress {
                bucket: d.get_str("bucket").ok()?.to_owned(),
                step: d.get_i64("step").unwrap_or(0),
                after: d.get_str("after").ok().map(str::to_owned),
                tag: d.get_str("tag").ok().map(str::to_owned),
            })
        }))
    }

    /// Records `job`'s position (`None`: the pass went round, start again from the
    /// beginning), if no run with a higher fence has written one; `false` when one has (this
    /// run lost its lead and stops).
    pub async fn set_progress(
        &self,
        job: &str,
        at: Option<&Progress>,
        fence: i64,
    ) -> mongodb::error::Result<bool> {
        let id = format!("progress:{job}");
        let mut set = doc! {"fence": fence};
        let mut unset = Document::new();
        match at {
            Some(p) => {
                set.insert("bucket", &p.bucket);
                set.insert("step", p.step);
                match &p.after {
                    Some(a) => set.insert("after", a),
                    None => unset.insert("after", ""),
                };
                match &p.tag {
                    Some(t) => set.insert("tag", t),
                    None => unset.insert("tag", ""),
                };
            }
            None => {
                for f in ["bucket", "step", "after", "tag"] {
                    unset.insert(f, "");
                }
            }
        }
        let mut update = doc! {"$set": set};
        if !unset.is_empty() {
            update.insert("$unset", unset);
        }
        let r = self
            .info
            .update_one(
                doc! {"_id": &id, "$or": [{"fence": {"$lte": fence}}, {"fence": {"$exists": false}}]},
                update,
            )
            .upsert(true)
            .await;
        match r {
            Ok(_) => Ok(true),
            // A newer run's document: the upsert's insert collides with it.
            Err(e) if is_duplicate_key(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }
}
