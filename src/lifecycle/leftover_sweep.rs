//! The leftover sweep, on whichever store holds the files: temp files of interrupted uploads,
//! unfinished multipart uploads, and stored or partial files that no file or upload row names (a
//! crash between storing a file and writing its rows), once they are old enough that no upload in
//! progress can own them. The store lists everything it holds, in a stream; the sweep checks the
//! names against the database in bounded batches, so however many live files there are, every
//! leftover is looked at.

use std::time::Duration;

use futures_util::StreamExt;

use super::ShareGc;
use crate::{
    maintenance::{Kind, Note, Reason, RunState, Trigger, error_class},
    storage::{Deleted, Leftover, LeftoverKind, StoreError},
};

/// What the leftover sweep removed, per kind, and how many removals failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LeftoverReport {
    pub temp_files: u32,
    /// Stored and partial files that no row names.
    pub orphan_files: u32,
    pub multipart_uploads: u32,
    pub failed: u32,
}

impl LeftoverReport {
    pub fn removed(&self) -> u32 {
        self.temp_files + self.orphan_files + self.multipart_uploads
    }

    /// What was removed, by the kind a metrics label names.
    pub fn by_kind(&self) -> [(&'static str, u32); 3] {
        [
            ("temp_file", self.temp_files),
            ("orphan_file", self.orphan_files),
            ("multipart_upload", self.multipart_uploads),
        ]
    }
}

/// Why a sweep stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum LeftoverError {
    #[error("the database failed during the leftover sweep")]
    Database(#[from] sqlx::Error),
    #[error("listing the store failed")]
    Store(#[from] StoreError),
}

/// Leftovers younger than this may belong to an upload in progress.
pub const LEFTOVER_MIN_AGE: Duration = Duration::from_secs(3600);
/// Stored-file names checked against the database per query; memory stays bounded by this
/// whatever the store holds.
pub const LEFTOVER_BATCH: usize = 1_000;

impl ShareGc {
    /// The sweep as a run of its own in the maintenance ledger, with the counts of what it removed
    /// (never names: the ledger names rows by id only, and leftovers have none).
    pub async fn sweep_leftovers(&self, trigger: Trigger) -> Result<LeftoverReport, LeftoverError> {
        let run_id = self.ledger.open_running(Kind::Leftovers, trigger).await?;
        match self.remove_leftovers().await {
            Ok(report) => {
                self.metrics.leftover_sweep(Some((report.by_kind(), report.failed)));
                self.ledger.add_counts(run_id, i64::from(report.removed()), i64::from(report.failed)).await?;
                let state = if report.failed > 0 { RunState::Partial } else { RunState::Succeeded };
                self.ledger.finish(run_id, state, None).await?;
                Ok(report)
            }
            Err(error) => {
                self.metrics.leftover_sweep(None);
                let class = Note::of(match &error {
                    LeftoverError::Database(error) => error_class(error),
                    LeftoverError::Store(_) => Reason::StorageError,
                });
                if let Err(finish) = self.ledger.finish(run_id, RunState::Failed, Some(&class)).await {
                    tracing::warn!(run_id, error = %finish, "could not record a failed leftover sweep");
                }
                Err(error)
            }
        }
    }

    /// Removes temp files, unfinished multipart uploads and unreferenced stored or partial files
    /// older than an hour, looking at everything the store holds.
    pub async fn remove_leftovers(&self) -> Result<LeftoverReport, LeftoverError> {
        self.remove_leftovers_in_batches(LEFTOVER_BATCH).await
    }

    /// The same with `batch` names per database query (tests shrink it).
    pub async fn remove_leftovers_in_batches(&self, batch: usize) -> Result<LeftoverReport, LeftoverError> {
        let mut report = LeftoverReport::default();
        let mut listed = self.store.leftovers();
        let mut unclaimed = Vec::with_capacity(batch);
        while let Some(leftover) = listed.next().await {
            let leftover = leftover?;
            if leftover.age < LEFTOVER_MIN_AGE {
                continue;
            }
            match leftover.kind {
                // Nothing in the database names these: their age alone decides.
                LeftoverKind::Temp | LeftoverKind::Multipart => {
                    let removed = self.store.remove_leftover(&leftover).await;
                    let count = match leftover.kind {
                        LeftoverKind::Temp => &mut report.temp_files,
                        _ => &mut report.multipart_uploads,
                    };
                    tally(removed, count, &mut report.failed);
                }
                LeftoverKind::Stored | LeftoverKind::Partial => {
                    unclaimed.push(leftover);
                    if unclaimed.len() >= batch {
                        self.remove_unreferenced(&unclaimed, &mut report).await?;
                        unclaimed.clear();
                    }
                }
            }
        }
        self.remove_unreferenced(&unclaimed, &mut report).await?;
        Ok(report)
    }

    /// Deletes those of `leftovers` that no file or upload row names.
    async fn remove_unreferenced(
        &self,
        leftovers: &[Leftover],
        report: &mut LeftoverReport,
    ) -> Result<(), sqlx::Error> {
        if leftovers.is_empty() {
            return Ok(());
        }
        let keys: Vec<String> = leftovers.iter().map(|l| l.name.clone()).collect();
        let known = self.repo.known_storage_keys(&keys).await?;
        for leftover in leftovers.iter().filter(|l| !known.contains(&l.name)) {
            tally(self.store.remove_leftover(leftover).await, &mut report.orphan_files, &mut report.failed);
        }
        Ok(())
    }
}

/// Counts a removal: what this sweep removed, or a failure (what was already gone is neither).
fn tally(removed: Result<Deleted, StoreError>, count: &mut u32, failed: &mut u32) {
    match removed {
        Ok(Deleted::Removed) => *count += 1,
        Ok(Deleted::AlreadyAbsent) => {}
        Err(error) => {
            tracing::warn!(%error, "could not remove a leftover");
            *failed += 1;
        }
    }
}
