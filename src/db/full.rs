//! The database's disk full: the error as each backend reports it, the small write that tells
//! whether there is room again, and how a write reads its returned row so that the error reaches
//! the caller.

use super::{Db, Dialect, Sql};
use crate::on_db;

/// True when the database refused a write for lack of space: SQLITE_FULL (13) on SQLite,
/// `disk_full` (SQLSTATE 53100) on PostgreSQL. Nothing was written; the same write may succeed
/// once space is freed.
pub fn is_disk_full(error: &sqlx::Error) -> bool {
    // A SQLite code is a number, a PostgreSQL one five characters: neither can be the other.
    let code = error.as_database_error().and_then(|e| e.code());
    code.is_some_and(|code| matches!(code.as_ref(), "13" | "53100"))
}

/// The row a writing statement (`… RETURNING`) returned, read with `fetch_all`, never
/// `fetch_one` or `fetch_optional`: on SQLite those stop at the first row, and sqlx drops the
/// error SQLite reports when it then commits the statement (the disk full, a deferred
/// constraint), so a write that was rolled back would be reported done. Reading every row runs
/// the statement to its end, where the error surfaces.
pub fn written_row<T>(rows: Vec<T>) -> Option<T> {
    rows.into_iter().next()
}

/// [`written_row`] for a statement that always returns a row: none is `RowNotFound`, as
/// `fetch_one` would say.
pub fn one_written_row<T>(rows: Vec<T>) -> Result<T, sqlx::Error> {
    written_row(rows).ok_or(sqlx::Error::RowNotFound)
}

/// The probe's scratch row, in the one table every instance writes to at any time: inserted and
/// deleted in one transaction, so it is never seen and leaves nothing behind.
const PROBE_BUCKET: &str = "watasu:write-probe";
const PROBE_INSERT: Sql = Sql::same("INSERT INTO rate_limit_hits (bucket) VALUES ($1)");
const PROBE_DELETE: Sql = Sql::same("DELETE FROM rate_limit_hits WHERE bucket = $1");

/// Commits one small write: `Ok` when the database takes writes (has room) now.
pub async fn write_probe(db: &Db) -> Result<(), sqlx::Error> {
    on_db!(db, |pool| {
        let mut tx = pool.begin_write().await?;
        sqlx::query(pool.sql(&PROBE_INSERT)).bind(PROBE_BUCKET).execute(&mut *tx).await?;
        sqlx::query(pool.sql(&PROBE_DELETE)).bind(PROBE_BUCKET).execute(&mut *tx).await?;
        tx.commit().await
    })
}
