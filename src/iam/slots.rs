//! Slots for reading Query request bodies (IAM's, STS's): at most [`PER_CALLER`] at once per
//! caller (the access key id a request names, or an unsigned client's address) and a bound in
//! all. A body is read before its signature can be checked, so without the per-caller bound a
//! few slow senders naming any known key id, or sending nothing signed at all, could hold every
//! slot and refuse everybody else's calls (AWS throttles per caller too).

use std::collections::HashMap;
use std::sync::Mutex;

use super::error::{IamError, IamResult};

/// Most bodies read at once for one caller.
pub const PER_CALLER: usize = 4;

/// Slots of one service.
pub struct Slots {
    all: tokio::sync::Semaphore,
    callers: Mutex<HashMap<String, usize>>,
}

/// A slot held while a body is read.
pub struct Slot<'a> {
    slots: &'a Slots,
    caller: String,
    _permit: tokio::sync::SemaphorePermit<'a>,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut c = self.slots.callers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = c.get_mut(&self.caller) {
            *n -= 1;
            if *n == 0 {
                c.remove(&self.caller);
            }
        }
    }
}

fn throttled() -> IamError {
    IamError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "Throttling",
        "Rate exceeded",
    )
}

impl Slots {
    /// `total` slots in all.
    pub fn new(total: usize) -> Self {
        Self {
            all: tokio::sync::Semaphore::new(total),
            callers: Mutex::default(),
        }
    }

    /// A slot for `caller`, or AWS's `Throttling` (which the SDKs retry) when the caller, or
    /// everybody, has all theirs.
    pub fn take(&self, caller: &str) -> IamResult<Slot<'_>> {
        let permit = self.all.try_acquire().map_err(|_| throttled())?;
        let mut c = self.callers.lock().unwrap_or_else(|e| e.into_inner());
        let n = c.entry(caller.to_owned()).or_default();
        if *n >= PER_CALLER {
            return Err(throttled());
        }
        *n += 1;
        Ok(Slot {
            slots: self,
            caller: caller.to_owned(),
            _permit: permit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_caller_cannot_take_everybodys_slots() {
        let s = Slots::new(8);
        let mine: Vec<_> = (0..PER_CALLER).map(|_| s.take("a").unwrap()).collect();
        assert_eq!(s.take("a").err().map(|e| e.code), Some("Throttling"));
        let other = s.take("b").unwrap();
        drop(mine);
        assert!(s.take("a").is_ok());
        drop(other);
        assert!(
            s.callers.lock().unwrap().is_empty(),
            "every slot given back"
        );
    }
}
