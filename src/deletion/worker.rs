//! Resumes deletion cases in the background: cases whose runner died, whose steps wait out a
//! backoff, or that an admin sent back for another try. Small on purpose: one loop over due cases.

use std::time::Duration;

use super::Runner;

/// How often due cases are looked for.
pub const WORKER_INTERVAL: Duration = Duration::from_secs(15);

/// Runs due cases every `interval` (and once at start) until `shutdown` resolves.
pub async fn run_deletion_worker(runner: Runner, interval: Duration, shutdown: impl Future<Output = ()>) {
    tokio::pin!(shutdown);
    loop {
        if let Err(error) = runner.run_due(20).await {
            tracing::warn!(error = %error, "deletion worker pass failed");
        }
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
