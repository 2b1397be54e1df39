//! What the allocator keeps: big blocks go back to the system when freed, and the arenas' free
//! pages go back every few seconds, so that RSS after a burst of work falls back towards idle.

use std::{future::Future, time::Duration};

/// How often the arenas' free pages are handed back.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(10);

/// Hands big allocations back to the system when they are freed. glibc raises its mmap
/// threshold each time an mmapped block is freed, so after the first sign-in every argon2 buffer
/// (19 MiB) comes from a thread's arena and stays there: one per blocking thread, hundreds of MiB
/// after a burst of sign-ins (docs/decisions/). A fixed threshold turns that raising off;
/// 4 MiB keeps smaller buffers (request bodies, upload chunks) in the arenas, where they are reused.
pub fn return_big_allocations() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes a setting of the allocator, before any thread is started.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 4 << 20);
    }
}

/// Every `interval` until `stopped`, hands the free pages of every arena back to the system.
/// glibc trims only the top of the main arena by itself; what a burst freed in the other threads'
/// arenas (an upload's buffers, many request bodies) would otherwise stay resident.
pub async fn trim_free_pages(interval: Duration, stopped: impl Future<Output = ()>) {
    #[cfg(target_env = "gnu")]
    {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                () = &mut stopped => return,
                _ = ticks.tick() => {
                    // SAFETY: malloc_trim only releases memory no allocation is using.
                    let _ = tokio::task::spawn_blocking(|| unsafe { libc::malloc_trim(0) }).await;
                }
            }
        }
    }
    #[cfg(not(target_env = "gnu"))]
    stopped.await;
}
