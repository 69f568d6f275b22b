//! MinIO's snowball uploads: PutObject of a tar (or a gzipped tar) with
//! `X-Amz-Meta-Snowball-Auto-Extract: true` stores each member as an object of its own, and
//! not the archive (minio-py's `upload_snowball_objects`, minio-go's `PutObjectsSnowball`).
//! `X-Amz-Meta-Minio-Snowball-Prefix` puts the members under a prefix, and
//! `X-Amz-Meta-Minio-Snowball-Ignore-Dirs: true` leaves out directory entries (which are
//! otherwise stored as empty `dir/` objects, as MinIO stores them).
//!
//! How it keeps grids3's promises:
//! - **Verified before anything is visible.** The body is first stored whole in a temporary
//!   file and checked as any PUT's body is (its signature's payload hash or chunk signatures,
//!   `x-amz-checksum-*`, `Content-MD5`), in a file unlinked as it is created (nothing is left
//!   behind, whatever ends the process). Then the archive is read once without publishing
//!   anything (its headers, its sizes against a 5 GiB cap on everything it expands to, a gzip
//!   stream's CRC); only then are members published, each as a PutObject is (written, then
//!   made visible). A body or an archive that fails a check stores nothing.
//! - **Authorized per member.** Each member is decided as the PutObject of its key would be
//!   (a policy that allows writes under one prefix does not let an archive write elsewhere);
//!   the first member refused ends the request with `403 AccessDenied`, and the members before
//!   it stay, as MinIO's extraction stops at an error.
//! - **Bounded.** At most `--snowball-max-members` members (10,000 by default, the batch size
//!   AWS recommends for its own auto-extract) are stored per request: an archive with more is
//!   `400 InvalidRequest`, found in the reading that stores nothing.
//! - **Refused, never ignored:** `X-Amz-Meta-Minio-Snowball-Ignore-Errors` (every error
//!   ends the extraction here), conditional headers (`If-Match`, `If-None-Match`: they would
//!   name the archive's key, which is never written), and a member key over 1,024 bytes.
//!
//! The request's other headers apply to every member: encryption, tags, ACL, Object Lock,
//! storage class, user metadata (without the snowball entries). Each member's Content-Type is
//! guessed from its extension, as MinIO does.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use md5::{Digest, Md5};
use tokio::io::{AsyncRead, AsyncSeekExt, AsyncWriteExt, BufReader};

use crate::error::{S3Error, S3Result};
use crate::notify::EventName;
use crate::s3::authz;
use crate::s3::lookup::require_bucket;
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::s3::request::write::WriteSpec;
use crate::s3::request::S3Request;
use crate::s3::request::MAX_PUT_SIZE;
use crate::s3::respond::{blocked_error, empty};
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::WriteCondition;

use super::tar::{Kind, Reader};

const AUTO_EXTRACT: &str = "snowball-auto-extract";
const PREFIX: &str = "minio-snowball-prefix";
const IGNORE_DIRS: &str = "minio-snowball-ignore-dirs";
const IGNORE_ERRORS: &str = "minio-snowball-ignore-errors";

/// Whether a PutObject asks for extraction.
pub fn asked(h: &HeaderMap) -> bool {
    meta_header(h, AUTO_EXTRACT).is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

fn meta_header<'a>(h: &'a HeaderMap, name: &str) -> Option<&'a str> {
    h.get(format!("x-amz-meta-{name}"))
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// A spool file's I/O error: logged, answered as an internal error (never its details).
fn spool_error(what: &str, e: std::io::Error) -> S3Error {
    tracing::error!(error = %e, "{what}");
    S3Error::internal()
}

/// Extractions at once per instance: each may spool up to 5 GiB, so more wait for a slot and
/// answer `503 SlowDown` after 10 s without one.
const AT_ONCE: usize = 4;

/// Most bytes an archive may expand to: an object's largest size of data, and 1 GiB more for
/// headers, padding and what follows the end (a 5 GiB member is 5 GiB and 1.5 KiB of tar).
/// Every byte read from the archive counts (members of every kind and skipped data too), so
/// a small compressed body cannot make the server decompress terabytes
/// (`400 EntityTooLarge`).
const MAX_EXTRACTED: u64 = MAX_PUT_SIZE + (1 << 30);

/// A spool file, unlinked as soon as it is created: nothing is left behind however the
/// process ends (a crash, an OOM kill, a container restart), and no other process can open
/// it; it was created readable by its owner only (it may hold an SSE upload's plaintext).
async fn create_spool() -> S3Result<tokio::fs::File> {
    let path =
        std::env::temp_dir().join(format!("grids3-snowball-{}", uuid::Uuid::new_v4().simple()));
    let file = tokio::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .await
        .map_err(|e| spool_error("creating a snowball spool file", e))?;
    tokio::fs::remove_file(&path)
        .await
        .map_err(|e| spool_error("unlinking a snowball spool file", e))?;
    Ok(file)
}

/// The archive in `spool`, from its start, decompressed when it is a gzip stream.
async fn archive(spool: &tokio::fs::File) -> S3Result<Reader<Box<dyn AsyncRead + Unpin + Send>>> {
    let mut file = spool
        .try_clone()
        .await
        .map_err(|e| spool_error("reading a snowball spool file", e))?;
    file.seek(std::io::SeekFrom::Start(0))
        .await
        .map_err(|e| spool_error("reading a snowball spool file", e))?;
    let mut buffered = BufReader::new(file);
    let gzip = tokio::io::AsyncBufReadExt::fill_buf(&mut buffered)
        .await
        .map(|b| b.starts_with(&[0x1f, 0x8b]))
        .unwrap_or(false);
    let source: Box<dyn AsyncRead + Unpin + Send> = if gzip {
        let mut d = async_compression::tokio::bufread::GzipDecoder::new(buffered);
        d.multiple_members(true);
        Box::new(d)
    } else {
        Box::new(buffered)
    };
    Ok(Reader::new(source, MAX_EXTRACTED))
}

/// PutObject with `X-Amz-Meta-Snowball-Auto-Extract: true`.
pub async fn extract(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let h = req.parts.headers.clone();
    if meta_header(&h, IGNORE_ERRORS).is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(S3Error::not_implemented().with_message(
            "X-Amz-Meta-Minio-Snowball-Ignore-Errors is not supported: an error ends the extraction",
        ));
    }
    let spec = WriteSpec::parse(&h)?;
    if spec.condition != WriteCondition::Always {
        return Err(S3Error::not_implemented().with_message(
            "Conditional headers are not supported on a snowball upload: the archive's key is never written",
        ));
    }
    let prefix = meta_header(&h, PREFIX).unwrap_or_default().to_owned();
    let ignore_dirs = meta_header(&h, IGNORE_DIRS).is_some_and(|v| v.eq_ignore_ascii_case("true"));
    req.require_length()?;
    let mut reader = req.body_reader()?;
    if reader.declared_len().is_some_and(|l| l > MAX_PUT_SIZE) {
        return Err(S3Error::entity_too_large());
    }
    static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(AT_ONCE);
    let Ok(Ok(_slot)) =
        tokio::time::timeout(std::time::Duration::from_secs(10), SLOTS.acquire()).await
    else {
        return Err(S3Error::slow_down()
            .with_message("Too many snowball uploads are being extracted: retry"));
    };
    // 1. The whole body into a spool file, verified as any PUT's body.
    let mut file = create_spool().await?;
    let mut md5 = Md5::new();
    let mut len: u64 = 0;
    while let Some(chunk) = reader.next().await? {
        len += chunk.len() as u64;
        if len > MAX_PUT_SIZE {
            return Err(S3Error::entity_too_large());
        }
        md5.update(&chunk);
        file.write_all(&chunk)
            .await
            .map_err(|e| spool_error("spooling a snowball upload", e))?;
    }
    file.flush()
        .await
        .map_err(|e| spool_error("spooling a snowball upload", e))?;
    if spec
        .md5
        .is_some_and(|m| m != <[u8; 16]>::from(md5.finalize()))
    {
        return Err(S3Error::bad_digest());
    }
    // 2. The whole archive read once without publishing anything: its headers, its sizes
    //    against the cap, a gzip stream's CRC. A damaged archive stores nothing.
    //    Each member's key is made here too, so that one over 1,024 bytes stores nothing, and
    //    the members to store are counted: past the bound, nothing is stored either (the cap
    //    on bytes alone lets 6 GiB of tar headers, a few MB gzipped, make 12 million empty
    //    objects).
    let max_members = st.config.snowball_max_members;
    let mut check = archive(&file).await?;
    let mut members = 0u64;
    while let Some(m) = check.next().await? {
        if key_of(&m, &prefix, ignore_dirs)?.is_some() {
            members += 1;
            if members > max_members {
                return Err(too_many_members(max_members));
            }
        }
    }
    check.finish().await?;
    // 3. The members, one by one, each published as a PutObject.
    let mut tar = archive(&file).await?;
    let who = Writer::of(st, &req, &b, spec);
    let mut stored = 0u64;
    while let Some(m) = tar.next().await? {
        let Some(key) = key_of(&m, &prefix, ignore_dirs)? else {
            continue;
        };
        who.member(st, &key, &mut tar, m.kind == Kind::File).await?;
        stored += 1;
    }
    let mut r = empty(StatusCode::OK);
    if let Ok(v) = HeaderValue::from_str(&stored.to_string()) {
        // How many objects the archive made (grids3's own header; MinIO answers nothing).
        r.headers_mut().insert("x-grids3-snowball-objects", v);
    }
    Ok(r)
}

/// The answer to an archive with more members to store than `max` (nothing was stored).
fn too_many_members(max: u64) -> S3Error {
    S3Error::invalid_request(format!(
        "The archive has more than {max} members to store, the most one snowball upload stores \
         (GRIDS3_SNOWBALL_MAX_MEMBERS); nothing was stored: split it into several archives"
    ))
}

/// The key a member is stored under (`None`: it is not stored: links and the like, `.`, and
/// directories with `-Ignore-Dirs`); `400 KeyTooLongError` past 1,024 bytes.
fn key_of(m: &super::tar::Member, prefix: &str, ignore_dirs: bool) -> S3Result<Option<String>> {
    if m.kind == Kind::Other || (m.kind == Kind::Dir && ignore_dirs) {
        return Ok(None);
    }
    let name = m.path.trim_start_matches("./").trim_start_matches('/');
    if name.is_empty() || name == "." {
        return Ok(None);
    }
    let mut key = if prefix.is_empty() {
        name.to_owned()
    } else {
        format!("{}/{name}", prefix.trim_end_matches('/'))
    };
    if m.kind == Kind::Dir && !key.ends_with('/') {
        key.push('/');
    }
    if key.len() > 1024 {
        return Err(S3Error::key_too_long());
    }
    Ok(Some(key))
}

/// Who writes the members, and how.
struct Writer {
    auth: crate::auth::Auth,
    facts: std::collections::HashMap<String, Vec<String>>,
    shape: crate::s3::actions::Shape,
    bucket: BucketInfo,
    spec: WriteSpec,
    origin: crate::notify::Origin,
}

impl Writer {
    fn of(st: &AppState, req: &S3Request, b: &BucketInfo, mut spec: WriteSpec) -> Self {
        spec.meta
            .user
            .retain(|(k, _)| k != AUTO_EXTRACT && !k.starts_with("minio-snowball-"));
        spec.meta.owner = Some(crate::s3::rules::ownership::owner_for_write(
            b,
            &req.auth,
            spec.canned_acl.as_deref(),
        ));
        Self {
            auth: req.auth.clone(),
            facts: authz::facts_of(st, req),
            shape: crate::s3::request::access::shape_of(&req.parts.headers, &req.query),
            bucket: b.clone(),
            spec,
            origin: crate::s3::events::origin(req),
        }
    }

    /// Authorizes, stores and publishes one member from `tar`'s current data (none for a
    /// directory: `data` is false).
    async fn member<R: AsyncRead + Unpin>(
        &self,
        st: &AppState,
        key: &str,
        tar: &mut Reader<R>,
        data: bool,
    ) -> S3Result<()> {
        let target = authz::Target {
            bucket: &self.bucket.name,
            key: Some(key),
            facts: &self.facts,
            shape: self.shape,
        };
        // The root key too: a bucket policy's explicit Deny binds it.
        let ex = authz::explain(st, &Op::PutObject, &self.auth, &target).await?;
        if !matches!(ex.access, Access::Granted | Access::GrantedUnlisted) {
            return Err(S3Error::access_denied().with_message(format!(
                "Access Denied: the archive's member {key} may not be written"
            )));
        }
        let mut meta = self.spec.meta.clone();
        meta.content_type = Some(content_type(key).to_owned());
        (meta.retention, meta.legal_hold) = crate::s3::rules::lock::for_new_object(
            &self.bucket,
            &self.spec.lock,
            st.store.meta().clock().now(),
        )?;
        let (mut up, sealed) =
            crate::s3::sse::open_upload(st, &self.bucket, key, self.spec.sse.clone()).await?;
        let mut buf = vec![0u8; 256 * 1024];
        let streamed: S3Result<()> = async {
            if !data {
                return Ok(());
            }
            loop {
                let n = tar.read(&mut buf).await?;
                if n == 0 {
                    return Ok(());
                }
                up.write(&buf[..n]).await?;
            }
        }
        .await;
        if let Err(e) = streamed {
            let _ = up.abort().await;
            return Err(e);
        }
        let digests = up.end().await?;
        crate::s3::write::set_content(&mut meta, sealed.as_ref(), &digests);
        let info = crate::s3::lookup::within_request_timeout(
            st,
            st.store
                .publish_if(&self.bucket.name, up, meta, &WriteCondition::Always),
        )
        .await??
        .map_err(blocked_error)?;
        let change = crate::s3::events::created(EventName::Put, &info);
        crate::s3::events::record(st, &self.bucket.name, &self.origin, &[change]).await
    }
}

/// A member's Content-Type, by its extension (MinIO guesses it the same way).
fn content_type(key: &str) -> &'static str {
    if key.ends_with('/') {
        return "application/octet-stream";
    }
    let ext = key
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "txt" | "log" => "text/plain",
        "html" | "htm" => "text/html",
        "css" => "text/css",
        "js" | "mjs" => "text/javascript",
        "json" => "application/json",
        "xml" => "application/xml",
        "csv" => "text/csv",
        "md" => "text/markdown",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "svg" => "image/svg+xml",
        "webp" => "image/webp",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        "gz" => "application/gzip",
        "tar" => "application/x-tar",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mp3" => "audio/mpeg",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}
