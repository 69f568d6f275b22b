//! Ranged, streaming download: only the chunks that hold the range are fetched, through one
//! cursor, and every chunk is checked against the files document.

use std::pin::Pin;

use bytes::Bytes;
use futures::{Stream, StreamExt, TryStreamExt};
use mongodb::bson::{doc, Bson, RawBsonRef, RawDocument, RawDocumentBuf};
use mongodb::raw_batch_cursor::{RawBatch, RawBatchCursor};
use std::ops::Range;
use std::sync::Arc;

use tokio::sync::{mpsc, Semaphore};

use super::codec::{id_bytes, open_chunk, Sealing};
use super::file::{chunk_count, expected_chunk_len};
use super::{FileDoc, GridFsBucket, GridFsError, Result};

/// A file's bytes, yielded as chunks arrive from the server.
pub type ByteStream = Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>;

/// Bytes a download fetches per round trip at most (its read-ahead window). Reading ahead
/// overlaps the server's next window with the socket write of the current one.
const WINDOW_BYTES: u64 = 2 * 1024 * 1024;

/// What lets a fetched chunk be held until the client takes it: the download's own one-chunk
/// allowance, or a share of the process-wide download budget (`budget.rs`).
struct Hold {
    _own: Option<tokio::sync::OwnedSemaphorePermit>,
    _share: Option<super::budget::DownloadShare>,
}

/// One reply of chunk documents as the driver read it off the socket. The pieces of its
/// chunks are slices of it (no copy: the driver's per-document cursor copies each document
/// twice), so it lives until the last of them is sent; the budget shares of its chunks are
/// held with it, so the budget counts the memory it keeps.
struct Reply {
    batch: RawBatch,
    _shares: Vec<super::budget::DownloadShare>,
}

/// A piece of a chunk inside a shared [`Reply`], as the owner of a `Bytes`.
struct Slice {
    reply: Arc<Reply>,
    range: Range<usize>,
}

impl AsRef<[u8]> for Slice {
    fn as_ref(&self) -> &[u8] {
        &self.reply.batch.as_raw_document().as_bytes()[self.range.clone()]
    }
}

/// What [`piece`] found in a chunk document.
enum Piece {
    /// Plain data, in place: this range of the document's bytes.
    InPlace(Range<usize>),
    /// A sealed chunk's plain text, opened into a buffer of its own.
    Opened(Bytes),
}

impl Reply {
    /// The chunk documents of this reply, in order.
    fn docs(&self) -> Result<Vec<&RawDocument>> {
        let array = self.batch.doc_slices()?;
        let mut out = Vec::new();
        for item in array {
            let item = item.map_err(|e| GridFsError::Corrupt(format!("a chunk reply: {e}")))?;
            match item.as_document() {
                Some(d) => out.push(d),
                None => {
                    return Err(GridFsError::Corrupt(
                        "a chunk that is not a document".into(),
                    ))
                }
            }
        }
        Ok(out)
    }

    /// `piece` of one of this reply's documents, as a `Bytes` that shares the reply.
    fn bytes(self: &Arc<Self>, doc: &RawDocument, piece: Piece) -> Bytes {
        match piece {
            Piece::Opened(b) => b,
            Piece::InPlace(r) => {
                let at = doc.as_bytes().as_ptr() as usize
                    - self.batch.as_raw_document().as_bytes().as_ptr() as usize;
                Bytes::from_owner(Slice {
                    reply: self.clone(),
                    range: at + r.start..at + r.end,
                })
            }
        }
    }
}

/// The next reply of a chunk cursor, bounded by the operation timeout.
async fn next_reply(cursor: &mut RawBatchCursor) -> Result<Option<RawBatch>> {
    Ok(tokio::time::timeout(super::OP_TIMEOUT, cursor.next())
        .await
        .map_err(|_| GridFsError::Timeout("reading chunks"))?
        .transpose()?)
}

impl GridFsBucket {
    /// The files document with this id.
    pub async fn find_file(&self, id: &Bson) -> Result<FileDoc> {
        let doc = self
            .files()
            .find_one(doc! {"_id": id.clone()})
            .await?
            .ok_or(GridFsError::FileNotFound)?;
        FileDoc::from_document(&doc)
    }

    /// Revision `revision` of `filename`: 0 the oldest, 1 the next, ...; -1 the newest, -2 the
    /// one before. Distinguishes a name that does not exist from a revision that does not.
    pub async fn find_revision(&self, filename: &str, revision: i32) -> Result<FileDoc> {
        let (order, skip) = if revision >= 0 {
            (1, i64::from(revision))
        } else {
            (-1, -(i64::from(revision)) - 1)
        };
        let found = self
            .files()
            .find_one(doc! {"filename": filename})
            .sort(doc! {"uploadDate": order, "_id": order})
            .skip(skip as u64)
            .await?;
        match found {
            Some(d) => FileDoc::from_document(&d),
            None => {
                let any = self.files().find_one(doc! {"filename": filename}).await?;
                Err(if any.is_some() {
                    GridFsError::RevisionNotFound(revision)
                } else {
                    GridFsError::FileNotFound
                })
            }
        }
    }

    /// The whole file with this id, as a stream.
    pub async fn open_download_stream(&self, id: &Bson) -> Result<(FileDoc, ByteStream)> {
        let file = self.find_file(id).await?;
        let stream = self.download_range(&file, 0, file.length)?;
        Ok((file, stream))
    }

    /// A revision of a file by name (see [`GridFsBucket::find_revision`]), as a stream.
    pub async fn open_download_stream_by_name(
        &self,
        filename: &str,
        revision: i32,
    ) -> Result<(FileDoc, ByteStream)> {
        let file = self.find_revision(filename, revision).await?;
        let stream = self.download_range(&file, 0, file.length)?;
        Ok((file, stream))
    }

    /// Bytes `[start, end)` of `file`. Reads chunks `start / chunkSize` up to the one holding
    /// byte `end - 1` and nothing else; a missing, short or long chunk ends the stream with an
    /// error. An empty range issues no query at all.
    pub fn download_range(&self, file: &FileDoc, start: u64, end: u64) -> Result<ByteStream> {
        self.download_sealed(file, None, 0, start, end)
    }

    /// [`GridFsBucket::download_range`] of a file that is sealed (`sealing`, whose plain text
    /// `[start, end)` is meant) or not (`None`), whose content's chunk `i` is stored as
    /// `n = base + i` (a multipart part, staged under its upload's file id). A sealed chunk is opened in place, in
    /// the buffer the driver read it into.
    pub fn download_sealed(
        &self,
        file: &FileDoc,
        sealing: Option<&Sealing>,
        base: i64,
        start: u64,
        end: u64,
    ) -> Result<ByteStream> {
        let geo = Geometry::of(file, sealing);
        if start > end || end > geo.length {
            return Err(GridFsError::InvalidRange {
                start,
                end,
                length: geo.length,
            });
        }
        if start == end {
            return Ok(Box::pin(futures::stream::empty()));
        }
        let cs = u64::from(geo.chunk_size);
        let first = base + (start / cs) as i64;
        let last_excl = base + chunk_count(end, geo.chunk_size);
        // Chunks fetched per round trip at most: about 2 MiB whatever the chunk size.
        let window = (WINDOW_BYTES / cs).clamp(1, 1000) as usize;
        let (tx, rx) = mpsc::channel::<Result<(Bytes, Hold)>>(window);
        let chunks = self.chunks().clone_with_type::<RawDocumentBuf>();
        let id = file.id.clone();
        let sealing = sealing.cloned();
        tokio::spawn(async move {
            let result = async {
                // The chunk a download is about to send is always its own to fetch (one at a
                // time, outside the budget), so no download ever waits for another; the rest
                // of a window is read ahead only as far as the download budget allows.
                let own = Arc::new(Semaphore::new(1));
                let mut next = first;
                while next < last_excl {
                    let mine = own.clone().acquire_owned().await.expect("never closed");
                    let want = usize::try_from(last_excl - next).map_or(window, |r| r.min(window));
                    let mut holds = vec![Hold {
                        _own: Some(mine),
                        _share: None,
                    }];
                    while holds.len() < want {
                        match super::budget::try_download_share(cs as usize) {
                            Some(share) => holds.push(Hold {
                                _own: None,
                                _share: Some(share),
                            }),
                            None => {
                                crate::metrics::download_budget_exhausted();
                                break;
                            }
                        }
                    }
                    let k = holds.len() as i64;
                    // A server that stops answering ends the stream with an error instead of
                    // leaving it hanging (the driver has no socket timeout). `limit`: the
                    // server answers the window in one batch and closes the cursor.
                    let mut cursor = tokio::time::timeout(
                        super::OP_TIMEOUT,
                        chunks
                            .find(
                                doc! {"files_id": id.clone(), "n": {"$gte": next, "$lt": next + k}},
                            )
                            .sort(doc! {"n": 1})
                            .limit(k)
                            .batch_size(k as u32)
                            .batch(),
                    )
                    .await
                    .map_err(|_| GridFsError::Timeout("reading chunks"))??;
                    let mut holds = holds.into_iter();
                    while let Some(batch) = next_reply(&mut cursor).await? {
                        // Plain chunks are sent as slices of the reply, which then holds
                        // their shares; sealed chunks are opened into buffers of their own,
                        // each sent with its share.
                        let n = batch.doc_slices()?.into_iter().count();
                        if n > holds.len() {
                            return Err(GridFsError::Corrupt(format!("chunk {next} twice")));
                        }
                        let mut mine: Vec<Hold> = holds.by_ref().take(n).collect();
                        let shares = if sealing.is_some() {
                            Vec::new()
                        } else {
                            mine.iter_mut().filter_map(|h| h._share.take()).collect()
                        };
                        let reply = Arc::new(Reply {
                            batch,
                            _shares: shares,
                        });
                        for (doc, hold) in reply.docs()?.into_iter().zip(mine) {
                            let p = piece(doc, next, base, &geo, sealing.as_ref(), start, end)?;
                            let bytes = reply.bytes(doc, p);
                            if tx.send(Ok((bytes, hold))).await.is_err() {
                                return Ok(()); // the reader went away
                            }
                            next += 1;
                        }
                    }
                    if holds.len() > 0 {
                        return Err(GridFsError::ChunkMissing(next));
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = result {
                let _ = tx.send(Err(e)).await;
            }
        });
        // A chunk's hold is let go as the response body takes the chunk.
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv()
                .await
                .map(|item| (item.map(|(bytes, _hold)| bytes), rx))
        })))
    }

    /// Bytes `[start, end)` of a file whose chunks come back in one round trip (the caller
    /// keeps this to small files): one query, limited to the chunks that hold the range, so
    /// the server closes the cursor with the first batch. `ChunkMissing` when a chunk is gone
    /// (a revision reclaimed meanwhile: look the key up again). A sealed file's plain text is
    /// meant, as in [`GridFsBucket::download_sealed`].
    pub async fn read_sealed(
        &self,
        file: &FileDoc,
        sealing: Option<&Sealing>,
        start: u64,
        end: u64,
    ) -> Result<Bytes> {
        self.read_sealed_with(file, sealing, start, end, None).await
    }

    /// [`GridFsBucket::read_sealed`] with chunk 0 read already (with the files document, by
    /// the object layer's small GET): when the range lies in it, and it is this file's chunk
    /// 0, no query is sent.
    pub async fn read_sealed_with(
        &self,
        file: &FileDoc,
        sealing: Option<&Sealing>,
        start: u64,
        end: u64,
        chunk0: Option<RawDocumentBuf>,
    ) -> Result<Bytes> {
        let geo = Geometry::of(file, sealing);
        if start > end || end > geo.length {
            return Err(GridFsError::InvalidRange {
                start,
                end,
                length: geo.length,
            });
        }
        if start == end {
            return Ok(Bytes::new());
        }
        let cs = u64::from(geo.chunk_size);
        let first = (start / cs) as i64;
        let last_excl = chunk_count(end, geo.chunk_size);
        let ready = chunk0.filter(|c| {
            first == 0
                && last_excl == 1
                && raw_i64(c, "n") == Some(0)
                && c.get("files_id")
                    .ok()
                    .flatten()
                    .and_then(|v| Bson::try_from(v).ok())
                    .is_some_and(|v| v == file.id)
        });
        let mut pieces = Vec::new();
        let mut expected = first;
        match ready {
            Some(c) => {
                pieces.push(match piece(&c, expected, 0, &geo, sealing, start, end)? {
                    Piece::Opened(b) => b,
                    Piece::InPlace(r) => Bytes::from(c.into_bytes()).slice(r),
                });
                expected += 1;
            }
            None => {
                let mut cursor = self
                    .chunks()
                    .find(
                        doc! {"files_id": file.id.clone(), "n": {"$gte": first, "$lt": last_excl}},
                    )
                    .sort(doc! {"n": 1})
                    .limit(last_excl - first)
                    .batch()
                    .await?;
                while let Some(batch) = next_reply(&mut cursor).await? {
                    let reply = Arc::new(Reply {
                        batch,
                        _shares: Vec::new(),
                    });
                    for doc in reply.docs()? {
                        let p = piece(doc, expected, 0, &geo, sealing, start, end)?;
                        pieces.push(reply.bytes(doc, p));
                        expected += 1;
                    }
                }
            }
        }
        if expected < last_excl {
            return Err(GridFsError::ChunkMissing(expected));
        }
        // One chunk (the common small read) is passed on as it is, without a copy, unless the
        // piece is a small part of its chunk: a slice keeps the whole chunk's allocation
        // alive, and the download budget counts the bytes read (a 1-byte Range would pin a
        // whole chunk, up to 16 MiB in another driver's files, counted as one byte).
        if pieces.len() == 1 {
            let p = pieces.pop().expect("one piece");
            return Ok(if (p.len() as u64) * 2 < cs {
                Bytes::copy_from_slice(&p)
            } else {
                p
            });
        }
        let mut out = Vec::with_capacity((end - start) as usize);
        for p in &pieces {
            out.extend_from_slice(p);
        }
        Ok(Bytes::from(out))
    }

    /// The whole file in memory; for tests and small files only.
    pub async fn download_to_vec(&self, id: &Bson) -> Result<Vec<u8>> {
        let (file, stream) = self.open_download_stream(id).await?;
        collect(file.length, stream).await
    }
}

/// Collects a stream into a Vec.
pub(crate) async fn collect(len_hint: u64, mut stream: ByteStream) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(len_hint.min(64 << 20) as usize);
    while let Some(b) = stream.try_next().await? {
        out.extend_from_slice(&b);
    }
    Ok(out)
}

/// The plain-text geometry of a file, and what its chunks are bound to when sealed.
struct Geometry {
    length: u64,
    chunk_size: u32,
    id_bytes: Vec<u8>,
}

impl Geometry {
    fn of(file: &FileDoc, sealing: Option<&Sealing>) -> Self {
        match sealing {
            Some(s) => Self {
                length: s.plain_len,
                chunk_size: s.plain_chunk,
                id_bytes: id_bytes(&file.id),
            },
            None => Self {
                length: file.length,
                chunk_size: file.chunk_size,
                id_bytes: Vec::new(),
            },
        }
    }
}

/// Checks chunk `expected` (its `n` and its length against the file's), opens it when the
/// file is sealed, and finds the part of its (plain) data inside `[start, end)`; the
/// content's chunk `i` is stored as `n = base + i`. Plain data is not copied: the piece is
/// a range of the document's bytes. A sealed chunk is opened in a copy of its data, since
/// the reply it came in is shared.
fn piece(
    raw: &RawDocument,
    expected: i64,
    base: i64,
    geo: &Geometry,
    sealing: Option<&Sealing>,
    start: u64,
    end: u64,
) -> Result<Piece> {
    let n =
        raw_i64(raw, "n").ok_or_else(|| GridFsError::Corrupt("chunk without numeric n".into()))?;
    if n != expected {
        return Err(GridFsError::ChunkMissing(expected));
    }
    let data = match raw.get("data") {
        Ok(Some(RawBsonRef::Binary(b))) => b.bytes,
        _ => return Err(GridFsError::Corrupt(format!("chunk {n} without data"))),
    };
    let i = n - base;
    let want = expected_chunk_len(geo.length, geo.chunk_size, i);
    let chunk_start = i as u64 * u64::from(geo.chunk_size);
    let from = start.saturating_sub(chunk_start) as usize;
    let to = (end - chunk_start).min(want as u64) as usize;
    if let Some(s) = sealing {
        let mut buf = data.to_vec();
        open_chunk(s, &geo.id_bytes, i, want, &mut buf)?;
        return Ok(Piece::Opened(Bytes::from(buf).slice(from..to)));
    }
    if data.len() != want {
        return Err(GridFsError::ChunkWrongSize {
            n: i,
            expected: want,
            actual: data.len(),
        });
    }
    let offset = data.as_ptr() as usize - raw.as_bytes().as_ptr() as usize;
    Ok(Piece::InPlace(offset + from..offset + to))
}

fn raw_i64(doc: &RawDocument, key: &str) -> Option<i64> {
    match doc.get(key).ok()?? {
        RawBsonRef::Int32(i) => Some(i64::from(i)),
        RawBsonRef::Int64(i) => Some(i),
        RawBsonRef::Double(d) if d.fract() == 0.0 => Some(d as i64),
        _ => None,
    }
}
