//! Fence posts kept in `__posts` (`{b: bucket, k: key}`), so that an instance that never
//! listed a bucket bounds its first listing's ranges as well as one that did (see
//! `storage::ranges::posts`).
//!
//! A post is a key that the hash in `ranges::posts::is_post` picks, about one in 128. A
//! write of such a key records it, and a listing records the posts it sees and forgets the
//! ones its ranges read whole did not hold. Posts are hints: a missing or stale one costs a
//! listing a query, never a key; so these writes run in the background, after the request's
//! answer, and a failed one is only logged.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::IndexOptions;
use mongodb::{Collection, IndexModel};

use super::MetaStore;
use crate::storage::gridfs::batch;
use crate::storage::ranges::posts::MAX_SEED_BYTES;

/// Posts of one bucket taken at most (about 8 million keys' worth). A bucket with more is
/// bounded by what its listings learn on each instance instead.
pub const MAX_SEED: i64 = 65_536;

impl MetaStore {
    fn posts(&self) -> Collection<Document> {
        self.db.collection("__posts")
    }

    /// The index every post lookup uses (one entry per bucket and key).
    pub(super) async fn posts_index(&self) -> mongodb::error::Result<()> {
        self.posts()
            .create_index(
                IndexModel::builder()
                    .keys(doc! {"b": 1, "k": 1})
                    .options(
                        IndexOptions::builder()
                            .name("key".to_owned())
                            .unique(true)
                            .build(),
                    )
                    .build(),
            )
            .await?;
        Ok(())
    }

    /// Records posts of `bucket` (one command; ones already recorded are left as they are).
    pub async fn record_posts(&self, bucket: &str, keys: &[String]) -> mongodb::error::Result<()> {
        if keys.is_empty() {
            return Ok(());
        }
        let docs: Vec<Document> = keys.iter().map(|k| doc! {"b": bucket, "k": k}).collect();
        match self.posts().insert_many(docs).ordered(false).await {
            Ok(_) => Ok(()),
            Err(e) if only_duplicates(&e) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Forgets posts of `bucket` whose keys a listing found gone (one command).
    pub async fn forget_posts(&self, bucket: &str, keys: &[String]) -> mongodb::error::Result<()> {
        let keys: Vec<Bson> = keys.iter().map(|k| Bson::String(k.clone())).collect();
        batch::delete_in(&self.posts(), "k", &keys, &doc! {"b": bucket}).await?;
        Ok(())
    }

    /// The posts of `bucket`, or `None` when they are more than [`MAX_SEED`] or take more
    /// than `ranges::posts::MAX_SEED_BYTES` (read as a stream, and left there).
    pub async fn posts_of(&self, bucket: &str) -> mongodb::error::Result<Option<Vec<String>>> {
        let mut cursor = self
            .posts()
            .find(doc! {"b": bucket})
            .projection(doc! {"_id": 0, "k": 1})
            .batch_size(4096)
            .await?;
        let (mut keys, mut bytes) = (Vec::new(), 0usize);
        while let Some(d) = cursor.try_next().await? {
            if let Ok(k) = d.get_str("k") {
                bytes += k.len() + 48;
                keys.push(k.to_owned());
            }
            if keys.len() as i64 > MAX_SEED || bytes > MAX_SEED_BYTES {
                return Ok(None);
            }
        }
        Ok(Some(keys))
    }

    /// Forgets every post of a bucket (it was deleted).
    pub async fn drop_posts(&self, bucket: &str) -> mongodb::error::Result<()> {
        self.posts().delete_many(doc! {"b": bucket}).await?;
        Ok(())
    }
}

/// Whether an unordered insert failed only on keys already there.
fn only_duplicates(e: &mongodb::error::Error) -> bool {
    match &*e.kind {
        mongodb::error::ErrorKind::InsertMany(im) => {
            im.write_concern_error.is_none()
                && im
                    .write_errors
                    .as_ref()
                    .is_some_and(|es| es.iter().all(|we| we.code == 11000))
        }
        _ => super::is_duplicate_key(e),
    }
}
