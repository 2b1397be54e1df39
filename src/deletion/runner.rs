//! Drives a deletion case: validates it, runs one step per store in order, looks again after
//! every step (rows counted by the store's key, files checked on disk), retries failures with
//! capped backoff, parks exhausted steps for review, sends the final mail, removes the account
//! row last and completes the case only when every store is verified.
//!
//! Idempotent and resumable: every step searches before it acts and accepts "already gone", what
//! a search found is written down before anything is deleted, and the case is held by a lease
//! that runs out if its runner dies, so a rerun picks up at the first step not done.

use std::{sync::Arc, time::Duration};

use super::{
    cases::{Case, CaseState, DeletionCases, OpenError, OpenRequest, StepRow},
    journal::{Entry, Journal},
    notice,
    stores::{Store, TableAdapter},
};
use crate::{
    db::Db,
    mail::{Mailer, origin::MailOrigin},
    storage::ResumableStore,
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
    /// The longest one call to the file store may take: a store that hangs instead of failing
    /// (a stalled S3 endpoint, a dead network mount) fails the step like one that refuses.
    pub store_deadline: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            base: Duration::from_secs(30),
            cap: Duration::from_secs(3600),
            max_attempts: 8,
            store_deadline: STORE_DEADLINE,
        }
    }
}

/// Longer than the object store client's own bound on a request and its retries (a hung request
/// gives up after its 30 s timeout), so this deadline catches what nothing else bounds.
const STORE_DEADLINE: Duration = Duration::from_secs(60);

impl RetryPolicy {
    pub(super) fn backoff(&self, failures_before: i32) -> Duration {
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
pub(super) const PARKED: Duration = Duration::from_secs(24 * 3600);
/// Steps one run takes at most, so a store that keeps refilling cannot hold a runner forever.
const MAX_MOVES_PER_RUN: u32 = 200;

/// Runs deletion cases. Clone it freely: it is a handful of handles.
#[derive(Clone)]
pub struct Runner {
    pub(super) cases: DeletionCases,
    pub(super) tables: TableAdapter,
    pub(super) files: Arc<dyn ResumableStore>,
    pub(super) mailer: Arc<dyn Mailer>,
    pub(super) mail_origin: MailOrigin,
    pub(super) journal: Journal,
    pub(super) policy: RetryPolicy,
    pub(super) owner: String,
    pub(super) interrupt_after: Option<Store>,
}

impl Runner {
    pub fn new(
        db: Db,
        files: Arc<dyn ResumableStore>,
        mailer: Arc<dyn Mailer>,
        mail_origin: MailOrigin,
        journal: Journal,
    ) -> Self {
        Self {
            cases: DeletionCases::new(db.clone()),
            tables: TableAdapter::new(db),
            files,
            mailer,
            mail_origin,
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
        let next = steps.iter().find(|s| !s.outcome().is_done() && s.store != Store::Account);
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
        let account = steps.iter().find(|s| s.store == Store::Account).expect("every case has an account step");
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

    /// The last mail to the sender, sent directly (never through the stored outbox) so that the
    /// address is kept nowhere once it has left. A failure backs off; past the limit the case
    /// goes on without it.
    async fn final_mail(&self, case: &Case, steps: &[StepRow]) -> anyhow::Result<Option<Duration>> {
        let Some(to) = case.notify_email.as_deref() else {
            self.cases.final_mail_done(case.id, "none").await?;
            return Ok(None);
        };
        let lang = self.cases.subject_lang(case.subject_id).await?.unwrap_or_default();
        let sent = match notice::final_mail(&self.mail_origin, to, lang, &case.reference, steps) {
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
