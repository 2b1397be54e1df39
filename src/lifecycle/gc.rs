//! The self-healing garbage collector (seed 000's ShareGc): delete the file first, mark the share
//! purged only once the file is gone; a failed delete backs off so it never blocks later rows.
//! Any number of processes may run it at once: correctness rests on the conditional UPDATEs.
//!
//! `GcRunner` adds what the seed lacks: at most one pass in flight per process, shared by the
//! after-response trigger, the in-process timer and the CLI.

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::{Duration, SystemTime},
};

use super::{FileStore, LifecycleRepository, StoreError, store::TEMP_PREFIX};
use crate::{
    maintenance::{Kind, Ledger, Outcome, RunState, Trigger},
    share::{EventKind, ShareEvents},
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
}

/// What the leftover sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LeftoverReport {
    pub temp_files: u32,
    pub orphan_files: u32,
}

/// Leftovers younger than this may belong to an upload in progress.
pub const LEFTOVER_MIN_AGE: Duration = Duration::from_secs(3600);
/// Folder entries looked at per leftover sweep.
const LEFTOVER_SCAN_LIMIT: usize = 1_000;

#[derive(Clone)]
pub struct ShareGc {
    repo: LifecycleRepository,
    store: Arc<dyn FileStore>,
    events: ShareEvents,
    ledger: Ledger,
}

impl ShareGc {
    pub fn new(repo: LifecycleRepository, store: Arc<dyn FileStore>, events: ShareEvents) -> Self {
        let ledger = Ledger::new(repo.db().clone());
        Self { repo, store, events, ledger }
    }

    /// One pass over at most `limit` candidates, recorded in the maintenance ledger per share.
    /// A pass that finds nothing writes nothing, so the empty pass stays one indexed read.
    pub async fn collect(&self, limit: u32, trigger: Trigger) -> Result<GcReport, sqlx::Error> {
        let mut report = GcReport::default();
        let candidates = self.repo.select_purgeable(limit).await?;
        if candidates.is_empty() {
            return Ok(report);
        }
        let run_id = self.ledger.open_running(Kind::ShareGc, trigger).await?;
        let mut items = Vec::with_capacity(candidates.len());
        for candidate in candidates {
            match self.store.delete(&candidate.storage_key).await {
                // Already absent counts as gone: a crash after the delete, or another collector.
                Ok(_) => {
                    if self.repo.mark_purged(candidate.id).await? {
                        report.purged += 1;
                        self.events.record_quietly(candidate.id, EventKind::Purged).await;
                        items.push((candidate.id, Outcome::Deleted, None));
                    } else {
                        // Another collector purged it first (or it stopped being collectable).
                        report.skipped += 1;
                        items.push((candidate.id, Outcome::AlreadyGone, None));
                    }
                }
                Err(error) => {
                    // The share id only: file names are personal data.
                    tracing::warn!(share_id = candidate.id, %error, "could not delete a share's file; backing off");
                    self.repo.mark_purge_failed(candidate.id).await?;
                    report.failed += 1;
                    items.push((candidate.id, Outcome::Failed, Some(failure_class(&error))));
                }
            }
        }
        let items: Vec<_> = items.iter().map(|(id, outcome, reason)| (*id, *outcome, reason.as_deref())).collect();
        self.ledger.record(run_id, "share", &items).await?;
        let state = if report.failed > 0 { RunState::Partial } else { RunState::Succeeded };
        self.ledger.finish(run_id, state, None).await?;
        Ok(report)
    }

    /// Removes temp files of interrupted uploads and stored files no row names, once they are
    /// older than an hour. Only the local store has a folder to look at.
    pub async fn remove_leftovers(&self, dir: &std::path::Path) -> Result<LeftoverReport, sqlx::Error> {
        let mut report = LeftoverReport::default();
        let Ok(mut entries) = tokio::fs::read_dir(dir).await else { return Ok(report) };
        let mut unclaimed = Vec::new();
        let mut scanned = 0;
        while let Ok(Some(entry)) = entries.next_entry().await {
            scanned += 1;
            if scanned > LEFTOVER_SCAN_LIMIT {
                break;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let old_enough = entry
                .metadata()
                .await
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|age| age >= LEFTOVER_MIN_AGE);
            if !old_enough {
                continue;
            }
            if name.starts_with(TEMP_PREFIX) {
                if tokio::fs::remove_file(entry.path()).await.is_ok() {
                    report.temp_files += 1;
                }
            } else if crate::session::is_token_shaped(&name) {
                unclaimed.push(name);
            }
        }
        let known = self.repo.known_storage_keys(&unclaimed).await?;
        for key in unclaimed.iter().filter(|k| !known.contains(k)) {
            if self.store.delete(key).await.is_ok() {
                report.orphan_files += 1;
            }
        }
        Ok(report)
    }
}

/// Why a file could not be deleted, in words that name no path.
fn failure_class(error: &StoreError) -> String {
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
        }
    }

    pub fn batch(&self) -> u32 {
        self.batch
    }

    pub fn gc(&self) -> &ShareGc {
        &self.gc
    }

    /// Runs one bounded pass unless one is already running; `None` when skipped.
    pub async fn try_pass(&self, trigger: Trigger) -> Option<Result<GcReport, sqlx::Error>> {
        if self.busy.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return None;
        }
        let _in_flight = InFlight(self.busy.clone());
        Some(self.gc.collect(self.batch, trigger).await)
    }

    /// Asks for a pass after a response: at once if none ran within the gap, else at the gap's
    /// end. Errors are logged and swallowed.
    pub fn spawn_pass(&self) {
        self.wanted.store(true, Ordering::Release);
        if self.access_task.compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire).is_err() {
            return; // the live task sees `wanted` when its gap is over
        }
        let runner = self.clone();
        tokio::spawn(async move {
            let _task = InFlight(runner.access_task.clone());
            while runner.wanted.swap(false, Ordering::AcqRel) {
                match runner.try_pass(Trigger::Request).await {
                    Some(Err(error)) => tracing::warn!(%error, "access-time GC pass failed"),
                    Some(Ok(report)) if report != GcReport::default() => tracing::info!(?report, "access-time GC pass"),
                    _ => {}
                }
                tokio::time::sleep(ACCESS_TIME_GAP).await;
            }
        });
    }
}
