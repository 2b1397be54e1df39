//! How a batch travels to each backend: SQLite has no arrays and reads a JSON text with
//! `json_each`; PostgreSQL reads typed arrays with `unnest`. The statements name the difference
//! in a fragment; this trait makes the matching bind values, so the code around them is written
//! once.

use std::future::Future;

use sqlx::{PgConnection, PgPool, SqliteConnection, SqlitePool};

use super::{Outcome, Target};
use crate::{
    db::{Dialect, Sql},
    sql,
};

/// Items of one batch: (target id, outcome, reason for a failure).
pub type Items<'a> = &'a [(i64, Outcome, Option<&'a str>)];

const INSERT_ITEMS: Sql = sql!(
    "INSERT INTO maintenance_items (run_id, target_kind, target_id, outcome, reason) "
    { sqlite: "SELECT $1, $2, value ->> 0, value ->> 1, value ->> 2 FROM json_each($3) WHERE true",
      postgres: "SELECT $1, $2, t.id, t.outcome, t.reason
                   FROM unnest($3::bigint[], $4::text[], $5::text[]) AS t (id, outcome, reason)" }
    " ON CONFLICT (run_id, target_kind, target_id) DO NOTHING"
);
const COUNT_BATCH: Sql = Sql::same(
    "UPDATE maintenance_runs SET batches = batches + 1, deleted = deleted + $2,
            skipped = skipped + $3, already_gone = already_gone + $4, failed = failed + $5
      WHERE id = $1",
);

/// What a backend's pool knows of binding batches.
pub(super) trait Batch: Dialect {
    /// A batch of ids, as the backend's `IN (…)` over `$1` reads it.
    type Ids;

    fn id_batch(&self, ids: &[i64]) -> Self::Ids;

    /// Writes a batch's items and the run's counts inside the caller's transaction, the items
    /// in one statement.
    fn record_items(
        &self,
        conn: &mut <Self::Database as sqlx::Database>::Connection,
        run_id: i64,
        target_kind: Target,
        items: Items<'_>,
    ) -> impl Future<Output = Result<(), sqlx::Error>> + Send;
}

impl Batch for SqlitePool {
    /// A JSON array.
    type Ids = String;

    fn id_batch(&self, ids: &[i64]) -> String {
        serde_json::to_string(ids).expect("ids serialise")
    }

    async fn record_items(
        &self,
        conn: &mut SqliteConnection,
        run_id: i64,
        target_kind: Target,
        items: Items<'_>,
    ) -> Result<(), sqlx::Error> {
        // One JSON array of [id, outcome, reason] rows.
        let rows: Vec<_> = items.iter().map(|(id, outcome, reason)| (id, outcome.code(), reason)).collect();
        let rows = serde_json::to_string(&rows).expect("ids and short strings serialise");
        let insert = sqlx::query(self.sql(&INSERT_ITEMS)).bind(run_id).bind(target_kind).bind(rows);
        insert.execute(&mut *conn).await?;
        let [deleted, skipped, gone, failed] = tally(items);
        let count = sqlx::query(self.sql(&COUNT_BATCH)).bind(run_id).bind(deleted).bind(skipped);
        count.bind(gone).bind(failed).execute(&mut *conn).await?;
        Ok(())
    }
}

impl Batch for PgPool {
    type Ids = Vec<i64>;

    fn id_batch(&self, ids: &[i64]) -> Vec<i64> {
        ids.to_vec()
    }

    async fn record_items(
        &self,
        conn: &mut PgConnection,
        run_id: i64,
        target_kind: Target,
        items: Items<'_>,
    ) -> Result<(), sqlx::Error> {
        // Three arrays, one per column.
        let ids: Vec<i64> = items.iter().map(|(id, _, _)| *id).collect();
        let outcomes: Vec<&str> = items.iter().map(|(_, o, _)| o.code()).collect();
        let reasons: Vec<Option<&str>> = items.iter().map(|(_, _, r)| *r).collect();
        let insert = sqlx::query(self.sql(&INSERT_ITEMS)).bind(run_id).bind(target_kind).bind(&ids);
        insert.bind(&outcomes).bind(&reasons).execute(&mut *conn).await?;
        let [deleted, skipped, gone, failed] = tally(items);
        let count = sqlx::query(self.sql(&COUNT_BATCH)).bind(run_id).bind(deleted).bind(skipped);
        count.bind(gone).bind(failed).execute(&mut *conn).await?;
        Ok(())
    }
}

/// Per outcome, how many of `items` ended that way: (deleted, skipped, already gone, failed).
fn tally(items: Items<'_>) -> [i64; 4] {
    let mut counts = [0; 4];
    for (_, outcome, _) in items {
        counts[*outcome as usize] += 1;
    }
    counts
}
