//! grids3 patch: a document to insert that the caller built as raw BSON and shares with the
//! driver, so that `Collection::insert_many_shared` sends its bytes without serialising them
//! into a new buffer. The caller's owner type (any `AsRef<RawDocument>`) is kept, so that what
//! it does when the last share is dropped (grids3 returns chunk buffers to a pool) still runs
//! after the driver lets go.

use std::{fmt, ops::Deref, sync::Arc};

use crate::bson::{RawDocument, RawDocumentBuf};

/// A raw BSON document shared between its owner and the driver's commands.
///
/// The owner's `as_ref` must return the same bytes every time, for as long as any share is
/// alive: the driver computes a message's length from one call and writes the bytes from
/// another, so a document that changed between them would desynchronise the connection.
#[derive(Clone)]
pub struct SharedDocument(Arc<dyn AsRef<RawDocument> + Send + Sync>);

impl SharedDocument {
    /// Shares `owner`'s document (which must not change: see the type's documentation).
    pub fn new(owner: Arc<dyn AsRef<RawDocument> + Send + Sync>) -> Self {
        Self(owner)
    }
}

impl Deref for SharedDocument {
    type Target = RawDocument;

    fn deref(&self) -> &RawDocument {
        (*self.0).as_ref()
    }
}

impl From<RawDocumentBuf> for SharedDocument {
    fn from(doc: RawDocumentBuf) -> Self {
        Self(Arc::new(doc))
    }
}

impl fmt::Debug for SharedDocument {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
