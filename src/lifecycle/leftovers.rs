//! The leftover sweep of the local store: temp files of interrupted uploads, and stored or partial
//! (`.part-`) files that no file or upload row names (a crash between storing a file and writing
//! its rows), once they are old enough that no upload in progress can own them. The whole folder is walked on every sweep, in bounded
//! batches, so however many live files there are, every leftover is looked at.

use std::{
    path::Path,
    time::{Duration, SystemTime},
};

use super::{
    ShareGc,
    store::{PARTIAL_PREFIX, TEMP_PREFIX},
};

/// What the leftover sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LeftoverReport {
    pub temp_files: u32,
    pub orphan_files: u32,
}

/// Leftovers younger than this may belong to an upload in progress.
pub const LEFTOVER_MIN_AGE: Duration = Duration::from_secs(3600);
/// Stored-file names checked against the database per query; memory stays bounded by this
/// whatever the folder holds.
pub const LEFTOVER_BATCH: usize = 1_000;

impl ShareGc {
    /// Removes temp files and unreferenced stored files older than an hour, walking the whole
    /// folder. Only the local store has a folder to look at.
    pub async fn remove_leftovers(&self, dir: &Path) -> Result<LeftoverReport, sqlx::Error> {
        self.remove_leftovers_in_batches(dir, LEFTOVER_BATCH).await
    }

    /// The same with `batch` names per database query (tests shrink it).
    pub async fn remove_leftovers_in_batches(&self, dir: &Path, batch: usize) -> Result<LeftoverReport, sqlx::Error> {
        let mut report = LeftoverReport::default();
        let Ok(mut entries) = tokio::fs::read_dir(dir).await else { return Ok(report) };
        // Ages are judged by the clock that stamped the mtimes: this is the local store, whose
        // files this host's kernel stamps with the very clock `SystemTime` reads. No database row
        // holds these times, so the database's clock would be the odd one out. (A network mount
        // stamps with its server's clock; a store there would need a probe file's mtime instead.)
        let now = SystemTime::now();
        let mut unclaimed = Vec::with_capacity(batch);
        while let Ok(Some(entry)) = entries.next_entry().await {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_temp = name.starts_with(TEMP_PREFIX);
            let leftover = match name.strip_prefix(PARTIAL_PREFIX) {
                Some(key) => Leftover { key: key.to_owned(), partial: true },
                None => Leftover { key: name.clone(), partial: false },
            };
            if !is_temp && !crate::session::is_token_shaped(&leftover.key) {
                continue;
            }
            let old_enough = entry
                .metadata()
                .await
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|modified| now.duration_since(modified).ok())
                .is_some_and(|age| age >= LEFTOVER_MIN_AGE);
            if !old_enough {
                continue;
            }
            if is_temp {
                if tokio::fs::remove_file(entry.path()).await.is_ok() {
                    report.temp_files += 1;
                }
                continue;
            }
            unclaimed.push(leftover);
            if unclaimed.len() >= batch {
                report.orphan_files += self.remove_unreferenced(&unclaimed).await?;
                unclaimed.clear();
            }
        }
        report.orphan_files += self.remove_unreferenced(&unclaimed).await?;
        Ok(report)
    }

    /// Deletes those of `leftovers` that no file or upload row names; returns how many went.
    async fn remove_unreferenced(&self, leftovers: &[Leftover]) -> Result<u32, sqlx::Error> {
        if leftovers.is_empty() {
            return Ok(0);
        }
        let keys: Vec<String> = leftovers.iter().map(|l| l.key.clone()).collect();
        let known = self.repo.known_storage_keys(&keys).await?;
        let mut removed = 0;
        for leftover in leftovers.iter().filter(|l| !known.contains(&l.key)) {
            let deleted = if leftover.partial {
                self.store.delete_partial(&leftover.key).await
            } else {
                self.store.delete(&leftover.key).await
            };
            if deleted.is_ok() {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

/// A stored file (`<key>`) or a resumable upload's partial file (`.part-<key>`) to check.
struct Leftover {
    key: String,
    partial: bool,
}
