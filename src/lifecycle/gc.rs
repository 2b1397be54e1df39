//! The self-healing garbage collector (seed 000's ShareGc): delete the file first, mark the share
//! purged only once the file is gone; a failed delete backs off so it never blocks later rows.
//! Any number of processes may run it at once: correctness rests on the conditional UPDATEs.
//!
//! `GcRunner` adds what the seed lacks: at most one pass in flight per process, shared by the
//! after-response trigger, the in-process timer and the CLI.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use super::{LifecycleRepository, PurgeCandidate, repo::DoomedFile};
use crate::{
    maintenance::{Kind, Ledger, Note, Outcome, RunState, Target, Trigger, error_class},
    metrics::Metrics,
    share::{EventKind, ShareEvents},
    storage::{StoreError, SweptStore},
    uploads::UploadRepository,
};

/// What one pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GcReport {
    /// Shares whose file is gone and whose row is now purged.
    pub purged: u32,
    /// Deletes that failed; those rows back off.
    pub failed: u32,
    /// Candidates another collector finished first, or that stopped being collectable.
    pub skipped: u32,
    /// Expired resumable uploads whose bytes and row are gone.
    pub uploads: u32,
}

#[derive(Clone)]
pub struct ShareGc {
    pub(super) repo: LifecycleRepository,
    pub(super) store: Arc<dyn SweptStore>,
    events: ShareEvents,
    pub(super) ledger: Ledger,
    pub(super) uploads: UploadRepository,
    /// Counts passes, purges and leftover sweeps.
    pub(super) metrics: Metrics,
}

impl ShareGc {
    pub fn new(repo: LifecycleRepository, store: Arc<dyn SweptStore>, events: ShareEvents) -> Self {
        let ledger = Ledger::new(repo.db().clone());
        let uploads = UploadRepository::new(repo.db().clone());
        Self { repo, store, events, ledger, uploads, metrics: Metrics::disabled() }
    }

    /// Counts this collector's work in `metrics`.
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = metrics;
        self
    }

    /// One pass over at most `limit` candidates and `limit` expired uploads, recorded in the
    /// maintenance ledger item by item as it goes, and timed in the metrics. A pass that finds
    /// nothing writes nothing. A pass after a response looks at shares only: it runs while pages are served,
    /// and its empty pass is then the one indexed read of the candidates; expired uploads wait
    /// for the timer's next pass, since no recipient waits for them.
    pub async fn collect(&self, limit: u32, trigger: Trigger) -> Result<GcReport, sqlx::Error> {
        let started = Instant::now();
        let outcome = self.pass(limit, trigger).await;
        self.metrics.gc_pass(started.elapsed(), outcome.as_ref().ok().map(|r| (r.purged, r.failed)));
        outcome
    }

    async fn pass(&self, limit: u32, trigger: Trigger) -> Result<GcReport, sqlx::Error> {
        let candidates = self.repo.select_purgeable(limit).await?;
        let expired_uploads =
            if trigger == Trigger::Request { Vec::new() } else { self.uploads.expired(limit).await? };
        if candidates.is_empty() && expired_uploads.is_empty() {
            return Ok(GcReport::default());
        }
        let run_id = self.ledger.open_running(Kind::ShareGc, trigger).await?;
        match self.collect_candidates(run_id, candidates, expired_uploads).await {
            Ok(report) => Ok(report),
            Err(error) => {
                // A run left `running` would read as still in progress until it is declared
                // stale; say at once that it failed, and why (the class only: no data).
                if let Err(finish) =
                    self.ledger.finish(run_id, RunState::Failed, Some(&Note::of(error_class(&error)))).await
                {
                    tracing::warn!(run_id, error = %finish, "could not record a failed GC pass");
                }
                Err(error)
            }
        }
    }

    async fn collect_candidates(
        &self,
        run_id: i64,
        candidates: Vec<PurgeCandidate>,
        expired_uploads: Vec<(i64, String)>,
    ) -> Result<GcReport, sqlx::Error> {
        let mut report = GcReport::default();
        for candidate in candidates {
            // Closed before its files are read: what committed into it first is among them, and
            // nothing commits after. One that stopped being collectable (answered) keeps all.
            let Some(files) = self.repo.close(&candidate).await? else {
                report.skipped += 1;
                self.ledger.record(run_id, Target::Share, &[(candidate.id, Outcome::AlreadyGone, None)]).await?;
                continue;
            };
            let (outcome, reason) = match self.delete_files(&candidate, &files).await? {
                // Already absent counts as gone: a crash after the delete, or another collector.
                Ok(()) => {
                    self.repo.destroy_note(candidate.handover_id, candidate.id).await?;
                    if self.repo.mark_purged(candidate.id).await? {
                        report.purged += 1;
                        self.events.record_quietly(candidate.id, EventKind::Purged).await;
                        // A request that ended unanswered ends the uploads still arriving for it
                        // (the next timer pass collects them; none for a share of files).
                        self.uploads.expire_all_of_request(candidate.id).await?;
                        (Outcome::Deleted, None)
                    } else {
                        // Another collector purged it first (or it stopped being collectable).
                        report.skipped += 1;
                        (Outcome::AlreadyGone, None)
                    }
                }
                Err(error) => {
                    // The share id only: file names are personal data.
                    tracing::warn!(share_id = candidate.id, %error, "could not delete a share's file; backing off");
                    self.repo.mark_purge_failed(candidate.id).await?;
                    report.failed += 1;
                    (Outcome::Failed, Some(failure_class(&error)))
                }
            };
            // Written as it goes: a pass the database breaks later still shows what it deleted.
            self.ledger.record(run_id, Target::Share, &[(candidate.id, outcome, reason.as_deref())]).await?;
        }
        let (uploads, uploads_failed) = self.collect_uploads(run_id, expired_uploads).await?;
        report.uploads = uploads;
        report.failed += uploads_failed;
        let state = if report.failed > 0 { RunState::Partial } else { RunState::Succeeded };
        self.ledger.finish(run_id, state, None).await?;
        Ok(report)
    }
}

impl ShareGc {
    /// Destroys the keys of the candidate's encrypted files, then deletes the files, each marked
    /// purged as soon as it is gone; stops at the first that cannot be deleted (the share backs
    /// off and the rest wait for its retry).
    async fn delete_files(
        &self,
        candidate: &PurgeCandidate,
        files: &[DoomedFile],
    ) -> Result<Result<(), StoreError>, sqlx::Error> {
        // The expiry is the share's outcome, recorded once the collector takes its file, so the
        // timeline reads expired, key destroyed, deleted.
        self.events.record_expiry(candidate.id).await;
        // Keys first: a delete that fails (store down) leaves bytes nobody can read.
        let destroyed = self.repo.destroy_file_keys(candidate.handover_id, candidate.id).await?;
        if destroyed > 0 {
            tracing::info!(share_id = candidate.id, files = destroyed, "destroyed the keys of encrypted files");
            self.events.record_quietly(candidate.id, EventKind::KeyDestroyed).await;
        }
        for file in files {
            if let Err(error) = self.store.delete(&file.storage_key).await {
                return Ok(Err(error));
            }
            self.repo.mark_file_purged(file.id).await?;
        }
        Ok(Ok(()))
    }
}

/// Why a file could not be deleted, in words that name no path.
pub(super) fn failure_class(error: &StoreError) -> String {
    match error {
        StoreError::Io(io) | StoreError::Content(io) => io.kind().to_string(),
        other => other.to_string(),
    }
}

/// After-response passes start at most this often. Under load a pass after every response would
/// keep one running all the time for nothing; a response within the gap asks for one more pass at
/// its end instead, so a collectable share still goes without waiting for the timer.
pub const ACCESS_TIME_GAP: Duration = Duration::from_millis(200);

/// Runs GC passes with at most one in flight in this process.
#[derive(Clone)]
pub struct GcRunner {
    gc: ShareGc,
    busy: Arc<AtomicBool>,
    /// The after-response task is alive (running a pass or waiting out the gap).
    access_task: Arc<AtomicBool>,
    /// A response asked for a pass since the task last started one.
    wanted: Arc<AtomicBool>,
    batch: u32,
    stats: Arc<Counters>,
}

/// What a runner has done so far, for tests and operators to observe.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcStats {
    /// Passes responses asked for (`spawn_pass` calls).
    pub requested: u64,
    /// Passes that ran.
    pub started: u64,
    /// Passes that ran to their end (successfully or not).
    pub finished: u64,
    /// Passes not run because another was in flight.
    pub skipped_busy: u64,
}

#[derive(Default)]
struct Counters {
    requested: AtomicU64,
    started: AtomicU64,
    finished: AtomicU64,
    skipped_busy: AtomicU64,
}

/// Clears the in-flight flag however the pass ends (even by panic).
struct InFlight(Arc<AtomicBool>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl GcRunner {
    pub fn new(gc: ShareGc, batch: u32) -> Self {
        Self {
            gc,
            busy: Arc::new(AtomicBool::new(false)),
            access_task: Arc::new(AtomicBool::new(false)),
            wanted: Arc::new(AtomicBool::new(false)),
            batch,
            stats: Arc::default(),
        }
    }

    pub fn batch(&self) -> u32 {
        self.batch
    }

    pub fn gc(&self) -> &ShareGc {
        &self.gc
    }

    pub fn stats(&self) -> GcStats {
        GcStats {
            requested: self.stats.requested.load(Ordering::Acquire),
            started: self.stats.started.load(Ordering::Acquire),
            finished: self.stats.finished.load(Ordering::Acquire),
            skipped_busy: self.stats.skipped_busy.load(Ordering::Acquire),
        }
    }

    /// Runs one bounded pass unless one is already running; `None` when skipped.
    pub async fn try_pass(&self, trigger: Trigger) -> Option<Result<GcReport, sqlx::Error>> {
        if self.busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            self.stats.skipped_busy.fetch_add(1, Ordering::AcqRel);
            return None;
        }
        let _in_flight = InFlight(self.busy.clone());
        self.stats.started.fetch_add(1, Ordering::AcqRel);
        let outcome = self.gc.collect(self.batch, trigger).await;
        self.stats.finished.fetch_add(1, Ordering::AcqRel);
        Some(outcome)
    }

    /// Asks for a pass after a response: at once if none ran within the gap, else at the gap's
    /// end. A pass asked for always runs, after the request that asked: the task rechecks
    /// `wanted` after giving up its flag (a request in between found the flag still taken), and
    /// a pass skipped because another (the timer's) was in flight is tried again after the gap,
    /// since that one may have chosen its candidates before this response's share was due.
    /// Errors are logged and swallowed.
    pub fn spawn_pass(&self) {
        self.stats.requested.fetch_add(1, Ordering::AcqRel);
        self.wanted.store(true, Ordering::Release);
        if self.access_task.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return; // the live task sees `wanted` when its gap is over
        }
        let runner = self.clone();
        tokio::spawn(async move {
            loop {
                {
                    let _task = InFlight(runner.access_task.clone());
                    runner.drain_wanted().await;
                }
                // A request that came after the last check but before the flag was cleared left
                // `wanted` set and no task behind it: take the task back, unless another request
                // already started a new one.
                if !runner.wanted.load(Ordering::Acquire)
                    || runner.access_task.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err()
                {
                    return;
                }
            }
        });
    }

    /// Runs the passes asked for, one per gap, until none is wanted.
    async fn drain_wanted(&self) {
        while self.wanted.swap(false, Ordering::AcqRel) {
            match self.try_pass(Trigger::Request).await {
                None => {
                    self.wanted.store(true, Ordering::Release);
                }
                Some(Err(error)) => tracing::warn!(%error, "access-time GC pass failed"),
                Some(Ok(report)) if report != GcReport::default() => tracing::info!(?report, "access-time GC pass"),
                Some(Ok(_)) => {}
            }
            tokio::time::sleep(ACCESS_TIME_GAP).await;
        }
    }
}
