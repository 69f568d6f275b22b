//! PutBucketNotificationConfiguration and GetBucketNotificationConfiguration: which events of
//! a bucket go to which targets (the events themselves are made and delivered by
//! `crate::notify`).
//!
//! A destination is checked as AWS checks it: an ARN that names no configured target is
//! refused with `400 InvalidArgument` "Unable to validate the following destination
//! configurations", naming it, unless the request says `x-amz-skip-destination-validation:
//! true` (then it is stored, and its events wait in the outbox until the target exists or
//! they age out). Each target the configuration names is sent an `s3:TestEvent`.

use axum::http::StatusCode;
use axum::response::Response;

use crate::error::{S3Error, S3Result};
use crate::notify::listen::Refused;
use crate::notify::{config, targets};
use crate::s3::lookup::require_bucket;
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
    require_bucket(st, req.bucket()).await?;
    let mut events = Vec::new();
    for (k, v) in &req.query {
        if k != "events" {
            continue;
        }
        for e in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if !config::listenable(e) {
                return Err(S3Error::invalid_argument(format!(
                    "{e} is not an event type grids3 produces"
                )));
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
    let lines = st
        .notify
        .listen(
            req.bucket(),
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
    let mut r = Response::new(axum::body::Body::from_stream(lines));
    r.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(r)
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
