//! The steps and evidence of deletion cases: what each store's attempt found, did and left, the
//! needs-review list, and the final mail's bookkeeping. Same repository as the cases.

use super::{
    cases::{DeletionCases, EvidenceRow, NeedsReview, StepRecord, StepRow},
    stores::Store,
};
use crate::{
    db::{Dialect, Sql, seconds},
    on_db, sql,
};

const STEPS: Sql = sql!(
    "SELECT position, store, action, outcome, reason, found, remaining, attempts,
            next_attempt_at, verified_at, updated_at,
            (next_attempt_at IS NULL OR next_attempt_at <= " now ") AS due
       FROM deletion_steps WHERE case_id = $1 ORDER BY position"
);
/// The larger of two numbers is `max` on SQLite and `greatest` on PostgreSQL.
const NOTE_FOUND: Sql = sql!(
    "UPDATE deletion_steps
        SET found = CASE WHEN CAST($3 AS BIGINT) IS NULL THEN found
                         ELSE " { sqlite: "max", postgres: "greatest" } "(COALESCE(found, 0), $3) END,
            updated_at = " now "
      WHERE case_id = $1 AND store = $2"
);
const EVIDENCE: Sql = Sql::same(
    "INSERT INTO deletion_evidence (case_id, store, action, outcome, searched_by, found,
                                    deleted, remaining, detail, started_at)
     SELECT case_id, store, action, $3, $4, $5, $6, $7, $8, updated_at
       FROM deletion_steps WHERE case_id = $1 AND store = $2",
);
const RECORD_STEP: Sql = sql!(
    "UPDATE deletion_steps
        SET outcome = $3, reason = $4, remaining = COALESCE($5, remaining),
            attempts = CASE WHEN $6 THEN attempts + 1 ELSE 0 END,
            next_attempt_at = " now " + " secs("$7") ",
            verified_at = CASE WHEN $8 THEN " now " ELSE verified_at END,
            updated_at = " now "
      WHERE case_id = $1 AND store = $2
        AND outcome NOT IN ('deleted', 'not_found', 'documented_constraint')"
);
const REVERIFY: Sql = sql!(
    "UPDATE deletion_steps
        SET remaining = $3,
            verified_at = CASE WHEN $3 = 0 THEN " now " ELSE NULL END,
            outcome = CASE WHEN $3 = 0 THEN outcome ELSE 'retryable' END,
            reason = CASE WHEN $3 = 0 THEN reason ELSE 'found again by the final verification' END,
            next_attempt_at = NULL, updated_at = " now "
      WHERE case_id = $1 AND store = $2"
);
/// Seconds until a time: REAL arithmetic on SQLite, an interval's epoch on PostgreSQL.
const STEP_WAIT: Sql = sql!(
    "SELECT " { sqlite: "max(next_attempt_at - unixepoch('subsec'), 0.0)",
                postgres: "greatest(extract(epoch FROM next_attempt_at - now())::float8, 0)" }
    " FROM deletion_steps WHERE case_id = $1 AND store = $2 AND next_attempt_at IS NOT NULL"
);
const RETRY_STEPS: Sql = sql!(
    "UPDATE deletion_steps SET outcome = 'retryable', attempts = 0, next_attempt_at = NULL, updated_at = " now "
      WHERE case_id = $1 AND outcome = 'needs_review'"
);
const CASE_DUE_NOW: Sql = sql!("UPDATE deletion_cases SET next_attempt_at = " now " WHERE id = $1");
const NEEDS_REVIEW: Sql = Sql::same(
    "SELECT c.reference, s.store, s.reason, s.attempts, s.updated_at
       FROM deletion_steps s JOIN deletion_cases c ON c.id = s.case_id
      WHERE s.outcome = 'needs_review' ORDER BY s.updated_at, c.id",
);
const EVIDENCE_OF_CASE: Sql = Sql::same(
    "SELECT store, action, outcome, searched_by, found, deleted, remaining, detail, started_at, finished_at
       FROM deletion_evidence WHERE case_id = $1 ORDER BY id",
);
const FINAL_MAIL_DONE: Sql =
    Sql::same("UPDATE deletion_cases SET final_mail = $2, notify_email = NULL WHERE id = $1 AND final_mail IS NULL");
const FINAL_MAIL_FAILED: Sql =
    Sql::same("UPDATE deletion_cases SET mail_attempts = mail_attempts + 1 WHERE id = $1 RETURNING mail_attempts");
const SUBJECT_LANG: Sql = Sql::same("SELECT lang FROM users WHERE id = $1");

impl DeletionCases {
    /// A case's steps in run order.
    pub async fn steps(&self, case_id: i64) -> Result<Vec<StepRow>, sqlx::Error> {
        on_db!(self.db(), |pool| sqlx::query_as(pool.sql(&STEPS)).bind(case_id).fetch_all(pool).await)
    }

    /// Records what a search by the store's key found, before anything is deleted: a crash
    /// after the delete then still knows there was something (the largest search wins).
    pub async fn note_found(&self, case_id: i64, store: Store, found: Option<i64>) -> Result<(), sqlx::Error> {
        on_db!(self.db(), |pool| {
            let query = sqlx::query(pool.sql(&NOTE_FOUND)).bind(case_id).bind(store.code()).bind(found);
            query.execute(pool).await?;
        });
        Ok(())
    }

    /// Writes an attempt's outcome to its step and its evidence row, in one transaction. Only a
    /// step that is not done yet is updated, so a late duplicate cannot overwrite a result.
    pub async fn record(&self, case_id: i64, r: &StepRecord) -> Result<bool, sqlx::Error> {
        let store = r.store;
        let retry_in = r.retry_in.map(seconds);
        let failed = retry_in.is_some() || r.outcome == super::Outcome::NeedsReview;
        let verified = r.remaining == Some(0);
        let done = on_db!(self.db(), |pool| {
            let mut tx = pool.begin_write().await?;
            sqlx::query(pool.sql(&EVIDENCE))
                .bind(case_id)
                .bind(store.code())
                .bind(r.outcome.code())
                .bind(store.searched_by())
                .bind(r.found)
                .bind(r.deleted)
                .bind(r.remaining)
                .bind(&r.reason)
                .execute(&mut *tx)
                .await?;
            let done = sqlx::query(pool.sql(&RECORD_STEP))
                .bind(case_id)
                .bind(store.code())
                .bind(r.outcome.code())
                .bind(&r.reason)
                .bind(r.remaining)
                .bind(failed)
                .bind(retry_in)
                .bind(verified)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            tx.commit().await?;
            done
        });
        Ok(done == 1)
    }

    /// The final look: a done step whose store holds data again is reopened (retryable, due now);
    /// one that is still clean gets a fresh verification time.
    pub async fn reverify(&self, case_id: i64, store: Store, remaining: i64) -> Result<(), sqlx::Error> {
        on_db!(self.db(), |pool| {
            let query = sqlx::query(pool.sql(&REVERIFY)).bind(case_id).bind(store.code()).bind(remaining);
            query.execute(pool).await?;
        });
        Ok(())
    }

    /// How long until a step's backoff is over, by the database's clock (the clock that set
    /// `next_attempt_at`); `None` when it has no backoff. Never negative.
    pub async fn step_wait(&self, case_id: i64, store: Store) -> Result<Option<f64>, sqlx::Error> {
        on_db!(self.db(), |pool| {
            sqlx::query_scalar(pool.sql(&STEP_WAIT)).bind(case_id).bind(store.code()).fetch_optional(pool).await
        })
    }

    /// An admin looked at the stuck steps: they get a fresh set of retries, due now.
    pub async fn retry_needs_review(&self, case_id: i64) -> Result<u64, sqlx::Error> {
        on_db!(self.db(), |pool| {
            let reset = sqlx::query(pool.sql(&RETRY_STEPS)).bind(case_id).execute(pool).await?.rows_affected();
            sqlx::query(pool.sql(&CASE_DUE_NOW)).bind(case_id).execute(pool).await?;
            Ok(reset)
        })
    }

    /// Every step waiting for an admin, oldest first.
    pub async fn needs_review(&self) -> Result<Vec<NeedsReview>, sqlx::Error> {
        on_db!(self.db(), |pool| sqlx::query_as(pool.sql(&NEEDS_REVIEW)).fetch_all(pool).await)
    }

    /// A case's evidence, in the order it was written.
    pub async fn evidence(&self, case_id: i64) -> Result<Vec<EvidenceRow>, sqlx::Error> {
        on_db!(self.db(), |pool| sqlx::query_as(pool.sql(&EVIDENCE_OF_CASE)).bind(case_id).fetch_all(pool).await)
    }

    /// The final mail left (or will never leave): the address is dropped in the same statement.
    pub async fn final_mail_done(&self, case_id: i64, result: &'static str) -> Result<bool, sqlx::Error> {
        let done = on_db!(self.db(), |pool| {
            sqlx::query(pool.sql(&FINAL_MAIL_DONE)).bind(case_id).bind(result).execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// Counts a failed attempt at the final mail; returns the attempts so far.
    pub async fn final_mail_failed(&self, case_id: i64) -> Result<i32, sqlx::Error> {
        on_db!(self.db(), |pool| {
            let rows = sqlx::query_scalar(pool.sql(&FINAL_MAIL_FAILED)).bind(case_id).fetch_all(pool).await;
            rows.and_then(crate::db::one_written_row)
        })
    }

    /// The account's language, for the final mail (the row is still there when it is written).
    pub async fn subject_lang(&self, subject_id: i64) -> Result<Option<crate::i18n::Lang>, sqlx::Error> {
        on_db!(self.db(), |pool| {
            sqlx::query_scalar(pool.sql(&SUBJECT_LANG)).bind(subject_id).fetch_optional(pool).await
        })
    }
}
