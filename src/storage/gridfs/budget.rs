//! The process-wide budget of chunk bytes being written: every upload's batch takes its share
//! before it is sent and gives it back when the insert returns, so memory stays bounded
//! however many uploads run at once (`--body-budget-mib`).

use std::sync::{Arc, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default budget: 32 MiB of chunk data in flight, shared by all uploads.
pub const DEFAULT_BUDGET: usize = 32 * 1024 * 1024;

/// The semaphore (one permit per KiB) and its size in permits.
static BUDGET: OnceLock<(Arc<Semaphore>, usize)> = OnceLock::new();

/// Sets the budget (once, at start-up; later calls change nothing).
pub fn configure(bytes: usize) {
    let _ = BUDGET.get_or_init(|| budget_of(bytes));
}

fn budget_of(bytes: usize) -> (Arc<Semaphore>, usize) {
    let permits = bytes.div_ceil(1024).clamp(1, u32::MAX as usize);
    (Arc::new(Semaphore::new(permits)), permits)
}

/// Waits for `bytes` of the budget (a batch larger than the whole budget takes all of it).
pub async fn acquire(bytes: usize) -> OwnedSemaphorePermit {
    let (sem, total) = BUDGET.get_or_init(|| budget_of(DEFAULT_BUDGET));
    let want = bytes.div_ceil(1024).clamp(1, *total) as u32;
    sem.clone()
        .acquire_many_owned(want)
        .await
        .expect("the budget semaphore is never closed")
}
