//! Leases: one row per name with a holder and an expiry, taken by one conditional upsert, so the
//! rule "one holder at a time" holds across app instances on SQLite and PostgreSQL alike. A holder
//! renews while it works; one that dies stops renewing and the next taker gets the row once it
//! has expired.

use std::time::Duration;

use crate::{
    db::{Db, Dialect, Sql, seconds},
    on_db, sql,
};

/// Insert, or take over a row whose lease has run out; returns the new holder when taken.
const TAKE: Sql = sql!(
    "INSERT INTO maintenance_leases (name, holder, expires_at) VALUES ($1, $2, " now " + " secs("$3") ")
     ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE maintenance_leases.expires_at <= " now "
     RETURNING holder"
);
const EXPIRED_HOLDER: Sql = sql!("SELECT holder FROM maintenance_leases WHERE name = $1 AND expires_at <= " now);
/// The take and the expired holder it replaced, as one statement's snapshot saw them.
/// PostgreSQL only: SQLite cannot put an INSERT in a WITH clause.
const TAKE_REPORTING_EXPIRED_POSTGRES: &str = "WITH expired AS (
         SELECT holder FROM maintenance_leases WHERE name = $1 AND expires_at <= now()
     ), taken AS (
         INSERT INTO maintenance_leases (name, holder, expires_at)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
          WHERE maintenance_leases.expires_at <= now()
         RETURNING holder
     )
     SELECT (SELECT holder FROM expired) FROM taken";
const RENEW: Sql = sql!(
    "UPDATE maintenance_leases SET expires_at = " now " + " secs("$3") "
      WHERE name = $1 AND holder = $2 AND expires_at > " now
);
const RELEASE: Sql = Sql::same("DELETE FROM maintenance_leases WHERE name = $1 AND holder = $2");
const HOLDER: Sql = Sql::same("SELECT holder FROM maintenance_leases WHERE name = $1");
const REMAINING: Sql = sql!(
    "SELECT " { sqlite: "expires_at - unixepoch('subsec')", postgres: "extract(epoch FROM expires_at - now())::float8" }
    " FROM maintenance_leases WHERE name = $1"
);

#[derive(Clone, Debug)]
pub struct Leases {
    db: Db,
}

/// A lease that was taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken {
    /// The holder before us, whose lease had run out (it died or stalled).
    pub previous_holder: Option<String>,
}

impl Leases {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    /// Takes `name` for `holder` for `ttl` unless someone else holds it unexpired, and says whose
    /// expired lease it took over. The holder is read in the same atomic step as the take: read
    /// first, a holder that gave the lease back in between would be reported as taken over (and
    /// its run, still alive, marked failed).
    pub async fn acquire(&self, name: &str, holder: &str, ttl: Duration) -> Result<Option<Taken>, sqlx::Error> {
        let ttl = seconds(ttl);
        let taken: Option<Option<String>> = match &self.db {
            // SQLite cannot put an INSERT in a WITH clause; a write transaction (one writer at a
            // time) makes the read and the upsert one step instead.
            Db::Sqlite(pool) => {
                let mut tx = pool.begin_write().await?;
                let previous: Option<String> =
                    sqlx::query_scalar(pool.sql(&EXPIRED_HOLDER)).bind(name).fetch_optional(&mut *tx).await?;
                let taken: Option<String> = sqlx::query_scalar(pool.sql(&TAKE))
                    .bind(name)
                    .bind(holder)
                    .bind(ttl)
                    .fetch_optional(&mut *tx)
                    .await?;
                tx.commit().await?;
                taken.map(|_| previous)
            }
            // One statement: the expired holder as the statement's snapshot saw it, and the take.
            Db::Postgres(pool) => {
                sqlx::query_scalar(TAKE_REPORTING_EXPIRED_POSTGRES)
                    .bind(name)
                    .bind(holder)
                    .bind(ttl)
                    .fetch_optional(pool)
                    .await?
            }
        };
        Ok(taken.map(|previous| Taken { previous_holder: previous.filter(|p| p != holder) }))
    }

    /// Takes `name` for `holder` for `ttl` unless someone else holds it unexpired: one upsert.
    pub async fn try_take(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool, sqlx::Error> {
        let ttl = seconds(ttl);
        let taken: Option<String> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&TAKE))
                .bind(name)
                .bind(holder)
                .bind(ttl)
                .fetch_all(pool)
                .await
                .map(crate::db::written_row)?
        });
        Ok(taken.is_some())
    }

    /// Extends our lease; false when it is no longer ours (it ran out and was taken over).
    pub async fn renew(&self, name: &str, holder: &str, ttl: Duration) -> Result<bool, sqlx::Error> {
        let ttl = seconds(ttl);
        let done = on_db!(&self.db, |pool| {
            sqlx::query(pool.sql(&RENEW)).bind(name).bind(holder).bind(ttl).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Gives the lease back early (only if still ours).
    pub async fn release(&self, name: &str, holder: &str) -> Result<(), sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query(pool.sql(&RELEASE)).bind(name).bind(holder).execute(pool).await.map(drop))
    }

    /// Who holds `name` (expired or not).
    pub async fn holder(&self, name: &str) -> Result<Option<String>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&HOLDER)).bind(name).fetch_optional(pool).await)
    }

    /// Seconds until `name`'s lease runs out (0 when free).
    pub async fn remaining(&self, name: &str) -> Result<f64, sqlx::Error> {
        let secs: Option<f64> = on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&REMAINING)).bind(name).fetch_optional(pool).await?
        });
        Ok(secs.unwrap_or(0.0).max(0.0))
    }
}
