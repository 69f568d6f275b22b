//! The NATS target: a publish on a subject, either core NATS (delivered once the server has
//! taken it: the publish is flushed, which waits for the server's answer to a ping) or
//! JetStream (delivered once the stream acknowledges it, with the event id as `Nats-Msg-Id`,
//! so the stream drops a repeat within its duplicate window). Core NATS keeps nothing for a
//! subscriber that is not connected: use JetStream where a consumer may be away.

use futures::future::BoxFuture;
use tokio::sync::Mutex;

use super::{SendError, Sender, SEND_TIMEOUT};

/// A NATS target.
pub struct Nats {
    url: String,
    subject: String,
    jetstream: bool,
    /// The connection, made on first use and kept (the client reconnects by itself).
    client: Mutex<Option<async_nats::Client>>,
}

impl Nats {
    /// A target publishing on `subject` at `url`.
    pub fn new(url: String, subject: String, jetstream: bool) -> Self {
        Self {
            url,
            subject,
            jetstream,
            client: Mutex::new(None),
        }
    }

    async fn client(&self) -> Result<async_nats::Client, SendError> {
        let mut slot = self.client.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.clone());
        }
        let c = async_nats::ConnectOptions::new()
            .connection_timeout(SEND_TIMEOUT)
            .connect(self.url.as_str())
            .await
            .map_err(|e| SendError::Unreachable(e.to_string()))?;
        *slot = Some(c.clone());
        Ok(c)
    }

    async fn publish(&self, id: &str, body: &[u8]) -> Result<(), SendError> {
        let client = self.client().await?;
        let payload = bytes::Bytes::copy_from_slice(body);
        if self.jetstream {
            let js = async_nats::jetstream::new(client);
            let mut headers = async_nats::HeaderMap::new();
            headers.insert("Nats-Msg-Id", id);
            let ack = js
                .publish_with_headers(self.subject.clone(), headers, payload)
                .await
                .map_err(|e| SendError::Unreachable(e.to_string()))?;
            ack.await.map_err(|e| SendError::Refused(e.to_string()))?;
        } else {
            client
                .publish(self.subject.clone(), payload)
                .await
                .map_err(|e| match e.kind() {
                    async_nats::client::PublishErrorKind::MaxPayloadExceeded
                    | async_nats::client::PublishErrorKind::BadSubject => {
                        SendError::Rejected(e.to_string())
                    }
                    _ => SendError::Unreachable(e.to_string()),
                })?;
            client
                .flush()
                .await
                .map_err(|e| SendError::Unreachable(e.to_string()))?;
        }
        Ok(())
    }
}

impl Sender for Nats {
    fn send<'a>(&'a self, id: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            match tokio::time::timeout(SEND_TIMEOUT, self.publish(id, body)).await {
                Ok(r) => r,
                Err(_) => Err(SendError::Unreachable(format!(
                    "no answer from {} within {SEND_TIMEOUT:?}",
                    self.url
                ))),
            }
        })
    }
}
