//! Sliding-window rate limits kept in the database, so they hold across restarts and across
//! several app instances. An attempt is recorded first and then counted, so concurrent attempts
//! can only be refused too eagerly, never let through past the limit; a refused attempt takes its
//! record back, so hammering a closed window never keeps it closed longer.

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db, sql,
};

/// At most `max` attempts in any `window`.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub max: i64,
    pub window: Duration,
}

impl Limit {
    pub const fn new(max: i64, window: Duration) -> Self {
        assert!(window.as_secs() <= LONGEST_WINDOW.as_secs(), "the sweep would delete attempts still counted");
        Self { max, window }
    }
}

/// No limit may count over a longer window: the maintenance sweep deletes older attempts.
pub const LONGEST_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// Over the limit: try again after this long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryAfter(pub Duration);

/// Attempts in the window and seconds until the oldest leaves it: SQLite's times are REAL
/// seconds, PostgreSQL's interval is turned into seconds with EXTRACT(EPOCH ...).
const COUNT: Sql = sql!(
    "SELECT count(*), COALESCE("
    { sqlite: "min(at) + $2 - unixepoch('subsec')",
      postgres: "EXTRACT(EPOCH FROM min(at) + make_interval(secs => $2) - now())::float8" }
    ", 0.0) FROM rate_limit_hits WHERE bucket = $1 AND at > " now " - " secs("$2")
);
/// Failures but one and seconds since the latest, the same two ways.
const FAILURES: Sql = sql!(
    "SELECT count(*), COALESCE("
    { sqlite: "unixepoch('subsec') - max(at)", postgres: "EXTRACT(EPOCH FROM now() - max(at))::float8" }
    ", 0.0) FROM rate_limit_hits WHERE bucket = $1 AND id <> $2 AND at > " now " - " secs("$3")
);
const RESTAMP: Sql = sql!("UPDATE rate_limit_hits SET at = " now " WHERE id = $1");

#[derive(Clone, Debug)]
pub struct RateLimiter {
    db: Db,
}

impl RateLimiter {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Records one attempt in `bucket` if every limit still has room for it.
    pub async fn hit(&self, bucket: &str, limits: &[Limit]) -> Result<Result<(), RetryAfter>, sqlx::Error> {
        Ok(self.take(bucket, limits).await?.map(drop))
    }

    /// [`Self::hit`], answering the attempt's record, for a caller that takes it back once the
    /// attempt turns out not to count (a right answer after a limit on wrong ones).
    pub async fn take(&self, bucket: &str, limits: &[Limit]) -> Result<Result<i64, RetryAfter>, sqlx::Error> {
        let id = self.record(bucket).await?;
        match self.check(bucket, limits).await? {
            Ok(()) => Ok(Ok(id)),
            Err(wait) => {
                self.take_back(id).await?;
                Ok(Err(wait))
            }
        }
    }

    /// Records one attempt (a failure that later checks count) without checking anything.
    pub async fn record(&self, bucket: &str) -> Result<i64, sqlx::Error> {
        const INSERT: &str = "INSERT INTO rate_limit_hits (bucket) VALUES ($1) RETURNING id";
        on_db!(&self.db, |pool| sqlx::query_scalar(INSERT)
            .bind(bucket)
            .fetch_all(pool)
            .await
            .and_then(crate::db::one_written_row))
    }

    /// Checks the attempts already recorded in `bucket` against every limit, recording nothing.
    pub async fn check(&self, bucket: &str, limits: &[Limit]) -> Result<Result<(), RetryAfter>, sqlx::Error> {
        let wait = self.wait_with(bucket, limits, 0).await?;
        Ok(if wait.is_zero() { Ok(()) } else { Err(RetryAfter(wait)) })
    }

    /// How long until `bucket` has room for one more attempt under every limit (zero: now),
    /// recording nothing: for a page that says when to come back.
    pub async fn wait_for_room(&self, bucket: &str, limits: &[Limit]) -> Result<Duration, sqlx::Error> {
        self.wait_with(bucket, limits, 1).await
    }

    /// How many more attempts `bucket` takes now, and how long until the limit that leaves the
    /// fewest takes one more than that, recording nothing: for a page that says "your last one
    /// until …" or "again at …".
    pub async fn room(&self, bucket: &str, limits: &[Limit]) -> Result<Room, sqlx::Error> {
        let mut room = Room { left: i64::MAX, frees_in: Duration::ZERO };
        for limit in limits {
            let (count, retry_secs) = self.count(bucket, limit.window).await?;
            let left = (limit.max - count).max(0);
            room = room.min(Room { left, frees_in: Duration::from_secs_f64(retry_secs.max(1.0)) });
        }
        Ok(room)
    }

    /// How long until the attempts recorded, plus `more`, fit every limit.
    async fn wait_with(&self, bucket: &str, limits: &[Limit], more: i64) -> Result<Duration, sqlx::Error> {
        let mut wait = Duration::ZERO;
        for limit in limits {
            let (count, retry_secs) = self.count(bucket, limit.window).await?;
            if count + more > limit.max {
                wait = wait.max(Duration::from_secs_f64(retry_secs.max(1.0)));
            }
        }
        Ok(wait)
    }

    /// Forgets every attempt of every bucket whose name starts with `prefix` (a new link, an unlock).
    pub async fn clear(&self, prefix: &str) -> Result<u64, sqlx::Error> {
        const DELETE: &str = "DELETE FROM rate_limit_hits WHERE substr(bucket, 1, $2) = $1";
        let chars = prefix.chars().count() as i32;
        on_db!(&self.db, |pool| Ok(sqlx::query(DELETE).bind(prefix).bind(chars).execute(pool).await?.rows_affected()))
    }

    /// Attempts in the window, and seconds until the oldest of them leaves it.
    async fn count(&self, bucket: &str, window: Duration) -> Result<(i64, f64), sqlx::Error> {
        let window = seconds(window);
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&COUNT)).bind(bucket).bind(window).fetch_one(pool).await)
    }
}

/// The room a bucket has under its limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Room {
    /// Attempts it takes now (0: refused until `frees_in` has passed).
    pub left: i64,
    /// How long until the tightest limit takes one more than `left`.
    pub frees_in: Duration,
}

impl Room {
    /// The tighter of two rooms.
    pub fn min(self, other: Room) -> Room {
        if other.left < self.left || (other.left == self.left && other.frees_in > self.frees_in) { other } else { self }
    }
}

/// The failures recorded in a bucket, for a backoff that grows with them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failures {
    /// Failures within the longest window (older ones are swept anyway).
    pub count: i64,
    /// Time since the latest of them, by the database clock (zero when there is none).
    pub since_last: Duration,
}

impl RateLimiter {
    /// The failures in `bucket` but the record `except` (the caller's own attempt, recorded first
    /// so that concurrent attempts see each other).
    pub async fn failures(&self, bucket: &str, except: i64) -> Result<Failures, sqlx::Error> {
        let window = seconds(LONGEST_WINDOW);
        let (count, since_last): (i64, f64) = on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FAILURES)).bind(bucket).bind(except).bind(window).fetch_one(pool).await?
        });
        Ok(Failures { count, since_last: Duration::from_secs_f64(since_last.max(0.0)) })
    }

    /// Takes one record back (an attempt that turned out not to count).
    pub async fn take_back(&self, id: i64) -> Result<(), sqlx::Error> {
        const DELETE: &str = "DELETE FROM rate_limit_hits WHERE id = $1";
        on_db!(&self.db, |pool| sqlx::query(DELETE).bind(id).execute(pool).await.map(drop))
    }

    /// Moves a record to now: a failure recorded when its attempt began counts from its end, so a
    /// slow check does not shorten the wait that follows it.
    pub async fn restamp(&self, id: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&RESTAMP)).bind(id).execute(pool).await.map(drop))
    }
}
