//! The floor under a request body's rate: a body must average at least `WATASU_MIN_BODY_RATE`
//! bytes per second of the time the app waits for it. It may fall behind by one window's worth
//! (the floor times `WATASU_MIN_BODY_RATE_WINDOW`) and bank at most as much ahead; past that
//! debt it is cut. A trickler (a byte every ten seconds) is cut one window after it starts, and
//! holding a connection costs it the floor's bandwidth for as long as it holds it; a phone on a
//! bad link, which sends in bursts between stalls, keeps up: a stall of up to one window at the
//! start, and of up to two after it has sent a window's worth, is not cut.
//!
//! Only waiting counts: the clock runs from a poll the client leaves unanswered to the bytes that
//! answer it, so time the app spends between reads (writing to disk, a slow object store) never
//! counts against the client. Times are passed in, so the rule is tested without a clock.

use std::time::Duration;

use tokio::time::Instant;

/// The floor, from the settings.
#[derive(Clone, Copy, Debug)]
pub struct MinRate {
    /// Bytes per second a body must average; 0 turns the floor off.
    pub bytes_per_second: u64,
    /// How long a body may fall behind the floor, and how long it may bank ahead.
    pub window: Duration,
}

impl MinRate {
    /// The rule for one body, or `None` when the floor is off.
    pub fn floor(self) -> Option<RateFloor> {
        if self.bytes_per_second == 0 || self.window.is_zero() {
            return None;
        }
        let floor = self.bytes_per_second as f64;
        Some(RateFloor { floor, limit: floor * self.window.as_secs_f64(), balance: 0.0, waiting_since: None })
    }
}

/// One body's account: bytes received minus bytes owed at the floor for the time waited.
#[derive(Debug)]
pub struct RateFloor {
    /// Bytes owed per second of waiting.
    floor: f64,
    /// The most a body may be behind, and the most it may bank ahead (a window at the floor).
    limit: f64,
    /// Received minus owed, in bytes: at most `limit`; at `-limit` the body is cut.
    balance: f64,
    /// Since when the body waits for the client, if it does.
    waiting_since: Option<Instant>,
}

impl RateFloor {
    /// The body waits for its client from `now` (or from earlier, when it already did): answers
    /// the instant at which, with nothing more arriving, it falls a whole window behind.
    pub fn waiting(&mut self, now: Instant) -> Instant {
        let since = *self.waiting_since.get_or_insert(now);
        let left = ((self.balance + self.limit) / self.floor).max(0.0);
        since + Duration::from_secs_f64(left)
    }

    /// `bytes` arrived at `now`: the wait until then is owed, the bytes are paid in (banking at
    /// most a window's worth). Answers false when the body is a whole window behind the floor.
    pub fn arrived(&mut self, now: Instant, bytes: u64) -> bool {
        if let Some(since) = self.waiting_since.take() {
            self.balance -= self.floor * now.saturating_duration_since(since).as_secs_f64();
        }
        self.balance = (self.balance + bytes as f64).min(self.limit);
        self.balance > -self.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    /// The defaults: 2 KiB/s over 30 s.
    fn defaults() -> RateFloor {
        MinRate { bytes_per_second: 2048, window: 30 * SECOND }.floor().unwrap()
    }

    /// Feeds `chunks` (each a wait for the client, then the bytes that end it) through the rule
    /// as the body wrapper does; answers when the body was cut, counted from its start, or
    /// `None` when it arrived whole.
    fn cut_after(mut rule: RateFloor, chunks: impl IntoIterator<Item = (Duration, u64)>) -> Option<Duration> {
        let start = Instant::now();
        let mut now = start;
        for (wait, bytes) in chunks {
            let deadline = rule.waiting(now);
            if now + wait >= deadline {
                return Some(deadline - start);
            }
            now += wait;
            if !rule.arrived(now, bytes) {
                return Some(now - start);
            }
        }
        None
    }

    /// A phone on a bad mobile link: `burst` at a slow 3G upload (about 40 KB/s, 4 KiB every
    /// 100 ms), then `stall` with nothing, over and over.
    fn phone(stall: Duration, burst: Duration, rounds: usize) -> Vec<(Duration, u64)> {
        let pieces = (burst.as_millis() / 100) as usize;
        let round = std::iter::repeat_n((SECOND / 10, 4096), pieces - 1).chain(std::iter::once((stall, 4096)));
        round.cycle().take(rounds * pieces).collect()
    }

    #[test]
    fn a_body_trickled_a_byte_every_ten_seconds_is_cut_one_window_after_it_starts() {
        let cut = cut_after(defaults(), std::iter::repeat_n((10 * SECOND, 1), 100)).expect("the trickle was cut");
        assert!(cut > 29 * SECOND && cut < 31 * SECOND, "cut after {cut:?}");
    }

    #[test]
    fn a_body_just_under_the_floor_is_cut_and_one_just_over_it_is_not() {
        let under = std::iter::repeat_n((SECOND, 1900), 10_000);
        assert!(cut_after(defaults(), under).is_some(), "a body at 1,900 B/s was never cut");
        let over = std::iter::repeat_n((SECOND, 2100), 10_000);
        assert_eq!(cut_after(defaults(), over), None);
    }

    #[test]
    fn a_phone_that_stalls_for_most_of_a_minute_between_bursts_is_not_cut() {
        // 25 s before its first byte, then bursts of 3 s (120 KiB) between stalls of 50 s: most
        // 30 s spans carry nothing (a count per window would cut it), the average is above the floor.
        let chunks = std::iter::once((25 * SECOND, 4096)).chain(phone(50 * SECOND, 3 * SECOND, 20));
        assert_eq!(cut_after(defaults(), chunks), None);
    }

    #[test]
    fn a_fresh_body_may_stall_one_window_and_one_that_sent_a_window_may_stall_two() {
        assert_eq!(cut_after(defaults(), [(29 * SECOND, 100_000)]), None);
        assert_eq!(cut_after(defaults(), [(31 * SECOND, 100_000)]), Some(30 * SECOND));
        let sent_then_stalled = [(SECOND, 10_000_000), (59 * SECOND, 1)];
        assert_eq!(cut_after(defaults(), sent_then_stalled), None);
        // However much a body sent, it banks one window only: the trickle after it is cut.
        let banked_then_trickled =
            std::iter::once((SECOND, 10_000_000)).chain(std::iter::repeat_n((10 * SECOND, 1), 100));
        let cut = cut_after(defaults(), banked_then_trickled).expect("the trickle after a burst was cut");
        assert!(cut <= 62 * SECOND, "cut after {cut:?}");
    }

    #[test]
    fn time_the_app_spends_between_reads_is_not_counted_against_the_client() {
        let mut rule = defaults();
        let start = Instant::now();
        assert!(rule.arrived(start, 0));
        // The app writes to a slow store for a minute before it asks for more.
        let asked = start + 60 * SECOND;
        assert_eq!(rule.waiting(asked), asked + 30 * SECOND);
        assert!(rule.arrived(asked + 29 * SECOND, 100_000), "cut for the app's own minute");
    }

    #[test]
    fn a_floor_of_zero_is_no_floor() {
        assert!(MinRate { bytes_per_second: 0, window: 30 * SECOND }.floor().is_none());
    }
}
