use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::*;

fn strict() -> OidcPolicy {
    OidcPolicy::default()
}

fn loopback() -> OidcPolicy {
    OidcPolicy::new("", true)
}

fn listed() -> OidcPolicy {
    OidcPolicy::new(" Idp.Corp.Example , other.example", false)
}

/// The URL policy as a table: (policy, URL, allowed).
#[test]
fn url_policy_table() {
    let long = format!("https://a.example/{}", "x".repeat(240));
    let cases: &[(&str, OidcPolicy, &str, bool)] = &[
        (
            "public https",
            strict(),
            "https://accounts.google.com",
            true,
        ),
        (
            "path",
            strict(),
            "https://login.example.com/tenant/v2.0",
            true,
        ),
        (
            "trailing slash",
            strict(),
            "https://tenant.auth0.com/",
            true,
        ),
        (
            "port",
            strict(),
            "https://idp.example.com:8443/realms/x",
            true,
        ),
        ("public v4", strict(), "https://8.8.8.8/", true),
        (
            "public v6",
            strict(),
            "https://[2001:4860:4860::8888]/",
            true,
        ),
        ("http", strict(), "http://accounts.google.com", false),
        (
            "HTTPS upper",
            strict(),
            "HTTPS://accounts.google.com",
            false,
        ),
        ("no scheme", strict(), "accounts.google.com", false),
        ("ftp", strict(), "ftp://accounts.google.com", false),
        ("empty", strict(), "", false),
        ("no host", strict(), "https://", false),
        ("userinfo", strict(), "https://user@idp.example.com", false),
        ("user:pass", strict(), "https://u:p@idp.example.com", false),
        ("query", strict(), "https://idp.example.com/?a=b", false),
        ("empty query", strict(), "https://idp.example.com/?", false),
        ("fragment", strict(), "https://idp.example.com/#x", false),
        ("space", strict(), "https://idp.example.com/a b", false),
        ("tab", strict(), "https://idp.exa\tmple.com/", false),
        (
            "backslash",
            strict(),
            "https://evil.example\\@idp.example.com/",
            false,
        ),
        ("too long", strict(), long.as_str(), false),
        ("127.0.0.1", strict(), "https://127.0.0.1/", false),
        ("127.1.2.3", strict(), "https://127.1.2.3/", false),
        ("hex loopback", strict(), "https://0x7f.1/", false),
        ("localhost", strict(), "https://localhost/", false),
        ("sub.localhost", strict(), "https://a.localhost/", false),
        ("[::1]", strict(), "https://[::1]/", false),
        (
            "mapped loopback",
            strict(),
            "https://[::ffff:127.0.0.1]/",
            false,
        ),
        ("10/8", strict(), "https://10.1.2.3/", false),
        ("172.16/12", strict(), "https://172.20.0.1/", false),
        ("172.32 is public", strict(), "https://172.32.0.1/", true),
        ("192.168/16", strict(), "https://192.168.1.1/", false),
        ("metadata", strict(), "https://169.254.169.254/", false),
        ("cgnat", strict(), "https://100.64.0.1/", false),
        ("cgnat top", strict(), "https://100.127.255.254/", false),
        ("100.128 is public", strict(), "https://100.128.0.1/", true),
        ("0.0.0.0", strict(), "https://0.0.0.0/", false),
        ("multicast", strict(), "https://224.0.0.1/", false),
        ("reserved", strict(), "https://240.0.0.1/", false),
        ("broadcast", strict(), "https://255.255.255.255/", false),
        ("fe80::", strict(), "https://[fe80::1]/", false),
        ("fc00::/7", strict(), "https://[fd12:3456::1]/", false),
        ("::", strict(), "https://[::]/", false),
        ("ff02::1", strict(), "https://[ff02::1]/", false),
        (
            "mapped private",
            strict(),
            "https://[::ffff:10.0.0.1]/",
            false,
        ),
        (
            "nat64 metadata",
            strict(),
            "https://[64:ff9b::a9fe:a9fe]/",
            false,
        ),
        (
            "6to4 private",
            strict(),
            "https://[2002:c0a8:0101::1]/",
            false,
        ),
        // Review F3(a): the rest of IANA's special-purpose blocks.
        ("192.0.0/24", strict(), "https://192.0.0.8/", false),
        ("TEST-NET-1", strict(), "https://192.0.2.1/", false),
        ("benchmarking", strict(), "https://198.18.0.1/", false),
        (
            "benchmarking top",
            strict(),
            "https://198.19.255.254/",
            false,
        ),
        ("198.20 is public", strict(), "https://198.20.0.1/", true),
        ("TEST-NET-2", strict(), "https://198.51.100.7/", false),
        ("TEST-NET-3", strict(), "https://203.0.113.9/", false),
        ("6to4 relay", strict(), "https://192.88.99.1/", false),
        ("0/8", strict(), "https://0.1.2.3/", false),
        (
            "mapped TEST-NET",
            strict(),
            "https://[::ffff:192.0.2.1]/",
            false,
        ),
        (
            "mapped benchmarking",
            strict(),
            "https://[::ffff:198.18.0.1]/",
            false,
        ),
        (
            "mapped cgnat",
            strict(),
            "https://[::ffff:100.64.0.1]/",
            false,
        ),
        (
            "nat64 private",
            strict(),
            "https://[64:ff9b::a00:1]/",
            false,
        ),
        (
            "nat64 local-use",
            strict(),
            "https://[64:ff9b:1::1]/",
            false,
        ),
        (
            "nat64 public",
            strict(),
            "https://[64:ff9b::808:808]/",
            true,
        ),
        (
            "v6 documentation",
            strict(),
            "https://[2001:db8::1]/",
            false,
        ),
        (
            "v6 documentation 3fff",
            strict(),
            "https://[3fff::1]/",
            false,
        ),
        ("teredo", strict(), "https://[2001::1]/", false),
        ("v6 benchmarking", strict(), "https://[2001:2::1]/", false),
        ("discard-only", strict(), "https://[100::1]/", false),
        ("fe80::/10 top", strict(), "https://[febf::1]/", false),
        ("fc00::", strict(), "https://[fc00::1]/", false),
        ("::1 strict", strict(), "https://[::1]:8443/", false),
        (
            "listed IP opens a special block",
            OidcPolicy::new("198.18.0.1", false),
            "https://198.18.0.1/",
            true,
        ),
        // Review F3(c): dot segments are refused, not resolved.
        ("dot dot", strict(), "https://idp.example/a/../b", false),
        ("dot", strict(), "https://idp.example/./a", false),
        (
            "trailing dot dot",
            strict(),
            "https://idp.example/a/..",
            false,
        ),
        (
            "encoded dot dot",
            strict(),
            "https://idp.example/a/%2e%2E/b",
            false,
        ),
        (
            "encoded dot",
            strict(),
            "https://idp.example/a/.%2e/b",
            false,
        ),
        (
            "dots inside a name",
            strict(),
            "https://idp.example/a..b/.c",
            true,
        ),
        // allow_loopback: loopback hosts, over http too; nothing else opens.
        ("loopback http", loopback(), "http://127.0.0.1:8080", true),
        (
            "loopback https",
            loopback(),
            "https://127.0.0.1:8443/x",
            true,
        ),
        (
            "loopback localhost",
            loopback(),
            "http://localhost:9/",
            true,
        ),
        ("loopback [::1]", loopback(), "http://[::1]:9/", true),
        (
            "loopback: public http",
            loopback(),
            "http://accounts.google.com",
            false,
        ),
        ("loopback: private", loopback(), "https://10.0.0.1/", false),
        (
            "loopback: metadata",
            loopback(),
            "http://169.254.169.254/",
            false,
        ),
        (
            "loopback: userinfo",
            loopback(),
            "http://u@127.0.0.1/",
            false,
        ),
        // allowed_hosts: exact names, any case; https still required.
        (
            "listed",
            listed(),
            "https://idp.corp.example/realms/a",
            true,
        ),
        ("listed case", listed(), "https://IDP.CORP.EXAMPLE/", true),
        ("listed http", listed(), "http://idp.corp.example/", false),
        (
            "listed not a suffix",
            listed(),
            "https://x.idp.corp.example/",
            true,
        ),
        ("listed other", listed(), "https://other.example/", true),
        (
            "listed does not open IPs",
            listed(),
            "https://10.0.0.1/",
            false,
        ),
    ];
    for (name, policy, url, ok) in cases {
        let got = check_url(policy, url);
        assert_eq!(got.is_ok(), *ok, "{name}: {url} -> {got:?}");
        if let Err(e) = got {
            assert_eq!(e.code(), "InvalidInput", "{name}");
        }
    }
}

/// A subdomain of a listed name is not listed (the list is exact); the table's
/// "listed not a suffix" row is a public name, allowed as any public name is, and only its
/// addresses decide.
#[test]
fn listing_is_exact() {
    let p = listed();
    let ten: IpAddr = "10.0.0.1".parse().unwrap();
    assert!(p.address_allowed("idp.corp.example", ten));
    assert!(p.address_allowed("IDP.corp.example", ten));
    assert!(!p.address_allowed("x.idp.corp.example", ten));
    assert!(!p.address_allowed("idp.corp.example.evil", ten));
}

#[test]
fn aws_message_for_http() {
    let e = check_url(&strict(), "http://idp.example.com").unwrap_err();
    assert_eq!(e.to_string(), "The URL must begin with https://");
}

#[test]
fn issuer_kept_as_given_and_discovery_url() {
    let i = check_url(&strict(), "https://tenant.auth0.com/").unwrap();
    assert_eq!(i.issuer, "https://tenant.auth0.com/");
    assert_eq!(
        i.discovery_url(),
        "https://tenant.auth0.com/.well-known/openid-configuration"
    );
    let i = check_url(&strict(), "https://login.example.com/t1/v2.0").unwrap();
    assert_eq!(
        i.discovery_url(),
        "https://login.example.com/t1/v2.0/.well-known/openid-configuration"
    );
}

/// Review F3(b): the registered spelling lower-cases the host, drops its trailing dot and the
/// default port, and keeps the path as given.
#[test]
fn issuer_spellings_are_normalised_but_not_the_path() {
    for (given, want) in [
        ("https://idp.example", "https://idp.example"),
        ("https://idp.example.", "https://idp.example"),
        ("https://idp.example:443", "https://idp.example"),
        (
            "https://IDP.Example.:443/Realm/X",
            "https://idp.example/Realm/X",
        ),
        ("https://idp.example:8443/", "https://idp.example:8443/"),
        ("https://idp.example./t/", "https://idp.example/t/"),
        ("http://127.0.0.1:80/x", "http://127.0.0.1/x"),
        (
            "https://[2001:4860::8888]:443/",
            "https://[2001:4860::8888]/",
        ),
    ] {
        let pol = if given.starts_with("http://") {
            loopback()
        } else {
            strict()
        };
        let got = check_url(&pol, given).unwrap();
        assert_eq!(got.issuer, want, "{given}");
        assert_eq!(
            got.url.as_str().trim_end_matches('/'),
            want.trim_end_matches('/')
        );
    }
    // A listed name with a trailing dot is the listed name.
    assert!(check_url(&listed(), "https://idp.corp.example./").is_ok());
    assert!(listed().address_allowed("idp.corp.example.", "10.0.0.1".parse().unwrap()));
}

#[test]
fn jwks_uri_may_have_a_query_but_obeys_the_rest() {
    assert!(check_fetch_url(&strict(), "https://idp.example.com/keys?v=2").is_ok());
    assert!(check_fetch_url(&strict(), "https://idp.example.com/keys#k").is_err());
    assert!(check_fetch_url(&strict(), "http://idp.example.com/keys").is_err());
    assert!(check_fetch_url(&strict(), "https://169.254.169.254/keys").is_err());
    assert!(check_fetch_url(&loopback(), "http://127.0.0.1:1/keys?x").is_ok());
}

/// The resolver step: the addresses a name resolves to are filtered by the same rule, so a
/// name that passed the URL check and resolves to an internal address has nothing left to
/// connect to (DNS rebinding).
#[test]
fn resolver_filters_what_a_name_resolves_to() {
    let addrs = |list: &[&str]| -> Vec<SocketAddr> {
        list.iter()
            .map(|a| SocketAddr::new(a.parse().unwrap(), 443))
            .collect()
    };
    let mixed = addrs(&[
        "93.184.216.34",
        "10.0.0.7",
        "127.0.0.1",
        "fe80::1",
        "2606:2800::1",
    ]);
    let strict = PolicyResolver::new(Arc::new(strict()));
    assert_eq!(
        strict.filter("idp.example.com", mixed.clone()),
        addrs(&["93.184.216.34", "2606:2800::1"])
    );
    assert!(strict
        .filter(
            "rebound.example.com",
            addrs(&["169.254.169.254", "192.168.0.1"])
        )
        .is_empty());
    let lo = PolicyResolver::new(Arc::new(loopback()));
    assert_eq!(
        lo.filter("localhost", addrs(&["127.0.0.1", "::1", "10.0.0.1"])),
        addrs(&["127.0.0.1", "::1"])
    );
    let l = PolicyResolver::new(Arc::new(listed()));
    assert_eq!(l.filter("idp.corp.example", mixed.clone()), mixed);
}

/// The real resolver, on a name that resolves without a network: `localhost` (loopback) is
/// refused unless the policy allows loopback.
#[tokio::test]
async fn resolver_refuses_localhost_unless_allowed() {
    use reqwest::dns::Resolve;
    let name = |s: &str| s.parse::<reqwest::dns::Name>().unwrap();
    let strict = PolicyResolver::new(Arc::new(strict()));
    let err = match strict.resolve(name("localhost")).await {
        Ok(a) => panic!("resolved to {:?}", a.collect::<Vec<_>>()),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("no address the OIDC policy allows"), "{err}");
    let lo = PolicyResolver::new(Arc::new(loopback()));
    let got: Vec<SocketAddr> = lo.resolve(name("localhost")).await.unwrap().collect();
    assert!(
        !got.is_empty() && got.iter().all(|a| a.ip().is_loopback()),
        "{got:?}"
    );
}
