//! What `GET /metrics` answers: the instance's counters and histograms, plus gauges read from the
//! database at scrape time (shares by state and their stored bytes, deletion cases by state, the
//! outbox's waiting mails, the GC's backlog, the files held for the virus scan), so every instance reports the same database-wide
//! values.

use std::time::Duration;

use super::{Fault, Parts};
use crate::{
    deletion::{CaseState, DeletionCases},
    lifecycle::LifecycleRepository,
    mail::outbox::Outbox,
    metrics::{Metrics, Readings},
    scan::ScanFiles,
    share::{ShareRepository, ShareStatus},
};

/// Histogram samples are folded into their buckets this often between scrapes.
const UPKEEP_INTERVAL: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct Telemetry {
    metrics: Metrics,
    shares: ShareRepository,
    cases: DeletionCases,
    outbox: Outbox,
    lifecycle: LifecycleRepository,
    scans: ScanFiles,
}

impl Telemetry {
    pub fn new(parts: &Parts) -> Self {
        Self {
            metrics: parts.metrics.clone(),
            shares: ShareRepository::new(parts.db.clone()),
            cases: DeletionCases::new(parts.db.clone()),
            outbox: Outbox::new(parts.db.clone(), &parts.secret_key),
            lifecycle: parts.lifecycle(),
            scans: ScanFiles::new(parts.db.clone()),
        }
    }

    /// The series the web layer feeds (requests by route).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The text exposition; `None` when metrics are off.
    pub async fn scrape(&self) -> Result<Option<String>, Fault> {
        if !self.metrics.is_enabled() {
            return Ok(None);
        }
        let tally = self.shares.tally_by_status().await?;
        let cases = self.cases.count_by_state().await?;
        let readings = Readings {
            shares: ShareStatus::ALL
                .iter()
                .map(|s| (s.code(), tally.iter().filter(|t| t.status == *s).map(|t| t.shares).sum()))
                .collect(),
            stored_bytes: self.shares.stored_bytes().await?,
            deletion_cases: CaseState::ALL
                .iter()
                .map(|s| (s.code(), cases.iter().filter(|(state, _)| state == s).map(|(_, n)| n).sum()))
                .collect(),
            outbox_waiting: self.outbox.waiting().await?,
            gc_backlog: self.lifecycle.backlog().await?,
            scan_backlog: self.scans.backlog().await?,
        };
        Ok(self.metrics.render(&readings))
    }
}

/// Keeps the histograms' memory bounded however rarely Prometheus scrapes, until `shutdown`.
pub async fn run_upkeep(metrics: Metrics, shutdown: impl Future<Output = ()>) {
    if !metrics.is_enabled() {
        return;
    }
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(UPKEEP_INTERVAL) => metrics.run_upkeep(),
        }
    }
}
