//! The run ledger: maintenance_runs and maintenance_items. A run names rows by id only, and its
//! idempotency key is kept as a hash, so the ledger never holds an address, a token or a file name.

use super::{
    Kind, Note, Outcome, RunState, Target, Trigger,
    batch::{Batch, Items},
};
use crate::{
    db::{Db, Dialect, Sql, Timestamp, is_unique_violation, seconds},
    on_db,
    secret::{random_token, sha256_hex},
    sql,
};

/// One run as the ledger has it.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct Run {
    pub id: i64,
    pub kind: Kind,
    pub trigger: Trigger,
    pub state: RunState,
    #[serde(serialize_with = "iso")]
    pub cutoff: Option<Timestamp>,
    pub batches: i64,
    pub deleted: i64,
    pub skipped: i64,
    pub already_gone: i64,
    pub failed: i64,
    pub note: Option<Note>,
    #[serde(serialize_with = "iso_required")]
    pub accepted_at: Timestamp,
    #[serde(serialize_with = "iso")]
    pub started_at: Option<Timestamp>,
    #[serde(serialize_with = "iso")]
    pub finished_at: Option<Timestamp>,
}

impl Run {
    pub fn is_finished(&self) -> bool {
        matches!(self.state, RunState::Succeeded | RunState::Partial | RunState::Failed)
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
    pub target_kind: Target,
    pub outcome: Outcome,
    pub count: i64,
}

/// One row of maintenance_items.
#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct RunItem {
    pub id: i64,
    pub target_kind: Target,
    pub target_id: i64,
    pub outcome: Outcome,
    pub reason: Option<String>,
    #[serde(serialize_with = "iso_required")]
    pub at: Timestamp,
}

/// A statement over [`Run`]s, written once with the toolkit's pieces: `select …` starts with
/// `SELECT` and the run's columns, `returning …` ends with them.
macro_rules! run_sql {
    (select $($piece:tt)+) => { run_sql!(@columns ["SELECT "] [$($piece)+]) };
    (returning $($piece:tt)+) => { run_sql!(@columns [$($piece)+] []) };
    (@columns [$($before:tt)*] [$($after:tt)*]) => {
        sql!($($before)* "id, kind, trigger, state, cutoff, batches, deleted, skipped, already_gone, failed, note,
                         accepted_at, started_at, finished_at" $($after)*)
    };
}

const ACCEPT: Sql = run_sql!(returning
    "INSERT INTO maintenance_runs (kind, trigger, idempotency_key_hash) VALUES ($1, $2, $3) RETURNING ");
const FIND_BY_KEY: Sql = run_sql!(select " FROM maintenance_runs WHERE idempotency_key_hash = $1");
const GET: Sql = run_sql!(select " FROM maintenance_runs WHERE id = $1");
const START: Sql = run_sql!(returning
    "UPDATE maintenance_runs SET state = 'running', cutoff = " now ", started_at = " now "
      WHERE id = $1 AND state = 'accepted' RETURNING ");
const OPEN_RUNNING: Sql = sql!(
    "INSERT INTO maintenance_runs (kind, trigger, idempotency_key_hash, state, cutoff, started_at)
     VALUES ($1, $2, $3, 'running', " now ", " now ") RETURNING id"
);
const FINISH: Sql = run_sql!(returning
    "UPDATE maintenance_runs SET state = $2, note = $3, finished_at = " now "
      WHERE id = $1 AND state = 'running' RETURNING ");
const ABANDON_STALE: Sql = sql!(
    "UPDATE maintenance_runs SET state = 'failed', note = 'abandoned',
            finished_at = " now "
      WHERE state IN ('accepted', 'running')
        AND coalesce(started_at, accepted_at) <= " now " - " secs("$1")
);
const ABANDON: Sql = sql!(
    "UPDATE maintenance_runs SET state = 'failed', note = 'lease_ran_out', finished_at = " now "
      WHERE id = $1 AND state = 'running'"
);
const ADD_COUNTS: Sql = Sql::same(
    "UPDATE maintenance_runs SET deleted = deleted + $2, failed = failed + $3 WHERE id = $1 AND state = 'running'",
);
/// The latest runs, failures first: the inner query has exactly the run's columns.
const RECENT: Sql = run_sql!(@columns ["SELECT * FROM (SELECT "] [" FROM maintenance_runs ORDER BY id DESC LIMIT $1) recent
      ORDER BY CASE state WHEN 'failed' THEN 0 WHEN 'partial' THEN 1 ELSE 2 END, id DESC"]);
const SUMMARY: Sql = Sql::same(
    "SELECT target_kind, outcome, count(*) AS count FROM maintenance_items WHERE run_id = $1
      GROUP BY target_kind, outcome ORDER BY target_kind, outcome",
);
const ITEMS: Sql = Sql::same(
    "SELECT id, target_kind, target_id, outcome, reason, at FROM maintenance_items
      WHERE run_id = $1 AND id > $2 ORDER BY id LIMIT $3",
);

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
        let inserted = on_db!(&self.db, |pool| {
            let query = sqlx::query_as(pool.sql(&ACCEPT)).bind(kind).bind(trigger);
            query.bind(&key_hash).fetch_all(pool).await.and_then(crate::db::one_written_row)
        });
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
        let key_hash = key_hash(key);
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND_BY_KEY)).bind(&key_hash).fetch_optional(pool).await)
    }

    pub async fn get(&self, id: i64) -> Result<Option<Run>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&GET)).bind(id).fetch_optional(pool).await)
    }

    /// accepted → running; fixes the cutoff from the database clock, once. `None` when the run
    /// was not waiting (already started by someone else, or finished).
    pub async fn start(&self, id: i64) -> Result<Option<Run>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&START))
            .bind(id)
            .fetch_all(pool)
            .await
            .map(crate::db::written_row))
    }

    /// A run that starts at once (the GC): accepted and started in one statement, under a random
    /// key. Returns its id.
    pub async fn open_running(&self, kind: Kind, trigger: Trigger) -> Result<i64, sqlx::Error> {
        let key_hash = key_hash(random_token().expose());
        on_db!(&self.db, |pool| {
            let query = sqlx::query_scalar(pool.sql(&OPEN_RUNNING)).bind(kind).bind(trigger);
            query.bind(&key_hash).fetch_all(pool).await.and_then(crate::db::one_written_row)
        })
    }

    /// running → a final state; the finished run. `None` when the run was not running (e.g.
    /// declared abandoned).
    pub async fn finish(&self, id: i64, state: RunState, note: Option<&Note>) -> Result<Option<Run>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&FINISH))
                .bind(id)
                .bind(state)
                .bind(note)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)
        })
    }

    /// Declares failed the runs that cannot still be alive: started (or accepted) longer ago than
    /// `older_than`, which is longer than any run may take. Returns how many.
    pub async fn abandon_stale(&self, older_than: std::time::Duration) -> Result<u64, sqlx::Error> {
        let secs = seconds(older_than);
        Ok(on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&ABANDON_STALE)).bind(secs).execute(pool).await?.rows_affected()
        }))
    }

    /// Declares failed a run whose lease ran out while it held it (its holder died).
    pub async fn abandon(&self, id: i64) -> Result<bool, sqlx::Error> {
        let done =
            on_db!(&self.db, |pool| sqlx::query(pool.sql(&ABANDON)).bind(id).execute(pool).await?.rows_affected());
        Ok(done == 1)
    }

    /// Records items outside any other transaction (the GC, whose file deletes are not
    /// transactional anyway).
    pub async fn record(&self, run_id: i64, target_kind: Target, items: Items<'_>) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            pool.record_items(&mut tx, run_id, target_kind, items).await?;
            tx.commit().await
        })
    }

    /// Adds to a running run's counts without items, for what has no row to name (leftovers).
    pub async fn add_counts(&self, run_id: i64, deleted: i64, failed: i64) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&ADD_COUNTS)).bind(run_id).bind(deleted).bind(failed).execute(pool).await?;
        });
        Ok(())
    }

    /// The latest runs, failures first, then partial ones, then the rest; newest first within each.
    pub async fn recent(&self, limit: i64) -> Result<Vec<Run>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&RECENT)).bind(limit).fetch_all(pool).await)
    }

    /// Per target kind and outcome, how many items a run has.
    pub async fn summary(&self, run_id: i64) -> Result<Vec<TargetCount>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&SUMMARY)).bind(run_id).fetch_all(pool).await)
    }

    /// A page of a run's items: failures first would hide order, so by id, after `after`.
    pub async fn items(&self, run_id: i64, after: i64, limit: i64) -> Result<Vec<RunItem>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_as(pool.sql(&ITEMS)).bind(run_id).bind(after).bind(limit).fetch_all(pool).await
        })
    }
}

/// The stored form of an idempotency key: hashed, with a purpose prefix so that a client who
/// sends a share's link token as the key does not put that token's stored hash in the ledger.
fn key_hash(key: &str) -> String {
    sha256_hex(&format!("watasu maintenance idempotency key\0{key}"))
}
