//! What went to the claiming session: the first byte starts the delivery grace, and each
//! response's bytes are recorded as ranges of the files they belong to, written before the bytes
//! go out (a step ahead of them) and set to the true end when the response is over. A response
//! of one file records one range; the archive of a handover's files records a range for each file
//! whose bytes it reaches (its generated headers count for none). A response cut by a crash keeps
//! its ranges, so a download finished with `Range` on this instance or another, through the
//! archive or file by file, counts as completed once the ranges cover every file.

use super::LifecycleRepository;
use crate::{
    db::{Dialect, Sql},
    on_db,
    share::writes,
};

const INSERT_RANGE: Sql = Sql::same(
    "INSERT INTO delivered_ranges (share_id, position, first_byte, end_byte) VALUES ($1, $2, $3, $4) RETURNING id",
);
const MOVE_RANGE_END: Sql = Sql::same("UPDATE delivered_ranges SET end_byte = $2 WHERE id = $1");
/// A range written ahead for a file the response then never reached.
const DROP_RANGE: Sql = Sql::same("DELETE FROM delivered_ranges WHERE id = $1");
const RANGES_OF: Sql = Sql::same("SELECT position, first_byte, end_byte FROM delivered_ranges WHERE share_id = $1");
/// Once completed, the ranges have said all they had to.
const FORGET_RANGES: Sql = Sql::same("DELETE FROM delivered_ranges WHERE share_id = $1");

/// Bytes `start..end` of the file at `position` in the handover, which a response sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub position: i32,
    pub start: u64,
    pub end: u64,
}

/// A response's ranges in the database so far: for each file it reached, the row of its bytes.
#[derive(Clone, Debug, Default)]
pub struct RangeRows(Vec<(i32, i64)>);

impl RangeRows {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn row_of(&self, position: i32) -> Option<i64> {
        self.0.iter().find(|(p, _)| *p == position).map(|(_, id)| *id)
    }
}

/// Bytes as the database stores them.
fn stored(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl LifecycleRepository {
    /// Records that a response of the claiming session is about to send `spans`, before they go
    /// out: its first record starts the delivery grace. `rows` is the response's record so far
    /// (empty for its first); answers it. A span's start never moves within a response, only its
    /// end, so a file already recorded only has its range's end moved.
    pub async fn record_sending(
        &self,
        share_id: i64,
        mut rows: RangeRows,
        spans: &[Span],
    ) -> Result<RangeRows, sqlx::Error> {
        on_db!(self.db(), |pool| {
            if rows.is_empty() {
                sqlx::query(pool.sql(&writes::START_DELIVERY)).bind(share_id).execute(pool).await?;
            }
            for span in spans {
                match rows.row_of(span.position) {
                    Some(id) => {
                        sqlx::query(pool.sql(&MOVE_RANGE_END)).bind(id).bind(stored(span.end)).execute(pool).await?;
                    }
                    None => {
                        let id = sqlx::query_scalar(pool.sql(&INSERT_RANGE))
                            .bind(share_id)
                            .bind(span.position)
                            .bind(stored(span.start))
                            .bind(stored(span.end))
                            .fetch_all(pool)
                            .await
                            .and_then(crate::db::one_written_row)?;
                        rows.0.push((span.position, id));
                    }
                }
            }
            Ok(rows)
        })
    }

    /// A response is over, having sent `spans` (`rows` its record, empty if it wrote none): each
    /// range gets its true end, a range written ahead for a file it never reached goes, and the
    /// download completes if the ranges now cover every file (`sizes`: each file's position and
    /// size). True only for the one call that completed it.
    pub async fn record_sent(
        &self,
        share_id: i64,
        rows: RangeRows,
        spans: &[Span],
        sizes: &[(i32, u64)],
    ) -> Result<bool, sqlx::Error> {
        let unreached: Vec<i64> =
            rows.0.iter().filter(|(p, _)| !spans.iter().any(|s| s.position == *p)).map(|(_, id)| *id).collect();
        // A response that wrote no range before (an empty file) sent its first byte now.
        self.record_sending(share_id, rows, spans).await?;
        let total: u64 = sizes.iter().map(|(_, size)| size).sum();
        let completed: Option<bool> = on_db!(self.db(), |pool| {
            for id in unreached {
                sqlx::query(pool.sql(&DROP_RANGE)).bind(id).execute(pool).await?;
            }
            let ranges: Vec<(i32, i64, i64)> =
                sqlx::query_as(pool.sql(&RANGES_OF)).bind(share_id).fetch_all(pool).await?;
            let completed = sqlx::query_scalar(pool.sql(&writes::RECORD_DELIVERY))
                .bind(share_id)
                .bind(stored(covered(&ranges, sizes)))
                .bind(stored(total))
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

/// How many bytes the ranges cover from each file's start without a gap, summed over the files
/// (`sizes`: each file's position and size): the sum reaches the total only when every file is whole.
fn covered(ranges: &[(i32, i64, i64)], sizes: &[(i32, u64)]) -> u64 {
    sizes
        .iter()
        .map(|(position, size)| {
            let of_file = ranges.iter().filter(|(p, _, _)| p == position).map(|(_, first, end)| (*first, *end));
            u64::try_from(covered_prefix(of_file.collect())).unwrap_or(0).min(*size)
        })
        .sum()
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
    use super::{covered, covered_prefix};

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

    #[test]
    fn each_file_counts_its_own_ranges_up_to_its_size() {
        let sizes = [(0, 10), (1, 0), (2, 5)];
        assert_eq!(covered(&[(0, 0, 10), (2, 0, 5)], &sizes), 15, "every file whole");
        assert_eq!(covered(&[(0, 0, 10), (2, 1, 5)], &sizes), 10, "the last file lacks its first byte");
        assert_eq!(covered(&[(0, 0, 12), (2, 0, 3)], &sizes), 13, "a range past a file's end counts to its end");
        assert_eq!(covered(&[(1, 0, 10)], &sizes), 0, "a range counts only for its own file");
    }
}
