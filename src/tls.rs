//! Native TLS: a certificate and key from PEM files, served with rustls (HTTP/2 or HTTP/1.1 by
//! ALPN), and swapped without a restart when the files change or on SIGHUP.
//!
//! Why reload by reading the files' bytes (every `--tls-reload-interval` seconds) rather than
//! watching modification times: certificate tools rewrite both files within a second, and
//! Kubernetes swaps a symlink, so a changed byte is the only sure sign. A pair that does not
//! load (a key written before its certificate, a key that does not match) leaves the current
//! one in service and is tried again at the next look; handshakes never see a half-written pair.
//!
//! The server loop (`server.rs`) calls [`Tls::acceptor`] per connection and marks each request
//! with a [`Transport`], which SSE-C consults (`s3::sse::require_secure_transport`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use zeroize::Zeroizing;

/// How a request reached the server, as a request extension set by the server loop. A request
/// without one (a router served by something else) counts as plain HTTP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Transport {
    /// It came over TLS that this server terminated.
    pub tls: bool,
}

impl Transport {
    /// The transport recorded on a request.
    pub fn of(extensions: &axum::http::Extensions) -> Transport {
        extensions.get::<Transport>().copied().unwrap_or_default()
    }
}

/// The ring provider, named explicitly: in test builds the AWS SDK also enables rustls's
/// aws-lc-rs provider, and rustls then refuses to guess a process-wide default.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The certificate being served, swapped whole on reload.
#[derive(Debug)]
struct Current(RwLock<Arc<CertifiedKey>>);

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.0.read().expect("certificate").clone())
    }
}

/// The files' bytes last loaded (or last found not to load), to tell a change.
type Seen = (Vec<u8>, Zeroizing<Vec<u8>>);

/// The TLS side of the server: its configuration and where its certificate comes from.
pub struct Tls {
    cert: PathBuf,
    key: PathBuf,
    current: Arc<Current>,
    acceptor: tokio_rustls::TlsAcceptor,
    seen: Mutex<Seen>,
}

/// Reads both files.
fn read(cert: &Path, key: &Path) -> Result<Seen> {
    let c = std::fs::read(cert).with_context(|| format!("reading {}", cert.display()))?;
    let k =
        Zeroizing::new(std::fs::read(key).with_context(|| format!("reading {}", key.display()))?);
    Ok((c, k))
}

/// A certificate chain and its key, from PEM, checked to belong together.
pub fn parse(cert_pem: &[u8], key_pem: &[u8]) -> Result<CertifiedKey> {
    let chain = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| anyhow!("the certificate file is not PEM: {e}"))?;
    if chain.is_empty() {
        bail!("the certificate file holds no certificate");
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| anyhow!("the key file holds no private key: {e}"))?;
    CertifiedKey::from_der(chain, key, &provider())
        .map_err(|e| anyhow!("the certificate and key do not go together: {e}"))
}

impl Tls {
    /// Loads the pair (start-up fails on a pair that does not load).
    pub fn new(cert: &Path, key: &Path) -> Result<Arc<Tls>> {
        let seen = read(cert, key)?;
        let certified = parse(&seen.0, &seen.1)
            .with_context(|| format!("{} and {}", cert.display(), key.display()))?;
        let current = Arc::new(Current(RwLock::new(Arc::new(certified))));
        let mut config = rustls::ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        // HTTP/2 when the client offers it (curl, browsers), else HTTP/1.1 (the AWS SDKs).
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Arc::new(Tls {
            cert: cert.to_owned(),
            key: key.to_owned(),
            current,
            acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            seen: Mutex::new(seen),
        }))
    }

    /// Accepts TLS on a connection.
    pub fn acceptor(&self) -> &tokio_rustls::TlsAcceptor {
        &self.acceptor
    }

    /// Loads the files again if their bytes changed (`force`: even if not). `Ok(true)` when a
    /// new pair is now served; an error leaves the current one in service.
    pub fn reload(&self, force: bool) -> Result<bool> {
        let now = read(&self.cert, &self.key)?;
        {
            let mut seen = self.seen.lock().expect("seen");
            if !force && seen.0 == now.0 && *seen.1 == *now.1 {
                return Ok(false);
            }
            // Recorded before parsing: a pair that does not load is reported once, not at
            // every look, and is tried again as soon as either file changes.
            *seen = (now.0.clone(), now.1.clone());
        }
        let certified = parse(&now.0, &now.1)?;
        *self.current.0.write().expect("certificate") = Arc::new(certified);
        Ok(true)
    }

    /// Reloads on SIGHUP, and when the files change (looked at every `interval`).
    pub fn spawn_reloader(self: &Arc<Self>, interval: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut hup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            let mut tick = tokio::time::interval(interval.max(Duration::from_millis(100)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                let force = tokio::select! {
                    _ = tick.tick() => false,
                    Some(()) = async { match hup.as_mut() { Some(h) => h.recv().await, None => std::future::pending().await } } => true,
                };
                match me.reload(force) {
                    Ok(false) => {}
                    Ok(true) => {
                        crate::metrics::tls_reload("ok");
                        tracing::info!(cert = %me.cert.display(), "TLS certificate reloaded");
                    }
                    Err(e) => {
                        crate::metrics::tls_reload("error");
                        tracing::error!(
                            error = format!("{e:#}"),
                            "TLS certificate not reloaded; the previous one is still served"
                        );
                    }
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(name: &str) -> (String, String) {
        let c = rcgen::generate_simple_self_signed(vec![name.to_owned()]).unwrap();
        (c.cert.pem(), c.key_pair.serialize_pem())
    }

    #[test]
    fn a_pair_must_belong_together() {
        let (c1, k1) = pair("one");
        let (_, k2) = pair("two");
        assert!(parse(c1.as_bytes(), k1.as_bytes()).is_ok());
        let e = parse(c1.as_bytes(), k2.as_bytes()).unwrap_err().to_string();
        assert!(e.contains("do not go together"), "{e}");
        assert!(parse(b"", k1.as_bytes()).is_err());
        assert!(parse(c1.as_bytes(), b"not a key").is_err());
    }

    #[test]
    fn a_reload_swaps_only_a_pair_that_loads() {
        let dir = tempfile::tempdir().unwrap();
        let (cp, kp) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        let (c1, k1) = pair("one");
        std::fs::write(&cp, &c1).unwrap();
        std::fs::write(&kp, &k1).unwrap();
        let tls = Tls::new(&cp, &kp).unwrap();
        let served = || tls.current.0.read().unwrap().cert[0].to_vec();
        let first = served();
        assert!(
            !tls.reload(false).unwrap(),
            "unchanged files are not reloaded"
        );
        // A new certificate written before its key: refused, the old pair stays.
        let (c2, k2) = pair("two");
        std::fs::write(&cp, &c2).unwrap();
        assert!(tls.reload(false).is_err());
        assert_eq!(served(), first);
        std::fs::write(&kp, &k2).unwrap();
        assert!(tls.reload(false).unwrap());
        assert_ne!(served(), first);
    }
}
