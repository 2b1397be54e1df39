//! The in-process scheduler: a GC pass at start-up and every GC interval after, so a file does not
//! outlive its expiry (or its delivery grace) when nobody visits; and every sweep at start-up and
//! every maintenance interval after. No cron needed.

use std::{path::PathBuf, time::Duration};

use tokio::time::Instant;

use super::{Kind, Maintenance, Trigger};
use crate::lifecycle::GcRunner;

/// Passes run back to back while they keep finding a full batch, up to this many per tick.
const MAX_PASSES_PER_TICK: u32 = 200;

/// What the scheduler drives, and how often.
pub struct Schedule {
    pub gc: GcRunner,
    pub files_dir: PathBuf,
    pub gc_interval: Duration,
    pub maintenance: Maintenance,
    pub maintenance_interval: Duration,
}

/// Runs until `shutdown` resolves. Sweeps are due-checked at each GC tick, so they run no more
/// often than the GC interval.
pub async fn run_scheduler(schedule: Schedule, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    let mut next_sweep = Instant::now();
    loop {
        if Instant::now() >= next_sweep {
            next_sweep = Instant::now() + schedule.maintenance_interval;
            if let Err(error) = schedule.maintenance.run_now(Kind::All, Trigger::Timer).await {
                tracing::warn!(%error, "timer maintenance run failed");
            }
        }
        gc_tick(&schedule.gc, &schedule.files_dir).await;
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(schedule.gc_interval) => {}
        }
    }
}

async fn gc_tick(runner: &GcRunner, files_dir: &std::path::Path) {
    for _ in 0..MAX_PASSES_PER_TICK {
        match runner.try_pass(Trigger::Timer).await {
            Some(Ok(report)) => {
                if report.purged + report.failed + report.skipped > 0 {
                    tracing::info!(?report, "timer GC pass");
                }
                if report.purged + report.failed + report.skipped < runner.batch() {
                    break;
                }
            }
            Some(Err(error)) => {
                tracing::warn!(%error, "timer GC pass failed");
                break;
            }
            None => break,
        }
    }
    match runner.gc().remove_leftovers(files_dir).await {
        Ok(report) if report.temp_files + report.orphan_files > 0 => tracing::info!(?report, "removed leftover files"),
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "leftover sweep failed"),
    }
}
