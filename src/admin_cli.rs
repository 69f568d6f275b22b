//! `grids3 admin ...`: calls a running gateway's admin API, signed with SigV4 as the root key,
//! over a minimal HTTP/1.1 client (one request per connection; the admin API is tiny), on
//! plain TCP or TLS.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::auth::sigv4;
use crate::config::{AdminAction, Config, NotifyAction};

/// Where the admin API is: `host:port`, and how to reach it.
pub struct Target {
    host: String,
    tls: Option<tokio_rustls::TlsConnector>,
}

impl Target {
    /// From an `http://` or `https://` URL; `ca_bundle` replaces the system's roots for https.
    pub fn parse(endpoint: &str, ca_bundle: Option<&std::path::Path>) -> Result<Target> {
        let (https, rest) = if let Some(r) = endpoint.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = endpoint.strip_prefix("http://") {
            (false, r)
        } else {
            bail!("the endpoint must be http://host:port or https://host:port");
        };
        let host = rest.trim_end_matches('/').to_owned();
        if !https {
            return Ok(Target { host, tls: None });
        }
        let mut roots = rustls::RootCertStore::empty();
        match ca_bundle {
            Some(path) => {
                for c in CertificateDer::pem_file_iter(path)
                    .with_context(|| format!("reading {}", path.display()))?
                {
                    roots
                        .add(c.with_context(|| format!("a certificate in {}", path.display()))?)?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    // A system certificate rustls cannot use is skipped, as browsers do.
                    let _ = roots.add(c);
                }
            }
        }
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
        Ok(Target {
            host,
            tls: Some(tokio_rustls::TlsConnector::from(Arc::new(config))),
        })
    }
}

/// A byte stream to the gateway, plain or TLS.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

impl Target {
    /// `host:port`.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// A new connection to the gateway.
    pub async fn connect(&self) -> Result<Box<dyn Io>> {
        let host = self.host.as_str();
        let stream = tokio::net::TcpStream::connect(host)
            .await
            .with_context(|| format!("connecting to {host}"))?;
        let _ = stream.set_nodelay(true);
        Ok(match &self.tls {
            None => Box::new(stream),
            Some(tls) => {
                let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
                let name = ServerName::try_from(name.trim_matches(['[', ']']).to_owned())
                    .with_context(|| format!("{name} is not a host name"))?;
                Box::new(
                    tls.connect(name, stream)
                        .await
                        .with_context(|| format!("TLS with {host}"))?,
                )
            }
        })
    }
}

/// How long `search-indexes` waits for a declaration's build before it gives up waiting.
const SEARCH_INDEX_WAIT: std::time::Duration = std::time::Duration::from_secs(900);

/// Runs one admin action and returns the answer's body.
pub async fn run(config: &Config, endpoint: &Target, action: &AdminAction) -> Result<String> {
    let answer = request(config, endpoint, action).await?;
    // A conversion runs in the gateway; the CLI waits for it unless told not to, by asking
    // for the bucket's attributes until it is no longer converting.
    if let AdminAction::ConvertBucket {
        name,
        no_wait: false,
        ..
    } = action
    {
        let info = AdminAction::BucketInfo { name: name.clone() };
        loop {
            let now = request(config, endpoint, &info).await?;
            let v: serde_json::Value = serde_json::from_str(&now).context("bucket info")?;
            if v.get("converting") != Some(&serde_json::Value::Bool(true)) {
                return Ok(now);
            }
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
    }
    // Declared search fields are built in the gateway; the CLI waits until each is ready
    // unless told not to.
    if let AdminAction::SearchIndexes {
        bucket,
        fields,
        no_wait: false,
        clear: false,
    } = action
    {
        if !fields.is_empty() {
            let show = AdminAction::SearchIndexes {
                bucket: bucket.clone(),
                fields: Vec::new(),
                clear: false,
                no_wait: true,
            };
            let started = std::time::Instant::now();
            loop {
                let now = request(config, endpoint, &show).await?;
                let v: serde_json::Value = serde_json::from_str(&now).context("search indexes")?;
                let building = v["fields"]
                    .as_array()
                    .is_some_and(|f| f.iter().any(|f| f["state"] != "ready"));
                if !building {
                    return Ok(now);
                }
                if started.elapsed() > SEARCH_INDEX_WAIT {
                    bail!(
                        "the indexes are still being built after {} s (the gateway goes on; \
                         `grids3 admin search-indexes {bucket}` shows their state): {now}",
                        SEARCH_INDEX_WAIT.as_secs()
                    );
                }
                tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            }
        }
    }
    Ok(answer)
}

/// Sends one admin request and returns the answer's body.
async fn request(config: &Config, endpoint: &Target, action: &AdminAction) -> Result<String> {
    let (method, path, body) = match action {
        AdminAction::CreateKey { name, email } => (
            "POST",
            "/_grids3/admin/keys".to_owned(),
            serde_json::json!({"name": name, "email": email}).to_string(),
        ),
        AdminAction::ListKeys => ("GET", "/_grids3/admin/keys".to_owned(), String::new()),
        AdminAction::Usage => ("GET", "/_grids3/admin/usage".to_owned(), String::new()),
        AdminAction::AccountQuota {
            account,
            bytes,
            objects,
        } => {
            let path = format!(
                "/_grids3/admin/accounts/{}/quota",
                sigv4::uri_encode(account, false)
            );
            if bytes.is_none() && objects.is_none() {
                ("GET", path, String::new())
            } else {
                let body = serde_json::json!({"bytes": bytes, "objects": objects});
                ("PUT", path, body.to_string())
            }
        }
        AdminAction::DeleteKey { id } => (
            "DELETE",
            format!("/_grids3/admin/keys/{}", sigv4::uri_encode(id, false)),
            String::new(),
        ),
        AdminAction::DisableKey { id } => (
            "POST",
            format!("/_grids3/admin/keys/{}/disable", sigv4::uri_encode(id, false)),
            String::new(),
        ),
        AdminAction::EnableKey { id } => (
            "POST",
            format!("/_grids3/admin/keys/{}/enable", sigv4::uri_encode(id, false)),
            String::new(),
        ),
        AdminAction::Grant { bucket, key, role } => (
            "PUT",
            format!(
                "/_grids3/admin/buckets/{}/grants",
                sigv4::uri_encode(bucket, false)
            ),
            serde_json::json!({"accessKeyId": key, "role": role}).to_string(),
        ),
        AdminAction::CreateBucket {
            name,
            storage,
            owner,
        } => (
            "POST",
            "/_grids3/admin/buckets".to_owned(),
            serde_json::json!({"name": name, "storage": storage, "owner": owner}).to_string(),
        ),
        AdminAction::ConvertBucket { name, to, .. } => (
            "POST",
            format!(
                "/_grids3/admin/buckets/{}/convert",
                sigv4::uri_encode(name, false)
            ),
            serde_json::json!({"to": to}).to_string(),
        ),
        AdminAction::BucketInfo { name } => (
            "GET",
            format!("/_grids3/admin/buckets/{}", sigv4::uri_encode(name, false)),
            String::new(),
        ),
        AdminAction::SearchIndexes {
            bucket,
            fields,
            clear,
            ..
        } => {
            let path = format!(
                "/_grids3/admin/buckets/{}/search-indexes",
                sigv4::uri_encode(bucket, false)
            );
            match (*clear, fields.is_empty()) {
                (true, _) => ("DELETE", path, String::new()),
                (false, true) => ("GET", path, String::new()),
                (false, false) => ("PUT", path, serde_json::json!({"fields": fields}).to_string()),
            }
        }
        AdminAction::ExplainSearch {
            bucket,
            query,
            prefix,
        } => (
            "POST",
            format!(
                "/_grids3/admin/buckets/{}/search-explain",
                sigv4::uri_encode(bucket, false)
            ),
            serde_json::json!({"query": query, "prefix": prefix}).to_string(),
        ),
        AdminAction::CreateKmsKey {
            id,
            alias,
            description,
        } => (
            "POST",
            "/_grids3/admin/kms/keys".to_owned(),
            serde_json::json!({"id": id, "alias": alias, "description": description})
                .to_string(),
        ),
        AdminAction::Notify { action } => match action {
            NotifyAction::Add {
                id,
                kind,
                url,
                auth_token,
                subject,
                jetstream,
            } => (
                "POST",
                "/_grids3/admin/notify/targets".to_owned(),
                serde_json::json!({"id": id, "type": kind, "url": url, "authToken": auth_token, "subject": subject, "jetstream": jetstream})
                    .to_string(),
            ),
            NotifyAction::List => (
                "GET",
                "/_grids3/admin/notify/targets".to_owned(),
                String::new(),
            ),
            NotifyAction::Remove { name } => (
                "DELETE",
                format!(
                    "/_grids3/admin/notify/targets/{}",
                    sigv4::uri_encode(name, false)
                ),
                String::new(),
            ),
        },
        AdminAction::ListKmsKeys => ("GET", "/_grids3/admin/kms/keys".to_owned(), String::new()),
        AdminAction::DisableKmsKey { id } | AdminAction::EnableKmsKey { id } => (
            "POST",
            format!(
                "/_grids3/admin/kms/keys/{}/{}",
                sigv4::uri_encode(id, false),
                if matches!(action, AdminAction::DisableKmsKey { .. }) {
                    "disable"
                } else {
                    "enable"
                }
            ),
            String::new(),
        ),
        AdminAction::RotateMasterKey => (
            "POST",
            "/_grids3/admin/rotate-master-key".to_owned(),
            String::new(),
        ),
        AdminAction::Access {
            key,
            bucket,
            object,
            action,
        } => (
            "POST",
            "/_grids3/admin/access".to_owned(),
            serde_json::json!({"accessKeyId": key, "bucket": bucket, "key": object, "action": action})
                .to_string(),
        ),
    };
    let (Some(ak), Some(sk)) = (&config.root_access_key, &config.root_secret_key) else {
        bail!(
            "no root key: set GRIDS3_ROOT_ACCESS_KEY and GRIDS3_ROOT_SECRET_KEY, or start a gateway with --local-db, which writes them to {}",
            crate::local::path().display()
        );
    };
    let host = endpoint.host.as_str();
    let hash = sigv4::sha256_hex(body.as_bytes());
    let mut request = format!("{method} {path} HTTP/1.1\r\nhost: {host}\r\n");
    for (k, v) in sigv4::client_headers(method, host, &path, "", &hash, ak, sk, &config.region) {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str(&format!(
        "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    let response = exchange(endpoint.connect().await?, request.as_bytes()).await?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .context("malformed HTTP response")?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("malformed status line")?;
    if !(200..300).contains(&status) {
        bail!("the gateway answered {status}: {body}");
    }
    Ok(if body.is_empty() {
        format!("{{\"status\": {status}}}")
    } else {
        body.to_owned()
    })
}

/// Sends a request and reads the answer until the server closes the connection.
async fn exchange(
    mut stream: impl AsyncRead + AsyncWrite + Unpin,
    request: &[u8],
) -> Result<Vec<u8>> {
    stream.write_all(request).await?;
    let mut response = Vec::new();
    match stream.read_to_end(&mut response).await {
        Ok(_) => {}
        // A TLS peer that closed its socket without close_notify: it has sent all it will
        // (the request asked for `connection: close`).
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !response.is_empty() => {}
        Err(e) => return Err(e.into()),
    }
    Ok(response)
}
