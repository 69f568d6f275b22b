//! The sequencer of events: the database's time in milliseconds (as this instance reads it,
//! see `storage::meta::DbClock`), shifted left 20 bits, with a counter in the low bits that
//! keeps this instance's sequencers strictly increasing.
//!
//! Records carry it (`s3.object.sequencer`), and the outbox orders its documents by it: a
//! group of events is stamped when it is written, after every event in it got its own, so
//! that a group written later always sorts after one written earlier (see `outbox`).

use std::sync::atomic::{AtomicI64, Ordering};

use crate::storage::meta::DbClock;

/// Gives out sequencers (shared by the notifier and its outbox).
#[derive(Debug)]
pub struct Sequencer {
    clock: DbClock,
    last: AtomicI64,
}

impl Sequencer {
    /// A sequencer on `clock`.
    pub fn new(clock: DbClock) -> Self {
        Self {
            clock,
            last: AtomicI64::new(0),
        }
    }

    /// The clock it reads.
    pub fn clock(&self) -> &DbClock {
        &self.clock
    }

    /// The next sequencer: strictly greater than every one this instance gave out before.
    pub fn next(&self) -> i64 {
        let now = self.clock.now().timestamp_millis() << 20;
        let mut last = self.last.load(Ordering::Relaxed);
        loop {
            let next = now.max(last + 1);
            match self
                .last
                .compare_exchange(last, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(seen) => last = seen,
            }
        }
    }
}
