//! Recycled chunk buffers. An upload builds each chunk document in a buffer of its own; once
//! the batch's insert returns, the buffers come back here for the next chunks instead of being
//! freed. Freed memory is given back to the kernel by the allocator, and every fresh buffer
//! then faults its pages in again, zeroed: profiled at a fifth of a PUT's CPU (`clear_page`).

use std::sync::Mutex;

/// Bytes of capacity kept at most: the default body budget, which bounds the chunk buffers in
/// use at once. Twice that kept 16 MiB more resident after every upload.
const MAX_POOLED: usize = super::budget::DEFAULT_BUDGET;

static POOL: Mutex<(Vec<Vec<u8>>, usize)> = Mutex::new((Vec::new(), 0));

/// An empty buffer of at least `cap` bytes of capacity.
pub fn take(cap: usize) -> Vec<u8> {
    let mut pool = POOL.lock().expect("chunk pool");
    if let Some(i) = pool.0.iter().rposition(|b| b.capacity() >= cap) {
        let b = pool.0.swap_remove(i);
        pool.1 -= b.capacity();
        return b;
    }
    drop(pool);
    Vec::with_capacity(cap)
}

/// Gives a buffer back (kept while the pool holds less than `MAX_POOLED` bytes).
pub fn give(mut b: Vec<u8>) {
    b.clear();
    let mut pool = POOL.lock().expect("chunk pool");
    if pool.1 + b.capacity() <= MAX_POOLED {
        pool.1 += b.capacity();
        pool.0.push(b);
    }
}
