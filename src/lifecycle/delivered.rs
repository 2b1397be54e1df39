//! What went to the claiming session: the first byte starts the delivery grace, and each
//! response's bytes are recorded as a range in the database, written before the bytes go out (a
//! step ahead of them) and set to the true end when the response is over. A response cut by a
//! crash keeps its range, so a download finished with `Range` on this instance or another counts
//! as completed once the ranges cover the file.

use super::LifecycleRepository;
use crate::{
    db::{Dialect, Sql},
    on_db,
    share::writes,
};

const INSERT_RANGE: Sql =
    Sql::same("INSERT INTO delivered_ranges (share_id, first_byte, end_byte) VALUES ($1, $2, $3) RETURNING id");
const MOVE_RANGE_END: Sql = Sql::same("UPDATE delivered_ranges SET end_byte = $2 WHERE id = $1");
const RANGES_OF: Sql = Sql::same("SELECT first_byte, end_byte FROM delivered_ranges WHERE share_id = $1");
/// Once completed, the ranges have said all they had to.
const FORGET_RANGES: Sql = Sql::same("DELETE FROM delivered_ranges WHERE share_id = $1");

/// Bytes as the database stores them.
fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl LifecycleRepository {
    /// Records that a response of the claiming session is about to send bytes `start..end` of
    /// the file, before they go out: the first such record starts the delivery grace. `range` is
    /// the response's record so far (`None` for its first); answers it.
    pub async fn record_sending(
        &self,
        share_id: i64,
        range: Option<i64>,
        start: u64,
        end: u64,
    ) -> Result<i64, sqlx::Error> {
        on_db!(self.db(), |pool| {
            if let Some(id) = range {
                sqlx::query(pool.sql(&MOVE_RANGE_END)).bind(id).bind(stored(end)).execute(pool).await?;
                return Ok(id);
            }
            sqlx::query(pool.sql(&writes::START_DELIVERY)).bind(share_id).execute(pool).await?;
            sqlx::query_scalar(pool.sql(&INSERT_RANGE))
                .bind(share_id)
                .bind(stored(start))
                .bind(stored(end))
                .fetch_all(pool)
                .await
                .and_then(crate::db::one_written_row)
        })
    }

    /// A response is over, having sent bytes `start..end` (`range` its record, if it wrote one):
    /// the range gets its true end, and the download completes if the ranges now cover the file
    /// of `size` bytes. True only for the one call that completed it.
    pub async fn record_sent(
        &self,
        share_id: i64,
        range: Option<i64>,
        start: u64,
        end: u64,
        size: u64,
    ) -> Result<bool, sqlx::Error> {
        let completed: Option<bool> = on_db!(self.db(), |pool| {
            match range {
                Some(id) => sqlx::query(pool.sql(&MOVE_RANGE_END)).bind(id).bind(stored(end)).execute(pool).await?,
                None => {
                    // A response that wrote no range before (an empty file) sent its first byte now.
                    sqlx::query(pool.sql(&writes::START_DELIVERY)).bind(share_id).execute(pool).await?;
                    sqlx::query(pool.sql(&INSERT_RANGE))
                        .bind(share_id)
                        .bind(stored(start))
                        .bind(stored(end))
                        .execute(pool)
                        .await?
                }
            };
            let ranges: Vec<(i64, i64)> = sqlx::query_as(pool.sql(&RANGES_OF)).bind(share_id).fetch_all(pool).await?;
            let covered = covered_prefix(ranges);
            let completed = sqlx::query_scalar(pool.sql(&writes::RECORD_DELIVERY))
                .bind(share_id)
                .bind(covered.min(stored(size)))
                .bind(stored(size))
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)?;
            if completed == Some(true) {
                sqlx::query(pool.sql(&FORGET_RANGES)).bind(share_id).execute(pool).await?;
            }
            completed
        });
        Ok(completed == Some(true))
    }
}

/// How many bytes from the file's start the ranges cover without a gap.
fn covered_prefix(mut ranges: Vec<(i64, i64)>) -> i64 {
    ranges.sort_unstable();
    let mut covered = 0;
    for (first, end) in ranges {
        if first > covered {
            break;
        }
        covered = covered.max(end);
    }
    covered
}

#[cfg(test)]
mod tests {
    use super::covered_prefix;

    #[test]
    fn overlapping_ranges_in_any_order_cover_their_union_from_the_start() {
        assert_eq!(covered_prefix(vec![(60, 100), (0, 70)]), 100);
        assert_eq!(covered_prefix(vec![(0, 10), (10, 20), (5, 8)]), 20);
        assert_eq!(covered_prefix(vec![]), 0);
    }

    #[test]
    fn a_gap_stops_the_prefix() {
        assert_eq!(covered_prefix(vec![(0, 10), (11, 100)]), 10);
        assert_eq!(covered_prefix(vec![(8, 18)]), 0);
    }
}
