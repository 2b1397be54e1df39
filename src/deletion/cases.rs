//! Deletion cases and their steps: the state machine and its repository. Every state change is one
//! conditional UPDATE whose WHERE holds the precondition, and only forward moves are ever issued.

use std::time::Duration;

use super::stores::{Action, Outcome, Store};
use crate::{
    // Every active admin's row is locked first: two cases for the last two admins would otherwise
    // each see the other still active.
    accounts::LOCK_ACTIVE_ADMINS,
    db::{Db, Dialect, Sql, Timestamp, is_unique_violation, seconds},
    on_db,
    secret::random_token,
    share::writes,
    sql,
};

crate::db_code! {
    /// Where a case stands. The order of `ALL` is the order of the seed.
    pub enum CaseState {
        Received = "received",
        Validated = "validated",
        InProgress = "in_progress",
        PartiallyCompleted = "partially_completed",
        VerificationPending = "verification_pending",
        Completed = "completed",
        Failed = "failed",
    }
}

impl CaseState {
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed)
    }

    /// The forward moves; anything else (backwards, sideways, out of a final state) is refused.
    pub fn can_move_to(self, to: CaseState) -> bool {
        use CaseState::*;
        matches!(
            (self, to),
            (Received, Validated | Failed)
                | (Validated, InProgress | Failed)
                | (InProgress, PartiallyCompleted | VerificationPending)
                | (PartiallyCompleted, VerificationPending)
                | (VerificationPending, Completed)
        )
    }
}

crate::db_code! {
    /// Who opened a case.
    pub enum ActorRole {
        /// The sender, for their own account.
        Own = "self",
        Admin = "admin",
        /// The command line (re-applying after a restore).
        Operator = "operator",
    }
}

/// A case as pages and the runner see it. No personal data but `notify_email`, which is never
/// shown and is cleared once the final mail has left.
#[derive(Clone, sqlx::FromRow)]
pub struct Case {
    pub id: i64,
    pub reference: String,
    pub subject_id: i64,
    /// The account row's creation time: with the id, it names exactly one account, ever.
    pub subject_created_at: Timestamp,
    pub actor_id: Option<i64>,
    pub actor_role: ActorRole,
    pub reapplies: Option<String>,
    state: CaseState,
    pub notify_email: Option<String>,
    pub final_mail: Option<String>,
    pub mail_attempts: i32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

impl std::fmt::Debug for Case {
    // The address must not reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Case").field("reference", &self.reference).field("state", &self.state).finish_non_exhaustive()
    }
}

impl Case {
    pub fn state(&self) -> CaseState {
        self.state
    }
}

/// One store's step of a case.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct StepRow {
    pub position: i32,
    pub store: Store,
    pub action: Action,
    outcome: Outcome,
    pub reason: Option<String>,
    pub found: Option<i64>,
    pub remaining: Option<i64>,
    pub attempts: i32,
    pub next_attempt_at: Option<Timestamp>,
    pub verified_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    /// The step may run now (no backoff pending).
    pub due: bool,
}

impl StepRow {
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }
}

/// One finished attempt of a step.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct EvidenceRow {
    pub store: Store,
    pub action: Action,
    pub outcome: Outcome,
    pub searched_by: String,
    pub found: Option<i64>,
    pub deleted: Option<i64>,
    pub remaining: Option<i64>,
    pub detail: Option<String>,
    pub started_at: Timestamp,
    pub finished_at: Timestamp,
}

/// A step whose retries are exhausted: it waits for an admin.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct NeedsReview {
    pub reference: String,
    pub store: Store,
    pub reason: Option<String>,
    pub attempts: i32,
    pub updated_at: Timestamp,
}

/// Who asks to delete whose data.
#[derive(Clone, Debug)]
pub struct OpenRequest {
    pub subject_id: i64,
    pub actor_id: Option<i64>,
    pub role: ActorRole,
    /// Re-applying this earlier case after a restore: no final mail.
    pub reapplies: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("no such account")]
    NoSuchAccount,
    #[error("the account already has an open deletion case")]
    AlreadyOpen,
    #[error("the last active admin cannot be deleted")]
    LastAdmin,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// What a step attempt found and did, written to the step and the evidence in one transaction.
#[derive(Clone, Debug)]
pub struct StepRecord {
    pub store: Store,
    pub outcome: Outcome,
    pub reason: Option<String>,
    pub found: Option<i64>,
    pub deleted: Option<i64>,
    pub remaining: Option<i64>,
    /// For a retryable step: how long to wait.
    pub retry_in: Option<Duration>,
}

/// The columns of a [`Case`], spliced into each statement that reads one.
macro_rules! case_select {
    ($($tail:literal)+) => {
        Sql::same(concat!(
            "SELECT id, reference, subject_id, subject_created_at, actor_id, actor_role, reapplies, state,
                    notify_email, final_mail, mail_attempts, created_at, updated_at, finished_at
               FROM deletion_cases ",
            $($tail),+
        ))
    };
}

const FIND: Sql = case_select!("WHERE id = $1");
const FIND_BY_REFERENCE: Sql = case_select!("WHERE reference = $1");
const LIST: Sql = case_select!("ORDER BY id DESC LIMIT $1");
const COUNT_BY_STATE: Sql = Sql::same("SELECT state, COUNT(*) FROM deletion_cases GROUP BY state");
const OPEN_CASE_OF: Sql =
    Sql::same("SELECT id FROM deletion_cases WHERE subject_id = $1 AND state NOT IN ('completed', 'failed')");

/// Then the account row (PostgreSQL locks it), so two racing requests for it cannot both pass.
const IS_LAST_ADMIN: Sql = sql!(
    "SELECT role = 'admin' AND disabled_at IS NULL AND NOT EXISTS (SELECT 1 FROM users o
       WHERE o.id <> u.id AND o.role = 'admin' AND o.disabled_at IS NULL)
       FROM users u WHERE id = $1" { sqlite: "", postgres: " FOR UPDATE" }
);
const INSERT_CASE: Sql = sql!(
    "INSERT INTO deletion_cases (reference, subject_id, subject_created_at, actor_id, actor_role,
            reapplies, notify_email, final_mail, lease_owner, lease_until)
     SELECT $2, id, created_at, $3, $4, $5, CASE WHEN CAST($6 AS TEXT) IS NULL THEN email END, $6, $7,
            " now " + " secs("$8") "
       FROM users WHERE id = $1 RETURNING id"
);
const INSERT_STEP: Sql =
    Sql::same("INSERT INTO deletion_steps (case_id, position, store, action) VALUES ($1, $2, $3, $4)");
const DISABLE_ACCOUNT: Sql = sql!("UPDATE users SET disabled_at = COALESCE(disabled_at, " now ") WHERE id = $1");
const TRANSITION: Sql = sql!(
    "UPDATE deletion_cases
        SET state = $3, updated_at = " now ",
            finished_at = CASE WHEN $4 THEN " now " END,
            notify_email = CASE WHEN $4 THEN NULL ELSE notify_email END
      WHERE id = $1 AND state = $2
        AND ($3 <> 'completed' OR NOT EXISTS (SELECT 1 FROM deletion_steps
              WHERE case_id = $1 AND (outcome NOT IN ('deleted', 'not_found', 'documented_constraint')
                    OR (action = 'delete' AND (verified_at IS NULL OR remaining <> 0)))))"
);
const SUBJECT_PRESENT: Sql = Sql::same(
    "SELECT count(*) FROM deletion_cases c JOIN users u
       ON u.id = c.subject_id AND u.created_at = c.subject_created_at WHERE c.id = $1",
);
const ACCOUNT_CREATED_AT: Sql = Sql::same("SELECT created_at FROM users WHERE id = $1");

/// A unique violation while opening is the account's case already open.
fn open_error(error: sqlx::Error) -> OpenError {
    if is_unique_violation(&error) { OpenError::AlreadyOpen } else { error.into() }
}

/// An opaque reference: random, unrelated to any id, easy to read out on the phone.
fn new_reference() -> String {
    let token = random_token();
    format!("DEL-{}", token.expose()[..12].to_uppercase())
}

#[derive(Clone, Debug)]
pub struct DeletionCases {
    db: Db,
}

impl DeletionCases {
    pub fn new(db: Db) -> Self {
        Self { db }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// Opens a case and stops new writes in the same transaction: the account is disabled (no
    /// sign-in, no new shares), its API tokens and its active shares are revoked. `lease_owner`
    /// holds the case for the runner that will start it at once.
    pub async fn open(&self, request: &OpenRequest, lease_owner: &str, lease: Duration) -> Result<Case, OpenError> {
        let reference = new_reference();
        let lease = seconds(lease);
        let mail = if request.reapplies.is_some() { Some("none") } else { None };
        let id: i64 = on_db!(&self.db, |pool| {
            let mut tx = pool.begin_write().await?;
            sqlx::query(pool.sql(&LOCK_ACTIVE_ADMINS)).execute(&mut *tx).await?;
            let last_admin: Option<bool> =
                sqlx::query_scalar(pool.sql(&IS_LAST_ADMIN)).bind(request.subject_id).fetch_optional(&mut *tx).await?;
            match last_admin {
                None => return Err(OpenError::NoSuchAccount),
                Some(true) => return Err(OpenError::LastAdmin),
                Some(false) => {}
            }
            let id: i64 = sqlx::query_scalar(pool.sql(&INSERT_CASE))
                .bind(request.subject_id)
                .bind(&reference)
                .bind(request.actor_id)
                .bind(request.role.code())
                .bind(&request.reapplies)
                .bind(mail)
                .bind(lease_owner)
                .bind(lease)
                .fetch_one(&mut *tx)
                .await
                // A second open case for the account breaks the partial unique index.
                .map_err(open_error)?;
            for store in Store::ORDER {
                sqlx::query(pool.sql(&INSERT_STEP))
                    .bind(id)
                    .bind(store.position() as i32)
                    .bind(store.code())
                    .bind(store.action().code())
                    .execute(&mut *tx)
                    .await?;
            }
            sqlx::query(pool.sql(&DISABLE_ACCOUNT)).bind(request.subject_id).execute(&mut *tx).await?;
            sqlx::query(pool.sql(&crate::accounts::tokens::REVOKE_ALL_OF_USER))
                .bind(request.subject_id)
                .bind(request.actor_id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(pool.sql(&writes::REVOKE_ALL_OF_SENDER)).bind(request.subject_id).execute(&mut *tx).await?;
            tx.commit().await.map_err(open_error)?;
            id
        });
        Ok(self.find(id).await?.expect("the case just committed"))
    }

    pub async fn find(&self, id: i64) -> Result<Option<Case>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND)).bind(id).fetch_optional(pool).await)
    }

    pub async fn find_by_reference(&self, reference: &str) -> Result<Option<Case>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&FIND_BY_REFERENCE)).bind(reference).fetch_optional(pool).await)
    }

    /// Every case, newest first.
    pub async fn list(&self, limit: i64) -> Result<Vec<Case>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&LIST)).bind(limit).fetch_all(pool).await)
    }

    /// How many cases are in each state (states without cases are absent).
    pub async fn count_by_state(&self) -> Result<Vec<(CaseState, i64)>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&COUNT_BY_STATE)).fetch_all(pool).await)
    }

    /// Whether an account (id and creation time, so a reused id does not match) has an open case.
    pub async fn open_case_of(&self, subject_id: i64) -> Result<Option<i64>, sqlx::Error> {
        on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&OPEN_CASE_OF)).bind(subject_id).fetch_optional(pool).await)
    }

    /// Moves a case forward: one conditional UPDATE from exactly `from`. False when the move is
    /// not a forward one or the case was not in `from` (another runner moved it first).
    pub async fn transition(&self, id: i64, from: CaseState, to: CaseState) -> Result<bool, sqlx::Error> {
        if !from.can_move_to(to) {
            return Ok(false);
        }
        let finished = to.is_final();
        let done = on_db!(&self.db, |pool| {
            let query = sqlx::query(pool.sql(&TRANSITION)).bind(id).bind(from.code()).bind(to.code()).bind(finished);
            query.execute(pool).await?.rows_affected()
        });
        Ok(done == 1)
    }

    /// True while the account the case was opened for is still there: same id, same creation time.
    pub async fn subject_present(&self, id: i64) -> Result<bool, sqlx::Error> {
        let count: i64 =
            on_db!(&self.db, |pool| sqlx::query_scalar(pool.sql(&SUBJECT_PRESENT)).bind(id).fetch_one(pool).await?);
        Ok(count == 1)
    }

    /// The creation time of an account, to tell it from a later one that reuses its id.
    pub async fn account_created_at(&self, subject_id: i64) -> Result<Option<Timestamp>, sqlx::Error> {
        on_db!(&self.db, |pool| {
            sqlx::query_scalar(pool.sql(&ACCOUNT_CREATED_AT)).bind(subject_id).fetch_optional(pool).await
        })
    }
}
