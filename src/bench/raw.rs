//! The raw-driver baseline: the same shape of work as each S3 operation, done with the
//! mongodb driver on the gateway's own database, so that every figure prints as a ratio to
//! what the database gives a client that does nothing else.
//!
//! - PUT: `insert_one` of a document holding the body (what one small object costs at least:
//!   one write).
//! - GET: `find_one` by `_id`; HEAD the same without the body.
//! - LIST: one sorted page of 1,000 names, bounded on both sides (the database's floor for a
//!   page).
//! - DELETE: `delete_one` by `_id`; DeleteObjects: `delete_many` of 1,000 `_id`s.

use std::sync::Arc;

use anyhow::Result;
use mongodb::bson::{doc, spec::BinarySubtype, Binary, Document};
use mongodb::Collection;

/// The baseline's collection and its population (names in order).
pub struct Raw {
    pub coll: Collection<Document>,
    body: Arc<Vec<u8>>,
}

impl Raw {
    /// A fresh collection `grids3bench_raw_<run>` in `db`, indexed on `name` (one per run, so
    /// that two runs never share it).
    pub async fn open(db: &mongodb::Database, run: &str, size: usize) -> Result<Self> {
        let coll = db.collection::<Document>(&format!("grids3bench_raw_{run}"));
        coll.drop().await?;
        coll.create_index(
            mongodb::IndexModel::builder()
                .keys(doc! {"name": 1})
                .build(),
        )
        .await?;
        Ok(Raw {
            coll,
            body: Arc::new(vec![0x5a; size]),
        })
    }

    fn doc(&self, name: &str) -> Document {
        doc! {"_id": name, "name": name, "data": Binary {
            subtype: BinarySubtype::Generic,
            bytes: self.body.to_vec(),
        }}
    }

    /// PUT's shape: bytes sent.
    pub async fn put(&self, name: &str) -> Result<u64> {
        self.coll.insert_one(self.doc(name)).await?;
        Ok(self.body.len() as u64)
    }

    /// Writes `names` in batches (preparation, not timed).
    pub async fn fill(&self, names: &[String]) -> Result<()> {
        for batch in names.chunks(500) {
            let docs: Vec<Document> = batch.iter().map(|n| self.doc(n)).collect();
            self.coll.insert_many(docs).await?;
        }
        Ok(())
    }

    /// GET's shape: bytes received.
    pub async fn get(&self, name: &str) -> Result<u64> {
        let d = self.coll.find_one(doc! {"_id": name}).await?;
        Ok(
            d.and_then(|d| d.get_binary_generic("data").ok().map(|b| b.len() as u64))
                .unwrap_or(0),
        )
    }

    /// HEAD's shape.
    pub async fn head(&self, name: &str) -> Result<u64> {
        self.coll
            .find_one(doc! {"_id": name})
            .projection(doc! {"data": 0})
            .await?;
        Ok(0)
    }

    /// LIST's shape: names from `first` to `last` (a page), keys read.
    pub async fn page(&self, first: &str, last: &str) -> Result<u64> {
        use futures::TryStreamExt;
        let n = self
            .coll
            .find(doc! {"name": {"$gte": first, "$lte": last}})
            .projection(doc! {"data": 0})
            .sort(doc! {"name": 1})
            .limit(1000)
            .await?
            .try_collect::<Vec<Document>>()
            .await?
            .len();
        Ok(n as u64)
    }

    /// DELETE's shape.
    pub async fn delete(&self, name: &str) -> Result<()> {
        self.coll.delete_one(doc! {"_id": name}).await?;
        Ok(())
    }

    /// DeleteObjects' shape: keys deleted, in one `delete` command of `$in` slices (as the
    /// gateway deletes; one `$in` of 1,000 costs about n² on some servers).
    pub async fn delete_many(&self, names: &[String]) -> Result<u64> {
        let names: Vec<mongodb::bson::Bson> = names.iter().map(|n| n.as_str().into()).collect();
        let n =
            crate::storage::gridfs::batch::delete_in(&self.coll, "_id", &names, &doc! {}).await?;
        Ok(n)
    }

    /// Drops the collection.
    pub async fn drop(&self) -> Result<()> {
        self.coll.drop().await?;
        Ok(())
    }
}
