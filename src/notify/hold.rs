//! The dispatcher's hold on the `notify` lead, checked before every send.
//!
//! One instance at a time may send: two that sent the same window would interleave a key's
//! events (the second sends `e1`, `e2` while the first, stalled with `e1` in hand, sends it
//! again after `e2`). The lead (`storage::meta::Lead`) lasts its lifetime from its last
//! renewal, in the database's time, and another instance can take it only once that has
//! passed; a round, though, may take longer than a lifetime (a slow target, 256 events of one
//! key in turn, each under its 10 s timeout). So instead of renewing between rounds only, the
//! dispatcher asks [`Hold::time_left`] before each send and before each step that moves
//! events to the dead letters:
//! - the lead is surely still this run's until a lifetime after the last renewal was *sent*
//!   (the database set the expiry later than that), less a margin for the difference between
//!   two instances' readings of the database's clock ([`Hold::margin`]);
//! - with less than half a lifetime left it renews first (one update per half-lifetime of
//!   sending), so a long round keeps the lead while it is alive;
//! - a renewal that finds another run's token (this run stalled past the expiry and was taken
//!   over), or that fails, loses the hold for good: no send starts after it, the round ends,
//!   and the dispatcher gives the lead up;
//! - a send is given at most the time left, so none is under way when the lead can pass to
//!   another instance (with the real lifetime, 30 s, that is at least 12 s, more than the send
//!   timeout of 10 s: it cuts no send unless renewals stop working).
//!
//! What no check here can fence is the whole process pausing between a check and its send's
//! first byte (there is no await between the two): a webhook cannot check a token.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::storage::meta::Lead;

/// A run's hold on the dispatcher's lead.
pub struct Hold<'a> {
    lead: &'a Lead,
    ttl: Duration,
    /// Until when the lead is surely held (before the margin): a lifetime after the last
    /// renewal (or the taking) was sent. Renewals go one at a time under this lock.
    until: tokio::sync::Mutex<Instant>,
    lost: AtomicBool,
    /// This process's id (the detail of the dispatcher's fail points).
    holder: &'a str,
}

impl<'a> Hold<'a> {
    /// The hold of `lead`, taken for `ttl` by a request sent at `asked`.
    pub fn new(lead: &'a Lead, ttl: Duration, asked: Instant, holder: &'a str) -> Self {
        Self {
            lead,
            ttl,
            until: tokio::sync::Mutex::new(asked + ttl),
            lost: AtomicBool::new(false),
            holder,
        }
    }

    /// How much earlier than its expiry the lead counts as gone: a tenth of its lifetime (3 s
    /// of 30), far more than two instances' readings of the database's clock differ (each is
    /// within a round trip of it, see `storage::meta::DbClock`).
    fn margin(&self) -> Duration {
        self.ttl / 10
    }

    /// The process holding it, as the dispatcher's fail points name it.
    pub fn holder(&self) -> &str {
        self.holder
    }

    /// Whether the hold was lost (the run stops).
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed)
    }

    /// How long this run may still act as the lead's holder (renewing the lead first when
    /// less than half its lifetime is left); `None` once the lead is lost, for good.
    pub async fn time_left(&self) -> Option<Duration> {
        if self.lost() {
            return None;
        }
        let mut until = self.until.lock().await;
        // Another key's check may have lost it while this one waited for the lock.
        if self.lost() {
            return None;
        }
        if until.saturating_duration_since(Instant::now()) < self.ttl / 2 {
            let asked = Instant::now();
            match self.lead.renew().await {
                Ok(true) => *until = asked + self.ttl,
                Ok(false) => {
                    tracing::warn!(
                        fence = self.lead.fence(),
                        "the notification dispatcher lost its lead (it stalled past its expiry and another run took it): it sends nothing more"
                    );
                    return self.lose();
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not renew the notification dispatcher's lead: it sends nothing more until it holds it again");
                    return self.lose();
                }
            }
        }
        let left = until
            .saturating_duration_since(Instant::now())
            .saturating_sub(self.margin());
        if left.is_zero() {
            // A renewal that itself took most of a lifetime: too late to be sure of it.
            return self.lose();
        }
        Some(left)
    }

    fn lose(&self) -> Option<Duration> {
        self.lost.store(true, Ordering::Relaxed);
        None
    }

    /// How long until the next renewal is due (the longest the dispatcher may sleep between
    /// rounds without letting the lead come close to its expiry).
    pub async fn renewal_due(&self) -> Duration {
        let until = *self.until.lock().await;
        until
            .saturating_duration_since(Instant::now())
            .saturating_sub(self.ttl / 2)
    }
}
