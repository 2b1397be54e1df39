//! The one retry delay: a wait that doubles after each failure, up to a cap. The outbox, the GC's
//! purge retries and deletion steps back off by it (computed here and bound as seconds), and so
//! does a sign-in after too many wrong passwords.

use std::time::Duration;

/// The wait after `failures` failures in a row: `base × 2^failures`, never more than `cap`
/// (and never overflowing: a doubling past the cap is the cap).
pub fn backoff(base: Duration, failures: u32, cap: Duration) -> Duration {
    let factor = 1u32.checked_shl(failures).unwrap_or(u32::MAX);
    base.saturating_mul(factor).min(cap)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::backoff;

    const BASE: Duration = Duration::from_secs(30);
    const CAP: Duration = Duration::from_secs(3600);

    #[test]
    fn the_first_failure_waits_the_base_and_each_further_one_doubles_it() {
        assert_eq!(backoff(BASE, 0, CAP), BASE);
        assert_eq!(backoff(BASE, 1, CAP), Duration::from_secs(60));
        assert_eq!(backoff(BASE, 6, CAP), Duration::from_secs(1920));
    }

    #[test]
    fn the_wait_stops_at_the_cap() {
        assert_eq!(backoff(BASE, 7, CAP), CAP);
        assert_eq!(backoff(BASE, 30, CAP), CAP);
    }

    #[test]
    fn a_huge_failure_count_or_base_saturates_to_the_cap_instead_of_overflowing() {
        assert_eq!(backoff(BASE, u32::MAX, CAP), CAP);
        assert_eq!(backoff(Duration::MAX, 3, CAP), CAP);
    }
}
