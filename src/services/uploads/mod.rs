//! Resumable uploads (tus): create, ask how far one got, append, terminate; a signed-in sender's
//! own, or a file request's (see [`Owner`]). Another owner's upload, an unknown id and an expired
//! one are all `NotFound`. A PATCH runs in its own
//! task, so a client that goes away mid-body still gets what arrived made durable. In the object
//! store an upload's bytes go up as the parts of one multipart upload (`parts`), unless it is
//! sealed: its pieces are then joined, and sealed, at completion.

mod parts;

use std::{pin::Pin, sync::Arc};

use tokio::io::{AsyncRead, AsyncReadExt};

use super::{Fault, Parts};
use crate::{
    config::Config,
    db::Timestamp,
    request::UploadRefused,
    secret::random_token,
    storage::{Appended, Content, ResumableStore, StoreError, StoredFile},
    uploads::{
        CHECKPOINT_BYTES, Checksum, Metadata, NewUpload, Owner, RESERVATION_FACTOR, Refusal, TAKEOVER_PATIENCE,
        UploadRepository, UploadRow, WriteLocks, delete_files, locks::WriteGuard,
    },
};

/// A PATCH body: read to its end (or until it is cut) by the task that stores it.
pub type Body = Pin<Box<dyn AsyncRead + Send + 'static>>;

#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    #[error("no such upload")]
    NotFound,
    #[error("the upload is larger than allowed")]
    TooLarge,
    #[error("the sender's unfinished uploads reserve too much")]
    OverReservation,
    #[error("the sender is disabled")]
    SenderDisabled,
    /// A file request's upload the request has no room for (or that it no longer takes).
    #[error(transparent)]
    Refused(UploadRefused),
    #[error("the offset is not the upload's")]
    Conflict,
    #[error("the checksum does not match the body")]
    ChecksumMismatch,
    #[error("the body ended before it could be checked")]
    Unverified,
    #[error("another request holds the upload")]
    Locked,
    #[error("storage failed")]
    Store(#[from] StoreError),
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for UploadError {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

/// Where an upload stands, as HEAD and PATCH answer it.
#[derive(Clone, Debug)]
pub struct Progress {
    pub offset: u64,
    pub length: u64,
    pub metadata: Option<String>,
    pub expires_at: Timestamp,
}

impl From<&UploadRow> for Progress {
    fn from(row: &UploadRow) -> Self {
        Self { offset: row.offset(), length: row.length(), metadata: row.metadata.clone(), expires_at: row.expires_at }
    }
}

/// A PATCH as the protocol states it.
pub struct Patch {
    pub offset: u64,
    pub content_length: Option<u64>,
    pub checksum: Option<Checksum>,
    pub body: Body,
}

#[derive(Clone)]
pub struct Uploads {
    config: Arc<Config>,
    repo: UploadRepository,
    store: Arc<dyn ResumableStore>,
    locks: WriteLocks,
}

impl Uploads {
    pub fn new(parts: &Parts) -> Self {
        Self {
            config: parts.config.clone(),
            repo: UploadRepository::new(parts.db.clone()),
            store: parts.store.clone(),
            locks: WriteLocks::default(),
        }
    }

    /// The largest upload (`Tus-Max-Size`).
    pub fn max_size(&self) -> u64 {
        self.config.settings.max_upload_bytes
    }

    pub fn repo(&self) -> &UploadRepository {
        &self.repo
    }

    /// Creates an upload of `length` bytes; answers its public id.
    pub async fn create(&self, owner: Owner, length: u64, metadata: Metadata) -> Result<String, UploadError> {
        if length > self.max_size() {
            return Err(UploadError::TooLarge);
        }
        let new = NewUpload {
            public_id: random_token().expose().to_owned(),
            owner,
            storage_key: random_token().expose().to_owned(),
            length,
            metadata,
        };
        let reservation = self.max_size().saturating_mul(RESERVATION_FACTOR);
        let id = match self.repo.insert(&new, reservation).await? {
            Ok(id) => id,
            Err(Refusal::SenderDisabled) => return Err(UploadError::SenderDisabled),
            Err(Refusal::OverReservation { reserved }) => {
                tracing::info!(
                    account_id = owner.sender_id(),
                    share_id = owner.request_share_id(),
                    reserved,
                    length,
                    "upload refused: reservation full"
                );
                return Err(UploadError::OverReservation);
            }
            Err(Refusal::Request(refused)) => {
                tracing::info!(share_id = owner.request_share_id(), length, %refused, "request upload refused");
                return Err(UploadError::Refused(refused));
            }
        };
        if let Err(error) = self.store.create_partial(&new.storage_key).await {
            self.repo.delete(id).await?;
            return Err(error.into());
        }
        if length == 0 {
            // Nothing will ever be sent: it is complete now.
            self.finish_joined(id, &new.storage_key).await?;
        } else if let Err(error) = self.begin_parts(id, &new.storage_key, length).await {
            if let Err(error) = delete_files(self.store.as_ref(), &new.storage_key).await {
                tracing::warn!(upload_id = id, %error, "could not remove a refused upload's partial file; the sweep will");
            }
            self.repo.delete(id).await?;
            return Err(error);
        }
        tracing::info!(
            account_id = owner.sender_id(),
            share_id = owner.request_share_id(),
            upload_id = id,
            length,
            "upload created"
        );
        Ok(new.public_id)
    }

    /// Keeps a file that arrived whole in a form as a finished upload of the sender's, so that a
    /// form which comes back with a question keeps it; answers its public id. At most `max_bytes`
    /// (what the form's other files leave of the limit); refused as `create` refuses, and then
    /// nothing is kept.
    pub async fn keep(
        &self,
        owner_id: i64,
        content: Content<'_>,
        file_name: &str,
        content_type: &str,
        max_bytes: u64,
    ) -> Result<String, UploadError> {
        let stored = self.store.put(content, max_bytes.min(self.max_size())).await.map_err(|error| match error {
            StoreError::TooLarge { .. } => UploadError::TooLarge,
            other => other.into(),
        })?;
        let new = NewUpload {
            public_id: random_token().expose().to_owned(),
            owner: Owner::Sender(owner_id),
            storage_key: stored.key.clone(),
            length: stored.size_bytes,
            metadata: Metadata::of_file(file_name, content_type),
        };
        let reservation = self.max_size().saturating_mul(RESERVATION_FACTOR);
        let refusal = match self.repo.insert_finished(&new, &stored, reservation).await {
            Ok(Ok(id)) => {
                tracing::info!(account_id = owner_id, upload_id = id, "a form's file kept as a finished upload");
                return Ok(new.public_id);
            }
            Ok(Err(Refusal::SenderDisabled)) => UploadError::SenderDisabled,
            Ok(Err(Refusal::OverReservation { .. })) => UploadError::OverReservation,
            Ok(Err(Refusal::Request(refused))) => UploadError::Refused(refused),
            Err(error) => error.into(),
        };
        if let Err(error) = self.store.delete(&stored.key).await {
            tracing::warn!(%error, "could not remove a refused form's file; the leftover sweep removes it");
        }
        Err(refusal)
    }

    /// How far the owner's upload got.
    pub async fn progress(&self, owner: Owner, public_id: &str) -> Result<Progress, UploadError> {
        Ok(Progress::from(&self.find(owner, public_id).await?))
    }

    async fn find(&self, owner: Owner, public_id: &str) -> Result<UploadRow, UploadError> {
        if !crate::session::is_token_shaped(public_id) {
            return Err(UploadError::NotFound);
        }
        self.repo.find(public_id, owner).await?.ok_or(UploadError::NotFound)
    }

    /// Appends a PATCH's body. Runs in a task of its own: if the client goes away the handler is
    /// dropped, but what arrived is still made durable and the offset moved.
    pub async fn patch(&self, owner: Owner, public_id: &str, patch: Patch) -> Result<Progress, UploadError> {
        let row = self.find(owner, public_id).await?;
        let this = self.clone();
        let public_id = public_id.to_owned();
        let task = tokio::spawn(async move {
            let guard = this.locks.acquire(row.id, TAKEOVER_PATIENCE).await.ok_or(UploadError::Locked)?;
            // Another writer may have moved it while this one waited.
            let row = this.find(owner, &public_id).await?;
            this.append(row, patch, &guard).await
        });
        task.await.map_err(|error| UploadError::Fault(Fault::Internal(error.into())))?
    }

    async fn append(&self, mut row: UploadRow, patch: Patch, guard: &WriteGuard) -> Result<Progress, UploadError> {
        if patch.offset != row.offset() {
            return Err(UploadError::Conflict);
        }
        let remaining = row.length() - row.offset();
        if patch.content_length.is_some_and(|length| length > remaining) {
            return Err(UploadError::TooLarge);
        }
        let mut content = guard.stoppable(patch.body);
        if remaining > 0 {
            match patch.checksum {
                checksum if row.multipart_id.is_some() => {
                    self.append_parts(&mut row, &mut content, checksum.as_ref()).await?
                }
                Some(checksum) => self.append_checked(&mut row, &mut content, &checksum).await?,
                None => self.append_in_checkpoints(&mut row, &mut content).await?,
            }
        }
        if row.is_complete() && row.sha256.is_none() {
            self.finish(&row).await?;
        }
        Ok(Progress::from(&row))
    }

    /// Streams the body in rounds, each made durable and recorded before the next.
    async fn append_in_checkpoints(
        &self,
        row: &mut UploadRow,
        content: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<(), UploadError> {
        loop {
            let remaining = row.length() - row.offset();
            let last = remaining <= CHECKPOINT_BYTES;
            // The last round reads to the body's end, so a body past the length is refused.
            let (round, cap): (Pin<Box<dyn AsyncRead + Send + '_>>, u64) = if last {
                (Box::pin(&mut *content), remaining)
            } else {
                (Box::pin((&mut *content).take(CHECKPOINT_BYTES)), CHECKPOINT_BYTES)
            };
            let appended = self.store.append_partial(&row.storage_key, row.offset(), round, cap).await.map_err(
                |error| match error {
                    StoreError::TooLarge { .. } => UploadError::TooLarge,
                    other => other.into(),
                },
            )?;
            self.record(row, &appended).await?;
            if let Some(cut) = &appended.cut {
                tracing::info!(upload_id = row.id, offset = row.offset(), reason = %cut, "upload body cut; kept what arrived");
                return Ok(());
            }
            if last || appended.written < cap {
                return Ok(());
            }
        }
    }

    /// Streams the body while digesting it; only a matching digest moves the offset.
    async fn append_checked(
        &self,
        row: &mut UploadRow,
        content: &mut (dyn AsyncRead + Send + Unpin),
        checksum: &Checksum,
    ) -> Result<(), UploadError> {
        let remaining = row.length() - row.offset();
        let mut digester = checksum.digester();
        let reader = digester.reader(Box::pin(content));
        let appended =
            self.store.append_partial(&row.storage_key, row.offset(), Box::pin(reader), remaining).await.map_err(
                |error| match error {
                    StoreError::TooLarge { .. } => UploadError::TooLarge,
                    other => other.into(),
                },
            )?;
        // Bytes that were not all checked are not kept: the next append cuts them off (the local
        // store) or they stay in a piece nobody records (the object store).
        let refusal = if appended.cut.is_some() {
            UploadError::Unverified
        } else if !digester.matches() {
            UploadError::ChecksumMismatch
        } else {
            return self.record(row, &appended).await;
        };
        self.discard(row, &appended).await;
        Err(refusal)
    }

    /// Moves the stored offset past the appended durable bytes, recording their piece.
    async fn record(&self, row: &mut UploadRow, appended: &Appended) -> Result<(), UploadError> {
        let written = appended.written;
        if written == 0 {
            return Ok(());
        }
        // A database error leaves the piece alone: the advance may have committed all the same.
        let Some(expires_at) = self.repo.advance(row.id, row.offset(), written, appended.piece.as_deref()).await?
        else {
            self.discard(row, appended).await;
            return Err(UploadError::Conflict);
        };
        row.upload_offset += i64::try_from(written).unwrap_or(i64::MAX);
        row.expires_at = expires_at;
        Ok(())
    }

    /// Removes a piece the database did not record (best effort: the leftover sweep removes what
    /// this misses).
    async fn discard(&self, row: &UploadRow, appended: &Appended) {
        let Some(piece) = &appended.piece else { return };
        if let Err(error) = self.store.discard_piece(&row.storage_key, piece).await {
            tracing::warn!(upload_id = row.id, %error, "could not remove an unrecorded piece; the sweep will");
        }
    }

    /// Completes the file and records its digests.
    async fn finish(&self, row: &UploadRow) -> Result<StoredFile, UploadError> {
        match &row.multipart_id {
            Some(multipart_id) => self.finish_parts(row, multipart_id).await,
            None => self.finish_joined(row.id, &row.storage_key).await,
        }
    }

    /// Completes the file from its recorded pieces and records its digests (taken as they are
    /// joined, or read back from the store).
    async fn finish_joined(&self, id: i64, key: &str) -> Result<StoredFile, UploadError> {
        let pieces = self.repo.pieces(id).await?;
        let stored = self.store.complete_partial(key, &pieces).await?;
        self.repo.finish(id, &stored).await?;
        tracing::info!(upload_id = id, size = stored.size_bytes, "upload complete");
        Ok(stored)
    }

    /// The owner's complete upload, finishing it first if a crash came between its last byte and
    /// its digest.
    pub async fn finished(&self, owner: Owner, public_id: &str) -> Result<Option<UploadRow>, UploadError> {
        let mut row = match self.find(owner, public_id).await {
            Ok(row) => row,
            Err(UploadError::NotFound) => return Ok(None),
            Err(error) => return Err(error),
        };
        if !row.is_complete() {
            return Ok(None);
        }
        if row.sha256.is_none() {
            let stored = self.finish(&row).await?;
            row.finished_as(stored);
        }
        Ok(Some(row))
    }

    /// Ends an upload and deletes its bytes at once; if the store fails, the expired row is left
    /// for the GC to finish the job.
    pub async fn terminate(&self, owner: Owner, public_id: &str) -> Result<(), UploadError> {
        let row = self.find(owner, public_id).await?;
        // Stop a writer first, so it does not write after the delete (best effort).
        let _guard = self.locks.acquire(row.id, TAKEOVER_PATIENCE).await;
        // Ended in the database before its bytes go: a share being made of it in another tab can
        // no longer claim it. One that claimed it first has its file, and this is then NotFound.
        if !self.repo.end(row.id).await? {
            return Err(UploadError::NotFound);
        }
        match delete_files(self.store.as_ref(), &row.storage_key).await {
            Ok(()) => self.repo.delete(row.id).await?,
            Err(error) => tracing::warn!(upload_id = row.id, %error, "could not delete an upload's file; the GC will"),
        }
        tracing::info!(
            account_id = owner.sender_id(),
            share_id = owner.request_share_id(),
            upload_id = row.id,
            "upload terminated"
        );
        Ok(())
    }
}
