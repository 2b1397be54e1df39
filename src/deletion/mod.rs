//! Verifiable deletion of a sender's data (seed 003): a case per request, one step per store, a
//! second look that verifies each step, evidence that names no personal data, and a journal kept
//! outside the database so that a restored backup can have its deletions re-applied.
//!
//! `cases` holds the state machine and its repository, `steps` its steps and evidence, `lease` who
//! works on a case; `stores` the per-store adapters; `runner` drives a case step by step (retries,
//! verification, the final mail); `worker` resumes due cases in the background; and `journal` is
//! the restore-proof list of cases.

mod cases;
pub mod journal;
mod lease;
mod notice;
mod reapply;
mod runner;
mod step_run;
mod steps;
mod stores;
mod worker;

pub use cases::{ActorRole, Case, CaseState, DeletionCases, EvidenceRow, NeedsReview, OpenError, OpenRequest, StepRow};
pub use reapply::{Reapplied, ReapplyReport};
pub use runner::{Interrupted, RetryPolicy, Runner};
pub use stores::{Action, Outcome, Store};
pub use worker::{WORKER_INTERVAL, run_deletion_worker};
