//! Server-side encryption as the GridFS engine sees it: `crypto`'s chunk cipher behind the
//! engine's [`ChunkCodec`]. Crypto knows nothing of GridFS; this adapter is the one place the
//! two meet, so the dependency runs one way (storage -> crypto).

use std::sync::Arc;

use crate::crypto::cipher::{ChunkAt, ChunkCipher, CipherError, TAG_LEN};
use crate::crypto::SseMeta;
use crate::storage::gridfs::{ChunkBinding, ChunkCodec, GridFsError, Result, Sealing};
use crate::storage::objects::DataKey;

/// A data key's chunk cipher, as a chunk codec.
#[derive(Debug)]
struct Sealed(ChunkCipher);

fn at<'a>(b: &ChunkBinding<'a>) -> ChunkAt<'a> {
    ChunkAt {
        file_id: b.file_id,
        segment: b.segment,
        index: b.index,
        last: b.last,
    }
}

fn error(e: CipherError, b: &ChunkBinding<'_>) -> GridFsError {
    match e {
        CipherError::TooLarge => GridFsError::Corrupt("chunk too large to seal".into()),
        CipherError::Unauthentic => GridFsError::Unauthentic(b.index),
    }
}

impl ChunkCodec for Sealed {
    fn overhead(&self) -> usize {
        TAG_LEN
    }

    fn seal(&self, b: &ChunkBinding<'_>, data: &mut [u8]) -> Result<Vec<u8>> {
        self.0.seal(&at(b), data).map_err(|e| error(e, b))
    }

    fn open(&self, b: &ChunkBinding<'_>, data: &mut [u8]) -> Result<()> {
        self.0.open(&at(b), data).map_err(|e| error(e, b))
    }
}

/// The chunk codec of a data key.
pub fn codec(data_key: &[u8; 32]) -> Arc<dyn ChunkCodec> {
    Arc::new(Sealed(ChunkCipher::new(data_key)))
}

/// How to read an encrypted object's chunks with its data key.
pub fn sealing(m: &SseMeta, data_key: &[u8; 32]) -> Sealing {
    let codec = codec(data_key);
    if m.segments.is_empty() {
        Sealing::single(codec, m.size, m.chunk, 0)
    } else {
        Sealing::segmented(codec, m.size, m.chunk, &m.segments)
    }
}

/// A new object's encryption, ready to seal its chunks.
#[derive(Clone, Debug)]
pub struct SealedWrite {
    /// What the object keeps (its `size` is filled in at publish).
    pub meta: SseMeta,
    /// Its data key.
    pub key: DataKey,
    /// SSE-C: the key's MD5 as the client sent it (echoed back).
    pub customer_md5: Option<String>,
}

impl SealedWrite {
    /// The chunk sealer.
    pub fn codec(&self) -> Arc<dyn ChunkCodec> {
        self.key.codec()
    }

    /// The metadata the published object keeps, with its plain-text length.
    pub fn published(&self, size: u64) -> SseMeta {
        SseMeta {
            size,
            ..self.meta.clone()
        }
    }
}
