//! Signed admin requests seen once, in `__adminreplay`, shared by every instance: a captured
//! admin request (over plain HTTP, say) replays within the signature's 15-minute skew window
//! otherwise, and `POST /_grids3/admin/keys` would mint a key for the replayer.
//!
//! An entry lives until the window the request could be accepted in has passed (by the
//! database's clock): a TTL index removes it after that, and the janitor sweeps what a server
//! without TTL monitors leaves. Refusal never depends on the sweep: an entry is only ever
//! removed after its request would be refused as too old anyway.

use mongodb::bson::doc;
use mongodb::options::IndexOptions;
use mongodb::IndexModel;

use super::MetaStore;

/// How long a seen signature is kept: the 15-minute skew either side, and a minute more.
pub const REPLAY_WINDOW: std::time::Duration = std::time::Duration::from_secs(31 * 60);

impl MetaStore {
    /// Creates the TTL index (idempotent).
    pub(super) async fn replay_index(&self) -> mongodb::error::Result<()> {
        let model = IndexModel::builder()
            .keys(doc! {"expires": 1})
            .options(
                IndexOptions::builder()
                    .name("expires".to_owned())
                    .expire_after(std::time::Duration::ZERO)
                    .build(),
            )
            .build();
        self.replay.create_index(model).await.map(|_| ())
    }

    /// Records a request's signature; `false` when it was seen before (a replay).
    pub async fn first_use_of_signature(&self, signature: &str) -> mongodb::error::Result<bool> {
        match self
            .replay
            .insert_one(doc! {"_id": signature, "expires": self.clock.after(REPLAY_WINDOW)})
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if super::is_duplicate_key(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Removes the entries whose window has passed (the janitor, for servers without TTL
    /// monitors); returns how many.
    pub async fn sweep_seen_signatures(&self) -> mongodb::error::Result<u64> {
        Ok(self
            .replay
            .delete_many(doc! {"expires": {"$lt": self.clock.now()}})
            .await?
            .deleted_count)
    }
}
