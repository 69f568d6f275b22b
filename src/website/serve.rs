//! A website request: the facts (bucket from the Host, the key from the path, the bucket's
//! configuration), the rules' verdict, and objects read as an anonymous S3 GET would read
//! them.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;

use super::page::{self, Failure};
use super::rules::{self, Asked, Before, Redirection};
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::xml::WebsiteConfiguration;

/// Request headers an object read passes on to the S3 read path: a range and the
/// conditionals. Nothing else of the request (credentials, `response-*` overrides, SSE-C
/// keys) reaches it: a website read is anonymous.
const PASSED: [header::HeaderName; 5] = [
    header::RANGE,
    header::IF_MATCH,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::IF_UNMODIFIED_SINCE,
];

/// The one website entry.
pub(super) async fn entry(State(st): State<AppState>, req: Request) -> Response {
    let started = Instant::now();
    let request_id = crate::http::new_request_id();
    let (parts, _body) = req.into_parts();
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bucket = super::host::bucket_of(&host, st.config.website_domain.as_deref());
    let mut resp = answer(&st, &parts, bucket.as_deref(), &host, &request_id).await;
    let origin = parts
        .headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok());
    if let (Some(origin), Some(b), false) = (origin, &bucket, parts.method == Method::OPTIONS) {
        crate::s3::cors::decorate(&st, b, &parts.method, origin, &mut resp).await;
    }
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        h.insert("x-amz-request-id", v.clone());
        h.insert("x-amz-id-2", v);
    }
    h.insert(header::SERVER, HeaderValue::from_static("grids3"));
    let bytes_out = resp
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .filter(|_| parts.method != Method::HEAD)
        .unwrap_or(0);
    crate::metrics::request(
        "WebsiteGet",
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
        0,
        bytes_out,
    );
    tracing::info!(
        request_id,
        bucket = bucket.as_deref().unwrap_or(""),
        path = parts.uri.path(),
        status = resp.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "website request"
    );
    resp
}

/// A redirect response (no body).
fn redirect(to: &Redirection) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::from_u16(to.status).unwrap_or(StatusCode::MOVED_PERMANENTLY);
    if let Ok(v) = HeaderValue::from_str(&to.location) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

async fn answer(
    st: &AppState,
    parts: &Parts,
    bucket: Option<&str>,
    host: &str,
    request_id: &str,
) -> Response {
    let head = parts.method == Method::HEAD;
    let fail = |e: S3Error, bucket: Option<&str>| {
        page::response(&Failure::of_bucket(&e, bucket), None, request_id, head)
    };
    let Some(bucket) = bucket else {
        return fail(S3Error::no_such_bucket(), None);
    };
    match parts.method {
        Method::GET | Method::HEAD => {}
        Method::OPTIONS => {
            return match crate::s3::cors::preflight(st, Some(bucket), &parts.headers).await {
                Ok(r) => r,
                Err(e) => fail(e, Some(bucket)),
            }
        }
        _ => return fail(S3Error::method_not_allowed(), Some(bucket)),
    }
    let b =
        match crate::s3::lookup::within_request_timeout(st, st.store.meta().bucket_cached(bucket))
            .await
        {
            Ok(Ok(Some(b))) => b,
            Ok(Ok(None)) => return fail(S3Error::no_such_bucket(), Some(bucket)),
            Ok(Err(e)) => return fail(S3Error::from(e), Some(bucket)),
            Err(e) => return fail(e, Some(bucket)),
        };
    let Some(conf) = b
        .website
        .as_deref()
        .and_then(crate::s3::rules::website::parse_stored)
    else {
        return fail(S3Error::no_such_website_configuration(), Some(bucket));
    };
    let path = parts.uri.path();
    let Ok(key) = percent_encoding::percent_decode_str(path).decode_utf8() else {
        return fail(S3Error::invalid_uri(), Some(bucket));
    };
    // One leading slash separates the host from the key, as on AWS.
    let key = key.strip_prefix('/').unwrap_or(&key).to_owned();
    if key.len() > crate::http::MAX_KEY_BYTES {
        return fail(S3Error::key_too_long(), Some(bucket));
    }
    let tls = crate::tls::Transport::of(&parts.extensions).tls;
    let asked = Asked {
        key: &key,
        host,
        proto: if tls { "https" } else { "http" },
        path,
        query: parts.uri.query(),
    };
    let object = match rules::before(&conf, &asked) {
        Before::Redirect(to) => return redirect(&to),
        Before::Serve(object) => object,
    };
    let method = parts.method.clone();
    match read(st, parts, bucket, &object, method, true, request_id).await {
        Ok(resp) => match resp.headers().get("x-amz-website-redirect-location") {
            // The object's own redirect (routing rules, applied above, come first).
            Some(to) if resp.status().is_success() => {
                let mut r = Response::new(Body::empty());
                *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
                r.headers_mut().insert(header::LOCATION, to.clone());
                r
            }
            _ => resp,
        },
        Err(e) => {
            let failed = Failed {
                conf: &conf,
                asked: &asked,
                bucket,
                object: &object,
                request_id,
            };
            failed.answer(st, parts, e).await
        }
    }
}

/// A read that failed, and what the configuration says to answer instead.
struct Failed<'a> {
    conf: &'a WebsiteConfiguration,
    asked: &'a Asked<'a>,
    bucket: &'a str,
    object: &'a str,
    request_id: &'a str,
}

impl Failed<'_> {
    async fn answer(&self, st: &AppState, parts: &Parts, e: S3Error) -> Response {
        let head = parts.method == Method::HEAD;
        let status = e.status.as_u16();
        // `dir` names no object but `dir/` has an index document: the folder, with its slash.
        // (403 too: a reader who may not list the bucket is told AccessDenied for a missing
        // key. The probe reveals only an index document that reader may read anyway.)
        if status == 404 || (status == 403 && e.code == "AccessDenied") {
            if let Some(index) = rules::folder_index(self.conf, self.asked.key) {
                if read(
                    st,
                    parts,
                    self.bucket,
                    &index,
                    Method::HEAD,
                    false,
                    self.request_id,
                )
                .await
                .is_ok()
                {
                    return redirect(&Redirection {
                        status: 302,
                        location: rules::folder_location(self.asked.key),
                    });
                }
            }
        }
        if let Some(to) = rules::after_error(self.conf, self.asked, status) {
            return redirect(&to);
        }
        let failure = Failure::of_key(&e, self.object);
        // A HEAD gets the error in headers only, and never the error document's body.
        let doc = rules::error_document(self.conf, status).filter(|_| !head);
        let Some(doc) = doc else {
            return page::response(&failure, None, self.request_id, head);
        };
        match read(
            st,
            parts,
            self.bucket,
            doc,
            Method::GET,
            false,
            self.request_id,
        )
        .await
        {
            // The error document, with the error's status (404, 403), as AWS serves it.
            Ok(mut r) if r.status() == StatusCode::OK => {
                *r.status_mut() = e.status;
                r.headers_mut().remove("x-amz-website-redirect-location");
                r
            }
            Ok(_) => page::response(&failure, None, self.request_id, head),
            Err(doc_error) => {
                let nested = Failure::of_key(&doc_error, doc);
                page::response(&failure, Some(&nested), self.request_id, head)
            }
        }
    }
}

/// Reads `key` as an anonymous GetObject (or HeadObject) on the S3 endpoint would: the same
/// authorization, lookup, conditionals, Range and headers. `conditionals` passes the
/// request's Range and `If-*` headers on (not for the index probe or the error document).
async fn read(
    st: &AppState,
    parts: &Parts,
    bucket: &str,
    key: &str,
    method: Method,
    conditionals: bool,
    request_id: &str,
) -> S3Result<Response> {
    let uri = format!(
        "/{}/{}",
        crate::percent::uri_encode(bucket, false),
        crate::percent::uri_encode(key, true)
    );
    let (mut p, ()) = Request::builder()
        .method(method.clone())
        .uri(uri)
        .body(())
        .map_err(|_| S3Error::invalid_uri())?
        .into_parts();
    // The connection's facts (the peer's address for `aws:SourceIp`, TLS for
    // `aws:SecureTransport`) are the request's.
    p.extensions = parts.extensions.clone();
    if conditionals {
        for name in PASSED {
            if let Some(v) = parts.headers.get(&name) {
                p.headers.insert(name, v.clone());
            }
        }
    }
    let source_ip = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let req = S3Request {
        parts: p,
        query: Vec::new(),
        bucket: Some(bucket.to_owned()),
        key: Some(key.to_owned()),
        auth: crate::auth::Auth::anonymous(),
        body: Body::empty(),
        access: crate::s3::request::access::Access::Denied,
        source_access: crate::s3::request::access::Access::Granted,
        per_key: None,
        bypass_governance: false,
        source_ip,
        request_id: request_id.to_owned(),
        tagging: None,
    };
    let op = if method == Method::HEAD {
        Op::HeadObject
    } else {
        Op::GetObject
    };
    crate::s3::lookup::within_request_timeout(st, crate::s3::dispatch(st, op, req)).await?
}
