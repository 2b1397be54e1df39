//! `watasu storage migrate`: moves the files of the local folder into the object store while the
//! server keeps serving through a `FallbackStore`. Each file is copied under its own key, checked
//! against the digest the database recorded, and only then removed from the folder, so a run can
//! stop anywhere and the next one carries on. Files the database no longer needs stay for the
//! leftover sweep.

use futures_util::TryStreamExt;

use super::{
    leftovers::LeftoverKind,
    object_store::ObjectFileStore,
    sealed::Sealing,
    store::{FileStore, LocalFileStore, StoreError, SweptStore, read_back_digest},
};
use crate::lifecycle::{LifecycleRepository, LiveFile};

/// Keys looked up in the database per query.
const BATCH: usize = 500;

/// What one run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MigrationReport {
    /// Copied and checked, then removed from the folder.
    pub moved: u32,
    /// Found whole in the store already (an earlier run stopped before removing the folder's copy).
    pub already_there: u32,
    /// Deleted while being copied (its share was purged): the copy was removed as well.
    pub deleted_meanwhile: u32,
    /// Not needed by the database: left for the leftover sweep.
    pub not_needed: u32,
    /// Whose folder copy does not match the recorded digest: left where it is.
    pub mismatched: u32,
}

/// Moves every file of `folder` that the database still needs into `target`.
pub async fn migrate_folder(
    repo: &LifecycleRepository,
    folder: &LocalFileStore,
    target: &ObjectFileStore,
) -> Result<MigrationReport, anyhow::Error> {
    let mut report = MigrationReport::default();
    // The folder's own listing names each stored file once (temp and partial files are kinds of
    // their own), in batches for the database.
    let mut stored = std::pin::pin!(
        folder
            .leftovers()
            .try_filter_map(|found| async move { Ok((found.kind == LeftoverKind::Stored).then_some(found.name)) })
            .try_chunks(BATCH)
    );
    while let Some(batch) = stored.try_next().await.map_err(|error| error.1)? {
        migrate_batch(repo, folder, target, &batch, &mut report).await?;
    }
    Ok(report)
}

async fn migrate_batch(
    repo: &LifecycleRepository,
    folder: &LocalFileStore,
    target: &ObjectFileStore,
    keys: &[String],
    report: &mut MigrationReport,
) -> Result<(), anyhow::Error> {
    let live = repo.live_files(keys).await?;
    report.not_needed += u32::try_from(keys.len() - live.len()).unwrap_or(u32::MAX);
    for file in &live {
        match migrate_file(folder, target, file).await? {
            Outcome::Moved => report.moved += 1,
            Outcome::AlreadyThere => report.already_there += 1,
            Outcome::DeletedMeanwhile => report.deleted_meanwhile += 1,
            Outcome::Mismatched => {
                tracing::warn!(
                    size = file.size_bytes,
                    "a stored file does not match its recorded digest; left in place"
                );
                report.mismatched += 1;
            }
        }
    }
    Ok(())
}

enum Outcome {
    Moved,
    AlreadyThere,
    DeletedMeanwhile,
    Mismatched,
}

async fn migrate_file(
    folder: &LocalFileStore,
    target: &ObjectFileStore,
    file: &LiveFile,
) -> Result<Outcome, StoreError> {
    let key = &file.storage_key;
    let (expected_size, expected_sha256) = match file.sealing {
        Sealing::Plaintext => (u64::try_from(file.size_bytes).unwrap_or(0), file.sha256.clone()),
        // The recorded digest is the plaintext's: an encrypted file's copy is checked against the
        // folder's bytes (whose segments every read authenticates).
        Sealing::SealedV1 => match read_back_digest(folder, key).await {
            Ok(found) => (found.size_bytes, found.sha256),
            Err(StoreError::NotFound) => return Ok(Outcome::DeletedMeanwhile),
            Err(error) => return Err(error),
        },
    };
    let outcome = match read_back_digest(target, key).await {
        Ok(found) if (found.size_bytes, &found.sha256) == (expected_size, &expected_sha256) => Outcome::AlreadyThere,
        Ok(_) | Err(StoreError::NotFound) => {
            let source = match folder.open(key).await {
                Ok(source) => source,
                Err(StoreError::NotFound) => return Ok(Outcome::DeletedMeanwhile),
                Err(error) => return Err(error),
            };
            let copied = match target.put_as(key, source.into_reader(), expected_size).await {
                Ok(copied) => copied,
                Err(StoreError::TooLarge { .. }) => return Ok(Outcome::Mismatched),
                Err(error) => return Err(error),
            };
            if copied.sha256 != expected_sha256 {
                target.delete(key).await?;
                return Ok(Outcome::Mismatched);
            }
            Outcome::Moved
        }
        Err(error) => return Err(error),
    };
    // A deletion removes the folder's copy before the store's: a source gone now means this copy
    // came after the deletion's look at the store, and must not outlive it.
    if !folder.holds_upload(key).await {
        target.delete(key).await?;
        return Ok(Outcome::DeletedMeanwhile);
    }
    folder.delete(key).await?;
    Ok(outcome)
}
