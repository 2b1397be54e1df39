//! Re-applying deletions after a restore: a backup taken before a case existed holds the deleted
//! data again but not the case, so the cases are read from the journal in the data folder (which
//! a restore must not roll back), and every journalled account that is there again — same id,
//! same creation time — gets a new case, run to the end here. No final mail is sent for those:
//! the person was told already.

use std::collections::HashSet;

use super::{ActorRole, CaseState, OpenError, OpenRequest, Runner};

/// One journalled case found again in the database, and where its new case stands.
pub struct Reapplied {
    pub original: String,
    pub reference: String,
    pub state: CaseState,
}

/// What a re-apply did.
#[derive(Default)]
pub struct ReapplyReport {
    pub reapplied: Vec<Reapplied>,
    /// Journalled accounts this database does not hold (not restored, or never deleted here).
    pub absent: usize,
}

impl Runner {
    /// Opens (or takes up) a case for every journalled account this database holds again, and
    /// runs it to the end.
    pub async fn reapply_journal(&self) -> anyhow::Result<ReapplyReport> {
        let cases = self.cases().clone();
        let mut seen = HashSet::new();
        let mut report = ReapplyReport::default();
        for entry in self.journal().read()? {
            // A reference appears once per event; the account is what matters.
            if !seen.insert((entry.subject_id, entry.subject_created_micros)) {
                continue;
            }
            let created = cases.account_created_at(entry.subject_id).await?;
            if created.map(|t| t.0.timestamp_micros()) != Some(entry.subject_created_micros) {
                report.absent += 1;
                continue;
            }
            let case_id = match cases.open_case_of(entry.subject_id).await? {
                Some(open) => open,
                None => {
                    let request = OpenRequest {
                        subject_id: entry.subject_id,
                        actor_id: None,
                        role: ActorRole::Operator,
                        reapplies: Some(entry.reference.clone()),
                    };
                    match self.open(&request).await {
                        Ok(case) => case.id,
                        Err(OpenError::AlreadyOpen) => continue,
                        Err(error) => return Err(error.into()),
                    }
                }
            };
            let state = self.run_case(case_id).await?;
            let case = cases.find(case_id).await?.ok_or_else(|| anyhow::anyhow!("case {case_id} vanished"))?;
            let state = state.unwrap_or(case.state());
            report.reapplied.push(Reapplied { original: entry.reference, reference: case.reference, state });
        }
        Ok(report)
    }
}
