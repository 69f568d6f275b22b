//! Each instance reports itself to the database once a minute (`storage::meta::instances`):
//! alive, and a sample of its requests over the minute, so that the console of any instance
//! shows every instance. No lead: each instance writes only its own document.

use std::time::Duration;

use crate::metrics::Totals;
use crate::state::AppState;
use crate::storage::meta::Sample;

/// How often an instance reports (a sample is a minute).
pub const EVERY: Duration = Duration::from_secs(60);

/// An instance's reports: when it started, and the totals of its last report.
pub struct Reporter {
    started: mongodb::bson::DateTime,
    last: Option<Totals>,
}

impl Reporter {
    /// A reporter starting now (the database's time).
    pub fn new(st: &AppState) -> Reporter {
        Reporter {
            started: st.store.meta().clock().now(),
            last: None,
        }
    }

    /// Writes one report: the first says the instance is alive, each later one adds the
    /// requests since the one before.
    pub async fn report(&mut self, st: &AppState) -> mongodb::error::Result<()> {
        let now = crate::metrics::totals();
        // Taken as sent, whatever becomes of the write: a report that failed (or whose write
        // landed after its timeout) loses its minute rather than folding it into the next.
        let last = self.last.replace(now);
        let sample = last.map(|l| Sample {
            at: st.store.meta().clock().now(),
            requests: now.requests.saturating_sub(l.requests) as i64,
            errors: now.errors.saturating_sub(l.errors) as i64,
            refused: now.refused.saturating_sub(l.refused) as i64,
            bytes_in: now.bytes_in.saturating_sub(l.bytes_in) as i64,
            bytes_out: now.bytes_out.saturating_sub(l.bytes_out) as i64,
            micros: now.micros.saturating_sub(l.micros) as i64,
        });
        st.store
            .meta()
            .instance_report(
                st.store.meta().process_id(),
                env!("CARGO_PKG_VERSION"),
                &st.config.listen.to_string(),
                self.started,
                sample.as_ref(),
            )
            .await?;
        Ok(())
    }
}

/// The loop: a report at start, then one a minute. A report that fails (or hangs) is logged
/// and the next minute tries again.
pub async fn run(st: AppState) {
    let mut reporter = Reporter::new(&st);
    let mut tick = tokio::time::interval(EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match tokio::time::timeout(EVERY, reporter.report(&st)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the status report failed"),
            Err(_) => tracing::warn!("the status report timed out"),
        }
    }
}
