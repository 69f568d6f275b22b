//! The HTTP server loop: accepts connections under a connection limit and serves each with
//! hyper, with a header-read timeout (which also closes idle keep-alive connections, since
//! hyper starts it whenever it waits for a request head) and graceful shutdown that waits for
//! in-flight requests up to a deadline.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// Connection-level limits (see `config.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once; further ones wait in the listen backlog.
    pub max_connections: usize,
    /// Time a client has to send a request's head (and the longest idle keep-alive).
    pub header_read_timeout: Duration,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_deadline: Duration,
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains.
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_read_timeout));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            p = slots.clone().acquire_owned() => p.expect("never closed"),
            _ = &mut shutdown => break,
        };
        let (stream, peer) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        // The peer's address, for the bucket policies' `aws:SourceIp`.
        let app = tower::Layer::layer(
            &axum::Extension(axum::extract::ConnectInfo(peer)),
            app.clone(),
        );
        let service = TowerToHyperService::new(app);
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
        let conn = graceful.watch(conn.into_owned());
        crate::metrics::connections(1.0);
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
            crate::metrics::connections(-1.0);
        });
    }
    drop(listener);
    tracing::info!("shutting down: finishing in-flight requests");
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(limits.shutdown_deadline) => {
            tracing::warn!(deadline_secs = limits.shutdown_deadline.as_secs(), "shutdown deadline reached; dropping the requests still running");
        }
    }
    Ok(())
}
