//! The memory uploads into the object store may hold in part buffers, one budget for the whole
//! process. A part is read from its client only once its buffer fits in the budget, so a crowd of
//! uploads waits for buffers (TCP holds their bytes back) instead of growing the process past it.
//! Nobody is refused, and nothing deadlocks: a part in flight needs no more of the budget to be
//! sent, and gives its share back when it has been. A share is held while its part fills, so a
//! few clients trickling their bytes could hold the whole budget: a part waits for it at most
//! `LONGEST_WAIT`, then is read all the same, beyond it.

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{Semaphore, SemaphorePermit};

/// The budget: sixteen parts of 8 MiB (five form uploads at full speed, or eight tus PATCHes).
pub const BUDGET_BYTES: usize = 128 << 20;
/// The budget is counted in units of this many bytes.
const UNIT: usize = 1 << 20;
static BUDGET: Semaphore = Semaphore::const_new(BUDGET_BYTES / UNIT);
/// How long a part waits for its share before it goes beyond the budget.
pub const LONGEST_WAIT: Duration = Duration::from_secs(10);

/// A zeroed buffer for one part, counted against the budget (unless it waited past
/// `LONGEST_WAIT`) until its part has been sent.
pub struct PartBuffer {
    bytes: Vec<u8>,
    share: Option<SemaphorePermit<'static>>,
}

impl PartBuffer {
    /// Waits until `len` bytes fit in the budget (a part larger than the whole budget waits for
    /// all of it), at most `LONGEST_WAIT`, then allocates them.
    pub async fn new(len: usize) -> Self {
        Self::from_budget(&BUDGET, len, LONGEST_WAIT).await
    }

    async fn from_budget(budget: &'static Semaphore, len: usize, longest_wait: Duration) -> Self {
        let units = len.div_ceil(UNIT).clamp(1, BUDGET_BYTES / UNIT);
        let share = match tokio::time::timeout(longest_wait, budget.acquire_many(units as u32)).await {
            Ok(share) => Some(share.expect("the part budget is never closed")),
            Err(_) => {
                tracing::warn!(bytes = len, "the part budget stayed spent; reading a part beyond it");
                None
            }
        };
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
    _share: Option<SemaphorePermit<'static>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A budget of the same size for each test, so that tests running at once do not share one.
    macro_rules! budget {
        () => {{
            static BUDGET: Semaphore = Semaphore::const_new(BUDGET_BYTES / UNIT);
            &BUDGET
        }};
    }

    #[tokio::test]
    async fn a_part_waits_while_the_budget_is_spent_and_goes_on_once_a_part_was_sent() {
        let budget = budget!();
        let all = PartBuffer::from_budget(budget, BUDGET_BYTES, Duration::from_secs(3600)).await;
        let mut waiting = tokio::spawn(PartBuffer::from_budget(budget, UNIT, Duration::from_secs(3600)));
        // The waiter cannot have finished while the whole budget is held; checked at once.
        tokio::task::yield_now().await;
        assert!(tokio::time::timeout(Duration::ZERO, &mut waiting).await.is_err(), "a part outgrew the budget");
        drop(all.into_part(BUDGET_BYTES));
        let went_on = waiting.await.unwrap();
        assert_eq!(went_on.len(), UNIT);
        assert!(went_on.share.is_some(), "it went beyond the budget instead of taking the freed share");
    }

    #[tokio::test]
    async fn a_part_that_waited_too_long_is_read_beyond_the_budget_so_tricklers_stall_nobody() {
        let budget = budget!();
        let all = PartBuffer::from_budget(budget, BUDGET_BYTES, LONGEST_WAIT).await;
        let wait = Duration::from_millis(20);
        let started = std::time::Instant::now();
        let beyond = PartBuffer::from_budget(budget, UNIT, wait).await;
        assert!(started.elapsed() >= wait, "it went ahead before the wait was over");
        assert!(beyond.share.is_none() && all.share.is_some());
    }

    #[tokio::test]
    async fn a_part_larger_than_the_budget_takes_the_whole_budget_rather_than_waiting_forever() {
        let part = PartBuffer::from_budget(budget!(), BUDGET_BYTES + UNIT, LONGEST_WAIT).await;
        assert_eq!(part.len(), BUDGET_BYTES + UNIT);
        assert!(part.share.is_some());
    }
}
