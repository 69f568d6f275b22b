//! ETags of files other GridFS clients wrote, which carry none.

use md5::{Digest, Md5};
use mongodb::bson::Document;

use super::ObjectInfo;

/// The MD5 of no bytes: the ETag of every empty object, as S3 gives it.
const EMPTY_MD5: &str = "\"d41d8cd98f00b204e9800998ecf8427e\"";

/// Gives a file another GridFS client wrote (no grids3 `metadata.etag`) its ETag, from its
/// files document alone: the legacy `md5` field when present (drivers before the GridFS spec
/// dropped it wrote one); the MD5 of no bytes for an empty file; else an ETag derived from
/// the file's identity ([`unread_etag`]).
///
/// Never a read of the bytes, and never a write: before issue 59 a file of up to 1 MiB was
/// read whole and its MD5 stored on its first listing, one chunk query and one conditional
/// update per key, which made a first listing of PyMongo-written keys cost the database about
/// 5x what a listing of grids3's own keys does (BENCHMARKS.md, issue 59). Every instance
/// derives the same ETag, so nothing needs storing for listings, HEADs and GETs to agree. An
/// ETag an earlier release stored in `metadata` is kept.
pub(in crate::storage::objects) fn ensure_etag(info: &mut ObjectInfo, raw: &Document) {
    if info.meta.etag.is_some() {
        return;
    }
    info.meta.etag = Some(match raw.get_str("md5") {
        Ok(md5) if md5.len() == 32 && md5.bytes().all(|b| b.is_ascii_hexdigit()) => {
            format!("\"{}\"", md5.to_ascii_lowercase())
        }
        _ if info.file.length == 0 => EMPTY_MD5.to_owned(),
        _ => unread_etag(&info.file),
    });
}

/// The ETag of a non-empty file another GridFS client wrote without an MD5: computing its MD5
/// means reading it whole, which a HEAD or a listing must not do. Like the ETag AWS gives a
/// multipart object, it is not the MD5 of the bytes, and it says so by its `-N` suffix (N =
/// the file's chunk count), which clients such as rclone and the AWS CLI read as "not an
/// MD5" and do not check the body against. It is derived from what identifies this revision
/// (`_id`, length, upload date), so every instance computes the same one, and a revision
/// another writer puts in its place gets a new one.
pub(crate) fn unread_etag(file: &crate::storage::gridfs::FileDoc) -> String {
    let mut h = Md5::new();
    h.update(b"grids3-etag\0");
    h.update(file.id.to_string().as_bytes());
    h.update(file.length.to_be_bytes());
    h.update(file.upload_date.timestamp_millis().to_be_bytes());
    let chunks = file.length.div_ceil(u64::from(file.chunk_size.max(1)));
    format!("\"{}-{chunks}\"", hex::encode(h.finalize()))
}
