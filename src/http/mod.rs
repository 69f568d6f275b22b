//! The HTTP side: the router (one S3 entry plus the reserved `/_grids3/` prefix) and
//! addressing. It only routes; the operation enum lives in `s3::op`, below both, so that the
//! handlers never import from here.

pub mod addressing;
pub mod admin;

use std::time::Instant;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::auth::{authenticate, sigv4};
use crate::error::S3Error;
use crate::s3;
use crate::s3::op;
use crate::s3::request::S3Request;
use crate::state::AppState;
use crate::xml;

pub use crate::s3::request::MAX_KEY_BYTES;
pub use crate::s3::respond::new_request_id;

/// The application router.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/_grids3/health", get(|| async { "ok" }))
        .route("/_grids3/ready", get(ready))
        .route("/_grids3/metrics", get(metrics))
        .merge(admin::routes())
        .fallback(entry)
        .with_state(state)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            error_response(&S3Error::internal(), "", &new_request_id(), false)
        }))
}

/// The Prometheus metrics; with `--metrics-token`, only for a request bearing it.
async fn metrics(State(st): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    if let Some(token) = st.config.metrics_token.as_deref().filter(|t| !t.is_empty()) {
        let sent = headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or_default();
        if !crate::crypto::keys::same(sent.trim().as_bytes(), token.as_bytes()) {
            return (
                axum::http::StatusCode::UNAUTHORIZED,
                [("www-authenticate", "Bearer realm=\"grids3 metrics\"")],
                "a bearer token is required\n",
            )
                .into_response();
        }
    }
    crate::metrics::render().into_response()
}

async fn ready(State(st): State<AppState>) -> Response {
    let ping = st
        .store
        .meta()
        .database()
        .run_command(mongodb::bson::doc! {"ping": 1});
    match tokio::time::timeout(std::time::Duration::from_secs(2), ping).await {
        Ok(Ok(_)) => (StatusCode::OK, "ready").into_response(),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "database unreachable").into_response(),
    }
}

/// Renders an error as the S3 XML document (no body for HEAD).
pub fn error_response(e: &S3Error, resource: &str, request_id: &str, head: bool) -> Response {
    let body = if head {
        Body::empty()
    } else {
        Body::from(xml::to_xml(
            "Error",
            &xml::ErrorDoc {
                code: e.code,
                message: &e.message,
                resource,
                request_id,
                extra: e.extra.iter().map(|(k, v)| (*k, v.as_str())).collect(),
            },
        ))
    };
    let mut r = Response::new(body);
    *r.status_mut() = e.status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    for (name, value) in &e.headers {
        if let Ok(v) = HeaderValue::from_str(value) {
            r.headers_mut().insert(*name, v);
        }
    }
    if e.status == StatusCode::SERVICE_UNAVAILABLE {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// The one S3 entry: parse, authenticate, dispatch, render. A request signed for another
/// AWS service (IAM's Query API) goes to that service's room instead: AWS's SDKs reach every
/// service at the one `--endpoint-url`, and the credential scope says which they meant.
async fn entry(State(st): State<AppState>, req: Request) -> Response {
    // MinIO's admin API has this prefix to itself (MinIO reserves the bucket name `minio`),
    // whatever the signature's service: `mc admin` and minio-py's MinioAdmin sign for `s3`.
    // grids3's own admin API is `/_grids3/admin/` (routed above).
    if req.uri().path().starts_with(crate::minio_admin::PREFIX) {
        let (parts, body) = req.into_parts();
        return crate::minio_admin::handle(&st, parts, body).await;
    }
    if crate::auth::signed_service(req.headers(), &sigv4::parse_query(req.uri().query())).as_deref()
        == Some("iam")
    {
        let (parts, body) = req.into_parts();
        return crate::iam::handle::handle(&st, parts, body).await;
    }
    // STS: signed for `sts`, or an unsigned AssumeRoleWithWebIdentity (by its Action).
    if crate::sts::entry::is_sts(req.headers(), req.method(), req.uri()) {
        let (parts, body) = req.into_parts();
        return crate::sts::entry::handle(&st, parts, body).await;
    }
    let started = Instant::now();
    crate::metrics::handle();
    crate::metrics::in_flight(1.0);
    let request_id = new_request_id();
    let (parts, body) = req.into_parts();
    let query = sigv4::parse_query(parts.uri.query());
    // Only presigned requests get the console's CORS rule (see `s3::cors`).
    let presigned = query.iter().any(|(k, _)| k == "X-Amz-Signature");
    let host = parts
        .headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let target = addressing::resolve(
        host.as_deref(),
        parts.uri.path(),
        st.config.domain.as_deref(),
    );
    let op = op::parse(
        &parts.method,
        target.bucket.as_deref(),
        target.key.as_deref(),
        &query,
        &parts.headers,
    );
    let resource = parts.uri.path().to_owned();
    let head = parts.method == Method::HEAD;
    let op_name = op.name().to_owned();
    let (bucket, key) = (target.bucket.clone(), target.key.clone());
    let content_length = |h: &axum::http::HeaderMap| {
        h.get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let bytes_in = content_length(&parts.headers);
    // A request refused before its body was read: the client may still send the body (after
    // `Expect: 100-continue` times out, for one), and the next request on the connection would
    // start with its bytes (seen as a method `xDELETE` whose signature did not match).
    let has_body = bytes_in > 0 || parts.headers.contains_key(header::TRANSFER_ENCODING);
    // For the CORS headers of the response (see `s3::cors`).
    let origin = parts
        .headers
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let method = parts.method.clone();
    // The peer's address, for `aws:SourceIp` (set by the server loop, or by axum's
    // `into_make_service_with_connect_info` in tests).
    let source_ip = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    // What a server access log record needs of the request, taken before it is consumed, and
    // only for a bucket whose logging is on (or not known yet): every other request pays a
    // cache lookup and nothing more. Times are the database's, as every instance's records
    // end up in one log.
    let log_facts = bucket
        .as_deref()
        .filter(|b| st.store.meta().logging_hint(b) != Some(false))
        .map(|_| LogFacts::of(&parts, &query, st.store.meta().clock().now().to_chrono()));
    let mut requester: Option<String> = None;
    let result = async {
        if op == op::Op::Preflight {
            // Browsers send preflights without credentials; the bucket's rules decide.
            return s3::cors::preflight(&st, target.bucket.as_deref(), &parts.headers, presigned)
                .await;
        }
        if op == op::Op::PostObject {
            // A form upload carries its signature in the form (a signed policy).
            let bucket = target.bucket.clone().unwrap_or_default();
            return s3::post::post_object(&st, &bucket, &parts, body, source_ip, &request_id).await;
        }
        s3::sse::require_secure_transport(
            &st,
            crate::tls::Transport::of(&parts.extensions),
            &parts.headers,
        )?;
        let v2 = (!st.config.disable_sigv2).then_some(crate::auth::SigV2Request {
            virtual_bucket: target.bucket.as_deref().filter(|_| target.virtual_hosted),
            bucket_only: target.bucket.is_some() && target.key.is_none(),
        });
        let auth = if crate::auth::has_credentials(&parts.headers, &query) {
            // The key's lookup (cached, see `auth::credentials`) reaches the database: bounded
            // like the rest, or a database that stops answering would hang every request whose
            // key is not in the cache (seen as a hung test under load, where the cache had
            // expired).
            s3::lookup::within_request_timeout(
                &st,
                authenticate(&parts, &query, &st.creds, &st.config.region, v2),
            )
            .await??
        } else {
            // Unsigned: the authorization decides (what ACLs grant AllUsers).
            crate::auth::Auth::anonymous()
        };
        if !auth.is_anonymous() {
            requester = Some(s3::respond::owner_of(&auth.access_key).id);
        }
        // `%FF` and `%FE` must not name the same object: a path that does not decode to
        // UTF-8 is refused as AWS refuses it.
        if percent_encoding::percent_decode_str(parts.uri.path())
            .decode_utf8()
            .is_err()
        {
            return Err(S3Error::invalid_uri());
        }
        if target.key.as_ref().is_some_and(|k| k.len() > MAX_KEY_BYTES) {
            return Err(S3Error::key_too_long());
        }
        if let op::Op::NotImplemented(what) = &op {
            tracing::debug!(what, "not implemented");
            return Err(S3Error::not_implemented()
                .with_message(format!("{what} is not implemented by grids3")));
        }
        let req = S3Request {
            parts,
            query,
            bucket: target.bucket,
            key: target.key,
            auth,
            body,
            access: s3::request::access::Access::Denied,
            source_access: s3::request::access::Access::Granted,
            per_key: None,
            bypass_governance: false,
            source_ip,
            request_id: request_id.clone(),
            tagging: None,
        };
        // Everything else answers within the request timeout: a database that accepts
        // connections but stops answering (the driver has no socket timeout) gets a 503, not a
        // hung request. Dropping the handler midway is as safe as a crash (docs/failure-model.md).
        if op.moves_data() {
            s3::dispatch(&st, op, req).await
        } else {
            s3::lookup::within_request_timeout(&st, s3::dispatch(&st, op, req)).await?
        }
    }
    .await;
    let error_code = result.as_ref().err().map(|e| e.code);
    let mut resp = match result {
        Ok(r) => r,
        Err(e) => {
            let mut r = error_response(&e, &resource, &request_id, head);
            if has_body {
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            r
        }
    };
    if let (Some(origin), Some(b), false) = (&origin, &bucket, method == Method::OPTIONS) {
        s3::cors::decorate(&st, b, &method, origin, presigned, &mut resp).await;
    }
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&request_id) {
        h.insert("x-amz-request-id", v.clone());
        h.insert("x-amz-id-2", v);
    }
    h.insert(header::SERVER, HeaderValue::from_static("grids3"));
    let bytes_out = if head {
        0
    } else {
        content_length(resp.headers())
    };
    if let (Some(b), Some(facts)) = (&bucket, log_facts) {
        let answer = {
            let header = |n: &str| {
                resp.headers()
                    .get(n)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            AnswerFacts {
                status: resp.status().as_u16(),
                content_range: header("content-range"),
                content_length: header("content-length").and_then(|l| l.parse().ok()),
                version_id: header("x-amz-version-id"),
                error_code,
                requester,
                request_id: request_id.clone(),
                source_ip,
                bytes_in,
                bytes_out,
                elapsed_ms: started.elapsed().as_millis() as u64,
            }
        };
        facts.record(&st, b, key.as_deref(), answer).await;
    }
    crate::metrics::in_flight(-1.0);
    crate::metrics::request(
        &op_name,
        resp.status().as_u16(),
        started.elapsed().as_secs_f64(),
        bytes_in,
        bytes_out,
    );
    tracing::info!(
        request_id,
        bytes_in,
        bytes_out,
        op = op_name,
        bucket = bucket.as_deref().unwrap_or(""),
        key = key.as_deref().unwrap_or(""),
        status = resp.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    resp
}

/// How a request was answered, as its access log record needs it (read out of the response,
/// whose body must not be held across the record's await).
struct AnswerFacts {
    status: u16,
    content_range: Option<String>,
    content_length: Option<u64>,
    version_id: Option<String>,
    error_code: Option<&'static str>,
    requester: Option<String>,
    request_id: String,
    source_ip: Option<std::net::IpAddr>,
    bytes_in: u64,
    bytes_out: u64,
    elapsed_ms: u64,
}

/// What a server access log record takes from a request before the request is consumed.
struct LogFacts {
    received: chrono::DateTime<chrono::Utc>,
    method: String,
    request_uri: String,
    query: Vec<(String, String)>,
    referrer: Option<String>,
    user_agent: Option<String>,
    host: Option<String>,
    signature: Option<(&'static str, &'static str)>,
}

impl LogFacts {
    fn of(
        parts: &axum::http::request::Parts,
        query: &[(String, String)],
        received: chrono::DateTime<chrono::Utc>,
    ) -> Self {
        let h = |n: &str| {
            parts
                .headers
                .get(n)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let q = |n: &str| query.iter().any(|(k, _)| k == n);
        let auth = h("authorization").unwrap_or_default();
        let signature = if auth.starts_with("AWS4-HMAC-SHA256") {
            Some(("SigV4", "AuthHeader"))
        } else if auth.starts_with("AWS ") {
            Some(("SigV2", "AuthHeader"))
        } else if q("X-Amz-Algorithm") {
            Some(("SigV4", "QueryString"))
        } else if q("AWSAccessKeyId") {
            Some(("SigV2", "QueryString"))
        } else {
            None
        };
        Self {
            received,
            method: parts.method.as_str().to_owned(),
            request_uri: format!(
                "{} {} HTTP/1.1",
                parts.method,
                parts
                    .uri
                    .path_and_query()
                    .map(|p| p.as_str())
                    .unwrap_or("/")
            ),
            query: query.to_vec(),
            referrer: h("referer"),
            user_agent: h("user-agent"),
            host: h("host"),
            signature,
        }
    }

    /// Keeps the record of this request when its bucket's logging is on (the bucket comes
    /// from the cache the request itself filled).
    async fn record(self, st: &AppState, bucket: &str, key: Option<&str>, a: AnswerFacts) {
        // The bucket as the request's own lookup left it in the cache; a lookup only when it
        // is not cached at all, bounded: a record must never hold an answer (or hang it
        // while the database is away).
        let b = match st.store.meta().peek_bucket(bucket) {
            Some(b) => b,
            None => {
                let lookup = st.store.meta().bucket_cached(bucket);
                match tokio::time::timeout(std::time::Duration::from_millis(500), lookup).await {
                    Ok(Ok(b)) => b,
                    _ => None,
                }
            }
        };
        let Some(b) = b else {
            return;
        };
        if b.logging.is_none() {
            return;
        }
        let object_size = key.and_then(|_| match self.method.as_str() {
            "PUT" | "POST" => Some(a.bytes_in),
            "GET" | "HEAD" => a
                .content_range
                .as_deref()
                .and_then(|r| r.rsplit('/').next().and_then(|t| t.parse().ok()))
                .or(a.content_length),
            _ => None,
        });
        let r = crate::access_log::Record {
            bucket_owner: s3::respond::owner_of(&b.owner).id,
            bucket: bucket.to_owned(),
            time: self.received,
            remote_ip: a.source_ip.map(|ip| ip.to_string()),
            requester: a.requester,
            request_id: a.request_id.clone(),
            operation: crate::access_log::record::operation(
                &self.method,
                key.is_some(),
                &self.query,
            ),
            key: key.map(|k| crate::auth::sigv4::uri_encode(k, false)),
            request_uri: self.request_uri,
            status: a.status,
            error_code: a.error_code.map(str::to_owned),
            bytes_sent: Some(a.bytes_out),
            object_size,
            total_ms: a.elapsed_ms,
            turn_around_ms: a.elapsed_ms,
            referrer: self.referrer,
            user_agent: self.user_agent,
            version_id: a.version_id.or_else(|| {
                self.query
                    .iter()
                    .find(|(k, _)| k == "versionId")
                    .map(|(_, v)| v.clone())
            }),
            host_id: a.request_id,
            signature_version: self.signature.map(|s| s.0),
            cipher_suite: None,
            auth_type: self.signature.map(|s| s.1),
            host_header: self.host,
            tls_version: None,
            acl_required: false,
        };
        st.access_log.push(bucket, &r);
    }
}
