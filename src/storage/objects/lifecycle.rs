//! Lifecycle scans: the objects a rule may expire, with every revision they have.

use super::*;

/// An object as the lifecycle sees it: its current revision's attributes and every revision
/// it has (the ids a rule that expires it reclaims).
#[derive(Clone, Debug)]
pub struct LifecycleCandidate {
    /// Key.
    pub key: String,
    /// When the current revision was written.
    pub written: DateTime,
    /// Its size.
    pub size: u64,
    /// Its tags.
    pub tags: Vec<(String, String)>,
    /// Every revision's file id, the current one first.
    pub revisions: Vec<Bson>,
}

impl ObjectStore {
    /// The objects under `prefix`, with their revisions, from `after` on (exclusive), at most
    /// `limit` keys: one index-ordered scan of `{filename, uploadDate}`.
    pub async fn lifecycle_candidates(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<LifecycleCandidate>> {
        let mut filter = doc! {"$gte": prefix};
        if let Some(a) = after.filter(|a| *a >= prefix) {
            filter = doc! {"$gt": a};
        }
        let mut cursor = self
            .gridfs(bucket)
            .files()
            .find(doc! {"filename": filter})
            .sort(doc! {"filename": 1, "uploadDate": -1, "_id": -1})
            .projection(doc! {"filename": 1, "uploadDate": 1, "length": 1, "metadata.tags": 1, "metadata.s3Sse": 1})
            .batch_size(1000)
            .await?;
        let mut out: Vec<LifecycleCandidate> = Vec::new();
        while let Some(d) = cursor.try_next().await? {
            let Ok(key) = d.get_str("filename") else {
                continue;
            };
            if !key.starts_with(prefix) {
                break;
            }
            let id = d.get("_id").cloned().unwrap_or(Bson::Null);
            if let Some(last) = out.last_mut().filter(|c| c.key == key) {
                last.revisions.push(id);
                continue;
            }
            if out.len() == limit {
                break;
            }
            let meta = ObjectMeta::from_metadata(d.get_document("metadata").ok());
            out.push(LifecycleCandidate {
                key: key.to_owned(),
                written: d
                    .get_datetime("uploadDate")
                    .copied()
                    .unwrap_or(DateTime::from_millis(0)),
                // An encrypted object's size is its plain text's.
                size: match (&meta.sse, d.get("length")) {
                    (Some(sse), _) => sse.size,
                    (None, Some(Bson::Int64(n))) => (*n).max(0) as u64,
                    (None, Some(Bson::Int32(n))) => (*n).max(0) as u64,
                    (None, Some(Bson::Double(n))) => n.max(0.0) as u64,
                    _ => 0,
                },
                tags: meta.tags.clone(),
                revisions: vec![id],
            });
        }
        Ok(out)
    }
}
