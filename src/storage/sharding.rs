//! Sharding a bucket's collections on a sharded cluster (`--shard-buckets`).
//!
//! The keys are ones every grids3 query and write carries, and no grids3 write changes:
//! - `<bucket>.chunks` on `{files_id: 1}`: every chunk query names its `files_id`; the GridFS
//!   unique index `{files_id: 1, n: 1}` has the key as its prefix, as sharded unique indexes
//!   must; multipart completion renumbers `n` in place but never changes `files_id` (parts are
//!   staged under the object's final id). `{files_id: 1, n: 1}`, the other key MongoDB
//!   documents for GridFS, is *not* supported: completion's `$inc` of `n` would change a shard
//!   key value in a multi-document update, which mongos refuses.
//! - `<bucket>.files` on `{filename: 1}`: reads, listings (ranges of `filename`) and inserts
//!   carry it; updates and deletes of one document go by `_id`, which sharded clusters accept.
//! - `<bucket>.versions` (the version index of a versioned bucket) on `{_id: 1}`: every write
//!   and every point read goes by `_id`; the `sk` and `filename` range scans of listings are
//!   merged across shards by mongos.
//!
//! The metastore collections (`__metastore`, `__uploads`, `__parts`, locks, leases, write
//! registrations) are small and stay unsharded on the database's primary shard.

use mongodb::bson::doc;
use mongodb::Database;

/// Shards a new bucket's collections (all empty: the shard key indexes are created by
/// `shardCollection` itself if the GridFS ones do not serve).
pub async fn shard_bucket(db: &Database, bucket: &str) -> mongodb::error::Result<()> {
    let admin = db.client().database("admin");
    for (coll, key) in [
        ("chunks", doc! {"files_id": 1}),
        ("files", doc! {"filename": 1}),
        ("versions", doc! {"_id": 1}),
    ] {
        admin
            .run_command(doc! {
                "shardCollection": format!("{}.{bucket}.{coll}", db.name()),
                "key": key,
            })
            .await?;
    }
    Ok(())
}
