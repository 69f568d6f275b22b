//! Fetching a provider's discovery document and key set, bounded in size and time.
//!
//! Both answers come from a server grids3 does not control, so each fetch has a deadline for
//! the whole exchange (connect, headers and body), the body is read piece by piece and
//! dropped as soon as it passes the size bound, redirects are not followed (a redirect could
//! lead to any address; the policy's resolver would refuse internal ones, but a provider has
//! no reason to redirect), no proxy from the environment is used (it would connect on our
//! behalf to addresses the resolver never sees), and every address connected to passes the
//! URL policy ([`super::issuer::PolicyResolver`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::error::OidcError;
use super::issuer::{check_fetch_url, NormalizedIssuer, OidcPolicy, PolicyResolver};
use super::Limits;

/// The HTTP side of the verifier: one client with the policy's resolver.
pub(crate) struct Fetcher {
    client: reqwest::Client,
    policy: Arc<OidcPolicy>,
    timeout: Duration,
    max_body: usize,
}

fn comm(msg: impl Into<String>) -> OidcError {
    OidcError::IdpCommunication(msg.into())
}

impl Fetcher {
    /// A client for `policy` with the limits' bounds.
    pub(crate) fn new(policy: Arc<OidcPolicy>, limits: &Limits) -> Result<Self, OidcError> {
        let client = reqwest::Client::builder()
            .dns_resolver(Arc::new(PolicyResolver::new(policy.clone())))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .connect_timeout(limits.timeout)
            .timeout(limits.timeout)
            .user_agent(concat!("grids3/", env!("CARGO_PKG_VERSION"), " oidc"))
            .build()
            .map_err(|e| comm(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            client,
            policy,
            timeout: limits.timeout,
            max_body: limits.max_body,
        })
    }

    /// The discovery document, checked: its `issuer` must equal the configured issuer
    /// exactly (OIDC Discovery §4.3: otherwise a provider could vouch for another's tokens).
    pub(crate) async fn discovery(
        &self,
        issuer: &NormalizedIssuer,
    ) -> Result<Map<String, Value>, OidcError> {
        // The issuer's string plus the suffix (not `Url::join`, which would drop the issuer's
        // last path segment when it has no trailing slash).
        let url = url::Url::parse(&issuer.discovery_url())
            .map_err(|e| comm(format!("the issuer has no discovery URL: {e}")))?;
        let doc = self.get_json(url, "discovery document").await?;
        match doc.get("issuer") {
            Some(Value::String(s)) if *s == issuer.issuer => Ok(doc),
            Some(Value::String(s)) => Err(comm(format!(
                "the discovery document's issuer {s:?} is not the provider's URL {:?}",
                issuer.issuer
            ))),
            _ => Err(comm("the discovery document has no issuer")),
        }
    }

    /// The discovery document's `jwks_uri`, checked: the key set URL must pass the same
    /// policy as the issuer.
    pub(crate) async fn jwks_uri(&self, issuer: &NormalizedIssuer) -> Result<url::Url, OidcError> {
        let doc = self.discovery(issuer).await?;
        let Some(Value::String(jwks)) = doc.get("jwks_uri") else {
            return Err(comm("the discovery document has no jwks_uri"));
        };
        check_fetch_url(&self.policy, jwks).map_err(|e| comm(format!("jwks_uri refused: {e}")))
    }

    /// The key set document at `url`.
    pub(crate) async fn jwks(&self, url: url::Url) -> Result<Map<String, Value>, OidcError> {
        self.get_json(url, "key set").await
    }

    /// GETs `url` and reads a JSON object from it, within the time and size bounds.
    async fn get_json(&self, url: url::Url, what: &str) -> Result<Map<String, Value>, OidcError> {
        let req = self.client.get(url).header("accept", "application/json");
        self.json_of(req, what, false).await
    }

    /// POSTs `form` to `url` (a token endpoint, with the client's `basic` credentials when
    /// given) and reads the JSON object answered, within the same bounds. An error answer
    /// (RFC 6749 §5.2: 400 with `error`) is read too, for its `error` code.
    pub(crate) async fn post_form(
        &self,
        url: url::Url,
        form: &[(&str, &str)],
        basic: Option<&str>,
        what: &str,
    ) -> Result<Map<String, Value>, OidcError> {
        let mut req = self
            .client
            .post(url)
            .header("accept", "application/json")
            .form(form);
        if let Some(b) = basic {
            req = req.header("authorization", format!("Basic {b}"));
        }
        self.json_of(req, what, true).await
    }

    /// Sends `req` and reads a JSON object from its answer, within the time and size bounds
    /// (`errors_too`: also from a 4xx answer).
    async fn json_of(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
        errors_too: bool,
    ) -> Result<Map<String, Value>, OidcError> {
        let started = std::time::Instant::now();
        let result =
            tokio::time::timeout(self.timeout, self.read_bounded(req, what, errors_too)).await;
        let outcome = match &result {
            Ok(Ok(_)) => "ok",
            Ok(Err(_)) => "error",
            Err(_) => "timeout",
        };
        metrics::counter!("grids3_oidc_fetches_total", "doc" => what.to_owned(), "outcome" => outcome)
            .increment(1);
        let body = match result {
            Ok(r) => r?,
            Err(_) => {
                return Err(comm(format!(
                    "the provider's {what} did not arrive within {} ms",
                    started.elapsed().as_millis()
                )))
            }
        };
        match serde_json::from_slice::<Value>(&body) {
            Ok(Value::Object(m)) => Ok(m),
            _ => Err(comm(format!("the provider's {what} is not a JSON object"))),
        }
    }

    async fn read_bounded(
        &self,
        req: reqwest::RequestBuilder,
        what: &str,
        errors_too: bool,
    ) -> Result<Vec<u8>, OidcError> {
        let mut resp = req
            .send()
            .await
            .map_err(|e| comm(format!("cannot fetch the provider's {what}: {}", chain(&e))))?;
        let client_error = errors_too && resp.status().is_client_error();
        if resp.status() != reqwest::StatusCode::OK && !client_error {
            return Err(comm(format!(
                "the provider answered {} for its {what}",
                resp.status().as_u16()
            )));
        }
        let too_large = || {
            comm(format!(
                "the provider's {what} is larger than {} bytes",
                self.max_body
            ))
        };
        if resp
            .content_length()
            .is_some_and(|n| n > self.max_body as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| comm(format!("reading the provider's {what}: {}", chain(&e))))?
        {
            if body.len() + chunk.len() > self.max_body {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }
}

/// An error with its causes (reqwest's own message hides the resolver's reason).
fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
