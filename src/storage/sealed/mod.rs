//! Stored files sealed at rest: each file encrypted under its own data key in authenticated
//! segments (`format`, `segments`), the data key kept only wrapped in the file's row (`keys`).
//! Any byte range opens by decrypting only the segments covering it; a segment that does not
//! authenticate is an error, never data.

pub mod encrypt_in_place;
pub mod format;
pub mod key_record;
mod keys;
pub mod rotate;
mod segments;
mod store;

pub use format::{Covering, Damaged, HEADER_LEN, Header, SEGMENT};
pub use keys::{DataKey, FileKeys, KeyRing, WrappedKey};
pub use segments::{open_range, read_header, seal};
pub use store::{SealedStore, Sealing};

#[cfg(test)]
mod stream_format_tests;
#[cfg(test)]
mod tests;
