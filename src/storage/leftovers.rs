//! What a store may hold that nothing else owns: the vocabulary between a [`SweptStore`] and the
//! leftover sweep (`lifecycle::leftover_sweep`), which judges what the store lists by age and by
//! the database.
//!
//! [`SweptStore`]: super::SweptStore

use std::{io, time::Duration};

use super::StoreError;

/// What a store may hold that nothing else owns once it is old enough.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeftoverKind {
    /// A file being written (local store): `name` is its file name.
    Temp,
    /// A stored file: `name` is its key.
    Stored,
    /// A resumable upload's partial file or pieces: `name` is the upload's key.
    Partial,
    /// A multipart upload of the object store that was never completed nor aborted: `name` is
    /// the upload's id.
    Multipart,
}

/// One thing the store lists, and how long ago it was last written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leftover {
    pub kind: LeftoverKind,
    pub name: String,
    pub age: Duration,
}

/// What a store answers when asked to remove a kind of leftover it never lists (the fallback store
/// sends each kind only to the store that lists it).
pub(super) fn not_kept_here(kind: LeftoverKind) -> StoreError {
    StoreError::Io(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("this store keeps no leftovers of kind {kind:?}"),
    ))
}
