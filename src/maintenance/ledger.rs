//! The run ledger: maintenance_runs and maintenance_items. A run names rows by id only, and its
//! idempotency key is kept as a hash, so the ledger never holds an address, a token or a file name.

use sqlx::{PgConnection, SqliteConnection};

use super::{Kind, Outcome, RunState, Trigger};
use crate::{
    db::{Db, Timestamp, is_unique_violation},
    secret::{random_token, sha256_hex},
};

/// One run as the ledger has it.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct Run {
    pub id: i64,
    pub kind: String,
    pub trigger: String,
    pub state: String,
    #[serde(serialize_with = "iso")]
    pub cutoff: Option<Timestamp>,
    pub batches: i64,
    pub deleted: i64,
    pub skipped: i64,
    pub already_gone: i64,
    pub failed: i64,
    pub note: Option<String>,
    #[serde(serialize_with = "iso_required")]
    pub accepted_at: Timestamp,
    #[serde(serialize_with = "iso")]
    pub started_at: Option<Timestamp>,
    #[serde(serialize_with = "iso")]
    pub finished_at: Option<Timestamp>,
}

impl Run {
    pub fn is_finished(&self) -> bool {
        matches!(self.state.as_str(), "succeeded" | "partial" | "failed")
    }
}

fn iso<S: serde::Serializer>(value: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(t) => iso_required(t, s),
        None => s.serialize_none(),
    }
}

fn iso_required<S: serde::Serializer>(value: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&value.0.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// How many rows of one kind ended one way in a run.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct TargetCount {
    pub target_kind: String,
    pub outcome: String,
    pub count: i64,
}

/// One row of maintenance_items.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct RunItem {
    pub id: i64,
    pub target_kind: String,
    pub target_id: i64,
    pub outcome: String,
    pub reason: Option<String>,
    #[serde(serialize_with = "iso_required")]
    pub at: Timestamp,
}

/// Items of one batch: (target id, outcome, reason for a failure).
pub type Items<'a> = &'a [(i64, Outcome, Option<&'a str>)];

const RUN_COLUMNS: &str = "id, kind, trigger, state, cutoff, batches, deleted, skipped, already_gone, failed, note, \
                           accepted_at, started_at, finished_at";

#[derive(Clone, Debug)]
pub struct Ledger {
    db: Db,
}

impl Ledger {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Records a new accepted run under `key`, or returns the run that key already names
    /// (`false`: not new). Concurrent accepts of one key make one run.
    pub async fn accept(&self, kind: Kind, trigger: Trigger, key: &str) -> Result<(Run, bool), sqlx::Error> {
        let key_hash = key_hash(key);
        let sql = sqlx::AssertSqlSafe(format!(
            "INSERT INTO maintenance_runs (kind, trigger, idempotency_key_hash) VALUES ($1, $2, $3) RETURNING {RUN_COLUMNS}"
        ));
        let inserted = match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(sql).bind(kind.as_str()).bind(trigger.as_str()).bind(&key_hash).fetch_one(pool).await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(sql).bind(kind.as_str()).bind(trigger.as_str()).bind(&key_hash).fetch_one(pool).await
            }
        };
        match inserted {
            Ok(run) => Ok((run, true)),
            Err(error) if is_unique_violation(&error) => match self.find_by_key(key).await? {
                Some(run) => Ok((run, false)),
                None => Err(error),
            },
            Err(error) => Err(error),
        }
    }

    pub async fn find_by_key(&self, key: &str) -> Result<Option<Run>, sqlx::Error> {
        let sql =
            sqlx::AssertSqlSafe(format!("SELECT {RUN_COLUMNS} FROM maintenance_runs WHERE idempotency_key_hash = $1"));
        let key_hash = key_hash(key);
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(sql).bind(key_hash).fetch_optional(pool).await,
            Db::Postgres(pool) => sqlx::query_as(sql).bind(key_hash).fetch_optional(pool).await,
        }
    }

    pub async fn get(&self, id: i64) -> Result<Option<Run>, sqlx::Error> {
        let sql = sqlx::AssertSqlSafe(format!("SELECT {RUN_COLUMNS} FROM maintenance_runs WHERE id = $1"));
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await,
            Db::Postgres(pool) => sqlx::query_as(sql).bind(id).fetch_optional(pool).await,
        }
    }

    /// accepted → running; fixes the cutoff from the database clock, once. `None` when the run
    /// was not waiting (already started by someone else, or finished).
    pub async fn start(&self, id: i64) -> Result<Option<Run>, sqlx::Error> {
        let sql = match &self.db {
            Db::Sqlite(_) => format!(
                "UPDATE maintenance_runs SET state = 'running', cutoff = unixepoch('subsec'), started_at = unixepoch('subsec')
                  WHERE id = $1 AND state = 'accepted' RETURNING {RUN_COLUMNS}"
            ),
            Db::Postgres(_) => format!(
                "UPDATE maintenance_runs SET state = 'running', cutoff = now(), started_at = now()
                  WHERE id = $1 AND state = 'accepted' RETURNING {RUN_COLUMNS}"
            ),
        };
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await,
            Db::Postgres(pool) => sqlx::query_as(sqlx::AssertSqlSafe(sql)).bind(id).fetch_optional(pool).await,
        }
    }

    /// A run that starts at once (the GC): accepted and started in one statement, under a random
    /// key. Returns its id.
    pub async fn open_running(&self, kind: Kind, trigger: Trigger) -> Result<i64, sqlx::Error> {
        let key_hash = key_hash(random_token().expose());
        let sql = match &self.db {
            Db::Sqlite(_) => {
                "INSERT INTO maintenance_runs (kind, trigger, idempotency_key_hash, state, cutoff, started_at)
                 VALUES ($1, $2, $3, 'running', unixepoch('subsec'), unixepoch('subsec')) RETURNING id"
            }
            Db::Postgres(_) => {
                "INSERT INTO maintenance_runs (kind, trigger, idempotency_key_hash, state, cutoff, started_at)
                 VALUES ($1, $2, $3, 'running', now(), now()) RETURNING id"
            }
        };
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_scalar(sql).bind(kind.as_str()).bind(trigger.as_str()).bind(key_hash).fetch_one(pool).await
            }
            Db::Postgres(pool) => {
                sqlx::query_scalar(sql).bind(kind.as_str()).bind(trigger.as_str()).bind(key_hash).fetch_one(pool).await
            }
        }
    }

    /// running → a final state; the finished run. `None` when the run was not running (e.g.
    /// declared abandoned).
    pub async fn finish(&self, id: i64, state: RunState, note: Option<&str>) -> Result<Option<Run>, sqlx::Error> {
        let sql = match &self.db {
            Db::Sqlite(_) => format!(
                "UPDATE maintenance_runs SET state = $2, note = $3, finished_at = unixepoch('subsec')
                  WHERE id = $1 AND state = 'running' RETURNING {RUN_COLUMNS}"
            ),
            Db::Postgres(_) => format!(
                "UPDATE maintenance_runs SET state = $2, note = $3, finished_at = now()
                  WHERE id = $1 AND state = 'running' RETURNING {RUN_COLUMNS}"
            ),
        };
        match &self.db {
            Db::Sqlite(pool) => {
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .bind(state.as_str())
                    .bind(note)
                    .fetch_optional(pool)
                    .await
            }
            Db::Postgres(pool) => {
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(id)
                    .bind(state.as_str())
                    .bind(note)
                    .fetch_optional(pool)
                    .await
            }
        }
    }

    /// Declares failed the runs that cannot still be alive: started (or accepted) longer ago than
    /// `older_than`, which is longer than any run may take. Returns how many.
    pub async fn abandon_stale(&self, older_than: std::time::Duration) -> Result<u64, sqlx::Error> {
        let secs = crate::db::seconds(older_than);
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE maintenance_runs SET state = 'failed', note = 'abandoned: the run stopped without finishing',
                        finished_at = unixepoch('subsec')
                  WHERE state IN ('accepted', 'running')
                    AND coalesce(started_at, accepted_at) <= unixepoch('subsec') - $1",
            )
            .bind(secs)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE maintenance_runs SET state = 'failed', note = 'abandoned: the run stopped without finishing',
                        finished_at = now()
                  WHERE state IN ('accepted', 'running')
                    AND coalesce(started_at, accepted_at) <= now() - make_interval(secs => $1)",
            )
            .bind(secs)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done)
    }

    /// Declares failed a run whose lease ran out while it held it (its holder died).
    pub async fn abandon(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done = match &self.db {
            Db::Sqlite(pool) => sqlx::query(
                "UPDATE maintenance_runs SET state = 'failed', note = 'abandoned: its lease ran out',
                        finished_at = unixepoch('subsec')
                  WHERE id = $1 AND state = 'running'",
            )
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected(),
            Db::Postgres(pool) => sqlx::query(
                "UPDATE maintenance_runs SET state = 'failed', note = 'abandoned: its lease ran out', finished_at = now()
                  WHERE id = $1 AND state = 'running'",
            )
            .bind(id)
            .execute(pool)
            .await?
            .rows_affected(),
        };
        Ok(done == 1)
    }

    /// Records items outside any other transaction (the GC, whose file deletes are not
    /// transactional anyway).
    pub async fn record(&self, run_id: i64, target_kind: &str, items: Items<'_>) -> Result<(), sqlx::Error> {
        match &self.db {
            Db::Sqlite(pool) => {
                let mut tx = crate::db::sqlite_write_tx(pool).await?;
                record_sqlite(&mut tx, run_id, target_kind, items).await?;
                tx.commit().await
            }
            Db::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                record_postgres(&mut tx, run_id, target_kind, items).await?;
                tx.commit().await
            }
        }
    }

    /// The latest runs, failures first, then partial ones, then the rest; newest first within each.
    pub async fn recent(&self, limit: i64) -> Result<Vec<Run>, sqlx::Error> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {RUN_COLUMNS} FROM (SELECT {RUN_COLUMNS} FROM maintenance_runs ORDER BY id DESC LIMIT $1) recent
              ORDER BY CASE state WHEN 'failed' THEN 0 WHEN 'partial' THEN 1 ELSE 2 END, id DESC"
        ));
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(sql).bind(limit).fetch_all(pool).await,
            Db::Postgres(pool) => sqlx::query_as(sql).bind(limit).fetch_all(pool).await,
        }
    }

    /// Per target kind and outcome, how many items a run has.
    pub async fn summary(&self, run_id: i64) -> Result<Vec<TargetCount>, sqlx::Error> {
        const SQL: &str = "SELECT target_kind, outcome, count(*) AS count FROM maintenance_items WHERE run_id = $1
                            GROUP BY target_kind, outcome ORDER BY target_kind, outcome";
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(SQL).bind(run_id).fetch_all(pool).await,
            Db::Postgres(pool) => sqlx::query_as(SQL).bind(run_id).fetch_all(pool).await,
        }
    }

    /// A page of a run's items: failures first would hide order, so by id, after `after`.
    pub async fn items(&self, run_id: i64, after: i64, limit: i64) -> Result<Vec<RunItem>, sqlx::Error> {
        const SQL: &str = "SELECT id, target_kind, target_id, outcome, reason, at FROM maintenance_items
                            WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT $3";
        match &self.db {
            Db::Sqlite(pool) => sqlx::query_as(SQL).bind(run_id).bind(after).bind(limit).fetch_all(pool).await,
            Db::Postgres(pool) => sqlx::query_as(SQL).bind(run_id).bind(after).bind(limit).fetch_all(pool).await,
        }
    }
}

/// The stored form of an idempotency key: hashed, with a purpose prefix so that a client who
/// sends a share's link token as the key does not put that token's stored hash in the ledger.
fn key_hash(key: &str) -> String {
    sha256_hex(&format!("watasu maintenance idempotency key\0{key}"))
}

/// Per outcome, how many of `items` ended that way: (deleted, skipped, already gone, failed).
fn tally(items: Items<'_>) -> [i64; 4] {
    let mut counts = [0; 4];
    for (_, outcome, _) in items {
        counts[*outcome as usize] += 1;
    }
    counts
}

const COUNT_BATCH: &str = "UPDATE maintenance_runs SET batches = batches + 1, deleted = deleted + $2,
                           skipped = skipped + $3, already_gone = already_gone + $4, failed = failed + $5
                           WHERE id = $1";

/// Writes a batch's items and counts inside the caller's SQLite transaction, the items in one
/// statement (a JSON array of [id, outcome, reason] rows).
pub(super) async fn record_sqlite(
    conn: &mut SqliteConnection,
    run_id: i64,
    target_kind: &str,
    items: Items<'_>,
) -> Result<(), sqlx::Error> {
    let rows: Vec<_> = items.iter().map(|(id, outcome, reason)| (id, outcome.as_str(), reason)).collect();
    let rows = serde_json::to_string(&rows).expect("ids and short strings serialise");
    sqlx::query(
        "INSERT INTO maintenance_items (run_id, target_kind, target_id, outcome, reason)
         SELECT $1, $2, value ->> 0, value ->> 1, value ->> 2 FROM json_each($3) WHERE true
         ON CONFLICT (run_id, target_kind, target_id) DO NOTHING",
    )
    .bind(run_id)
    .bind(target_kind)
    .bind(rows)
    .execute(&mut *conn)
    .await?;
    let [deleted, skipped, gone, failed] = tally(items);
    sqlx::query(COUNT_BATCH)
        .bind(run_id)
        .bind(deleted)
        .bind(skipped)
        .bind(gone)
        .bind(failed)
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Writes a batch's items and counts inside the caller's PostgreSQL transaction, in one statement.
pub(super) async fn record_postgres(
    conn: &mut PgConnection,
    run_id: i64,
    target_kind: &str,
    items: Items<'_>,
) -> Result<(), sqlx::Error> {
    let ids: Vec<i64> = items.iter().map(|(id, _, _)| *id).collect();
    let outcomes: Vec<&str> = items.iter().map(|(_, o, _)| o.as_str()).collect();
    let reasons: Vec<Option<&str>> = items.iter().map(|(_, _, r)| *r).collect();
    sqlx::query(
        "INSERT INTO maintenance_items (run_id, target_kind, target_id, outcome, reason)
         SELECT $1, $2, t.id, t.outcome, t.reason FROM unnest($3::bigint[], $4::text[], $5::text[]) AS t (id, outcome, reason)
         ON CONFLICT (run_id, target_kind, target_id) DO NOTHING",
    )
    .bind(run_id)
    .bind(target_kind)
    .bind(&ids)
    .bind(&outcomes)
    .bind(&reasons)
    .execute(&mut *conn)
    .await?;
    let [deleted, skipped, gone, failed] = tally(items);
    sqlx::query(COUNT_BATCH)
        .bind(run_id)
        .bind(deleted)
        .bind(skipped)
        .bind(gone)
        .bind(failed)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
