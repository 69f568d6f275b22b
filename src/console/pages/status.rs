//! Server status, for the root key: the instances (each reports itself to the database once
//! a minute, `janitor::status`), the database, the background jobs' leads, and the last hour
//! of requests, errors, bytes and latency summed over every instance, as small charts drawn
//! on the server (inline SVG: no script, no chart library).

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::Response;
use mongodb::bson::doc;

use super::{html, reason, signed_get};
use crate::console::views::{Chart, InstanceRow, LeadRow, Status};
use crate::error::S3Error;
use crate::state::AppState;
use crate::storage::meta::Sample;

/// An instance silent for longer than this is shown as silent (it reports every minute).
const SILENT_MS: i64 = 3 * 60_000;

/// Chart size, in SVG units.
const W: f64 = 300.0;
const H: f64 = 60.0;

/// One value per minute of the last hour (oldest first), from every instance's samples.
pub fn per_minute(now_ms: i64, samples: &[Sample], value: impl Fn(&Sample) -> f64) -> Vec<f64> {
    let mut out = vec![0.0; 60];
    for s in samples {
        let age = (now_ms - s.at.timestamp_millis()).max(0) / 60_000;
        if age < 60 {
            out[59 - age as usize] += value(s);
        }
    }
    out
}

/// A chart of `values` (a polyline's points), scaled to its largest value.
pub fn chart(title: &str, unit: &str, values: &[f64]) -> Chart {
    let max = values.iter().copied().fold(0.0_f64, f64::max);
    let step = W / (values.len().max(2) - 1) as f64;
    let points = values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let y = if max > 0.0 { H - v / max * H } else { H };
            format!("{:.1},{:.1}", i as f64 * step, y)
        })
        .collect::<Vec<_>>()
        .join(" ");
    Chart {
        title: title.to_owned(),
        last: format!("{:.1} {unit}", values.last().copied().unwrap_or(0.0)),
        max: format!("{max:.1} {unit}"),
        points,
    }
}

/// GET /status (root only).
pub async fn status(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, _) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    if !ctx.signed.root {
        let e = S3Error::access_denied().with_message("Only the root key sees the server status");
        return ctx.message(StatusCode::FORBIDDEN, "Refused", Some(e), "/");
    }
    let meta = st.store.meta();
    let now = meta.clock().now();
    let now_ms = now.timestamp_millis();
    let bound = std::time::Duration::from_secs(2);
    let (instances, error) = match tokio::time::timeout(bound, meta.instances_seen()).await {
        Ok(Ok(i)) => (i, None),
        Ok(Err(e)) => (Vec::new(), Some(reason(&S3Error::from(e)))),
        Err(_) => (
            Vec::new(),
            Some("The instances could not be read within 2 s".to_owned()),
        ),
    };
    let samples: Vec<Sample> = instances.iter().flat_map(|i| i.samples.clone()).collect();
    let requests = per_minute(now_ms, &samples, |s| s.requests as f64);
    let errors = per_minute(now_ms, &samples, |s| s.errors as f64);
    let refused = per_minute(now_ms, &samples, |s| s.refused as f64);
    let mb_in = per_minute(now_ms, &samples, |s| s.bytes_in as f64 / 1e6);
    let mb_out = per_minute(now_ms, &samples, |s| s.bytes_out as f64 / 1e6);
    let micros = per_minute(now_ms, &samples, |s| s.micros as f64);
    let latency: Vec<f64> = micros
        .iter()
        .zip(&requests)
        .map(|(m, r)| if *r > 0.0 { m / r / 1000.0 } else { 0.0 })
        .collect();
    let charts = vec![
        chart("Requests a minute", "", &requests),
        chart("Server errors (5xx) a minute", "", &errors),
        chart("Refusals (4xx) a minute", "", &refused),
        chart("Received a minute", "MB", &mb_in),
        chart("Sent a minute", "MB", &mb_out),
        chart("Mean latency", "ms", &latency),
    ];
    let rows = instances
        .iter()
        .map(|i| InstanceRow {
            id: i.id.clone(),
            this: i.id == meta.process_id(),
            listen: i.listen.clone(),
            version: i.version.clone(),
            started: crate::s3::request::headers::iso8601(i.started),
            seen_secs: (now_ms - i.seen.timestamp_millis()).max(0) / 1000,
            live: now_ms - i.seen.timestamp_millis() <= SILENT_MS,
        })
        .collect();
    let leads = tokio::time::timeout(bound, meta.leads())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default()
        .into_iter()
        .map(|l| LeadRow {
            held: l.expires.is_some_and(|e| e.timestamp_millis() > now_ms),
            job: l.job,
            holder: l.holder,
            fence: l.fence,
        })
        .collect();
    // Best effort: a database that does not answer these is said so, not fatal.
    let db = st.store.db();
    let ask = |cmd: &'static str| {
        let db = db.clone();
        async move {
            tokio::time::timeout(
                std::time::Duration::from_secs(2),
                db.run_command(doc! {cmd: 1}),
            )
            .await
            .map_err(|_| "no answer within 2 s".to_owned())
            .and_then(|r| r.map_err(|e| reason(&S3Error::from(e))))
        }
    };
    let version = match ask("buildInfo").await {
        Ok(d) => d.get_str("version").unwrap_or("?").to_owned(),
        Err(e) => format!("unknown ({e})"),
    };
    let stats = match ask("dbStats").await {
        Ok(d) => {
            let n = |k: &str| {
                d.get(k)
                    .and_then(crate::storage::gridfs::as_i64)
                    .unwrap_or(0)
            };
            format!(
                "{} collections, {} documents, {:.1} MB of data, {:.1} MB stored",
                n("collections"),
                n("objects"),
                n("dataSize") as f64 / 1e6,
                n("storageSize") as f64 / 1e6
            )
        }
        Err(e) => format!("not available ({e})"),
    };
    html(Status {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: true,
        error,
        instances: rows,
        leads,
        charts,
        database: st.config.database.clone(),
        db_version: version,
        db_stats: stats,
        now: crate::s3::request::headers::iso8601(now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::DateTime;

    fn sample(at_ms: i64, requests: i64) -> Sample {
        Sample {
            at: DateTime::from_millis(at_ms),
            requests,
            errors: 0,
            refused: 0,
            bytes_in: 0,
            bytes_out: 0,
            micros: 0,
        }
    }

    #[test]
    fn minutes_are_summed_over_instances_and_charted() {
        let now = 10_000_000;
        let s = [
            sample(now - 1_000, 5),
            sample(now - 2_000, 7),
            sample(now - 61_000, 3),
            sample(now - 3_600_000, 100),
        ];
        let v = per_minute(now, &s, |s| s.requests as f64);
        assert_eq!(v.len(), 60);
        assert_eq!(v[59], 12.0, "this minute, both instances");
        assert_eq!(v[58], 3.0);
        assert_eq!(v.iter().sum::<f64>(), 15.0, "an hour ago is out");
        let c = chart("r", "", &v);
        assert!(c.points.starts_with("0.0,60.0 "));
        assert!(c.points.ends_with(" 300.0,0.0"), "{}", c.points);
        assert_eq!(c.max, "12.0 ");
    }
}
