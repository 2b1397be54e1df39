//! What the local store lists to the leftover sweep: its one folder, walked entry by entry.
//! Ages are judged by the clock that stamped the mtimes: this host's kernel stamps the files with
//! the very clock `SystemTime` reads, and no database row holds these times, so the database's
//! clock would be the odd one out. (A network mount stamps with its server's clock; a store there
//! would need a probe file's mtime instead.)

use std::{
    io,
    time::{Duration, SystemTime},
};

use futures_util::stream::{self, BoxStream};
use tokio::fs::{DirEntry, ReadDir};

use super::{
    leftovers::{Leftover, LeftoverKind, not_kept_here},
    store::{Deleted, FileStore, LocalFileStore, PARTIAL_PREFIX, ResumableStore, StoreError, SweptStore, TEMP_PREFIX},
};

/// Where a walk of the folder is.
enum Walk {
    Start,
    Reading(ReadDir),
    Done,
}

impl LocalFileStore {
    /// Removes a temp file by its name, which must be one (no path can be built from it).
    async fn delete_temp(&self, name: &str) -> Result<Deleted, StoreError> {
        let is_temp_name = name.starts_with(TEMP_PREFIX) && !name.contains(['/', '\\']) && name != TEMP_PREFIX;
        if !is_temp_name {
            return Err(StoreError::NotFound);
        }
        match tokio::fs::remove_file(self.dir.join(name)).await {
            Ok(()) => Ok(Deleted::Removed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Deleted::AlreadyAbsent),
            Err(e) => Err(e.into()),
        }
    }
}

#[async_trait::async_trait]
impl SweptStore for LocalFileStore {
    /// Temp files, stored files and partial files, in the folder's order.
    fn leftovers(&self) -> BoxStream<'_, Result<Leftover, StoreError>> {
        let now = SystemTime::now();
        Box::pin(stream::unfold(Walk::Start, move |walk| async move {
            let mut entries = match walk {
                Walk::Start => match tokio::fs::read_dir(&self.dir).await {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
                    Err(e) => return Some((Err(e.into()), Walk::Done)),
                },
                Walk::Reading(entries) => entries,
                Walk::Done => return None,
            };
            loop {
                match entries.next_entry().await {
                    Ok(Some(entry)) => {
                        if let Some(leftover) = leftover_of(&entry, now).await {
                            return Some((Ok(leftover), Walk::Reading(entries)));
                        }
                    }
                    Ok(None) => return None,
                    Err(e) => return Some((Err(e.into()), Walk::Done)),
                }
            }
        }))
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        match leftover.kind {
            LeftoverKind::Stored => self.delete(&leftover.name).await,
            LeftoverKind::Partial => self.delete_partial(&leftover.name).await,
            LeftoverKind::Temp => self.delete_temp(&leftover.name).await,
            LeftoverKind::Multipart => Err(not_kept_here(leftover.kind)),
        }
    }
}

/// The entry as a leftover, or `None` for anything that is not ours.
async fn leftover_of(entry: &DirEntry, now: SystemTime) -> Option<Leftover> {
    let name = entry.file_name().to_string_lossy().into_owned();
    let (kind, name) = if name.starts_with(TEMP_PREFIX) {
        (LeftoverKind::Temp, name)
    } else if let Some(key) = name.strip_prefix(PARTIAL_PREFIX) {
        (LeftoverKind::Partial, key.to_owned())
    } else {
        (LeftoverKind::Stored, name)
    };
    if kind != LeftoverKind::Temp && !crate::session::is_token_shaped(&name) {
        return None;
    }
    // No mtime (or one in the future) reads as new: kept until it can be judged.
    let age = entry
        .metadata()
        .await
        .ok()
        .and_then(|m| m.modified().ok())
        .and_then(|modified| now.duration_since(modified).ok())
        .unwrap_or(Duration::ZERO);
    Some(Leftover { kind, name, age })
}
