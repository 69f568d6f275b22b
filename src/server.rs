//! The HTTP server loop: accepts connections under a connection limit and serves each with
//! hyper, with a header-read timeout (which also closes idle keep-alive connections, since
//! hyper starts it whenever it waits for a request head) and graceful shutdown that waits for
//! in-flight requests up to a deadline.
//!
//! Slow or hostile clients must not starve the others. Before, 1,200 connections that never
//! finished their headers held all 1,024 slots for the header timeout, and a normal GET waited
//! 36 s. Now, when the slots are full (or one address holds its share), the connection that
//! has waited longest without a request in progress is closed to make room; connections with
//! a request in progress are never shed. Only when every slot is busy does a new connection
//! wait in the backlog.

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore};
use tokio::time::Instant;
use tokio_util::either::Either;

/// Connection-level limits (see `config.rs`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once.
    pub max_connections: usize,
    /// Connections one client address may hold; past it, its idlest one is shed.
    pub max_connections_per_client: usize,
    /// Proxies whose `X-Forwarded-For` names the client (`--trusted-proxies`).
    pub trusted_proxies: &'static [crate::model::net::Cidr],
    /// Time a client has to send a request's head (and the longest idle keep-alive).
    pub header_read_timeout: Duration,
    /// How long shutdown waits for in-flight requests.
    pub shutdown_deadline: Duration,
}

/// How long a connection must have gone without a request before it may be shed: a new
/// connection gets this long to send its request head however fast others arrive (without it,
/// clients reconnecting at once shed each other, and anyone else, faster than a loaded server
/// reads a head).
const SHED_AFTER: Duration = Duration::from_secs(1);

/// One served connection, as the shedding sees it.
struct Conn {
    ip: IpAddr,
    /// Requests in progress (until their response body ends).
    busy: AtomicUsize,
    /// Since when it has had no request in progress.
    idle_since: Mutex<Instant>,
    /// Closes it.
    shed: Notify,
}

/// The connections being served.
#[derive(Default)]
struct Registry {
    conns: Mutex<HashMap<u64, Arc<Conn>>>,
    /// Connections per client address (what the per-client cap counts, without a scan).
    per_ip: Mutex<HashMap<IpAddr, usize>>,
    /// Requests in progress per client address: HTTP/1 requests and HTTP/2 streams alike, so
    /// that one connection multiplexing many streams counts as many, not one.
    requests_per_ip: Mutex<HashMap<IpAddr, usize>>,
    next: AtomicU64,
}

impl Registry {
    fn add(&self, ip: IpAddr) -> (u64, Arc<Conn>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let c = Arc::new(Conn {
            ip,
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            shed: Notify::new(),
        });
        self.conns.lock().expect("registry").insert(id, c.clone());
        *self.per_ip.lock().expect("per ip").entry(ip).or_default() += 1;
        (id, c)
    }

    /// Forgets a connection that ended (shed ones were taken out of `conns` already).
    fn remove(&self, id: u64, ip: IpAddr) {
        self.conns.lock().expect("registry").remove(&id);
        let mut per_ip = self.per_ip.lock().expect("per ip");
        if let Some(n) = per_ip.get_mut(&ip) {
            *n -= 1;
            if *n == 0 {
                per_ip.remove(&ip);
            }
        }
    }

    fn count(&self, ip: IpAddr) -> usize {
        self.per_ip
            .lock()
            .expect("per ip")
            .get(&ip)
            .copied()
            .unwrap_or(0)
    }

    /// Closes the connection (of `ip`, if given) idle the longest, if one has been idle for
    /// at least [`SHED_AFTER`]; `false` if none has.
    fn shed_idlest(&self, ip: Option<IpAddr>) -> bool {
        let mut conns = self.conns.lock().expect("registry");
        let now = Instant::now();
        let idlest = conns
            .iter()
            .filter(|(_, c)| c.busy.load(Ordering::SeqCst) == 0 && ip.is_none_or(|ip| c.ip == ip))
            .map(|(id, c)| (*id, *c.idle_since.lock().expect("idle")))
            .filter(|(_, since)| now.duration_since(*since) >= SHED_AFTER)
            .min_by_key(|(_, since)| *since)
            .map(|(id, _)| id);
        match idlest.and_then(|id| conns.remove(&id)) {
            Some(c) => {
                // `notify_one` stores the wake-up if the task is not waiting yet.
                c.shed.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Marks a connection busy, and counts a request of its client address, for as long as it
/// lives (the request and its response body).
struct Busy(Arc<Conn>, Arc<Registry>, IpAddr);

impl Busy {
    /// Takes a request slot of the client's address `ip` (the peer's, or the forwarded
    /// client's behind a trusted proxy), or `None` when that address already has `limit`
    /// requests in progress.
    fn new(c: Arc<Conn>, registry: Arc<Registry>, ip: IpAddr, limit: usize) -> Option<Self> {
        {
            let mut per_ip = registry.requests_per_ip.lock().expect("requests per ip");
            let n = per_ip.entry(ip).or_default();
            if *n >= limit {
                return None;
            }
            *n += 1;
        }
        c.busy.fetch_add(1, Ordering::SeqCst);
        Some(Self(c, registry, ip))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.idle_since.lock().expect("idle") = Instant::now();
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        let mut per_ip = self.1.requests_per_ip.lock().expect("requests per ip");
        if let Some(n) = per_ip.get_mut(&self.2) {
            *n -= 1;
            if *n == 0 {
                per_ip.remove(&self.2);
            }
        }
    }
}

/// A response body that keeps its connection marked busy until it ends.
struct BusyBody {
    inner: axum::body::Body,
    _busy: Busy,
}

impl http_body::Body for BusyBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// hyper's HTTP/1 buffer limit, down from its 400 KiB. It bounds what hyper queues for writing
/// before it stops taking response body frames: at 400 KiB a slow reader's connection held two
/// 255 KiB chunks there, at 128 KiB one (64 slow readers: 16 MiB less). It also caps a request
/// head, far above the 8 KiB AWS accepts.
const HTTP1_MAX_BUF: usize = 128 * 1024;

/// HTTP/2 streams one connection may have open at once (hyper's default is 200). Each stream
/// is a request, and counts against its address's `--max-connections-per-client` requests in
/// progress like an HTTP/1 connection's request does.
const H2_MAX_STREAMS: u32 = 100;

/// How long a refused connection is held, unread, before it is closed.
const REFUSE_DELAY: Duration = Duration::from_secs(1);

/// Refused connections held at once at most (past it they are closed at once).
const MAX_HELD: usize = 2048;

/// Closes a refused connection after [`REFUSE_DELAY`]. Closed at once, a refused client
/// reconnects at once: one address at its cap spun through accept-and-close about 5,800 times a
/// second, and the accept loop spent itself on it while other clients' connections waited in
/// the backlog. Held, each of its connecting tasks waits a second per attempt. Held sockets
/// cost a task and a file descriptor each, hence the bound.
fn refuse_later(stream: tokio::net::TcpStream, held: &Arc<AtomicUsize>) {
    if held.fetch_add(1, Ordering::SeqCst) >= MAX_HELD {
        held.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let held = held.clone();
    tokio::spawn(async move {
        tokio::time::sleep(REFUSE_DELAY).await;
        drop(stream);
        held.fetch_sub(1, Ordering::SeqCst);
    });
}

/// A listening socket with a backlog of 4,096 (tokio's `bind` takes 1,024): connections that
/// arrive while the accept loop is busy refusing a flood from one address wait in it instead
/// of being dropped, which would cost a normal client a SYN retransmit (1 s, then 2 s, 4 s).
/// The kernel caps it at `net.core.somaxconn`.
pub fn bind(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(4096)
}

/// Serves `app` on `listener` until `shutdown` resolves, then drains. With `tls`, every
/// connection speaks TLS (the handshake must finish within the header timeout, and a connection
/// in its handshake is idle for the shedding).
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    tls: Option<Arc<crate::tls::Tls>>,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let registry = Arc::new(Registry::default());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(HTTP1_MAX_BUF);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(Some(limits.header_read_timeout))
        .max_concurrent_streams(H2_MAX_STREAMS);
    let builder = Arc::new(builder);
    let transport = crate::tls::Transport { tls: tls.is_some() };
    let held = Arc::new(AtomicUsize::new(0));
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
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
        let ip = peer.ip();
        if registry.count(ip) >= limits.max_connections_per_client.max(1) {
            if registry.shed_idlest(Some(ip)) {
                crate::metrics::connection_shed("per_client");
            } else {
                // Every connection of this address has a request in progress: it gets no more.
                crate::metrics::connection_refused("per_client");
                refuse_later(stream, &held);
                continue;
            }
        }
        let permit = match slots.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // Full: shed the idlest connection (its slot frees as its task ends), or wait
                // for a request to finish, looking again as connections age.
                let mut permit = None;
                while permit.is_none() {
                    if registry.shed_idlest(None) {
                        crate::metrics::connection_shed("idle");
                    }
                    tokio::select! {
                        p = slots.clone().acquire_owned() => permit = Some(p.expect("never closed")),
                        _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                        _ = &mut shutdown => break,
                    }
                }
                match permit {
                    Some(p) => p,
                    None => break,
                }
            }
        };
        let _ = stream.set_nodelay(true);
        let (id, conn_state) = registry.add(ip);
        // The peer's address, for the bucket policies' `aws:SourceIp`, and whether TLS
        // carried the request, for SSE-C.
        let inner = tower::Layer::layer(&axum::Extension(transport), app.clone());
        let trusted = limits.trusted_proxies;
        let marked = conn_state.clone();
        let counted = registry.clone();
        let per_client = limits.max_connections_per_client.max(1);
        let svc = tower::service_fn(move |mut req: axum::http::Request<hyper::body::Incoming>| {
            // The client's address (for `aws:SourceIp` and the per-client count): the peer's,
            // or behind a trusted proxy the client it forwards for.
            // Every X-Forwarded-For line, in order (a proxy may add a line of its own rather
            // than extend the client's).
            let forwarded: Vec<&str> = req
                .headers()
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .collect();
            let forwarded = (!forwarded.is_empty()).then(|| forwarded.join(","));
            let client = crate::model::net::client_ip(peer.ip(), forwarded.as_deref(), trusted);
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(std::net::SocketAddr::new(
                    client,
                    peer.port(),
                )));
            let busy = Busy::new(marked.clone(), counted.clone(), client, per_client);
            let inner = inner.clone();
            async move {
                let Some(busy) = busy else {
                    // The address has its share of requests in progress (over HTTP/2, many
                    // streams on few connections): a retryable refusal, not a queue.
                    crate::metrics::connection_refused("per_client_requests");
                    let head = req.method() == axum::http::Method::HEAD;
                    return Ok(crate::http::error_response(
                        &crate::error::S3Error::slow_down(),
                        "",
                        &crate::http::new_request_id(),
                        head,
                    ));
                };
                let resp = tower::ServiceExt::oneshot(inner, req).await?;
                Ok::<_, std::convert::Infallible>(resp.map(|b| {
                    axum::body::Body::new(BusyBody {
                        inner: b,
                        _busy: busy,
                    })
                }))
            }
        });
        let service = TowerToHyperService::new(svc);
        let watcher = graceful.watcher();
        let builder = builder.clone();
        let tls = tls.clone();
        let handshake_deadline = limits.header_read_timeout;
        crate::metrics::connections(1.0);
        let registry = registry.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let work = async move {
                let io = match tls {
                    None => Either::Left(stream),
                    Some(tls) => {
                        match tokio::time::timeout(
                            handshake_deadline,
                            tls.acceptor().accept(stream),
                        )
                        .await
                        {
                            Ok(Ok(s)) => Either::Right(s),
                            Ok(Err(e)) => {
                                crate::metrics::tls_handshake_failed();
                                tracing::debug!(error = %e, "TLS handshake failed");
                                return;
                            }
                            Err(_) => {
                                crate::metrics::tls_handshake_failed();
                                return;
                            }
                        }
                    }
                };
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
                if let Err(e) = watcher.watch(conn.into_owned()).await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            };
            tokio::select! {
                _ = work => {}
                // Shed to make room: dropping the connection closes it.
                _ = conn_state.shed.notified() => {}
            }
            registry.remove(id, ip);
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
