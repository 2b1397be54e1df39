//! The one-time download lifecycle (seed 000): where files live, claims and garbage collection.

pub mod store;

pub use store::{Deleted, FileStore, LocalFileStore, OpenedFile, StoreError, StoredFile};
