//! AWS's website rules as pure functions: what a request is answered with before any object
//! is read (RedirectAllRequestsTo, routing rules on a key prefix, the index document), and
//! after an error (routing rules on the error code, the folder redirect, the error document).
//! `serve` gathers the facts and acts.

use crate::percent::uri_encode;
use crate::xml::{RoutingRule, WebsiteConfiguration};

/// The facts of a request the rules read.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    /// The key, percent-decoded, without the leading slash (`""` for the root).
    pub key: &'a str,
    /// The Host header as sent (redirects without a `HostName` keep it).
    pub host: &'a str,
    /// `http` or `https`: how the request came (redirects without a `Protocol` keep it).
    pub proto: &'a str,
    /// The path as sent (still percent-encoded).
    pub path: &'a str,
    /// The query string as sent, if any.
    pub query: Option<&'a str>,
}

/// A redirect: its status and `Location`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirection {
    /// 301 unless the rule names another code.
    pub status: u16,
    /// Where to.
    pub location: String,
}

/// What a request gets before any object is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Before {
    /// A redirect (RedirectAllRequestsTo, or a routing rule on the key prefix alone).
    Redirect(Redirection),
    /// The object to serve (the key, or for a folder the key with the index suffix).
    Serve(String),
}

/// A rule's `KeyPrefixEquals`, as a key starts: keys have no leading slash, and AWS's own
/// examples write the prefix both ways (`docs/` and `/docs`), so one leading slash is not part
/// of it. `""` for a rule without one.
fn prefix_of(rule: &RoutingRule) -> &str {
    let p = rule
        .condition
        .as_ref()
        .and_then(|c| c.key_prefix_equals.as_deref())
        .unwrap_or("");
    p.strip_prefix('/').unwrap_or(p)
}

fn matches_prefix(rule: &RoutingRule, key: &str) -> bool {
    key.starts_with(prefix_of(rule))
}

fn error_code(rule: &RoutingRule) -> Option<u16> {
    rule.condition
        .as_ref()
        .and_then(|c| c.http_error_code_returned_equals.as_deref())
        .and_then(|c| c.trim().parse().ok())
}

/// Where a routing rule sends a request for `asked.key`: the rule's protocol and host (the
/// request's when the rule names none), and the key with its matched prefix replaced
/// (`ReplaceKeyPrefixWith`; with no prefix condition the replacement is put in front), or
/// replaced whole (`ReplaceKeyWith`), or kept.
fn redirect_to(rule: &RoutingRule, asked: &Asked<'_>) -> Redirection {
    let Some(r) = &rule.redirect else {
        // Validated configurations always have one; a rule without is no redirect to the
        // same place, which would loop.
        return Redirection {
            status: 301,
            location: format!("{}://{}/", asked.proto, asked.host),
        };
    };
    let proto = r.protocol.as_deref().unwrap_or(asked.proto);
    let host = r.host_name.as_deref().unwrap_or(asked.host);
    let prefix = prefix_of(rule);
    let key = match (&r.replace_key_with, &r.replace_key_prefix_with) {
        (Some(k), _) => k.clone(),
        (None, Some(p)) => match asked.key.strip_prefix(prefix) {
            Some(rest) => format!("{p}{rest}"),
            None => asked.key.to_owned(),
        },
        (None, None) => asked.key.to_owned(),
    };
    // `ReplaceKeyPrefixWith: /documents` (as AWS's own examples write it) is the key
    // `documents...`, not `//documents...`.
    let key = key.strip_prefix('/').unwrap_or(&key);
    Redirection {
        status: r
            .http_redirect_code
            .as_deref()
            .and_then(|c| c.trim().parse().ok())
            .unwrap_or(301),
        location: format!("{proto}://{host}/{}", uri_encode(key, true)),
    }
}

/// What a request gets before any object is read: RedirectAllRequestsTo redirects everything
/// (path and query kept); then the first routing rule without an error-code condition whose
/// key prefix matches (or that has no condition) redirects; otherwise the object is served,
/// the index document for a folder (`""`, `dir/`).
pub fn before(c: &WebsiteConfiguration, asked: &Asked<'_>) -> Before {
    if let Some(all) = &c.redirect_all {
        let proto = all.protocol.as_deref().unwrap_or(asked.proto);
        let host = all.host_name.as_deref().unwrap_or(asked.host);
        let mut location = format!("{proto}://{host}{}", asked.path);
        if let Some(q) = asked.query.filter(|q| !q.is_empty()) {
            location.push('?');
            location.push_str(q);
        }
        return Before::Redirect(Redirection {
            status: 301,
            location,
        });
    }
    let rules = c.routing_rules.iter().flat_map(|r| r.rules.iter());
    for rule in rules {
        if error_code(rule).is_none() && matches_prefix(rule, asked.key) {
            return Before::Redirect(redirect_to(rule, asked));
        }
    }
    Before::Serve(index_of(c, asked.key))
}

/// The object a key names: a folder (`""`, ending in `/`) names its index document.
pub fn index_of(c: &WebsiteConfiguration, key: &str) -> String {
    match &c.index_document {
        Some(i) if key.is_empty() || key.ends_with('/') => format!("{key}{}", i.suffix),
        _ => key.to_owned(),
    }
}

/// For a key without its trailing slash that names no object: the index document of the
/// folder of that name, which if it exists makes the answer a `302` to
/// [`folder_location`].
pub fn folder_index(c: &WebsiteConfiguration, key: &str) -> Option<String> {
    let i = c.index_document.as_ref()?;
    (!key.is_empty() && !key.ends_with('/')).then(|| format!("{key}/{}", i.suffix))
}

/// The `Location` of the folder redirect: the folder's path with its slash (relative, as AWS
/// sends it).
pub fn folder_location(key: &str) -> String {
    format!("/{}/", uri_encode(key, true))
}

/// The redirect of the first routing rule whose error code is `status` (and whose key prefix
/// matches, if it has one), after the request failed so.
pub fn after_error(
    c: &WebsiteConfiguration,
    asked: &Asked<'_>,
    status: u16,
) -> Option<Redirection> {
    c.routing_rules
        .iter()
        .flat_map(|r| r.rules.iter())
        .find(|rule| error_code(rule) == Some(status) && matches_prefix(rule, asked.key))
        .map(|rule| redirect_to(rule, asked))
}

/// The custom error document for an error of `status`: AWS serves it for 4XX errors, but
/// not for the answers to a client's own conditions (412 to `If-Match`, 416 to a Range past
/// the end), which must stay what they say.
pub fn error_document(c: &WebsiteConfiguration, status: u16) -> Option<&str> {
    ((400..500).contains(&status) && !matches!(status, 412 | 416))
        .then_some(c.error_document.as_ref()?.key.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(xml: &str) -> WebsiteConfiguration {
        let c = crate::xml::from_xml("WebsiteConfiguration", xml.as_bytes()).unwrap();
        crate::s3::rules::website::validate(c).unwrap()
    }

    fn asked(key: &str) -> Asked<'_> {
        Asked {
            key,
            host: "site.example:9002",
            proto: "http",
            path: "/",
            query: None,
        }
    }

    const INDEX: &str = "<IndexDocument><Suffix>index.html</Suffix></IndexDocument>";

    fn with_rules(rules: &str) -> WebsiteConfiguration {
        conf(&format!(
            "<WebsiteConfiguration>{INDEX}<ErrorDocument><Key>404.html</Key></ErrorDocument><RoutingRules>{rules}</RoutingRules></WebsiteConfiguration>"
        ))
    }

    fn redirect(status: u16, location: &str) -> Before {
        Before::Redirect(Redirection {
            status,
            location: location.to_owned(),
        })
    }

    #[test]
    fn folders_serve_their_index_document() {
        let c = conf(&format!(
            "<WebsiteConfiguration>{INDEX}</WebsiteConfiguration>"
        ));
        for (key, served) in [
            ("", "index.html"),
            ("dir/", "dir/index.html"),
            ("a/b/", "a/b/index.html"),
            ("dir", "dir"),
            ("page.html", "page.html"),
        ] {
            assert_eq!(
                before(&c, &asked(key)),
                Before::Serve(served.to_owned()),
                "{key}"
            );
        }
        assert_eq!(folder_index(&c, "dir").as_deref(), Some("dir/index.html"));
        assert_eq!(folder_index(&c, "dir/"), None);
        assert_eq!(folder_index(&c, ""), None);
        assert_eq!(folder_location("my dir"), "/my%20dir/");
        assert_eq!(error_document(&c, 404), None);
    }

    #[test]
    fn redirect_all_requests_keeps_path_and_query() {
        let c = conf("<WebsiteConfiguration><RedirectAllRequestsTo><HostName>example.org</HostName><Protocol>https</Protocol></RedirectAllRequestsTo></WebsiteConfiguration>");
        let a = Asked {
            path: "/a/b%20c.html",
            query: Some("x=1"),
            ..asked("a/b c.html")
        };
        assert_eq!(
            before(&c, &a),
            redirect(301, "https://example.org/a/b%20c.html?x=1")
        );
        let c = conf("<WebsiteConfiguration><RedirectAllRequestsTo><HostName>example.org</HostName></RedirectAllRequestsTo></WebsiteConfiguration>");
        assert_eq!(before(&c, &asked("")), redirect(301, "http://example.org/"));
    }

    #[test]
    fn routing_rules_apply_in_order() {
        let c = with_rules(
            "<RoutingRule><Condition><KeyPrefixEquals>docs/</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>documents/</ReplaceKeyPrefixWith></Redirect></RoutingRule>\
             <RoutingRule><Condition><KeyPrefixEquals>docs/old</KeyPrefixEquals></Condition><Redirect><ReplaceKeyWith>never.html</ReplaceKeyWith></Redirect></RoutingRule>\
             <RoutingRule><Condition><KeyPrefixEquals>old.html</KeyPrefixEquals></Condition><Redirect><HostName>new.example</HostName><Protocol>https</Protocol><ReplaceKeyWith>new.html</ReplaceKeyWith><HttpRedirectCode>302</HttpRedirectCode></Redirect></RoutingRule>\
             <RoutingRule><Condition><KeyPrefixEquals>img/</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>/static/img/</ReplaceKeyPrefixWith></Redirect></RoutingRule>\
             <RoutingRule><Condition><KeyPrefixEquals>/guide</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>/manual</ReplaceKeyPrefixWith></Redirect></RoutingRule>\
             <RoutingRule><Condition><HttpErrorCodeReturnedEquals>404</HttpErrorCodeReturnedEquals></Condition><Redirect><ReplaceKeyPrefixWith>report-404/</ReplaceKeyPrefixWith></Redirect></RoutingRule>\
             <RoutingRule><Condition><KeyPrefixEquals>private/</KeyPrefixEquals><HttpErrorCodeReturnedEquals>403</HttpErrorCodeReturnedEquals></Condition><Redirect><HostName>login.example</HostName></Redirect></RoutingRule>",
        );
        for (key, want) in [
            (
                "docs/old/a.html",
                redirect(301, "http://site.example:9002/documents/old/a.html"),
            ),
            (
                "docs/",
                redirect(301, "http://site.example:9002/documents/"),
            ),
            ("old.html", redirect(302, "https://new.example/new.html")),
            (
                "img/a b.png",
                redirect(301, "http://site.example:9002/static/img/a%20b.png"),
            ),
            (
                "guide/a.html",
                redirect(301, "http://site.example:9002/manual/a.html"),
            ),
            ("other.html", Before::Serve("other.html".into())),
            ("", Before::Serve("index.html".into())),
        ] {
            assert_eq!(before(&c, &asked(key)), want, "{key}");
        }
        // Error-code rules apply after the error only, and their prefix must match too.
        let after = |key: &str, status| after_error(&c, &asked(key), status);
        assert_eq!(
            after("images/x.png", 404),
            Some(Redirection {
                status: 301,
                location: "http://site.example:9002/report-404/images/x.png".into()
            })
        );
        assert_eq!(after("images/x.png", 403), None);
        assert_eq!(
            after("private/a", 403).map(|r| r.location),
            Some("http://login.example/private/a".into())
        );
        assert_eq!(after("public/a", 403), None);
        assert_eq!(error_document(&c, 404), Some("404.html"));
        assert_eq!(error_document(&c, 403), Some("404.html"));
        assert_eq!(error_document(&c, 503), None);
        assert_eq!(error_document(&c, 412), None);
        assert_eq!(error_document(&c, 416), None);
    }

    #[test]
    fn a_rule_without_a_condition_redirects_everything() {
        let c = with_rules("<RoutingRule><Redirect><HostName>elsewhere.example</HostName></Redirect></RoutingRule>");
        assert_eq!(
            before(&c, &asked("a/b")),
            redirect(301, "http://elsewhere.example/a/b")
        );
        assert_eq!(
            before(&c, &asked("")),
            redirect(301, "http://elsewhere.example/")
        );
    }
}
