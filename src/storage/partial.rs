//! Partial files of resumable uploads in the local store: `.part-<key>` beside the stored files,
//! owner-only, appended at the offset the database holds and synced before that offset moves;
//! renamed to `<key>` once complete.

use std::{
    io::{self, SeekFrom},
    path::PathBuf,
};

use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt};

use super::store::{
    Appended, CHUNK, Content, Deleted, LocalFileStore, PARTIAL_PREFIX, ResumableStore, StoreError, StoredFile,
    TEMP_PREFIX, Through, read_back_digest,
};
use crate::secret::random_token;

impl LocalFileStore {
    fn partial_path(&self, key: &str) -> Result<PathBuf, StoreError> {
        let stored = self.path_of(key).ok_or(StoreError::NotFound)?;
        Ok(stored.with_file_name(format!("{PARTIAL_PREFIX}{key}")))
    }

    /// Whether an upload under `key` has its partial or completed file in this folder.
    pub async fn holds_upload(&self, key: &str) -> bool {
        let (Ok(partial), Some(stored)) = (self.partial_path(key), self.path_of(key)) else { return false };
        tokio::fs::try_exists(partial).await.unwrap_or(false) || tokio::fs::try_exists(stored).await.unwrap_or(false)
    }

    /// A create or rename is durable only once the folder itself is synced.
    async fn sync_dir(&self) -> Result<(), StoreError> {
        tokio::fs::File::open(&self.dir).await?.sync_all().await?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl ResumableStore for LocalFileStore {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        let path = self.partial_path(key)?;
        let file = tokio::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&path).await?;
        file.sync_all().await?;
        self.sync_dir().await
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError> {
        let path = self.partial_path(key)?;
        let mut file = match tokio::fs::OpenOptions::new().write(true).open(&path).await {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(StoreError::NotFound),
            Err(e) => return Err(e.into()),
        };
        if file.metadata().await?.len() < offset {
            return Err(StoreError::Io(io::Error::other("the partial file is shorter than its stored offset")));
        }
        // Bytes past the stored offset were never acknowledged (a killed process, a refused
        // checksum): they are not trusted.
        file.set_len(offset).await?;
        file.seek(SeekFrom::Start(offset)).await?;
        let mut content = content.take(max_bytes.saturating_add(1));
        let mut buffer = vec![0u8; CHUNK];
        let mut written: u64 = 0;
        let mut cut = None;
        loop {
            let read = match content.read(&mut buffer).await {
                Ok(0) => break,
                Ok(read) => read,
                Err(error) => {
                    cut = Some(error);
                    break;
                }
            };
            if written + read as u64 > max_bytes {
                file.set_len(offset).await?;
                return Err(StoreError::TooLarge { limit: max_bytes });
            }
            file.write_all(&buffer[..read]).await?;
            written += read as u64;
        }
        file.flush().await?;
        file.sync_data().await?;
        Ok(Appended { written, cut, piece: None })
    }

    async fn complete_partial(&self, key: &str, _pieces: &[String]) -> Result<StoredFile, StoreError> {
        let partial = self.partial_path(key)?;
        let stored = self.path_of(key).ok_or(StoreError::NotFound)?;
        match tokio::fs::File::open(&partial).await {
            Ok(file) => {
                file.sync_all().await?;
                tokio::fs::rename(&partial, &stored).await?;
                self.sync_dir().await?;
            }
            // Completed before (a crash between the rename and the database): digest it again.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        read_back_digest(self, key).await
    }

    /// Written beside the stored files as any file is (a temp file, synced, renamed into place),
    /// then the partial file removed: a crash in between leaves both, and completing again finds
    /// the stored file and removes the partial one.
    async fn complete_partial_through(
        &self,
        key: &str,
        _pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        let partial = self.partial_path(key)?;
        let stored = self.path_of(key).ok_or(StoreError::NotFound)?;
        if tokio::fs::try_exists(&stored).await? {
            self.delete_partial(key).await?;
            return Ok(false);
        }
        let file = match tokio::fs::File::open(&partial).await {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        let temp = self.dir.join(format!("{TEMP_PREFIX}{}", random_token().expose()));
        if let Err(error) = self.write_temp(&temp, through(Box::pin(file)), u64::MAX).await {
            let _ = tokio::fs::remove_file(&temp).await;
            // The partial file's own read failing is the store's failure, not a sender's.
            return Err(match error {
                StoreError::Content(io) => StoreError::Io(io),
                other => other,
            });
        }
        tokio::fs::rename(&temp, &stored).await?;
        self.sync_dir().await?;
        self.delete_partial(key).await?;
        self.sync_dir().await?;
        Ok(true)
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        match tokio::fs::remove_file(self.partial_path(key)?).await {
            Ok(()) => Ok(Deleted::Removed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Deleted::AlreadyAbsent),
            Err(e) => Err(e.into()),
        }
    }

    /// The partial file is one file appended in place: there are no pieces to discard.
    async fn discard_piece(&self, _key: &str, _piece: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const KEY: &str = "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12";

    fn reader(bytes: &'static [u8]) -> Content<'static> {
        Box::pin(bytes)
    }

    #[tokio::test]
    async fn appends_at_the_stored_offset_drop_untrusted_bytes_and_complete_to_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new(dir.path()).unwrap();
        store.create_partial(KEY).await.unwrap();
        let partial = dir.path().join(format!(".part-{KEY}"));
        assert_eq!(std::fs::metadata(&partial).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(store.append_partial(KEY, 0, reader(b"hel"), 5).await.unwrap().written, 3);
        // A killed process left bytes past the stored offset 3: they are cut before appending.
        std::fs::write(&partial, b"helXXXX").unwrap();
        assert_eq!(store.append_partial(KEY, 3, reader(b"lo"), 2).await.unwrap().written, 2);
        let stored = store.complete_partial(KEY, &[]).await.unwrap();
        assert_eq!(stored.size_bytes, 5);
        assert_eq!(stored.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert!(!partial.exists());
        assert_eq!(std::fs::read(dir.path().join(KEY)).unwrap(), b"hello");
        assert_eq!(store.complete_partial(KEY, &[]).await.unwrap(), stored, "completing again digests again");
    }

    #[tokio::test]
    async fn completing_through_writes_what_passed_through_and_leaves_no_partial_or_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new(dir.path()).unwrap();
        store.create_partial(KEY).await.unwrap();
        store.append_partial(KEY, 0, reader(b"hello"), 5).await.unwrap();
        let shout: Through = Box::new(|plain| {
            Box::pin(tokio_util::io::StreamReader::new(futures_util::StreamExt::map(
                tokio_util::io::ReaderStream::new(plain),
                |chunk| chunk.map(|bytes| bytes::Bytes::from(bytes.to_ascii_uppercase())),
            )))
        });
        assert!(store.complete_partial_through(KEY, &[], shout).await.unwrap());
        assert_eq!(std::fs::read(dir.path().join(KEY)).unwrap(), b"HELLO");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, [KEY], "no partial or temp file is left");
        // Completed before (a crash after the join): nothing to join, the stored file stays.
        assert!(!store.complete_partial_through(KEY, &[], Box::new(|plain| plain)).await.unwrap());
        assert_eq!(std::fs::read(dir.path().join(KEY)).unwrap(), b"HELLO");
    }

    #[tokio::test]
    async fn an_append_over_its_cap_is_refused_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = LocalFileStore::new(dir.path()).unwrap();
        store.create_partial(KEY).await.unwrap();
        store.append_partial(KEY, 0, reader(b"ab"), 10).await.unwrap();
        let error = store.append_partial(KEY, 2, reader(b"cdef"), 3).await.unwrap_err();
        assert!(matches!(error, StoreError::TooLarge { limit: 3 }));
        assert_eq!(std::fs::read(dir.path().join(format!(".part-{KEY}"))).unwrap(), b"ab");
        assert_eq!(store.delete_partial(KEY).await.unwrap(), Deleted::Removed);
        assert_eq!(store.delete_partial(KEY).await.unwrap(), Deleted::AlreadyAbsent);
        assert!(matches!(store.delete_partial("../x").await, Err(StoreError::NotFound)));
    }
}
