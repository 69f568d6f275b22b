//! The shared MD5 engine: one thread that hashes the large pieces of many uploads together,
//! 16 at a time in the lanes of `lanes.rs`. An upload hands a piece over with its buffer and
//! gets both back with the new state, so nothing is copied and no buffer is shared.
//!
//! A piece goes to the engine only while at least [`JOIN_AT`] uploads hashed large pieces
//! lately (within [`LATELY`]): with fewer, the lanes would mostly run empty (k busy lanes cost
//! 16/k of one), and a lone upload hashes in place, without a hand-over, however many other
//! uploads are open but idle. The engine hashes a piece it holds alone in the ordinary way,
//! and two or more in the lanes ([`LANES_AT`]). Uploads rarely hand pieces over at the same
//! moment, so a fresh piece waits up to [`LINGER`] for others, but only when the last
//! [`LINGER`] saw enough other uploads hand pieces over to fill the lanes, and only when its
//! upload said it is patient (its inserts in flight are at their limit, so it waits for the
//! database next anyway): an upload the database keeps up with is not held back.

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

/// Uploads that hashed large pieces lately from which pieces go to the engine, and pieces a
/// fresh one waits for.
const JOIN_AT: usize = 4;

/// Pieces from which the engine hashes in the lanes: 16 lanes cost 0.16 s/GiB and one
/// message alone 1.66 s/GiB here, so two busy lanes already pay (1.3 s/GiB each).
const LANES_AT: usize = 2;

/// Blocks a lane hashes per pass (16 KiB), so that pieces arriving meanwhile join soon.
const PASS_BLOCKS: usize = 256;

/// How long a fresh piece waits for others at most (see the module's comment).
const LINGER: Duration = Duration::from_millis(10);

/// How far back "lately" reaches for routing: uploads that hashed a large piece within it.
const LATELY: Duration = Duration::from_millis(25);

/// Large pieces remembered (when, by which upload), in [`RECENT`].
const REMEMBERED: usize = 64;

/// Ids of [`Member`]s.
static NEXT_MEMBER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The last [`REMEMBERED`] large pieces hashed, in place or by the engine: when, by whom.
static RECENT: Mutex<VecDeque<(Instant, u64)>> = Mutex::new(VecDeque::new());

/// Records a large piece of upload `who` and counts the uploads, other than `except`, that
/// hashed one within `window` before `now`.
fn note_and_count(who: Option<u64>, now: Instant, window: Duration, except: &[u64]) -> usize {
    let Ok(mut recent) = RECENT.lock() else {
        return 0;
    };
    if let Some(w) = who {
        if recent.len() >= REMEMBERED {
            recent.pop_front();
        }
        recent.push_back((now, w));
    }
    distinct_within(&recent, now, window, except)
}

/// The uploads, other than `except`, with a piece in `recent` within `window` before `now`.
fn distinct_within(
    recent: &VecDeque<(Instant, u64)>,
    now: Instant,
    window: Duration,
    except: &[u64],
) -> usize {
    let mut seen: Vec<u64> = recent
        .iter()
        .filter(|(t, w)| now.saturating_duration_since(*t) <= window && !except.contains(w))
        .map(|(_, w)| *w)
        .collect();
    seen.sort_unstable();
    seen.dedup();
    seen.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uploads_that_hashed_lately_count() {
        let now = Instant::now();
        let ago = |ms: u64| now - Duration::from_millis(ms);
        // Upload 1 hashes fast; 2, 3 and 4 are open but last hashed long ago.
        let mut recent: VecDeque<(Instant, u64)> =
            [(ago(900), 2), (ago(800), 3), (ago(700), 4)].into();
        for ms in [20, 15, 10, 5, 0] {
            recent.push_back((ago(ms), 1));
        }
        assert_eq!(
            distinct_within(&recent, now, LATELY, &[]),
            1,
            "a lone upload"
        );
        // Three others hashed within the window: four uploads, so the lanes pay.
        for (ms, w) in [(24, 2), (8, 3), (3, 4)] {
            recent.push_back((ago(ms), w));
        }
        assert_eq!(distinct_within(&recent, now, LATELY, &[]), 4);
        // Within the last LINGER, apart from the piece's own upload: 3 and 4 only.
        assert_eq!(distinct_within(&recent, now, LINGER, &[1]), 2);
    }
}

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
    who: u64,
    /// Its upload would wait for the database anyway, so it may wait for other pieces.
    patient: bool,
    /// No block of it is hashed yet.
    fresh: bool,
    done: oneshot::Sender<Done>,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
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

/// An upload, as the engine tells uploads apart.
#[derive(Clone, Copy)]
pub struct Member(u64);

impl Member {
    pub fn new() -> Self {
        Member(NEXT_MEMBER.fetch_add(1, Ordering::Relaxed))
    }

    pub fn id(self) -> u64 {
        self.0
    }

    /// Records a large piece of this upload, and says where to hash it: the engine when
    /// enough uploads hashed large pieces lately for the lanes to pay, `None` for in place.
    pub fn route(self) -> Option<&'static Engine> {
        if note_and_count(Some(self.0), Instant::now(), LATELY, &[]) < JOIN_AT {
            return None;
        }
        engine().map(|e| &**e)
    }
}

impl Engine {
    /// Hashes `buf[at]` (whole blocks) onto `state`; gives back the new state and `buf`.
    /// Hashes `buf[at]` (whole blocks) onto `state` for upload `who`; gives back the new
    /// state and `buf`.
    pub async fn hash(
        &self,
        who: u64,
        patient: bool,
        state: [u32; 4],
        buf: Vec<u8>,
        at: Range<usize>,
    ) -> Result<Done, EngineGone> {
        debug_assert_eq!(at.len() % 64, 0);
        let (done, rx) = oneshot::channel();
        {
            let mut q = self.queue.lock().map_err(|_| EngineGone)?;
            // Checked under the lock that the thread's end clears the queue under: a piece is
            // either refused here or dropped there, never left unanswered.
            if !self.alive.load(Ordering::Acquire) {
                return Err(EngineGone);
            }
            q.jobs.push_back(Job {
                state,
                buf,
                at,
                arrived: Instant::now(),
                who,
                patient,
                fresh: true,
                done,
            });
        }
        self.wake.notify_one();
        rx.await.map_err(|_| EngineGone)
    }

    fn run(&self) {
        // A panic (a bug) ends the thread: the pieces in it and in the queue fail their
        // uploads (their senders are dropped), and later pieces are hashed in place.
        struct Dead<'a>(&'a Engine);
        impl Drop for Dead<'_> {
            fn drop(&mut self) {
                let mut q = self.0.queue.lock().unwrap_or_else(|e| e.into_inner());
                self.0.alive.store(false, Ordering::Release);
                q.jobs.clear();
            }
        }
        let _dead = Dead(self);
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
                // Fresh pieces wait for others, up to LINGER after the first of them arrived,
                // when the last LINGER saw enough other uploads to fill the lanes, and only
                // pieces whose uploads would wait anyway (their inserts in flight are at the
                // limit): waiting LINGER per piece would cap a fast upload near a chunk per
                // LINGER.
                if busy.len() < JOIN_AT && busy.iter().all(|j| j.fresh && j.patient) && {
                    let here: Vec<u64> = busy.iter().map(|j| j.who).collect();
                    note_and_count(None, Instant::now(), LINGER, &here) + busy.len() >= JOIN_AT
                } {
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
            if busy.len() >= LANES_AT {
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
