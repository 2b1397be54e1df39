//! `watasu gc [--limit N]`: one garbage-collection pass from the command line (for a systemd timer
//! or cron, although the server's own timer makes neither necessary), plus the leftover sweep.

use std::sync::Arc;

use crate::{
    config::Config,
    lifecycle::{LifecycleRepository, LocalFileStore, ShareGc},
    open_database,
    share::ShareEvents,
};

pub async fn run(config: &Config, limit: u32) -> anyhow::Result<()> {
    let settings = &config.settings;
    let db = open_database(config).await?;
    let files_dir = settings.data_dir.join("files");
    let store = Arc::new(LocalFileStore::new(&files_dir)?);
    let repo = LifecycleRepository::new(db.clone(), settings.delivery_grace, settings.purge_retry_base);
    let gc = ShareGc::new(repo, store, ShareEvents::new(db.clone()));
    let report = gc.collect(limit, crate::maintenance::Trigger::Cli).await?;
    let leftovers = gc.remove_leftovers(&files_dir).await?;
    crate::outln!(
        "purged {}, failed {}, skipped {}; leftover temp files removed {}, orphan files removed {}",
        report.purged,
        report.failed,
        report.skipped,
        leftovers.temp_files,
        leftovers.orphan_files
    );
    db.close().await;
    Ok(())
}
