//! The shared MD5 engine: one thread that hashes the large pieces of many uploads together,
//! 16 at a time in the lanes of `lanes.rs`. An upload hands a piece over with its buffer and
//! gets both back with the new state, so nothing is copied and no buffer is shared.
//!
//! Pieces go to the engine only while at least [`JOIN_AT`] uploads are hashing large pieces:
//! with fewer, the lanes would mostly run empty (k lanes busy cost 16/k of one), and a lone
//! upload hashes in place without a hand-over. The engine hashes lane by lane in the ordinary
//! way while it holds fewer than [`JOIN_AT`] pieces. Uploads rarely hand pieces over at the
//! same moment, so when [`JOIN_AT`] or more uploads handed one over lately, a fresh piece
//! waits up to [`LINGER`] for others to join it. An upload does not stall on that wait: its
//! earlier chunks' inserts go on meanwhile, and a lone upload never waits.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::lanes::{self, LANES};
use super::EngineGone;

/// Pieces smaller than this are hashed in place (a hand-over costs a few microseconds).
pub const MIN_BYTES: usize = 64 * 1024;

/// Uploads hashing large pieces, and pieces in the engine, from which the lanes pay.
const JOIN_AT: usize = 4;

/// Blocks a lane hashes per pass (16 KiB), so that pieces arriving meanwhile join soon.
const PASS_BLOCKS: usize = 256;

/// How long a fresh piece waits for others at most (see the module's comment).
const LINGER: Duration = Duration::from_millis(10);

/// How far back "lately" reaches: uploads that handed a piece over within it are counted.
const LATELY: Duration = Duration::from_millis(25);

/// Hand-overs remembered for [`LATELY`].
const REMEMBERED: usize = 64;

/// Ids of [`Member`]s.
static NEXT_MEMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Uploads that hash large pieces now (see [`Member`]).
static MEMBERS: AtomicUsize = AtomicUsize::new(0);

/// Passes of the lanes so far (for tests: that pieces were hashed together).
static LANE_PASSES: AtomicUsize = AtomicUsize::new(0);

#[cfg(test)]
pub fn lane_passes() -> usize {
    LANE_PASSES.load(Ordering::Relaxed)
}

/// What a piece's owner gets back: the new state and its buffer.
type Done = ([u32; 4], Vec<u8>);

struct Job {
    state: [u32; 4],
    buf: Vec<u8>,
    at: Range<usize>,
    arrived: Instant,
    /// No block of it is hashed yet.
    fresh: bool,
    done: oneshot::Sender<Done>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    /// Recent hand-overs: when, and by which upload.
    lately: VecDeque<(Instant, u64)>,
}

impl Queue {
    /// Whether enough uploads handed pieces over lately for a fresh piece to wait for others.
    fn others_coming(&self, now: Instant) -> bool {
        let mut who: Vec<u64> = self
            .lately
            .iter()
            .filter(|(t, _)| now.duration_since(*t) <= LATELY)
            .map(|(_, w)| *w)
            .collect();
        who.sort_unstable();
        who.dedup();
        who.len() >= JOIN_AT
    }
}

pub struct Engine {
    queue: Mutex<Queue>,
    wake: Condvar,
    alive: AtomicBool,
}

/// The engine, started on first use; `None` when this CPU has no lanes.
fn engine() -> Option<&'static Arc<Engine>> {
    static ENGINE: OnceLock<Option<Arc<Engine>>> = OnceLock::new();
    ENGINE
        .get_or_init(|| {
            if !lanes::available() {
                return None;
            }
            let e = Arc::new(Engine {
                queue: Mutex::new(Queue::default()),
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
        .as_ref()
        .filter(|e| e.alive.load(Ordering::Acquire))
}

/// One upload counted among those hashing large pieces, for as long as it lives.
pub struct Member(u64);

impl Member {
    pub fn join() -> Self {
        MEMBERS.fetch_add(1, Ordering::Relaxed);
        Member(NEXT_MEMBER.fetch_add(1, Ordering::Relaxed))
    }

    pub fn id(&self) -> u64 {
        self.0
    }

    /// The engine, when enough uploads hash large pieces for the lanes to pay.
    pub fn engine(&self) -> Option<&'static Engine> {
        if MEMBERS.load(Ordering::Relaxed) < JOIN_AT {
            return None;
        }
        engine().map(|e| &**e)
    }
}

impl Clone for Member {
    fn clone(&self) -> Self {
        Self::join()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        MEMBERS.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Engine {
    /// Hashes `buf[at]` (whole blocks) onto `state`; gives back the new state and `buf`.
    /// Hashes `buf[at]` (whole blocks) onto `state` for upload `who`; gives back the new
    /// state and `buf`.
    pub async fn hash(
        &self,
        who: u64,
        state: [u32; 4],
        buf: Vec<u8>,
        at: Range<usize>,
    ) -> Result<Done, EngineGone> {
        debug_assert_eq!(at.len() % 64, 0);
        let (done, rx) = oneshot::channel();
        {
            let mut q = self.queue.lock().map_err(|_| EngineGone)?;
            let now = Instant::now();
            q.jobs.push_back(Job {
                state,
                buf,
                at,
                arrived: now,
                fresh: true,
                done,
            });
            if q.lately.len() >= REMEMBERED {
                q.lately.pop_front();
            }
            q.lately.push_back((now, who));
        }
        self.wake.notify_one();
        rx.await.map_err(|_| EngineGone)
    }

    fn run(&self) {
        // A panic (a bug) ends the thread: pieces in it fail their uploads (their senders are
        // dropped), and later pieces are hashed in place.
        struct Dead<'a>(&'a AtomicBool);
        impl Drop for Dead<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _dead = Dead(&self.alive);
        let mut busy: Vec<Job> = Vec::with_capacity(LANES);
        loop {
            {
                let Ok(mut q) = self.queue.lock() else { return };
                while busy.is_empty() && q.jobs.is_empty() {
                    q = match self.wake.wait(q) {
                        Ok(q) => q,
                        Err(_) => return,
                    };
                }
                fill(&mut busy, &mut q);
                // Fresh pieces wait for others while more are coming, up to LINGER after the
                // first of them arrived.
                if busy.len() < JOIN_AT
                    && busy.iter().all(|j| j.fresh)
                    && q.others_coming(Instant::now())
                {
                    let until = busy.iter().map(|j| j.arrived).min().expect("busy") + LINGER;
                    loop {
                        fill(&mut busy, &mut q);
                        let now = Instant::now();
                        if busy.len() >= JOIN_AT || now >= until {
                            break;
                        }
                        q = match self.wake.wait_timeout(q, until - now) {
                            Ok((q, _)) => q,
                            Err(_) => return,
                        };
                    }
                }
            }
            if busy.len() >= JOIN_AT {
                pass_lanes(&mut busy);
            } else {
                for j in &mut busy {
                    let n = j.at.len().min(PASS_BLOCKS * 64);
                    super::compress(&mut j.state, &j.buf[j.at.start..j.at.start + n]);
                    j.at.start += n;
                    j.fresh = false;
                }
            }
            let mut i = 0;
            while i < busy.len() {
                if busy[i].at.is_empty() {
                    let j = busy.swap_remove(i);
                    // An owner that went away (its request ended) drops the buffer.
                    let _ = j.done.send((j.state, j.buf));
                } else {
                    i += 1;
                }
            }
        }
    }
}

/// Moves waiting pieces into free lanes.
fn fill(busy: &mut Vec<Job>, q: &mut Queue) {
    while busy.len() < LANES {
        match q.jobs.pop_front() {
            Some(j) => busy.push(j),
            None => break,
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
    let mut states = [busy[0].state; LANES];
    for (s, j) in states.iter_mut().zip(busy.iter()) {
        *s = j.state;
    }
    let first = &busy[0].buf[busy[0].at.clone()];
    let data: [&[u8]; LANES] =
        std::array::from_fn(|i| busy.get(i).map_or(first, |j| &j.buf[j.at.clone()]));
    lanes::compress16(&mut states, data, blocks);
    LANE_PASSES.fetch_add(1, Ordering::Relaxed);
    for (j, s) in busy.iter_mut().zip(states) {
        j.state = s;
        j.at.start += blocks * 64;
        j.fresh = false;
    }
}
