//! One keep-alive HTTP/1.1 connection of the load generator, signing each request with SigV4
//! as the given key; it reconnects after an error.

use std::sync::Arc;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;

use crate::admin_cli::Target;
use crate::auth::sigv4;

/// Who signs and where to.
pub struct Signer {
    pub target: Target,
    pub access_key: String,
    pub secret_key: crate::config::Secret,
    pub region: String,
    /// Temporary credentials' session token (`grids3 bench --session`).
    pub session_token: Option<String>,
    /// The service signed for (`s3`; `sts` to get a session).
    pub service: &'static str,
}

/// A connection (made on first use).
pub struct Conn {
    signer: Arc<Signer>,
    tx: Option<SendRequest<Full<Bytes>>>,
}

/// An answer: status and body.
pub struct Answer {
    pub status: u16,
    pub body: Bytes,
}

impl Conn {
    pub fn new(signer: Arc<Signer>) -> Self {
        Conn { signer, tx: None }
    }

    async fn sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>> {
        if self.tx.as_ref().is_none_or(|t| t.is_closed()) {
            let io = hyper_util::rt::TokioIo::new(self.signer.target.connect().await?);
            let (tx, conn) = hyper::client::conn::http1::handshake(io)
                .await
                .context("HTTP handshake")?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            self.tx = Some(tx);
        }
        Ok(self.tx.as_mut().expect("connected"))
    }

    /// Sends a signed request and reads the whole answer. `payload` is signed by its hash
    /// when `signed_payload`, else sent as UNSIGNED-PAYLOAD (as SDKs do over TLS).
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        query: &str,
        body: Bytes,
        extra: &[(&str, String)],
        signed_payload: bool,
    ) -> Result<Answer> {
        let hash = if signed_payload {
            sigv4::sha256_hex(&body)
        } else {
            "UNSIGNED-PAYLOAD".to_owned()
        };
        let s = self.signer.clone();
        let host = s.target.host();
        let uri = if query.is_empty() {
            path.to_owned()
        } else {
            format!("{path}?{query}")
        };
        // (The signing helper returns the headers to add besides `host`.)
        let mut req = hyper::Request::builder()
            .method(method)
            .uri(uri)
            .header("host", host);
        for (k, v) in sigv4::client_headers_for(
            method,
            host,
            (path, query),
            &hash,
            (&s.access_key, &s.secret_key, s.session_token.as_deref()),
            &s.region,
            s.service,
        ) {
            req = req.header(k, v);
        }
        for (k, v) in extra {
            req = req.header(*k, v);
        }
        let req = req
            .header("content-length", body.len())
            .body(Full::new(body))?;
        let result = async {
            let tx = self.sender().await?;
            tx.ready().await?;
            let resp = tx.send_request(req).await?;
            let status = resp.status().as_u16();
            let body = resp.into_body().collect().await?.to_bytes();
            anyhow::Ok(Answer { status, body })
        }
        .await;
        if result.is_err() {
            self.tx = None;
        }
        result
    }
}
