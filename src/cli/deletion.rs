//! `watasu deletion list` and `watasu deletion reapply`. Re-applying is part of restoring a
//! backup: a backup taken before a case existed holds the deleted data again but not the case, so
//! the cases are read from the journal in the data folder (which a restore must not roll back),
//! and every journalled account that is there again — same id, same creation time — gets a new
//! case, run to the end here. No final mail is sent for those: the person was told already.

use std::sync::Arc;

use crate::{
    config::Config,
    deletion::{ActorRole, CaseState, DeletionCases, OpenError, OpenRequest, Runner, journal::Journal},
    lifecycle::LocalFileStore,
    mail, open_database,
};

pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let db = open_database(config).await?;
    let cases = DeletionCases::new(db.clone()).list(10_000).await?;
    if json {
        let rows: Vec<_> = cases
            .iter()
            .map(|c| {
                serde_json::json!({
                    "reference": c.reference,
                    "state": c.state().code(),
                    "actor_role": c.actor_role,
                    "reapplies": c.reapplies,
                    "created_at": c.created_at.0.to_rfc3339(),
                    "finished_at": c.finished_at.map(|t| t.0.to_rfc3339()),
                })
            })
            .collect();
        crate::outln!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        for c in &cases {
            let created = c.created_at.0.format("%Y-%m-%d %H:%M UTC");
            crate::outln!("{}  {:<21}  {:<8}  {created}", c.reference, c.state().code(), c.actor_role);
        }
    }
    db.close().await;
    Ok(())
}

pub async fn reapply(config: &Config) -> anyhow::Result<()> {
    let settings = &config.settings;
    let db = open_database(config).await?;
    let journal = Journal::in_data_dir(&settings.data_dir);
    let store = Arc::new(LocalFileStore::new(settings.data_dir.join("files"))?);
    let mailer = mail::from_settings(settings.smtp_url.as_ref().map(|s| s.expose()), &settings.data_dir)?;
    let runner = Runner::new(db.clone(), store, mailer, settings.mail_from.clone(), journal.clone());
    let cases = runner.cases().clone();
    let mut seen = std::collections::HashSet::new();
    let (mut reapplied, mut absent) = (0, 0);
    for entry in journal.read()? {
        // A reference appears once per event; the account is what matters.
        if !seen.insert((entry.subject_id, entry.subject_created_micros)) {
            continue;
        }
        let created = cases.account_created_at(entry.subject_id).await?;
        if created.map(|t| t.0.timestamp_micros()) != Some(entry.subject_created_micros) {
            absent += 1;
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
                match runner.open(&request).await {
                    Ok(case) => case.id,
                    Err(OpenError::AlreadyOpen) => continue,
                    Err(error) => return Err(error.into()),
                }
            }
        };
        let state = runner.run_case(case_id).await?;
        let case = cases.find(case_id).await?.expect("the case exists");
        let state = state.unwrap_or(case.state());
        crate::outln!("{}: re-applied as {} ({})", entry.reference, case.reference, state.code());
        if state != CaseState::Completed {
            crate::outln!("  not finished yet: the server's deletion worker carries it on (see /admin/deletions)");
        }
        reapplied += 1;
    }
    crate::outln!("re-applied {reapplied} case(s); {absent} journalled account(s) are not in this database");
    db.close().await;
    Ok(())
}
