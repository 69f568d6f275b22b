//! A write's hold on its metered bucket's room (issue 62): [`Meter`], inside every
//! [`ObjectWrite`] and part write. The declared length is held at the first byte when it is
//! known, else in steps as the body arrives, and exactly what is needed when a step does not
//! fit, so a write that fits is never refused for the step. A write that would pass the
//! limit fails there, and its upload is aborted (its chunks deleted) by the caller's usual
//! failure path. Publishing converts the hold into counted usage once; see `quota` for the
//! removal and fold sides.

use super::*;
use crate::storage::meta::{batch_gone, hold_lease, Counted, Hold, InFlight, PendingHold};

/// How much more a write of unknown length holds at a time.
const STEP: i64 = 8 << 20;
/// The mark of a counted files document (in `metadata`).
pub const COUNTED: &str = "s3Counted";

/// One write's hold on its bucket's room.
#[derive(Debug)]
pub struct Meter {
    meta: MetaStore,
    bucket: String,
    id: String,
    /// Objects it holds: 1 for an object, 0 for a part.
    objects: i64,
    /// The hold as last stored (by this write or its renewal), once it holds: every update
    /// names it by what is stored (see `meta::quota`).
    current: std::sync::Arc<std::sync::Mutex<Option<Hold>>>,
    /// A hold sent and not yet awaited (see [`Meter::expect_soon`]).
    pending: Option<PendingHold>,
    /// The body's declared length, if known: held whole at the first byte.
    expected: Option<i64>,
    /// Logical bytes written so far.
    written: i64,
    /// The logical size published (set before the files document is sent).
    size: i64,
    /// Set once the files document may have been sent: from then on only the janitor may
    /// release the hold, deciding by the object.
    publishing: bool,
    settled: bool,
    renew: Option<tokio::task::JoinHandle<()>>,
    /// Counted as a metered write in flight (see `meta::quota_flight`).
    _flight: InFlight,
}

impl Meter {
    pub(super) fn new(meta: MetaStore, bucket: &str, id: String, objects: i64) -> Self {
        Self {
            _flight: meta.metered_write(bucket),
            meta,
            bucket: bucket.to_owned(),
            id,
            objects,
            current: Default::default(),
            pending: None,
            expected: None,
            written: 0,
            size: 0,
            publishing: false,
            settled: false,
            renew: None,
        }
    }

    /// Holds room for `need` bytes in all (and the object), or fails with
    /// [`GridFsError::QuotaExceeded`].
    pub(super) async fn ensure(&mut self, need: i64) -> Result<()> {
        self.await_pending().await?;
        let held = self.current();
        if held.as_ref().is_some_and(|h| need <= h.bytes) {
            return Ok(());
        }
        // At most a step ahead of the bytes that arrived, so a client that declares a large
        // body and sends it slowly pins no more room than that. A declared length that cannot
        // fit now is refused at once, before its bytes are stored (a read; the holds are
        // what is exact).
        if held.is_none() {
            if let Some(e) = self.expected.filter(|e| *e > need + STEP) {
                let (c, account) = self.meta.refusing_counted(&self.bucket, e, 0).await?;
                if !c.fits(e, 0) {
                    return Err(GridFsError::QuotaExceeded(describe(
                        &c,
                        account,
                        e,
                        self.objects,
                    )));
                }
            }
        }
        let target = match self.expected {
            Some(e) => e.min(need + STEP).max(need),
            None => need + STEP,
        };
        // A declared body held whole has nothing smaller to fall back on: if it does not fit
        // now, it is refused now, rather than read until it passes the limit while its
        // partial hold keeps writes that fit from fitting. Only a body of unknown length (or
        // a declared one held a step at a time) falls back on exactly what it needs.
        let whole = self.expected == Some(target);
        for want in [target, need] {
            if whole && want == need && need < target {
                break;
            }
            let now = self.current();
            let took = match &now {
                // (Grown from what is stored, which a lost answer may have grown already.)
                Some(h) if want <= h.bytes => return Ok(()),
                Some(h) => self.meta.grow_hold(&self.bucket, h, want - h.bytes).await?,
                None => {
                    self.meta
                        .hold_batched(&self.bucket, &self.id, want, self.objects)
                        .await?
                }
            };
            if let Some(h) = took {
                *self.current.lock().expect("meter") = Some(h);
                if now.is_none() {
                    self.renew = Some(self.spawn_renewal());
                }
                return Ok(());
            }
            if want == need {
                break;
            }
        }
        if held.is_some() && self.meta.find_hold(&self.bucket, &self.id).await?.is_none() {
            return Err(GridFsError::Conflict(
                "the write's quota hold lapsed".into(),
            ));
        }
        Err(self.refusal(if whole { target } else { need }).await)
    }

    /// The hold as last stored, if it holds.
    fn current(&self) -> Option<Hold> {
        self.current.lock().expect("meter").clone()
    }

    /// The body's declared length, held by a hold sent now and awaited only when the write
    /// needs it: before anything of it is stored, and before it publishes. The caller
    /// (`ObjectWrite::expect`) sends it so only for a body that is stored when it publishes,
    /// whole. A small PUT's hold then travels while its body arrives and its revision is
    /// looked up, not before them (issue 62's cost: the hold's wait was most of it).
    async fn expect_soon(&mut self, length: i64) -> Result<()> {
        if self.current().is_some() {
            // Held already (a length declared again): grown now if short.
            return self.expect(length).await;
        }
        self.expected = Some(length);
        if self.pending.is_none() {
            let rx = (self.meta)
                .hold_queued(&self.bucket, &self.id, length, self.objects)
                .await;
            let (tx, answer) = tokio::sync::oneshot::channel();
            self.pending = Some(answer);
            self.renew = Some(self.renew_once_stored(rx, tx));
        }
        Ok(())
    }

    /// Renews a hold sent ahead from when it is stored, not from when the write first needs
    /// it: a client that declares a small body and sends it 20 s later must not find its hold
    /// lapsed and settled by the janitor (a false refusal, seen in review). The answer goes on
    /// to the meter (`pending`) as it came.
    fn renew_once_stored(
        &self,
        rx: PendingHold,
        tx: tokio::sync::oneshot::Sender<mongodb::error::Result<Option<Hold>>>,
    ) -> tokio::task::JoinHandle<()> {
        let (meta, bucket, current) =
            (self.meta.clone(), self.bucket.clone(), self.current.clone());
        crate::background::spawn("quota-hold", async move {
            let answer = rx.await.unwrap_or_else(|_| Err(batch_gone()));
            let stored = matches!(answer, Ok(Some(_)));
            if let Ok(Some(h)) = &answer {
                *current.lock().expect("meter") = Some(h.clone());
            }
            // (A meter gone meanwhile aborted this task and gives back what `current` holds.)
            let _ = tx.send(answer);
            if stored {
                renew_hold_while_current(meta, bucket, current).await;
            }
        })
    }

    /// Whether a hold was sent and not yet awaited.
    fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// Waits for the hold sent by [`Meter::expect_soon`], if one was: the write holds its
    /// declared length, or is refused as a write of that length would have been.
    async fn await_pending(&mut self) -> Result<()> {
        let Some(rx) = self.pending.take() else {
            return Ok(());
        };
        match rx.await.unwrap_or_else(|_| Err(batch_gone()))? {
            Some(h) => {
                self.adopt(h);
                Ok(())
            }
            None => Err(self.refusal(self.expected.unwrap_or_default()).await),
        }
    }

    /// Takes the sent hold's answer if it came, so that it is renewed while a slow body
    /// arrives (its lease runs from when it was stored).
    fn adopt_ready(&mut self) {
        let Some(rx) = &mut self.pending else {
            return;
        };
        match rx.try_recv() {
            Ok(Ok(Some(h))) => {
                self.pending = None;
                self.adopt(h);
            }
            // A refusal or an error is kept for `await_pending` to answer.
            Ok(other) => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(other);
                self.pending = Some(rx);
            }
            Err(_) => {}
        }
    }

    /// The hold now stored for this write: kept and renewed. (A hold sent ahead is kept by
    /// its renewal from when it was stored, and may be renewed already: that one stays.)
    fn adopt(&mut self, h: Hold) {
        {
            let mut c = self.current.lock().expect("meter");
            if c.as_ref().is_none_or(|x| x.id != h.id) {
                *c = Some(h);
            }
        }
        if self.renew.is_none() {
            self.renew = Some(self.spawn_renewal());
        }
    }

    /// Why a write of `need` bytes was refused: the limit and the usage.
    async fn refusal(&self, need: i64) -> GridFsError {
        let held = self.current();
        let (c, account) = self
            .meta
            .refusing_counted(
                &self.bucket,
                need - held.as_ref().map_or(0, |h| h.bytes),
                if held.is_some() { 0 } else { self.objects },
            )
            .await
            .unwrap_or_default();
        GridFsError::QuotaExceeded(describe(&c, account, need, self.objects))
    }

    fn spawn_renewal(&self) -> tokio::task::JoinHandle<()> {
        let (meta, bucket, current) =
            (self.meta.clone(), self.bucket.clone(), self.current.clone());
        crate::background::spawn(
            "quota-hold",
            renew_hold_while_current(meta, bucket, current),
        )
    }

    /// The hold's id (the write's file id).
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The body's declared length: held now (all of it, or a step of a large one).
    pub(super) async fn expect(&mut self, length: i64) -> Result<()> {
        self.expected = Some(length);
        self.ensure(self.written).await
    }

    /// Before publishing: the final size held.
    async fn before_publish(&mut self, size: i64) -> Result<()> {
        self.ensure(size).await?;
        self.size = size;
        Ok(())
    }

    /// After the files document was written: the hold becomes counted usage, with the other
    /// conversions waiting for the bucket, and the request does not wait for it (the hold
    /// already counts against the limit; only which counter holds it changes). A failure, or
    /// a process that dies first, leaves the hold to lapse and the janitor to count it (the
    /// object is published).
    pub(super) async fn published(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        self.settled = true;
        // (Publishing held its size first: there is a hold.)
        if let Some(h) = self.current() {
            self.meta.settle_later(&self.bucket, &h, self.size, 1).await;
        }
    }

    /// The hold was settled by the caller's own transaction (a part's commit).
    pub(super) fn settled(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        self.settled = true;
    }

    /// Logical bytes written so far.
    pub(super) fn written(&self) -> i64 {
        self.written
    }

    /// Logical bytes written so far, counting `more`.
    pub(super) fn add_written(&mut self, more: i64) -> i64 {
        self.written += more;
        self.written
    }

    /// Gives the hold back (the write failed before publishing).
    pub(super) async fn release(&mut self) {
        if let Some(rx) = self.pending.take() {
            if let Ok(Ok(Some(h))) = rx.await {
                *self.current.lock().expect("meter") = Some(h);
            }
        }
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        let Some(h) = self.current() else {
            return;
        };
        if self.publishing || self.settled {
            return;
        }
        self.settled = true;
        if let Err(e) = self.meta.settle_hold(&self.bucket, &h, 0, 0).await {
            tracing::warn!(bucket = %self.bucket, error = %e, "could not release a quota hold; it lapses");
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        if let Some(r) = self.renew.take() {
            r.abort();
        }
        // A hold still on its way: given back once it is stored. (Nothing was stored or
        // sent to publish before it was awaited.)
        if let Some(rx) = self.pending.take() {
            let (meta, bucket) = (self.meta.clone(), self.bucket.clone());
            crate::background::spawn("quota-release", async move {
                if let Ok(Ok(Some(h))) = rx.await {
                    if let Err(e) = meta.settle_hold(&bucket, &h, 0, 0).await {
                        tracing::warn!(bucket, error = %e, "could not release a quota hold; it lapses");
                    }
                }
            });
        }
        let held = self.current();
        if let (Some(hold), false, false) = (held, self.publishing, self.settled) {
            // A cancelled request: nothing was sent that could publish, so the room goes back.
            let (meta, bucket) = (self.meta.clone(), self.bucket.clone());
            crate::background::spawn("quota-release", async move {
                if let Err(e) = meta.settle_hold(&bucket, &hold, 0, 0).await {
                    tracing::warn!(bucket, error = %e, "could not release a quota hold; it lapses");
                }
            });
        }
    }
}

/// Renews the hold in `current` every third of its lease, from now, for as long as there is
/// one and it is stored.
async fn renew_hold_while_current(
    meta: MetaStore,
    bucket: String,
    current: std::sync::Arc<std::sync::Mutex<Option<Hold>>>,
) {
    let mut tick = tokio::time::interval(hold_lease(&bucket) / 3);
    tick.tick().await;
    loop {
        tick.tick().await;
        let Some(h) = current.lock().expect("meter").clone() else {
            return;
        };
        match meta.renew_hold(&bucket, &h).await {
            // (A growth meanwhile may leave this behind what is stored; the next update that
            // names it reads what is.)
            Ok(Some(renewed)) => {
                *current.lock().expect("meter") = Some(renewed);
                // (Where a test counts renewals.)
                crate::failpoint::hit("quota.hold_renewed", &bucket).await;
            }
            // Settled by the janitor: this write will not publish (its tombstone).
            Ok(None) => return,
            Err(e) => tracing::warn!(bucket, error = %e, "could not renew a quota hold"),
        }
    }
}

/// The limit and the usage, for a refusal's message.
fn describe(c: &Counted, account: bool, need: i64, objects: i64) -> String {
    let limit = |l: Option<i64>, what: &str| {
        l.map_or(format!("no limit on {what}"), |n| format!("{n} {what}"))
    };
    let adds = if objects > 0 {
        format!("{need} bytes and {objects} object")
    } else {
        format!("{need} bytes")
    };
    if account {
        // The account's usage spans buckets whose writers need not see each other's (an
        // anonymous writer of a public bucket, say): only its limit is told.
        return format!(
            "the account's limit {}, {} has no room for this write, which needs {adds}",
            limit(c.limits.bytes, "bytes"),
            limit(c.limits.objects, "objects"),
        );
    }
    format!(
        "limit {}, {}; usage {} bytes, {} objects (counting writes in progress); \
         this write needs {adds}",
        limit(c.limits.bytes, "bytes"),
        limit(c.limits.objects, "objects"),
        c.used_bytes(),
        c.used_objects(),
    )
}

impl ObjectWrite {
    /// Writes bytes of the object, holding their room first in a metered bucket.
    pub async fn write(&mut self, data: &[u8]) -> Result<()> {
        if let Some(m) = &mut self.meter {
            let need = m.written + data.len() as i64;
            // A hold on its way covers what stays in memory until it is awaited.
            let covered = m.is_pending()
                && m.expected.is_some_and(|e| need <= e)
                && self.upload.keeps_back(need as u64);
            if covered {
                m.adopt_ready();
            } else {
                m.ensure(need).await?;
            }
            m.written = need;
        }
        self.written += data.len() as i64;
        self.upload.write(data).await
    }

    /// A meter made at publish (the bucket was metered after this write began) holds what
    /// was written, like one made at the start.
    pub(super) fn late_meter(&mut self) {
        if let Some(m) = &mut self.meter {
            m.written = self.written;
        }
    }

    /// The body's declared length: a metered write holds its room (all of it, or a step of
    /// a large one) now, before a byte of the body is read, so a body that cannot fit is
    /// refused before its client is told to send it (no `100 Continue`).
    pub async fn expect(&mut self, length: u64) -> Result<()> {
        if let Some(m) = &mut self.meter {
            m.expect(length as i64).await?;
        }
        Ok(())
    }

    /// [`ObjectWrite::expect`] for a client that sends its body unasked. A body that is
    /// stored only when it publishes, whole (one chunk, in a GridFS bucket), has its hold sent
    /// now and awaited before anything is stored, so it travels while the body arrives and
    /// the revision is looked up (most of what a limit cost a small PUT was this wait). Such
    /// a body that cannot fit is refused once it has arrived (a chunk at most), still before
    /// a byte of it is stored. Any other body is held now, as `expect` does.
    pub async fn expect_soon(&mut self, length: u64) -> Result<()> {
        if let Some(m) = &mut self.meter {
            if !self.content && self.reference.is_none() && self.upload.keeps_back(length) {
                m.expect_soon(length as i64).await?;
            } else {
                m.expect(length as i64).await?;
            }
        }
        Ok(())
    }

    /// [`Upload::end`], once a hold on its way is stored if anything is to be sent now.
    pub async fn end(&mut self) -> Result<crate::storage::gridfs::Digests> {
        if let Some(m) = &mut self.meter {
            if m.is_pending() && !self.upload.keeps_back(self.upload.length()) {
                m.ensure(m.written).await?;
            }
        }
        self.upload.end().await
    }

    /// [`Upload::flush`], once a hold on its way is stored.
    pub async fn flush(&mut self) -> Result<crate::storage::gridfs::Digests> {
        if let Some(m) = self.meter.as_mut().filter(|m| m.is_pending()) {
            m.ensure(m.written).await?;
        }
        self.upload.flush().await
    }

    /// The object's logical size as published.
    fn logical_length(&self) -> i64 {
        match (&self.reference, &self.meter) {
            (Some((_, d)), _) => d.length as i64,
            (None, Some(m)) => m.written,
            (None, None) => 0,
        }
    }

    /// Before its files document is sent: holds the final size and marks `meta` counted.
    pub(super) async fn before_publish(&mut self, meta: &mut ObjectMeta) -> Result<()> {
        let size = self.logical_length();
        if let Some(m) = &mut self.meter {
            m.before_publish(size).await?;
            meta.other.insert(COUNTED, true);
        }
        Ok(())
    }

    /// Right before its files document is sent: from here on only the janitor may give the
    /// room back, deciding by whether the object exists.
    pub(super) fn sending(&mut self) {
        if let Some(m) = &mut self.meter {
            m.publishing = true;
        }
    }

    /// After its files document was written.
    pub(super) async fn published(&mut self) {
        if let Some(m) = &mut self.meter {
            m.published().await;
        }
    }

    /// Gives the room back (the write is being abandoned).
    pub(super) async fn release_room(&mut self) {
        if let Some(m) = &mut self.meter {
            m.release().await;
        }
    }
}

/// The mark a metered upload's object carries, as a metered publish sets it.
pub(super) fn mark_counted(meta: &mut ObjectMeta) {
    meta.other.insert(COUNTED, true);
}
