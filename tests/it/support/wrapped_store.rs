//! A store that forwards every call to a real one, with one hook before each call: a test that
//! holds or fails a call states only that, not the whole store.

use std::{sync::Arc, time::Duration};

use futures_util::stream::BoxStream;
use tokio::sync::Semaphore;
use watasu::storage::{
    Appended, Content, Deleted, FileStore, Leftover, OpenedFile, ResumableStore, StoreError, StoredFile, SweptStore,
    Through,
};

/// A call the wrapped store is about to forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    Put,
    Open,
    OpenRange,
    Delete,
    CreatePartial,
    AppendPartial,
    CompletePartial,
    DiscardPiece,
    DeletePartial,
    RemoveLeftover,
}

/// What a test changes about a store: runs before each forwarded call, and an error it returns is
/// the call's answer instead of the store's.
#[async_trait::async_trait]
pub trait Hook: Send + Sync {
    async fn before(&self, call: Call) -> Result<(), StoreError>;
}

/// `inner` with `hook` before every call.
pub struct Wrapped<S: ?Sized, H> {
    pub inner: Arc<S>,
    pub hook: H,
}

impl<S: ?Sized, H> Wrapped<S, H> {
    pub fn new(inner: Arc<S>, hook: H) -> Arc<Self> {
        Arc::new(Self { inner, hook })
    }
}

/// A hook that holds every call of one kind at a gate until the test opens it, so a test can keep
/// an operation in flight and see that it is there.
pub struct Gate {
    holds: Call,
    entered: Semaphore,
    gate: Semaphore,
}

impl Gate {
    pub fn new(holds: Call) -> Self {
        Self { holds, entered: Semaphore::new(0), gate: Semaphore::new(0) }
    }

    /// Waits until a call is waiting at the gate.
    pub async fn wait_entered(&self) {
        tokio::time::timeout(Duration::from_secs(30), self.entered.acquire())
            .await
            .expect("no call reached the gate")
            .unwrap()
            .forget();
    }

    /// Lets every held call, and every later one, through.
    pub fn open(&self) {
        self.gate.add_permits(1_000);
    }
}

#[async_trait::async_trait]
impl Hook for Gate {
    async fn before(&self, call: Call) -> Result<(), StoreError> {
        if call == self.holds {
            self.entered.add_permits(1);
            self.gate.acquire().await.unwrap().forget();
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl<S: FileStore + ?Sized, H: Hook> FileStore for Wrapped<S, H> {
    async fn put<'a>(&self, content: Content<'a>, max: u64) -> Result<StoredFile, StoreError> {
        self.hook.before(Call::Put).await?;
        self.inner.put(content, max).await
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        self.hook.before(Call::Open).await?;
        self.inner.open(key).await
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        self.hook.before(Call::OpenRange).await?;
        self.inner.open_range(key, start, len).await
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        self.hook.before(Call::Delete).await?;
        self.inner.delete(key).await
    }

    async fn holds(&self, key: &str) -> Result<bool, StoreError> {
        self.hook.before(Call::OpenRange).await?;
        self.inner.holds(key).await
    }
}

#[async_trait::async_trait]
impl<S: ResumableStore + ?Sized, H: Hook> ResumableStore for Wrapped<S, H> {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.hook.before(Call::CreatePartial).await?;
        self.inner.create_partial(key).await
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Content<'a>,
        max: u64,
    ) -> Result<Appended, StoreError> {
        self.hook.before(Call::AppendPartial).await?;
        self.inner.append_partial(key, offset, content, max).await
    }

    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError> {
        self.hook.before(Call::CompletePartial).await?;
        self.inner.complete_partial(key, pieces).await
    }

    async fn complete_partial_through(
        &self,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        self.hook.before(Call::CompletePartial).await?;
        self.inner.complete_partial_through(key, pieces, through).await
    }

    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError> {
        self.hook.before(Call::DiscardPiece).await?;
        self.inner.discard_piece(key, piece).await
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        self.hook.before(Call::DeletePartial).await?;
        self.inner.delete_partial(key).await
    }
}

#[async_trait::async_trait]
impl<S: SweptStore + ?Sized, H: Hook> SweptStore for Wrapped<S, H> {
    /// Listing is a stream, not a call a test holds: it is forwarded as it is.
    fn leftovers(&self) -> BoxStream<'_, Result<Leftover, StoreError>> {
        self.inner.leftovers()
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        self.hook.before(Call::RemoveLeftover).await?;
        self.inner.remove_leftover(leftover).await
    }
}
