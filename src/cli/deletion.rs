//! `watasu deletion list` and `watasu deletion reapply` (part of restoring a backup: see
//! `deletion::reapply`).

use crate::{config::Config, deletion::CaseState, services::Services};

pub async fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let cases = services.deletion.cases().list(10_000).await?;
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
    services.close().await;
    Ok(())
}

pub async fn reapply(config: &Config) -> anyhow::Result<()> {
    let services = Services::open(config).await?;
    let report = services.deletion.reapply_journal().await?;
    for case in &report.reapplied {
        crate::outln!("{}: re-applied as {} ({})", case.original, case.reference, case.state.code());
        if case.state != CaseState::Completed {
            crate::outln!("  not finished yet: the server's deletion worker carries it on (see /admin/deletions)");
        }
    }
    crate::outln!(
        "re-applied {} case(s); {} journalled account(s) are not in this database",
        report.reapplied.len(),
        report.absent
    );
    services.close().await;
    Ok(())
}
