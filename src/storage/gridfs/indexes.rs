//! Index creation before a bucket's first write, as the specification prescribes.

use futures::TryStreamExt;
use mongodb::bson::{doc, Bson, Document};
use mongodb::options::{FindOneOptions, ReadPreference, SelectionCriteria};
use mongodb::{Collection, IndexModel};

use super::file::as_i64;
use super::{GridFsBucket, Result};

impl GridFsBucket {
    /// Makes sure the spec's indexes exist, once per bucket instance. A failure is returned and
    /// the check is tried again on the next write.
    pub async fn ensure_indexes(&self) -> Result<()> {
        self.inner
            .indexes_checked
            .get_or_try_init(|| self.check_and_create_indexes())
            .await?;
        Ok(())
    }

    async fn check_and_create_indexes(&self) -> Result<()> {
        // The spec: only when the files collection is empty (a primary read, so a lagging
        // secondary cannot make us skip the check), create the indexes that are missing.
        let primary = SelectionCriteria::ReadPreference(ReadPreference::Primary);
        let any = self
            .files()
            .find_one(doc! {})
            .with_options(
                FindOneOptions::builder()
                    .projection(doc! {"_id": 1})
                    .selection_criteria(primary)
                    .build(),
            )
            .await?;
        if any.is_some() {
            return Ok(());
        }
        ensure_index(self.files(), doc! {"filename": 1, "uploadDate": 1}, false).await?;
        ensure_index(self.chunks(), doc! {"files_id": 1, "n": 1}, true).await?;
        Ok(())
    }
}

async fn ensure_index(coll: &Collection<Document>, keys: Document, unique: bool) -> Result<()> {
    let existing: Vec<IndexModel> = match coll.list_indexes().await {
        Ok(cursor) => cursor.try_collect().await?,
        // A collection that does not exist yet has no indexes (NamespaceNotFound, code 26).
        Err(e) if matches!(*e.kind, mongodb::error::ErrorKind::Command(ref c) if c.code == 26) => {
            Vec::new()
        }
        Err(e) => return Err(e.into()),
    };
    if existing.iter().any(|ix| same_keys(&ix.keys, &keys)) {
        return Ok(());
    }
    let opts = mongodb::options::IndexOptions::builder()
        .unique(unique.then_some(true))
        .build();
    coll.create_index(IndexModel::builder().keys(keys).options(opts).build())
        .await?;
    Ok(())
}

/// Key documents are equal when the fields are the same, in the same order, with the same
/// numeric direction, whatever numeric BSON type stores it (`1`, `1.0`, `NumberLong(1)`).
fn same_keys(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter().zip(b.iter()).all(|((ka, va), (kb, vb))| {
            ka == kb
                && match (as_num(va), as_num(vb)) {
                    (Some(x), Some(y)) => x == y,
                    _ => va == vb,
                }
        })
}

fn as_num(v: &Bson) -> Option<f64> {
    match v {
        Bson::Double(d) => Some(*d),
        other => as_i64(other).map(|i| i as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_type_differences_are_tolerated() {
        assert!(same_keys(
            &doc! {"filename": 1.0, "uploadDate": 1i64},
            &doc! {"filename": 1, "uploadDate": 1}
        ));
        assert!(!same_keys(
            &doc! {"filename": -1, "uploadDate": 1},
            &doc! {"filename": 1, "uploadDate": 1}
        ));
        assert!(!same_keys(
            &doc! {"files_id": 1},
            &doc! {"files_id": 1, "n": 1}
        ));
    }
}
