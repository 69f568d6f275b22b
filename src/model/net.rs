//! Address ranges (`10.0.0.0/8`, `::1/128`, or a bare address) and the client address behind
//! trusted proxies (`X-Forwarded-For`).

use std::net::IpAddr;

/// An address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    addr: IpAddr,
    len: u8,
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, len) = match s.trim().split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s.trim(), None),
        };
        let addr: IpAddr = a.parse().map_err(|_| format!("not an address: {a}"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let len = match len {
            Some(l) => l
                .parse::<u8>()
                .ok()
                .filter(|l| *l <= max)
                .ok_or_else(|| format!("not a prefix length: {l}"))?,
            None => max,
        };
        Ok(Cidr { addr, len })
    }
}

impl Cidr {
    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as its IPv4 one).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
            v4 => v4,
        };
        let (a, b, bits) = match (self.addr, ip) {
            (IpAddr::V4(a), IpAddr::V4(b)) => {
                (u128::from(u32::from(a)), u128::from(u32::from(b)), 32)
            }
            (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128),
            _ => return false,
        };
        if self.len == 0 {
            return true;
        }
        let shift = bits - u32::from(self.len);
        (a >> shift) == (b >> shift)
    }
}

/// One `X-Forwarded-For` entry: an address, bare or with a port (`203.0.113.7:5555`,
/// `[2001:db8::1]:443`, `[2001:db8::1]`), as proxies write them.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse() {
        return Some(ip);
    }
    if let Ok(sa) = hop.parse::<std::net::SocketAddr>() {
        return Some(sa.ip());
    }
    hop.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .and_then(|h| h.parse().ok())
}

/// The client's address: the TCP peer's, unless the peer is a trusted proxy, in which case the
/// rightmost `X-Forwarded-For` entry that is not itself a trusted proxy (entries to its left
/// were written by the client and prove nothing).
pub fn client_ip(peer: IpAddr, forwarded_for: Option<&str>, trusted: &[Cidr]) -> IpAddr {
    let trusted_ip = |ip: IpAddr| trusted.iter().any(|c| c.contains(ip));
    if !trusted_ip(peer) {
        return peer;
    }
    let Some(chain) = forwarded_for else {
        return peer;
    };
    let mut client = peer;
    for hop in chain.rsplit(',') {
        match parse_hop(hop.trim()) {
            Some(ip) => {
                client = ip;
                if !trusted_ip(ip) {
                    break;
                }
            }
            // A malformed entry ends what can be believed.
            None => break,
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_forwarded_chains() {
        let c: Cidr = "10.0.0.0/8".parse().unwrap();
        assert!(c.contains("10.2.3.4".parse().unwrap()));
        assert!(!c.contains("11.0.0.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.0.1".parse().unwrap()));
        let one: Cidr = "127.0.0.1".parse().unwrap();
        assert!(one.contains("127.0.0.1".parse().unwrap()));
        assert!(!one.contains("127.0.0.2".parse().unwrap()));
        assert!("10.0.0.0/33".parse::<Cidr>().is_err());
        assert!("nonsense".parse::<Cidr>().is_err());
        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains("fd12::1".parse().unwrap()));
        let trusted = ["127.0.0.1".parse().unwrap(), "10.0.0.0/8".parse().unwrap()];
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        // (peer, X-Forwarded-For, client)
        let table = [
            ("127.0.0.1", Some("203.0.113.7"), "203.0.113.7"),
            (
                "127.0.0.1",
                Some("1.1.1.1, 203.0.113.7, 10.0.0.5"),
                "203.0.113.7",
            ),
            ("127.0.0.1", None, "127.0.0.1"),
            ("198.51.100.1", Some("203.0.113.7"), "198.51.100.1"),
            ("127.0.0.1", Some("junk, 203.0.113.9"), "203.0.113.9"),
            ("127.0.0.1", Some("10.0.0.9"), "10.0.0.9"),
            ("127.0.0.1", Some("203.0.113.7:5555"), "203.0.113.7"),
            (
                "127.0.0.1",
                Some("[2001:db8::1]:443, 10.0.0.5"),
                "2001:db8::1",
            ),
            // Two lines joined (the client's own, then the proxy's): the proxy's counts.
            ("127.0.0.1", Some("10.0.0.1,203.0.113.8"), "203.0.113.8"),
        ];
        for (peer, xff, want) in table {
            assert_eq!(
                client_ip(ip(peer), xff, &trusted),
                ip(want),
                "{peer} {xff:?}"
            );
        }
        assert_eq!(
            client_ip(ip("127.0.0.1"), Some("203.0.113.7"), &[]),
            ip("127.0.0.1")
        );
    }
}
