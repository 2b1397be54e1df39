//! What the admin pages read: deletion cases with their steps and evidence, and maintenance runs
//! with their ledger. Reading only, apart from putting parked deletion steps back in the queue.

use super::Fault;
use crate::{
    deletion::{Case, DeletionCases, EvidenceRow, NeedsReview, StepRow},
    maintenance::{Ledger, Run, RunItem, TargetCount},
};

#[derive(Clone)]
pub struct Records {
    cases: DeletionCases,
    ledger: Ledger,
}

impl Records {
    pub fn new(cases: DeletionCases, ledger: Ledger) -> Self {
        Self { cases, ledger }
    }

    /// The newest deletion cases.
    pub async fn cases(&self, limit: i64) -> Result<Vec<Case>, Fault> {
        Ok(self.cases.list(limit).await?)
    }

    /// Steps that wait for an admin.
    pub async fn steps_needing_review(&self) -> Result<Vec<NeedsReview>, Fault> {
        Ok(self.cases.needs_review().await?)
    }

    pub async fn case(&self, reference: &str) -> Result<Option<Case>, Fault> {
        Ok(self.cases.find_by_reference(reference).await?)
    }

    pub async fn steps(&self, case_id: i64) -> Result<Vec<StepRow>, Fault> {
        Ok(self.cases.steps(case_id).await?)
    }

    pub async fn evidence(&self, case_id: i64) -> Result<Vec<EvidenceRow>, Fault> {
        Ok(self.cases.evidence(case_id).await?)
    }

    /// Puts a case's parked steps back in the queue; how many.
    pub async fn retry_parked_steps(&self, case_id: i64) -> Result<u64, Fault> {
        Ok(self.cases.retry_needs_review(case_id).await?)
    }

    pub async fn recent_runs(&self, limit: i64) -> Result<Vec<Run>, Fault> {
        Ok(self.ledger.recent(limit).await?)
    }

    pub async fn run(&self, id: i64) -> Result<Option<Run>, Fault> {
        Ok(self.ledger.get(id).await?)
    }

    pub async fn run_summary(&self, id: i64) -> Result<Vec<TargetCount>, Fault> {
        Ok(self.ledger.summary(id).await?)
    }

    pub async fn run_items(&self, id: i64, after: i64, limit: i64) -> Result<Vec<RunItem>, Fault> {
        Ok(self.ledger.items(id, after, limit).await?)
    }
}
