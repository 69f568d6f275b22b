//! Background tasks, named. Every task that works on its own account rather than for the
//! request in front of it (the janitor, settling, pool tending, lock and lease heartbeats,
//! conversions, index builds) is spawned through [`spawn`], which runs it inside a task-local
//! scope naming the job. [`current`] tells, from anywhere inside such a task, which job it is
//! working for.
//!
//! The database driver reports its commands from the task that sends them, so a command
//! listener can tell a request's own round trips from the background's. The round-trip guards
//! in the tests count only the request's own (a janitor tick or a settling pass landing
//! between two counts made them fail on slow machines).

use std::future::Future;

tokio::task_local! {
    static JOB: &'static str;
}

/// Spawns `fut` as a background task working for `job`.
pub fn spawn<F>(job: &'static str, fut: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(JOB.scope(job, fut))
}

/// The background job the current task works for, if it is one.
pub fn current() -> Option<&'static str> {
    JOB.try_with(|j| *j).ok()
}
