//! The GC's empty candidate query timed by the database itself, beside the round trip the
//! server pays: PostgreSQL's `EXPLAIN ANALYZE` execution time (per-node timing off); on SQLite, which has no server,
//! the query run many times inside one statement, less the same statement around a constant.

use std::time::{Duration, Instant};

use watasu::{
    db::Db,
    lifecycle::{PURGEABLE_POSTGRES, PURGEABLE_SQLITE},
};

use super::samples::Samples;

/// The delivery grace the server's default gives the query (seconds).
const GRACE_SECONDS: f64 = 900.0;
const LIMIT: i64 = 5;
/// Runs of the query inside one SQLite statement.
const REPEATS: u32 = 20_000;

/// Milliseconds of execution inside the database, one sample per measurement.
pub async fn execution_ms(db: &Db) -> Samples {
    let mut samples = Samples::default();
    for _ in 0..21 {
        samples.push(match db {
            Db::Postgres(_) => explain_analyze(db).await,
            Db::Sqlite(_) => sqlite_repeated(db).await,
        });
    }
    samples
}

async fn explain_analyze(db: &Db) -> f64 {
    let Db::Postgres(pool) = db else { unreachable!() };
    // Without per-node timing, whose clock reads would cost more than the query itself.
    let sql = format!("EXPLAIN (ANALYZE, TIMING OFF) {PURGEABLE_POSTGRES}");
    let plan: Vec<String> =
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(GRACE_SECONDS).bind(LIMIT).fetch_all(pool).await.unwrap();
    plan.iter()
        .find_map(|line| line.trim().strip_prefix("Execution Time: ")?.strip_suffix(" ms")?.parse().ok())
        .unwrap_or_else(|| panic!("EXPLAIN ANALYZE printed no execution time: {plan:?}"))
}

/// The candidate query evaluated `REPEATS` times as a correlated subquery (so SQLite cannot run
/// it once and reuse the answer), minus the same loop evaluating a constant.
async fn sqlite_repeated(db: &Db) -> f64 {
    let Db::Sqlite(pool) = db else { unreachable!() };
    // `s.id > -n.i` holds for every row; it only ties both parts of the query to the loop.
    let correlated = PURGEABLE_SQLITE
        .replace("AND (s.next_purge_attempt_at IS NULL", "AND s.id > -n.i AND (s.next_purge_attempt_at IS NULL");
    assert_ne!(correlated, PURGEABLE_SQLITE, "the candidate query changed shape");
    let time = |inner: String| async move {
        let sql = format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {REPEATS}) \
             SELECT sum(({inner})) FROM n"
        );
        let started = Instant::now();
        let sum: Option<i64> =
            sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(GRACE_SECONDS).bind(LIMIT).fetch_one(pool).await.unwrap();
        (started.elapsed(), sum)
    };
    let (with_query, found) = time(format!("SELECT count(*) FROM ({correlated})")).await;
    assert_eq!(found, Some(0), "the candidate query found something");
    let (constant, _) = time("SELECT n.i * 0 WHERE $1 > 0 AND $2 > 0".to_owned()).await;
    ms(with_query.saturating_sub(constant)) / f64::from(REPEATS)
}

/// Milliseconds of the round trip the server pays, one sample per run.
pub async fn round_trip_ms(repo: &watasu::lifecycle::LifecycleRepository) -> Samples {
    let mut samples = Samples::default();
    for _ in 0..101 {
        let started = Instant::now();
        let found = repo.select_purgeable(LIMIT as u32).await.unwrap();
        samples.push(ms(started.elapsed()));
        assert!(found.is_empty());
    }
    samples
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
