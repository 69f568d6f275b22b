//! The process-wide budget of chunk bytes being written: every chunk takes its share when it
//! joins an upload's batch and gives it back when the batch's insert returns, so memory stays
//! bounded however many uploads run at once (`--body-budget-mib`). An upload that finds the
//! budget exhausted first sends the partial batch it holds, so uploads never wait on each
//! other's unsent batches.

use std::sync::{Arc, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default budget: 16 MiB of chunk data in flight, shared by all uploads.
pub const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;

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

fn want(bytes: usize) -> (Arc<Semaphore>, u32) {
    let (sem, total) = BUDGET.get_or_init(|| budget_of(DEFAULT_BUDGET));
    (sem.clone(), bytes.div_ceil(1024).clamp(1, *total) as u32)
}

/// Waits for `bytes` of the budget (more than the whole budget takes all of it).
pub async fn acquire(bytes: usize) -> OwnedSemaphorePermit {
    let (sem, n) = want(bytes);
    sem.acquire_many_owned(n)
        .await
        .expect("the budget semaphore is never closed")
}

/// `bytes` of the budget if they are free now.
pub fn try_acquire(bytes: usize) -> Option<OwnedSemaphorePermit> {
    let (sem, n) = want(bytes);
    sem.try_acquire_many_owned(n).ok()
}
