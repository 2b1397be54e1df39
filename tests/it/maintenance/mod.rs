//! Maintenance that proves itself (seed 004): sweeps that re-check expiry at delete time under a
//! cutoff fixed once per run, the run ledger and its items, leases that a dead run gives up by
//! expiring, the authenticated trigger (202, Idempotency-Key, 429, 401), the admin pages, the
//! CLI, and a ledger that never holds an address, a token or a file name.

mod ledger;
mod pages;
mod sweeps;
mod trigger;

use std::{collections::HashSet, time::Duration};

use reqwest::StatusCode;
use sqlx::Row;
use watasu::{
    db::{Db, Dialect, Sql},
    lifecycle::{LifecycleRepository, ShareGc},
    maintenance::{Budget, Kind, Trigger},
    on_db,
    share::ShareEvents,
    sql,
};

use crate::support::{PASSWORD, clock};
use crate::{
    both_backends,
    support::{Backend, Browser, TestApp, count, execute, process::run_watasu},
};

pub(crate) const TOKEN: &str = "maintenance-token-0123456789abcdef0123456789";

/// An app whose own timer stays out of the way (its start-up run is over when this returns).
pub(crate) async fn quiet_app(backend: Backend) -> TestApp {
    TestApp::spawn_settled(backend, |s| {
        s.access_time_gc = false;
        s.maintenance_interval = Duration::from_secs(24 * 3600);
        s.maintenance_token = Some(watasu::secret::SecretString::new(TOKEN));
    })
    .await
}

/// Runs one statement without parameters.
pub(crate) async fn run_sql(db: &Db, statement: Sql) -> u64 {
    on_db!(db, |pool| sqlx::query(pool.sql(&statement)).execute(pool).await.unwrap().rows_affected())
}

#[derive(Clone, Copy)]
pub(crate) enum SessionAge {
    /// Past its absolute expiry.
    Expired,
    /// Idle longer than the idle timeout (12 h), absolute expiry still ahead.
    Idle,
    /// Expires this many seconds from now.
    ExpiresIn(f64),
}

/// Inserts `n` sessions; returns their ids in order.
pub(crate) async fn insert_sessions(db: &Db, n: usize, age: SessionAge) -> Vec<i64> {
    let (expires, seen) = match age {
        SessionAge::Expired => (-10.0, -20.0),
        SessionAge::Idle => (3600.0, -13.0 * 3600.0),
        SessionAge::ExpiresIn(secs) => (secs, 0.0),
    };
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let hash = watasu::secret::random_token().expose().to_owned();
        const INSERT: Sql = sql!(
            "INSERT INTO sessions (id_hash, csrf_secret, expires_at, last_seen_at) VALUES ($1, 'x', "
            now " + " secs("$2") ", " now " + " secs("$3") ") RETURNING id"
        );
        let id: i64 = on_db!(db, |pool| sqlx::query_scalar(pool.sql(&INSERT))
            .bind(&hash)
            .bind(expires)
            .bind(seen)
            .fetch_one(pool)
            .await
            .unwrap());
        ids.push(id);
    }
    ids
}

pub(crate) async fn session_exists(db: &Db, id: i64) -> bool {
    count(db, "SELECT count(*) FROM sessions WHERE id = $1", id).await == 1
}

/// The session comes back: it is used again and its expiry moves on, as a live request does.
pub(crate) async fn renew_session(db: &Db, id: i64) {
    execute(
        db,
        sql!("UPDATE sessions SET last_seen_at = " now ", expires_at = " now " + " secs("3600") " WHERE id = $1"),
        id,
    )
    .await;
}

pub(crate) async fn item_outcome(db: &Db, run_id: i64, target_id: i64) -> String {
    let sql = "SELECT outcome FROM maintenance_items WHERE run_id = $1 AND target_id = $2";
    on_db!(db, |pool| sqlx::query_scalar(sql).bind(run_id).bind(target_id).fetch_one(pool).await.unwrap())
}

/// Moves a run's start (and so its cutoff) `seconds` into the past.
async fn move_cutoff_back(db: &Db, run_id: i64, seconds: i64) {
    const MOVE: Sql = sql!(
        "UPDATE maintenance_runs SET cutoff = cutoff - " secs("$2") ", started_at = started_at - " secs("$2")
        " WHERE id = $1"
    );
    on_db!(db, |pool| sqlx::query(pool.sql(&MOVE))
        .bind(run_id)
        .bind(seconds)
        .execute(pool)
        .await
        .unwrap()
        .rows_affected());
}

async fn http_runs(app: &TestApp) -> i64 {
    count(app.db(), "SELECT count(*) FROM maintenance_runs WHERE trigger = 'http' AND id > $1", 0).await
}

pub(crate) fn small_budget(batch_size: u32, max_batches: u32) -> Budget {
    Budget { batch_size, max_batches, max_time: Duration::from_secs(60) }
}

async fn post_trigger(app: &TestApp, token: Option<&str>, key: Option<&str>) -> reqwest::Response {
    let mut request = reqwest::Client::new().post(format!("{}/maintenance/runs", app.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(key) = key {
        request = request.header("Idempotency-Key", key);
    }
    request.send().await.unwrap()
}

async fn get_run(app: &TestApp, location: &str) -> serde_json::Value {
    let response =
        reqwest::Client::new().get(format!("{}{location}", app.base)).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(response.status(), 200);
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

/// Polls the run until it has finished.
async fn finished_run(app: &TestApp, location: &str) -> serde_json::Value {
    for _ in 0..200 {
        let body = get_run(app, location).await;
        if ["succeeded", "partial", "failed"].contains(&body["run"]["state"].as_str().unwrap()) {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the run at {location} never finished");
}

/// Every row of `tables` as text (all columns), for grepping. SQLite is read column by column;
/// PostgreSQL writes each row as JSON itself.
async fn dump(db: &Db, tables: &[&str]) -> String {
    let mut out = String::new();
    for table in tables {
        match db {
            Db::Sqlite(pool) => {
                let rows =
                    sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM {table}"))).fetch_all(pool).await.unwrap();
                for row in rows {
                    for i in 0..row.len() {
                        let text = row
                            .try_get::<Option<String>, _>(i)
                            .ok()
                            .flatten()
                            .or_else(|| row.try_get::<Option<i64>, _>(i).ok().flatten().map(|v| v.to_string()))
                            .or_else(|| row.try_get::<Option<f64>, _>(i).ok().flatten().map(|v| v.to_string()));
                        out.push_str(&text.unwrap_or_default());
                        out.push('|');
                    }
                    out.push('\n');
                }
            }
            Db::Postgres(pool) => {
                let rows: Vec<String> =
                    sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT row_to_json(t)::text FROM {table} t")))
                        .fetch_all(pool)
                        .await
                        .unwrap();
                out.push_str(&rows.join("\n"));
            }
        }
    }
    out
}
