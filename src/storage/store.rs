//! What a store can do, as three traits (whole files; resumable uploads; listing leftovers), and
//! the local store. The traits exist because there are real alternatives (the local disk, object
//! storage) and tests need a store that fails on demand.
//!
//! The local store never builds a path from user input: every file is named by a random key.
//! Writes go to a temp file in the same folder, are fsynced, then renamed into place, so a
//! half-written file is never visible under a key. Its resumable uploads (`partial`) and its
//! leftovers (`local_leftovers`) implement their traits beside their logic.

use std::{
    io,
    path::{Path, PathBuf},
    pin::Pin,
};

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

pub use super::opened::OpenedFile;
use super::{Digester, leftovers::Leftover, read_ahead};
use crate::secret::random_token;

/// Name prefix of files being written; the GC removes old ones left by interrupted uploads.
pub const TEMP_PREFIX: &str = ".tmp-";
/// Name prefix of a resumable upload's file until its last byte arrives (`.part-<key>`).
pub const PARTIAL_PREFIX: &str = ".part-";

/// What was stored: the key to find it again, and facts about the content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredFile {
    pub key: String,
    pub size_bytes: u64,
    pub sha256: String,
    pub crc32: u32,
    /// The file's data key, wrapped, when its bytes are stored encrypted (`None`: plaintext).
    /// Size and digests are always the plaintext's.
    pub sealed: Option<super::sealed::WrappedKey>,
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the content is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("no stored file has this key")]
    NotFound,
    /// Reading the content failed (an upload cut off or malformed): the sender's side, not ours.
    #[error("the content could not be read to its end")]
    Content(#[source] io::Error),
    /// An encrypted file's stored bytes did not authenticate: never served as data.
    #[error("the stored file is damaged")]
    Damaged,
    #[error("storage I/O failed")]
    Io(#[from] io::Error),
}

impl StoredFile {
    /// How its row records the bytes' storage.
    pub fn sealing(&self) -> super::sealed::Sealing {
        match self.sealed {
            Some(_) => super::sealed::Sealing::SealedV1,
            None => super::sealed::Sealing::Plaintext,
        }
    }
}

/// What one append to a partial file stored: `written` bytes, durable. `cut` is why the content
/// ended early (the client went away, the body stalled, a stop was asked for): what arrived
/// before is kept all the same.
#[derive(Debug)]
pub struct Appended {
    pub written: u64,
    pub cut: Option<io::Error>,
    /// The object store's piece holding these bytes (`None` for the local store, which appends to
    /// one file, and when nothing arrived): the database records it only if the offset moves.
    pub piece: Option<String>,
}

/// What a store is given to keep: one body's bytes, read once from start to end.
pub type Content<'a> = Pin<Box<dyn AsyncRead + Send + 'a>>;

/// What a completing upload's bytes pass through on their way into its stored file (the sealing):
/// read once as the partial file is joined, so nothing is stored twice.
pub type Through = Box<dyn for<'a> FnOnce(Content<'a>) -> Content<'a> + Send>;

/// Whether a delete removed something or found nothing to remove; both mean "gone now".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    Removed,
    AlreadyAbsent,
}

/// Whole files: stored once, read, deleted. Every store is one; tests have one that fails on
/// demand.
#[async_trait::async_trait]
pub trait FileStore: Send + Sync {
    /// Stores everything `content` yields, refusing more than `max_bytes` (nothing is kept then).
    async fn put<'a>(&self, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError>;
    /// Opens a stored file for streaming.
    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError>;
    /// Opens `len` bytes from `start` of a stored file (fewer if the file ends first): a resumed
    /// download reads only what it asked for (object storage answers it with a ranged GET).
    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError>;
    /// Removes a stored file. Already absent is not an error.
    async fn delete(&self, key: &str) -> Result<Deleted, StoreError>;
    /// Whether the store still holds bytes under `key`, readable or not: what a deletion verifies
    /// (an encrypted file whose key is destroyed does not open, yet its bytes may still be there).
    async fn holds(&self, key: &str) -> Result<bool, StoreError> {
        match self.open_range(key, 0, 0).await {
            Ok(_) => Ok(true),
            Err(StoreError::NotFound) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// A store that also keeps the partial files of resumable uploads (tus): what takes uploads needs
/// one, so a store without them cannot be given where they are used.
#[async_trait::async_trait]
pub trait ResumableStore: FileStore {
    /// Creates the empty partial file of a resumable upload under `key`.
    async fn create_partial(&self, key: &str) -> Result<(), StoreError>;
    /// Appends what `content` yields at `offset` of the partial file: anything past `offset` (from
    /// a process killed mid-write) is cut off first, and what was written is durable on return.
    /// More than `max_bytes` refuses the whole append (the file is left at `offset`).
    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError>;
    /// Turns the partial file into the stored file `key` and digests it. Idempotent: once done,
    /// it digests the stored file again. `pieces` are the recorded pieces in offset order (the
    /// local store has none and ignores them).
    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError>;
    /// Writes the stored file `key` from the partial file's bytes passed through `through`, in
    /// one pass, then removes the partial file. Answers `false` when there was nothing left to
    /// join (completed before, a crash after the join): the stored file is then read instead.
    async fn complete_partial_through(
        &self,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError>;
    /// Starts sending the bytes of upload `key` as the parts of one multipart upload, so that
    /// completing it is one request instead of a copy: the upload's id, recorded in the store too,
    /// where `delete_partial` and the leftover sweep find it to abort it. `None` where an upload's
    /// bytes are appended in place (the local store) or joined at completion (sealed uploads).
    async fn begin_parts(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Ok(None)
    }
    /// Sends `bytes` as part `index` (from 0) of the multipart upload `id`; answers what the store
    /// said of it (its ETag), which completing needs.
    async fn put_part(&self, _key: &str, _id: &str, _index: usize, _bytes: Bytes) -> Result<String, StoreError> {
        Err(no_parts())
    }
    /// Reads the recorded `pieces`, holding the bytes from offset `from` on, into `into`, which
    /// they must fill exactly: a part's front, kept as pieces until a PATCH filled the part.
    async fn read_pieces(
        &self,
        _key: &str,
        _from: u64,
        _pieces: &[String],
        _into: &mut [u8],
    ) -> Result<(), StoreError> {
        Err(no_parts())
    }
    /// Completes the multipart upload `id` into the stored file `key` from its parts' answers in
    /// order, in one request, then removes the partial file. Idempotent: completed before, it
    /// only removes what is left.
    async fn complete_parts(&self, _key: &str, _id: &str, _parts: Vec<String>) -> Result<(), StoreError> {
        Err(no_parts())
    }
    /// Removes a piece whose offset advance lost or whose checksum failed. Already absent is not
    /// an error (nor is a store that appends to one file and keeps no pieces).
    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError>;
    /// Removes a partial file. Already absent is not an error.
    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError>;
}

/// A store the leftover sweep walks: the store the application runs on. Resumable, because a
/// partial upload nobody finished is one of the leftovers it may hold.
#[async_trait::async_trait]
pub trait SweptStore: ResumableStore {
    /// Everything the store holds that may be left over, each with its age: listed, not judged
    /// (the leftover sweep decides by age and by the database). A stream, so memory stays flat
    /// however much the store holds.
    fn leftovers(&self) -> futures_util::stream::BoxStream<'_, Result<Leftover, StoreError>>;
    /// Removes one listed leftover. Already absent is not an error.
    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError>;
}

/// What a store that never begins a multipart upload answers when asked for its parts.
fn no_parts() -> StoreError {
    StoreError::Io(io::Error::new(io::ErrorKind::Unsupported, "this store keeps no multipart uploads"))
}

/// A stored file's facts, read back from the store.
pub(super) async fn read_back_digest(store: &dyn FileStore, key: &str) -> Result<StoredFile, StoreError> {
    digest_of(store.open(key).await?, key).await
}

/// The facts of an opened file's bytes, read to their end.
pub(super) async fn digest_of(opened: OpenedFile, key: &str) -> Result<StoredFile, StoreError> {
    let mut reader = opened.into_reader();
    let mut digester = Digester::default();
    let mut buffer = vec![0u8; CHUNK];
    loop {
        let read = reader.read(&mut buffer).await?;
        if read == 0 {
            return Ok(digester.stored(key));
        }
        digester.update(&buffer[..read]);
    }
}

/// Files in one folder on the local disk.
#[derive(Clone, Debug)]
pub struct LocalFileStore {
    pub(super) dir: PathBuf,
}

/// Bytes read and hashed per step while storing.
pub(super) const CHUNK: usize = 256 * 1024;

impl LocalFileStore {
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        crate::private_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The path of a key, or `None` for anything that is not one of our keys.
    pub(super) fn path_of(&self, key: &str) -> Option<PathBuf> {
        crate::session::is_token_shaped(key).then(|| self.dir.join(key))
    }

    async fn open_file(&self, key: &str) -> Result<(tokio::fs::File, u64), StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        let file = match tokio::fs::File::open(&path).await {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(StoreError::NotFound),
            Err(e) => return Err(e.into()),
        };
        let size_bytes = file.metadata().await?.len();
        Ok((file, size_bytes))
    }

    pub(super) async fn write_temp<'a>(
        &self,
        temp: &Path,
        mut content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Digester, StoreError> {
        // Owner only, like everything in the data folder (whatever the umask).
        let mut file = tokio::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(temp).await?;
        let mut digester = Digester::default();
        let mut buffer = vec![0u8; CHUNK];
        loop {
            let read = content.read(&mut buffer).await.map_err(StoreError::Content)?;
            if read == 0 {
                break;
            }
            if digester.size() + read as u64 > max_bytes {
                return Err(StoreError::TooLarge { limit: max_bytes });
            }
            digester.update(&buffer[..read]);
            file.write_all(&buffer[..read]).await?;
        }
        file.sync_all().await?;
        Ok(digester)
    }
}

#[async_trait::async_trait]
impl FileStore for LocalFileStore {
    async fn put<'a>(&self, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        let key = random_token().expose().to_owned();
        let temp = self.dir.join(format!("{TEMP_PREFIX}{key}"));
        match self.write_temp(&temp, content, max_bytes).await {
            Ok(digester) => {
                tokio::fs::rename(&temp, self.dir.join(&key)).await?;
                // The rename is durable only once the folder itself is synced.
                tokio::fs::File::open(&self.dir).await?.sync_all().await?;
                Ok(digester.stored(key))
            }
            Err(error) => {
                let _ = tokio::fs::remove_file(&temp).await;
                Err(error)
            }
        }
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        self.open_range(key, 0, u64::MAX).await
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        let (file, size_bytes) = self.open_file(key).await?;
        Ok(OpenedFile::from_chunks(read_ahead::chunks(file.into_std().await, size_bytes, start, len), size_bytes))
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        let path = self.path_of(key).ok_or(StoreError::NotFound)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(Deleted::Removed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Deleted::AlreadyAbsent),
            Err(e) => Err(e.into()),
        }
    }
}
