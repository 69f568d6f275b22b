//! The request body as the handlers see it: decoded (aws-chunked), length-checked, and
//! verified (payload SHA-256, chunk and trailer signatures, Content-MD5 is left to the caller
//! who has the engine's MD5, additional checksums) while it streams. Verification failures
//! surface as an error from [`BodyReader::next`] at the point they are known, so the caller
//! aborts the upload and nothing is stored.

use axum::body::{Body, BodyDataStream};
use axum::http::HeaderMap;
use bytes::{Buf, Bytes, BytesMut};
use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::sigv4;
use super::{Auth, Payload};
use crate::checksum::{Algorithm, Hasher};
use crate::error::{S3Error, S3Result};

/// Longest chunk-header or trailer line accepted.
const MAX_LINE: usize = 4096;
/// How long a request body may go without a byte before the request fails (RequestTimeout).
pub const BODY_IDLE: std::time::Duration = std::time::Duration::from_secs(60);

/// The slowest body accepted: at least this many bytes in every window of
/// [`MIN_RATE_WINDOW`] (1 KiB/s on average). A client dripping a byte every 20 s, which the
/// idle timeout alone never cuts, holds its connection and its upload slot for ever; it is
/// cut with RequestTimeout at the end of its first slow window.
pub const MIN_RATE_BYTES_PER_WINDOW: u64 = 30 * 1024;
/// See [`MIN_RATE_BYTES_PER_WINDOW`].
pub const MIN_RATE_WINDOW: std::time::Duration = std::time::Duration::from_secs(30);

/// The minimum-rate window of one body.
#[derive(Debug)]
struct RateWindow {
    ends: tokio::time::Instant,
    bytes: u64,
}

impl RateWindow {
    fn new() -> Self {
        Self {
            ends: tokio::time::Instant::now() + MIN_RATE_WINDOW,
            bytes: 0,
        }
    }

    /// Closes the windows that have ended: `false` if one fell short.
    fn settle(&mut self) -> bool {
        let now = tokio::time::Instant::now();
        while now >= self.ends {
            if self.bytes < MIN_RATE_BYTES_PER_WINDOW {
                crate::metrics::slow_body_cut();
                return false;
            }
            self.bytes = 0;
            self.ends += MIN_RATE_WINDOW;
        }
        true
    }
}

#[derive(Debug)]
enum State {
    /// Plain body.
    Raw,
    /// Expecting a chunk header line.
    ChunkHeader,
    /// Inside a chunk's data.
    ChunkData {
        remaining: u64,
        signature: Option<String>,
    },
    /// Expecting the CRLF after a chunk's data.
    ChunkEnd { signature: Option<String> },
    /// After the final chunk: trailers (or the closing CRLF).
    Trailers,
    /// Done and verified.
    Done,
}

/// A verified, decoded request body.
pub struct BodyReader {
    stream: BodyDataStream,
    buf: BytesMut,
    eof: bool,
    state: State,
    auth: Auth,
    chunk_hash: Option<Sha256>,
    prev_signature: String,
    payload_sha: Option<(Sha256, String)>,
    declared_len: Option<u64>,
    /// The client sent `Expect: 100-continue`: it waits to be told to send the body.
    awaits_continue: bool,
    received: u64,
    checksum: Option<(Algorithm, Hasher, Option<String>)>,
    verified_checksum: Option<(Algorithm, String)>,
    rate: Option<RateWindow>,
}

impl BodyReader {
    /// Wraps a body. `declared_len` is the decoded length the client announced
    /// (`x-amz-decoded-content-length` for aws-chunked, else Content-Length).
    pub fn new(body: Body, headers: &HeaderMap, auth: &Auth) -> S3Result<Self> {
        let chunked = matches!(
            auth.payload,
            Payload::StreamingSigned { .. } | Payload::StreamingUnsignedTrailer
        );
        let h = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
        let declared_len = if chunked {
            h("x-amz-decoded-content-length").and_then(|v| v.parse().ok())
        } else {
            h("content-length").and_then(|v| v.parse().ok())
        };
        let mut checksum = Algorithm::named_in(h, false)
            .map_err(S3Error::invalid_request)?
            .map(|(alg, v)| (alg, alg.hasher(), Some(v)));
        let from_trailer = h("x-amz-trailer").and_then(|t| {
            t.trim()
                .strip_prefix("x-amz-checksum-")
                .and_then(Algorithm::from_name)
        });
        // `x-amz-sdk-checksum-algorithm` names the algorithm of the checksum that comes in a
        // header or the trailer; as AWS does, it must be a known one, agree with that
        // checksum, and not come alone (grids3 used to compute a checksum nobody sent).
        if let Some(named) = h("x-amz-sdk-checksum-algorithm") {
            let invalid = || {
                S3Error::invalid_request(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid.",
                )
            };
            let alg = Algorithm::from_name(named.trim()).ok_or_else(invalid)?;
            match checksum.as_ref().map(|c| c.0).or(from_trailer) {
                Some(sent) if sent != alg => return Err(invalid()),
                Some(_) => {}
                None => return Err(S3Error::invalid_request(
                    "x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found.",
                )),
            }
        }
        if checksum.is_none() {
            if let Some(alg) = from_trailer {
                checksum = Some((alg, alg.hasher(), None));
            }
        }
        if let (Some(t), Payload::Sha256(_) | Payload::Unsigned) =
            (h("x-amz-trailer"), &auth.payload)
        {
            return Err(S3Error::invalid_request(format!(
                "x-amz-trailer {t} requires a STREAMING-*-TRAILER payload"
            )));
        }
        Ok(Self {
            stream: body.into_data_stream(),
            rate: None,
            buf: BytesMut::new(),
            eof: false,
            state: if chunked {
                State::ChunkHeader
            } else {
                State::Raw
            },
            chunk_hash: None,
            prev_signature: auth.signing.seed_signature.clone(),
            payload_sha: match &auth.payload {
                Payload::Sha256(h) => Some((Sha256::new(), h.clone())),
                _ => None,
            },
            auth: auth.clone(),
            declared_len,
            awaits_continue: h("expect").is_some_and(|v| v.eq_ignore_ascii_case("100-continue")),
            received: 0,
            checksum,
            verified_checksum: None,
        })
    }

    /// The declared decoded length, if any.
    pub fn declared_len(&self) -> Option<u64> {
        self.declared_len
    }

    /// Whether the client waits for `100 Continue` before it sends the body (so a refusal
    /// decided before the body is read spares it sending).
    pub fn awaits_continue(&self) -> bool {
        self.awaits_continue
    }

    /// The additional checksum, once the body has been read and it verified.
    pub fn checksum(&self) -> Option<&(Algorithm, String)> {
        self.verified_checksum.as_ref()
    }

    async fn fill(&mut self) -> S3Result<bool> {
        if self.eof {
            return Ok(false);
        }
        match self.next_raw().await? {
            Some(Ok(b)) => {
                self.buf.extend_from_slice(&b);
                Ok(true)
            }
            // The client went away or sent less than it announced.
            Some(Err(_)) => Err(S3Error::incomplete_body()),
            None => {
                self.eof = true;
                Ok(false)
            }
        }
    }

    /// The next piece of the body as sent, within the idle timeout and the minimum rate.
    async fn next_raw(&mut self) -> S3Result<Option<Result<Bytes, axum::Error>>> {
        let rate = self.rate.get_or_insert_with(RateWindow::new);
        let idle = tokio::time::Instant::now() + BODY_IDLE;
        loop {
            if !rate.settle() {
                return Err(S3Error::request_timeout());
            }
            tokio::select! {
                next = self.stream.next() => {
                    if let Some(Ok(b)) = &next {
                        rate.bytes += b.len() as u64;
                    }
                    return Ok(next);
                }
                // The window's end: settle it (cut, or go on waiting in the next one).
                _ = tokio::time::sleep_until(rate.ends.min(idle)) => {
                    if tokio::time::Instant::now() >= idle {
                        return Err(S3Error::request_timeout());
                    }
                }
            }
        }
    }

    async fn line(&mut self) -> S3Result<String> {
        loop {
            if let Some(pos) = self.buf.windows(2).position(|w| w == b"\r\n") {
                let line = self.buf.split_to(pos);
                self.buf.advance(2);
                return String::from_utf8(line.to_vec())
                    .map_err(|_| S3Error::invalid_argument("malformed aws-chunked encoding"));
            }
            if self.buf.len() > MAX_LINE {
                return Err(S3Error::invalid_argument(
                    "malformed aws-chunked encoding: line too long",
                ));
            }
            if !self.fill().await? {
                return Err(S3Error::incomplete_body());
            }
        }
    }

    fn data(&mut self, b: &[u8]) {
        self.received += b.len() as u64;
        if let Some((h, _)) = &mut self.payload_sha {
            h.update(b);
        }
        if let Some(h) = &mut self.chunk_hash {
            h.update(b);
        }
        if let Some((_, h, _)) = &mut self.checksum {
            h.update(b);
        }
    }

    fn verify_chunk(&mut self, signature: Option<String>) -> S3Result<()> {
        let hash = self.chunk_hash.take().map(|h| hex::encode(h.finalize()));
        if let (Payload::StreamingSigned { .. }, Some(sig)) = (&self.auth.payload, signature) {
            let s = &self.auth.signing;
            let expected = sigv4::chunk_signature(
                &s.key,
                &s.amz_date,
                &s.scope,
                &self.prev_signature,
                hash.as_deref().unwrap_or(sigv4::EMPTY_SHA256),
            );
            if !sigv4::signatures_equal(&expected, &sig) {
                return Err(S3Error::signature_does_not_match());
            }
            self.prev_signature = expected;
        } else if matches!(self.auth.payload, Payload::StreamingSigned { .. }) {
            return Err(S3Error::signature_does_not_match());
        }
        Ok(())
    }

    fn finish(&mut self, trailers: Vec<(String, String)>) -> S3Result<()> {
        if let Some(len) = self.declared_len {
            if self.received != len {
                return Err(S3Error::incomplete_body());
            }
        }
        if let Some((h, expected)) = self.payload_sha.take() {
            if hex::encode(h.finalize()) != expected {
                return Err(S3Error::content_sha256_mismatch());
            }
        }
        if let Some((alg, h, expected)) = self.checksum.take() {
            let actual = h.finish_base64();
            let expected = expected.or_else(|| {
                trailers
                    .iter()
                    .find(|(k, _)| *k == alg.header())
                    .map(|(_, v)| v.clone())
            });
            match expected {
                Some(e) if e != actual => {
                    return Err(S3Error::bad_digest().with_message(format!(
                        "The {} you specified did not match the calculated checksum.",
                        alg.header()
                    )))
                }
                _ => self.verified_checksum = Some((alg, actual)),
            }
        }
        self.state = State::Done;
        Ok(())
    }

    /// The next piece of decoded body; `None` once the whole body is read and verified.
    pub async fn next(&mut self) -> S3Result<Option<Bytes>> {
        loop {
            match std::mem::replace(&mut self.state, State::Done) {
                State::Done => return Ok(None),
                State::Raw => {
                    if !self.buf.is_empty() {
                        let b = self.buf.split().freeze();
                        self.data(&b);
                        self.state = State::Raw;
                        return Ok(Some(b));
                    }
                    if self.eof {
                        self.finish(Vec::new())?;
                        return Ok(None);
                    }
                    // A client that stops sending mid-body is cut off, as AWS does.
                    match self.next_raw().await? {
                        Some(Ok(b)) => {
                            self.data(&b);
                            self.state = State::Raw;
                            if let Some(len) = self.declared_len {
                                if self.received > len {
                                    return Err(S3Error::invalid_request(
                                        "body longer than Content-Length",
                                    ));
                                }
                            }
                            return Ok(Some(b));
                        }
                        Some(Err(_)) => return Err(S3Error::incomplete_body()),
                        None => {
                            self.finish(Vec::new())?;
                            return Ok(None);
                        }
                    }
                }
                State::ChunkHeader => {
                    let line = self.line().await?;
                    let (size, ext) = match line.split_once(';') {
                        Some((s, e)) => (s, Some(e)),
                        None => (line.as_str(), None),
                    };
                    let size = u64::from_str_radix(size.trim(), 16).map_err(|_| {
                        S3Error::invalid_argument("malformed aws-chunked encoding: chunk size")
                    })?;
                    let signature = ext
                        .and_then(|e| e.trim().strip_prefix("chunk-signature="))
                        .map(str::to_owned);
                    if matches!(self.auth.payload, Payload::StreamingSigned { .. }) {
                        self.chunk_hash = Some(Sha256::new());
                    }
                    if size == 0 {
                        self.verify_chunk(signature)?;
                        self.state = State::Trailers;
                    } else {
                        self.state = State::ChunkData {
                            remaining: size,
                            signature,
                        };
                    }
                }
                State::ChunkData {
                    remaining,
                    signature,
                } => {
                    if self.buf.is_empty() && !self.fill().await? {
                        return Err(S3Error::incomplete_body());
                    }
                    let n = (remaining as usize).min(self.buf.len());
                    let piece = self.buf.split_to(n).freeze();
                    self.data(&piece);
                    self.state = if remaining == n as u64 {
                        State::ChunkEnd { signature }
                    } else {
                        State::ChunkData {
                            remaining: remaining - n as u64,
                            signature,
                        }
                    };
                    return Ok(Some(piece));
                }
                State::ChunkEnd { signature } => {
                    let line = self.line().await?;
                    if !line.is_empty() {
                        return Err(S3Error::invalid_argument(
                            "malformed aws-chunked encoding: missing CRLF after chunk",
                        ));
                    }
                    self.verify_chunk(signature)?;
                    self.state = State::ChunkHeader;
                }
                State::Trailers => {
                    let mut trailers = Vec::new();
                    let mut trailer_sig = None;
                    loop {
                        // A body may end right after the final chunk (no trailers, no CRLF).
                        if self.buf.is_empty() && !self.fill().await? {
                            break;
                        }
                        let line = self.line().await?;
                        if line.is_empty() {
                            break;
                        }
                        let (k, v) = line
                            .split_once(':')
                            .ok_or_else(|| S3Error::invalid_argument("malformed trailer"))?;
                        let (k, v) = (k.trim().to_ascii_lowercase(), v.trim().to_owned());
                        if k == "x-amz-trailer-signature" {
                            trailer_sig = Some(v);
                        } else {
                            trailers.push((k, v));
                        }
                    }
                    if let Payload::StreamingSigned { trailer: true } = self.auth.payload {
                        let canonical: String =
                            trailers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
                        let s = &self.auth.signing;
                        let expected = sigv4::trailer_signature(
                            &s.key,
                            &s.amz_date,
                            &s.scope,
                            &self.prev_signature,
                            &canonical,
                        );
                        if !trailer_sig.is_some_and(|sig| sigv4::signatures_equal(&expected, &sig))
                        {
                            return Err(S3Error::signature_does_not_match());
                        }
                    }
                    self.finish(trailers)?;
                    return Ok(None);
                }
            }
        }
    }

    /// Reads the whole body into memory, up to `limit` bytes (for XML request bodies).
    pub async fn read_to_vec(&mut self, limit: usize) -> S3Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(b) = self.next().await? {
            if out.len() + b.len() > limit {
                return Err(S3Error::invalid_request("request body too large"));
            }
            out.extend_from_slice(&b);
        }
        Ok(out)
    }
}
