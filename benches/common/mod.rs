//! Helpers shared by the benchmark programs that drive the real `grids3` binary over HTTP:
//! SigV4 signing (UNSIGNED-PAYLOAD), requests, the gateway process, `/proc` readings.
#![allow(dead_code)]

use std::time::Duration;

use futures::StreamExt;
use grids3::auth::sigv4;
use grids3::devdb::free_port;

pub const AK: &str = "benchroot";
pub const SK: &str = "benchroot-secret";

pub fn signed(method: &str, host: &str, path: &str, query: &str) -> Vec<(String, String)> {
    sigv4::client_headers(
        method,
        host,
        path,
        query,
        "UNSIGNED-PAYLOAD",
        AK,
        SK,
        "us-east-1",
    )
}

/// CPU seconds (user + system) the process has used.
pub fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
    ticks / 100.0
}

pub fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A signed request; `body` is `(length, seed)` of a generated body streamed in 1 MiB pieces.
pub async fn request(
    client: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    body: Option<(usize, usize)>,
) -> reqwest::Response {
    request_q(client, addr, method, path, "", body).await
}

/// [`request`] with a query string (raw, as it goes on the URL).
pub async fn request_q(
    client: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    query: &str,
    body: Option<(usize, usize)>,
) -> reqwest::Response {
    send(client, addr, method, path, query, &[], body).await
}

/// [`request`] with extra (unsigned) headers.
pub async fn request_h(
    client: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<(usize, usize)>,
) -> reqwest::Response {
    send(client, addr, method, path, "", headers, body).await
}

async fn send(
    client: &reqwest::Client,
    addr: &str,
    method: &str,
    path: &str,
    query: &str,
    headers: &[(String, String)],
    body: Option<(usize, usize)>,
) -> reqwest::Response {
    let url = if query.is_empty() {
        format!("http://{addr}{path}")
    } else {
        format!("http://{addr}{path}?{query}")
    };
    let mut rb = client.request(method.parse().unwrap(), url);
    for (k, v) in signed(method, addr, path, query)
        .into_iter()
        .chain(headers.iter().cloned())
    {
        rb = rb.header(k, v);
    }
    if let Some((len, seed)) = body {
        let piece: Vec<u8> = (0..1024 * 1024).map(|i: usize| (i ^ seed) as u8).collect();
        let (n, rest) = (len / piece.len(), len % piece.len());
        let s = futures::stream::iter(0..n + usize::from(rest > 0)).map(move |i| {
            let k = if i < n { piece.len() } else { rest };
            Ok::<_, std::io::Error>(piece[..k].to_vec())
        });
        rb = rb
            .header("content-length", len.to_string())
            .body(reqwest::Body::wrap_stream(s));
    }
    rb.send().await.expect("request")
}

/// The release `grids3` binary over `uri`, serving on a free port once it is ready.
pub async fn start_gateway(uri: &str) -> anyhow::Result<(std::process::Child, String)> {
    start_gateway_env(uri, &[]).await
}

/// [`start_gateway`] with extra environment variables.
pub async fn start_gateway_env(
    uri: &str,
    env: &[(&str, &str)],
) -> anyhow::Result<(std::process::Child, String)> {
    let addr = format!("127.0.0.1:{}", free_port()?);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_grids3"))
        .envs(env.iter().copied())
        .env("MONGODB_URI", uri)
        .env("GRIDS3_LISTEN", &addr)
        .env("GRIDS3_ROOT_ACCESS_KEY", AK)
        .env("GRIDS3_ROOT_SECRET_KEY", SK)
        .env("RUST_LOG", "warn")
        .spawn()?;
    let client = reqwest::Client::new();
    for _ in 0..300 {
        if client
            .get(format!("http://{addr}/_grids3/ready"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok((child, addr))
}

/// A GridFS chunk document built around `data` with one copy, as the gateway builds its own.
pub fn chunk_doc(
    id: mongodb::bson::oid::ObjectId,
    n: i32,
    data: &[u8],
) -> mongodb::bson::RawDocumentBuf {
    let mut b = Vec::with_capacity(64 + data.len());
    b.extend_from_slice(&[0; 4]);
    b.push(0x07);
    b.extend_from_slice(b"_id\0");
    b.extend_from_slice(&mongodb::bson::oid::ObjectId::new().bytes());
    b.push(0x07);
    b.extend_from_slice(b"files_id\0");
    b.extend_from_slice(&id.bytes());
    b.push(0x10);
    b.extend_from_slice(b"n\0");
    b.extend_from_slice(&n.to_le_bytes());
    b.push(0x05);
    b.extend_from_slice(b"data\0");
    b.extend_from_slice(&(data.len() as i32).to_le_bytes());
    b.push(0x00);
    b.extend_from_slice(data);
    b.push(0x00);
    let len = b.len() as i32;
    b[..4].copy_from_slice(&len.to_le_bytes());
    mongodb::bson::RawDocumentBuf::from_bytes(b).expect("a well-formed chunk document")
}

/// A signed PUT of `bytes` (UNSIGNED-PAYLOAD) with extra headers.
pub async fn put_bytes(
    client: &reqwest::Client,
    addr: &str,
    path: &str,
    headers: &[(String, String)],
    bytes: Vec<u8>,
) -> reqwest::Response {
    let mut rb = client.put(format!("http://{addr}{path}"));
    for (k, v) in signed("PUT", addr, path, "")
        .into_iter()
        .chain(headers.iter().cloned())
    {
        rb = rb.header(k, v);
    }
    rb.body(bytes).send().await.expect("request")
}
