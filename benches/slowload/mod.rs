//! Slow and hostile clients against a running gateway, and a normal client beside them: the
//! load of issue 25 item 5. Shared by the `slow_clients` benchmark program (full size) and an
//! integration test (bounded), which include this file.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A connection to `addr` from `from`.
async fn connect_from(from: std::net::IpAddr, addr: &str) -> std::io::Result<TcpStream> {
    let to: std::net::SocketAddr = addr.parse().map_err(std::io::Error::other)?;
    let sock = TcpSocket::new_v4()?;
    sock.bind(std::net::SocketAddr::new(from, 0))?;
    sock.connect(to).await
}

/// Signs a request: `(method, path)` to the headers to send (Host excluded).
pub type Signer = Arc<dyn Fn(&str, &str) -> Vec<(String, String)> + Send + Sync>;

/// How much load.
#[derive(Clone, Debug)]
pub struct Load {
    /// Connections that send their request head a line every 2 s and never finish it; each
    /// reconnects at once when the server closes it (sustained).
    pub slow_headers: usize,
    /// The address the slow and hostile clients connect from (another loopback address, as an
    /// attacker is another host); the normal client connects from the default one.
    pub attacker: std::net::IpAddr,
    /// The address the slow readers connect from (a third host: they are slow, not idle, and
    /// are measured for the memory they hold).
    pub readers_from: std::net::IpAddr,
    /// The address the dripping bodies come from (their own host, so that what cuts them is
    /// the body rate, not the attacker's connection share).
    pub drips_from: std::net::IpAddr,
    /// Pause before a slow-header connection reconnects (0: at once, the worst case).
    pub reconnect_delay: Duration,
    /// PUTs that announce 1 MiB and send one byte every 20 s.
    pub drips: usize,
    /// GETs of `big` read at `reader_rate` bytes/s.
    pub readers: usize,
    /// Bytes per second each reader takes.
    pub reader_rate: usize,
    /// The normal client's GETs of `small`, each on a new connection, 250 ms apart.
    pub normal_gets: usize,
    /// How long the slow connections get to pile up before the normal client starts.
    pub warmup: Duration,
    /// `/bucket/key` of a small object.
    pub small: String,
    /// `/bucket/key` of a large object.
    pub big: String,
}

/// What the run saw.
#[derive(Debug, Default)]
pub struct Figures {
    /// Each normal GET's time to its whole body, or `None` if it failed or took over 10 s.
    pub gets: Vec<Option<Duration>>,
    /// How long each drip body lasted before the server answered or closed it (`None`: still
    /// open after 120 s).
    pub drips_cut_after: Vec<Option<Duration>>,
    /// Slow-header connections opened (first ones and reconnections).
    pub slow_connects: u64,
    /// Bytes the slow readers received.
    pub reader_bytes: u64,
}

async fn slow_header(
    from: std::net::IpAddr,
    addr: String,
    small: String,
    delay: Duration,
    stop: Arc<AtomicBool>,
    connects: Arc<AtomicU64>,
) {
    let mut first = true;
    while !stop.load(Ordering::SeqCst) {
        if !first && !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        first = false;
        let Ok(mut s) = connect_from(from, &addr).await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        connects.fetch_add(1, Ordering::SeqCst);
        if s.write_all(format!("GET {small} HTTP/1.1\r\nHost: {addr}\r\n").as_bytes())
            .await
            .is_err()
        {
            continue;
        }
        let mut buf = [0u8; 1024];
        let mut n = 0u64;
        loop {
            if stop.load(Ordering::SeqCst) {
                return;
            }
            tokio::select! {
                r = s.read(&mut buf) => match r {
                    // Closed (or answered, for a server that gave up on the head).
                    Ok(_) | Err(_) => break,
                },
                _ = tokio::time::sleep(Duration::from_secs(2)) => {
                    n += 1;
                    if s.write_all(format!("x-slow-{n}: {n}\r\n").as_bytes()).await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}

async fn drip(
    from: std::net::IpAddr,
    addr: String,
    path: String,
    sign: Signer,
) -> Option<Duration> {
    let mut s = connect_from(from, &addr).await.ok()?;
    let mut head = format!("PUT {path} HTTP/1.1\r\nHost: {addr}\r\ncontent-length: 1048576\r\n");
    for (k, v) in sign("PUT", &path) {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.ok()?;
    let t = Instant::now();
    let mut buf = [0u8; 1024];
    loop {
        if t.elapsed() > Duration::from_secs(120) {
            return None;
        }
        tokio::select! {
            _ = s.read(&mut buf) => return Some(t.elapsed()),
            _ = tokio::time::sleep(Duration::from_secs(20)) => {
                if s.write_all(b"x").await.is_err() {
                    return Some(t.elapsed());
                }
            }
        }
    }
}

async fn reader(
    from: std::net::IpAddr,
    addr: String,
    big: String,
    rate: usize,
    sign: Signer,
    stop: Arc<AtomicBool>,
    bytes: Arc<AtomicU64>,
) {
    let client = reqwest::Client::builder()
        .local_address(from)
        .build()
        .expect("client");
    while !stop.load(Ordering::SeqCst) {
        let mut rb = client.get(format!("http://{addr}{big}"));
        for (k, v) in sign("GET", &big) {
            rb = rb.header(k, v);
        }
        let Ok(r) = rb.send().await else {
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        };
        let mut body = r.bytes_stream();
        while let Some(Ok(b)) = body.next().await {
            bytes.fetch_add(b.len() as u64, Ordering::SeqCst);
            if stop.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_secs_f64(b.len() as f64 / rate as f64)).await;
        }
    }
}

/// Runs the load against `addr` and returns what it saw.
pub async fn run(addr: &str, load: &Load, sign: Signer) -> Figures {
    let stop = Arc::new(AtomicBool::new(false));
    let connects = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let mut background = Vec::new();
    for _ in 0..load.slow_headers {
        background.push(tokio::spawn(slow_header(
            load.attacker,
            addr.to_owned(),
            load.small.clone(),
            load.reconnect_delay,
            stop.clone(),
            connects.clone(),
        )));
    }
    for _ in 0..load.readers {
        background.push(tokio::spawn(reader(
            load.readers_from,
            addr.to_owned(),
            load.big.clone(),
            load.reader_rate,
            sign.clone(),
            stop.clone(),
            bytes.clone(),
        )));
    }
    let drips: Vec<_> = (0..load.drips)
        .map(|i| {
            let path = format!("{}-drip{i}", load.small);
            tokio::spawn(drip(load.drips_from, addr.to_owned(), path, sign.clone()))
        })
        .collect();
    tokio::time::sleep(load.warmup).await;
    let mut gets = Vec::new();
    for _ in 0..load.normal_gets {
        // A new connection each time: the harder case (a pooled one is already in).
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .build()
            .expect("client");
        let t = Instant::now();
        let mut rb = client.get(format!("http://{addr}{}", load.small));
        for (k, v) in sign("GET", &load.small) {
            rb = rb.header(k, v);
        }
        let got = tokio::time::timeout(Duration::from_secs(10), async {
            let r = rb.send().await.ok()?;
            r.status().is_success().then_some(())?;
            r.bytes().await.ok()
        })
        .await
        .ok()
        .flatten();
        gets.push(got.map(|_| t.elapsed()));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut drips_cut_after = Vec::new();
    for d in drips {
        drips_cut_after.push(d.await.unwrap_or(None));
    }
    stop.store(true, Ordering::SeqCst);
    for b in background {
        b.abort();
    }
    Figures {
        gets,
        drips_cut_after,
        slow_connects: connects.load(Ordering::SeqCst),
        reader_bytes: bytes.load(Ordering::SeqCst),
    }
}
