//! The store while files move from the local folder into object storage (`watasu storage
//! migrate`): new files go to the object store, files not moved yet are still read from the
//! folder, and a deletion removes both copies, so a file is never lost, served twice from two
//! places, or left behind after its deletion was reported.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::{StreamExt, stream::BoxStream};

use super::{
    leftovers::{Leftover, LeftoverKind},
    store::{
        Appended, Content, Deleted, FileStore, LocalFileStore, OpenedFile, ResumableStore, StoreError, StoredFile,
        SweptStore, Through,
    },
};

pub struct FallbackStore {
    primary: Arc<dyn SweptStore>,
    legacy: LocalFileStore,
}

impl FallbackStore {
    pub fn new(primary: Arc<dyn SweptStore>, legacy: LocalFileStore) -> Self {
        Self { primary, legacy }
    }

    /// An upload begun in the folder before the switch keeps its bytes there until it completes
    /// (and completing again after a crash finds its file there too).
    async fn partial_store(&self, key: &str) -> &dyn ResumableStore {
        if self.legacy.holds_upload(key).await { &self.legacy } else { self.primary.as_ref() }
    }
}

/// Either copy's removal is a removal; only both absent is "already absent".
fn either(first: Deleted, second: Deleted) -> Deleted {
    if first == Deleted::Removed || second == Deleted::Removed { Deleted::Removed } else { Deleted::AlreadyAbsent }
}

#[async_trait::async_trait]
impl FileStore for FallbackStore {
    async fn put<'a>(&self, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        self.primary.put(content, max_bytes).await
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        match self.primary.open(key).await {
            Err(StoreError::NotFound) => self.legacy.open(key).await,
            other => other,
        }
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        match self.primary.open_range(key, start, len).await {
            Err(StoreError::NotFound) => self.legacy.open_range(key, start, len).await,
            other => other,
        }
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        // The folder first: a migration copying this file meanwhile sees its source gone and
        // removes the copy it made; one that finished before has its copy removed next.
        let legacy = self.legacy.delete(key).await?;
        Ok(either(legacy, self.primary.delete(key).await?))
    }
}

#[async_trait::async_trait]
impl ResumableStore for FallbackStore {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.primary.create_partial(key).await
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError> {
        self.partial_store(key).await.append_partial(key, offset, content, max_bytes).await
    }

    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError> {
        self.partial_store(key).await.complete_partial(key, pieces).await
    }

    async fn complete_partial_through(
        &self,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        self.partial_store(key).await.complete_partial_through(key, pieces, through).await
    }

    /// New uploads go to the object store, their parts too.
    async fn begin_parts(&self, key: &str) -> Result<Option<String>, StoreError> {
        self.primary.begin_parts(key).await
    }

    async fn put_part(&self, key: &str, id: &str, index: usize, bytes: Bytes) -> Result<String, StoreError> {
        self.primary.put_part(key, id, index, bytes).await
    }

    async fn read_pieces(&self, key: &str, from: u64, pieces: &[String], into: &mut [u8]) -> Result<(), StoreError> {
        self.primary.read_pieces(key, from, pieces, into).await
    }

    async fn complete_parts(&self, key: &str, id: &str, parts: Vec<String>) -> Result<(), StoreError> {
        self.primary.complete_parts(key, id, parts).await
    }

    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError> {
        self.primary.discard_piece(key, piece).await
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        let legacy = self.legacy.delete_partial(key).await?;
        Ok(either(legacy, self.primary.delete_partial(key).await?))
    }
}

#[async_trait::async_trait]
impl SweptStore for FallbackStore {
    /// Both stores' leftovers: the folder's are the ones the migration did not need.
    fn leftovers(&self) -> BoxStream<'_, Result<Leftover, StoreError>> {
        self.primary.leftovers().chain(self.legacy.leftovers()).boxed()
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        match leftover.kind {
            // A key no row names is a leftover wherever a copy of it is.
            LeftoverKind::Stored => self.delete(&leftover.name).await,
            LeftoverKind::Partial => self.delete_partial(&leftover.name).await,
            LeftoverKind::Temp => self.legacy.remove_leftover(leftover).await,
            LeftoverKind::Multipart => self.primary.remove_leftover(leftover).await,
        }
    }
}
