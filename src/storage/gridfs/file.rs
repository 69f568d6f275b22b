//! The files document, read leniently as the specification asks.

use mongodb::bson::{doc, Bson, DateTime, Document};

use super::{GridFsError, Result};

/// A GridFS files document.
#[derive(Clone, Debug, PartialEq)]
pub struct FileDoc {
    /// `_id`: any BSON value.
    pub id: Bson,
    /// `length` in bytes.
    pub length: u64,
    /// `chunkSize` in bytes.
    pub chunk_size: u32,
    /// `uploadDate`: when the upload completed.
    pub upload_date: DateTime,
    /// `filename`; legacy documents may lack it.
    pub filename: Option<String>,
    /// `metadata`, when present.
    pub metadata: Option<Document>,
    /// The v7files content pointer (`in` or `sha`) of an object in a content-addressed
    /// bucket, whose bytes are stored apart, not in this file's chunks (see
    /// `storage::content`); `None` for a GridFS file.
    pub content: Option<Document>,
}

/// Reads a BSON number of any numeric type as an integer; the specification (2016-10-07)
/// requires accepting `length` and `chunkSize` stored as int32, int64 or double.
pub(crate) fn as_i64(v: &Bson) -> Option<i64> {
    match v {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.fract() == 0.0 && d.is_finite() => Some(*d as i64),
        Bson::Decimal128(d) => d.to_string().parse().ok(),
        _ => None,
    }
}

impl FileDoc {
    /// Parses a files document.
    pub fn from_document(doc: &Document) -> Result<Self> {
        let id = doc
            .get("_id")
            .cloned()
            .ok_or_else(|| GridFsError::Corrupt("files document without _id".into()))?;
        // A v7files object written by another writer may carry its bytes in `in` without a
        // `length`, and no `chunkSize` (it has no chunks): the bytes give the length, and the
        // GridFS default stands in for the chunk size.
        let inline_len = match doc.get("in") {
            Some(Bson::Binary(b)) => Some(b.bytes.len() as i64),
            _ => None,
        };
        let pointed = inline_len.is_some() || doc.contains_key("sha");
        let length = doc
            .get("length")
            .and_then(as_i64)
            .or(inline_len)
            .filter(|l| *l >= 0)
            .ok_or_else(|| GridFsError::Corrupt(format!("bad length in files document {id}")))?;
        let chunk_size = doc
            .get("chunkSize")
            .and_then(as_i64)
            .filter(|c| *c > 0 && *c <= i64::from(i32::MAX))
            .or(pointed.then_some(i64::from(super::DEFAULT_CHUNK_SIZE)))
            .ok_or_else(|| GridFsError::Corrupt(format!("bad chunkSize in files document {id}")))?;
        let upload_date = match doc.get("uploadDate") {
            Some(Bson::DateTime(d)) => *d,
            _ => DateTime::from_millis(0),
        };
        let filename = match doc.get("filename") {
            Some(Bson::String(s)) => Some(s.clone()),
            _ => None,
        };
        let metadata = match doc.get("metadata") {
            Some(Bson::Document(m)) => Some(m.clone()),
            _ => None,
        };
        let mut content: Document = ["in", "sha"]
            .iter()
            .filter_map(|k| Some((k.to_string(), doc.get(*k)?.clone())))
            .collect();
        // v7files' `contentType` belongs to a content-addressed object's pointer fields (a
        // GridFS file of another driver may carry one too: it is left alone there).
        if let (false, Some(ct)) = (content.is_empty(), doc.get("contentType")) {
            content.insert("contentType", ct.clone());
        }
        Ok(Self {
            id,
            length: length as u64,
            chunk_size: chunk_size as u32,
            upload_date,
            filename,
            metadata,
            content: (!content.is_empty()).then_some(content),
        })
    }

    /// The document as stored: `length` Int64, `chunkSize` Int32, `metadata` only when given.
    pub fn to_document(&self) -> Document {
        let mut d = doc! {
            "_id": self.id.clone(),
            "length": self.length as i64,
            "chunkSize": self.chunk_size as i32,
            "uploadDate": self.upload_date,
        };
        if let Some(f) = &self.filename {
            d.insert("filename", f.clone());
        }
        if let Some(m) = &self.metadata {
            d.insert("metadata", m.clone());
        }
        if let Some(c) = &self.content {
            d.extend(c.clone());
        }
        d
    }

    /// How many chunks the file has.
    pub fn chunk_count(&self) -> i64 {
        chunk_count(self.length, self.chunk_size)
    }
}

/// How many chunks hold `length` bytes at `chunk_size` bytes a chunk.
pub(crate) fn chunk_count(length: u64, chunk_size: u32) -> i64 {
    length.div_ceil(u64::from(chunk_size)) as i64
}

/// The length chunk `n` must have.
pub(crate) fn expected_chunk_len(length: u64, chunk_size: u32, n: i64) -> usize {
    let cs = u64::from(chunk_size);
    let start = n as u64 * cs;
    length.saturating_sub(start).min(cs) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_types_are_accepted() {
        let d = doc! {"_id": 1, "length": 10.0f64, "chunkSize": 4i64, "filename": "a"};
        let f = FileDoc::from_document(&d).unwrap();
        assert_eq!((f.length, f.chunk_size), (10, 4));
        assert_eq!(f.chunk_count(), 3);
        assert_eq!(expected_chunk_len(10, 4, 2), 2);
        assert_eq!(expected_chunk_len(8, 4, 1), 4);
    }

    #[test]
    fn bad_length_is_corrupt() {
        let d = doc! {"_id": 1, "length": "x", "chunkSize": 4};
        assert!(matches!(
            FileDoc::from_document(&d),
            Err(GridFsError::Corrupt(_))
        ));
    }
}
