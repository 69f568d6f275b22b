//! Which bucket a website request is for: from its Host (HTTP/1.1) or `:authority` (HTTP/2),
//! as AWS's website endpoint decides it (`<bucket>.<website-domain>`, or a Host equal to the
//! bucket's name, which is what a CNAME to the endpoint sends).

/// A request's host, checked: a DNS name (lower-cased, without a trailing dot) and the port
/// it named. Anything else (`a@b`, a path, an IPv6 literal, bytes a name cannot hold) is no
/// host: redirects are built from this, never from the header as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// The name.
    pub name: String,
    /// The port, if the request named one.
    pub port: Option<u16>,
}

impl Host {
    /// Parses a Host header value (or an HTTP/2 authority).
    pub fn parse(raw: &str) -> Option<Host> {
        let raw = raw.trim();
        let (name, port) = match raw.rsplit_once(':') {
            Some((n, p)) => (n, Some(p.parse::<u16>().ok()?)),
            None => (raw, None),
        };
        let name = name.to_ascii_lowercase();
        let name = name.strip_suffix('.').unwrap_or(&name);
        let ok = (1..=253).contains(&name.len())
            && name
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_'))
            && !name.starts_with('.')
            && !name.contains("..");
        ok.then(|| Host {
            name: name.to_owned(),
            port,
        })
    }

    /// `name[:port]`, as a redirect's Location keeps it.
    pub fn authority(&self) -> String {
        match self.port {
            Some(p) => format!("{}:{p}", self.name),
            None => self.name.clone(),
        }
    }

    /// The bucket this host names, given the endpoint's `--website-domain`.
    pub fn bucket(&self, domain: Option<&str>) -> String {
        let domain = domain
            .map(|d| d.trim().trim_matches('.').to_ascii_lowercase())
            .filter(|d| !d.is_empty());
        if let Some(d) = domain {
            if let Some(b) = self.name.strip_suffix(&format!(".{d}")) {
                return b.to_owned();
            }
        }
        self.name.clone()
    }
}

/// What a NoSuchBucket page tells its reader: how this endpoint maps a host to a bucket, with
/// an address to try, for `host` (what was asked) and the endpoint's `--website-domain`.
pub fn how_buckets_are_chosen(host: &Host, domain: Option<&str>) -> String {
    let port = host.port.map(|p| format!(":{p}")).unwrap_or_default();
    let by_domain = match domain
        .map(|d| d.trim().trim_matches('.'))
        .filter(|d| !d.is_empty())
    {
        Some(d) => format!("http://<bucket>.{d}{port}/ serves <bucket>, and "),
        None => "With --website-domain D, http://<bucket>.D/ serves <bucket>; ".to_owned(),
    };
    format!(
        "This endpoint serves the bucket that the request's host names. {by_domain}a host \
         equal to a bucket's name (a CNAME to this endpoint) serves that bucket. The host {} \
         names no bucket here. The bucket needs a website configuration (PutBucketWebsite).",
        host.name
    )
}

#[cfg(test)]
mod tests {
    use super::Host;

    #[test]
    fn a_missing_bucket_page_says_how_the_host_chooses() {
        let h = Host::parse("127.0.0.1:9002").unwrap();
        let said = super::how_buckets_are_chosen(&h, Some("localhost"));
        assert!(said.contains("http://<bucket>.localhost:9002/"), "{said}");
        assert!(said.contains("127.0.0.1 names no bucket"), "{said}");
        let said = super::how_buckets_are_chosen(&h, None);
        assert!(said.contains("--website-domain"), "{said}");
    }

    #[test]
    fn the_host_names_the_bucket() {
        let d = Some("web.example.com");
        for (host, domain, bucket) in [
            ("site.web.example.com", d, Some("site")),
            ("site.web.example.com:9002", d, Some("site")),
            ("Site.Web.Example.COM.", d, Some("site")),
            ("my.site.web.example.com", d, Some("my.site")),
            // A CNAME: the Host is the bucket's name, whatever the domain.
            ("www.example.org", d, Some("www.example.org")),
            ("www.example.org:80", None, Some("www.example.org")),
            ("site.localhost:9002", Some("localhost"), Some("site")),
            // The domain alone names no bucket of its own: it is a bucket named so, if any.
            ("web.example.com", d, Some("web.example.com")),
            // Not hosts: nothing is looked up, nothing is redirected to them.
            (".web.example.com", d, None),
            ("", d, None),
            ("[::1]:9002", d, None),
            ("site.web.example.com:80@evil.example", d, None),
            ("site.web.example.com:x", d, None),
            ("a/b", d, None),
            ("a b", d, None),
            ("a..b", d, None),
        ] {
            assert_eq!(
                Host::parse(host).map(|h| h.bucket(domain)).as_deref(),
                bucket,
                "{host} with {domain:?}"
            );
        }
        let h = Host::parse("Site.Web.Example.COM.:9002").unwrap();
        assert_eq!(h.authority(), "site.web.example.com:9002");
        assert_eq!(Host::parse(&"a".repeat(254)), None);
    }
}
