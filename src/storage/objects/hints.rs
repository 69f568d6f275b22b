//! The listing hints kept in the database (fence posts, see `storage::meta::posts`): recorded
//! by writes and listings, taken by an instance's first listing of a key space.

use super::*;
use crate::storage::ranges::posts::{is_post, Learned};

impl ObjectStore {
    /// A write published `key`: if it is a post, record it, in the background (a hint: a
    /// failure is logged, never the write's).
    pub(super) fn post_written(&self, bucket: &str, key: &str) {
        if !is_post(key) {
            return;
        }
        let (meta, bucket, key) = (self.meta.clone(), bucket.to_owned(), key.to_owned());
        crate::background::spawn("posts", async move {
            if let Err(e) = meta.record_posts(&bucket, &[key]).await {
                tracing::debug!(bucket, error = %e, "could not record a listing post");
            }
        });
    }

    /// Before a listing of `space` (a key space of object keys of `bucket`): the posts stored
    /// in the database, when this instance has not taken them lately.
    pub(super) async fn seed_posts(&self, bucket: &str, space: &str) {
        if !self.posts.claim_seed(space) {
            return;
        }
        match self.meta.posts_of(bucket).await {
            Ok(Some(keys)) => self.posts.seed(space, keys),
            // Too many to take: listings learn them as they pass (the claim stands, so the
            // next listing does not ask again before `SEED_AGE`).
            Ok(None) => {}
            Err(e) => tracing::debug!(bucket, error = %e, "could not read listing posts"),
        }
    }

    /// After a listing: what it taught the posts goes to their copy in the database, in the
    /// background.
    pub(super) fn keep_learned(&self, bucket: &str, learned: Learned) {
        if learned.new.is_empty() && learned.gone.is_empty() {
            return;
        }
        let (meta, bucket) = (self.meta.clone(), bucket.to_owned());
        crate::background::spawn("posts", async move {
            let res = async {
                meta.record_posts(&bucket, &learned.new).await?;
                meta.forget_posts(&bucket, &learned.gone).await
            }
            .await;
            if let Err(e) = res {
                tracing::debug!(bucket, error = %e, "could not keep listing posts");
            }
        });
    }

    /// Lists all of `bucket` once, so that its fence posts are in the database and here (each
    /// listing records what it learns), and then trusts every gap between them on this
    /// instance: the pass read every key in order, so each gap between two posts it kept is
    /// known (the pages' own runs end at each page, which would leave the gaps across page
    /// ends unknown). For a bucket whose keys another program wrote, which has no posts (see
    /// `AppState::adopt_existing_buckets`). Returns the keys listed.
    pub async fn build_posts(&self, bucket: &str) -> Result<usize> {
        let mut q = ListQuery {
            max: 1000,
            ..Default::default()
        };
        let mut keys = 0usize;
        loop {
            let page = self.list(bucket, &q).await?;
            keys += page.entries.len();
            match page.entries.last() {
                Some(last) if page.truncated => q.after = Some(last.name().to_owned()),
                _ => break,
            }
        }
        let (mode, indexed) = self.versioning(bucket).await?;
        let masters = mode != crate::storage::versions::Versioning::Off && indexed;
        let space = format!("{}:{bucket}", if masters { "masters" } else { "files" });
        self.posts.seed(&space, Vec::new());
        Ok(keys)
    }
}
