//! The expiry sweeps. Each is one table, one "expired at the cutoff" condition and what to do
//! with a row that meets it (delete it, or scrub its personal data). A run walks the table by id
//! (keyset, never OFFSET) in bounded batches; each batch deletes with the condition repeated, in
//! one transaction with its ledger items, so a row renewed after the scan survives and is
//! recorded as skipped.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Kind, Outcome, ledger};
use crate::db::{Db, Timestamp};

/// Sweep settings that come from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct SweepSettings {
    pub session_idle: Duration,
    /// How long purged shares keep their recipient, file name and message, and the outbox its mails.
    pub retention: Duration,
}

/// Spent and expired codes are kept this long after expiry, for the sender's questions.
const CODE_KEEP: Duration = Duration::from_secs(3600);
/// Used and expired invitations stay on the team page this long.
const INVITATION_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

#[derive(Clone, Debug)]
pub struct Sweep {
    pub kind: Kind,
    /// The name a ledger item gives the row.
    pub target_kind: &'static str,
    table: &'static str,
    /// Rows are swept once they met the condition this long before the run's cutoff.
    keep: Duration,
    /// "Expired at $2" in each dialect.
    sqlite_condition: String,
    postgres_condition: String,
    /// Scrub the personal data of the row instead of deleting it.
    scrub: bool,
}

impl Sweep {
    pub fn new(kind: Kind, settings: SweepSettings) -> Self {
        let same = |condition: &str| (condition.to_owned(), condition.to_owned());
        let (target_kind, table, keep, (sqlite_condition, postgres_condition), scrub) = match kind {
            Kind::Sessions => {
                let idle = settings.session_idle.as_secs_f64();
                (
                    "session",
                    "sessions",
                    Duration::ZERO,
                    (
                        format!("(expires_at <= $2 OR last_seen_at <= $2 - {idle:.3})"),
                        format!("(expires_at <= $2 OR last_seen_at <= $2 - make_interval(secs => {idle:.3}))"),
                    ),
                    false,
                )
            }
            Kind::Codes => ("code", "otp_challenges", CODE_KEEP, same("expires_at <= $2"), false),
            Kind::Invitations => {
                ("invitation", "invitations", INVITATION_KEEP, same("(used_at <= $2 OR expires_at <= $2)"), false)
            }
            Kind::Outbox => (
                "mail",
                "mail_outbox",
                settings.retention,
                same("status IN ('sent', 'dead') AND created_at <= $2"),
                false,
            ),
            Kind::RateLimits => {
                ("rate_limit_hit", "rate_limit_hits", crate::ratelimit::LONGEST_WINDOW, same("at <= $2"), false)
            }
            Kind::ShareRetention => (
                "share_personal_data",
                "shares",
                settings.retention,
                same("status = 'purged' AND recipient_email <> '' AND purged_at <= $2"),
                true,
            ),
            Kind::All | Kind::ShareGc => unreachable!("{kind:?} is not a sweep"),
        };
        Self { kind, target_kind, table, keep, sqlite_condition, postgres_condition, scrub }
    }

    /// A walk over this sweep's table for one run whose cutoff is `run_cutoff`.
    pub fn start(&self, db: Db, run_id: i64, run_cutoff: Timestamp) -> SweepRun<'_> {
        let keep = chrono::Duration::from_std(self.keep).unwrap_or(chrono::Duration::MAX);
        SweepRun { sweep: self, db, run_id, cutoff: run_cutoff.0 - keep, after: 0 }
    }
}

/// What one batch did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub deleted: u64,
    pub skipped: u64,
    pub already_gone: u64,
}

/// One run's walk over one sweep's table.
pub struct SweepRun<'a> {
    sweep: &'a Sweep,
    db: Db,
    run_id: i64,
    cutoff: DateTime<Utc>,
    /// The keyset cursor: the highest id handled so far.
    after: i64,
}

fn sqlite_seconds(at: DateTime<Utc>) -> f64 {
    at.timestamp_micros() as f64 / 1_000_000.0
}

impl SweepRun<'_> {
    /// The next batch of ids that meet the condition, after the cursor.
    pub async fn scan(&self, limit: u32) -> Result<Vec<i64>, sqlx::Error> {
        let sweep = self.sweep;
        match &self.db {
            Db::Sqlite(pool) => {
                let sql = format!(
                    "SELECT id FROM {} WHERE id > $1 AND {} ORDER BY id LIMIT $3",
                    sweep.table, sweep.sqlite_condition
                );
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .bind(self.after)
                    .bind(sqlite_seconds(self.cutoff))
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await
            }
            Db::Postgres(pool) => {
                let sql = format!(
                    "SELECT id FROM {} WHERE id > $1 AND {} ORDER BY id LIMIT $3",
                    sweep.table, sweep.postgres_condition
                );
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .bind(self.after)
                    .bind(self.cutoff)
                    .bind(i64::from(limit))
                    .fetch_all(pool)
                    .await
            }
        }
    }

    /// Deletes (or scrubs) those of `ids` that still meet the condition, and records every id's
    /// outcome in the ledger, in one transaction. Moves the cursor past `ids`.
    pub async fn apply(&mut self, ids: &[i64]) -> Result<BatchReport, sqlx::Error> {
        if ids.is_empty() {
            return Ok(BatchReport::default());
        }
        let sweep = self.sweep;
        let (done, remaining) = match &self.db {
            Db::Sqlite(pool) => {
                let ids_json = serde_json::to_string(ids).expect("ids serialise");
                let in_ids = "SELECT value FROM json_each($1)";
                let cond = &sweep.sqlite_condition;
                let cutoff = sqlite_seconds(self.cutoff);
                let mut tx = crate::db::sqlite_write_tx(pool).await?;
                if sweep.scrub {
                    let files = format!(
                        "UPDATE files SET original_name = '' WHERE id IN
                           (SELECT file_id FROM shares WHERE id IN ({in_ids}) AND {cond})"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(files)).bind(&ids_json).bind(cutoff).execute(&mut *tx).await?;
                }
                let change = change_sql(sweep, in_ids, cond);
                let done: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(change))
                    .bind(&ids_json)
                    .bind(cutoff)
                    .fetch_all(&mut *tx)
                    .await?;
                let present = format!("SELECT id FROM {} WHERE id IN ({in_ids})", sweep.table);
                let remaining: Vec<i64> =
                    sqlx::query_scalar(sqlx::AssertSqlSafe(present)).bind(&ids_json).fetch_all(&mut *tx).await?;
                let items = outcomes(ids, &done, &remaining);
                ledger::record_sqlite(&mut tx, self.run_id, sweep.target_kind, &items).await?;
                tx.commit().await?;
                (done, remaining)
            }
            Db::Postgres(pool) => {
                let in_ids = "SELECT unnest($1::bigint[])";
                let cond = &sweep.postgres_condition;
                let mut tx = pool.begin().await?;
                if sweep.scrub {
                    let files = format!(
                        "UPDATE files SET original_name = '' WHERE id IN
                           (SELECT file_id FROM shares WHERE id IN ({in_ids}) AND {cond})"
                    );
                    sqlx::query(sqlx::AssertSqlSafe(files)).bind(ids).bind(self.cutoff).execute(&mut *tx).await?;
                }
                let change = change_sql(sweep, in_ids, cond);
                let done: Vec<i64> = sqlx::query_scalar(sqlx::AssertSqlSafe(change))
                    .bind(ids)
                    .bind(self.cutoff)
                    .fetch_all(&mut *tx)
                    .await?;
                let present = format!("SELECT id FROM {} WHERE id IN ({in_ids})", sweep.table);
                let remaining: Vec<i64> =
                    sqlx::query_scalar(sqlx::AssertSqlSafe(present)).bind(ids).fetch_all(&mut *tx).await?;
                let items = outcomes(ids, &done, &remaining);
                ledger::record_postgres(&mut tx, self.run_id, sweep.target_kind, &items).await?;
                tx.commit().await?;
                (done, remaining)
            }
        };
        self.after = self.after.max(ids.iter().copied().max().unwrap_or(0));
        let mut report = BatchReport::default();
        for (_, outcome, _) in outcomes(ids, &done, &remaining) {
            match outcome {
                Outcome::Deleted => report.deleted += 1,
                Outcome::Skipped => report.skipped += 1,
                _ => report.already_gone += 1,
            }
        }
        Ok(report)
    }
}

/// The statement that deletes (or scrubs) the rows of `in_ids` still meeting `cond`, returning their ids.
fn change_sql(sweep: &Sweep, in_ids: &str, cond: &str) -> String {
    if sweep.scrub {
        format!("UPDATE shares SET recipient_email = '', message = '' WHERE id IN ({in_ids}) AND {cond} RETURNING id")
    } else {
        format!("DELETE FROM {} WHERE id IN ({in_ids}) AND {cond} RETURNING id", sweep.table)
    }
}

/// Every scanned id's outcome: changed; still there but no longer meeting the condition (skipped);
/// or gone before we got to it.
fn outcomes(ids: &[i64], done: &[i64], remaining: &[i64]) -> Vec<(i64, Outcome, Option<&'static str>)> {
    ids.iter()
        .map(|id| {
            let outcome = if done.contains(id) {
                Outcome::Deleted
            } else if remaining.contains(id) {
                Outcome::Skipped
            } else {
                Outcome::AlreadyGone
            };
            (*id, outcome, None)
        })
        .collect()
}
