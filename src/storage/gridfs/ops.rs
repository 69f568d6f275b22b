//! Delete, find, rename and drop.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::FindOptions;

use super::{FileDoc, GridFsBucket, GridFsError, Result};

impl GridFsBucket {
    /// Deletes a file: the files document first (so readers stop finding it), then its chunks.
    /// Chunks of a files document that is already gone are removed too, and the call still
    /// reports [`GridFsError::FileNotFound`].
    pub async fn delete(&self, id: &Bson) -> Result<()> {
        let removed = self
            .files()
            .delete_one(doc! {"_id": id.clone()})
            .await?
            .deleted_count;
        self.chunks()
            .delete_many(doc! {"files_id": id.clone()})
            .await?;
        if removed == 0 {
            return Err(GridFsError::FileNotFound);
        }
        Ok(())
    }

    /// Deletes every revision of `filename` and their chunks.
    pub async fn delete_by_name(&self, filename: &str) -> Result<()> {
        let ids = ids_of(self.files(), doc! {"filename": filename}).await?;
        if ids.is_empty() {
            return Err(GridFsError::FileNotFound);
        }
        self.files()
            .delete_many(doc! {"_id": {"$in": ids.clone()}})
            .await?;
        self.chunks()
            .delete_many(doc! {"files_id": {"$in": ids}})
            .await?;
        Ok(())
    }

    /// Files documents matching `filter`, with sort, skip, limit and batch size from `options`.
    pub async fn find(&self, filter: Document, options: FindOptions) -> Result<Vec<FileDoc>> {
        let docs: Vec<Document> = self
            .files()
            .find(filter)
            .with_options(options)
            .await?
            .try_collect()
            .await?;
        docs.iter().map(FileDoc::from_document).collect()
    }

    /// Renames one file.
    pub async fn rename(&self, id: &Bson, new_filename: &str) -> Result<()> {
        let r = self
            .files()
            .update_one(
                doc! {"_id": id.clone()},
                doc! {"$set": {"filename": new_filename}},
            )
            .await?;
        if r.matched_count == 0 {
            return Err(GridFsError::FileNotFound);
        }
        Ok(())
    }

    /// Renames every revision of `filename`.
    pub async fn rename_by_name(&self, filename: &str, new_filename: &str) -> Result<()> {
        let r = self
            .files()
            .update_many(
                doc! {"filename": filename},
                doc! {"$set": {"filename": new_filename}},
            )
            .await?;
        if r.matched_count == 0 {
            return Err(GridFsError::FileNotFound);
        }
        Ok(())
    }

    /// Writes a files document for chunks that are already stored (publishing them).
    pub async fn insert_file(&self, file: &FileDoc) -> Result<()> {
        self.files().insert_one(file.to_document()).await?;
        Ok(())
    }

    /// Drops the files collection, then the chunks collection.
    pub async fn drop(&self) -> Result<()> {
        self.files().drop().await?;
        self.chunks().drop().await?;
        Ok(())
    }
}

/// The `_id`s of the documents of `coll` that match `filter` (what a compare-and-set delete
/// removes later: those documents, never others that match the filter by then).
pub async fn ids_of(
    coll: &mongodb::Collection<Document>,
    filter: Document,
) -> mongodb::error::Result<Vec<Bson>> {
    Ok(coll
        .find(filter)
        .projection(doc! {"_id": 1})
        .batch_size(10_000)
        .await?
        .try_collect::<Vec<Document>>()
        .await?
        .into_iter()
        .filter_map(|mut d| d.remove("_id"))
        .collect())
}
