//! The issuer URL policy: which URLs grids3 will fetch discovery documents and key sets from.
//!
//! An OpenID Connect provider is registered by an administrator, but its URL (and the
//! `jwks_uri` its discovery document names) makes grids3 send requests from inside the
//! network it runs in: left open, that is server-side request forgery against metadata
//! services (169.254.169.254), databases on private addresses or the gateway's own loopback
//! ports. So a URL must be `https://` with a host name or public address, and every address
//! grids3 actually connects to is checked again when the name is resolved
//! ([`PolicyResolver`]), so that a name that resolves to a public address at registration
//! and to a private one later (DNS rebinding) is still refused.
//!
//! Two settings open the guard on purpose: `allowed_hosts` (names, exact, case-insensitive,
//! allowed whatever they resolve to: an in-house provider on a private network) and
//! `allow_loopback` (loopback addresses, and plain `http://` to them: tests and local use).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use super::error::OidcError;

/// IAM's longest provider URL (CreateOpenIDConnectProvider's `Url`: 1 to 255 characters).
pub const MAX_URL_LEN: usize = 255;

/// Which issuers (and key set URLs) grids3 may fetch from. The caller reads it from the
/// configuration (`--oidc-allowed-hosts`, `--oidc-allow-loopback`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OidcPolicy {
    /// Host names allowed whatever addresses they resolve to, lower-cased.
    pub allowed_hosts: Vec<String>,
    /// Loopback addresses allowed, and `http://` to a loopback host (tests, local use).
    pub allow_loopback: bool,
}

impl OidcPolicy {
    /// A policy from the configuration's comma-separated host list.
    pub fn new(allowed_hosts: &str, allow_loopback: bool) -> Self {
        let allowed_hosts = allowed_hosts
            .split(',')
            .map(|h| h.trim().to_ascii_lowercase())
            .filter(|h| !h.is_empty())
            .collect();
        Self {
            allowed_hosts,
            allow_loopback,
        }
    }

    /// Whether `host` (as the URL spells it, lower-cased by the parser; a trailing dot, which
    /// names the same host, ignored) is listed.
    fn lists(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        self.allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Whether an address `host` resolved to (or is) may be connected to.
    pub fn address_allowed(&self, host: &str, ip: IpAddr) -> bool {
        if self.lists(host) {
            return true;
        }
        if is_loopback(ip) {
            return self.allow_loopback;
        }
        !is_internal(ip)
    }
}

/// An issuer URL that passed [`check_url`]: the string in its one spelling (token `iss` claims
/// and the discovery document's `issuer` are compared with it exactly, OIDC Discovery §4.3)
/// and its parsed form. The spelling: scheme and host lower-cased, a trailing dot of the host
/// and the scheme's default port dropped, the path exactly as given (paths are
/// case-sensitive, and AWS keeps them so), so that `https://Host.:443/x` and `https://host/x`
/// are one provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NormalizedIssuer {
    /// The issuer in its one spelling (what is registered).
    pub issuer: String,
    /// The parsed URL (what is fetched).
    pub url: url::Url,
}

impl NormalizedIssuer {
    /// `<issuer>/.well-known/openid-configuration` (one trailing `/` of the issuer dropped,
    /// OIDC Discovery §4).
    pub fn discovery_url(&self) -> String {
        format!(
            "{}/.well-known/openid-configuration",
            self.issuer.strip_suffix('/').unwrap_or(&self.issuer)
        )
    }
}

/// Checks an issuer URL against the policy without resolving it: what
/// CreateOpenIDConnectProvider validates (`InvalidInput`), and what every verification
/// checks again before fetching (a policy may have been narrowed since).
pub fn check_url(policy: &OidcPolicy, raw: &str) -> Result<NormalizedIssuer, OidcError> {
    let url = check(policy, raw, false)?;
    // What follows the authority, as given (the parser would re-encode it); dot segments were
    // refused by `check`, so the parser resolved none away.
    let after_scheme = &raw[raw.find("://").map_or(0, |i| i + 3)..];
    let path = &after_scheme[after_scheme.find('/').unwrap_or(after_scheme.len())..];
    let host = url.host_str().unwrap_or_default();
    let host = host.strip_suffix('.').unwrap_or(host);
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let issuer = format!("{}://{host}{port}{path}", url.scheme());
    let url =
        url::Url::parse(&issuer).map_err(|e| invalid(format!("The URL is not valid: {e}.")))?;
    Ok(NormalizedIssuer { issuer, url })
}

/// Whether a path segment is a dot segment (RFC 3986 §5.2.4), `%2e` counting as a dot as the
/// URL parser counts it.
fn dot_segment(seg: &str) -> bool {
    let s = seg.to_ascii_lowercase().replace("%2e", ".");
    s == "." || s == ".."
}

/// Checks a URL the provider names (the discovery document's `jwks_uri`): the same policy as
/// the issuer's, except that a query string is allowed (the issuer is an identifier and may
/// not have one; a key set URL is only fetched).
pub fn check_fetch_url(policy: &OidcPolicy, raw: &str) -> Result<url::Url, OidcError> {
    check(policy, raw, true)
}

fn invalid(msg: impl Into<String>) -> OidcError {
    OidcError::InvalidInput(msg.into())
}

fn check(policy: &OidcPolicy, raw: &str, query_ok: bool) -> Result<url::Url, OidcError> {
    if raw.is_empty() || raw.len() > MAX_URL_LEN {
        return Err(invalid(format!(
            "The URL must be 1 to {MAX_URL_LEN} characters long."
        )));
    }
    // The URL parser drops tabs and newlines and turns `\` into `/`: a URL that only means
    // what it says after such repairs is refused, so the string compared with `iss` is the
    // one fetched.
    if raw
        .chars()
        .any(|c| c.is_ascii_control() || c.is_whitespace() || c == '\\')
    {
        return Err(invalid(
            "The URL must not contain spaces, controls or '\\'.",
        ));
    }
    let https = raw.starts_with("https://");
    if !https && !raw.starts_with("http://") {
        return Err(invalid("The URL must begin with https://"));
    }
    let url = url::Url::parse(raw).map_err(|e| invalid(format!("The URL is not valid: {e}.")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(invalid("The URL must not contain a user name or password."));
    }
    if url.fragment().is_some() || raw.contains('#') {
        return Err(invalid("The URL must not contain a fragment."));
    }
    if !query_ok && (url.query().is_some() || raw.contains('?')) {
        return Err(invalid("The URL must not contain a query string."));
    }
    // `/a/../b` would be fetched as `/b` but compared with `iss` as written: one URL, two
    // meanings. Refused rather than resolved, so the registered string is what is fetched.
    let after_scheme = &raw[raw.find("://").map_or(0, |i| i + 3)..];
    let raw_path = after_scheme
        .find('/')
        .map_or("", |i| &after_scheme[i..])
        .split(['?', '#'])
        .next()
        .unwrap_or_default();
    if raw_path.split('/').any(dot_segment) {
        return Err(invalid(
            "The URL's path must not contain '.' or '..' segments.",
        ));
    }
    let Some(host) = url.host() else {
        return Err(invalid("The URL must have a host."));
    };
    // `host.` is the same name as `host` (an absolute DNS name): listed or refused alike.
    let host_str = url.host_str().unwrap_or_default();
    let host_str = host_str.strip_suffix('.').unwrap_or(host_str);
    // A listed name is the administrator's explicit choice; the scheme rule still holds.
    let listed = policy.lists(host_str);
    let ip = match host {
        url::Host::Ipv4(ip) => Some(IpAddr::V4(ip)),
        url::Host::Ipv6(ip) => Some(IpAddr::V6(ip)),
        url::Host::Domain(_) => None,
    };
    let loopback = match ip {
        Some(ip) => is_loopback(ip),
        None => is_localhost_name(host_str),
    };
    // Plain http only to a loopback host, and only when loopback is allowed.
    let plain_ok = policy.allow_loopback && loopback;
    if !https && !plain_ok {
        return Err(invalid("The URL must begin with https://"));
    }
    if listed {
        return Ok(url);
    }
    if loopback && !policy.allow_loopback {
        return Err(invalid(format!(
            "The URL's host {host_str} is a loopback address, which is not allowed."
        )));
    }
    // An address in the URL itself is never resolved (the HTTP client connects to it as it
    // is), so it is checked here; a name is checked address by address at connection time.
    if let Some(ip) = ip {
        if !policy.address_allowed(host_str, ip) {
            return Err(invalid(format!(
                "The URL's host {host_str} is a private, link-local or reserved address, \
                 which is not allowed."
            )));
        }
    }
    Ok(url)
}

/// `localhost` and its subdomains, which resolvers answer with loopback addresses.
fn is_localhost_name(d: &str) -> bool {
    let d = d.strip_suffix('.').unwrap_or(d);
    d.eq_ignore_ascii_case("localhost") || d.to_ascii_lowercase().ends_with(".localhost")
}

/// 127.0.0.0/8, ::1, and IPv4 loopback inside IPv6 forms.
pub fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => v6.is_loopback() || embedded_v4(v6).is_some_and(|v4| v4.is_loopback()),
    }
}

/// An address grids3 must not fetch from: every block of IANA's special-purpose registries
/// (RFC 6890) that is not globally reachable. IPv4: private (RFC 1918), link-local
/// (169.254/16), "this network" (0/8), CGNAT (100.64/10), IETF protocol assignments
/// (192.0.0/24), documentation (192.0.2/24, 198.51.100/24, 203.0.113/24), benchmarking
/// (198.18/15), the 6to4 relay anycast (192.88.99/24), multicast, broadcast and the reserved
/// 240/4. IPv6: unspecified, unique-local (fc00::/7), link-local (fe80::/10), deprecated
/// site-local (fec0::/10), multicast, discard-only (100::/64), IETF protocol assignments
/// (2001::/23, Teredo and benchmarking among them), documentation (2001:db8::/32,
/// 3fff::/20), local-use NAT64 (64:ff9b:1::/48), SRv6 SIDs (5f00::/16); IPv4 inside IPv6
/// (mapped, compatible, NAT64 64:ff9b::/96, 6to4 2002::/16) by the IPv4 rule. Loopback is
/// internal too ([`OidcPolicy::address_allowed`] opens it on request).
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return internal_v4(v4);
            }
            let s = v6.segments();
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
                || (s[0] & 0xffc0) == 0xfec0
                || s[..4] == [0x100, 0, 0, 0]
                || (s[0] == 0x2001 && s[1] < 0x200)
                || (s[0] == 0x2001 && s[1] == 0xdb8)
                || (s[0] & 0xfff0) == 0x3ff0
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
                || s[0] == 0x5f00
        }
    }
}

fn internal_v4(v4: Ipv4Addr) -> bool {
    let o = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_multicast()
        || v4.is_broadcast()
        || o[0] == 0
        || (o[0] == 100 && (o[1] & 0xc0) == 64)
        || (o[0] == 192 && o[1] == 0 && (o[2] == 0 || o[2] == 2))
        || (o[0] == 192 && o[1] == 88 && o[2] == 99)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || (o[0] == 198 && o[1] == 51 && o[2] == 100)
        || (o[0] == 203 && o[1] == 0 && o[2] == 113)
        || o[0] >= 240
}

/// The IPv4 address an IPv6 address carries: mapped (::ffff:a.b.c.d), compatible
/// (::a.b.c.d, not :: or ::1), NAT64 (64:ff9b::/96) or 6to4 (2002:AABB:CCDD::/48).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    if s[..6] == [0; 6] && !(s[6] == 0 && s[7] <= 1) {
        return Some(low);
    }
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(low);
    }
    if s[0] == 0x2002 {
        return Some(Ipv4Addr::new(
            (s[1] >> 8) as u8,
            s[1] as u8,
            (s[2] >> 8) as u8,
            s[2] as u8,
        ));
    }
    None
}

/// The HTTP client's resolver: the system's answers for a name, less every address the
/// policy refuses, so that the addresses connected to are the ones checked (a name that
/// passed [`check_url`] and then resolves to 10.0.0.1 is not fetched). A name with no
/// allowed address fails to resolve, and the fetch fails with it.
#[derive(Clone, Debug)]
pub struct PolicyResolver {
    policy: Arc<OidcPolicy>,
}

impl PolicyResolver {
    /// A resolver filtering by `policy`.
    pub fn new(policy: Arc<OidcPolicy>) -> Self {
        Self { policy }
    }

    /// The allowed subset of `addrs`, resolved for `host`.
    pub fn filter(&self, host: &str, addrs: Vec<SocketAddr>) -> Vec<SocketAddr> {
        addrs
            .into_iter()
            .filter(|a| self.policy.address_allowed(host, a.ip()))
            .collect()
    }
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let this = self.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let allowed = this.filter(&host, found);
            if allowed.is_empty() {
                let e: Box<dyn std::error::Error + Send + Sync> = format!(
                    "{host} resolves to no address the OIDC policy allows \
                     (private, loopback, link-local or reserved)"
                )
                .into();
                return Err(e);
            }
            let addrs: reqwest::dns::Addrs = Box::new(allowed.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
#[path = "issuer_tests.rs"]
mod tests;
