//! An upload's MD5 whose large pieces may be hashed later, by the shared engine, while the
//! upload goes on: the body is read and the chunks inserted without waiting for MD5, and
//! only the digest waits (see `engine.rs` for why the engine lets pieces gather).

use std::ops::Range;
use std::sync::Arc;

use super::engine::{self, Member, Owner, Piece, Stream, MIN_BYTES};
use super::EngineGone;

/// A running MD5 fed with shared pieces of content.
pub struct DeferredMd5 {
    stream: Arc<Stream>,
    member: Member,
    /// Pieces handed to the engine (for tests).
    handed: usize,
}

impl Default for DeferredMd5 {
    fn default() -> Self {
        Self::new()
    }
}

impl DeferredMd5 {
    pub fn new() -> Self {
        DeferredMd5 {
            stream: Stream::new(),
            member: Member::new(),
            handed: 0,
        }
    }

    /// Adds bytes `at` of `owner`. A large piece, while enough other uploads are hashing
    /// too, goes to the engine with its share of `owner` and is hashed later, together with
    /// theirs; anything else is hashed here, unless earlier pieces are still at the engine,
    /// where it then queues behind them. Returns at once, unless the engine is behind (see
    /// `engine::behind`): this upload then waits until its pieces are hashed.
    pub async fn push(&mut self, owner: Owner, at: Range<usize>) -> Result<(), EngineGone> {
        self.hand_over(owner, at)?;
        if engine::behind() {
            self.wait().await?;
        }
        Ok(())
    }

    fn hand_over(&mut self, owner: Owner, at: Range<usize>) -> Result<(), EngineGone> {
        let lanes_pay = at.len() >= MIN_BYTES && self.member.lanes_pay();
        let mut inner = self.stream.lock();
        if inner.failed {
            return Err(EngineGone);
        }
        let engine = match engine::engine() {
            Some(e) if lanes_pay || inner.at_engine => e,
            _ if inner.at_engine => {
                // The engine stopped while holding the stream's MD5.
                return Err(EngineGone);
            }
            _ => {
                let core = inner.core.as_mut().expect("not at the engine: held here");
                core.update(&(*owner).as_ref()[at]);
                return Ok(());
            }
        };
        let tell = self.stream.queue(&mut inner, Piece::new(owner, at));
        drop(inner);
        self.handed += 1;
        match tell {
            Some(s) => engine.take(s),
            None => {
                engine.queued();
                Ok(())
            }
        }
    }

    /// Pieces handed to the engine so far.
    #[cfg(test)]
    pub fn handed(&self) -> usize {
        self.handed
    }

    /// Adds `buf[from..]` and gives `buf` back once it is hashed (for content that is
    /// changed in place next: a sealed chunk).
    pub async fn push_owned(&mut self, buf: Vec<u8>, from: usize) -> Result<Vec<u8>, EngineGone> {
        let end = buf.len();
        let owner = Arc::new(buf);
        self.hand_over(owner.clone(), from..end)?;
        self.wait().await?;
        // The engine lets go of a piece before it tells that the stream left it.
        Ok(Arc::try_unwrap(owner).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// Waits until the engine has hashed every piece, hurrying it.
    async fn wait(&self) -> Result<(), EngineGone> {
        loop {
            let notified = self.stream.idle.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let inner = self.stream.lock();
                if inner.failed {
                    return Err(EngineGone);
                }
                if !inner.at_engine {
                    return Ok(());
                }
            }
            // A stopped engine fails the stream at its end, which notifies.
            if let Some(e) = engine::engine() {
                e.hurry(&self.stream);
            }
            notified.await;
        }
    }

    /// The digest of everything pushed, then `rest`.
    pub async fn digest_with(&self, rest: &[u8]) -> Result<[u8; 16], EngineGone> {
        self.wait().await?;
        let inner = self.stream.lock();
        let mut core = inner.core.clone().ok_or(EngineGone)?;
        drop(inner);
        core.update(rest);
        Ok(core.finalize())
    }
}

impl Drop for DeferredMd5 {
    fn drop(&mut self) {
        // Pieces still waiting need no hashing: the engine drops them and their buffers.
        self.stream.abandon();
        // An ended upload no longer makes others' pieces go to the lanes.
        self.member.leave();
    }
}
