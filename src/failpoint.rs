//! Fail points: named places where a test can stop a task and let it go again, so that a race
//! between two writers, a reclaim and a reader, or a run and its stalled predecessor is
//! reproduced step by step instead of by sleeping and hoping.
//!
//! Production builds compile [`hit`] to nothing. The `failpoints` feature (which the
//! integration tests enable through the crate's dev-dependency on itself) keeps a registry:
//! a test arms a point with [`pause`], waits until a task [`Pause::reached`] it, does what
//! the race needs, and [`Pause::release`]s the task. A point is armed for one hit unless the
//! test asks for more, and only for hits whose detail (a bucket, a key) matches, so that
//! tests running side by side in one process do not stop each other's tasks.

/// Stops here if a test armed `name` for `detail` (nothing in production builds).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub async fn hit(_name: &'static str, _detail: &str) {}

#[cfg(feature = "failpoints")]
pub use armed::{armed, count, hit, limit, pause, pause_times, shorten, Pause, Shortened};

/// `default`: the time limit a place uses (a test may shorten it in `failpoints` builds, so
/// that what happens after a timeout is reproduced without waiting a minute).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn limit(
    _name: &'static str,
    _detail: &str,
    default: std::time::Duration,
) -> std::time::Duration {
    default
}

#[cfg(feature = "failpoints")]
mod armed {
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex, OnceLock};
    use std::time::Duration;

    use tokio::sync::watch;

    struct Point {
        detail: Option<String>,
        /// Hits still to stop.
        left: Mutex<usize>,
        /// How many tasks stopped so far.
        reached: watch::Sender<usize>,
        released: watch::Sender<bool>,
    }

    /// Armed points by name.
    type Registry = Mutex<HashMap<&'static str, Vec<Arc<Point>>>>;

    fn registry() -> &'static Registry {
        static R: OnceLock<Registry> = OnceLock::new();
        R.get_or_init(Default::default)
    }

    /// Stops here while a test holds a [`Pause`] armed for `name` (and `detail`, if it named
    /// one), until it releases it.
    pub async fn hit(name: &'static str, detail: &str) {
        let point = {
            let r = registry().lock().unwrap_or_else(|e| e.into_inner());
            r.get(name).and_then(|ps| {
                ps.iter()
                    .find(|p| {
                        p.detail.as_deref().is_none_or(|d| d == detail) && {
                            let mut left = p.left.lock().unwrap_or_else(|e| e.into_inner());
                            let take = *left > 0;
                            if take {
                                *left -= 1;
                            }
                            take
                        }
                    })
                    .cloned()
            })
        };
        let Some(p) = point else { return };
        tracing::info!(failpoint = name, detail, "stopped at a fail point");
        let mut released = p.released.subscribe();
        p.reached.send_modify(|n| *n += 1);
        let _ = released.wait_for(|r| *r).await;
    }

    /// A test's hold on a fail point; dropping it disarms the point and releases every task
    /// stopped there.
    pub struct Pause {
        name: &'static str,
        point: Arc<Point>,
    }

    /// Arms `name` for the next hit whose detail is `detail` (any detail with `None`).
    pub fn pause(name: &'static str, detail: Option<&str>) -> Pause {
        pause_times(name, detail, 1)
    }

    /// Arms `name` for the next `hits` hits.
    pub fn pause_times(name: &'static str, detail: Option<&str>, hits: usize) -> Pause {
        let point = Arc::new(Point {
            detail: detail.map(str::to_owned),
            left: Mutex::new(hits),
            reached: watch::channel(0).0,
            released: watch::channel(false).0,
        });
        registry()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name)
            .or_default()
            .push(point.clone());
        Pause { name, point }
    }

    /// Counts the hits of `name` (with `detail`, if named) without stopping them, from now
    /// on; [`Pause::hits`] says how many. Points armed before it take their hits first.
    pub fn count(name: &'static str, detail: Option<&str>) -> Pause {
        let p = pause_times(name, detail, usize::MAX);
        p.point.released.send_replace(true);
        p
    }

    impl Pause {
        /// Waits until `n` tasks in all stopped here; panics after `within` (a test that
        /// never gets there fails instead of hanging).
        pub async fn reached_n(&self, n: usize, within: Duration) {
            let mut rx = self.point.reached.subscribe();
            if tokio::time::timeout(within, rx.wait_for(|c| *c >= n))
                .await
                .is_err()
            {
                panic!(
                    "fail point {} was not reached {n} times within {within:?}",
                    self.name
                );
            }
        }

        /// Waits until a task stopped here (at most 60 s).
        pub async fn reached(&self) {
            self.reached_n(1, Duration::from_secs(60)).await
        }

        /// How many tasks stopped here so far.
        pub fn hits(&self) -> usize {
            *self.point.reached.borrow()
        }

        /// Lets every task stopped here go on, and stops no more.
        pub fn release(&self) {
            *self.point.left.lock().unwrap_or_else(|e| e.into_inner()) = 0;
            self.point.released.send_replace(true);
        }
    }

    /// The points armed now, each with its detail and how many tasks stopped there and are
    /// still held (a test runner prints them when a test hangs, to say where it waits).
    pub fn armed() -> Vec<String> {
        let r = registry().lock().unwrap_or_else(|e| e.into_inner());
        r.iter()
            .flat_map(|(name, ps)| {
                ps.iter().map(move |p| {
                    let held = !*p.released.borrow();
                    format!(
                        "{name} [{}]: {} stopped{}",
                        p.detail.as_deref().unwrap_or("any").escape_debug(),
                        *p.reached.borrow(),
                        if held { ", held" } else { "" }
                    )
                })
            })
            .collect()
    }

    /// Time limits shortened by tests, by name: the detail each applies to and the limit.
    type Limits = Mutex<HashMap<&'static str, Vec<(String, Duration, u64)>>>;

    fn limits() -> &'static Limits {
        static L: OnceLock<Limits> = OnceLock::new();
        L.get_or_init(Default::default)
    }

    /// The limit a test set for `name` and `detail` with [`shorten`], else `default`.
    pub fn limit(name: &'static str, detail: &str, default: Duration) -> Duration {
        let l = limits().lock().unwrap_or_else(|e| e.into_inner());
        l.get(name)
            .and_then(|v| v.iter().find(|(d, _, _)| d == detail))
            .map_or(default, |(_, t, _)| *t)
    }

    /// A test's shortened limit; dropping it restores the default.
    pub struct Shortened {
        name: &'static str,
        id: u64,
    }

    /// Makes the place `name` use `to` as its time limit for `detail` (a bucket), until the
    /// returned guard is dropped.
    pub fn shorten(name: &'static str, detail: &str, to: Duration) -> Shortened {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        limits()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(name)
            .or_default()
            .push((detail.to_owned(), to, id));
        Shortened { name, id }
    }

    impl Drop for Shortened {
        fn drop(&mut self) {
            let mut l = limits().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(v) = l.get_mut(self.name) {
                v.retain(|(_, _, id)| *id != self.id);
            }
        }
    }

    impl Drop for Pause {
        fn drop(&mut self) {
            self.release();
            let mut r = registry().lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ps) = r.get_mut(self.name) {
                ps.retain(|p| !Arc::ptr_eq(p, &self.point));
            }
        }
    }
}
