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
mod note;
mod runner;
mod scheduler;
mod sweep;

pub use lease::Leases;
pub use ledger::{Ledger, Run, RunItem, TargetCount};
pub use note::{Note, NotePart, Reason};
pub use runner::{Budget, Maintenance, TriggerOutcome};
pub use scheduler::{Schedule, run_scheduler};
pub use sweep::{BatchReport, Sweep, SweepRun, SweepSettings};

crate::db_code! {
    /// What a run sweeps: one kind, or every sweep in turn.
    pub enum Kind {
        All = "all",
        Sessions = "sessions",
        Codes = "codes",
        Invitations = "invitations",
        Outbox = "outbox",
        RateLimits = "rate_limits",
        ShareRetention = "share_retention",
        /// Finished webhook messages past the retention (their bodies name recipients and files).
        WebhookMessages = "webhook_messages",
        /// The garbage collector's passes (seed 000), recorded here per share.
        ShareGc = "share_gc",
        /// The store's leftover sweep, recorded by its counts (leftovers have no rows to name).
        Leftovers = "leftovers",
    }
}

impl Kind {
    /// The sweeps an `All` run goes through, in this order: codes before the sessions whose
    /// deletion would cascade to them unrecorded.
    pub const SWEEPS: [Kind; 7] = [
        Kind::Codes,
        Kind::Sessions,
        Kind::Invitations,
        Kind::Outbox,
        Kind::RateLimits,
        Kind::ShareRetention,
        Kind::WebhookMessages,
    ];

    /// The kinds a person may ask for (the GC has its own triggers).
    pub fn requestable(text: &str) -> Option<Self> {
        std::iter::once(Kind::All).chain(Kind::SWEEPS).find(|k| k.code() == text)
    }

    pub fn sweeps(self) -> Vec<Kind> {
        match self {
            Kind::All => Kind::SWEEPS.to_vec(),
            kind => vec![kind],
        }
    }
}

crate::db_code! {
    /// Who started a run.
    pub enum Trigger {
        Timer = "timer",
        /// After a response was sent (the access-time GC).
        Request = "request",
        /// The authenticated `POST /maintenance/runs`.
        Http = "http",
        Cli = "cli",
    }
}

crate::db_code! {
    /// What a run did to one row.
    pub enum Outcome {
        Deleted = "deleted",
        /// The row was no longer expired when the delete re-checked it.
        Skipped = "skipped",
        /// Someone else removed the row first.
        AlreadyGone = "already_gone",
        Failed = "failed",
    }
}

crate::db_code! {
    /// The kind of row a ledger item names: what a sweep walks, the GC's shares and uploads.
    pub enum Target {
        Session = "session",
        Code = "code",
        Invitation = "invitation",
        Mail = "mail",
        RateLimitHit = "rate_limit_hit",
        SharePersonalData = "share_personal_data",
        WebhookMessage = "webhook_message",
        Share = "share",
        Upload = "upload",
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
pub fn error_class(error: &sqlx::Error) -> Reason {
    if crate::db::is_unavailable(error) {
        return Reason::DatabaseUnavailable;
    }
    Reason::DatabaseError(error.as_database_error().and_then(|e| e.code()).map(|code| code.into_owned()))
}
