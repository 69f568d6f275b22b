//! PutBucketNotificationConfiguration and GetBucketNotificationConfiguration: which events of
//! a bucket go to which targets (the events themselves are made and delivered by
//! `crate::notify`).
//!
//! A destination is checked as AWS checks it: an ARN that names no configured target is
//! refused with `400 InvalidArgument` "Unable to validate the following destination
//! configurations", naming it, unless the request says `x-amz-skip-destination-validation:
//! true`. Then it is stored, but a rule makes events only while its target exists (see
//! `crate::notify::Notifier::record`): none are queued for a name nothing serves, to reach
//! whatever target is later created under it. Each target the configuration names is sent an
//! `s3:TestEvent` (none with the header: a target may not exist).

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::notify::listen::Refused;
use crate::notify::{config, targets};
use crate::s3::authz;
use crate::s3::lookup::require_bucket;
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::s3::respond::{empty, xml_response};
use crate::state::AppState;
use crate::xml;

/// PutBucketNotificationConfiguration.
pub async fn put(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    require_bucket(st, req.bucket()).await?;
    let skip = match req.header("x-amz-skip-destination-validation") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("true") => true,
        Some(v) if v.eq_ignore_ascii_case("false") => false,
        Some(_) => {
            return Err(S3Error::invalid_argument(
                "x-amz-skip-destination-validation must be true or false",
            ))
        }
    };
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    let conf = config::parse(&body)?;
    let known: Vec<String> = st
        .notify
        .targets()
        .await?
        .iter()
        .map(|t| t.name())
        .collect();
    let mut named: Vec<String> = Vec::new();
    let mut unknown =
        S3Error::invalid_argument("Unable to validate the following destination configurations");
    let mut bad = 0;
    for r in &conf.rules {
        let name = targets::name_of_arn(&r.arn);
        match name {
            Some(n) if skip || known.contains(&n) => {
                if !named.contains(&n) {
                    named.push(n);
                }
            }
            other => {
                bad += 1;
                let why = match other {
                    None => "Not a grids3 target ARN: arn:grids3:sqs::<id>:<type>",
                    Some(_) => "No target with this id and type is configured",
                };
                unknown = unknown
                    .with_extra(argument_name(bad), r.arn.clone())
                    .with_extra(argument_value(bad), why.to_owned());
            }
        }
    }
    if bad > 0 {
        return Err(unknown);
    }
    let stored = (!conf.rules.is_empty()).then(|| config::render(&conf));
    if !st
        .store
        .meta()
        .set_bucket_notification(req.bucket(), stored.as_deref())
        .await?
    {
        return Err(S3Error::no_such_bucket());
    }
    if !skip && !named.is_empty() {
        st.notify
            .test_events(req.bucket(), &named, &req.request_id)
            .await?;
    }
    Ok(empty(StatusCode::OK))
}

/// The element names of the n-th refused destination (`ArgumentName1`, `ArgumentValue1`, ...);
/// AWS numbers them, and the error's extras are static names.
fn argument_name(n: usize) -> &'static str {
    const NAMES: [&str; 8] = [
        "ArgumentName1",
        "ArgumentName2",
        "ArgumentName3",
        "ArgumentName4",
        "ArgumentName5",
        "ArgumentName6",
        "ArgumentName7",
        "ArgumentName8",
    ];
    NAMES[(n - 1).min(NAMES.len() - 1)]
}

fn argument_value(n: usize) -> &'static str {
    const VALUES: [&str; 8] = [
        "ArgumentValue1",
        "ArgumentValue2",
        "ArgumentValue3",
        "ArgumentValue4",
        "ArgumentValue5",
        "ArgumentValue6",
        "ArgumentValue7",
        "ArgumentValue8",
    ];
    VALUES[(n - 1).min(VALUES.len() - 1)]
}

/// ListenBucketNotification (MinIO's extension, see `crate::notify::listen`): `events`
/// (repeatable; configured names, `*` wildcards), `prefix`, `suffix`, and `ping` (seconds
/// between keep-alive lines, default 10).
pub async fn listen(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let mut events = Vec::new();
    for (k, v) in &req.query {
        if k != "events" {
            continue;
        }
        for e in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if !config::listenable(e) {
                // AWS's words, which MinIO's listeners know; the event named beside them.
                return Err(S3Error::invalid_argument(config::UNSUPPORTED_EVENT)
                    .with_extra("ArgumentName1", e.to_owned()));
            }
            events.push(e.to_owned());
        }
    }
    let ping = match req.q("ping") {
        None => 10,
        Some(p) => p
            .parse::<u64>()
            .ok()
            .filter(|p| (1..=3600).contains(p))
            .ok_or_else(|| S3Error::invalid_argument("ping is a number of seconds, 1 to 3600"))?,
    };
    let prefix = req.q("prefix").unwrap_or_default().to_owned();
    let suffix = req.q("suffix").unwrap_or_default().to_owned();
    let signed_with = signed_with(st, &req.auth).await?;
    let lines = st
        .notify
        .listen(
            req.bucket(),
            bucket.incarnation(),
            events,
            prefix,
            suffix,
            std::time::Duration::from_secs(ping),
        )
        .await
        .map_err(|e| match e {
            Refused::NoChangeStreams => S3Error::not_implemented().with_message(
                "ListenBucketNotification needs change streams, which this database does not offer",
            ),
            Refused::TooMany(n) => S3Error::slow_down().with_message(format!(
                "this instance serves {n} listeners already; try again later or another instance"
            )),
            Refused::Db(e) => e.into(),
        })?;
    let guard = Guard {
        st: st.clone(),
        until: presigned_until(st, &req.parts.headers, &req.query),
        every: std::time::Duration::from_secs(ping.min(10)),
        incarnation: bucket.incarnation(),
        signed_with,
        asked: Asked {
            shape: crate::s3::request::access::shape_of(&req.parts.headers, &req.query),
            transport: crate::tls::Transport::of(&req.parts.extensions),
            bucket: req.bucket().to_owned(),
            source_ip: req.source_ip,
            headers: req.parts.headers,
            query: req.query,
            auth: req.auth,
        },
    };
    let mut r = Response::new(axum::body::Body::from_stream(guard.wrap(lines)));
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(r)
}

/// A digest of the secret the caller's key has now (`None` when anonymous): the stream ends
/// when the key's secret is replaced, as a rotated credential signs nothing new.
async fn signed_with(st: &AppState, auth: &crate::auth::Auth) -> S3Result<Option<[u8; 32]>> {
    use sha2::Digest;
    if auth.is_anonymous() {
        return Ok(None);
    }
    Ok(st
        .creds
        .secret_of(&auth.access_key)
        .await?
        .map(|k| sha2::Sha256::digest(k.secret.as_bytes()).into()))
}

/// How long one check of a stream's authorization may take. A periodic check that takes
/// longer is skipped (a slow database does not end every listener); a record waits for its
/// check, and is not sent when the check does not answer within this time.
const CHECK_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// What a listener's request was authorized as at connect: what the authorization decision
/// is made of again while its stream lasts.
struct Asked {
    auth: crate::auth::Auth,
    bucket: String,
    headers: axum::http::HeaderMap,
    query: Vec<(String, String)>,
    source_ip: Option<std::net::IpAddr>,
    transport: crate::tls::Transport,
    shape: crate::s3::actions::Shape,
}

/// What keeps a listener's stream open after it was authorized: the stream lasts only while
/// its caller could still start it. It ends when its presigned URL expires, and when a check
/// ([`Guard::allowed`]) finds its key disabled, deleted or given another secret, its bucket
/// deleted (or deleted and created again: another incarnation), or the authorization decision
/// now a deny (a role revoked, a policy changed). The check runs at every keep-alive (at most every 10 s) to end
/// an idle stream, and before every record, so that no record goes out once the caller could
/// no longer start the stream: on the instance that made the change at once, on the others
/// within the bucket cache's second (`storage::meta::BUCKET_CACHE_TTL`) and the credentials
/// cache's (`auth::credentials`).
struct Guard {
    st: AppState,
    asked: Asked,
    /// The bucket's incarnation the stream was authorized on.
    incarnation: String,
    /// The caller's secret at connect, as [`signed_with`] gives it.
    signed_with: Option<[u8; 32]>,
    until: Option<tokio::time::Instant>,
    every: std::time::Duration,
}

impl Guard {
    /// Whether the caller could start this stream now: its key still signs (as root or not,
    /// as it is now), the bucket is the incarnation it was authorized on, and the decision
    /// `s3::dispatch` made at connect (`authz::authorize`, the one decision of every request),
    /// made again on the facts of now, still allows ListenBucketNotification. `Err` when the
    /// database could not say.
    async fn allowed(&self) -> S3Result<bool> {
        if self.until.is_some_and(|t| t <= tokio::time::Instant::now()) {
            return Ok(false);
        }
        let a = &self.asked;
        let mut auth = a.auth.clone();
        if !auth.is_anonymous() {
            match self.st.creds.secret_of(&auth.access_key).await? {
                Some(key) => auth.root = key.root,
                None => return Ok(false),
            }
            if signed_with(&self.st, &auth).await? != self.signed_with {
                return Ok(false);
            }
        }
        // Read fresh, not from the 1 s bucket cache: a record stamped by a writer whose cache
        // still held the old incarnation (the bucket deleted and made again through another
        // instance) would otherwise pass a check made on the same stale cache.
        match self.st.store.meta().get_bucket(&a.bucket).await? {
            Some(b) if b.incarnation() == self.incarnation => {}
            _ => return Ok(false),
        }
        let now = self.st.store.meta().clock().now().to_chrono();
        let facts = authz::facts(&a.headers, &a.query, &auth, a.source_ip, a.transport, now);
        let target = authz::Target {
            bucket: &a.bucket,
            key: None,
            facts: &facts,
            shape: a.shape,
        };
        match authz::authorize(
            &self.st,
            &Op::ListenBucketNotification,
            &auth,
            &target,
            None,
        )
        .await
        {
            Ok(_) => Ok(true),
            // The decision refuses with these; anything else is the database's failure.
            Err(e) if matches!(e.code, "AccessDenied" | "MethodNotAllowed") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`Guard::allowed`] within [`CHECK_LIMIT`]; `None` when it could not say.
    async fn check(&self) -> Option<bool> {
        match tokio::time::timeout(CHECK_LIMIT, self.allowed()).await {
            Ok(Ok(allowed)) => Some(allowed),
            Ok(Err(e)) => {
                tracing::debug!(bucket = %self.asked.bucket, error = %e.message, "could not check a listener's authorization");
                None
            }
            Err(_) => None,
        }
    }

    fn wrap<S>(
        self,
        lines: S,
    ) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static
    where
        S: futures::Stream<Item = std::io::Result<bytes::Bytes>> + Send + 'static,
    {
        use futures::StreamExt;
        let check = tokio::time::interval_at(tokio::time::Instant::now() + self.every, self.every);
        futures::stream::unfold(
            (Box::pin(lines), check, self),
            |(mut lines, mut check, guard)| async move {
                loop {
                    let expiry = async {
                        match guard.until {
                            Some(t) => tokio::time::sleep_until(t).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        line = lines.next() => match line {
                            // A record goes out only if its caller could start the stream
                            // now; one whose check does not answer is not sent either, and
                            // the stream ends (its client reconnects, and is authorized
                            // anew).
                            Some(Ok(l)) if &l[..] != b"\n" => {
                                if guard.check().await != Some(true) {
                                    return None;
                                }
                                return Some((Ok(l), (lines, check, guard)));
                            }
                            other => return other.map(|l| (l, (lines, check, guard))),
                        },
                        _ = expiry => return None,
                        _ = check.tick() => {
                            // Only a refusal ends an idle stream: a database slow to answer
                            // (bounded) does not end every listener, whose records are each
                            // checked anyway.
                            if guard.check().await == Some(false) {
                                return None;
                            }
                        }
                    }
                }
            },
        )
    }
}

/// When a presigned request's signature stops being valid, measured on the database's clock;
/// `None` when the request is not presigned. Only the parameters its signature covers count:
/// SigV4's `X-Amz-Date` and `X-Amz-Expires` when it carries `X-Amz-Signature`, SigV2's
/// `Expires` when it carries `Signature` (a SigV2 signature does not cover `X-Amz-*`
/// parameters, which anyone could add). A header-signed request has no expiry here.
fn presigned_until(
    st: &AppState,
    headers: &axum::http::HeaderMap,
    query: &[(String, String)],
) -> Option<tokio::time::Instant> {
    if headers.contains_key(axum::http::header::AUTHORIZATION) {
        return None;
    }
    let q = |n: &str| query.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let end = if q("X-Amz-Signature").is_some() {
        let at = chrono::NaiveDateTime::parse_from_str(q("X-Amz-Date")?, "%Y%m%dT%H%M%SZ").ok()?;
        at.and_utc()
            .timestamp()
            .checked_add(q("X-Amz-Expires")?.parse::<i64>().ok()?)?
    } else if q("Signature").is_some() {
        q("Expires")?.parse::<i64>().ok()?
    } else {
        return None;
    };
    let now = st.store.meta().clock().now().timestamp_millis() / 1000;
    // At most a week (SigV4's longest), whatever a SigV2 `Expires` says.
    let left = u64::try_from(end.saturating_sub(now))
        .unwrap_or(0)
        .min(7 * 86_400);
    Some(tokio::time::Instant::now() + std::time::Duration::from_secs(left))
}

/// GetBucketNotificationConfiguration: the configuration, or an empty one.
pub async fn get(st: &AppState, req: S3Request) -> S3Result<Response> {
    let b = require_bucket(st, req.bucket()).await?;
    let conf = b
        .notification
        .as_deref()
        .and_then(|x| config::parse(x.as_bytes()).ok())
        .unwrap_or_default();
    Ok(xml_response(StatusCode::OK, config::render(&conf)))
}
