//! Resumable uploads (the tus protocol's server side): a sender's file arriving in as many PATCH
//! requests as it takes, durable up to the offset the database holds, and once complete, ready
//! to become a share's file. The HTTP layer is `web::uploads`; the use cases `services::uploads`.

pub mod checksum;
pub mod locks;
pub mod metadata;
pub mod parts;
mod repo;

use std::time::Duration;

pub use checksum::{Checksum, ChecksumError};
pub use locks::WriteLocks;
pub use metadata::{MalformedMetadata, Metadata};
pub(crate) use repo::PENDING_OF_REQUEST;
pub use repo::{Advance, Refusal, UploadRepository};

use crate::{
    db::Timestamp,
    storage::{Deleted, ResumableStore, StoredFile, sealed::WrappedKey},
};

/// An upload lives this long after its creation or the last bytes it received.
pub const UPLOAD_TTL: Duration = Duration::from_secs(24 * 3600);
/// A sender's live uploads (unfinished, or finished and not made into a share yet) may hold this
/// many times the largest file.
pub const RESERVATION_FACTOR: u64 = 2;
/// A long PATCH makes its bytes durable and moves the offset at least this often, so a killed
/// server loses little.
pub const CHECKPOINT_BYTES: u64 = 16 * 1024 * 1024;
/// How long a PATCH waits for the one it asked to stop before answering 423.
pub const TAKEOVER_PATIENCE: Duration = Duration::from_secs(10);

/// Whose an upload is: a signed-in sender's, or a file request's (sent by its verified uploader;
/// its row names the request's sender as owner, whose deletion takes it along). Each sees and
/// touches only its own; to the other an upload answers as unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    Sender(i64),
    Request(i64),
}

impl Owner {
    /// The signed-in sender, for a sender's own upload.
    pub fn sender_id(self) -> Option<i64> {
        match self {
            Self::Sender(id) => Some(id),
            Self::Request(_) => None,
        }
    }

    /// The request share, for a file request's upload.
    pub fn request_share_id(self) -> Option<i64> {
        match self {
            Self::Sender(_) => None,
            Self::Request(share_id) => Some(share_id),
        }
    }
}

/// An upload about to be created.
pub struct NewUpload {
    pub public_id: String,
    pub owner: Owner,
    pub storage_key: String,
    pub length: u64,
    pub metadata: Metadata,
}

/// What a file request's unfinished uploads hold, counted against its limits.
#[derive(Clone, Copy, Debug, Default, sqlx::FromRow)]
pub struct Pending {
    pub files: i64,
    pub bytes: i64,
}

/// One upload as stored.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct UploadRow {
    pub id: i64,
    pub storage_key: String,
    pub upload_length: i64,
    pub upload_offset: i64,
    pub metadata: Option<String>,
    pub file_name: String,
    pub content_type: String,
    pub sha256: Option<String>,
    /// Recorded with the SHA-256 (`None` until then).
    pub crc32: Option<i64>,
    pub expires_at: Timestamp,
    /// The data key its bytes are sealed under, once it is complete (`None`: stored as sent).
    pub wrapped_key: Option<Vec<u8>>,
    pub file_key_id: Option<String>,
    /// The object store's multipart upload taking its bytes as parts (`None`: its pieces are
    /// joined at completion, or the local store appends them in place).
    pub multipart_id: Option<String>,
    /// The size of each of its parts but the last.
    pub part_bytes: Option<i64>,
    /// The digest of the bytes in its recorded parts ([`Digester::saved`]).
    ///
    /// [`Digester::saved`]: crate::storage::Digester::saved
    pub digest_state: Option<Vec<u8>>,
}

impl UploadRow {
    pub fn length(&self) -> u64 {
        u64::try_from(self.upload_length).unwrap_or(0)
    }

    pub fn offset(&self) -> u64 {
        u64::try_from(self.upload_offset).unwrap_or(0)
    }

    pub fn is_complete(&self) -> bool {
        self.offset() == self.length()
    }

    /// The stored file a finished upload is, as a share's or a request's file records it;
    /// `None` until its digest is recorded.
    pub fn stored(&self) -> Option<StoredFile> {
        let sealed = match (&self.wrapped_key, &self.file_key_id) {
            (Some(wrapped), Some(key_id)) => Some(WrappedKey { wrapped: wrapped.clone(), key_id: key_id.clone() }),
            _ => None,
        };
        Some(StoredFile {
            key: self.storage_key.clone(),
            size_bytes: self.length(),
            sha256: self.sha256.clone()?,
            crc32: self.crc32.and_then(|crc| u32::try_from(crc).ok())?,
            sealed,
        })
    }

    /// Records what completing it stored.
    pub fn finished_as(&mut self, stored: StoredFile) {
        (self.sha256, self.crc32) = (Some(stored.sha256), Some(i64::from(stored.crc32)));
        (self.wrapped_key, self.file_key_id) =
            stored.sealed.map(|key| (Some(key.wrapped), Some(key.key_id))).unwrap_or_default();
    }
}

/// Removes an upload's bytes whatever stage they are at: the partial file (its multipart upload
/// aborted), or the completed file.
/// (An object store killed while joining pieces may leave both; the joined object then has no
/// row, and the leftover sweep removes it.)
pub async fn delete_files(store: &dyn ResumableStore, key: &str) -> Result<(), crate::storage::StoreError> {
    if store.delete_partial(key).await? == Deleted::AlreadyAbsent {
        store.delete(key).await?;
    }
    Ok(())
}
