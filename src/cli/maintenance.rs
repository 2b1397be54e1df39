//! `watasu maintenance run [--kind K]`: one maintenance run from the command line, then its ledger
//! summary. Exit status 1 when the run failed.

use crate::{
    config::Config,
    maintenance::{Kind, Run, RunState, TargetCount, Trigger},
    services::Services,
};

pub async fn run(config: &Config, kind: &str) -> anyhow::Result<()> {
    let Some(kind) = Kind::requestable(kind) else {
        let known: Vec<_> = std::iter::once(Kind::All).chain(Kind::SWEEPS).map(Kind::code).collect();
        return Err(super::usage(format!("unknown kind '{kind}'; one of: {}", known.join(", "))));
    };
    let services = Services::open(config).await?;
    let maintenance = &services.maintenance;
    let run = maintenance.run_now(kind, Trigger::Cli).await?;
    let summary = maintenance.ledger().summary(run.id).await?;
    {
        // Written, not printed: a reader that went away is a broken pipe `main` ends quietly.
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        write!(out, "{}", render_summary(&run, &summary)).and_then(|()| out.flush())?;
    }
    services.close().await;
    if run.state == RunState::Failed {
        anyhow::bail!("maintenance run {} failed", run.id);
    }
    Ok(())
}

/// The ledger summary as printed: the run, then one line per target kind and outcome.
pub fn render_summary(run: &Run, summary: &[TargetCount]) -> String {
    let mut out = format!(
        "run {} ({}, {}): {} — deleted {}, skipped {}, already gone {}, failed {}, in {} batches\n",
        run.id, run.kind, run.trigger, run.state, run.deleted, run.skipped, run.already_gone, run.failed, run.batches
    );
    if let Some(note) = &run.note {
        out.push_str(&format!("  note: {note}\n"));
    }
    for line in summary {
        out.push_str(&format!("  {:<20} {:<13} {}\n", line.target_kind, line.outcome, line.count));
    }
    out
}
