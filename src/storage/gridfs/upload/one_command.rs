//! A small file's chunks and files document in one ordered `bulkWrite` (MongoDB 8.0+): the
//! files document is inserted only after every chunk was, so the file is never visible
//! incomplete, and a small PUT saves a round trip. Also what a failed publish leaves behind.

use mongodb::bson::{doc, Document};

use super::{delete_chunks, Upload};
use crate::storage::gridfs::{FileDoc, GridFsError, Result};

/// Chunk bytes a small file may send with its files document in one `bulkWrite` (they are
/// copied once more, into a `Document`, which costs less than a round trip at this size).
const ONE_COMMAND_BYTES: usize = 1024 * 1024;

/// Set once the server refuses `bulkWrite` (before MongoDB 8.0): small files then go in two
/// commands, as large ones do. The driver refuses before sending anything.
static BULK_UNSUPPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn is_unsupported(e: &mongodb::error::Error) -> bool {
    crate::dberror::is_unsupported_command(e)
}

/// Whether a publish failed because the server refused a write (a duplicate key: the id of
/// a reaped write, whose tombstone holds it), as opposed to an error that leaves unknown
/// whether it was applied (a timeout, a lost connection, a write-concern error). Only the
/// first may have its chunks removed at once; the others are left to the janitor, which
/// decides by the files document once the write's registration expires.
pub(super) fn refused(e: &GridFsError) -> bool {
    use mongodb::error::{ErrorKind, WriteFailure};
    match e {
        GridFsError::Mongo(e) => match &*e.kind {
            ErrorKind::Write(WriteFailure::WriteError(_)) => true,
            ErrorKind::BulkWrite(b) => {
                b.write_concern_errors.is_empty() && !b.write_errors.is_empty()
            }
            _ => false,
        },
        GridFsError::Timeout(_) | GridFsError::Source(_) => false,
        // Built and refused before anything was sent.
        _ => true,
    }
}

impl Upload {
    /// Whether a body of `total` bytes in all, written from here, sends nothing to the
    /// database before it is published: it fits one chunk (so no chunk is sent as the body
    /// arrives) and is published with its files document in one command. What a metered
    /// write's hold may overlap (see `objects::meter`). Half of [`ONE_COMMAND_BYTES`], so a
    /// sealed chunk's tag never tips it over.
    pub fn keeps_back(&self, total: u64) -> bool {
        self.in_flight.is_empty()
            && self.batch.is_empty()
            && self.next_n == self.first_chunk
            && total <= u64::from(self.chunk_size)
            && total <= (ONE_COMMAND_BYTES / 2) as u64
            && !BULK_UNSUPPORTED.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Whether every chunk of the file is in the batch, none sent, and few enough bytes that
    /// copying them into one `bulkWrite` costs less than a round trip. An empty file (no
    /// chunk at all) is too: its files document goes alone in the same `bulkWrite`, as every
    /// other small file's does (issue 59: published by a plain `insert` instead, an empty PUT
    /// cost the local database 5x a 4 KiB one, its retryable-write record sorting up to
    /// 10,000 others per recorded write; on MongoDB the two commands cost the same).
    pub(super) fn whole_in_batch(&self) -> bool {
        self.in_flight.is_empty()
            && self.batch.len() as i64 == self.next_n - self.first_chunk
            && self.batch_bytes <= ONE_COMMAND_BYTES
            && !BULK_UNSUPPORTED.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Publishes `file` with its chunks in one command (see [`Upload::whole_in_batch`]):
    /// `true` once published, `false` when the server has no `bulkWrite` and the chunks went
    /// out alone (the caller then inserts the files document).
    pub(super) async fn publish_in_one_command(&mut self, file: &FileDoc) -> Result<bool> {
        match self.publish_with_chunks(file).await {
            Ok(()) => Ok(true),
            Err(GridFsError::Mongo(e)) if is_unsupported(&e) => {
                BULK_UNSUPPORTED.store(true, std::sync::atomic::Ordering::Relaxed);
                // The driver refuses before sending, but a retry can be refused after a
                // first attempt reached a server that ran it: published, then.
                if self.is_published().await? {
                    return Ok(true);
                }
                // Two commands, as for a large file. If this fails the chunks stay for the
                // janitor, which decides by the files document (the registration).
                self.flush().await?;
                Ok(false)
            }
            Err(e) => {
                if refused(&e) {
                    self.clean_up_unpublished().await;
                }
                Err(e)
            }
        }
    }

    /// Whether this file's document is in the database.
    async fn is_published(&self) -> Result<bool> {
        let found = self
            .bucket
            .files()
            .find_one(doc! {"_id": self.id.clone()})
            .projection(doc! {"filename": 1})
            .await?;
        Ok(found.is_some_and(|d| d.get_str("filename").ok() == Some(self.filename.as_str())))
    }

    /// The chunks in the batch and the files document `file` in one ordered `bulkWrite`
    /// (MongoDB 8.0+): the files document is inserted only after every chunk was, so the
    /// file is never visible incomplete, and a small PUT saves a round trip.
    async fn publish_with_chunks(&mut self, file: &FileDoc) -> Result<()> {
        use mongodb::options::{InsertOneModel, WriteModel};
        let chunks_ns = self.bucket.chunks().namespace();
        let mut models: Vec<WriteModel> = Vec::with_capacity(self.batch.len() + 1);
        for raw in &self.batch {
            let document = Document::try_from(raw.doc.as_ref())
                .map_err(|e| GridFsError::Corrupt(format!("chunk document: {e}")))?;
            models.push(
                InsertOneModel::builder()
                    .namespace(chunks_ns.clone())
                    .document(document)
                    .build()
                    .into(),
            );
        }
        models.push(
            InsertOneModel::builder()
                .namespace(self.bucket.files().namespace())
                .document(file.to_document())
                .build()
                .into(),
        );
        let files = self.bucket.files();
        let op = files.client().bulk_write(models).ordered(true);
        let op = match files.write_concern() {
            Some(wc) => op.write_concern(wc.clone()),
            None => op,
        };
        let res = tokio::time::timeout(crate::storage::gridfs::OP_TIMEOUT, op).await;
        let sent = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        self.batch_permits.clear();
        match res {
            // The chunks' buffers go back to the pool as `sent` is dropped.
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => {
                if is_unsupported(&e) {
                    // Put back for the two-command path.
                    self.batch = sent;
                    self.batch_bytes = self.batch.iter().map(|d| d.doc.as_bytes().len()).sum();
                }
                Err(e.into())
            }
            Err(_) => Err(GridFsError::Timeout("a chunk and files insert")),
        }
    }

    /// After a publish the server refused (see [`refused`]): the chunks go when the files
    /// document is not this file's (absent, or a tombstone that a reaper wrote under its id:
    /// see `storage::objects`). Read again rather than trusted from the error, since a
    /// driver's retry can report a failure of a write its first attempt made.
    pub(super) async fn clean_up_unpublished(&mut self) {
        let found = self
            .bucket
            .files()
            .find_one(doc! {"_id": self.id.clone()})
            .projection(doc! {"filename": 1})
            .await;
        let not_ours = match found {
            Ok(None) => true,
            Ok(Some(d)) => d.get_str("filename").ok() != Some(self.filename.as_str()),
            Err(_) => false,
        };
        if not_ours {
            let in_flight = std::mem::take(&mut self.in_flight);
            let _ = delete_chunks(
                self.bucket.clone(),
                self.id.clone(),
                self.first_chunk..self.next_n,
                in_flight,
            )
            .await;
        }
    }
}
