//! The in-process scheduler: a GC pass at start-up and every GC interval after, so a file does not
//! outlive its expiry (or its delivery grace) when nobody visits; and every sweep at start-up and
//! every maintenance interval after, the store's leftover sweep among them (on object storage its
//! LIST costs requests). No cron needed.

use std::time::Duration;

use tokio::time::Instant;

use super::{Kind, Maintenance, Trigger};
use crate::lifecycle::GcRunner;

/// Passes run back to back while they keep finding a full batch, up to this many per tick.
const MAX_PASSES_PER_TICK: u32 = 200;

/// What the scheduler drives, and how often.
pub struct Schedule {
    pub gc: GcRunner,
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
        let sweeps_due = Instant::now() >= next_sweep;
        if sweeps_due {
            next_sweep = Instant::now() + schedule.maintenance_interval;
            if let Err(error) = schedule.maintenance.run_now(Kind::All, Trigger::Timer).await {
                tracing::warn!(%error, "timer maintenance run failed");
            }
        }
        gc_tick(&schedule.gc).await;
        if sweeps_due {
            leftover_sweep(&schedule.gc).await;
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(schedule.gc_interval) => {}
        }
    }
}

async fn gc_tick(runner: &GcRunner) {
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
}

async fn leftover_sweep(runner: &GcRunner) {
    match runner.gc().sweep_leftovers(Trigger::Timer).await {
        Ok(report) if report.removed() + report.failed > 0 => tracing::info!(?report, "removed leftovers"),
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "leftover sweep failed"),
    }
}
