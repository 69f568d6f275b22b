//! A bucket's declared search indexes (issue 63): which fields its owner chose to index for
//! metadata search, each with whether its database indexes are built. Kept in the bucket's
//! `__metastore` document as `searchIndexes: [{f: <field>, gen: <id>, ready: <bool>}]`.
//!
//! A declaration's `gen` names it: a build marks ready only the declaration it built, so a
//! field removed and declared again meanwhile is built again, never taken for ready. Every
//! write is compare-and-set on the list the writer read.

use mongodb::bson::{doc, oid::ObjectId, Bson, Document};

use super::MetaStore;

/// One declared field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeclaredIndex {
    /// The field, as a search names it (`size`, `x-amz-meta-customer`, `tags.project` …).
    pub field: String,
    /// This declaration.
    pub gen: ObjectId,
    /// Its database indexes are built: searches may use them.
    pub ready: bool,
}

impl DeclaredIndex {
    fn to_document(&self) -> Document {
        doc! {"f": &self.field, "gen": self.gen, "ready": self.ready}
    }

    /// The declarations stored in a bucket document.
    pub(super) fn all_in(d: &Document) -> Vec<DeclaredIndex> {
        d.get_array("searchIndexes")
            .map(|a| {
                a.iter()
                    .filter_map(Bson::as_document)
                    .filter_map(|x| {
                        Some(DeclaredIndex {
                            field: x.get_str("f").ok()?.to_owned(),
                            gen: x.get_object_id("gen").ok()?,
                            ready: x.get_bool("ready").unwrap_or(false),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The stored form of a list (`None`: no field, the attribute removed).
fn stored(list: &[DeclaredIndex]) -> Option<Bson> {
    (!list.is_empty()).then(|| {
        Bson::Array(
            list.iter()
                .map(|d| Bson::Document(d.to_document()))
                .collect(),
        )
    })
}

/// The condition that the stored list is still `list`.
fn still(list: &[DeclaredIndex]) -> Document {
    match stored(list) {
        Some(a) => doc! {"searchIndexes": a},
        None => doc! {"searchIndexes": {"$exists": false}},
    }
}

impl MetaStore {
    /// Replaces a bucket's declared fields with `fields`, if its list is still `read`: a field
    /// declared already keeps its declaration (and its built indexes); a new one is declared
    /// not ready. The new list, or `None` when the bucket is gone or its list changed.
    pub async fn declare_search_indexes(
        &self,
        bucket: &str,
        read: &[DeclaredIndex],
        fields: &[String],
    ) -> mongodb::error::Result<Option<Vec<DeclaredIndex>>> {
        let list: Vec<DeclaredIndex> = fields
            .iter()
            .map(|f| match read.iter().find(|d| &d.field == f) {
                Some(d) => d.clone(),
                None => DeclaredIndex {
                    field: f.clone(),
                    gen: ObjectId::new(),
                    ready: false,
                },
            })
            .collect();
        let update = match stored(&list) {
            Some(a) => doc! {"$set": {"searchIndexes": a}},
            None => doc! {"$unset": {"searchIndexes": ""}},
        };
        let done = self.update_live_if(bucket, still(read), update).await?;
        Ok(done.then_some(list))
    }

    /// Marks the declaration `gen` of `field` ready; `false` when it is no longer declared
    /// (removed, or declared again since).
    pub async fn mark_search_index_ready(
        &self,
        bucket: &str,
        field: &str,
        gen: ObjectId,
    ) -> mongodb::error::Result<bool> {
        self.update_live_if(
            bucket,
            doc! {"searchIndexes": {"$elemMatch": {"f": field, "gen": gen}}},
            doc! {"$set": {"searchIndexes.$.ready": true}},
        )
        .await
    }
}
