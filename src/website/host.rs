//! Which bucket a website request is for: from its Host header, as AWS's website endpoint
//! decides it (`<bucket>.<website-domain>`, or a Host equal to the bucket's name, which is
//! what a CNAME to the endpoint sends).

/// The bucket a request with Host `host` is for, given the endpoint's `--website-domain`.
/// `None` when the Host names nothing (empty, or an IPv6 literal).
pub fn bucket_of(host: &str, domain: Option<&str>) -> Option<String> {
    let host = host.trim().to_ascii_lowercase();
    if host.starts_with('[') {
        return None;
    }
    // A port is not part of the name; a trailing dot (a fully qualified name) neither.
    let name = host.rsplit_once(':').map_or(host.as_str(), |(n, _)| n);
    let name = name.trim_end_matches('.');
    let domain = domain
        .map(|d| d.trim().trim_matches('.').to_ascii_lowercase())
        .filter(|d| !d.is_empty());
    if let Some(d) = domain {
        if let Some(b) = name.strip_suffix(&format!(".{d}")) {
            if !b.is_empty() {
                return Some(b.to_owned());
            }
        }
    }
    (!name.is_empty()).then(|| name.to_owned())
}

#[cfg(test)]
mod tests {
    use super::bucket_of;

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
            (".web.example.com", d, Some(".web.example.com")),
            ("", d, None),
            ("[::1]:9002", d, None),
        ] {
            assert_eq!(
                bucket_of(host, domain).as_deref(),
                bucket,
                "{host} with {domain:?}"
            );
        }
    }
}
