//! CORS as AWS evaluates it: PutBucketCors / GetBucketCors / DeleteBucketCors, the
//! unauthenticated preflight (`OPTIONS`), and the CORS headers on actual requests that carry
//! `Origin` (errors and presigned requests included).
//!
//! The first rule whose `AllowedOrigin` matches the request's `Origin` (one `*` wildcard
//! each), whose `AllowedMethod`s hold the method (for a preflight, the
//! `Access-Control-Request-Method`), and, for a preflight, whose `AllowedHeader`s cover every
//! header of `Access-Control-Request-Headers` (case-insensitive, wildcards too) decides. A
//! bucket without rules uses the server-wide default rule (`--cors-default-origins`), if one
//! is configured; GetBucketCors still answers NoSuchCORSConfiguration for it, because the
//! default is the server's, not the bucket's.
//!
//! When the web console is on, one more rule follows a bucket's own, for presigned requests
//! only (a SigV4 signature in the query, as the console's upload parts and live listings
//! carry): the console's origin may PUT, GET and HEAD and read the ETag, without credentials.
//! A page of that origin can then read only the answers to URLs it holds a signature for,
//! which it could fetch from anywhere else anyway; unsigned and header-signed requests (an
//! object readable by address, say) get only the bucket's own rules.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::empty;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::meta::CorsRule;
use crate::xml::{self, CorsConfiguration, CorsRuleXml};

/// Methods a rule may allow.
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];

/// Rules per configuration, as AWS limits them.
const MAX_RULES: usize = 100;

/// Headers the server-wide default rule exposes to scripts.
const DEFAULT_EXPOSE: [&str; 7] = [
    "ETag",
    "Content-Length",
    "Content-Range",
    "Accept-Ranges",
    "Last-Modified",
    "x-amz-request-id",
    "x-amz-id-2",
];

/// Validates a configuration as AWS does and turns it into stored rules.
pub fn validate(conf: CorsConfiguration) -> S3Result<Vec<CorsRule>> {
    if conf.rules.is_empty() || conf.rules.len() > MAX_RULES {
        return Err(S3Error::malformed_xml());
    }
    let mut out = Vec::with_capacity(conf.rules.len());
    for r in conf.rules {
        if r.allowed_origins.is_empty() || r.allowed_methods.is_empty() {
            return Err(S3Error::malformed_xml());
        }
        if let Some(m) = r
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return Err(S3Error::invalid_request(format!(
                "Found unsupported HTTP method in CORS config. Unsupported method is {m}"
            )));
        }
        if let Some(o) = r
            .allowed_origins
            .iter()
            .find(|o| o.matches('*').count() > 1)
        {
            return Err(S3Error::invalid_request(format!(
                "AllowedOrigin \"{o}\" can not have more than one wildcard."
            )));
        }
        if let Some(h) = r
            .allowed_headers
            .iter()
            .find(|h| h.matches('*').count() > 1)
        {
            return Err(S3Error::invalid_request(format!(
                "AllowedHeader \"{h}\" can not have more than one wildcard."
            )));
        }
        if r.id.as_ref().is_some_and(|id| id.len() > 255) {
            return Err(S3Error::invalid_argument(
                "The ID of a CORS rule can be up to 255 characters",
            ));
        }
        if r.max_age_seconds.is_some_and(|m| m < 0) {
            return Err(S3Error::malformed_xml());
        }
        out.push(CorsRule {
            id: r.id,
            allowed_origins: r.allowed_origins,
            allowed_methods: r.allowed_methods,
            allowed_headers: r.allowed_headers,
            expose_headers: r.expose_headers,
            max_age_seconds: r.max_age_seconds,
        });
    }
    Ok(out)
}

/// PutBucketCors.
pub async fn put_bucket_cors(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    require_bucket(st, &bucket).await?;
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let rules = validate(xml::from_xml("CORSConfiguration", &body)?)?;
    st.store.meta().set_bucket_cors(&bucket, &rules).await?;
    Ok(empty(StatusCode::OK))
}

/// GetBucketCors.
pub async fn get_bucket_cors(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    if b.cors.is_empty() {
        return Err(S3Error::no_such_cors_configuration());
    }
    let conf = CorsConfiguration {
        xmlns: xml::S3_NS,
        rules: b
            .cors
            .into_iter()
            .map(|r| CorsRuleXml {
                id: r.id,
                allowed_headers: r.allowed_headers,
                allowed_methods: r.allowed_methods,
                allowed_origins: r.allowed_origins,
                expose_headers: r.expose_headers,
                max_age_seconds: r.max_age_seconds,
            })
            .collect(),
    };
    Ok(xml_response(
        StatusCode::OK,
        xml::to_xml("CORSConfiguration", &conf),
    ))
}

/// DeleteBucketCors.
pub async fn delete_bucket_cors(st: &AppState, req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    st.store.meta().set_bucket_cors(req.bucket(), &[]).await?;
    Ok(empty(StatusCode::NO_CONTENT))
}

/// `pattern` (at most one `*`, matching any run of characters) against `s`.
fn wildcard(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((pre, post)) => {
            s.len() >= pre.len() + post.len() && s.starts_with(pre) && s.ends_with(post)
        }
    }
}

/// The first rule that allows `origin`, `method` and every header of `headers`.
pub fn find_rule<'a>(
    rules: &'a [CorsRule],
    origin: &str,
    method: &str,
    headers: &[String],
) -> Option<&'a CorsRule> {
    rules.iter().find(|r| {
        r.allowed_origins.iter().any(|o| wildcard(o, origin))
            && r.allowed_methods.iter().any(|m| m == method)
            && headers.iter().all(|h| {
                r.allowed_headers
                    .iter()
                    .any(|a| wildcard(&a.to_ascii_lowercase(), &h.to_ascii_lowercase()))
            })
    })
}

/// The rules that apply to `bucket`: its own, else the server's default rule (if any).
/// `None` when the bucket does not exist.
async fn rules_for(
    st: &AppState,
    bucket: &str,
    presigned: bool,
) -> S3Result<Option<Vec<CorsRule>>> {
    let Some(b) = st.store.meta().bucket_cached(bucket).await? else {
        return Ok(None);
    };
    let mut rules = if b.cors.is_empty() {
        default_rule(st).into_iter().collect()
    } else {
        b.cors
    };
    if presigned {
        rules.extend(console_rule(st));
    }
    Ok(Some(rules))
}

/// The console's rule (see the module's comment): its origin is `--console-url` when set,
/// else its listen address (a loopback address also as `localhost`). An unspecified one
/// (`0.0.0.0`, `[::]`) allows the loopback names on the console's port only: the other names
/// it is reached by are not known here, and a wildcard host (`http://*:9001`, as before issue
/// 59) let any site served on that port read presigned answers; reached by another name, the
/// console needs `--console-url`.
fn console_rule(st: &AppState) -> Option<CorsRule> {
    let origins = console_origins(
        st.config.console_url.as_deref(),
        st.config.console_listen,
        st.config.tls_cert.is_some(),
    );
    if origins.is_empty() {
        return None;
    }
    Some(CorsRule {
        id: Some(CONSOLE_RULE.into()),
        allowed_origins: origins,
        allowed_methods: vec!["PUT".into(), "GET".into(), "HEAD".into()],
        allowed_headers: vec!["*".into()],
        expose_headers: DEFAULT_EXPOSE.iter().map(|h| (*h).to_owned()).collect(),
        max_age_seconds: Some(3000),
    })
}

/// The id of the console's rule, which [`grant`] sends without credentials.
const CONSOLE_RULE: &str = "grids3-console";

/// The origins browsers load the console from (see [`console_rule`]).
fn console_origins(
    url: Option<&str>,
    listen: Option<std::net::SocketAddr>,
    tls: bool,
) -> Vec<String> {
    if let Some(u) = url {
        return vec![u.trim_end_matches('/').to_owned()];
    }
    let Some(at) = listen else {
        return Vec::new();
    };
    let scheme = if tls { "https" } else { "http" };
    // Browsers leave a scheme's default port out of an origin.
    let port = match (tls, at.port()) {
        (false, 80) | (true, 443) => String::new(),
        (_, p) => format!(":{p}"),
    };
    if at.ip().is_unspecified() {
        let mut out = vec![
            format!("{scheme}://127.0.0.1{port}"),
            format!("{scheme}://localhost{port}"),
        ];
        // `[::]` takes IPv6 connections, and (dual-stack) IPv4 ones too.
        if at.is_ipv6() {
            out.push(format!("{scheme}://[::1]{port}"));
        }
        return out;
    }
    let ip = match at.ip() {
        std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
    };
    let mut out = vec![format!("{scheme}://{ip}{port}")];
    if at.ip().is_loopback() {
        out.push(format!("{scheme}://localhost{port}"));
    }
    out
}

/// The server-wide default rule, from `--cors-default-origins`.
fn default_rule(st: &AppState) -> Option<CorsRule> {
    let origins: Vec<String> = st
        .config
        .cors_default_origins
        .as_deref()?
        .split(',')
        .map(|o| o.trim().to_owned())
        .filter(|o| !o.is_empty())
        .collect();
    if origins.is_empty() {
        return None;
    }
    Some(CorsRule {
        id: Some("grids3-default".into()),
        allowed_origins: origins,
        allowed_methods: METHODS.iter().map(|m| (*m).to_owned()).collect(),
        allowed_headers: vec!["*".into()],
        expose_headers: DEFAULT_EXPOSE.iter().map(|h| (*h).to_owned()).collect(),
        max_age_seconds: Some(3000),
    })
}

fn set(h: &mut HeaderMap, name: &'static str, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        h.insert(name, v);
    }
}

/// The headers a matching rule grants, as AWS sends them.
fn grant(h: &mut HeaderMap, rule: &CorsRule, origin: &str) {
    let any = rule.allowed_origins.iter().any(|o| o == "*");
    if any {
        set(h, "access-control-allow-origin", "*");
    } else {
        set(h, "access-control-allow-origin", origin);
        if rule.id.as_deref() != Some(CONSOLE_RULE) {
            set(h, "access-control-allow-credentials", "true");
        }
    }
    set(
        h,
        "access-control-allow-methods",
        &rule.allowed_methods.join(", "),
    );
    if !rule.expose_headers.is_empty() {
        set(
            h,
            "access-control-expose-headers",
            &rule.expose_headers.join(", "),
        );
    }
    if let Some(m) = rule.max_age_seconds {
        set(h, "access-control-max-age", &m.to_string());
    }
}

fn vary(h: &mut HeaderMap) {
    set(
        h,
        "vary",
        "Origin, Access-Control-Request-Headers, Access-Control-Request-Method",
    );
}

/// Answers a preflight (`OPTIONS`), without authentication.
pub async fn preflight(
    st: &AppState,
    bucket: Option<&str>,
    headers: &HeaderMap,
    presigned: bool,
) -> S3Result<Response> {
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok());
    let Some(origin) = header("origin") else {
        return Err(S3Error::cors_origin_missing());
    };
    let method = header("access-control-request-method").unwrap_or("null");
    if !METHODS.contains(&method) {
        return Err(S3Error::cors_origin_missing()
            .with_message(format!("Invalid Access-Control-Request-Method: {method}")));
    }
    let requested: Vec<String> = header("access-control-request-headers")
        .unwrap_or("")
        .split(',')
        .map(|h| h.trim().to_ascii_lowercase())
        .filter(|h| !h.is_empty())
        .collect();
    let Some(bucket) = bucket else {
        return Err(S3Error::cors_forbidden());
    };
    let rules = rules_for(st, bucket, presigned)
        .await?
        .ok_or_else(S3Error::no_such_bucket)?;
    if rules.is_empty() {
        return Err(S3Error::cors_forbidden()
            .with_message("CORSResponse: CORS is not enabled for this bucket."));
    }
    let rule = find_rule(&rules, origin, method, &requested).ok_or_else(S3Error::cors_forbidden)?;
    let mut r = empty(StatusCode::OK);
    let h = r.headers_mut();
    grant(h, rule, origin);
    if !requested.is_empty() {
        set(h, "access-control-allow-headers", &requested.join(", "));
    }
    vary(h);
    Ok(r)
}

/// Adds the CORS headers to the response of an actual request that carries `Origin` (errors
/// included). Nothing is added when no rule allows the origin and method; the request itself
/// is not refused for that (the browser enforces CORS, as with AWS).
pub async fn decorate(
    st: &AppState,
    bucket: &str,
    method: &Method,
    origin: &str,
    presigned: bool,
    resp: &mut Response,
) {
    let rules = match rules_for(st, bucket, presigned).await {
        Ok(Some(r)) => r,
        _ => return,
    };
    // HEAD is matched as itself; AWS treats an actual request's method the same way.
    if let Some(rule) = find_rule(&rules, origin, method.as_str(), &[]) {
        let h = resp.headers_mut();
        grant(h, rule, origin);
        vary(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(origins: &[&str], methods: &[&str], headers: &[&str]) -> CorsRule {
        CorsRule {
            allowed_origins: origins.iter().map(|s| (*s).to_owned()).collect(),
            allowed_methods: methods.iter().map(|s| (*s).to_owned()).collect(),
            allowed_headers: headers.iter().map(|s| (*s).to_owned()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_consoles_origins() {
        let at = |s: &str| Some(s.parse::<std::net::SocketAddr>().unwrap());
        assert_eq!(
            console_origins(Some("https://c.example.com/"), at("0.0.0.0:9001"), true),
            ["https://c.example.com"]
        );
        assert_eq!(
            console_origins(None, at("127.0.0.1:9001"), false),
            ["http://127.0.0.1:9001", "http://localhost:9001"]
        );
        // Unspecified: the loopback names on its port, never a wildcard host (issue 59).
        assert_eq!(
            console_origins(None, at("0.0.0.0:9001"), true),
            ["https://127.0.0.1:9001", "https://localhost:9001"]
        );
        assert_eq!(
            console_origins(None, at("[::]:9001"), false),
            [
                "http://127.0.0.1:9001",
                "http://localhost:9001",
                "http://[::1]:9001"
            ]
        );
        for origins in [
            console_origins(None, at("0.0.0.0:9001"), false),
            console_origins(None, at("[::]:80"), false),
        ] {
            assert!(origins.iter().all(|o| !o.contains('*')), "{origins:?}");
            assert!(find_rule(
                &[rule(
                    &origins.iter().map(String::as_str).collect::<Vec<_>>(),
                    &["PUT"],
                    &["*"]
                )],
                "http://attacker.example:9001",
                "PUT",
                &[]
            )
            .is_none());
        }
        assert_eq!(
            console_origins(None, at("10.1.2.3:80"), false),
            ["http://10.1.2.3"],
            "a default port is not in an origin"
        );
        assert_eq!(
            console_origins(None, at("[::1]:9001"), false),
            ["http://[::1]:9001", "http://localhost:9001"]
        );
        assert!(console_origins(None, None, false).is_empty());
        // Any host on the console's port and scheme, nothing else.
        assert!(wildcard("http://*:9001", "http://files.lan:9001"));
        assert!(!wildcard("http://*:9001", "https://files.lan:9001"));
        assert!(!wildcard("http://*:9001", "http://files.lan:9000"));
    }

    #[test]
    fn wildcards_and_matching() {
        assert!(wildcard("*", "http://a"));
        assert!(wildcard("http://*.example.com", "http://www.example.com"));
        assert!(!wildcard("http://*.example.com", "https://www.example.com"));
        assert!(!wildcard("http://*.example.com", "http://example.org"));
        assert!(wildcard("http://a:8080", "http://a:8080"));
        // One `*` anywhere: a prefix, a suffix, or inside.
        assert!(wildcard("*.example.com", "https://www.example.com"));
        assert!(wildcard("https://*", "https://x"));
        assert!(wildcard(
            "https://app*.example.com",
            "https://app1.example.com"
        ));
        assert!(!wildcard(
            "https://app*.example.com",
            "https://web.example.com"
        ));
        assert!(!wildcard("ab*ba", "aba"), "the two ends must not overlap");
        let rules = vec![
            rule(&["http://a"], &["GET"], &[]),
            rule(&["http://*"], &["PUT"], &["x-amz-*", "content-type"]),
        ];
        assert!(find_rule(&rules, "http://a", "GET", &[]).is_some());
        assert!(find_rule(&rules, "http://a", "GET", &["range".into()]).is_none());
        let r = find_rule(
            &rules,
            "http://b",
            "PUT",
            &["X-Amz-Date".into(), "content-type".into()],
        );
        assert_eq!(r, Some(&rules[1]));
        assert!(find_rule(&rules, "http://b", "DELETE", &[]).is_none());
    }

    #[test]
    fn validation_follows_aws() {
        let conf = |m: &str, o: &str| CorsConfiguration {
            xmlns: "",
            rules: vec![CorsRuleXml {
                allowed_methods: vec![m.into()],
                allowed_origins: vec![o.into()],
                ..Default::default()
            }],
        };
        assert!(validate(conf("GET", "*")).is_ok());
        let e = validate(conf("PATCH", "*")).unwrap_err();
        assert_eq!(e.code, "InvalidRequest");
        assert!(e.message.contains("Unsupported method is PATCH"));
        assert_eq!(
            validate(conf("GET", "http://*.*")).unwrap_err().code,
            "InvalidRequest"
        );
        assert_eq!(
            validate(CorsConfiguration::default()).unwrap_err().code,
            "MalformedXML"
        );
    }
}
