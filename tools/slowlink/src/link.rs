//! One direction of the emulated link: random loss, a bottleneck that sends at the link's rate
//! from a bounded queue (tail drop), then the one-way delay. Pure: the caller brings the clock.

use std::{
    collections::VecDeque,
    time::{Duration, Instant},
};

/// What the link is told to be, the same in both directions.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Half the round trip: each packet is held this long after it has been sent at the rate.
    pub one_way: Duration,
    /// The fraction of packets lost at random, 0.0 to 1.0.
    pub loss: f64,
    /// Bits per second at the bottleneck; 0 sends at once.
    pub rate_bits: u64,
    /// The bottleneck's buffer: bytes waiting to be sent beyond this are dropped on arrival.
    pub queue_bytes: u64,
}

impl Shape {
    /// The time `bytes` take to leave at the link's rate.
    fn sending(&self, bytes: usize) -> Duration {
        match self.rate_bits {
            0 => Duration::ZERO,
            rate => Duration::from_nanos((bytes as u128 * 8 * 1_000_000_000 / rate as u128) as u64),
        }
    }

    /// The bytes sent in `time` at the link's rate.
    fn bytes_in(&self, time: Duration) -> u64 {
        (time.as_nanos() * self.rate_bits as u128 / 8 / 1_000_000_000) as u64
    }
}

/// What became of one packet offered to the link.
#[derive(Debug, PartialEq, Eq)]
pub enum Fate {
    Queued,
    Lost,
    QueueFull,
}

/// Counts for one direction, printed when the link stops.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counters {
    pub packets: u64,
    pub bytes: u64,
    pub lost: u64,
    pub queue_full: u64,
    pub write_errors: u64,
}

/// One direction: packets in order of delivery. The bottleneck is a clock, `sent_until`, the time
/// the last queued packet has finished leaving at the rate (a token bucket without burst), so the
/// queue's bytes are what that clock is still ahead of now. Every packet is held the same delay
/// after it has left, so delivery times never decrease and the order is kept.
pub struct Direction {
    shape: Shape,
    rng: Rng,
    sent_until: Option<Instant>,
    in_flight: VecDeque<(Instant, Vec<u8>)>,
    pub counters: Counters,
}

impl Direction {
    pub fn new(shape: Shape, seed: u64) -> Self {
        Self { shape, rng: Rng(seed), sent_until: None, in_flight: VecDeque::new(), counters: Counters::default() }
    }

    /// Takes a packet that arrived at `now`.
    pub fn offer(&mut self, now: Instant, packet: Vec<u8>) -> Fate {
        if self.rng.chance(self.shape.loss) {
            self.counters.lost += 1;
            return Fate::Lost;
        }
        let start = self.sent_until.filter(|&t| t > now).unwrap_or(now);
        let waiting = self.shape.bytes_in(start - now);
        if self.shape.rate_bits > 0 && waiting + packet.len() as u64 > self.shape.queue_bytes {
            self.counters.queue_full += 1;
            return Fate::QueueFull;
        }
        let sent = start + self.shape.sending(packet.len());
        self.sent_until = Some(sent);
        self.in_flight.push_back((sent + self.shape.one_way, packet));
        Fate::Queued
    }

    /// When the next packet is due, if one is in flight.
    pub fn next_due(&self) -> Option<Instant> {
        self.in_flight.front().map(|(due, _)| *due)
    }

    /// The next packet due by `now`, counted as delivered.
    pub fn take_due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.next_due()? > now {
            return None;
        }
        let (_, packet) = self.in_flight.pop_front()?;
        self.counters.packets += 1;
        self.counters.bytes += packet.len() as u64;
        Some(packet)
    }
}

/// splitmix64: enough randomness for loss, and no dependency for it.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && ((self.next() >> 11) as f64 / (1u64 << 53) as f64) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(loss: f64, rate_bits: u64, queue_bytes: u64) -> Shape {
        Shape { one_way: Duration::from_millis(25), loss, rate_bits, queue_bytes }
    }

    #[test]
    fn a_packet_arrives_after_the_one_way_delay_plus_its_time_on_the_wire() {
        let mut link = Direction::new(shape(0.0, 8_000_000, 1 << 20), 1);
        let now = Instant::now();
        assert_eq!(link.offer(now, vec![0; 1000]), Fate::Queued);
        // 1000 bytes at 8 Mbit/s take 1 ms.
        assert_eq!(link.next_due(), Some(now + Duration::from_millis(26)));
        assert_eq!(link.take_due(now + Duration::from_millis(25)), None);
        assert_eq!(link.take_due(now + Duration::from_millis(26)).map(|p| p.len()), Some(1000));
    }

    #[test]
    fn packets_queue_behind_each_other_at_the_rate_and_keep_their_order() {
        let mut link = Direction::new(shape(0.0, 8_000_000, 1 << 20), 1);
        let now = Instant::now();
        for i in 0..3u8 {
            link.offer(now, vec![i; 1000]);
        }
        let later = now + Duration::from_secs(1);
        let order: Vec<u8> = std::iter::from_fn(|| link.take_due(later)).map(|p| p[0]).collect();
        assert_eq!(order, [0, 1, 2]);
        assert_eq!((link.counters.packets, link.counters.bytes), (3, 3000));
    }

    #[test]
    fn the_third_packet_of_a_burst_finds_the_queue_full() {
        let mut link = Direction::new(shape(0.0, 8_000_000, 2000), 1);
        let now = Instant::now();
        let fates: Vec<Fate> = (0..3).map(|_| link.offer(now, vec![0; 1000])).collect();
        assert_eq!(fates, [Fate::Queued, Fate::Queued, Fate::QueueFull]);
        // Once the first has left, there is room again.
        assert_eq!(link.offer(now + Duration::from_millis(1), vec![0; 1000]), Fate::Queued);
    }

    #[test]
    fn about_the_given_fraction_is_lost() {
        let mut link = Direction::new(shape(0.005, 0, 0), 42);
        let now = Instant::now();
        for _ in 0..200_000 {
            link.offer(now, Vec::new());
        }
        assert!((800..1200).contains(&link.counters.lost), "lost {}", link.counters.lost);
    }
}
