//! The webhook target: an HTTP(S) POST of the event JSON, with `Authorization: Bearer <token>`
//! when a token is set. Delivered means a 2xx answer; anything else is retried by the
//! dispatcher. HTTPS trusts the system's roots (rustls, through reqwest).

use futures::future::BoxFuture;

use super::{SendError, Sender, SEND_TIMEOUT};

/// A webhook target.
pub struct Webhook {
    url: String,
    token: Option<zeroize::Zeroizing<String>>,
    client: reqwest::Client,
}

impl Webhook {
    /// A webhook POSTing to `url`.
    pub fn new(url: String, token: Option<String>) -> Self {
        let client = reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .connect_timeout(SEND_TIMEOUT)
            // An event is not re-sent to wherever a redirect points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap_or_default();
        Self {
            url,
            token: token.map(zeroize::Zeroizing::new),
            client,
        }
    }
}

impl Sender for Webhook {
    fn send<'a>(&'a self, id: &'a str, body: &'a [u8]) -> BoxFuture<'a, Result<(), SendError>> {
        Box::pin(async move {
            let mut req = self
                .client
                .post(&self.url)
                .header("content-type", "application/json")
                // A stable id per event, so that a receiver can drop a repeat after a failover.
                .header("x-grids3-event-id", id)
                .body(body.to_vec());
            if let Some(t) = &self.token {
                req = req.bearer_auth(t.as_str());
            }
            let resp = req
                .send()
                .await
                .map_err(|e| SendError::Unreachable(e.without_url().to_string()))?;
            let status = resp.status();
            if status.is_success() {
                Ok(())
            } else if status.is_client_error()
                && status != reqwest::StatusCode::REQUEST_TIMEOUT
                && status != reqwest::StatusCode::TOO_MANY_REQUESTS
            {
                Err(SendError::Rejected(format!("HTTP {status}")))
            } else {
                Err(SendError::Refused(format!("HTTP {status}")))
            }
        })
    }
}
