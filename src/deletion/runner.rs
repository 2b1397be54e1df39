//! Drives a deletion case: validates it, runs one step per store in order, looks again after
//! every step (rows counted by the store's key, files checked on disk), retries failures with
//! capped backoff, parks exhausted steps for review, sends the final mail, removes the account
//! row last and completes the case only when every store is verified.
//!
//! Idempotent and resumable: every step searches before it acts and accepts "already gone", what
//! a search found is written down before anything is deleted, and the case is held by a lease
//! that runs out if its runner dies, so a rerun picks up at the first step not done.

use std::{sync::Arc, time::Duration};

use lettre::message::Mailbox;

use super::{
    cases::{Case, CaseState, DeletionCases, OpenError, OpenRequest, StepRecord, StepRow},
    journal::{Entry, Journal},
    notice,
    stores::{Action, Outcome, Store, TableAdapter},
};
use crate::{
    db::Db,
    i18n::Lang,
    lifecycle::{Deleted, FileStore, StoreError},
    mail::Mailer,
};

/// When failed steps (and the final mail) are tried again.
#[derive(Clone, Copy, Debug)]
pub struct RetryPolicy {
    /// Wait after the first failure; doubles per failure…
    pub base: Duration,
    /// …up to this.
    pub cap: Duration,
    /// Failures in a row after which a step waits for an admin (needs review).
    pub max_attempts: i32,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self { base: Duration::from_secs(30), cap: Duration::from_secs(3600), max_attempts: 8 }
    }
}

impl RetryPolicy {
    fn backoff(&self, failures_before: i32) -> Duration {
        crate::retry::backoff(self.base, u32::try_from(failures_before).unwrap_or(0), self.cap)
    }
}

/// The runner stopped as a crash would, right after a step's action and before its outcome was
/// recorded (the test hook set with [`Runner::interrupt_after`]). The lease is kept, as a dead
/// process would keep it.
#[derive(Debug, thiserror::Error)]
#[error("interrupted after the action of the {0:?} step")]
pub struct Interrupted(pub Store);

/// How long the lease of a case lasts; renewed before every step.
const LEASE: Duration = Duration::from_secs(300);
/// A case whose steps wait for an admin is looked at again after this long.
const PARKED: Duration = Duration::from_secs(24 * 3600);
/// Steps one run takes at most, so a store that keeps refilling cannot hold a runner forever.
const MAX_MOVES_PER_RUN: u32 = 200;

/// Runs deletion cases. Clone it freely: it is a handful of handles.
#[derive(Clone)]
pub struct Runner {
    cases: DeletionCases,
    tables: TableAdapter,
    files: Arc<dyn FileStore>,
    mailer: Arc<dyn Mailer>,
    mail_from: Mailbox,
    journal: Journal,
    policy: RetryPolicy,
    owner: String,
    interrupt_after: Option<Store>,
}

impl Runner {
    pub fn new(
        db: Db,
        files: Arc<dyn FileStore>,
        mailer: Arc<dyn Mailer>,
        mail_from: Mailbox,
        journal: Journal,
    ) -> Self {
        Self {
            cases: DeletionCases::new(db.clone()),
            tables: TableAdapter::new(db),
            files,
            mailer,
            mail_from,
            journal,
            policy: RetryPolicy::default(),
            owner: format!("runner-{}", &crate::secret::random_token().expose()[..16]),
            interrupt_after: None,
        }
    }

    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Names the lease holder: a runner restarted under the same name takes its cases back at
    /// once instead of waiting for the lease to run out.
    pub fn with_owner(mut self, owner: &str) -> Self {
        self.owner = owner.to_owned();
        self
    }

    /// Test hook: stop like a crash right after `store`'s action, before its outcome is recorded.
    pub fn interrupt_after(mut self, store: Store) -> Self {
        self.interrupt_after = Some(store);
        self
    }

    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    pub fn cases(&self) -> &DeletionCases {
        &self.cases
    }

    /// Opens a case, held by this runner, and journals it.
    pub async fn open(&self, request: &OpenRequest) -> Result<Case, OpenError> {
        let case = self.cases.open(request, &self.owner, LEASE).await?;
        self.journal_quietly("opened", &case);
        tracing::info!(case = %case.reference, actor_role = request.role.code(), "deletion case opened");
        Ok(case)
    }

    /// Runs a case in the background: it goes on after the request (and the session) that
    /// opened it are gone.
    pub fn spawn(&self, case_id: i64) {
        let runner = self.clone();
        tokio::spawn(async move {
            if let Err(error) = runner.run_case(case_id).await {
                tracing::warn!(case_id, error = %error, "deletion run stopped; the worker resumes it");
            }
        });
    }

    /// Runs up to `limit` due cases; returns how many this runner took.
    pub async fn run_due(&self, limit: i64) -> anyhow::Result<u32> {
        let mut taken = 0;
        for id in self.cases.due(limit).await? {
            if self.run_case(id).await?.is_some() {
                taken += 1;
            }
        }
        Ok(taken)
    }

    /// Works on one case until it is finished or has to wait. `None` when another runner holds it.
    pub async fn run_case(&self, case_id: i64) -> anyhow::Result<Option<CaseState>> {
        if !self.cases.claim(case_id, &self.owner, LEASE).await? {
            return Ok(None);
        }
        match self.advance(case_id).await {
            Ok((state, wait)) => {
                self.cases.release(case_id, &self.owner, wait).await?;
                Ok(Some(state))
            }
            Err(error) if error.is::<Interrupted>() => Err(error),
            Err(error) => {
                self.cases.release(case_id, &self.owner, self.policy.base).await?;
                Err(error)
            }
        }
    }

    /// The state machine; returns where the case stands and how long until it is due again.
    async fn advance(&self, case_id: i64) -> anyhow::Result<(CaseState, Duration)> {
        for _ in 0..MAX_MOVES_PER_RUN {
            let case = self.cases.find(case_id).await?.ok_or_else(|| anyhow::anyhow!("case {case_id} vanished"))?;
            let state = case.state();
            if state.is_final() {
                return Ok((state, Duration::ZERO));
            }
            // Renewed before every move; a runner that lost its lease (it stalled past it) stops.
            if !self.cases.claim(case_id, &self.owner, LEASE).await? {
                anyhow::bail!("case {}: the lease went to another runner", case.reference);
            }
            match state {
                CaseState::Completed | CaseState::Failed => return Ok((state, Duration::ZERO)),
                CaseState::Received => {
                    // The account must be the very one the case was opened for.
                    let to = if self.cases.subject_present(case_id).await? {
                        CaseState::Validated
                    } else {
                        tracing::warn!(case = %case.reference, "deletion case failed: its account is not there");
                        CaseState::Failed
                    };
                    self.cases.transition(case_id, state, to).await?;
                }
                CaseState::Validated => {
                    self.cases.transition(case_id, state, CaseState::InProgress).await?;
                }
                _ => {
                    if let Some(wait) = self.work(&case).await? {
                        let state = self.cases.find(case_id).await?.map(|c| c.state()).unwrap_or(state);
                        return Ok((state, wait));
                    }
                }
            }
        }
        Ok((CaseState::InProgress, self.policy.base))
    }

    /// One move of a case in progress. `Some(wait)`: nothing to do before then.
    async fn work(&self, case: &Case) -> anyhow::Result<Option<Duration>> {
        let state = case.state();
        let steps = self.cases.steps(case.id).await?;
        let next = steps.iter().find(|s| !s.outcome().is_done() && s.store() != Some(Store::Account));
        if let Some(step) = next {
            return self.try_step(case, step).await;
        }
        if state != CaseState::VerificationPending {
            self.cases.transition(case.id, state, CaseState::VerificationPending).await?;
            return Ok(None);
        }
        if self.final_look(case, &steps).await? {
            return Ok(None);
        }
        if case.final_mail.is_none() {
            return self.final_mail(case, &steps).await;
        }
        let account = steps.iter().find(|s| s.store() == Some(Store::Account)).expect("every case has an account step");
        if !account.outcome().is_done() {
            return self.try_step(case, account).await;
        }
        if self.cases.transition(case.id, state, CaseState::Completed).await? {
            tracing::info!(case = %case.reference, "deletion case completed");
            self.journal_quietly("completed", case);
            return Ok(None);
        }
        anyhow::bail!("case {} could not be completed although every step is done", case.reference)
    }

    /// Runs a step now, or says how long it waits (backoff) or that it waits for an admin.
    async fn try_step(&self, case: &Case, step: &StepRow) -> anyhow::Result<Option<Duration>> {
        let store = step.store().ok_or_else(|| anyhow::anyhow!("unknown store {}", step.store))?;
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
    async fn run_step(&self, case: &Case, store: Store, step: &StepRow) -> anyhow::Result<()> {
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

    fn failure(
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
    async fn attempt(&self, case: &Case, store: Store) -> anyhow::Result<(Option<i64>, i64, Option<i64>)> {
        let subject = case.subject_id;
        if store == Store::StoredFiles {
            let keys = self.tables.storage_keys(subject).await?;
            self.cases.note_found(case.id, store, Some(keys.len() as i64)).await?;
            let mut deleted = 0;
            for key in &keys {
                match self.files.delete(key).await {
                    Ok(Deleted::Removed) => deleted += 1,
                    Ok(Deleted::AlreadyAbsent) | Err(StoreError::NotFound) => {}
                    Err(error) => return Err(error.into()),
                }
            }
            self.hook(store)?;
            let mut remaining = 0;
            for key in &keys {
                match self.files.open(key).await {
                    Err(StoreError::NotFound) => {}
                    Ok(_) => remaining += 1,
                    Err(error) => return Err(error.into()),
                }
            }
            return Ok((Some(keys.len() as i64), deleted, Some(remaining)));
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

    fn hook(&self, store: Store) -> Result<(), Interrupted> {
        if self.interrupt_after == Some(store) { Err(Interrupted(store)) } else { Ok(()) }
    }

    /// Before the account row goes, every store is looked at once more by its key: the tables
    /// counted, the disk checked for every file a file row names. A store that holds data again
    /// is reopened; the steps run in order, so a file that arrived late (its rows written after
    /// the files step) is deleted from disk before its row goes, while its key is still known.
    async fn final_look(&self, case: &Case, steps: &[StepRow]) -> anyhow::Result<bool> {
        let mut reopened = false;
        for store in steps.iter().filter_map(StepRow::store) {
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
    async fn files_on_disk(&self, subject: i64) -> anyhow::Result<i64> {
        let mut present = 0;
        for key in self.tables.storage_keys(subject).await? {
            match self.files.open(&key).await {
                Err(StoreError::NotFound) => {}
                Ok(_) => present += 1,
                Err(error) => return Err(error.into()),
            }
        }
        Ok(present)
    }

    /// The last mail to the sender, sent directly (never through the stored outbox) so that the
    /// address is kept nowhere once it has left. A failure backs off; past the limit the case
    /// goes on without it.
    async fn final_mail(&self, case: &Case, steps: &[StepRow]) -> anyhow::Result<Option<Duration>> {
        let Some(to) = case.notify_email.as_deref() else {
            self.cases.final_mail_done(case.id, "none").await?;
            return Ok(None);
        };
        let lang =
            self.cases.subject_lang(case.subject_id).await?.and_then(|l| Lang::from_code(&l)).unwrap_or_default();
        let sent = match notice::final_mail(&self.mail_from, to, lang, &case.reference, steps) {
            Ok(message) => self.mailer.send(message).await,
            Err(error) => Err(error),
        };
        match sent {
            Ok(()) => {
                self.cases.final_mail_done(case.id, "sent").await?;
                tracing::info!(case = %case.reference, "deletion: final mail sent");
                Ok(None)
            }
            Err(_) => {
                let attempts = self.cases.final_mail_failed(case.id).await?;
                tracing::warn!(case = %case.reference, attempts, "deletion: final mail not delivered");
                if attempts >= self.policy.max_attempts {
                    self.cases.final_mail_done(case.id, "undeliverable").await?;
                    return Ok(None);
                }
                Ok(Some(self.policy.backoff(attempts - 1)))
            }
        }
    }

    /// The journal is what survives a restore; failing to write it must not undo the case, so the
    /// failure is logged loudly (the next event writes a full line again).
    fn journal_quietly(&self, event: &str, case: &Case) {
        let entry = Entry {
            event: event.to_owned(),
            reference: case.reference.clone(),
            subject_id: case.subject_id,
            subject_created_micros: case.subject_created_at.0.timestamp_micros(),
        };
        if let Err(error) = self.journal.append(&entry) {
            tracing::error!(case = %case.reference, error = %format!("{error:#}"), "could not write the deletion journal");
        }
    }
}

/// The class of a failure, safe to store: no paths, no values, no server text.
fn failure_class(error: &anyhow::Error) -> &'static str {
    if error.is::<sqlx::Error>() {
        "database"
    } else if error.is::<StoreError>() {
        "storage"
    } else {
        "other"
    }
}
