//! A website request: the facts (bucket from the Host, the key from the path, the bucket's
//! configuration), the rules' verdict, and objects read as an anonymous S3 GET would read
//! them.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::Response;

use super::host::Host;
use super::page::{self, Failure};
use super::rules::{self, Asked, Before, Redirection};
use crate::error::{S3Error, S3Result};
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::xml::WebsiteConfiguration;

/// Request headers an object read passes on to the S3 read path: a range, the conditionals,
/// and what a bucket policy's conditions may read (`aws:Referer`, `aws:UserAgent`: the
/// hotlink protection AWS documents for websites). Nothing else of the request (credentials,
/// `response-*` overrides, SSE-C keys) reaches it: a website read is anonymous.
const PASSED: [header::HeaderName; 8] = [
    header::RANGE,
    header::IF_RANGE,
    header::IF_MATCH,
    header::IF_NONE_MATCH,
    header::IF_MODIFIED_SINCE,
    header::IF_UNMODIFIED_SINCE,
    header::REFERER,
    header::USER_AGENT,
];

/// Request headers the error document's read passes on: only what a policy may read.
const PASSED_TO_ERROR_DOCUMENT: [header::HeaderName; 2] = [header::REFERER, header::USER_AGENT];

/// The one website entry.
pub(super) async fn entry(State(st): State<AppState>, req: Request) -> Response {
    let started = Instant::now();
    crate::metrics::in_flight(1.0);
    let request_id = crate::s3::respond::new_request_id();
    let (parts, _body) = req.into_parts();
    // HTTP/1.1 sends a Host header; HTTP/2 the `:authority` of the URI.
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| parts.uri.authority().map(|a| a.as_str()))
        .and_then(Host::parse);
    let bucket = host
        .as_ref()
        .map(|h| h.bucket(st.config.website_domain.as_deref()));
    let mut resp = answer(&st, &parts, host.as_ref(), bucket.as_deref(), &request_id).await;
    let origin = parts
        .headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok());
    if let (Some(origin), Some(b), false) = (origin, &bucket, parts.method == Method::OPTIONS) {
        // Bounded like the read: the bucket's rules come from the (cached) bucket lookup.
        let limit = std::time::Duration::from_secs(st.config.request_timeout.max(1));
        let decorate = crate::s3::cors::decorate(&st, b, &parts.method, origin, false, &mut resp);
        let _ = tokio::time::timeout(limit, decorate).await;
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
    let op = match parts.method {
        Method::GET => "WebsiteGet",
        Method::HEAD => "WebsiteHead",
        Method::OPTIONS => "WebsitePreflight",
        _ => "WebsiteOther",
    };
    crate::metrics::in_flight(-1.0);
    crate::metrics::request(
        op,
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
    host: Option<&Host>,
    bucket: Option<&str>,
    request_id: &str,
) -> Response {
    let head = parts.method == Method::HEAD;
    let fail = |e: S3Error, bucket: Option<&str>| {
        page::response(&Failure::of_bucket(&e, bucket), None, request_id, head)
    };
    let (Some(host), Some(bucket)) = (host, bucket) else {
        return fail(
            S3Error::invalid_argument("The Host header does not name a host"),
            None,
        );
    };
    if !matches!(parts.method, Method::GET | Method::HEAD | Method::OPTIONS) {
        return fail(S3Error::method_not_allowed(), Some(bucket));
    }
    let found =
        crate::s3::lookup::within_request_timeout(st, st.store.meta().bucket_cached(bucket));
    let b = match found.await {
        Ok(Ok(Some(b))) => b,
        Ok(Ok(None)) => {
            // A first visit by the address printed at start-up, or by an IP, lands here: say
            // how the host chooses the bucket (issue 59).
            let failure = Failure::of_bucket(&S3Error::no_such_bucket(), Some(bucket)).with_hint(
                super::host::how_buckets_are_chosen(host, st.config.website_domain.as_deref()),
            );
            return page::response(&failure, None, request_id, head);
        }
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
    if parts.method == Method::OPTIONS {
        return match crate::s3::cors::preflight(st, Some(bucket), &parts.headers, false).await {
            Ok(r) => r,
            Err(e) => fail(e, Some(bucket)),
        };
    }
    let path = parts.uri.path();
    let Ok(key) = percent_encoding::percent_decode_str(path).decode_utf8() else {
        return fail(S3Error::invalid_uri(), Some(bucket));
    };
    // One leading slash separates the host from the key, as on AWS.
    let key = key.strip_prefix('/').unwrap_or(&key).to_owned();
    if key.len() > crate::s3::request::MAX_KEY_BYTES {
        return fail(S3Error::key_too_long(), Some(bucket));
    }
    let tls = crate::tls::Transport::of(&parts.extensions).tls;
    let authority = host.authority();
    let asked = Asked {
        key: &key,
        host: &authority,
        proto: if tls { "https" } else { "http" },
        path,
        query: parts.uri.query(),
    };
    let object = match rules::before(&conf, &asked) {
        Before::Redirect(to) => return redirect(&to),
        Before::Serve(object) => object,
    };
    let method = parts.method.clone();
    match read(st, parts, bucket, &object, method, &PASSED, request_id).await {
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
                let probe = read(
                    st,
                    parts,
                    self.bucket,
                    &index,
                    Method::HEAD,
                    &PASSED_TO_ERROR_DOCUMENT,
                    self.request_id,
                );
                if probe.await.is_ok() {
                    let mut location = rules::folder_location(self.asked.key);
                    if let Some(q) = self.asked.query.filter(|q| !q.is_empty()) {
                        location.push('?');
                        location.push_str(q);
                    }
                    return redirect(&Redirection {
                        status: 302,
                        location,
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
        let read_doc = read(
            st,
            parts,
            self.bucket,
            doc,
            Method::GET,
            &PASSED_TO_ERROR_DOCUMENT,
            self.request_id,
        );
        match read_doc.await {
            // The error document, with the error's status (404, 403), as AWS serves it: its
            // body and content headers, never its validators, which name another resource
            // than the one asked for.
            Ok(mut r) if r.status() == StatusCode::OK => {
                *r.status_mut() = e.status;
                for h in [
                    "x-amz-website-redirect-location",
                    "etag",
                    "last-modified",
                    "accept-ranges",
                    "x-amz-version-id",
                ] {
                    r.headers_mut().remove(h);
                }
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
/// authorization, lookup, conditionals, Range and headers. `passed` are the request's headers
/// it sees (every value of each).
async fn read(
    st: &AppState,
    parts: &Parts,
    bucket: &str,
    key: &str,
    method: Method,
    passed: &[header::HeaderName],
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
    for name in passed {
        for v in parts.headers.get_all(name) {
            p.headers.append(name.clone(), v.clone());
        }
    }
    let req = S3Request::on_behalf(
        p,
        Vec::new(),
        Some(bucket.to_owned()),
        Some(key.to_owned()),
        crate::auth::Auth::anonymous(),
        Body::empty(),
        request_id,
    );
    let op = if method == Method::HEAD {
        Op::HeadObject
    } else {
        Op::GetObject
    };
    crate::s3::lookup::within_request_timeout(st, crate::s3::dispatch(st, op, req)).await?
}
