//! The one-time download lifecycle (seed 000): the claim, the ranges delivered to the claiming
//! session, and the garbage collector that deletes files after download or expiry, with no cron
//! (with its second and third duties: expired resumable uploads and the leftover sweep).

mod delivered;
pub mod gc;
pub mod leftover_sweep;
mod repo;
mod upload_gc;

pub use delivered::{RangeRows, Span};
pub use gc::{GcReport, GcRunner, GcStats, ShareGc};
pub use leftover_sweep::{LeftoverError, LeftoverReport};
pub(crate) use repo::destroy_file_keys;
pub use repo::{
    Claimed, ClaimedFile, LifecycleRepository, LiveFile, PURGEABLE_POSTGRES, PURGEABLE_SQLITE, PurgeCandidate,
};
