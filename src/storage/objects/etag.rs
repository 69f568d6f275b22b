//! ETags of files other GridFS clients wrote, which carry none.

use futures::TryStreamExt;
use md5::{Digest, Md5};
use mongodb::bson::{doc, Bson, Document};

use super::{ObjectInfo, ObjectStore, Pointer, Result, SMALL_READ};

impl ObjectStore {
    /// Files written by other GridFS clients have no ETag: take the legacy `md5` field when
    /// present; else the MD5 of the bytes for a file of up to [`SMALL_READ`] bytes (one read,
    /// stored in `metadata` once), and for a larger one an ETag derived from its identity
    /// ([`unread_etag`]), so no HEAD or listing reads a whole large file. The two derived
    /// forms are not written back: every request derives the same one, without a write.
    pub(in crate::storage::objects) async fn ensure_etag(
        &self,
        bucket: &str,
        info: &mut ObjectInfo,
        raw: &Document,
    ) -> Result<()> {
        if info.meta.etag.is_some() {
            return Ok(());
        }
        let etag = match raw.get_str("md5") {
            Ok(md5) if md5.len() == 32 => Some(format!("\"{}\"", md5.to_ascii_lowercase())),
            _ if info.file.length > SMALL_READ => Some(unread_etag(&info.file)),
            _ => None,
        };
        if let Some(etag) = etag {
            info.meta.etag = Some(etag);
            return Ok(());
        }
        // An object of another v7files writer reads its content; a GridFS file its chunks.
        let mut stream = match info.file.content.as_ref().and_then(Pointer::of) {
            Some(p) => {
                self.contents(bucket)
                    .read(&p, info.file.length, 0, info.file.length)
                    .await?
            }
            None => self
                .gridfs(bucket)
                .download_range(&info.file, 0, info.file.length)?,
        };
        let mut h = Md5::new();
        while let Some(b) = stream.try_next().await? {
            h.update(&b);
        }
        let etag = format!("\"{}\"", hex::encode(h.finalize()));
        // Conditional, so the backfill never writes over what an attribute write (tags, ACL)
        // stored meanwhile: a whole `metadata` only where there still is none, else the
        // `etag` field alone where it is still missing.
        let files = self.gridfs(bucket).files().clone();
        let id = info.file.id.clone();
        let whole = files
            .update_one(
                doc! {"_id": id.clone(), "metadata": Bson::Null},
                doc! {"$set": {"metadata": {"etag": &etag}}},
            )
            .await?;
        if whole.matched_count == 0 {
            files
                .update_one(
                    doc! {"_id": id, "metadata.etag": {"$exists": false}},
                    doc! {"$set": {"metadata.etag": &etag}},
                )
                .await?;
        }
        info.meta.etag = Some(etag);
        Ok(())
    }
}

/// The ETag of a file another GridFS client wrote without an MD5 and larger than
/// [`SMALL_READ`]: computing its MD5 means reading it whole, which a HEAD or a listing must
/// not do. Like the ETag AWS gives a multipart object, it is not the MD5 of the bytes, and it
/// says so by its `-N` suffix (N = the file's chunk count), which clients such as rclone and
/// the AWS CLI read as "not an MD5" and do not check the body against. It is derived from
/// what identifies this revision (`_id`, length, upload date), so every instance computes the
/// same one.
pub(crate) fn unread_etag(file: &crate::storage::gridfs::FileDoc) -> String {
    let mut h = Md5::new();
    h.update(b"grids3-etag\0");
    h.update(file.id.to_string().as_bytes());
    h.update(file.length.to_be_bytes());
    h.update(file.upload_date.timestamp_millis().to_be_bytes());
    let chunks = file.length.div_ceil(u64::from(file.chunk_size.max(1)));
    format!("\"{}-{chunks}\"", hex::encode(h.finalize()))
}
