//! Prometheus metrics through the `metrics` facade and its Prometheus exporter (rendered on
//! `/_grids3/metrics`; no exposition writer of our own).

use std::sync::OnceLock;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

/// Latency buckets in seconds.
const LATENCY_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The process-wide recorder's handle, installed on first use (one per process, however many
/// gateways the process runs, as in the tests).
pub fn handle() -> &'static PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE.get_or_init(|| {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS)
            .expect("valid buckets")
            .build_recorder();
        let handle = recorder.handle();
        // Another recorder may already be installed by an embedding program; then ours only
        // renders what it recorded (nothing), which is visible rather than silent corruption.
        let _ = metrics::set_global_recorder(recorder);
        handle
    })
}

/// This process's running totals of S3 requests, for the status samples each instance
/// writes to the database (`storage::meta::instances`): the Prometheus handle only renders.
static TOTALS: [std::sync::atomic::AtomicU64; 6] =
    [const { std::sync::atomic::AtomicU64::new(0) }; 6];

/// Running totals since the process started.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub requests: u64,
    /// Answers with a 5xx status.
    pub errors: u64,
    /// Answers with a 4xx status.
    pub refused: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// The requests' time, summed, in microseconds.
    pub micros: u64,
}

/// This process's totals now.
pub fn totals() -> Totals {
    use std::sync::atomic::Ordering::Relaxed;
    Totals {
        requests: TOTALS[0].load(Relaxed),
        errors: TOTALS[1].load(Relaxed),
        refused: TOTALS[2].load(Relaxed),
        bytes_in: TOTALS[3].load(Relaxed),
        bytes_out: TOTALS[4].load(Relaxed),
        micros: TOTALS[5].load(Relaxed),
    }
}

/// Records one finished S3 request.
pub fn request(op: &str, status: u16, seconds: f64, bytes_in: u64, bytes_out: u64) {
    use std::sync::atomic::Ordering::Relaxed;
    TOTALS[0].fetch_add(1, Relaxed);
    match status {
        500.. => TOTALS[1].fetch_add(1, Relaxed),
        400..=499 => TOTALS[2].fetch_add(1, Relaxed),
        _ => 0,
    };
    TOTALS[3].fetch_add(bytes_in, Relaxed);
    TOTALS[4].fetch_add(bytes_out, Relaxed);
    TOTALS[5].fetch_add((seconds * 1e6) as u64, Relaxed);
    let labels = [("op", op.to_owned()), ("status", status.to_string())];
    metrics::counter!("grids3_requests_total", &labels).increment(1);
    metrics::histogram!("grids3_request_duration_seconds", "op" => op.to_owned()).record(seconds);
    metrics::counter!("grids3_bytes_received_total", "op" => op.to_owned()).increment(bytes_in);
    metrics::counter!("grids3_bytes_sent_total", "op" => op.to_owned()).increment(bytes_out);
}

/// Requests being served now.
pub fn in_flight(delta: f64) {
    metrics::gauge!("grids3_requests_in_flight").increment(delta);
}

/// A request body cut for sending under the minimum rate.
pub fn slow_body_cut() {
    metrics::counter!("grids3_slow_bodies_cut_total").increment(1);
}

/// A connection closed to make room (`idle`: it sent no request head for the longest;
/// `per_client`: its address held more than its share).
pub fn connection_shed(reason: &'static str) {
    metrics::counter!("grids3_connections_shed_total", "reason" => reason).increment(1);
}

/// A connection closed at once because its address's connections were all busy.
pub fn connection_refused(reason: &'static str) {
    metrics::counter!("grids3_connections_refused_total", "reason" => reason).increment(1);
}

/// CompleteMultipartUpload tasks running (+1 / -1).
pub fn completions_running(delta: f64) {
    metrics::gauge!("grids3_completions_running").increment(delta);
}

/// A CompleteMultipartUpload answered 503 for want of a completion slot.
pub fn completion_refused() {
    metrics::counter!("grids3_completions_refused_total").increment(1);
}

/// A TLS certificate reload (`ok`, or `error` when the files did not load and the previous
/// certificate stays in service).
pub fn tls_reload(result: &'static str) {
    metrics::counter!("grids3_tls_reloads_total", "result" => result).increment(1);
}

/// A TLS handshake that failed or did not finish within the header timeout.
pub fn tls_handshake_failed() {
    metrics::counter!("grids3_tls_handshakes_failed_total").increment(1);
}

/// Bytes of chunks downloads hold read ahead under the download budget (+ / -).
pub fn download_buffered(delta: f64) {
    metrics::gauge!("grids3_download_buffered_bytes").increment(delta);
}

/// A download that wanted to read ahead and found the download budget exhausted (it then
/// reads one chunk at a time).
pub fn download_budget_exhausted() {
    metrics::counter!("grids3_download_budget_exhausted_total").increment(1);
}

/// Open client connections (+1 / -1).
pub fn connections(delta: f64) {
    metrics::gauge!("grids3_connections_open").increment(delta);
}

/// A server access log record dropped because its instance could not stage it (the database
/// away for long; see `access_log`).
pub fn access_log_dropped() {
    metrics::counter!("grids3_access_log_records_dropped_total").increment(1);
}

/// Events queued in the notification outbox by one insert, in `documents` documents (a
/// target's events of one insert are one group: events per document is how well concurrent
/// requests share).
pub fn notify_outbox_insert(events: usize, documents: usize) {
    metrics::counter!("grids3_notify_queued_events_total").increment(events as u64);
    metrics::counter!("grids3_notify_queued_documents_total").increment(documents as u64);
}

/// Event notifications a target took.
pub fn notify_delivered(target: &str, events: u64) {
    metrics::counter!("grids3_notify_delivered_total", "target" => target.to_owned())
        .increment(events);
}

/// A failed attempt at a target (the events stay queued and are retried).
pub fn notify_failed(target: &str) {
    metrics::counter!("grids3_notify_failed_total", "target" => target.to_owned()).increment(1);
}

/// Event notifications moved to the dead letters (too old, queue full).
pub fn notify_dead(target: &str, events: u64) {
    metrics::counter!("grids3_notify_dead_lettered_total", "target" => target.to_owned())
        .increment(events);
}

/// Events waiting for a target, as last counted.
pub fn notify_queued(target: &str, events: f64) {
    metrics::gauge!("grids3_notify_queue_events", "target" => target.to_owned()).set(events);
}

/// The age of a target's oldest undelivered event, in seconds (0: none waits).
pub fn notify_oldest(target: &str, seconds: f64) {
    metrics::gauge!("grids3_notify_oldest_undelivered_seconds", "target" => target.to_owned())
        .set(seconds);
}

/// A metered bucket's or account's usage as its counters say (issue 62).
#[derive(Clone, Debug, PartialEq)]
pub struct QuotaSample {
    /// `bucket` or `account`.
    pub scope: &'static str,
    pub name: String,
    /// Bytes counted against the limit (published, parts, held by writes in flight).
    pub used: i64,
    /// Published bytes.
    pub stored: i64,
    /// Parts' bytes.
    pub parts: i64,
    pub objects: i64,
    /// The limits (absent: none, and no series).
    pub limits: (Option<i64>, Option<i64>),
}

/// The quota gauges by database, each replaced whole by a janitor pass over it (see
/// [`set_quota_usage`]; one database per gateway, several in a test process).
type QuotaSamples = std::collections::BTreeMap<String, Vec<QuotaSample>>;
static QUOTA: std::sync::Mutex<QuotaSamples> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// Replaces database `db`'s quota gauges with `samples`, refreshed by the janitor. They are rendered from
/// this list rather than recorded as gauges, because a recorded series lives until the
/// process ends: a deleted bucket's usage, or a cleared limit, would go on being exported
/// (and an alert on used > limit would fire on a limit that is gone).
pub fn set_quota_usage(db: &str, samples: Vec<QuotaSample>) {
    QUOTA
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(db.to_owned(), samples);
}

/// The quota gauges in Prometheus's text format.
fn render_quota() -> String {
    use std::fmt::Write;
    let all: Vec<QuotaSample> = QUOTA
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .flatten()
        .cloned()
        .collect();
    let mut out = String::new();
    type Family = (&'static str, fn(&QuotaSample) -> Option<i64>);
    let families: [Family; 6] = [
        ("grids3_quota_used_bytes", |q| Some(q.used)),
        ("grids3_quota_stored_bytes", |q| Some(q.stored)),
        ("grids3_quota_part_bytes", |q| Some(q.parts)),
        ("grids3_quota_objects", |q| Some(q.objects)),
        ("grids3_quota_limit_bytes", |q| q.limits.0),
        ("grids3_quota_limit_objects", |q| q.limits.1),
    ];
    for (family, value) in families {
        let lines: Vec<String> = all
            .iter()
            .filter_map(|q| {
                value(q)
                    .map(|v| format!("{family}{{{}=\"{}\"}} {v}", q.scope, escape_label(&q.name)))
            })
            .collect();
        if lines.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# TYPE {family} gauge");
        for l in lines {
            let _ = writeln!(out, "{l}");
        }
        out.push('\n');
    }
    out
}

/// A label value as Prometheus's text format escapes it.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Everything this process exports, in Prometheus's text format.
pub fn render() -> String {
    let mut out = handle().render();
    out.push_str(&render_quota());
    out
}

/// One background task run (`janitor`, `multipart_sweep`) and its outcome (`ok`, `error`).
pub fn background_run(task: &'static str, outcome: &'static str, seconds: f64) {
    metrics::counter!("grids3_background_runs_total", "task" => task, "outcome" => outcome)
        .increment(1);
    metrics::histogram!("grids3_background_duration_seconds", "task" => task).record(seconds);
}

/// A MongoDB client (without command monitoring, as the gateway runs by default: see
/// [`mongodb_client_with_timeout`]).
pub async fn mongodb_client(uri: &str) -> mongodb::error::Result<mongodb::Client> {
    mongodb_client_with_timeout(uri, std::time::Duration::from_secs(3), false).await
}

/// A MongoDB client that gives up on an unreachable server after `timeout` (server selection
/// and connection), so that an outage turns into a prompt 503 instead of the driver's 30 s
/// wait. Values set in the URI (`serverSelectionTimeoutMS`, `connectTimeoutMS`) win. Its
/// commands are measured when `commands` (see `Config::mongodb_command_metrics` for what
/// that costs).
pub async fn mongodb_client_with_timeout(
    uri: &str,
    timeout: std::time::Duration,
    commands: bool,
) -> mongodb::error::Result<mongodb::Client> {
    use mongodb::event::command::CommandEvent;
    use mongodb::event::EventHandler;
    handle();
    let mut opts = mongodb::options::ClientOptions::parse(uri).await?;
    opts.server_selection_timeout.get_or_insert(timeout);
    opts.connect_timeout.get_or_insert(timeout);
    if !commands {
        return mongodb::Client::with_options(opts);
    }
    opts.command_event_handler = Some(EventHandler::callback(|ev: CommandEvent| match ev {
        CommandEvent::Succeeded(e) => {
            metrics::histogram!("grids3_mongodb_command_duration_seconds", "command" => e.command_name)
                .record(e.duration.as_secs_f64());
        }
        CommandEvent::Failed(e) => {
            metrics::histogram!("grids3_mongodb_command_duration_seconds", "command" => e.command_name.clone())
                .record(e.duration.as_secs_f64());
            metrics::counter!("grids3_mongodb_command_errors_total", "command" => e.command_name)
                .increment(1);
        }
        _ => {}
    }));
    mongodb::Client::with_options(opts)
}
