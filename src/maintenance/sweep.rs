//! The expiry sweeps. Each is one table, one "expired at the cutoff" condition and what to do
//! with a row that meets it (delete it, or scrub its personal data). A run walks the table by id
//! (keyset, never OFFSET) in bounded batches; each batch deletes with the condition repeated, in
//! one transaction with its ledger items, so a row renewed after the scan survives and is
//! recorded as skipped.

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{Kind, Outcome, Target, batch::Batch};
use crate::{
    db::{Db, Dialect, Sql, Timestamp},
    on_db, sql,
};

/// Sweep settings that come from the configuration.
#[derive(Clone, Copy, Debug)]
pub struct SweepSettings {
    pub session_idle: Duration,
    /// How long purged shares keep their recipient, file name, message and uploader note, and the
    /// mail and webhook outboxes their finished messages.
    pub retention: Duration,
}

/// Spent and expired codes are kept this long after expiry, for the sender's questions.
const CODE_KEEP: Duration = Duration::from_secs(3600);
/// Used and expired invitations stay on the team page this long.
const INVITATION_KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

/// One sweep's statements. Its condition reads `$2`, the cutoff, and `$3`, the idle cutoff (only
/// the sessions' condition uses it); `$1` is the scan's cursor, or the batch of ids.
#[derive(Debug)]
struct Statements {
    /// The next ids that meet the condition after the cursor, up to `$4` of them.
    scan: Sql,
    /// Deletes (or scrubs) the batch's rows that still meet the condition, returning their ids.
    change: Sql,
    /// The batch's rows still there.
    present: Sql,
    /// Scrubs what hangs on the batch's rows first, while their condition still finds them (the
    /// shares' retention sweep: their files' names and their request's uploader note).
    scrub_related: &'static [Sql],
}

/// Builds a sweep's [`Statements`] from its table and condition: its rows are deleted, or, given
/// `scrub` and `related`, the personal data of its rows and of the rows of each `related` table
/// that share their handover is emptied. The batch
/// of ids is a JSON array read with `json_each` on SQLite and a bigint[] read with `unnest` on
/// PostgreSQL.
macro_rules! statements {
    ($table:literal, $condition:literal) => {
        statements!(@ $table, $condition, ["DELETE FROM " $table], &[])
    };
    ($table:literal, $condition:literal, scrub: $scrub:literal, related: [$($related:literal),+]) => {
        statements!(@ $table, $condition, [$scrub], &[$(sql!(
            $related " WHERE handover_id IN (SELECT handover_id FROM " $table " WHERE id IN ("
            { sqlite: "SELECT value FROM json_each($1)", postgres: "SELECT unnest($1::bigint[])" }
            ") AND " $condition ")"
        )),+])
    };
    (@ $table:literal, $condition:literal, [$($change:tt)+], $scrub_related:expr) => {
        Statements {
            scan: Sql::same(concat!(
                "SELECT id FROM ", $table, " WHERE id > $1 AND ", $condition, " ORDER BY id LIMIT $4"
            )),
            change: sql!(
                $($change)+ " WHERE id IN ("
                { sqlite: "SELECT value FROM json_each($1)", postgres: "SELECT unnest($1::bigint[])" }
                ") AND " $condition " RETURNING id"
            ),
            present: sql!(
                "SELECT id FROM " $table " WHERE id IN ("
                { sqlite: "SELECT value FROM json_each($1)", postgres: "SELECT unnest($1::bigint[])" } ")"
            ),
            scrub_related: $scrub_related,
        }
    };
}

const SESSIONS: Statements = statements!("sessions", "(expires_at <= $2 OR last_seen_at <= $3)");
const CODES: Statements = statements!("otp_challenges", "expires_at <= $2");
const INVITATIONS: Statements = statements!("invitations", "(used_at <= $2 OR expires_at <= $2)");
const OUTBOX: Statements = statements!("mail_outbox", "status IN ('sent', 'dead', 'dropped') AND created_at <= $2");
const RATE_LIMITS: Statements = statements!("rate_limit_hits", "at <= $2");
/// A request's share is a share too: once it is scrubbed, so is the note its uploader left.
const SHARE_RETENTION: Statements = statements!(
    "shares",
    "status = 'purged' AND recipient_email <> '' AND purged_at <= $2",
    scrub: "UPDATE shares SET recipient_email = '', message = ''",
    related: ["UPDATE files SET original_name = ''", "UPDATE file_requests SET uploader_note = ''"]
);
/// Webhook messages done with (delivered, given up, or never to be sent) go whole: their body
/// names the recipient and the files, and is signed as is, so it cannot be scrubbed in place.
/// Only a message whose source the dispatcher never reads again goes: its id at least the
/// dispatcher's lookback (200 ids) behind that source's cursor, or a test event, which is made
/// once. A message the dispatcher could still read would be made and sent again once it is gone
/// (a quiet instance's last 200 events can be older than the retention). `CASE` keeps
/// PostgreSQL from casting a source of another kind.
const WEBHOOK_MESSAGES: Statements = statements!(
    "webhook_messages",
    "status IN ('delivered', 'dead', 'dropped') AND created_at <= $2
     AND CASE WHEN source LIKE 'test:%' THEN TRUE
              ELSE EXISTS (SELECT 1 FROM webhook_cursors c
                            WHERE CASE WHEN source LIKE c.name || ':%'
                                       THEN CAST(substr(source, length(c.name) + 2) AS BIGINT) <= c.last_id - 200
                                       ELSE FALSE END) END"
);

#[derive(Clone, Debug)]
pub struct Sweep {
    pub kind: Kind,
    /// The name a ledger item gives the row.
    pub target_kind: Target,
    statements: &'static Statements,
    /// Rows are swept once they met the condition this long before the run's cutoff.
    keep: Duration,
    /// How long before the cutoff an unused row counts as idle (sessions; zero elsewhere).
    idle: Duration,
}

impl Sweep {
    pub fn new(kind: Kind, settings: SweepSettings) -> Self {
        let (target_kind, statements, keep, idle) = match kind {
            Kind::Sessions => (Target::Session, &SESSIONS, Duration::ZERO, settings.session_idle),
            Kind::Codes => (Target::Code, &CODES, CODE_KEEP, Duration::ZERO),
            Kind::Invitations => (Target::Invitation, &INVITATIONS, INVITATION_KEEP, Duration::ZERO),
            Kind::Outbox => (Target::Mail, &OUTBOX, settings.retention, Duration::ZERO),
            Kind::RateLimits => (Target::RateLimitHit, &RATE_LIMITS, crate::ratelimit::LONGEST_WINDOW, Duration::ZERO),
            Kind::ShareRetention => (Target::SharePersonalData, &SHARE_RETENTION, settings.retention, Duration::ZERO),
            Kind::WebhookMessages => (Target::WebhookMessage, &WEBHOOK_MESSAGES, settings.retention, Duration::ZERO),
            Kind::All | Kind::ShareGc | Kind::Leftovers => unreachable!("{kind:?} is not a sweep"),
        };
        Self { kind, target_kind, statements, keep, idle }
    }

    /// A walk over this sweep's table for one run whose cutoff is `run_cutoff`.
    pub fn start(&self, db: Db, run_id: i64, run_cutoff: Timestamp) -> SweepRun<'_> {
        let cutoff = run_cutoff.0 - chrono::Duration::from_std(self.keep).unwrap_or(chrono::Duration::MAX);
        let idle_cutoff = cutoff - chrono::Duration::from_std(self.idle).unwrap_or(chrono::Duration::MAX);
        SweepRun { sweep: self, db, run_id, cutoff, idle_cutoff, after: 0 }
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
    /// Rows last used before this are idle (sessions).
    idle_cutoff: DateTime<Utc>,
    /// The keyset cursor: the highest id handled so far.
    after: i64,
}

/// A time as each backend compares it with a column: REAL seconds on SQLite, timestamptz on
/// PostgreSQL.
trait BindTime: Dialect {
    type Time;

    fn time(&self, at: DateTime<Utc>) -> Self::Time;
}

impl BindTime for sqlx::SqlitePool {
    type Time = f64;

    fn time(&self, at: DateTime<Utc>) -> f64 {
        at.timestamp_micros() as f64 / 1_000_000.0
    }
}

impl BindTime for sqlx::PgPool {
    type Time = DateTime<Utc>;

    fn time(&self, at: DateTime<Utc>) -> DateTime<Utc> {
        at
    }
}

impl SweepRun<'_> {
    /// The next batch of ids that meet the condition, after the cursor.
    pub async fn scan(&self, limit: u32) -> Result<Vec<i64>, sqlx::Error> {
        let scan = &self.sweep.statements.scan;
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(scan))
                .bind(self.after)
                .bind(pool.time(self.cutoff))
                .bind(pool.time(self.idle_cutoff))
                .bind(i64::from(limit))
                .fetch_all(pool)
                .await
        })
    }

    /// Deletes (or scrubs) those of `ids` that still meet the condition, and records every id's
    /// outcome in the ledger, in one transaction. Moves the cursor past `ids`.
    pub async fn apply(&mut self, ids: &[i64]) -> Result<BatchReport, sqlx::Error> {
        if ids.is_empty() {
            return Ok(BatchReport::default());
        }
        let sweep = self.sweep;
        let statements = sweep.statements;
        let (done, remaining) = on_db!(&self.db, |pool| {
            let (batch, cutoff, idle_cutoff) =
                (pool.id_batch(ids), pool.time(self.cutoff), pool.time(self.idle_cutoff));
            let mut tx = pool.begin_write().await?;
            for related in statements.scrub_related {
                let query = sqlx::query(pool.sql(related)).bind(&batch).bind(cutoff).bind(idle_cutoff);
                query.execute(&mut *tx).await?;
            }
            let done: Vec<i64> = sqlx::query_scalar(pool.sql(&statements.change))
                .bind(&batch)
                .bind(cutoff)
                .bind(idle_cutoff)
                .fetch_all(&mut *tx)
                .await?;
            let remaining: Vec<i64> =
                sqlx::query_scalar(pool.sql(&statements.present)).bind(&batch).fetch_all(&mut *tx).await?;
            pool.record_items(&mut tx, self.run_id, sweep.target_kind, &outcomes(ids, &done, &remaining)).await?;
            tx.commit().await?;
            (done, remaining)
        });
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

#[cfg(test)]
mod tests {
    use super::{SESSIONS, SHARE_RETENTION, WEBHOOK_MESSAGES};

    #[test]
    fn a_sweep_deletes_its_batch_through_each_dialects_id_list_with_the_condition_repeated() {
        assert_eq!(
            SESSIONS.change.sqlite,
            "DELETE FROM sessions WHERE id IN (SELECT value FROM json_each($1)) \
             AND (expires_at <= $2 OR last_seen_at <= $3) RETURNING id"
        );
        assert_eq!(SESSIONS.present.postgres, "SELECT id FROM sessions WHERE id IN (SELECT unnest($1::bigint[]))");
        assert!(SESSIONS.scrub_related.is_empty());
    }

    #[test]
    fn the_retention_sweep_scrubs_shares_their_file_names_and_uploader_notes_instead_of_deleting() {
        assert!(SHARE_RETENTION.change.postgres.starts_with("UPDATE shares SET recipient_email = '', message = ''"));
        let [files, note] = SHARE_RETENTION.scrub_related else { panic!("files and the request's note") };
        assert!(
            files.sqlite.starts_with(
                "UPDATE files SET original_name = '' WHERE handover_id IN (SELECT handover_id FROM shares"
            )
        );
        assert!(note.postgres.starts_with("UPDATE file_requests SET uploader_note = '' WHERE handover_id IN"));
    }

    #[test]
    fn the_webhook_sweep_leaves_what_the_dispatchers_lookback_reads_again() {
        let behind = format!("c.last_id - {}", crate::services::webhooks::LOOKBACK);
        assert!(WEBHOOK_MESSAGES.change.sqlite.contains(&behind), "the sweep's lookback is the dispatcher's");
    }
}
