//! The memory uploads into the object store may hold in part buffers, one budget for the whole
//! process. A part is read from its client only once its buffer fits in the budget, so a crowd of
//! uploads waits for buffers (TCP holds their bytes back) instead of growing the process past it.
//! Nobody is refused, and nothing deadlocks: a part in flight needs no more of the budget to be
//! sent, and gives its share back when it has been.

use bytes::Bytes;
use tokio::sync::{Semaphore, SemaphorePermit};

/// The budget: sixteen parts of 8 MiB (five form uploads at full speed, or eight tus PATCHes).
pub const BUDGET_BYTES: usize = 128 << 20;
/// The budget is counted in units of this many bytes.
const UNIT: usize = 1 << 20;
static BUDGET: Semaphore = Semaphore::const_new(BUDGET_BYTES / UNIT);

/// A zeroed buffer for one part, counted against the budget until its part has been sent.
pub struct PartBuffer {
    bytes: Vec<u8>,
    share: SemaphorePermit<'static>,
}

impl PartBuffer {
    /// Waits until `len` bytes fit in the budget (a part larger than the whole budget waits for
    /// all of it), then allocates them.
    pub async fn new(len: usize) -> Self {
        let units = len.div_ceil(UNIT).clamp(1, BUDGET_BYTES / UNIT);
        let share = BUDGET.acquire_many(units as u32).await.expect("the part budget is never closed");
        Self { bytes: vec![0; len], share }
    }

    /// The first `filled` bytes as a part to send; the budget's share goes with it.
    pub fn into_part(mut self, filled: usize) -> Part {
        self.bytes.truncate(filled);
        Part { bytes: Bytes::from(self.bytes), _share: self.share }
    }
}

impl std::ops::Deref for PartBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::ops::DerefMut for PartBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.bytes
    }
}

/// A filled part on its way to the store; dropping it (sent, or given up) returns its share.
pub struct Part {
    pub bytes: Bytes,
    _share: SemaphorePermit<'static>,
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn a_part_waits_while_the_budget_is_spent_and_goes_on_once_a_part_was_sent() {
        let all = PartBuffer::new(BUDGET_BYTES).await;
        let mut waiting = tokio::spawn(PartBuffer::new(UNIT));
        // The waiter cannot have finished while the whole budget is held (no fixed sleep is
        // needed for that: it is checked after a yield, then released and awaited).
        tokio::task::yield_now().await;
        assert!(tokio::time::timeout(Duration::ZERO, &mut waiting).await.is_err(), "a part outgrew the budget");
        drop(all.into_part(BUDGET_BYTES));
        assert_eq!(waiting.await.unwrap().len(), UNIT);
    }

    #[tokio::test]
    async fn a_part_larger_than_the_budget_takes_the_whole_budget_rather_than_waiting_forever() {
        assert_eq!(PartBuffer::new(BUDGET_BYTES + UNIT).await.len(), BUDGET_BYTES + UNIT);
    }
}
