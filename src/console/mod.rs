//! The web console: browse, upload, share and manage from a browser, on a listener of its own
//! (`--console-listen`; 127.0.0.1:9001 with `--local-db`).
//!
//! Server-rendered HTML (askama templates, escaping on by default) and one small script,
//! embedded in the binary: no Node build step. Every action is the S3 request the signed-in
//! key would send, run through `s3::dispatch` (`s3call`), so the console can do exactly what
//! that key can do through S3, and a refusal shows AWS's reason.
//!
//! - `session`: login, the session cookie, CSRF, the login throttle.
//! - `sso` and `sso_assume`: single sign-on through an OpenID provider, to a role's
//!   temporary credentials got from STS.
//! - `s3call`: the S3 requests; `iamcall`: the IAM requests (identity pages), run by the IAM
//!   API's own dispatch as the signed-in key.
//! - `pages`: the routes.
//! - `views`: the templates.

mod iamcall;
mod idviews;
mod markdown;
mod pages;
mod s3call;
pub mod session;
pub mod sso;
mod sso_assume;
mod views;

use axum::http::{header, HeaderValue};
use axum::routing::{get, post};
use axum::Router;

use crate::state::AppState;

/// The console's stylesheet and script, embedded.
const CSS: &str = include_str!("../../assets/console/console.css");
const JS: &str = include_str!("../../assets/console/console.js");

/// The host name of a URL (`None` when it has none).
fn url_host(u: &str) -> Option<String> {
    url::Url::parse(u)
        .ok()?
        .host_str()
        .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
}

/// Cookies do not separate ports: a page of the S3 endpoint on the console's host name can
/// set the console's cookies (docs/sso.md). Said once, at start.
fn warn_if_host_shared(st: &AppState) {
    let console = match (&st.config.console_url, st.config.console_listen) {
        (Some(u), _) => url_host(u),
        (None, Some(a)) => Some(a.ip().to_string()),
        (None, None) => None,
    };
    if console.is_some() && console == url_host(&s3_url(st)) {
        tracing::warn!(
            host = console.as_deref().unwrap_or_default(),
            "the console shares its host name with the S3 endpoint: an HTML object served there can set the console's cookies (sign a visitor in as someone else); serve the console on a host name of its own in production (docs/sso.md)"
        );
    }
}

/// The console's router.
pub fn router(state: AppState) -> Router {
    warn_if_host_shared(&state);
    let asset = |body: &'static str, ct: &'static str| {
        move || async move {
            (
                [
                    (header::CONTENT_TYPE, ct),
                    (header::CACHE_CONTROL, "max-age=300"),
                ],
                body,
            )
        }
    };
    Router::new()
        .route("/", get(pages::buckets))
        .route("/login", get(pages::login_page).post(pages::login))
        .route("/logout", post(pages::logout))
        .route("/login/sso", get(pages::sso_start))
        .route(
            sso::CALLBACK,
            get(pages::sso_callback).post(pages::sso_finish),
        )
        .route("/buckets/create", post(pages::create_bucket))
        .route("/buckets/delete", post(pages::delete_bucket))
        .route("/browse", get(pages::browse))
        .route("/object", get(pages::object))
        .route("/download", get(pages::download))
        .route("/objects/delete", post(pages::delete_objects))
        .route("/folders/delete", post(pages::delete_folder))
        .route("/objects/share", post(pages::share))
        .route("/objects/tags", post(pages::tags))
        .route("/objects/lock", post(pages::lock))
        .route("/objects/restore", post(pages::restore))
        .route("/objects/delete-version", post(pages::delete_version))
        .route("/raw", get(pages::raw))
        .route("/live", get(pages::live))
        .route("/admin", get(pages::admin))
        .route("/status", get(pages::status))
        .route("/admin/keys", post(pages::admin_keys))
        .route("/admin/kms", post(pages::admin_kms))
        .route("/admin/quota", post(pages::save_account_quota))
        .route("/settings", get(pages::settings))
        .route("/settings/save", post(pages::save_setting))
        .route("/settings/delete", post(pages::delete_setting))
        .route("/settings/convert", post(pages::convert))
        .route("/settings/quota", post(pages::save_quota))
        .route("/identity", get(pages::users))
        .route("/identity/users", post(pages::users_post))
        .route("/identity/user", get(pages::user).post(pages::user_post))
        .route(
            "/identity/groups",
            get(pages::groups).post(pages::groups_post),
        )
        .route("/identity/group", get(pages::group).post(pages::group_post))
        .route(
            "/identity/policies",
            get(pages::policies).post(pages::policies_post),
        )
        .route(
            "/identity/policy",
            get(pages::policy).post(pages::policy_post),
        )
        .route("/identity/access", get(pages::access))
        .route("/uploads/start", post(pages::start_upload))
        .route("/uploads/complete", post(pages::complete_upload))
        .route("/uploads/abort", post(pages::abort_upload))
        .route(
            "/static/console.css",
            get(asset(CSS, "text/css; charset=utf-8")),
        )
        .route(
            "/static/console.js",
            get(asset(JS, "text/javascript; charset=utf-8")),
        )
        .with_state(state.clone())
        .layer(axum::middleware::from_fn_with_state(state, protect))
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
}

/// The S3 endpoint's URL as browsers reach it (`--console-s3-url`, else the S3 listener).
pub fn s3_url(st: &AppState) -> String {
    match &st.config.console_s3_url {
        Some(u) => u.trim_end_matches('/').to_owned(),
        None => {
            let scheme = if st.config.tls_cert.is_some() {
                "https"
            } else {
                "http"
            };
            format!("{scheme}://{}", st.config.listen)
        }
    }
}

/// Where share links and uploads point, and the Host they sign: `--console-s3-url` (else the S3
/// listener), as a browser will send it (lower-case, without a default port). An unspecified
/// listen address (`0.0.0.0`) is replaced by the name the browser reached the console by.
pub fn s3_base(st: &AppState, headers: &axum::http::HeaderMap) -> (String, String) {
    let base = crate::console::s3_url(st);
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base.as_str()));
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split('/').next().unwrap_or(rest).to_ascii_lowercase();
    let (name, port) = match authority.rsplit_once(':') {
        Some((n, p)) if !n.ends_with(']') || n.starts_with('[') => {
            (n.to_owned(), Some(p.to_owned()))
        }
        _ => (authority.clone(), None),
    };
    let name = if matches!(name.as_str(), "0.0.0.0" | "[::]") {
        headers
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .and_then(host_name)
            .unwrap_or_else(|| "127.0.0.1".to_owned())
    } else {
        name
    };
    let port =
        port.filter(|p| !((scheme == "http" && p == "80") || (scheme == "https" && p == "443")));
    let host = match port {
        Some(p) => format!("{name}:{p}"),
        None => name,
    };
    (format!("{scheme}://{host}"), host)
}

/// Headers every console answer carries: no framing, no sniffing, scripts and styles only
/// from the console itself, no referrer (with its key names) sent to other sites. Scripts may
/// connect to the console and to the S3 endpoint (browser uploads), nowhere else.
async fn protect(
    axum::extract::State(st): axum::extract::State<AppState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let (s3, _) = s3_base(&st, req.headers());
    let mut r = next.run(req).await;
    let csp = format!(
        "default-src 'self'; connect-src 'self' {s3}; img-src 'self' data: blob:; media-src 'self' blob:; object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
    );
    let csp = HeaderValue::from_str(&csp).unwrap_or(HeaderValue::from_static(
        "default-src 'self'; object-src 'none'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    ));
    let h = r.headers_mut();
    // A handler's own policy (the sandbox of object bytes) is stricter: it stays.
    if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    for (k, v) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("referrer-policy", "same-origin"),
    ] {
        // A handler's own policy (the sandbox of object bytes) is stricter: it stays.
        if !h.contains_key(k) {
            h.insert(k, HeaderValue::from_static(v));
        }
    }
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    r
}

/// The name of a Host header without its port (an IPv6 address keeps its brackets), or
/// `None` when it is not a host name or address: the name goes into URLs and the page's CSP.
fn host_name(h: &str) -> Option<String> {
    let name = match h.find(']') {
        Some(end) if h.starts_with('[') => &h[..=end],
        _ => h.rsplit_once(':').map_or(h, |(n, _)| n),
    };
    let ok = !name.is_empty()
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || b".-[]:".contains(&c));
    ok.then(|| name.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_names_lose_their_port_only() {
        use super::host_name;
        assert_eq!(host_name("Files.LAN:9001").as_deref(), Some("files.lan"));
        assert_eq!(host_name("files.lan").as_deref(), Some("files.lan"));
        assert_eq!(host_name("[::1]").as_deref(), Some("[::1]"));
        assert_eq!(host_name("[::1]:9001").as_deref(), Some("[::1]"));
        assert_eq!(host_name("a b; script-src *"), None);
        assert_eq!(host_name(":9001"), None);
    }
}
