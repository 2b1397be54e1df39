//! The store the application runs on, sealing what it is given and opening what a row says is
//! sealed: both stores (folder, object store) sit under it, so every write and every read — a
//! download, a resumed range, a bundle's ZIP, the virus scan — goes through one opening function.
//! Whether a stored file is sealed, and its wrapped key, is read from its `files` row by storage
//! key; a key without such a row (a resumable upload still running, a file stored before) is read
//! as it is stored.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use tokio_util::io::{InspectReader, StreamReader};

use super::{Damaged, DataKey, HEADER_LEN, Header, KeyRing, SEGMENT, WrappedKey, open_range, read_header, seal};
use crate::{
    db::{Db, Dialect, Sql},
    metrics::Metrics,
    on_db,
    storage::{
        Appended, Content, Deleted, Digester, FileStore, Leftover, OpenedFile, ResumableStore, StoreError, StoredFile,
        SweptStore, Through, store::digest_of,
    },
};

crate::db_code! {
    /// How a file's bytes are stored (`files.sealing`, `uploads.sealing`).
    pub enum Sealing {
        /// As sent: files stored before encryption, or while it is off.
        Plaintext = "plaintext",
        /// In STREAM segments under the file's own data key (`sealed::format`).
        SealedV1 = "sealed-v1",
    }
}

/// How the row of a stored file says it is stored: its `files` row, or before it has one, the
/// finished upload it is (a tus upload completed, a form's file kept). The row holds the key until
/// it is destroyed.
const SEALING_OF: Sql = Sql::same(
    "SELECT 0 AS rank, sealing, wrapped_key, size_bytes, file_key_id FROM files WHERE storage_key = $1
     UNION ALL
     SELECT 1 AS rank, sealing, wrapped_key, upload_length, file_key_id FROM uploads WHERE storage_key = $1
     ORDER BY rank LIMIT 1",
);
/// A completing upload's data key, recorded before any sealed byte is written (so a crash after
/// the join still has the key of what it wrote), and only once: a second completer (another
/// instance, a retry) reads the first one's.
const RECORD_UPLOAD_KEY: Sql = crate::sql!(
    "UPDATE uploads SET sealing = $4, wrapped_key = $2, file_key_id = $3
      WHERE storage_key = $1 AND sealing = $5 AND wrapped_key IS NULL AND expires_at > " now
);

#[derive(sqlx::FromRow)]
struct SealingRow {
    sealing: Sealing,
    wrapped_key: Option<Vec<u8>>,
    size_bytes: i64,
    file_key_id: Option<String>,
}

pub struct SealedStore {
    inner: Arc<dyn SweptStore>,
    db: Db,
    /// The file key, and the next one while a rotation runs: the row says which wraps its key.
    keys: KeyRing,
    /// Whether new files are sealed (`WATASU_ENCRYPT_FILES`); sealed files are opened either way.
    seal_new: bool,
    metrics: Metrics,
}

impl SealedStore {
    pub fn new(inner: Arc<dyn SweptStore>, db: Db, keys: KeyRing, seal_new: bool, metrics: Metrics) -> Self {
        Self { inner, db, keys, seal_new, metrics }
    }

    async fn sealing_of(&self, key: &str) -> Result<Option<SealingRow>, StoreError> {
        let row = on_db!(&self.db, |pool| sqlx::query_as(pool.sql(&SEALING_OF)).bind(key).fetch_optional(pool).await);
        row.map_err(|error| StoreError::Io(std::io::Error::other(error)))
    }

    /// The wrapped data key a completing upload is sealed under: the one its row holds, or a new
    /// one recorded there now when new files are sealed; `None` to store it as it is.
    async fn upload_key(&self, key: &str) -> Result<Option<(SealingRow, WrappedKey)>, StoreError> {
        let row = self.sealing_of(key).await?;
        let recorded = |row: SealingRow| match (&row.wrapped_key, &row.file_key_id) {
            (Some(wrapped), Some(key_id)) => {
                let wrapped = WrappedKey { wrapped: wrapped.clone(), key_id: key_id.clone() };
                Ok(Some((row, wrapped)))
            }
            // Its key was destroyed (the upload ended): nothing may be sealed under it any more.
            _ => Err(StoreError::NotFound),
        };
        match row {
            Some(row) if row.sealing == Sealing::SealedV1 => recorded(row),
            Some(_) if self.seal_new => {
                let wrapped = self.keys.wrapping().wrap(key, &DataKey::generate());
                on_db!(&self.db, |pool| sqlx::query(pool.sql(&RECORD_UPLOAD_KEY))
                    .bind(key)
                    .bind(&wrapped.wrapped)
                    .bind(&wrapped.key_id)
                    .bind(Sealing::SealedV1)
                    .bind(Sealing::Plaintext)
                    .execute(pool)
                    .await
                    .map(drop))
                .map_err(|error| StoreError::Io(std::io::Error::other(error)))?;
                match self.sealing_of(key).await? {
                    Some(row) if row.sealing == Sealing::SealedV1 => recorded(row),
                    _ => Err(StoreError::NotFound),
                }
            }
            _ => Ok(None),
        }
    }

    /// The data key of the file stored at `key`, unwrapped under the file key its row names.
    fn data_key(&self, key: &str, wrapped: &WrappedKey) -> Result<DataKey, StoreError> {
        let Some(file_keys) = self.keys.by_id(&wrapped.key_id) else {
            return Err(self.damaged("before_first_byte", "its key is wrapped under a file key this instance lacks"));
        };
        file_keys
            .unwrap(key, &wrapped.wrapped)
            .ok_or_else(|| self.damaged("before_first_byte", "its wrapped key does not open under the file key"))
    }

    /// Opens `len` plaintext bytes from `start` of a sealed file. The first segment is opened
    /// before this returns, so damage found there is an error before any byte is answered; damage
    /// found later ends the stream with an error (the connection is cut), never with wrong bytes.
    async fn open_sealed(
        &self,
        key: &str,
        wrapped: Option<&WrappedKey>,
        plain_len: u64,
        start: u64,
        len: u64,
    ) -> Result<OpenedFile, StoreError> {
        // A destroyed key: whatever bytes are still around (or were put back) cannot be read.
        let Some(wrapped) = wrapped else { return Err(StoreError::NotFound) };
        let data_key = self.data_key(key, wrapped)?;
        // A read of the whole file (a download, the scan, a bundle's entry) is one read of the
        // store, its segments following the header; a range reads the header first to find them.
        let whole = start == 0 && len >= plain_len;
        let head_len = if whole { u64::MAX } else { HEADER_LEN as u64 };
        let mut head = self.inner.open_range(key, 0, head_len).await?.into_reader();
        let header = match read_header(&mut head).await {
            Ok(header) => header,
            Err(error) if Damaged::is(&error) => return Err(self.damaged("before_first_byte", "its header")),
            Err(error) => return Err(error.into()),
        };
        let range = header.covering(plain_len, start, len);
        let stored = if whole {
            head
        } else {
            self.inner.open_range(key, range.stored_start, range.stored_len).await?.into_reader()
        };
        let mut chunks = open_range(&data_key, header, plain_len, range, stored);
        let first = match chunks.next().await {
            None => return Ok(OpenedFile::empty(plain_len)),
            Some(Ok(first)) => first,
            Some(Err(error)) if Damaged::is(&error) => {
                return Err(self.damaged("before_first_byte", "a segment"));
            }
            Some(Err(error)) => return Err(error.into()),
        };
        let metrics = self.metrics.clone();
        let rest = chunks.inspect_err(move |error| {
            if Damaged::is(error) {
                tracing::error!("a sealed file's segment did not authenticate mid-stream: the response is cut");
                metrics.damaged_file("mid_stream");
            }
        });
        Ok(OpenedFile::from_chunks(stream::once(async move { Ok(first) }).chain(rest).boxed(), plain_len))
    }

    /// Stores `content` sealed, whether or not new files are (`watasu storage encrypt`).
    pub async fn put_sealed(&self, content: Content<'_>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        let data_key = DataKey::generate();
        // Size and digests are the plaintext's (shown to recipients, checked against): taken as
        // the plaintext flows into the sealing.
        let digester = Arc::new(Mutex::new(Digester::default()));
        let seen = digester.clone();
        let plain = InspectReader::new(content, move |bytes| seen.lock().expect("not poisoned").update(bytes));
        let sealed = Box::pin(StreamReader::new(seal(&data_key, SEGMENT, plain)));
        let stored = match self.inner.put(sealed, sealed_limit(max_bytes)).await {
            Err(StoreError::TooLarge { .. }) => return Err(StoreError::TooLarge { limit: max_bytes }),
            other => other?,
        };
        let digester = std::mem::take(&mut *digester.lock().expect("not poisoned"));
        let mut plain = digester.stored(stored.key);
        plain.sealed = Some(self.keys.wrapping().wrap(&plain.key, &data_key));
        Ok(plain)
    }

    /// The plaintext's facts of a sealed file no row names yet, read back through its key: how a
    /// sealed copy is checked before a row is switched to it.
    pub async fn read_back_sealed(&self, stored: &StoredFile) -> Result<StoredFile, StoreError> {
        let opened = self.open_sealed(&stored.key, stored.sealed.as_ref(), stored.size_bytes, 0, u64::MAX).await?;
        let mut reader = opened.into_reader();
        let mut digester = Digester::default();
        let mut buffer = vec![0u8; 256 * 1024];
        loop {
            let read = tokio::io::AsyncReadExt::read(&mut reader, &mut buffer).await?;
            if read == 0 {
                return Ok(digester.stored(&stored.key));
            }
            digester.update(&buffer[..read]);
        }
    }

    fn damaged(&self, when: &'static str, what: &str) -> StoreError {
        tracing::error!(what, "a sealed file did not authenticate: it is not served");
        self.metrics.damaged_file(when);
        StoreError::Damaged
    }
}

/// The most stored bytes a file of `max_bytes` plaintext bytes seals to (no overflow).
fn sealed_limit(max_bytes: u64) -> u64 {
    let header = Header::new(SEGMENT, [0; super::format::NONCE_PREFIX]);
    let tags = header.segments(max_bytes).saturating_mul(super::format::TAG);
    max_bytes.saturating_add(tags).saturating_add(HEADER_LEN as u64)
}

#[async_trait::async_trait]
impl FileStore for SealedStore {
    async fn put<'a>(&self, content: Content<'a>, max_bytes: u64) -> Result<StoredFile, StoreError> {
        if !self.seal_new {
            return self.inner.put(content, max_bytes).await;
        }
        self.put_sealed(content, max_bytes).await
    }

    async fn open(&self, key: &str) -> Result<OpenedFile, StoreError> {
        self.open_range(key, 0, u64::MAX).await
    }

    async fn open_range(&self, key: &str, start: u64, len: u64) -> Result<OpenedFile, StoreError> {
        match self.sealing_of(key).await? {
            Some(row) if row.sealing == Sealing::SealedV1 => {
                let plain_len = u64::try_from(row.size_bytes).unwrap_or(0);
                let wrapped =
                    row.wrapped_key.map(|wrapped| WrappedKey { wrapped, key_id: row.file_key_id.unwrap_or_default() });
                self.open_sealed(key, wrapped.as_ref(), plain_len, start, len).await
            }
            _ => self.inner.open_range(key, start, len).await,
        }
    }

    async fn delete(&self, key: &str) -> Result<Deleted, StoreError> {
        self.inner.delete(key).await
    }

    /// The bytes as stored, whatever the row says of their key.
    async fn holds(&self, key: &str) -> Result<bool, StoreError> {
        self.inner.holds(key).await
    }
}

#[async_trait::async_trait]
impl ResumableStore for SealedStore {
    async fn create_partial(&self, key: &str) -> Result<(), StoreError> {
        self.inner.create_partial(key).await
    }

    async fn append_partial<'a>(
        &self,
        key: &str,
        offset: u64,
        content: Content<'a>,
        max_bytes: u64,
    ) -> Result<Appended, StoreError> {
        self.inner.append_partial(key, offset, content, max_bytes).await
    }

    /// Seals the upload's bytes as its pieces are joined into the stored file (one pass, flat
    /// memory), under a data key recorded in its row first; size and digests are the plaintext's,
    /// taken as it flows into the sealing. Completed before: the stored file is opened and digested.
    async fn complete_partial(&self, key: &str, pieces: &[String]) -> Result<StoredFile, StoreError> {
        let Some((row, wrapped)) = self.upload_key(key).await? else {
            return self.inner.complete_partial(key, pieces).await;
        };
        let data_key = self.data_key(key, &wrapped)?;
        let digester = Arc::new(Mutex::new(Digester::default()));
        let seen = digester.clone();
        let through: Through = Box::new(move |plain| {
            let plain = InspectReader::new(plain, move |bytes| seen.lock().expect("not poisoned").update(bytes));
            Box::pin(StreamReader::new(seal(&data_key, SEGMENT, plain)))
        });
        let mut stored = if self.inner.complete_partial_through(key, pieces, through).await? {
            std::mem::take(&mut *digester.lock().expect("not poisoned")).stored(key.to_owned())
        } else {
            let plain_len = u64::try_from(row.size_bytes).unwrap_or(0);
            let opened = self.open_sealed(key, Some(&wrapped), plain_len, 0, u64::MAX).await?;
            digest_of(opened, key).await?
        };
        stored.sealed = Some(wrapped);
        Ok(stored)
    }

    async fn complete_partial_through(
        &self,
        key: &str,
        pieces: &[String],
        through: Through,
    ) -> Result<bool, StoreError> {
        self.inner.complete_partial_through(key, pieces, through).await
    }

    /// A sealed upload is sealed as its pieces are joined (`complete_partial`), so new uploads
    /// take parts only while new files are stored as they are.
    async fn begin_parts(&self, key: &str) -> Result<Option<String>, StoreError> {
        if self.seal_new { Ok(None) } else { self.inner.begin_parts(key).await }
    }

    async fn put_part(&self, key: &str, id: &str, index: usize, bytes: Bytes) -> Result<String, StoreError> {
        self.inner.put_part(key, id, index, bytes).await
    }

    async fn read_pieces(&self, key: &str, from: u64, pieces: &[String], into: &mut [u8]) -> Result<(), StoreError> {
        self.inner.read_pieces(key, from, pieces, into).await
    }

    async fn complete_parts(&self, key: &str, id: &str, parts: Vec<String>) -> Result<(), StoreError> {
        self.inner.complete_parts(key, id, parts).await
    }

    async fn discard_piece(&self, key: &str, piece: &str) -> Result<(), StoreError> {
        self.inner.discard_piece(key, piece).await
    }

    async fn delete_partial(&self, key: &str) -> Result<Deleted, StoreError> {
        self.inner.delete_partial(key).await
    }
}

#[async_trait::async_trait]
impl SweptStore for SealedStore {
    fn leftovers(&self) -> futures_util::stream::BoxStream<'_, Result<Leftover, StoreError>> {
        self.inner.leftovers()
    }

    async fn remove_leftover(&self, leftover: &Leftover) -> Result<Deleted, StoreError> {
        self.inner.remove_leftover(leftover).await
    }
}
