//! One writer per upload in this process. A PATCH that finds another one writing (usually the
//! same client retrying after its connection silently died) asks that one to stop — it keeps
//! the bytes it has and lets go — and waits for it a while. Across processes the conditional
//! offset update is what keeps two writers from both advancing an upload.

use std::{
    collections::HashMap,
    future::Future,
    io,
    pin::Pin,
    sync::{Arc, Mutex},
    task::{Context, Poll},
    time::Duration,
};

use tokio::{
    io::{AsyncRead, ReadBuf},
    sync::{Notify, OwnedMutexGuard},
};

#[derive(Clone, Default)]
pub struct WriteLocks {
    slots: Arc<Mutex<HashMap<i64, Arc<Slot>>>>,
}

#[derive(Default)]
struct Slot {
    write: Arc<tokio::sync::Mutex<()>>,
    /// How to ask the current writer to stop.
    stop: Mutex<Option<Arc<Notify>>>,
}

/// The right to write one upload, until dropped.
pub struct WriteGuard {
    id: i64,
    slot: Arc<Slot>,
    locks: WriteLocks,
    stop: Arc<Notify>,
    _held: OwnedMutexGuard<()>,
}

impl WriteLocks {
    /// Takes the upload's write lock, asking a current writer to stop first; `None` when it has
    /// not let go within `patience`.
    pub async fn acquire(&self, id: i64, patience: Duration) -> Option<WriteGuard> {
        let slot = self.slots.lock().expect("lock map").entry(id).or_default().clone();
        let held = match slot.write.clone().try_lock_owned() {
            Ok(held) => held,
            Err(_) => {
                if let Some(stop) = slot.stop.lock().expect("stop handle").as_ref() {
                    // A stored permit: the writer sees it even if it is not waiting right now.
                    stop.notify_one();
                }
                tokio::time::timeout(patience, slot.write.clone().lock_owned()).await.ok()?
            }
        };
        // A fresh handle per writer, so a request meant for the last one never stops this one.
        let stop = Arc::new(Notify::new());
        *slot.stop.lock().expect("stop handle") = Some(stop.clone());
        Some(WriteGuard { id, slot, locks: self.clone(), stop, _held: held })
    }
}

impl WriteGuard {
    /// `content`, ending in an `Interrupted` error once another writer asks this one to stop.
    pub fn stoppable<'a>(&self, content: Pin<Box<dyn AsyncRead + Send + 'a>>) -> Stoppable<'a> {
        Stoppable { inner: content, stop: Box::pin(self.stop.clone().notified_owned()) }
    }
}

impl Drop for WriteGuard {
    fn drop(&mut self) {
        *self.slot.stop.lock().expect("stop handle") = None;
        let mut slots = self.locks.slots.lock().expect("lock map");
        // Only the map and this guard know the slot: nobody waits, so it can go.
        if Arc::strong_count(&self.slot) <= 2 {
            slots.remove(&self.id);
        }
    }
}

pub struct Stoppable<'a> {
    inner: Pin<Box<dyn AsyncRead + Send + 'a>>,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
}

impl AsyncRead for Stoppable<'_> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        if self.stop.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::Interrupted,
                "another request took over the upload",
            )));
        }
        self.inner.as_mut().poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    #[tokio::test]
    async fn a_second_writer_stops_the_first_and_takes_over() {
        let locks = WriteLocks::default();
        let first = locks.acquire(1, Duration::from_secs(5)).await.unwrap();
        // A body that never ends, like a dead connection.
        let (_client, server) = tokio::io::duplex(64);
        let mut reading = first.stoppable(Box::pin(server));
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 8];
            let error = reading.read(&mut buf).await.unwrap_err();
            drop(first);
            error.kind()
        });
        let second = locks.acquire(1, Duration::from_secs(5)).await;
        assert!(second.is_some());
        assert_eq!(reader.await.unwrap(), io::ErrorKind::Interrupted);
    }

    #[tokio::test]
    async fn a_writer_that_does_not_let_go_leaves_the_next_one_waiting_in_vain() {
        let locks = WriteLocks::default();
        let _first = locks.acquire(1, Duration::from_secs(5)).await.unwrap();
        assert!(locks.acquire(1, Duration::from_millis(50)).await.is_none());
        assert!(locks.acquire(2, Duration::from_millis(50)).await.is_some(), "other uploads are not held up");
    }
}
