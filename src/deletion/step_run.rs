//! One step of a deletion case: search its store by the subject's key, act, look again, and
//! record what was found, done and left; plus the final look over every store before a case may
//! complete.

use std::{io, time::Duration};

use super::{
    cases::{Case, CaseState, StepRecord, StepRow},
    runner::{Interrupted, PARKED, Runner},
    stores::{Action, Outcome, Store},
};
use crate::storage::{Deleted, StoreError};

impl Runner {
    /// Runs a step now, or says how long it waits (backoff) or that it waits for an admin.
    pub(super) async fn try_step(&self, case: &Case, step: &StepRow) -> anyhow::Result<Option<Duration>> {
        let store = step.store;
        if step.outcome() == Outcome::NeedsReview {
            if case.state() == CaseState::InProgress {
                self.cases.transition(case.id, CaseState::InProgress, CaseState::PartiallyCompleted).await?;
            }
            return Ok(Some(PARKED));
        }
        if !step.due {
            // The database's clock set the backoff, so the database's clock measures what is left.
            let until = self.cases.step_wait(case.id, store).await?.map(Duration::from_secs_f64);
            return Ok(Some(until.unwrap_or(self.policy.base)));
        }
        self.run_step(case, store, step).await?;
        Ok(None)
    }

    /// One attempt at one store: search by the key, act, look again, record.
    pub(super) async fn run_step(&self, case: &Case, store: Store, step: &StepRow) -> anyhow::Result<()> {
        let attempt = self.attempt(case, store).await;
        let record = match attempt {
            Err(error) if error.is::<Interrupted>() => return Err(error),
            Err(error) => {
                tracing::warn!(case = %case.reference, store = store.code(), error = %error, "deletion step failed");
                self.failure(store, step, failure_class(&error), None, None, None)
            }
            Ok((found, deleted, remaining)) => {
                if store.action() == Action::Retain {
                    let reason = store.constraint().map(str::to_owned);
                    StepRecord {
                        store,
                        outcome: Outcome::DocumentedConstraint,
                        reason,
                        found,
                        deleted: None,
                        remaining,
                        retry_in: None,
                    }
                } else if remaining.unwrap_or(0) > 0 {
                    self.failure(store, step, "verification found data left", found, Some(deleted), remaining)
                } else {
                    // "Not found" only after a successful search by the key, and only if no
                    // earlier attempt found anything either.
                    let ever_found = step.found.unwrap_or(0).max(found.unwrap_or(0));
                    let outcome = if ever_found > 0 { Outcome::Deleted } else { Outcome::NotFound };
                    StepRecord {
                        store,
                        outcome,
                        reason: None,
                        found,
                        deleted: Some(deleted),
                        remaining,
                        retry_in: None,
                    }
                }
            }
        };
        tracing::info!(
            case = %case.reference, store = store.code(), outcome = record.outcome.code(),
            found = record.found, deleted = record.deleted, remaining = record.remaining, "deletion step"
        );
        self.cases.record(case.id, &record).await?;
        Ok(())
    }

    pub(super) fn failure(
        &self,
        store: Store,
        step: &StepRow,
        reason: &str,
        found: Option<i64>,
        deleted: Option<i64>,
        remaining: Option<i64>,
    ) -> StepRecord {
        let exhausted = step.attempts + 1 >= self.policy.max_attempts;
        let (outcome, retry_in) = if exhausted {
            (Outcome::NeedsReview, None)
        } else {
            (Outcome::Retryable, Some(self.policy.backoff(step.attempts)))
        };
        StepRecord { store, outcome, reason: Some(reason.to_owned()), found, deleted, remaining, retry_in }
    }

    /// Returns (found, deleted, remaining) for one store.
    pub(super) async fn attempt(&self, case: &Case, store: Store) -> anyhow::Result<(Option<i64>, i64, Option<i64>)> {
        let subject = case.subject_id;
        if store == Store::StoredFiles {
            let keys = self.tables.storage_keys(subject).await?;
            self.cases.note_found(case.id, store, Some(keys.len() as i64)).await?;
            let mut deleted = 0;
            for key in &keys {
                match self.bounded(self.files.delete(key)).await {
                    Ok(Deleted::Removed) => deleted += 1,
                    Ok(Deleted::AlreadyAbsent) | Err(StoreError::NotFound) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            self.hook(store)?;
            let mut remaining = 0;
            for key in &keys {
                if self.bounded(self.files.holds(key)).await? {
                    remaining += 1;
                }
            }
            return Ok((Some(keys.len() as i64), deleted, Some(remaining)));
        }
        if store == Store::Uploads {
            // The bytes first, while the rows still name them; the rows then go as any table's.
            for key in self.tables.upload_keys(subject).await? {
                self.bounded(crate::uploads::delete_files(self.files.as_ref(), &key)).await?;
            }
        }
        let found = self.tables.count(store, subject).await?;
        self.cases.note_found(case.id, store, found).await?;
        if store.action() == Action::Retain {
            self.hook(store)?;
            return Ok((found, 0, None));
        }
        let deleted = self.tables.delete(store, subject).await? as i64;
        self.hook(store)?;
        let remaining = self.tables.count(store, subject).await?;
        Ok((found, deleted, remaining))
    }

    /// One call to the file store within the policy's deadline; past it, a storage failure
    /// ("timed out"), so the step backs off and the case resumes at its next attempt.
    async fn bounded<T>(&self, call: impl Future<Output = Result<T, StoreError>>) -> Result<T, StoreError> {
        match tokio::time::timeout(self.policy.store_deadline, call).await {
            Ok(answer) => answer,
            Err(_) => Err(StoreError::Io(io::Error::new(io::ErrorKind::TimedOut, STORE_TIMED_OUT))),
        }
    }

    pub(super) fn hook(&self, store: Store) -> Result<(), Interrupted> {
        if self.interrupt_after == Some(store) { Err(Interrupted(store)) } else { Ok(()) }
    }

    /// Before the account row goes, every store is looked at once more by its key: the tables
    /// counted, the disk checked for every file a file row names. A store that holds data again
    /// is reopened; the steps run in order, so a file that arrived late (its rows written after
    /// the files step) is deleted from disk before its row goes, while its key is still known.
    pub(super) async fn final_look(&self, case: &Case, steps: &[StepRow]) -> anyhow::Result<bool> {
        let mut reopened = false;
        for store in steps.iter().map(|s| s.store) {
            if store.action() != Action::Delete || store == Store::Account {
                continue;
            }
            let remaining = if store == Store::StoredFiles {
                self.files_on_disk(case.subject_id).await?
            } else {
                self.tables.count(store, case.subject_id).await?.unwrap_or(0)
            };
            self.cases.reverify(case.id, store, remaining).await?;
            if remaining > 0 {
                tracing::warn!(case = %case.reference, store = store.code(), remaining, "deletion: data found again");
                reopened = true;
            }
        }
        Ok(reopened)
    }

    /// How many of the files the subject's file rows name are on disk.
    pub(super) async fn files_on_disk(&self, subject: i64) -> anyhow::Result<i64> {
        let mut present = 0;
        for key in self.tables.storage_keys(subject).await? {
            if self.bounded(self.files.holds(&key)).await? {
                present += 1;
            }
        }
        Ok(present)
    }
}

/// What a store call past its deadline fails with.
const STORE_TIMED_OUT: &str = "the file store did not answer in time";

/// The class of a failure, safe to store: no paths, no values, no server text.
fn failure_class(error: &anyhow::Error) -> &'static str {
    match error.downcast_ref::<StoreError>() {
        Some(StoreError::Io(io)) if io.kind() == io::ErrorKind::TimedOut => "storage timeout",
        Some(_) => "storage",
        None if error.is::<sqlx::Error>() => "database",
        None => "other",
    }
}
