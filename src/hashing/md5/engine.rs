//! The shared MD5 engine: one thread that hashes the large pieces of many uploads together,
//! 16 at a time in the lanes of `lanes.rs`.
//!
//! An upload does not wait for its pieces (see `deferred.rs`): it hands each over with a
//! share of the buffer its chunk is inserted from, and goes on reading its body and inserting
//! while the piece waits here; only its digest, at the end, waits for the engine. So the
//! engine is free to let pieces gather: it starts hashing once every lane has an upload's
//! pieces ([`FULL_AT`]), once the oldest of them waited [`DEFER`], once it holds [`HELD_MAX`]
//! bytes of pieces, or at once when an upload waits for its result, and it stops as soon as
//! none of these holds. k busy lanes cost 16/k of one,
//! so lanes that run full are what makes the MD5 of many uploads cheap; hashing each piece as
//! it came, the lanes ran about a quarter full and a quarter of the bytes went through the
//! one-message function.
//!
//! What the engine holds is bounded by itself, beside the upload budget (which a chunk's insert
//! gives back whether or not its MD5 is done: uploads never wait for budget that only MD5
//! holds). From twice [`HELD_MAX`] ([`behind`]) an upload waits for its own pieces before it
//! hands more over.
//!
//! Each upload's pieces are hashed in their order: the engine holds an upload (its
//! [`Stream`]) in one lane at most, piece after piece. A piece goes to the engine only while
//! at least [`JOIN_AT`] open uploads hashed large pieces lately (within [`LATELY`]), or while
//! its upload has pieces there still: one to three uploads hash in place, each on its own core
//! (the engine's one thread would hash a lone upload no faster, and two or three at about
//! two thirds of that each, in lanes that run mostly empty).

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use super::lanes::{self, LANES};
use super::{EngineGone, Md5};

/// Pieces smaller than this are hashed in place (a hand-over costs a few microseconds).
pub const MIN_BYTES: usize = 64 * 1024;

/// Uploads that hashed large pieces lately from which pieces go to the engine.
const JOIN_AT: usize = 4;

/// How far back "lately" reaches for routing: open uploads whose last large piece is within
/// it. An upload hands a piece over each time a chunk fills, so this must span the time
/// between one upload's chunks at the rates the database takes: 16 uploads sharing 55-70 MB/s
/// fill a 255 KiB chunk each about every 60-75 ms, in bursts (they wait for the upload budget
/// and the database together), and with 25 ms (the value until the twelfth session) most of
/// their pieces were hashed in place as one message (9% of the gateway's CPU beside the
/// lanes' 8%; BENCHMARKS.md). Only open uploads count (see [`Recent`]), so one to three fast
/// uploads, or one client's PUTs one after another, are one to three however wide the window.
const LATELY: Duration = Duration::from_millis(250);

/// Ids of [`Member`]s.
static NEXT_MEMBER: AtomicU64 = AtomicU64::new(0);

/// The open uploads that hashed a large piece, in place or by the engine, each with when it
/// last did; an upload leaves when its MD5 is dropped. (Until the twelfth session this was a
/// ring of the last 64 pieces, in which finished uploads went on counting until pushed out,
/// and which at high rates reached back less far than the window: found in review.)
#[derive(Default)]
struct Recent(Vec<(u64, Instant)>);

impl Recent {
    /// Records a large piece of upload `who` at `now`.
    fn note(&mut self, who: u64, now: Instant) {
        match self.0.iter_mut().find(|(w, _)| *w == who) {
            Some(e) => e.1 = now,
            None => self.0.push((who, now)),
        }
    }

    /// Upload `who` ended.
    fn leave(&mut self, who: u64) {
        self.0.retain(|(w, _)| *w != who);
    }

    /// The uploads whose last large piece lies within `window` before `now`.
    fn within(&self, now: Instant, window: Duration) -> usize {
        self.0
            .iter()
            .filter(|(_, t)| now.saturating_duration_since(*t) <= window)
            .count()
    }
}

static RECENT: Mutex<Recent> = Mutex::new(Recent(Vec::new()));

/// An upload, as the engine tells uploads apart.
#[derive(Clone, Copy)]
pub struct Member(u64);

impl Member {
    pub fn new() -> Self {
        Member(NEXT_MEMBER.fetch_add(1, Ordering::Relaxed))
    }

    /// Records a large piece of this upload, and says whether enough uploads hashed large
    /// pieces lately for the lanes to pay.
    pub fn lanes_pay(self) -> bool {
        let now = Instant::now();
        let mut recent = lock(&RECENT);
        recent.note(self.0, now);
        recent.within(now, LATELY) >= JOIN_AT
    }

    /// The upload ended: it no longer counts for routing.
    pub fn leave(self) {
        lock(&RECENT).leave(self.0);
    }
}

/// Uploads with pieces waiting from which the engine starts hashing without waiting longer:
/// all lanes. Below it, the engine hashes only what it must (see [`DEFER`]) and lets the
/// rest gather: uploads hand pieces over in bursts (each reads its body while it has budget,
/// then waits for the database), so an engine that hashed whenever a dozen lanes had work
/// ran the bursts' tails in lanes about 7 of 16 full (measured; 11 to 12 with this rule).
const FULL_AT: usize = LANES;

/// Pieces from which the engine hashes in the lanes: 16 lanes cost 0.16 s/GiB and one
/// message alone 1.66 s/GiB here, so two busy lanes already pay (1.3 s/GiB each). With AVX2
/// (passes of 8 lanes; an AMD EPYC): 16 lanes 0.37 s/GiB, one message 2.04, two busy lanes
/// of a pass 1.48 s/GiB each, so two still pay.
const LANES_AT: usize = 2;

/// Blocks a lane hashes per pass (16 KiB), so that pieces arriving meanwhile join soon.
const PASS_BLOCKS: usize = 256;

/// How long a piece waits for others at most, unless the engine holds [`HELD_MAX`] first or
/// its upload waits for its digest. What it costs is memory, not latency: the chunk's buffer
/// goes back to the pool that much later (the insert does not wait for the hash), and what
/// the engine holds is bounded by [`HELD_MAX`] whatever the wait. 30 ms ran the lanes about
/// 7 of 16 full at 16 uploads of 16 MiB; 300 ms about 10.5 (the rest of the gain is
/// [`FULL_AT`]).
const DEFER: Duration = Duration::from_millis(300);

/// Bytes of pieces held from which the engine hashes without waiting longer, until it holds
/// less.
pub const HELD_MAX: usize = 8 * 1024 * 1024;

/// Bytes of pieces queued or in lanes.
static HELD: AtomicUsize = AtomicUsize::new(0);

/// The engine holds as many bytes of pieces as it lets wait.
fn full() -> bool {
    HELD.load(Ordering::Relaxed) >= HELD_MAX
}

/// The engine holds twice [`HELD_MAX`]: it hashes more slowly than uploads come in (one
/// thread against many fast uploads, or starved of CPU), and uploads wait for their own
/// pieces before they hand more over, so that what it holds stays bounded.
pub fn behind() -> bool {
    HELD.load(Ordering::Relaxed) >= 2 * HELD_MAX
}

/// Locks `m`, poisoned or not: every critical section here leaves consistent state at every
/// point a panic could leave it (the engine's own end marks what it held as failed).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Counts `bytes` more (or fewer) as held, as if pieces were waiting (for tests of the bound).
#[cfg(test)]
pub fn pretend_held(bytes: usize, more: bool) {
    match more {
        true => HELD.fetch_add(bytes, Ordering::Relaxed),
        false => HELD.fetch_sub(bytes, Ordering::Relaxed),
    };
}

/// Passes of the lanes so far (for tests: that pieces were hashed together).
static LANE_PASSES: AtomicUsize = AtomicUsize::new(0);

#[cfg(test)]
pub fn lane_passes() -> usize {
    LANE_PASSES.load(Ordering::Relaxed)
}

/// The bytes a piece is part of: a chunk document, shared with its insert.
pub type Owner = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// Bytes `at` of `owner`, in an upload's content.
pub struct Piece {
    owner: Owner,
    at: Range<usize>,
    arrived: Instant,
}

impl Drop for Piece {
    fn drop(&mut self) {
        HELD.fetch_sub(self.at.len(), Ordering::Relaxed);
    }
}

impl Piece {
    pub fn new(owner: Owner, at: Range<usize>) -> Self {
        HELD.fetch_add(at.len(), Ordering::Relaxed);
        Piece {
            owner,
            at,
            arrived: Instant::now(),
        }
    }

    fn bytes(&self) -> &[u8] {
        &(*self.owner).as_ref()[self.at.clone()]
    }
}

/// One upload's MD5 as the engine sees it.
pub struct Stream {
    inner: Mutex<Inner>,
    /// Its upload waits for the engine to finish its pieces.
    urgent: AtomicBool,
    /// Its upload went away: its pieces need no hashing.
    abandoned: AtomicBool,
    /// Told when the stream leaves the engine (or fails).
    pub idle: tokio::sync::Notify,
}

pub struct Inner {
    /// The running MD5; `None` while the engine holds it.
    pub core: Option<Md5>,
    /// Pieces not yet started, in order.
    queue: VecDeque<Piece>,
    /// The stream is in the engine's hands (waiting or in a lane): pieces queue behind.
    pub at_engine: bool,
    /// The engine stopped while holding it: its digest cannot be known.
    pub failed: bool,
}

impl Stream {
    pub fn new() -> Arc<Self> {
        Arc::new(Stream {
            inner: Mutex::new(Inner {
                core: Some(Md5::new()),
                queue: VecDeque::new(),
                at_engine: false,
                failed: false,
            }),
            urgent: AtomicBool::new(false),
            abandoned: AtomicBool::new(false),
            idle: tokio::sync::Notify::new(),
        })
    }

    pub fn lock(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    pub fn abandon(&self) {
        self.abandoned.store(true, Ordering::Release);
    }

    /// Queues `piece` behind the stream's others; `Some(stream)` when the engine must be
    /// told of the stream (it was not in its hands).
    pub fn queue(self: &Arc<Self>, inner: &mut Inner, piece: Piece) -> Option<Arc<Self>> {
        inner.queue.push_back(piece);
        let tell = !inner.at_engine;
        inner.at_engine = true;
        tell.then(|| self.clone())
    }

    fn fail(&self) {
        let mut inner = self.lock();
        inner.failed = true;
        inner.queue.clear();
        drop(inner);
        self.idle.notify_waiters();
    }
}

#[derive(Default)]
struct Shared {
    /// Streams with pieces, not yet in a lane.
    ready: VecDeque<Arc<Stream>>,
    /// Streams in lanes, as of the engine's last look.
    busy: usize,
    /// The engine waits for pieces without a deadline.
    idle: bool,
}

pub struct Engine {
    shared: Mutex<Shared>,
    wake: Condvar,
    alive: AtomicBool,
}

/// The engine, started on first use; `None` when this CPU has no lanes or the engine
/// stopped.
pub fn engine() -> Option<&'static Engine> {
    static ENGINE: OnceLock<Option<Arc<Engine>>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            if !lanes::available() {
                return None;
            }
            let e = Arc::new(Engine {
                shared: Mutex::new(Shared::default()),
                wake: Condvar::new(),
                alive: AtomicBool::new(true),
            });
            let run = e.clone();
            std::thread::Builder::new()
                .name("md5-lanes".into())
                .spawn(move || run.run())
                .ok()?;
            Some(e)
        })
        .as_deref()
        .filter(|e| e.alive.load(Ordering::Acquire))
}

/// A stream in a lane, with its MD5 and the piece it is on.
struct Job {
    stream: Arc<Stream>,
    core: Option<Md5>,
    piece: Option<Piece>,
    /// The whole blocks of the piece still to hash.
    at: Range<usize>,
}

impl Drop for Job {
    fn drop(&mut self) {
        // Only an engine that panicked drops a job still holding the MD5: the upload fails
        // rather than publish a wrong ETag.
        if self.core.is_some() {
            self.stream.fail();
        }
    }
}

impl Job {
    /// Starts `piece`: completes a block left incomplete by the previous piece in place, so
    /// that the lanes get whole blocks.
    fn start(&mut self, piece: Piece) {
        let core = self.core.as_mut().expect("a job holds its MD5");
        let d = piece.bytes();
        let lead = if core.tail_len > 0 {
            (64 - core.tail_len).min(d.len())
        } else {
            0
        };
        core.update(&d[..lead]);
        let whole = (d.len() - lead) / 64 * 64;
        // Counted now; the state catches up pass by pass.
        core.length += whole as u64;
        self.at = piece.at.start + lead..piece.at.start + lead + whole;
        self.piece = Some(piece);
    }

    fn data(&self) -> &[u8] {
        let p = self.piece.as_ref().expect("a job in a lane has a piece");
        &(*p.owner).as_ref()[self.at.clone()]
    }

    fn arrived(&self) -> Instant {
        self.piece.as_ref().map_or_else(Instant::now, |p| p.arrived)
    }
}

impl Engine {
    /// Tells the engine of a stream that has pieces now.
    pub fn take(&self, stream: Arc<Stream>) -> Result<(), EngineGone> {
        let mut sh = lock(&self.shared);
        // Checked under the lock that the thread's end empties `ready` under: a stream is
        // either refused here or failed there, never left waiting.
        if !self.alive.load(Ordering::Acquire) {
            drop(sh);
            stream.fail();
            return Err(EngineGone);
        }
        sh.ready.push_back(stream);
        // A waiting engine with a deadline is woken only when it need not wait any longer.
        if sh.idle || full() || sh.ready.len() + sh.busy >= FULL_AT {
            self.wake.notify_one();
        }
        Ok(())
    }

    /// Wakes the engine when a piece queued behind a stream's others made it hold
    /// [`HELD_MAX`].
    pub fn queued(&self) {
        if full() {
            let _sh = lock(&self.shared);
            self.wake.notify_one();
        }
    }

    /// Wakes the engine to look at `urgent` streams, and puts this one first for a lane.
    pub fn hurry(&self, stream: &Stream) {
        stream.urgent.store(true, Ordering::Release);
        let mut sh = lock(&self.shared);
        first_in_line(&mut sh.ready, stream);
        self.wake.notify_one();
    }

    fn run(&self) {
        // A panic (a bug) ends the thread: the streams it holds fail their uploads (the jobs'
        // drops and this guard), and later pieces are hashed in place.
        struct Dead<'a>(&'a Engine);
        impl Drop for Dead<'_> {
            fn drop(&mut self) {
                let mut sh = lock(&self.0.shared);
                self.0.alive.store(false, Ordering::Release);
                let ready = std::mem::take(&mut sh.ready);
                drop(sh);
                for s in ready {
                    s.fail();
                }
            }
        }
        let _dead = Dead(self);
        let mut busy: Vec<Job> = Vec::with_capacity(LANES);
        loop {
            {
                let mut sh = lock(&self.shared);
                loop {
                    fill(&mut busy, &mut sh);
                    sh.busy = busy.len();
                    let Some(first) = busy.iter().map(Job::arrived).min() else {
                        sh.idle = true;
                        sh = self.wake.wait(sh).unwrap_or_else(|e| e.into_inner());
                        sh.idle = false;
                        continue;
                    };
                    let due = first + DEFER;
                    let now = Instant::now();
                    let urgent = busy.iter().any(|j| j.stream.urgent.load(Ordering::Acquire));
                    if hash_now(
                        busy.len(),
                        full(),
                        now.saturating_duration_since(first),
                        urgent,
                    ) {
                        break;
                    }
                    sh = self
                        .wake
                        .wait_timeout(sh, due - now)
                        .map(|(sh, _)| sh)
                        .unwrap_or_else(|e| e.into_inner().0);
                }
            }
            if busy.len() >= LANES_AT {
                pass_lanes(&mut busy);
            } else {
                for j in &mut busy {
                    let n = j.at.len().min(PASS_BLOCKS * 64);
                    let end = j.at.start + n;
                    let piece = j.piece.as_ref().expect("a job in a lane has a piece");
                    let d = &(*piece.owner).as_ref()[j.at.start..end];
                    super::compress(&mut j.core.as_mut().expect("held").state, d);
                    j.at.start = end;
                }
            }
            advance(&mut busy);
        }
    }
}

/// Whether the engine hashes now, with `busy` lanes holding pieces, the oldest of which
/// waited `waited`, or waits for more to gather (see [`FULL_AT`], [`DEFER`]).
fn hash_now(busy: usize, held_full: bool, waited: Duration, urgent: bool) -> bool {
    busy >= FULL_AT || held_full || waited >= DEFER || urgent
}

/// Moves `stream` to the front of `ready` if it waits there. An upload that waits for its
/// digest while every lane is taken would otherwise wait behind the streams queued before it,
/// each of which may keep its lane as long as its upload keeps handing pieces over (found in
/// review; lanes run full more often since [`FULL_AT`] is all of them).
fn first_in_line(ready: &mut VecDeque<Arc<Stream>>, stream: &Stream) {
    if let Some(i) = ready.iter().position(|s| std::ptr::eq(&**s, stream)) {
        if let Some(s) = ready.remove(i) {
            ready.push_front(s);
        }
    }
}

/// Moves streams with pieces into free lanes, each with its first piece.
fn fill(busy: &mut Vec<Job>, sh: &mut Shared) {
    while busy.len() < LANES {
        let Some(stream) = sh.ready.pop_front() else {
            break;
        };
        let mut inner = stream.lock();
        let piece = if stream.abandoned.load(Ordering::Acquire) {
            inner.queue.clear();
            None
        } else {
            inner.queue.pop_front()
        };
        let Some(piece) = piece else {
            inner.at_engine = false;
            drop(inner);
            stream.idle.notify_waiters();
            continue;
        };
        let core = inner.core.take();
        drop(inner);
        let mut job = Job {
            stream,
            core,
            piece: None,
            at: 0..0,
        };
        job.start(piece);
        busy.push(job);
    }
    advance(busy);
}

/// Ends the pieces whose blocks are all hashed: a stream goes on with its next piece, or
/// leaves its lane with its MD5 given back.
fn advance(busy: &mut Vec<Job>) {
    let mut i = 0;
    while i < busy.len() {
        let j = &mut busy[i];
        if !j.at.is_empty() {
            i += 1;
            continue;
        }
        let piece = j.piece.take().expect("a job in a lane has a piece");
        let core = j.core.as_mut().expect("a job holds its MD5");
        core.update(&(*piece.owner).as_ref()[j.at.end..piece.at.end]);
        // The share of the buffer goes before the upload hears of it (a sealed chunk's
        // upload takes its buffer back then).
        drop(piece);
        let mut inner = j.stream.lock();
        let next = if j.stream.abandoned.load(Ordering::Acquire) {
            inner.queue.clear();
            None
        } else {
            inner.queue.pop_front()
        };
        match next {
            Some(p) => {
                drop(inner);
                j.start(p);
            }
            None => {
                inner.core = j.core.take();
                inner.at_engine = false;
                j.stream.urgent.store(false, Ordering::Release);
                drop(inner);
                let j = busy.swap_remove(i);
                j.stream.idle.notify_waiters();
            }
        }
    }
}

/// One pass of the lanes over every busy piece, as far as the shortest one reaches (at most
/// [`PASS_BLOCKS`]); idle lanes repeat the first piece and their results are dropped.
fn pass_lanes(busy: &mut [Job]) {
    let blocks = busy
        .iter()
        .map(|j| j.at.len() / 64)
        .min()
        .unwrap_or(0)
        .min(PASS_BLOCKS);
    if blocks == 0 {
        return;
    }
    let mut states = [[0u32; 4]; LANES];
    for (s, j) in states.iter_mut().zip(busy.iter()) {
        *s = j.core.as_ref().expect("held").state;
    }
    let first = busy[0].data();
    let data: [&[u8]; LANES] = std::array::from_fn(|i| busy.get(i).map_or(first, Job::data));
    lanes::compress(&mut states, data, blocks, busy.len());
    LANE_PASSES.fetch_add(1, Ordering::Relaxed);
    for (j, s) in busy.iter_mut().zip(states) {
        j.core.as_mut().expect("held").state = s;
        j.at.start += blocks * 64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_engine_waits_for_every_lane_unless_it_must_hash() {
        let fresh = Duration::from_millis(1);
        // Fifteen uploads with fresh pieces: a pass now would run a lane empty.
        assert!(!hash_now(LANES - 1, false, fresh, false));
        assert!(!hash_now(1, false, DEFER - fresh, false));
        // All lanes, or a reason not to wait: enough held, waited long enough, or an upload
        // waits for its digest.
        assert!(hash_now(LANES, false, fresh, false));
        assert!(hash_now(1, true, fresh, false));
        assert!(hash_now(1, false, DEFER, false));
        assert!(hash_now(1, false, fresh, true));
    }

    #[test]
    fn an_upload_that_waits_for_its_digest_is_next_for_a_lane() {
        let streams: Vec<Arc<Stream>> = (0..4).map(|_| Stream::new()).collect();
        let mut ready: VecDeque<Arc<Stream>> = streams.iter().cloned().collect();
        first_in_line(&mut ready, &streams[2]);
        let order: Vec<usize> = ready
            .iter()
            .map(|r| streams.iter().position(|s| Arc::ptr_eq(s, r)).unwrap())
            .collect();
        assert_eq!(order, [2, 0, 1, 3]);
        // A stream not in line (in a lane already) changes nothing.
        let other = Stream::new();
        first_in_line(&mut ready, &other);
        assert_eq!(ready.len(), 4);
        assert!(Arc::ptr_eq(&ready[0], &streams[2]));
    }

    #[test]
    fn only_open_uploads_that_hashed_lately_count() {
        let now = Instant::now();
        let ago = |ms: u64| now - Duration::from_millis(ms);
        let mut r = Recent::default();
        // Upload 1 hashes fast; 2, 3 and 4 are open but last hashed long ago.
        for (w, ms) in [(2, 900), (3, 800), (4, 700), (1, 20), (1, 5), (1, 0)] {
            r.note(w, ago(ms));
        }
        assert_eq!(r.within(now, LATELY), 1, "a lone upload");
        // Three others hashed within the window: four uploads, so the lanes pay.
        for (w, ms) in [(2, 240), (3, 8), (4, 3)] {
            r.note(w, ago(ms));
        }
        assert_eq!(r.within(now, LATELY), 4);
        // Uploads that ended do not count, however recent their last piece.
        r.leave(2);
        r.leave(3);
        assert_eq!(r.within(now, LATELY), 2);
    }

    #[test]
    fn one_clients_uploads_one_after_another_count_as_one() {
        // A client that PUTs small objects back to back starts a new upload (a new member)
        // each time; the ended ones must not add up to enough for the lanes.
        let now = Instant::now();
        let mut r = Recent::default();
        for w in 0..10u64 {
            r.note(w, now - Duration::from_millis(10 * (10 - w)));
            assert_eq!(r.within(now, LATELY), 1);
            r.leave(w);
        }
        assert_eq!(r.within(now, LATELY), 0);
    }

    #[test]
    fn uploads_held_back_by_a_slow_database_still_count() {
        // Sixteen open uploads held back together by the database and the upload budget:
        // their last pieces lie up to 200 ms back (with 25 ms only two of them counted).
        let now = Instant::now();
        let mut r = Recent::default();
        for w in 0..16u64 {
            r.note(w, now - Duration::from_millis(200 * w / 15));
        }
        assert_eq!(r.within(now, LATELY), 16);
        assert!(r.within(now, Duration::from_millis(25)) < JOIN_AT);
    }
}
