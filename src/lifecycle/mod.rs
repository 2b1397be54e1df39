//! The one-time download lifecycle (seed 000): where files live, the claim, and the garbage
//! collector that deletes files after download or expiry, with no cron.

mod delivered;
mod fallback;
pub mod gc;
pub mod leftovers;
mod local_leftovers;
pub mod migrate;
mod object_leftovers;
mod object_partial;
pub mod object_store;
mod opened;
mod partial;
mod read_ahead;
mod repo;
pub mod store;
mod store_setup;
mod upload_gc;

pub use self::object_store::ObjectFileStore;
pub use fallback::FallbackStore;
pub use gc::{GcReport, GcRunner, GcStats, ShareGc};
pub use leftovers::{Leftover, LeftoverError, LeftoverKind, LeftoverReport};
pub use opened::OpenedFile;
pub use repo::{ClaimedFile, LifecycleRepository, PURGEABLE_POSTGRES, PURGEABLE_SQLITE, PurgeCandidate};
pub use store::{Appended, Deleted, FileStore, LocalFileStore, StoreError, StoredFile};
pub use store_setup::{open_file_store, open_object_store, probe};
