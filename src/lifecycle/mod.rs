//! The one-time download lifecycle (seed 000): where files live, the claim, and the garbage
//! collector that deletes files after download or expiry, with no cron.

pub mod gc;
pub mod leftovers;
mod object_partial;
pub mod object_store;
mod partial;
mod repo;
pub mod store;
mod upload_gc;

pub use self::object_store::ObjectFileStore;
pub use gc::{GcReport, GcRunner, GcStats, ShareGc};
pub use leftovers::LeftoverReport;
pub use repo::{ClaimedFile, LifecycleRepository, PURGEABLE_POSTGRES, PURGEABLE_SQLITE, PurgeCandidate};
pub use store::{Appended, Deleted, FileStore, LocalFileStore, OpenedFile, StoreError, StoredFile};
