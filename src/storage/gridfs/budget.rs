//! The process-wide budgets of chunk bytes held in memory, one for uploads and one for
//! downloads, so memory stays bounded however many transfers run at once.
//!
//! Uploads (`--body-budget-mib`): every chunk takes its share when it joins an upload's batch
//! and gives it back when the batch's insert returns. An upload that finds the budget exhausted
//! first sends the partial batch it holds, so uploads never wait on each other's unsent batches.
//!
//! Downloads (`--download-budget-mib`): a download's read-ahead (the chunks it fetches beyond
//! the one it is about to send) takes shares, given back as the client takes each chunk. A
//! download that finds the budget exhausted reads one chunk at a time instead of waiting, so a
//! client that stops reading slows only itself and can never starve the others: its share is
//! bounded, and the next download simply reads ahead less.

use std::sync::{Arc, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Default upload budget: 16 MiB of chunk data in flight, shared by all uploads.
pub const DEFAULT_BUDGET: usize = 16 * 1024 * 1024;

/// Default download budget: 16 MiB of chunks read ahead, shared by all downloads.
pub const DEFAULT_DOWNLOAD_BUDGET: usize = 16 * 1024 * 1024;

/// A budget: a semaphore (one permit per KiB) and its size in permits.
type Budget = (Arc<Semaphore>, usize);

static UPLOADS: OnceLock<Budget> = OnceLock::new();
static DOWNLOADS: OnceLock<Budget> = OnceLock::new();

/// Sets the upload budget (once, at start-up; later calls change nothing).
pub fn configure(bytes: usize) {
    let _ = UPLOADS.get_or_init(|| budget_of(bytes));
}

/// Sets the download budget (once, at start-up; later calls change nothing).
pub fn configure_downloads(bytes: usize) {
    let _ = DOWNLOADS.get_or_init(|| budget_of(bytes));
}

fn budget_of(bytes: usize) -> Budget {
    let permits = bytes.div_ceil(1024).clamp(1, u32::MAX as usize);
    (Arc::new(Semaphore::new(permits)), permits)
}

fn want(budget: &'static OnceLock<Budget>, default: usize, bytes: usize) -> (Arc<Semaphore>, u32) {
    let (sem, total) = budget.get_or_init(|| budget_of(default));
    (sem.clone(), bytes.div_ceil(1024).clamp(1, *total) as u32)
}

/// Waits for `bytes` of the upload budget (more than the whole budget takes all of it).
pub async fn acquire(bytes: usize) -> OwnedSemaphorePermit {
    let (sem, n) = want(&UPLOADS, DEFAULT_BUDGET, bytes);
    sem.acquire_many_owned(n)
        .await
        .expect("the budget semaphore is never closed")
}

/// `bytes` of the upload budget if they are free now.
pub fn try_acquire(bytes: usize) -> Option<OwnedSemaphorePermit> {
    let (sem, n) = want(&UPLOADS, DEFAULT_BUDGET, bytes);
    sem.try_acquire_many_owned(n).ok()
}

/// A download's share of the budget for one chunk read ahead; the bytes count in
/// `grids3_download_buffered_bytes` until it is dropped.
pub struct DownloadShare {
    _permit: OwnedSemaphorePermit,
    bytes: usize,
}

impl Drop for DownloadShare {
    fn drop(&mut self) {
        crate::metrics::download_buffered(-(self.bytes as f64));
    }
}

/// `bytes` of the download budget if they are free now (never waits).
pub fn try_download_share(bytes: usize) -> Option<DownloadShare> {
    let (sem, n) = want(&DOWNLOADS, DEFAULT_DOWNLOAD_BUDGET, bytes);
    let permit = sem.try_acquire_many_owned(n).ok()?;
    crate::metrics::download_buffered(bytes as f64);
    Some(DownloadShare {
        _permit: permit,
        bytes,
    })
}
