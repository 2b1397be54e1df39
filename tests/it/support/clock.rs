//! Moving time: rows are aged through the database's own clock, so a test never sleeps for time
//! to pass. Everything that "waits" an hour, a day or past an expiry is written here once.

use watasu::{
    db::{Db, Dialect, Sql},
    on_db, sql,
};

use super::TestApp;

/// Sets `columns` of the rows of `table` matching `filter` to `secs` seconds before now (negative:
/// after now), by the database's clock. Returns the rows changed.
pub async fn set_ago(db: &Db, table: &str, columns: &[&str], secs: i64, filter: &str) -> u64 {
    let assign = |value: &dyn Fn(&str) -> String| {
        columns.iter().map(|c| format!("{c} = {}", value(c))).collect::<Vec<_>>().join(", ")
    };
    let sqlite =
        format!("UPDATE {table} SET {} WHERE {filter}", assign(&|_| format!("unixepoch('subsec') - ({secs})")));
    let postgres =
        format!("UPDATE {table} SET {} WHERE {filter}", assign(&|_| format!("now() - make_interval(secs => {secs})")));
    run(db, sqlite, postgres).await
}

/// Moves `columns` of the matching rows `secs` seconds into the past, keeping their distance to
/// each other (a row made earlier, not one that merely expires earlier). Returns the rows changed.
pub async fn shift_back(db: &Db, table: &str, columns: &[&str], secs: i64, filter: &str) -> u64 {
    let assign = |value: &dyn Fn(&str) -> String| {
        columns.iter().map(|c| format!("{c} = {}", value(c))).collect::<Vec<_>>().join(", ")
    };
    let sqlite = format!("UPDATE {table} SET {} WHERE {filter}", assign(&|c| format!("{c} - ({secs})")));
    let postgres =
        format!("UPDATE {table} SET {} WHERE {filter}", assign(&|c| format!("{c} - make_interval(secs => {secs})")));
    run(db, sqlite, postgres).await
}

/// The statements differ as `sql!`'s `now` and `secs` do, but are built at run time: the table,
/// the columns and the seconds are the caller's.
async fn run(db: &Db, sqlite: String, postgres: String) -> u64 {
    match db {
        Db::Sqlite(pool) => sqlx::query(sqlx::AssertSqlSafe(sqlite)).execute(pool).await.unwrap().rows_affected(),
        Db::Postgres(pool) => sqlx::query(sqlx::AssertSqlSafe(postgres)).execute(pool).await.unwrap().rows_affected(),
    }
}

/// The filter for one row by its id.
pub fn id(id: i64) -> String {
    format!("id = {id}")
}

/// Matches every row.
pub const ALL: &str = "1 = 1";

pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 3600;
pub const DAY: i64 = 86_400;

/// How far ahead [`TestApp::hold_rate_limits`] dates attempts: longer than a test's next few
/// requests take on the busiest machine.
const HELD_AHEAD: i64 = 10 * MINUTE;

impl TestApp {
    /// [`set_ago`] on this app's database.
    pub async fn set_ago(&self, table: &str, columns: &[&str], secs: i64, filter: &str) -> u64 {
        set_ago(self.db(), table, columns, secs, filter).await
    }

    /// [`shift_back`] on this app's database.
    pub async fn shift_back(&self, table: &str, columns: &[&str], secs: i64, filter: &str) -> u64 {
        shift_back(self.db(), table, columns, secs, filter).await
    }

    /// Makes every recorded rate-limit attempt `secs` older. Attempts [`Self::hold_rate_limits`]
    /// dated ahead count from now: the wait they held runs on from this moment.
    pub async fn age_rate_limits(&self, secs: i64) {
        let ahead = self.rate_limits_ahead().await;
        self.shift_back("rate_limit_hits", &["at"], secs + ahead, ALL).await;
    }

    /// Holds the failure throttles' waits whole until the test ages them: every recorded attempt
    /// is dated ahead, and a wait counted from the latest failure is then never shortened (the
    /// time since a failure still to come is zero). A 429 the test expects next comes however
    /// slowly a busy machine gets there. (Sliding-window limits would wait longer instead.)
    pub async fn hold_rate_limits(&self) {
        self.shift_back("rate_limit_hits", &["at"], -HELD_AHEAD, ALL).await;
    }

    /// Whole seconds the latest recorded attempt lies ahead of now (zero: none does).
    async fn rate_limits_ahead(&self) -> i64 {
        const AHEAD: Sql = sql!(
            "SELECT COALESCE("
            { sqlite: "max(at) - unixepoch('subsec')", postgres: "EXTRACT(EPOCH FROM max(at) - now())::float8" }
            ", 0.0) FROM rate_limit_hits"
        );
        let ahead: f64 = on_db!(self.db(), |pool| sqlx::query_scalar(pool.sql(&AHEAD)).fetch_one(pool).await.unwrap());
        ahead.max(0.0).ceil() as i64
    }

    /// Moves a share's expiry `secs` into the past.
    pub async fn expire_share_ago(&self, share_id: i64, secs: i64) {
        self.set_ago("shares", &["expires_at"], secs, &id(share_id)).await;
    }

    /// Moves a share's expiry just into the past.
    pub async fn expire_share(&self, share_id: i64) {
        self.expire_share_ago(share_id, 1).await;
    }

    /// Makes a share's download `secs` old: claimed then, and its first byte sent then.
    pub async fn consumed_ago(&self, share_id: i64, secs: i64) {
        self.set_ago("shares", &["consumed_at", "delivery_started_at"], secs, &id(share_id)).await;
    }

    /// Ends the backoff of a share whose delete failed: its next purge attempt is a minute past.
    pub async fn end_purge_backoff(&self, share_id: i64) {
        self.set_ago("shares", &["next_purge_attempt_at"], MINUTE, &id(share_id)).await;
    }

    /// Moves a session's absolute expiry `secs` into the past.
    pub async fn expire_session_ago(&self, session_id: i64, secs: i64) {
        self.set_ago("sessions", &["expires_at"], secs, &id(session_id)).await;
    }

    /// Moves a queued mail's next attempt just into the past, so the outbox sends it now.
    pub async fn mail_due(&self, filter: &str) {
        self.set_ago("mail_outbox", &["next_attempt_at"], 1, filter).await;
    }
}
