//! The Prometheus series of one app instance: every name and label is written here once, the
//! call sites use one short method each, and `GET /metrics` renders them in the text format.
//!
//! The recorder belongs to the instance (no process-global one), so tests may run many servers in
//! one process. Without a metrics token the handle is disabled and every method does nothing, so a
//! histogram nobody scrapes never grows. No label ever holds a token, an address, a file name, a
//! share id or a concrete path: routes are the router's patterns, states and results fixed words.

use std::{sync::Arc, time::Duration};

use ::metrics::{Key, KeyName, Label, Metadata, Recorder};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};

/// The content type of the text exposition format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

const HTTP_REQUESTS: &str = "watasu_http_requests_total";
const HTTP_DURATION: &str = "watasu_http_request_duration_seconds";
const SHARES: &str = "watasu_shares";
const STORED_BYTES: &str = "watasu_stored_bytes";
const DELETION_CASES: &str = "watasu_deletion_cases";
const OUTBOX_WAITING: &str = "watasu_mail_outbox_waiting";
const MAIL_DELIVERIES: &str = "watasu_mail_deliveries_total";
const GC_PASSES: &str = "watasu_gc_passes_total";
const GC_DURATION: &str = "watasu_gc_pass_duration_seconds";
const GC_PURGED: &str = "watasu_gc_files_purged_total";
const GC_PURGE_FAILURES: &str = "watasu_gc_purge_failures_total";
const GC_BACKLOG: &str = "watasu_gc_backlog";
const LEFTOVER_SWEEPS: &str = "watasu_leftover_sweeps_total";
const LEFTOVERS_REMOVED: &str = "watasu_leftovers_removed_total";
const LEFTOVER_FAILURES: &str = "watasu_leftover_removal_failures_total";
const SWEPT_ROWS: &str = "watasu_maintenance_rows_total";
const CODE_MAILS: &str = "watasu_code_mails_total";
const DATABASE_FULL: &str = "watasu_database_full_total";
const SCAN_BACKLOG: &str = "watasu_scan_backlog";
const SCAN_RESULTS: &str = "watasu_scan_results_total";
const DAMAGED_FILES: &str = "watasu_damaged_file_reads_total";
const WEBHOOK_DELIVERIES: &str = "watasu_webhook_deliveries_total";
const BODIES_CUT: &str = "watasu_request_bodies_cut_total";

/// Every series with its help text, described once when the recorder is made.
const HELP: [(&str, &str); 23] = [
    (HTTP_REQUESTS, "HTTP requests answered, by route pattern, method and status."),
    (HTTP_DURATION, "Time to produce the response head, by route pattern and method."),
    (SHARES, "Shares in the database by state, read at scrape time."),
    (STORED_BYTES, "Bytes of the files of shares not purged yet (still in the store), read at scrape time."),
    (DELETION_CASES, "Deletion cases by state, read at scrape time."),
    (OUTBOX_WAITING, "Mails in the outbox not delivered nor given up yet (pending or sending), read at scrape time."),
    (
        MAIL_DELIVERIES,
        "Outbox delivery attempts by result: sent, retrying (failed, tried again later), dead, or dropped (its share had ended).",
    ),
    (GC_PASSES, "Garbage collector passes by result (ok, or error when the database failed)."),
    (GC_DURATION, "Duration of garbage collector passes."),
    (GC_PURGED, "Files of shares the garbage collector deleted."),
    (GC_PURGE_FAILURES, "File deletes of the garbage collector that failed (backed off and retried)."),
    (GC_BACKLOG, "Shares whose file the garbage collector may delete now, read at scrape time."),
    (LEFTOVER_SWEEPS, "Leftover sweeps of the file store by result (ok, or error when it stopped early)."),
    (LEFTOVERS_REMOVED, "Leftovers the sweep removed, by kind."),
    (LEFTOVER_FAILURES, "Leftover removals that failed."),
    (SWEPT_ROWS, "Rows the expiry sweeps handled, by sweep and outcome."),
    (
        CODE_MAILS,
        "One-time code mails by result: sent, failed (refused or not done within WATASU_SMTP_TIMEOUT, after the quick retries), or held_back (too many for the share).",
    ),
    (DATABASE_FULL, "Requests refused because the database's disk was full (answered 507, nothing changed)."),
    (SCAN_BACKLOG, "Files held for the virus scan, waiting for clamd's verdict, read at scrape time."),
    (
        SCAN_RESULTS,
        "Virus scans of files by result: clean, infected, too_large (released unscanned), refused (too large, or clamd never answered), unanswered (held, tried again), gone.",
    ),
    (
        DAMAGED_FILES,
        "Reads of an encrypted file whose stored bytes did not authenticate, by when: before_first_byte (a page said so) or mid_stream (the connection was cut).",
    ),
    (
        WEBHOOK_DELIVERIES,
        "Webhook delivery attempts by result: delivered (2xx), retrying (failed, tried again later), dead (given up), or dropped (endpoint disabled, or its sender disabled or being deleted).",
    ),
    (
        BODIES_CUT,
        "Request bodies cut (the connection closed) by reason: stalled (nothing for WATASU_BODY_TIMEOUT), small_body_slow (a form not whole within WATASU_SMALL_BODY_TIMEOUT), below_rate (a window behind WATASU_MIN_BODY_RATE).",
    ),
];

const HTTP_BUCKETS: &[f64] = &[0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
const GC_BUCKETS: &[f64] = &[0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0];

/// The methods a route label may name; any other method is counted as `other`.
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// What a scrape reads from the database; set as gauges just before rendering.
#[derive(Clone, Debug, Default)]
pub struct Readings {
    /// Every share state with its count (zero included, so a state that empties reads 0).
    pub shares: Vec<(&'static str, i64)>,
    pub stored_bytes: i64,
    /// Every deletion case state with its count.
    pub deletion_cases: Vec<(&'static str, i64)>,
    pub outbox_waiting: i64,
    /// Shares the garbage collector could collect now.
    pub gc_backlog: i64,
    /// Files held for the virus scan.
    pub scan_backlog: i64,
}

/// One instance's series; cheap to clone. Disabled: every method does nothing.
#[derive(Clone, Debug, Default)]
pub struct Metrics(Option<Arc<Exporter>>);

#[derive(Debug)]
struct Exporter {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
}

impl Metrics {
    /// A recorder of this instance's own, with the buckets of the histograms set.
    pub fn enabled() -> Self {
        let builder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.to_owned()), HTTP_BUCKETS)
            .and_then(|b| b.set_buckets_for_metric(Matcher::Full(GC_DURATION.to_owned()), GC_BUCKETS))
            .expect("the buckets are not empty");
        let recorder = builder.build_recorder();
        for (name, help) in HELP {
            // The exporter keeps one description per name, whatever the kind.
            recorder.describe_counter(KeyName::from_const_str(name), None, help.into());
        }
        let handle = recorder.handle();
        Self(Some(Arc::new(Exporter { recorder, handle })))
    }

    /// Records nothing (no metrics token configured, or a command-line run).
    pub fn disabled() -> Self {
        Self(None)
    }

    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    /// One answered request. `route` is the router's pattern (`None`: no route matched).
    pub fn http_request(&self, route: Option<&str>, method: &str, status: u16, took: Duration) {
        let Some(exporter) = &self.0 else { return };
        let route = route.unwrap_or("other").to_owned();
        let method = METHODS.into_iter().find(|m| *m == method).unwrap_or("other");
        let labels = [("route", route.clone()), ("method", method.to_owned()), ("status", status.to_string())];
        exporter.counter(HTTP_REQUESTS, &labels).increment(1);
        exporter.histogram(HTTP_DURATION, &[("route", route), ("method", method.to_owned())]).record(took);
    }

    /// One garbage collector pass: its duration, and what it purged and failed to delete
    /// (`None`: the pass failed on the database).
    pub fn gc_pass(&self, took: Duration, purged_and_failed: Option<(u32, u32)>) {
        let Some(exporter) = &self.0 else { return };
        exporter.histogram(GC_DURATION, &[]).record(took);
        exporter.counter(GC_PASSES, &[result(purged_and_failed.is_some())]).increment(1);
        if let Some((purged, failed)) = purged_and_failed {
            exporter.counter(GC_PURGED, &[]).increment(u64::from(purged));
            exporter.counter(GC_PURGE_FAILURES, &[]).increment(u64::from(failed));
        }
    }

    /// One outbox delivery attempt: `sent`, `retrying`, `dead` or `dropped`.
    pub fn mail_delivery(&self, result: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(MAIL_DELIVERIES, &[("result", result.to_owned())]).increment(1);
    }

    /// One webhook delivery attempt: `delivered`, `retrying`, `dead` or `dropped`.
    pub fn webhook_delivery(&self, result: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(WEBHOOK_DELIVERIES, &[("result", result.to_owned())]).increment(1);
    }

    /// One code mail's end: `sent`, `failed` or `held_back`.
    pub fn code_mail(&self, result: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(CODE_MAILS, &[("result", result.to_owned())]).increment(1);
    }

    /// One virus scan of a file, by its result (`services::scanning::ScanResult::label`).
    pub fn file_scan(&self, result: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(SCAN_RESULTS, &[("result", result.to_owned())]).increment(1);
    }

    /// One read of an encrypted file that found its stored bytes damaged: `before_first_byte` or
    /// `mid_stream`.
    pub fn damaged_file(&self, when: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(DAMAGED_FILES, &[("when", when.to_owned())]).increment(1);
    }

    /// One request body cut by the server's transport rules: `stalled`, `small_body_slow` or
    /// `below_rate`.
    pub fn request_body_cut(&self, reason: &'static str) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(BODIES_CUT, &[("reason", reason.to_owned())]).increment(1);
    }

    /// One request refused because the database's disk was full.
    pub fn database_full(&self) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(DATABASE_FULL, &[]).increment(1);
    }

    /// One leftover sweep: what it removed per kind, and its failed removals (`None`: the sweep
    /// stopped early).
    pub fn leftover_sweep(&self, removed_and_failed: Option<([(&'static str, u32); 3], u32)>) {
        let Some(exporter) = &self.0 else { return };
        exporter.counter(LEFTOVER_SWEEPS, &[result(removed_and_failed.is_some())]).increment(1);
        let Some((removed, failed)) = removed_and_failed else { return };
        for (kind, count) in removed {
            exporter.counter(LEFTOVERS_REMOVED, &[("kind", kind.to_owned())]).increment(u64::from(count));
        }
        exporter.counter(LEFTOVER_FAILURES, &[]).increment(u64::from(failed));
    }

    /// One batch of an expiry sweep: rows changed, skipped (renewed meanwhile) and already gone.
    pub fn swept_rows(&self, sweep: &'static str, deleted: u64, skipped: u64, already_gone: u64) {
        let Some(exporter) = &self.0 else { return };
        for (outcome, rows) in [("deleted", deleted), ("skipped", skipped), ("already_gone", already_gone)] {
            let labels = [("sweep", sweep.to_owned()), ("outcome", outcome.to_owned())];
            exporter.counter(SWEPT_ROWS, &labels).increment(rows);
        }
    }

    /// The text exposition of every series, after setting the gauges to `readings`; `None` when
    /// disabled.
    pub fn render(&self, readings: &Readings) -> Option<String> {
        let exporter = self.0.as_ref()?;
        for (state, count) in &readings.shares {
            exporter.gauge(SHARES, &[("state", (*state).to_owned())]).set(*count as f64);
        }
        for (state, count) in &readings.deletion_cases {
            exporter.gauge(DELETION_CASES, &[("state", (*state).to_owned())]).set(*count as f64);
        }
        exporter.gauge(STORED_BYTES, &[]).set(readings.stored_bytes as f64);
        exporter.gauge(OUTBOX_WAITING, &[]).set(readings.outbox_waiting as f64);
        exporter.gauge(GC_BACKLOG, &[]).set(readings.gc_backlog as f64);
        exporter.gauge(SCAN_BACKLOG, &[]).set(readings.scan_backlog as f64);
        Some(exporter.handle.render())
    }

    /// Folds recorded histogram samples into their buckets, so memory stays bounded between
    /// scrapes; the serving instance calls this on a timer.
    pub fn run_upkeep(&self) {
        if let Some(exporter) = &self.0 {
            exporter.handle.run_upkeep();
        }
    }
}

fn result(ok: bool) -> (&'static str, String) {
    ("result", if ok { "ok" } else { "error" }.to_owned())
}

const METADATA: Metadata<'static> = Metadata::new(module_path!(), ::metrics::Level::INFO, Some(module_path!()));

impl Exporter {
    fn key(name: &'static str, labels: &[(&'static str, String)]) -> Key {
        Key::from_parts(name, labels.iter().map(|(k, v)| Label::new(*k, v.clone())).collect::<Vec<_>>())
    }

    fn counter(&self, name: &'static str, labels: &[(&'static str, String)]) -> ::metrics::Counter {
        self.recorder.register_counter(&Self::key(name, labels), &METADATA)
    }

    fn gauge(&self, name: &'static str, labels: &[(&'static str, String)]) -> ::metrics::Gauge {
        self.recorder.register_gauge(&Self::key(name, labels), &METADATA)
    }

    fn histogram(&self, name: &'static str, labels: &[(&'static str, String)]) -> ::metrics::Histogram {
        self.recorder.register_histogram(&Self::key(name, labels), &METADATA)
    }
}

#[cfg(test)]
mod documented;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Metrics, Readings};

    #[test]
    fn a_disabled_handle_records_and_renders_nothing() {
        let metrics = Metrics::disabled();
        metrics.http_request(Some("/"), "GET", 200, Duration::from_millis(3));
        assert!(metrics.render(&Readings::default()).is_none());
    }

    #[test]
    fn two_instances_keep_their_own_series() {
        let (one, two) = (Metrics::enabled(), Metrics::enabled());
        one.http_request(Some("/s/:token"), "GET", 200, Duration::from_millis(3));
        let rendered = one.render(&Readings::default()).unwrap();
        assert!(rendered.contains(r#"watasu_http_requests_total{route="/s/:token",method="GET",status="200"} 1"#));
        assert!(rendered.contains("watasu_http_request_duration_seconds_bucket"), "{rendered}");
        assert!(!two.render(&Readings::default()).unwrap().contains("watasu_http_requests_total{"));
    }

    #[test]
    fn unknown_routes_and_methods_collapse_to_other() {
        let metrics = Metrics::enabled();
        metrics.http_request(None, "BREW", 404, Duration::from_millis(1));
        let rendered = metrics.render(&Readings::default()).unwrap();
        assert!(rendered.contains(r#"watasu_http_requests_total{route="other",method="other",status="404"} 1"#));
    }

    #[test]
    fn gauges_show_every_state_read_at_scrape_time() {
        let metrics = Metrics::enabled();
        let readings = Readings {
            shares: vec![("active", 2), ("purged", 0)],
            stored_bytes: 42,
            deletion_cases: vec![("received", 1)],
            outbox_waiting: 3,
            gc_backlog: 4,
            scan_backlog: 5,
        };
        let rendered = metrics.render(&readings).unwrap();
        for line in [
            r#"watasu_shares{state="active"} 2"#,
            r#"watasu_shares{state="purged"} 0"#,
            "watasu_stored_bytes 42",
            r#"watasu_deletion_cases{state="received"} 1"#,
            "watasu_mail_outbox_waiting 3",
            "watasu_gc_backlog 4",
            "watasu_scan_backlog 5",
        ] {
            assert!(rendered.lines().any(|l| l == line), "{line} missing from:\n{rendered}");
        }
    }
}
