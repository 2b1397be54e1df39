//! Where file contents live: the local folder, an S3-compatible object store, and the two at once
//! while `watasu storage migrate` moves files from one into the other. What a store can do is
//! told by its traits: [`FileStore`] keeps whole files, [`ResumableStore`] also keeps the partial
//! files of resumable uploads, and [`SweptStore`] also lists what it holds to the leftover sweep.

mod digest;
mod fallback;
pub mod leftovers;
mod local_leftovers;
pub mod migrate;
mod object_leftovers;
mod object_partial;
mod object_parts;
pub mod object_store;
mod opened;
pub mod part_budget;
mod partial;
mod read_ahead;
pub mod sealed;
pub mod store;
mod store_setup;

pub use self::object_store::ObjectFileStore;
pub use digest::Digester;
pub use fallback::FallbackStore;
pub use leftovers::{Leftover, LeftoverKind};
pub use opened::OpenedFile;
pub use read_ahead::mapped_bound;
pub use store::{
    Appended, Content, Deleted, FileStore, LocalFileStore, ResumableStore, StoreError, StoredFile, SweptStore, Through,
};
pub use store_setup::{open_file_store, open_object_store, open_sealed_store, probe};
