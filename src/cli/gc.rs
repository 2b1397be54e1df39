//! `watasu gc [--limit N]`: one garbage-collection pass from the command line (for a systemd timer
//! or cron, although the server's own timer makes neither necessary), plus the leftover sweep.

use crate::{config::Config, maintenance::Trigger, services::Services};

pub async fn run(config: &Config, limit: u32) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let gc = services.gc.gc();
    let report = gc.collect(limit, Trigger::Cli).await?;
    let leftovers = gc.sweep_leftovers(Trigger::Cli).await?;
    crate::outln!(
        "purged {}, failed {}, skipped {}; leftover temp files removed {}, orphan files removed {}, \
         unfinished multipart uploads aborted {}, leftover removals failed {}",
        report.purged,
        report.failed,
        report.skipped,
        leftovers.temp_files,
        leftovers.orphan_files,
        leftovers.multipart_uploads,
        leftovers.failed
    );
    services.close().await;
    Ok(())
}
