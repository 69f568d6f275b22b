//! Background work, run by every instance: the janitor pass (clock re-measurement, expired
//! leases, deferred reclaims, chunks of dead writes) and the multipart sweep (stale uploads,
//! interrupted aborts, completed uploads' leftovers), plus `fsck`, the offline check of the
//! same invariants. Every pass is idempotent, so instances running it at once only repeat
//! each other's deletes. The lifecycle pass is led by one instance at a time (`lifecycle`).

pub mod fsck;
pub mod lifecycle;
pub mod status;

use std::time::Duration;

use crate::state::AppState;

/// Starts the janitor loop on the current runtime; the handles of its tasks (see
/// [`AppState::stop_background`]).
pub fn spawn(state: &AppState) -> Vec<tokio::task::AbortHandle> {
    let st = state.clone();
    let store = state.store.clone();
    let every = Duration::from_secs(state.config.janitor_interval.max(1));
    let max_age = Duration::from_secs(state.config.multipart_max_age);
    // Lifecycle rules are about days: a pass an hour is plenty (a test's shortened day runs it
    // on every tick). Its lead outlives a few ticks, so a live leader keeps it.
    let lifecycle_every = Duration::from_secs(st.config.lifecycle_day_secs.clamp(1, 3600));
    let lead_for = (every * 3).max(Duration::from_secs(30));
    // The first pass comes one period after start-up, not at once: a restart does not bring
    // the hourly pass forward.
    let mut last_lifecycle = std::time::Instant::now();
    // Version index builds whose instance died are taken over (a lead per bucket elects one
    // instance); a build can take long, so it runs beside the janitor's loop, not in it.
    let builds = state.store.clone();
    let mut handles = Vec::new();
    let h = crate::background::spawn("builds", async move {
        let mut tick = tokio::time::interval(every * 12);
        tick.tick().await;
        loop {
            tick.tick().await;
            let run =
                tokio::time::timeout(Duration::from_secs(600), builds.resume_index_builds()).await;
            match run {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::info!(buckets = n, "finished version index builds"),
                Ok(Err(e)) => tracing::warn!(error = %e, "version index build failed"),
                Err(_) => tracing::warn!("version index build timed out; the next pass goes on"),
            }
            // Search index builds whose instance stopped (see `objects::search_index`).
            let run = tokio::time::timeout(
                Duration::from_secs(600),
                builds.resume_search_index_builds(),
            )
            .await;
            match run {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::info!(buckets = n, "finished search index builds"),
                Ok(Err(e)) => tracing::warn!(error = %e, "search index build failed"),
                Err(_) => tracing::warn!("search index build timed out; the next pass goes on"),
            }
            // Storage-mode conversions whose instance stopped (see `objects::convert`).
            let run =
                tokio::time::timeout(Duration::from_secs(600), builds.resume_conversions()).await;
            match run {
                Ok(Ok(0)) => {}
                Ok(Ok(n)) => tracing::info!(buckets = n, "finished bucket conversions"),
                Ok(Err(e)) => tracing::warn!(error = %e, "bucket conversion failed"),
                Err(_) => tracing::warn!("bucket conversion timed out; the next pass goes on"),
            }
        }
    });
    handles.push(h.abort_handle());
    // Server access logs: staging on every instance, delivery by the lead's holder.
    let flush = Duration::from_secs_f64(state.config.access_log_flush_secs.clamp(0.2, 86_400.0));
    let h = crate::background::spawn(
        "access-log",
        crate::access_log::run(
            state.store.clone(),
            state.keys.clone(),
            state.access_log.clone(),
            state.config.region.clone(),
            flush,
        ),
    );
    handles.push(h.abort_handle());
    // The instance's status reports (the console's server status).
    let h = crate::background::spawn("status", status::run(state.clone()));
    handles.push(h.abort_handle());
    // Event notifications: delivery by the lead's holder.
    let h = crate::background::spawn(
        "notify",
        crate::notify::dispatch::run(state.notify.clone(), state.store.meta().clone()),
    );
    handles.push(h.abort_handle());
    let h = crate::background::spawn("janitor", async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            if last_lifecycle.elapsed() >= lifecycle_every {
                last_lifecycle = std::time::Instant::now();
                let t = std::time::Instant::now();
                // Bounded: a database that stops answering must not stall the janitor's loop
                // (the driver has no socket timeout); the next period tries again.
                let run = tokio::time::timeout(lead_for, lifecycle::pass(&st, lead_for)).await;
                let outcome = match run.unwrap_or_else(|_| Err(anyhow::anyhow!("timed out"))) {
                    Ok(o) => {
                        if o.expired + o.aborted > 0 {
                            tracing::info!(
                                expired = o.expired,
                                aborted = o.aborted,
                                "lifecycle pass"
                            );
                        }
                        if o.led {
                            "ok"
                        } else {
                            "follower"
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "lifecycle pass failed");
                        "error"
                    }
                };
                crate::metrics::background_run("lifecycle", outcome, t.elapsed().as_secs_f64());
            }
            let t = std::time::Instant::now();
            let outcome = match store.janitor_pass().await {
                Ok(0) => "ok",
                Ok(n) => {
                    tracing::info!(
                        files = n,
                        "janitor reclaimed deferred revisions and dead writes"
                    );
                    "ok"
                }
                Err(e) => {
                    tracing::warn!(error = %e, "janitor pass failed");
                    "error"
                }
            };
            crate::metrics::background_run("janitor", outcome, t.elapsed().as_secs_f64());
            let t = std::time::Instant::now();
            let before = store.meta().clock().before(max_age);
            let outcome = match store.sweep_uploads(before).await {
                Ok(0) => "ok",
                Ok(n) => {
                    tracing::info!(aborted = n, "sweep aborted stale multipart uploads");
                    "ok"
                }
                Err(e) => {
                    tracing::warn!(error = %e, "multipart sweep failed");
                    "error"
                }
            };
            crate::metrics::background_run("multipart_sweep", outcome, t.elapsed().as_secs_f64());
            // Console single sign-on sessions that lapsed unseen end with their credentials.
            let idle = Duration::from_secs(st.config.console_idle_minutes.max(1) * 60);
            let absolute = Duration::from_secs(st.config.console_session_hours.max(1) * 3600);
            match store.meta().end_lapsed_sso_sessions(idle, absolute).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(ended = n, "lapsed console sessions ended"),
                Err(e) => tracing::warn!(error = %e, "ending lapsed console sessions failed"),
            }
            if let Err(e) = store.meta().sweep_seen_signatures().await {
                tracing::warn!(error = %e, "sweeping seen admin signatures failed");
            }
        }
    });
    handles.push(h.abort_handle());
    handles
}
