//! Sealed chunks: a codec that transforms each chunk's data on its own as it is written and
//! read (grids3's server-side encryption, `crate::crypto`, is one). The engine stays a GridFS
//! engine: a sealed file is still a well-formed GridFS file (its `length` and `chunkSize` count
//! the stored, sealed bytes), and the plain-text geometry travels beside it in [`Sealing`].

use std::sync::Arc;

use mongodb::bson::Bson;

use super::{GridFsError, Result};

/// What a sealed chunk is bound to, so that a chunk moved to another file or position, replayed
/// from another segment, or cut off at the end does not open.
#[derive(Clone, Copy, Debug)]
pub struct ChunkBinding<'a> {
    /// The file's `_id`, as bytes (see [`id_bytes`]).
    pub file_id: &'a [u8],
    /// The segment: the `n` its first chunk was written at (0 for a plain upload, the staging
    /// base of a multipart part attempt, the first rewritten `n` of a completion's tail).
    pub segment: i64,
    /// The chunk's index within its segment.
    pub index: i64,
    /// Whether it is the segment's last chunk.
    pub last: bool,
}

/// Seals and opens chunk data in place.
pub trait ChunkCodec: Send + Sync + std::fmt::Debug {
    /// Bytes a sealed chunk has beyond its plain text.
    fn overhead(&self) -> usize;
    /// Seals `data` (the chunk's plain text) in place and returns what follows it in the stored
    /// chunk ([`ChunkCodec::overhead`] bytes: an authentication tag).
    fn seal(&self, at: &ChunkBinding<'_>, data: &mut [u8]) -> Result<Vec<u8>>;
    /// Opens `data` (a sealed chunk) in place; its first `data.len() - overhead()` bytes are
    /// then the plain text. Fails with [`GridFsError::Unauthentic`] when it does not open.
    fn open(&self, at: &ChunkBinding<'_>, data: &mut [u8]) -> Result<()>;
}

/// How to read a sealed file: its codec, its plain-text geometry and its segments.
#[derive(Clone, Debug)]
pub struct Sealing {
    /// The codec the chunks were sealed with.
    pub codec: Arc<dyn ChunkCodec>,
    /// Plain-text length.
    pub plain_len: u64,
    /// Plain-text bytes per chunk.
    pub plain_chunk: u32,
    /// `(segment, first content chunk, chunk count)`, in chunk order.
    segments: Vec<(i64, i64, i64)>,
}

impl Sealing {
    /// A file sealed in one segment written from `n = segment` on.
    pub fn single(
        codec: Arc<dyn ChunkCodec>,
        plain_len: u64,
        plain_chunk: u32,
        segment: i64,
    ) -> Self {
        let count = super::file::chunk_count(plain_len, plain_chunk);
        Self::segmented(codec, plain_len, plain_chunk, &[(segment, count)])
    }

    /// A file whose chunks were sealed in segments `(segment, chunk count)`, in chunk order
    /// (a completed multipart upload: its adopted parts, then its rewritten tail).
    pub fn segmented(
        codec: Arc<dyn ChunkCodec>,
        plain_len: u64,
        plain_chunk: u32,
        segments: &[(i64, i64)],
    ) -> Self {
        let mut first = 0;
        let segments = segments
            .iter()
            .map(|&(s, c)| {
                let e = (s, first, c);
                first += c;
                e
            })
            .collect();
        Self {
            codec,
            plain_len,
            plain_chunk,
            segments,
        }
    }

    /// The segment, index and last flag of the content's chunk `i`.
    pub(crate) fn locate(&self, i: i64) -> Option<(i64, i64, bool)> {
        let at = self.segments.partition_point(|&(_, first, _)| first <= i);
        let &(seg, first, count) = self.segments.get(at.checked_sub(1)?)?;
        let index = i - first;
        (index < count).then_some((seg, index, index + 1 == count))
    }
}

/// The bytes a file id is bound by: an ObjectId's 12 bytes, otherwise the value's extended
/// JSON (any BSON value may be a GridFS file id).
pub fn id_bytes(id: &Bson) -> Vec<u8> {
    match id {
        Bson::ObjectId(o) => o.bytes().to_vec(),
        other => other
            .clone()
            .into_relaxed_extjson()
            .to_string()
            .into_bytes(),
    }
}

/// Checks that a stored chunk is as long as its plain text needs, then opens it in place.
pub(crate) fn open_chunk(
    sealing: &Sealing,
    file_id: &[u8],
    i: i64,
    want_plain: usize,
    data: &mut [u8],
) -> Result<()> {
    let over = sealing.codec.overhead();
    if data.len() != want_plain + over {
        return Err(GridFsError::ChunkWrongSize {
            n: i,
            expected: want_plain + over,
            actual: data.len(),
        });
    }
    let (segment, index, last) = sealing.locate(i).ok_or(GridFsError::Unauthentic(i))?;
    sealing.codec.open(
        &ChunkBinding {
            file_id,
            segment,
            index,
            last,
        },
        data,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Nop;
    impl ChunkCodec for Nop {
        fn overhead(&self) -> usize {
            0
        }
        fn seal(&self, _: &ChunkBinding<'_>, _: &mut [u8]) -> Result<Vec<u8>> {
            Ok(Vec::new())
        }
        fn open(&self, _: &ChunkBinding<'_>, _: &mut [u8]) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn segments_locate_chunks() {
        let s = Sealing::segmented(Arc::new(Nop), 10, 1, &[(-100, 3), (-50, 2), (5, 5)]);
        assert_eq!(s.locate(0), Some((-100, 0, false)));
        assert_eq!(s.locate(2), Some((-100, 2, true)));
        assert_eq!(s.locate(3), Some((-50, 0, false)));
        assert_eq!(s.locate(4), Some((-50, 1, true)));
        assert_eq!(s.locate(9), Some((5, 4, true)));
        assert_eq!(s.locate(10), None);
        let one = Sealing::single(Arc::new(Nop), 10, 4, 0);
        assert_eq!(one.locate(2), Some((0, 2, true)));
    }
}
