//! The in-process timer: a GC pass at start-up and every interval after, so a file does not
//! outlive its expiry (or its delivery grace) when nobody visits. No cron needed.

use std::{path::PathBuf, time::Duration};

use super::GcRunner;

/// Passes run back to back while they keep finding a full batch, up to this many per tick.
const MAX_PASSES_PER_TICK: u32 = 200;

/// Runs until `shutdown` resolves.
pub async fn run_gc_timer(
    runner: GcRunner,
    files_dir: PathBuf,
    interval: Duration,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tick(&runner, &files_dir).await;
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

async fn tick(runner: &GcRunner, files_dir: &std::path::Path) {
    for _ in 0..MAX_PASSES_PER_TICK {
        match runner.try_pass().await {
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
