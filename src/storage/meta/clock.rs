//! The one clock every instance agrees on: the database's.
//!
//! Revision order (`uploadDate`) and the expiry of leases, locks and write registrations are
//! compared across gateway instances, so they must not come from one instance's wall clock. A
//! [`DbClock`] reads the server's time (`localTime` of the `hello` command, which every MongoDB
//! server answers) and keeps the offset between it and this process's clock, measured at the
//! midpoint of the round trip; `now()` is this process's clock plus that offset. The offset is
//! measured at start-up and again on every janitor pass, so an instance whose clock is minutes
//! off still stamps and compares times within a round trip of the database's clock.
//!
//! Revision order does not rest on this precision alone: a new revision is always stamped
//! after the newest one it finds, so a write that starts after another ended lands after it
//! (see `objects::ObjectStore::publish_if`).

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;

use mongodb::bson::{doc, DateTime};
use mongodb::Database;

/// The database's clock, as seen from this process.
#[derive(Clone, Debug)]
pub struct DbClock {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Database time minus local time, in milliseconds.
    offset_ms: AtomicI64,
    /// Whether the offset has been measured at least once.
    calibrated: AtomicBool,
    /// A deliberate error added to this process's clock (tests simulate a wrong clock with it).
    skew_ms: i64,
}

impl DbClock {
    /// A clock whose local reading is off by `skew_ms` (0 outside tests).
    pub fn new(skew_ms: i64) -> Self {
        Self {
            inner: Arc::new(Inner {
                offset_ms: AtomicI64::new(0),
                calibrated: AtomicBool::new(false),
                skew_ms,
            }),
        }
    }

    /// This process's clock (with the test skew), in milliseconds since the epoch.
    fn local_ms(&self) -> i64 {
        DateTime::now().timestamp_millis() + self.inner.skew_ms
    }

    /// The database's current time.
    pub fn now(&self) -> DateTime {
        DateTime::from_millis(self.local_ms() + self.inner.offset_ms.load(Ordering::Relaxed))
    }

    /// `now()` plus a duration.
    pub fn after(&self, d: std::time::Duration) -> DateTime {
        DateTime::from_millis(self.now().timestamp_millis() + d.as_millis() as i64)
    }

    /// `now()` minus a duration.
    pub fn before(&self, d: std::time::Duration) -> DateTime {
        DateTime::from_millis(self.now().timestamp_millis() - d.as_millis() as i64)
    }

    /// Whether the offset was measured.
    pub fn is_calibrated(&self) -> bool {
        self.inner.calibrated.load(Ordering::Relaxed)
    }

    /// Measures the offset against the server's `localTime`; returns it in milliseconds.
    pub async fn calibrate(&self, db: &Database) -> mongodb::error::Result<i64> {
        let t0 = self.local_ms();
        let hello = db.run_command(doc! {"hello": 1}).await?;
        let t1 = self.local_ms();
        let Ok(server) = hello.get_datetime("localTime") else {
            // A server that does not report its time: keep the last offset (zero at first).
            tracing::warn!("the database did not report localTime; using this instance's clock");
            return Ok(self.inner.offset_ms.load(Ordering::Relaxed));
        };
        let offset = server.timestamp_millis() - (t0 + (t1 - t0) / 2);
        let old = self.inner.offset_ms.swap(offset, Ordering::Relaxed);
        let was = self.inner.calibrated.swap(true, Ordering::Relaxed);
        if !was || (offset - old).abs() > 1000 {
            tracing::info!(offset_ms = offset, "clock offset to the database measured");
        }
        Ok(offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_is_added_and_offset_cancels_it() {
        let c = DbClock::new(-600_000);
        let real = DateTime::now().timestamp_millis();
        assert!((c.now().timestamp_millis() - (real - 600_000)).abs() < 1000);
        c.inner.offset_ms.store(600_000, Ordering::Relaxed);
        assert!((c.now().timestamp_millis() - real).abs() < 1000);
    }
}
