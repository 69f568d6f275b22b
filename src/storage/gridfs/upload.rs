//! Streaming upload: chunks are cut, hashed and inserted in pipelined batches; the files
//! document is written last, so a file is visible only once all of its chunks are stored.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::hashing::md5::{DeferredMd5, EngineGone};
use futures::{Stream, StreamExt};
use mongodb::bson::{
    doc, oid::ObjectId, Bson, DateTime, Document, RawBson, RawDocument, RawDocumentBuf,
};
use mongodb::SharedDocument;
use sha2::Digest;
use sha2::Sha256;
use tokio::sync::OwnedSemaphorePermit;
use tokio::task::JoinHandle;

use super::codec::{id_bytes, ChunkBinding, ChunkCodec};
use super::{FileDoc, GridFsBucket, GridFsError, Result};

mod one_command;
use one_command::refused;

/// Bytes of chunk data gathered into one `insert_many`.
const BATCH_BYTES: usize = 4 * 1024 * 1024;
/// Chunk documents gathered into one `insert_many` at most (matters for tiny chunk sizes).
const BATCH_DOCS: usize = 1000;
/// `insert_many` calls in flight at once; memory per upload is bounded by about
/// `(MAX_IN_FLIGHT + 1) * BATCH_BYTES` plus one chunk.
const MAX_IN_FLIGHT: usize = 3;

/// A chunk document on its way to the database, shared by its insert and the MD5 engine,
/// which may hash it after the insert returned. Its share of the upload budget goes with the
/// insert: what the engine holds longer is bounded by the engine itself (see
/// `hashing::md5::engine`), so that uploads never wait for budget that only MD5 holds.
pub(super) struct Chunk {
    pub(super) doc: RawDocumentBuf,
}

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        self.doc.as_bytes()
    }
}

/// What the insert sends (`insert_many_shared`): the chunk's own bytes, not a serialised copy.
impl AsRef<RawDocument> for Chunk {
    fn as_ref(&self) -> &RawDocument {
        &self.doc
    }
}

impl Drop for Chunk {
    /// The buffer goes back to the pool whoever lets go last, the insert or the MD5 engine
    /// (which usually holds a chunk longer than its insert takes).
    fn drop(&mut self) {
        let doc = std::mem::replace(&mut self.doc, RawDocumentBuf::new());
        super::pool::give(doc.into_bytes());
    }
}

fn engine_gone(e: EngineGone) -> GridFsError {
    GridFsError::Corrupt(e.to_string())
}

/// Options of one upload.
#[derive(Clone, Debug, Default)]
pub struct UploadOptions {
    /// The file's `_id`, any BSON value; a new ObjectId when `None`.
    pub id: Option<Bson>,
    /// Chunk size for this file; the bucket's when `None`.
    pub chunk_size: Option<u32>,
    /// `metadata` of the files document; left out of the document when `None`.
    pub metadata: Option<Document>,
    /// Also compute the SHA-256 of the content.
    pub sha256: bool,
    /// Do not compute the MD5 (the GridFS spec deprecated the files document's `md5`, and
    /// drivers skip it; grids3's own writes need it for ETags). [`Digests::md5`] is then zero.
    pub skip_md5: bool,
    /// Also compute the SHA-1 of the content (content-addressed buckets name contents by it).
    pub sha1: bool,
    /// Keep a content that fits in one chunk in memory: [`Upload::flush`] then inserts
    /// nothing, and [`Upload::take_small`] hands the bytes over (a content-addressed bucket
    /// stores small contents inline or as content documents, never as chunks).
    pub hold_small: bool,
    /// The `n` of the first chunk written (0 for a normal file). Multipart completion uses it
    /// to rewrite only the tail of a file whose head chunks were adopted in place.
    pub first_chunk: i64,
    /// Seals every chunk (server-side encryption); the files document then counts the sealed
    /// bytes, and the chunks are sealed as one segment starting at `first_chunk`.
    pub codec: Option<Arc<dyn ChunkCodec>>,
}

/// Length and digests of an upload's content, computed while streaming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Digests {
    /// Bytes written (plain text, before any sealing).
    pub length: u64,
    /// MD5 of the content (zero under [`UploadOptions::skip_md5`]).
    pub md5: [u8; 16],
    /// SHA-256 of the content, when asked for.
    pub sha256: Option<[u8; 32]>,
    /// SHA-1 of the content, when asked for.
    pub sha1: Option<[u8; 20]>,
}

/// An upload in progress. Write the content with [`Upload::write`], then either
/// [`Upload::finish`] (or [`Upload::flush`] + [`Upload::publish`]) or [`Upload::abort`].
/// Dropped unfinished (a client that went away), it deletes its chunks in the background.
pub struct Upload {
    bucket: GridFsBucket,
    id: Bson,
    filename: String,
    chunk_size: u32,
    metadata: Option<Document>,
    /// The chunk being filled, as raw BSON (see `start_chunk`); empty between chunks.
    pending: Vec<u8>,
    /// Where the data of the chunk in `pending` starts.
    data_start: usize,
    /// The `files_id` element, encoded once.
    files_id_elem: Vec<u8>,
    /// Chunk documents built directly as raw BSON, so that no `Document` is serialised first;
    /// the driver sends these very buffers (`insert_many_shared`, vendor/README.md), copying
    /// them only for command monitoring or auto-encryption, neither of which grids3 enables by
    /// default.
    batch: Vec<Arc<Chunk>>,
    batch_bytes: usize,
    batch_permits: Vec<OwnedSemaphorePermit>,
    next_n: i64,
    first_chunk: i64,
    length: u64,
    /// Bytes stored: `length` plus each chunk's sealing overhead.
    stored: u64,
    codec: Option<Arc<dyn ChunkCodec>>,
    id_bytes: Vec<u8>,
    md5: Option<DeferredMd5>,
    sha256: Option<Sha256>,
    sha1: Option<sha1::Sha1>,
    hold_small: bool,
    in_flight: VecDeque<JoinHandle<Result<()>>>,
    done: bool,
}

impl GridFsBucket {
    /// Starts an upload of `filename`. Checks the indexes before the bucket's first write.
    pub async fn open_upload_stream(&self, filename: &str, opts: UploadOptions) -> Result<Upload> {
        self.ensure_indexes().await?;
        let chunk_size = opts.chunk_size.unwrap_or(self.chunk_size());
        if chunk_size == 0 || chunk_size > 16 * 1024 * 1024 - 1024 {
            return Err(GridFsError::Corrupt(format!(
                "invalid chunk size {chunk_size}"
            )));
        }
        let id = opts.id.unwrap_or_else(|| Bson::ObjectId(ObjectId::new()));
        let raw_id = RawBson::try_from(id.clone())
            .map_err(|e| GridFsError::Corrupt(format!("file id not representable: {e}")))?;
        let files_id_elem = {
            let mut d = RawDocumentBuf::new();
            d.append("files_id", raw_id.clone());
            let b = d.into_bytes();
            b[4..b.len() - 1].to_vec()
        };
        Ok(Upload {
            bucket: self.clone(),
            id_bytes: id_bytes(&id),
            id,
            filename: filename.to_owned(),
            chunk_size,
            metadata: opts.metadata,
            pending: Vec::new(),
            data_start: 0,
            files_id_elem,
            batch: Vec::new(),
            batch_bytes: 0,
            batch_permits: Vec::new(),
            next_n: opts.first_chunk,
            first_chunk: opts.first_chunk,
            length: 0,
            stored: 0,
            codec: opts.codec,
            md5: (!opts.skip_md5).then(DeferredMd5::new),
            sha256: opts.sha256.then(Sha256::new),
            sha1: opts.sha1.then(sha1::Sha1::new),
            hold_small: opts.hold_small,
            in_flight: VecDeque::new(),
            done: false,
        })
    }

    /// Uploads a whole byte stream and publishes it. On any error the chunks written so far
    /// are deleted and no files document is written.
    pub async fn upload_from_stream<S, B, E>(
        &self,
        filename: &str,
        source: S,
        opts: UploadOptions,
    ) -> Result<FileDoc>
    where
        S: Stream<Item = std::result::Result<B, E>>,
        B: AsRef<[u8]>,
        E: std::fmt::Display,
    {
        let mut up = self.open_upload_stream(filename, opts).await?;
        let mut source = std::pin::pin!(source);
        while let Some(item) = source.next().await {
            let res = match item {
                Ok(buf) => up.write(buf.as_ref()).await,
                Err(e) => Err(GridFsError::Source(e.to_string())),
            };
            if let Err(e) = res {
                up.abort().await?;
                return Err(e);
            }
        }
        up.finish().await
    }
}

impl Upload {
    /// The id the file gets.
    pub fn id(&self) -> &Bson {
        &self.id
    }

    /// The filename the file gets.
    pub fn filename(&self) -> &str {
        &self.filename
    }

    /// A copy of the file's only chunk, once the upload has ended, when the whole file is
    /// that chunk and it is still held for the publish (a small file: see
    /// [`Upload::whole_in_batch`]); `None` otherwise.
    pub fn sole_chunk(&self) -> Option<RawDocumentBuf> {
        (self.pending.is_empty()
            && self.in_flight.is_empty()
            && self.first_chunk == 0
            && self.next_n == 1
            && self.batch.len() == 1)
            .then(|| RawDocumentBuf::from_bytes(self.batch[0].doc.as_bytes().to_vec()).ok())
            .flatten()
    }

    /// Bytes written so far.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The chunk size of this file (of its plain text, when sealed).
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// The chunk size the files document records: with a codec, a sealed chunk's size.
    fn stored_chunk_size(&self) -> u32 {
        self.chunk_size + self.codec.as_ref().map_or(0, |c| c.overhead() as u32)
    }

    /// Bytes of plain data in the chunk being filled.
    fn filled(&self) -> usize {
        self.pending.len().saturating_sub(self.data_start)
    }

    /// Starts the next chunk document in `pending`: the chunk is built as raw BSON in place,
    /// its fields first and its data appended as it arrives, so the data is copied once on
    /// its way from the request body into the driver's message (the lengths are filled in
    /// when the chunk is sent).
    fn start_chunk(&mut self) {
        let over = self.codec.as_ref().map_or(0, |c| c.overhead());
        let mut buf =
            super::pool::take(64 + self.files_id_elem.len() + self.chunk_size as usize + over);
        buf.extend_from_slice(&[0; 4]);
        buf.push(0x07); // ObjectId
        buf.extend_from_slice(b"_id\0");
        buf.extend_from_slice(&ObjectId::new().bytes());
        buf.extend_from_slice(&self.files_id_elem);
        // Int32 as the GridFS spec has it (drivers in typed languages read it as one); the
        // negative staging numbers of multipart parts fit too.
        match i32::try_from(self.next_n) {
            Ok(n) => {
                buf.push(0x10);
                buf.extend_from_slice(b"n\0");
                buf.extend_from_slice(&n.to_le_bytes());
            }
            Err(_) => {
                buf.push(0x12);
                buf.extend_from_slice(b"n\0");
                buf.extend_from_slice(&self.next_n.to_le_bytes());
            }
        }
        buf.push(0x05); // binary
        buf.extend_from_slice(b"data\0");
        buf.extend_from_slice(&[0; 4]);
        buf.push(0x00); // generic subtype
        self.data_start = buf.len();
        self.pending = buf;
    }

    /// Appends `data`, inserting every chunk it completes.
    pub async fn write(&mut self, mut data: &[u8]) -> Result<()> {
        // MD5 is taken of each chunk as it is pushed (`push_chunk`), where large pieces may be
        // hashed later together with other uploads', and of what is held back at the end
        // (`digests`).
        if let Some(h) = &mut self.sha256 {
            h.update(data);
        }
        if let Some(h) = &mut self.sha1 {
            h.update(data);
        }
        self.length += data.len() as u64;
        let cs = self.chunk_size as usize;
        while !data.is_empty() {
            // A full chunk is sent once more data follows it, so that the last chunk is known
            // as such when it is sent (a sealed last chunk says so: see `ChunkBinding::last`).
            if self.filled() == cs {
                self.push_chunk(false).await?;
            }
            if self.pending.is_empty() {
                self.start_chunk();
            }
            let take = (cs - self.filled()).min(data.len());
            self.pending.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        Ok(())
    }

    /// Sends the chunk in `pending` (full, or the last one): seals its data when there is a
    /// codec, fills in the lengths, and adds it to the batch.
    async fn push_chunk(&mut self, last: bool) -> Result<()> {
        let mut buf = std::mem::take(&mut self.pending);
        let start = self.data_start;
        if let Some(codec) = &self.codec {
            // Sealed in place next: the plain text is hashed first, and the buffer back.
            if let Some(h) = &mut self.md5 {
                buf = h.push_owned(buf, start).await.map_err(engine_gone)?;
            }
            let at = ChunkBinding {
                file_id: &self.id_bytes,
                segment: self.first_chunk,
                index: self.next_n - self.first_chunk,
                last,
            };
            let tag = codec.seal(&at, &mut buf[start..])?;
            buf.extend_from_slice(&tag);
        }
        let data_len = buf.len() - start;
        buf.push(0x00);
        let total = buf.len();
        let as_i32 =
            |n: usize| i32::try_from(n).map_err(|_| GridFsError::Corrupt("chunk too large".into()));
        buf[..4].copy_from_slice(&as_i32(total)?.to_le_bytes());
        buf[start - 5..start - 1].copy_from_slice(&as_i32(data_len)?.to_le_bytes());
        let doc = RawDocumentBuf::from_bytes(buf)
            .map_err(|e| GridFsError::Corrupt(format!("chunk document: {e}")))?;
        self.stored += data_len as u64;
        let share = match super::budget::try_acquire(data_len) {
            Some(p) => p,
            None => {
                // Budget exhausted: send what this upload holds (its insert frees budget
                // whatever the others do), then wait for a share.
                self.send_batch().await?;
                super::budget::acquire(data_len).await
            }
        };
        let chunk = Arc::new(Chunk { doc });
        if self.codec.is_none() {
            if let Some(h) = &mut self.md5 {
                // The insert does not wait for the MD5: the engine holds a share of the chunk
                // (unless the engine is that far behind: see `DeferredMd5::push`).
                h.push(chunk.clone(), start..start + data_len)
                    .await
                    .map_err(engine_gone)?;
            }
        }
        self.batch_permits.push(share);
        self.batch_bytes += data_len;
        self.batch.push(chunk);
        self.next_n += 1;
        if self.batch_bytes >= BATCH_BYTES || self.batch.len() >= BATCH_DOCS {
            self.send_batch().await?;
        }
        Ok(())
    }

    /// Sends the gathered chunks as one `insert_many`, first waiting for the oldest batch in
    /// flight when the pipeline is full. A failed insert is returned, not retried.
    async fn send_batch(&mut self) -> Result<()> {
        if self.batch.is_empty() {
            return Ok(());
        }
        while self.in_flight.len() >= MAX_IN_FLIGHT {
            join_oldest(&mut self.in_flight, self.bucket.name()).await?;
        }
        // The batch's share of the budget is given back when its insert returns.
        let permit = std::mem::take(&mut self.batch_permits);
        let docs = std::mem::take(&mut self.batch);
        self.batch_bytes = 0;
        let chunks = self.bucket.chunks().clone_with_type::<RawDocumentBuf>();
        let bucket = self.bucket.clone();
        self.in_flight.push_back(tokio::spawn(async move {
            let _held = permit;
            crate::failpoint::hit("upload.insert", bucket.name()).await;
            chunks
                .insert_many_shared(docs.iter().map(|c| SharedDocument::new(c.clone())))
                .await?;
            Ok(())
        }));
        Ok(())
    }

    /// Stores every chunk (including the short last one) and returns the content's digests.
    /// Nothing is visible yet: call [`Upload::publish`] or [`Upload::abort`] next.
    pub async fn flush(&mut self) -> Result<Digests> {
        self.end_body().await?;
        self.send_batch().await?;
        while !self.in_flight.is_empty() {
            join_oldest(&mut self.in_flight, self.bucket.name()).await?;
        }
        self.digests().await
    }

    /// The content's digests once the body has ended, like [`Upload::flush`], but a small
    /// file's chunks are kept back, so that [`Upload::publish_at`] can send them with the files
    /// document in one command. For an upload that ends in a publish; anything else that
    /// needs the chunks stored calls [`Upload::flush`].
    pub async fn end(&mut self) -> Result<Digests> {
        self.end_body().await?;
        if !self.whole_in_batch() {
            self.send_batch().await?;
            while !self.in_flight.is_empty() {
                join_oldest(&mut self.in_flight, self.bucket.name()).await?;
            }
        }
        self.digests().await
    }

    /// Adds the short last chunk to the batch.
    async fn end_body(&mut self) -> Result<()> {
        if !self.pending.is_empty() && !self.holds_small() {
            self.push_chunk(true).await?;
        }
        Ok(())
    }

    async fn digests(&self) -> Result<Digests> {
        let md5 = match &self.md5 {
            Some(h) => {
                // What was not pushed as a chunk (a small content held back) is hashed here.
                let rest = match self.pending.is_empty() {
                    true => &[][..],
                    false => &self.pending[self.data_start..],
                };
                h.digest_with(rest).await.map_err(engine_gone)?
            }
            None => [0; 16],
        };
        Ok(Digests {
            length: self.length,
            md5,
            sha256: self.sha256.clone().map(|h| h.finalize().into()),
            sha1: self.sha1.clone().map(|h| h.finalize().into()),
        })
    }

    /// Whether the whole content so far is held in memory (see [`UploadOptions::hold_small`]).
    fn holds_small(&self) -> bool {
        self.hold_small && self.next_n == self.first_chunk
    }

    /// The content, when [`UploadOptions::hold_small`] kept it in memory (it fits in one
    /// chunk, and no chunk was inserted); the upload is then finished with. `None` when the
    /// content went out as chunks.
    pub fn take_small(&mut self) -> Option<Vec<u8>> {
        if !self.holds_small() {
            return None;
        }
        let data = if self.pending.is_empty() {
            Vec::new()
        } else {
            self.pending[self.data_start..].to_vec()
        };
        self.pending.clear();
        self.done = true;
        Some(data)
    }

    /// Writes the files document, making the file visible. `metadata` replaces the one given
    /// at open when it is `Some`.
    pub async fn publish(self, metadata: Option<Document>) -> Result<FileDoc> {
        self.publish_at(metadata, DateTime::now()).await
    }

    /// [`Upload::publish`] with the `uploadDate` given (grids3 stamps revisions with the
    /// database's time, see `storage::meta::DbClock`).
    pub async fn publish_at(
        mut self,
        metadata: Option<Document>,
        upload_date: DateTime,
    ) -> Result<FileDoc> {
        self.end_body().await?;
        let one_command = self.whole_in_batch();
        if !one_command {
            self.flush().await?;
        }
        let file = FileDoc {
            id: self.id.clone(),
            length: self.stored,
            chunk_size: self.stored_chunk_size(),
            upload_date,
            filename: Some(self.filename.clone()),
            metadata: metadata.or_else(|| self.metadata.take()),
            content: None,
        };
        // From here on a drop (a cancelled request) must not delete the chunks: the insert may
        // be applied whatever becomes of this future. The writer's registration (grids3's
        // object layer) makes the janitor decide later, by whether the files document exists.
        self.done = true;
        if one_command && self.publish_in_one_command(&file).await? {
            return Ok(file);
        }
        if let Err(e) = self.bucket.files().insert_one(file.to_document()).await {
            let e = GridFsError::from(e);
            if refused(&e) {
                self.clean_up_unpublished().await;
            }
            return Err(e);
        }
        Ok(file)
    }

    /// Stores every chunk and keeps them without writing a files document (a multipart part,
    /// or the tail of a file assembled elsewhere). Dropping the result no longer deletes them.
    pub async fn commit_chunks(mut self) -> Result<Digests> {
        let d = self.flush().await?;
        self.done = true;
        Ok(d)
    }

    /// Never deletes the chunks when dropped unfinished: for writers whose chunks are owned by
    /// a record elsewhere (a multipart Complete's tail, protected by its upload record and
    /// redone by a retry), where a drop must not race a retry that owns them by then.
    pub fn disarm(&mut self) {
        self.done = true;
    }

    /// Flushes and publishes with the metadata given at open.
    pub async fn finish(self) -> Result<FileDoc> {
        self.publish(None).await
    }

    /// Deletes every chunk written so far; no files document is written. The inserts still
    /// in flight are waited for first, at most one time limit: an insert that timed out (see
    /// [`join_oldest`]) may never answer, and the request must still get its answer. Past the
    /// limit the delete is left to a task that waits for them as long as they take, and this
    /// returns [`GridFsError::Timeout`] (the write's registration, left unfinished, then also
    /// expires and is reaped by the janitor).
    pub async fn abort(mut self) -> Result<()> {
        self.done = true;
        let mut in_flight = std::mem::take(&mut self.in_flight);
        let (bucket, id, written) = (
            self.bucket.clone(),
            self.id.clone(),
            self.first_chunk..self.next_n,
        );
        let limit = crate::failpoint::limit("upload.join", bucket.name(), super::OP_TIMEOUT);
        let settled = tokio::time::timeout(limit, async {
            // A handle leaves the queue in the same poll that sees it finish, so a timeout
            // leaves exactly the unfinished ones.
            while let Some(h) = in_flight.front_mut() {
                let _ = h.await;
                in_flight.pop_front();
            }
        })
        .await;
        if settled.is_err() {
            tokio::spawn(async move {
                if let Err(e) = delete_chunks(bucket, id.clone(), written, in_flight).await {
                    tracing::warn!(file_id = %id, error = %e, "could not remove chunks of an aborted upload");
                }
            });
            return Err(GridFsError::Timeout("a chunk insert"));
        }
        delete_chunks(bucket, id, written, in_flight).await
    }
}

/// Waits for the oldest insert in flight, at most [`super::OP_TIMEOUT`]. An insert that times
/// out stays in `in_flight`, still running: the upload fails, and the clean-up of a dropped or
/// aborted upload ([`delete_chunks`]) waits for it before it deletes. Dropped here instead (as
/// until the twelfth session), it went on detached and could land after the delete, leaving
/// chunks that nothing names once the write's registration is gone.
async fn join_oldest(in_flight: &mut VecDeque<JoinHandle<Result<()>>>, bucket: &str) -> Result<()> {
    let limit = crate::failpoint::limit("upload.join", bucket, super::OP_TIMEOUT);
    let Some(oldest) = in_flight.front_mut() else {
        return Ok(());
    };
    match tokio::time::timeout(limit, oldest).await {
        Ok(joined) => {
            in_flight.pop_front();
            joined.map_err(|e| GridFsError::Source(format!("chunk insert task failed: {e}")))?
        }
        Err(_) => Err(GridFsError::Timeout("a chunk insert")),
    }
}

/// Waits for the inserts still running (so none lands after the delete), then deletes the
/// chunks this upload wrote (`n` in `written`, and nothing else under the same id: a
/// multipart part shares its file id with the other parts of its upload).
async fn delete_chunks(
    bucket: GridFsBucket,
    id: Bson,
    written: std::ops::Range<i64>,
    in_flight: VecDeque<JoinHandle<Result<()>>>,
) -> Result<()> {
    for h in in_flight {
        let _ = h.await;
    }
    if !written.is_empty() {
        bucket
            .chunks()
            .delete_many(doc! {"files_id": id, "n": {"$gte": written.start, "$lt": written.end}})
            .await?;
    }
    crate::failpoint::hit("upload.cleaned", bucket.name()).await;
    Ok(())
}

impl Drop for Upload {
    fn drop(&mut self) {
        if self.done || (self.length == 0 && self.in_flight.is_empty()) {
            return;
        }
        let in_flight = std::mem::take(&mut self.in_flight);
        let (bucket, id, written) = (
            self.bucket.clone(),
            self.id.clone(),
            self.first_chunk..self.next_n,
        );
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                if let Err(e) = delete_chunks(bucket, id.clone(), written, in_flight).await {
                    tracing::warn!(file_id = %id, error = %e, "could not remove chunks of an abandoned upload");
                }
            });
        }
    }
}

impl std::fmt::Debug for Upload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upload")
            .field("id", &self.id)
            .field("filename", &self.filename)
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}
