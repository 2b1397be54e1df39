//! Seed 000's FakeFileBin as a `FileStore`: an in-memory set of present keys, and a set of keys
//! whose delete fails on demand. A delete fails only when the key is failing AND present (the file
//! stays); otherwise it removes the key and succeeds, already absent included.

use std::{
    collections::{HashMap, HashSet},
    io,
    sync::{Mutex, MutexGuard},
};

use futures_util::stream::BoxStream;
use tokio::io::AsyncReadExt;
use watasu::storage::{
    Appended, Content, Deleted, Digester, FileStore, Leftover, LeftoverKind, OpenedFile, ResumableStore, StoreError,
    StoredFile, SweptStore, Through,
};

#[derive(Debug, Default)]
pub struct FakeFileStore {
    present: Mutex<HashSet<String>>,
    failing: Mutex<HashSet<String>>,
    /// Partial files of resumable uploads, with their bytes.
    partials: Mutex<HashMap<String, Vec<u8>>>,
}

impl FakeFileStore {
    pub fn new() -> Self {
        Self::default()
    }

    fn present(&self) -> MutexGuard<'_, HashSet<String>> {
        self.present.lock().unwrap()
    }

    fn failing(&self) -> MutexGuard<'_, HashSet<String>> {
        self.failing.lock().unwrap()
    }

    /// Puts a file under `key`.
    pub fn place(&self, key: &str) {
        self.present().insert(key.to_owned());
    }

    /// Makes every delete of `key` fail while the file is there.
    pub fn fail_on(&self, key: &str) {
        self.failing().insert(key.to_owned());
    }

    pub fn clear_failure(&self, key: &str) {
        self.failing().remove(key);
    }

    pub fn exists(&self, key: &str) -> bool {
        self.present().contains(key)
    }

    fn partials(&self) -> MutexGuard<'_, HashMap<String, Vec<u8>>> {
        self.partials.lock().unwrap()
    }
}

#[async_trait::async_trait]
impl FileStore for FakeFileStore {
    async fn put<'a>(&self, mut content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        let mut bytes = Vec::new();
        content.read_to_end(&mut bytes).await?;
        if bytes.len() as u64 > max_bytes {
            return Err(StoreError::TooLarge { limit: max_bytes });
        }
        let key = watasu::secret::random_token().expose().to_owned();
        self.place(&key);
        Ok(digested(key, &bytes))
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        if !self.exists(key) {
            return Err(StoreError::NotFound);
        }
        Ok(OpenedFile::empty(0))
    }

    async fn open_range(&self, key: &str, _start: u64, _len: u64) -> Result<OpenedFile, StoreError> {
        self.open(key).await
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        let mut present = self.present();
        if self.failing().contains(key) && present.contains(key) {
            return Err(StoreError::Io(io::Error::other("the fake store was told to fail")));
        }
        Ok(if present.remove(key) { Deleted::Removed } else { Deleted::AlreadyAbsent })
    }
}

#[async_trait::async_trait]
impl ResumableStore for FakeFileStore {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.partials().insert(key.to_owned(), Vec::new());
        Ok(())
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        mut content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError> {
        let mut arrived = Vec::new();
        let cut = content.read_to_end(&mut arrived).await.err();
        if arrived.len() as u64 > max_bytes {
            return Err(StoreError::TooLarge { limit: max_bytes });
        }
        let mut partials = self.partials();
        let bytes = partials.get_mut(key).ok_or(StoreError::NotFound)?;
        bytes.truncate(offset as usize);
        bytes.extend_from_slice(&arrived);
        Ok(Appended { written: arrived.len() as u64, cut, piece: None })
    }

    async fn complete_partial(&self, key: &str, _pieces: &[String]) -> Result<StoredFile, StoreError> {
        let bytes = self.partials().remove(key).ok_or(StoreError::NotFound)?;
        self.place(key);
        Ok(digested(key, &bytes))
    }

    async fn complete_partial_through(
        &self,
        key: &str,
        _pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        let Some(bytes) = self.partials().remove(key) else { return Ok(false) };
        let mut stored = Vec::new();
        through(Box::pin(io::Cursor::new(bytes))).read_to_end(&mut stored).await?;
        self.place(key);
        Ok(true)
    }

    /// Appends go to one buffer per upload: there are no pieces.
    async fn discard_piece(&self, _key: &str, _piece: &str) -> Result<(), StoreError> {
        Ok(())
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        Ok(if self.partials().remove(key).is_some() { Deleted::Removed } else { Deleted::AlreadyAbsent })
    }
}

#[async_trait::async_trait]
impl SweptStore for FakeFileStore {
    /// The fake store keeps no times, so nothing it holds is ever old enough to be a leftover.
    fn leftovers(&self) -> BoxStream<'_, Result<Leftover, StoreError>> {
        Box::pin(futures_util::stream::empty())
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        match leftover.kind {
            LeftoverKind::Stored => self.delete(&leftover.name).await,
            LeftoverKind::Partial => self.delete_partial(&leftover.name).await,
            LeftoverKind::Temp | LeftoverKind::Multipart => Ok(Deleted::AlreadyAbsent),
        }
    }
}

fn digested(key: impl Into<String>, bytes: &[u8]) -> StoredFile {
    let mut digester = Digester::default();
    digester.update(bytes);
    digester.stored(key)
}
