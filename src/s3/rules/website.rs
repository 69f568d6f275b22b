//! PutBucketWebsite's checks: a website configuration is checked once, as AWS checks it, and
//! stored as the XML it renders to; the website endpoint (`crate::website`) then trusts it.

use crate::error::{S3Error, S3Result};
use crate::xml::{Redirect, WebsiteConfiguration};

/// Routing rules per configuration, as AWS limits them.
pub const MAX_ROUTING_RULES: usize = 50;

/// Redirect codes a rule may name: AWS's "3XX except 300" is in practice these.
const REDIRECT_CODES: [u16; 7] = [301, 302, 303, 304, 305, 307, 308];

fn invalid(message: impl Into<String>) -> S3Error {
    S3Error::invalid_argument(message)
}

/// AWS answers most rule errors with `InvalidRequest` (the ones about the configuration's
/// shape as a whole with `InvalidArgument`).
fn refused(message: impl Into<String>) -> S3Error {
    S3Error::invalid_request(message)
}

/// Whether a `HostName` is a host (a name, optionally with a port): it becomes the authority
/// of a redirect's `Location`, so nothing that would change the URL's meaning (`@`, `/`, `?`,
/// `#`, `\\`) or break the header (whitespace, control characters) is taken.
fn host_name_ok(h: &str) -> bool {
    !h.is_empty()
        && h.bytes().all(|c| {
            c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':' | b'[' | b']')
        })
}

fn check_protocol(p: Option<&str>) -> S3Result<()> {
    match p {
        None | Some("http") | Some("https") => Ok(()),
        Some(_) => Err(refused(
            "Invalid protocol, protocol can be http or https. If not defined the protocol will be selected automatically.",
        )),
    }
}

fn check_redirect(r: &Redirect) -> S3Result<()> {
    // AWS documents that a Redirect names at least one thing; an empty one would send a
    // request back to itself.
    if r.host_name.is_none()
        && r.http_redirect_code.is_none()
        && r.protocol.is_none()
        && r.replace_key_prefix_with.is_none()
        && r.replace_key_with.is_none()
    {
        return Err(refused(
            "Redirect must contain at least one of the following: HostName, Protocol, ReplaceKeyPrefixWith, ReplaceKeyWith or HttpRedirectCode.",
        ));
    }
    if r.host_name.as_deref().is_some_and(|h| h.trim().is_empty()) {
        return Err(refused(
            "The HostName cannot be blank. To redirect within the same domain, the element should not be present.",
        ));
    }
    if r.host_name.as_deref().is_some_and(|h| !host_name_ok(h)) {
        return Err(invalid("The HostName is not well formed"));
    }
    check_protocol(r.protocol.as_deref())?;
    if r.replace_key_prefix_with.is_some() && r.replace_key_with.is_some() {
        return Err(refused(
            "You can only define ReplaceKeyPrefix or ReplaceKey but not both.",
        ));
    }
    if let Some(code) = &r.http_redirect_code {
        if !code
            .trim()
            .parse::<u16>()
            .is_ok_and(|c| REDIRECT_CODES.contains(&c))
        {
            return Err(refused(format!(
                "The provided HTTP redirect code ({code}) is not valid. Valid codes are 3XX except 300."
            )));
        }
    }
    Ok(())
}

/// Checks a configuration as AWS does (AWS's codes and messages, as the implementations that
/// mirror AWS record them), and returns it with the namespace set for rendering.
pub fn validate(mut c: WebsiteConfiguration) -> S3Result<WebsiteConfiguration> {
    if let Some(all) = &c.redirect_all {
        if c.index_document.is_some() || c.error_document.is_some() || c.routing_rules.is_some() {
            return Err(invalid(
                "RedirectAllRequestsTo cannot be provided in conjunction with other Routing Rules.",
            )
            .with_extra("ArgumentName", "RedirectAllRequestsTo".to_owned())
            .with_extra("ArgumentValue", "not null".to_owned()));
        }
        match all.host_name.as_deref() {
            None => return Err(S3Error::malformed_xml()),
            Some(h) if h.trim().is_empty() => {
                return Err(invalid(
                    "A host name must be provided to redirect all requests (e.g. \"example.com\").",
                ))
            }
            Some(h) if !host_name_ok(h) => return Err(invalid("The HostName is not well formed")),
            Some(_) => {}
        }
        check_protocol(all.protocol.as_deref())?;
        c.xmlns = crate::xml::S3_NS;
        return Ok(c);
    }
    let Some(index) = &c.index_document else {
        return Err(invalid(
            "A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty",
        )
        .with_extra("ArgumentName", "IndexDocument".to_owned())
        .with_extra("ArgumentValue", "null".to_owned()));
    };
    if index.suffix.is_empty() || index.suffix.contains('/') {
        return Err(invalid("The IndexDocument Suffix is not well formed")
            .with_extra("ArgumentName", "IndexDocument".to_owned())
            .with_extra("ArgumentValue", index.suffix.clone()));
    }
    if c.error_document.as_ref().is_some_and(|e| e.key.is_empty()) {
        return Err(invalid("The ErrorDocument Key is not well formed"));
    }
    if let Some(rules) = &c.routing_rules {
        // An empty `<RoutingRules/>` is `MalformedXML` on AWS.
        if rules.rules.is_empty() {
            return Err(S3Error::malformed_xml());
        }
        if rules.rules.len() > MAX_ROUTING_RULES {
            return Err(refused(format!(
                "{} routing rules provided, the number of routing rules in a website configuration is limited to {MAX_ROUTING_RULES}.",
                rules.rules.len()
            )));
        }
        for rule in &rules.rules {
            let Some(redirect) = &rule.redirect else {
                return Err(S3Error::malformed_xml());
            };
            if let Some(cond) = &rule.condition {
                if cond.key_prefix_equals.is_none()
                    && cond.http_error_code_returned_equals.is_none()
                {
                    return Err(refused(
                        "Condition cannot be empty. To redirect all requests without a condition, the condition element shouldn't be present.",
                    ));
                }
                if let Some(code) = &cond.http_error_code_returned_equals {
                    if !code
                        .trim()
                        .parse::<u16>()
                        .is_ok_and(|c| (400..600).contains(&c))
                    {
                        return Err(refused(format!(
                            "The provided HTTP error code ({code}) is not valid. Valid codes are 4XX or 5XX."
                        )));
                    }
                }
            }
            check_redirect(redirect)?;
        }
    }
    c.xmlns = crate::xml::S3_NS;
    Ok(c)
}

/// A stored configuration, as the website endpoint reads it (`None` for one that no longer
/// parses: it is served as if the bucket had none, rather than guessed at).
pub fn parse_stored(xml: &str) -> Option<WebsiteConfiguration> {
    crate::xml::from_xml("WebsiteConfiguration", xml.as_bytes())
        .ok()
        .and_then(|c| validate(c).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(xml: &str) -> Result<WebsiteConfiguration, (String, String)> {
        crate::xml::from_xml("WebsiteConfiguration", xml.as_bytes())
            .and_then(validate)
            .map_err(|e| (e.code.to_owned(), e.message))
    }

    fn rule(inner: &str) -> String {
        format!(
            "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument>\
             <RoutingRules><RoutingRule>{inner}</RoutingRule></RoutingRules></WebsiteConfiguration>"
        )
    }

    #[test]
    fn configurations_are_checked_as_aws_checks_them() {
        let ok = [
            "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument></WebsiteConfiguration>",
            "<WebsiteConfiguration><IndexDocument><Suffix>index.html</Suffix></IndexDocument><ErrorDocument><Key>404.html</Key></ErrorDocument></WebsiteConfiguration>",
            "<WebsiteConfiguration><RedirectAllRequestsTo><HostName>example.com</HostName><Protocol>https</Protocol></RedirectAllRequestsTo></WebsiteConfiguration>",
            &rule("<Condition><KeyPrefixEquals>docs/</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>documents/</ReplaceKeyPrefixWith></Redirect>"),
            &rule("<Condition><HttpErrorCodeReturnedEquals>404</HttpErrorCodeReturnedEquals></Condition><Redirect><HostName>h</HostName><HttpRedirectCode>302</HttpRedirectCode></Redirect>"),
            &rule("<Redirect><Protocol>https</Protocol></Redirect>"),
        ];
        for x in ok {
            assert!(check(x).is_ok(), "{x}: {:?}", check(x).err());
        }
        let bad: &[(&str, &str, &str)] = &[
            ("<WebsiteConfiguration><IndexDocument><Suffix></Suffix></IndexDocument></WebsiteConfiguration>", "InvalidArgument", "Suffix"),
            ("<WebsiteConfiguration><IndexDocument><Suffix>a/index.html</Suffix></IndexDocument></WebsiteConfiguration>", "InvalidArgument", "Suffix"),
            ("<WebsiteConfiguration><ErrorDocument><Key>e.html</Key></ErrorDocument></WebsiteConfiguration>", "InvalidArgument", "IndexDocument"),
            ("<WebsiteConfiguration></WebsiteConfiguration>", "InvalidArgument", "IndexDocument"),
            ("<WebsiteConfiguration><RedirectAllRequestsTo><HostName>h</HostName></RedirectAllRequestsTo><IndexDocument><Suffix>i</Suffix></IndexDocument></WebsiteConfiguration>", "InvalidArgument", "conjunction"),
            ("<WebsiteConfiguration><RedirectAllRequestsTo><HostName>h</HostName><Protocol>ftp</Protocol></RedirectAllRequestsTo></WebsiteConfiguration>", "InvalidRequest", "protocol"),
            ("<WebsiteConfiguration><RedirectAllRequestsTo><Protocol>http</Protocol></RedirectAllRequestsTo></WebsiteConfiguration>", "MalformedXML", ""),
            ("<WebsiteConfiguration><RedirectAllRequestsTo><HostName></HostName></RedirectAllRequestsTo></WebsiteConfiguration>", "InvalidArgument", "host name"),
            (&rule("<Redirect><ReplaceKeyWith>a</ReplaceKeyWith><ReplaceKeyPrefixWith>b</ReplaceKeyPrefixWith></Redirect>"), "InvalidRequest", "not both"),
            (&rule("<Redirect><HttpRedirectCode>300</HttpRedirectCode></Redirect>"), "InvalidRequest", "(300)"),
            (&rule("<Redirect><HttpRedirectCode>314</HttpRedirectCode></Redirect>"), "InvalidRequest", "(314)"),
            (&rule("<Redirect><HttpRedirectCode>404</HttpRedirectCode></Redirect>"), "InvalidRequest", "(404)"),
            (&rule("<Condition></Condition><Redirect><HostName>h</HostName></Redirect>"), "InvalidRequest", "Condition cannot be empty"),
            (&rule("<Condition><HttpErrorCodeReturnedEquals>200</HttpErrorCodeReturnedEquals></Condition><Redirect><HostName>h</HostName></Redirect>"), "InvalidRequest", "(200)"),
            (&rule("<Redirect></Redirect>"), "InvalidRequest", "at least one"),
            (&rule("<Redirect><HostName> </HostName></Redirect>"), "InvalidRequest", "cannot be blank"),
            (&rule("<Redirect><HostName>a.example&#13;&#10;Set-Cookie: x=1</HostName></Redirect>"), "InvalidArgument", "HostName"),
            (&rule("<Redirect><HostName>good.example@evil.example</HostName></Redirect>"), "InvalidArgument", "HostName"),
            ("<WebsiteConfiguration><RedirectAllRequestsTo><HostName>a/b</HostName></RedirectAllRequestsTo></WebsiteConfiguration>", "InvalidArgument", "HostName"),
            (&rule("<Condition><KeyPrefixEquals>a</KeyPrefixEquals></Condition>"), "MalformedXML", ""),
            (&rule("<Redirect><Protocol>gopher</Protocol></Redirect>"), "InvalidRequest", "protocol"),
            ("<WebsiteConfiguration><IndexDocument><Suffix>i</Suffix></IndexDocument><RoutingRules></RoutingRules></WebsiteConfiguration>", "MalformedXML", ""),
            ("<WebsiteConfiguration><IndexDocument><Suffix>i</Suffix></IndexDocument><Bogus/></WebsiteConfiguration>", "MalformedXML", ""),
        ];
        for (x, code, says) in bad {
            let (c, m) = check(x).expect_err(x);
            assert_eq!(c, *code, "{x}: {m}");
            assert!(m.contains(says), "{x}: {m}");
        }
        let many = format!(
            "<WebsiteConfiguration><IndexDocument><Suffix>i</Suffix></IndexDocument><RoutingRules>{}</RoutingRules></WebsiteConfiguration>",
            "<RoutingRule><Redirect><HostName>h</HostName></Redirect></RoutingRule>".repeat(51)
        );
        let (code, message) = check(&many).unwrap_err();
        assert_eq!(code, "InvalidRequest");
        assert!(
            message.starts_with("51 routing rules provided"),
            "{message}"
        );
    }

    #[test]
    fn a_stored_configuration_reads_back_as_it_was_rendered() {
        let c = check(&rule(
            "<Condition><KeyPrefixEquals>docs/</KeyPrefixEquals></Condition><Redirect><ReplaceKeyPrefixWith>documents/</ReplaceKeyPrefixWith></Redirect>",
        ))
        .unwrap();
        let xml = crate::xml::to_xml("WebsiteConfiguration", &c);
        assert_eq!(parse_stored(&xml), Some(c));
        assert_eq!(parse_stored("<WebsiteConfiguration/>"), None);
    }
}
