//! Reading and writing the database around the app: counts, one-off statements in each dialect,
//! and a text dump of every table.

use watasu::{
    db::{Db, Dialect, Sql},
    on_db,
};

/// Runs a `SELECT count(*) … WHERE … = $1` (or any single-integer query) on either backend.
pub async fn count(db: &Db, sql: &'static str, bind: i64) -> i64 {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(bind).fetch_one(pool).await.unwrap())
}

/// Runs one statement (`sql!`, or `Sql::same` where both dialects spell it alike) with one integer
/// parameter; returns rows affected.
pub async fn execute(db: &Db, statement: Sql, bind: i64) -> u64 {
    on_db!(db, |pool| sqlx::query(pool.sql(&statement)).bind(bind).execute(pool).await.unwrap().rows_affected())
}

/// Every row of every table as text, per table; byte columns decoded as UTF-8. The two backends
/// differ here for real: each lists its tables in its own catalogue and reads a row as text its
/// own way.
pub async fn tables_as_text(db: &Db) -> Vec<(String, String)> {
    use sqlx::Row;
    let mut out = Vec::new();
    match db {
        Db::Sqlite(pool) => {
            let tables: Vec<String> = sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
                .fetch_all(pool)
                .await
                .unwrap();
            for table in tables {
                let mut text = String::new();
                let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM \"{table}\"")))
                    .fetch_all(pool)
                    .await
                    .unwrap();
                for row in rows {
                    for i in 0..row.columns().len() {
                        if let Ok(Some(value)) = row.try_get::<Option<String>, _>(i) {
                            text.push_str(&value);
                        } else if let Ok(Some(bytes)) = row.try_get::<Option<Vec<u8>>, _>(i) {
                            text.push_str(&String::from_utf8_lossy(&bytes));
                        }
                        text.push('|');
                    }
                    text.push('\n');
                }
                out.push((table, text));
            }
        }
        Db::Postgres(pool) => {
            let tables: Vec<String> =
                sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
                    .fetch_all(pool)
                    .await
                    .unwrap();
            for table in tables {
                let sql = format!("SELECT t::text FROM \"{table}\" t");
                let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.unwrap();
                let mut text = rows.join("\n");
                // A row's text shows byte columns as hex: decode them too.
                let bytea: Vec<String> = sqlx::query_scalar(
                    "SELECT column_name::text FROM information_schema.columns
                      WHERE table_schema = 'public' AND table_name = $1 AND data_type = 'bytea'",
                )
                .bind(&table)
                .fetch_all(pool)
                .await
                .unwrap();
                for column in bytea {
                    let sql = format!("SELECT \"{column}\" FROM \"{table}\" WHERE \"{column}\" IS NOT NULL");
                    for bytes in
                        sqlx::query_scalar::<_, Vec<u8>>(sqlx::AssertSqlSafe(sql)).fetch_all(pool).await.unwrap()
                    {
                        text.push('\n');
                        text.push_str(&String::from_utf8_lossy(&bytes));
                    }
                }
                out.push((table, text));
            }
        }
    }
    out
}

/// Every value of a one-text-column query with one integer parameter, in the query's order.
pub async fn texts(db: &Db, sql: &'static str, bind: i64) -> Vec<String> {
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(bind).fetch_all(pool).await.unwrap())
}
