//! Maintenance that proves itself (seed 004): sweeps that delete expired rows safely, a run
//! ledger that records what each run did to each row, leases that keep one kind of sweep from
//! running twice at once (across instances too), and the in-process scheduler that drives them
//! together with the garbage collector, so nobody needs cron.
//!
//! Every sweep fixes its cutoff once, from the database clock, when the run starts; walks its
//! table by keyset in bounded batches; and deletes with the expiry condition repeated, so a row
//! renewed after the scan survives.

mod batch;
mod lease;
mod ledger;
mod runner;
mod scheduler;
mod sweep;

pub use lease::Leases;
pub use ledger::{Ledger, Run, RunItem, TargetCount};
pub use runner::{Budget, Maintenance, TriggerOutcome};
pub use scheduler::{Schedule, run_scheduler};
pub use sweep::{BatchReport, Sweep, SweepRun, SweepSettings};

/// What a run sweeps: one kind, or every sweep in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    All,
    Sessions,
    Codes,
    Invitations,
    Outbox,
    RateLimits,
    ShareRetention,
    /// The garbage collector's passes (seed 000), recorded here per share.
    ShareGc,
    /// The store's leftover sweep, recorded by its counts (leftovers have no rows to name).
    Leftovers,
}

impl Kind {
    /// The sweeps an `All` run goes through, in this order: codes before the sessions whose
    /// deletion would cascade to them unrecorded.
    pub const SWEEPS: [Kind; 6] =
        [Kind::Codes, Kind::Sessions, Kind::Invitations, Kind::Outbox, Kind::RateLimits, Kind::ShareRetention];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::All => "all",
            Kind::Sessions => "sessions",
            Kind::Codes => "codes",
            Kind::Invitations => "invitations",
            Kind::Outbox => "outbox",
            Kind::RateLimits => "rate_limits",
            Kind::ShareRetention => "share_retention",
            Kind::ShareGc => "share_gc",
            Kind::Leftovers => "leftovers",
        }
    }

    /// The kinds a person may ask for (the GC has its own triggers).
    pub fn parse(text: &str) -> Option<Self> {
        std::iter::once(Kind::All).chain(Kind::SWEEPS).find(|k| k.as_str() == text)
    }

    pub fn sweeps(self) -> Vec<Kind> {
        match self {
            Kind::All => Kind::SWEEPS.to_vec(),
            kind => vec![kind],
        }
    }
}

/// Who started a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trigger {
    Timer,
    /// After a response was sent (the access-time GC).
    Request,
    /// The authenticated `POST /maintenance/runs`.
    Http,
    Cli,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Timer => "timer",
            Trigger::Request => "request",
            Trigger::Http => "http",
            Trigger::Cli => "cli",
        }
    }
}

/// What a run did to one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Deleted,
    /// The row was no longer expired when the delete re-checked it.
    Skipped,
    /// Someone else removed the row first.
    AlreadyGone,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Deleted => "deleted",
            Outcome::Skipped => "skipped",
            Outcome::AlreadyGone => "already_gone",
            Outcome::Failed => "failed",
        }
    }
}

crate::db_code! {
    /// A run's state: accepted → running → succeeded | partial | failed, forward only.
    pub enum RunState {
        Accepted = "accepted",
        Running = "running",
        Succeeded = "succeeded",
        Partial = "partial",
        Failed = "failed",
    }
}

/// A database error as a class fit for the ledger: never the message, which may quote data.
pub fn error_class(error: &sqlx::Error) -> String {
    if crate::db::is_unavailable(error) {
        return "database unavailable".to_owned();
    }
    match error.as_database_error().and_then(|e| e.code()) {
        Some(code) => format!("database error {code}"),
        None => "database error".to_owned(),
    }
}
