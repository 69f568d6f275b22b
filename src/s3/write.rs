//! The store step of a new object's write: open its upload (sealed when the request or the
//! bucket asks), stream the body through the verifiers into GridFS, check Content-MD5, and
//! publish it under the write's condition. Nothing is visible until the publish; a body that
//! fails any check leaves no chunk behind.

use crate::auth::body::BodyReader;
use crate::crypto::keys;
use crate::crypto::MODE_S3;
use crate::error::{S3Error, S3Result};
use crate::s3::lookup::within_request_timeout;
use crate::s3::request::write::WriteSpec;
use crate::s3::request::MAX_PUT_SIZE;
use crate::s3::respond::blocked_error;
use crate::s3::sse::{self, SealedWrite};
use crate::state::AppState;
use crate::storage::gridfs::Digests;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::{ObjectInfo, ObjectMeta};

/// Stores and publishes a new object of `bucket` under `key` from `reader`, as `spec` (whose
/// owner and retention the caller has decided) asks. Returns the published object and its
/// encryption.
pub async fn store(
    st: &AppState,
    bucket: &BucketInfo,
    key: &str,
    spec: WriteSpec,
    mut reader: BodyReader,
) -> S3Result<(ObjectInfo, Option<SealedWrite>)> {
    let WriteSpec {
        md5,
        condition,
        mut meta,
        sse,
        ..
    } = spec;
    let (mut up, sealed) = sse::open_upload(st, bucket, key, sse).await?;
    // The body, chunk by chunk, through the verifiers; on any error the upload is aborted.
    let pumped: S3Result<Digests> = async {
        if let Some(n) = reader.declared_len() {
            // A metered bucket holds the body's room before a byte of it is stored; before a
            // byte of it is read when the client waits to be told to send it.
            if reader.awaits_continue() {
                up.expect(n).await?;
            } else {
                up.expect_soon(n).await?;
            }
        }
        while let Some(b) = reader.next().await? {
            if up.length() + b.len() as u64 > MAX_PUT_SIZE {
                return Err(S3Error::entity_too_large());
            }
            up.write(&b).await?;
        }
        // A small body's chunk stays back to go with the files document (one command).
        Ok(up.end().await?)
    }
    .await;
    let digests = match pumped {
        Ok(d) => d,
        Err(e) => {
            if let Err(abort) = up.abort().await {
                tracing::warn!(error = %abort, "could not abort a failed upload");
            }
            return Err(e);
        }
    };
    if md5.is_some_and(|m| m != digests.md5) {
        up.abort().await?;
        return Err(S3Error::bad_digest());
    }
    set_content(&mut meta, sealed.as_ref(), &digests);
    if let Some((alg, v)) = reader.checksum() {
        meta.checksums = vec![(alg.name().to_owned(), v.clone())];
    }
    let info = within_request_timeout(st, st.store.publish_if(&bucket.name, up, meta, &condition))
        .await??
        .map_err(blocked_error)?;
    Ok((info, sealed))
}

/// Sets what a new object's content decides in its attributes: the ETag (see [`etag`]) and the
/// encryption it keeps.
pub fn set_content(meta: &mut ObjectMeta, sealed: Option<&SealedWrite>, digests: &Digests) {
    meta.etag = Some(etag(sealed, &digests.md5));
    meta.sse = sealed.map(|s| s.published(digests.length));
}

/// The quoted ETag of a new object: the MD5 of its bytes, except under SSE-C and SSE-KMS,
/// whose ETags (as on AWS) are not (see `crypto::keys::opaque_etag`).
pub fn etag(sealed: Option<&SealedWrite>, md5: &[u8; 16]) -> String {
    match sealed {
        Some(s) if s.meta.mode != MODE_S3 => {
            format!("\"{}\"", keys::opaque_etag(&s.key.0, md5))
        }
        _ => format!("\"{}\"", hex::encode(md5)),
    }
}
