//! The scan worker: takes pending files, streams each from the store to clamd, and records the
//! verdict. A refused file ends every share of its handover the way a revoke does (the GC then
//! deletes the bytes, file first); clamd down or slow leaves the file held and tries again with
//! a doubling wait, and after `WATASU_SCAN_ATTEMPTS` refuses it. The sender of a refused handover
//! is mailed which file and why, in their language. A request's refused file is refused alone:
//! its bytes are deleted as the GC deletes them (the file first, then its row marked purged),
//! the request's timeline records it, and the request stays open. A new handover or an
//! uploaded file wakes the worker, so a file is usually scanned moments after it arrived.

use std::{sync::Arc, time::Duration};

use tokio::sync::Notify;

use super::{Fault, Parts, mails::Mails, sharing::Sharing};
use crate::{
    config::ScanSettings,
    lifecycle::LifecycleRepository,
    metrics::Metrics,
    retry,
    scan::{Clamd, DueFile, RefusalReason, ScanError, ScanFiles, ScanState, TooLargePolicy, Verdict},
    share::{EventKind, ShareEvents},
    storage::FileStore,
};

/// How often the worker looks for due files when nothing wakes it.
pub const WORKER_INTERVAL: Duration = Duration::from_secs(5);
/// The wait after clamd's first unanswered scan of a file; doubles per failure…
const RETRY_BASE: Duration = Duration::from_secs(30);
/// …up to this.
const RETRY_CAP: Duration = Duration::from_secs(30 * 60);

/// Wakes the worker when files arrive (cheap to clone; does nothing while scanning is off).
#[derive(Clone, Debug, Default)]
pub struct ScanWake(Arc<Notify>);

impl ScanWake {
    pub fn wake(&self) {
        self.0.notify_one();
    }
}

/// What one scan of one file came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanResult {
    Clean,
    Infected,
    /// Too large for clamd and released under the `release` policy.
    TooLarge,
    /// Refused without a signature: too large under `refuse`.
    Refused,
    /// Refused after the last attempt clamd did not answer.
    GaveUp,
    /// clamd gave no verdict; the file stays held.
    Unanswered,
    /// Another worker finished the file meanwhile.
    Gone,
}

impl ScanResult {
    /// The `result` label of the scans metric.
    pub fn label(self) -> &'static str {
        match self {
            Self::Clean => "clean",
            Self::Infected => "infected",
            Self::TooLarge => "too_large",
            Self::Refused | Self::GaveUp => "refused",
            Self::Unanswered => "unanswered",
            Self::Gone => "gone",
        }
    }
}

#[derive(Clone)]
pub struct Scanning {
    /// `None`: scanning is off (WATASU_CLAMD unset).
    clamd: Option<Clamd>,
    too_large: TooLargePolicy,
    max_attempts: u32,
    /// A claim outlasts the longest scan it may take: its steps, each within the timeout.
    lease: Duration,
    files: ScanFiles,
    store: Arc<dyn FileStore>,
    /// Marks a request's refused file purged once its bytes are gone.
    lifecycle: LifecycleRepository,
    events: ShareEvents,
    sharing: Sharing,
    /// Tells the sender of a refused handover.
    mails: Mails,
    metrics: Metrics,
    wake: ScanWake,
}

impl Scanning {
    pub fn new(parts: &Parts, sharing: Sharing, mails: Mails, wake: ScanWake) -> Self {
        let ScanSettings { clamd, scan_too_large, scan_timeout, scan_attempts, .. } = &parts.config.settings.scan;
        Self {
            clamd: clamd.clone().map(|address| Clamd::new(address, *scan_timeout)),
            too_large: *scan_too_large,
            max_attempts: *scan_attempts,
            lease: (*scan_timeout * 10).max(Duration::from_secs(10 * 60)),
            files: ScanFiles::new(parts.db.clone()),
            store: parts.store.clone(),
            lifecycle: parts.lifecycle(),
            events: ShareEvents::new(parts.db.clone()),
            sharing,
            mails,
            metrics: parts.metrics.clone(),
            wake,
        }
    }

    /// Whether files are scanned at all.
    pub fn is_on(&self) -> bool {
        self.clamd.is_some()
    }

    /// How many files are held waiting for a verdict (for `/readyz` and the metrics).
    pub async fn backlog(&self) -> Result<i64, Fault> {
        Ok(self.files.backlog().await?)
    }

    /// Scans the files due now, one at a time, until none is left or clamd does not answer (the
    /// others would wait for it too: they stay due, unclaimed, for the next pass); answers how
    /// many it took.
    pub async fn scan_due(&self) -> Result<usize, Fault> {
        let Some(clamd) = &self.clamd else { return Ok(0) };
        let mut scanned = 0;
        while let Some(file) = self.files.claim_due(1, self.lease).await?.pop() {
            let result = self.scan_one(clamd, &file).await?;
            self.metrics.file_scan(result.label());
            scanned += 1;
            if matches!(result, ScanResult::Unanswered | ScanResult::GaveUp) {
                break;
            }
        }
        self.end_refused().await?;
        Ok(scanned)
    }

    /// Ends the shares still open of every handover with a refused file, and tells the senders
    /// of refused files not told yet. Run after each pass
    /// rather than right after a verdict, so a refusal whose shares a crash left open is ended
    /// by the next pass.
    async fn end_refused(&self) -> Result<(), Fault> {
        for handover_id in self.files.refused_handovers_open().await? {
            self.sharing.end_refused_by_scan(handover_id).await?;
        }
        for handover_id in self.files.untold_handovers().await? {
            self.mails.tell_of_refused_files(handover_id).await;
        }
        for file in self.files.refused_inbound().await? {
            // As the GC: the key first, so a delete that fails leaves bytes nobody can read; then
            // the bytes, so a row marked purged never leaves them behind; a failed delete is
            // tried again by the next pass.
            self.lifecycle.destroy_file_key(file.id).await?;
            if let Err(error) = self.store.delete(&file.storage_key).await {
                tracing::warn!(file_id = file.id, %error, "could not delete a refused file; the next pass tries again");
                continue;
            }
            if self.lifecycle.mark_file_purged(file.id).await? {
                self.events.record_about_file(file.share_id, EventKind::FileRefused, file.position).await;
                tracing::info!(file_id = file.id, share_id = file.share_id, "file request: a refused file deleted");
            }
        }
        Ok(())
    }

    async fn scan_one(&self, clamd: &Clamd, file: &DueFile) -> Result<ScanResult, Fault> {
        let verdict = match self.store.open(&file.storage_key).await {
            Ok(opened) => clamd.scan(opened.into_reader()).await,
            Err(error) => Err(ScanError::Store(std::io::Error::other(error))),
        };
        let (state, finding, result) = match verdict {
            Ok(Verdict::Clean) => (ScanState::Clean, None, ScanResult::Clean),
            Ok(Verdict::Infected(name)) => (ScanState::Infected, Some(name), ScanResult::Infected),
            Ok(Verdict::TooLarge) => match self.too_large {
                TooLargePolicy::Release => (ScanState::TooLarge, None, ScanResult::TooLarge),
                TooLargePolicy::Refuse => {
                    (ScanState::Refused, Some(RefusalReason::TooLarge.code().to_owned()), ScanResult::Refused)
                }
            },
            Err(error) => return self.unanswered(file, &error).await,
        };
        if !self.files.finish(file.id, state, finding.as_deref()).await? {
            return Ok(ScanResult::Gone);
        }
        tracing::info!(file_id = file.id, state = state.code(), finding = finding.as_deref(), "file scanned");
        Ok(result)
    }

    async fn unanswered(&self, file: &DueFile, error: &ScanError) -> Result<ScanResult, Fault> {
        let failures = u32::try_from(file.scan_attempts).unwrap_or(0);
        let wait = retry::backoff(RETRY_BASE, failures, RETRY_CAP);
        tracing::warn!(file_id = file.id, error = %error, attempt = failures + 1, "clamd gave no verdict; the file stays held");
        match self.files.failed(file.id, error.class(), self.max_attempts, wait).await? {
            Some(ScanState::Refused) => {
                tracing::warn!(file_id = file.id, "clamd never answered for the file: refused");
                Ok(ScanResult::GaveUp)
            }
            Some(_) => Ok(ScanResult::Unanswered),
            None => Ok(ScanResult::Gone),
        }
    }
}

/// Scans due files until `shutdown` resolves: at start, when woken by a new handover, and every
/// `interval` (for retries whose wait is over).
pub async fn run_scan_worker(scanning: Scanning, interval: Duration, shutdown: impl Future<Output = ()>) {
    if !scanning.is_on() {
        return;
    }
    tokio::pin!(shutdown);
    loop {
        // A scan cut by the stop leaves its file claimed; the claim runs out and it is taken again.
        tokio::select! {
            _ = &mut shutdown => return,
            done = scanning.scan_due() => if let Err(error) = done {
                tracing::warn!(%error, "scan pass failed");
            },
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = scanning.wake.0.notified() => {}
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
