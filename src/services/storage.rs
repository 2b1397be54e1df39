//! Moving the stored files of the data folder into the object store (`watasu storage migrate`),
//! while the server keeps serving them.

use std::path::PathBuf;

use super::Parts;
use crate::{
    lifecycle::LifecycleRepository,
    storage::{LocalFileStore, ObjectFileStore, migrate::MigrationReport},
};

#[derive(Clone)]
pub struct FileMoves {
    lifecycle: LifecycleRepository,
    folder: PathBuf,
}

impl FileMoves {
    pub fn new(parts: &Parts) -> Self {
        Self { lifecycle: parts.lifecycle(), folder: parts.config.settings.data_dir.join("files") }
    }

    /// Moves every file the database still needs from the data folder into `target`.
    pub async fn folder_into(&self, target: &ObjectFileStore) -> anyhow::Result<MigrationReport> {
        let folder = LocalFileStore::new(&self.folder)?;
        crate::storage::migrate::migrate_folder(&self.lifecycle, &folder, target).await
    }
}
