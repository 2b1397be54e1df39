//! A PATCH into an upload's multipart upload: its body is cut into the upload's parts, each part
//! filled is sent and recorded with the offset it reaches, and what is left short of a part is a
//! piece (as the joined uploads keep them), read back in front of the PATCH that fills the part.
//! Memory is one part per PATCH. The digest of the bytes in parts is kept in the upload's row, so
//! completing is one request, with no byte read back.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::{UploadError, Uploads};
use crate::{
    storage::{Digester, StoreError, StoredFile},
    uploads::{
        Advance, Checksum, UploadRow,
        checksum::Digester as ChecksumDigester,
        parts::{PartAt, part_bytes},
    },
};

/// Where a PATCH is: what it has sent and not recorded yet, and its digests.
struct Sending {
    /// The digest of every byte in parts up to the last one sent.
    digest: Digester,
    /// The digest of the body, when its PATCH has a checksum.
    checker: Option<ChecksumDigester>,
    /// The parts, each as its start offset and the store's answer.
    parts: Vec<(u64, String)>,
    /// The pieces the parts took their front from, to be removed once the parts are recorded.
    consumed: Vec<String>,
}

impl Uploads {
    /// Starts the upload's multipart upload where the store takes one, recording it.
    pub(super) async fn begin_parts(&self, id: i64, key: &str, length: u64) -> Result<(), UploadError> {
        if let Some(multipart_id) = self.store.begin_parts(key).await? {
            self.repo.begin_parts(id, &multipart_id, part_bytes(length)).await?;
        }
        Ok(())
    }

    /// Streams a PATCH's body into the upload's parts. Without a checksum each part is recorded as
    /// it is sent, and a body cut off keeps what arrived; with one, nothing is recorded before
    /// the whole body matched it (parts sent for a refused body are sent again, under the same
    /// numbers, by the PATCH that replaces it).
    pub(super) async fn append_parts(
        &self,
        row: &mut UploadRow,
        content: &mut (dyn AsyncRead + Send + Unpin),
        checksum: Option<&Checksum>,
    ) -> Result<(), UploadError> {
        let (multipart_id, part_bytes) = match (&row.multipart_id, row.part_bytes.map(u64::try_from)) {
            (Some(id), Some(Ok(bytes))) if bytes > 0 => (id.clone(), bytes),
            _ => return Err(internal("an upload in parts has no part size")),
        };
        let digest = match &row.digest_state {
            Some(saved) => Digester::resume(saved).ok_or_else(|| internal("an upload's digest does not resume"))?,
            None => Digester::default(),
        };
        let checker = checksum.map(Checksum::digester);
        let mut sending = Sending { digest, checker, parts: Vec::new(), consumed: Vec::new() };
        let mut offset = row.offset();
        let mut front_pieces = self.repo.pieces(row.id).await?;
        while offset < row.length() {
            let part = PartAt::of(offset, row.length(), part_bytes);
            let front = usize::try_from(offset - part.start).unwrap_or(usize::MAX);
            let mut buffer = vec![0u8; usize::try_from(part.len).unwrap_or(usize::MAX)];
            let (filled, cut) = read_into(content, &mut buffer[front..]).await;
            if let Some(checker) = &mut sending.checker {
                checker.update(&buffer[front..front + filled]);
            }
            if front + filled < buffer.len() {
                let rest = &buffer[front..front + filled];
                return self.keep_rest(row, offset, rest, cut, sending).await;
            }
            if part.end() == row.length() && !at_end(content).await {
                return Err(UploadError::TooLarge);
            }
            if front > 0 {
                let front = &mut buffer[..front];
                match self.store.read_pieces(&row.storage_key, part.start, &front_pieces, front).await {
                    // Another writer filled the part first and removed the pieces it replaced.
                    Err(StoreError::NotFound) => return Err(UploadError::Conflict),
                    other => other?,
                }
            }
            sending.digest.update(&buffer);
            let e_tag = self.store.put_part(&row.storage_key, &multipart_id, part.index, Bytes::from(buffer)).await?;
            sending.parts.push((part.start, e_tag));
            sending.consumed.append(&mut front_pieces);
            offset = part.end();
            if sending.checker.is_none() {
                self.record_parts(row, offset, None, &mut sending).await?;
            }
        }
        if !sending.checker.take().is_none_or(ChecksumDigester::matches) {
            return Err(UploadError::ChecksumMismatch);
        }
        self.record_parts(row, offset, None, &mut sending).await
    }

    /// Keeps the bytes of a body that ended short of a part as a piece, recorded with the parts
    /// sent before it (a checked body's, once it matched).
    async fn keep_rest(
        &self,
        row: &mut UploadRow,
        offset: u64,
        rest: &[u8],
        cut: Option<std::io::Error>,
        mut sending: Sending,
    ) -> Result<(), UploadError> {
        if let Some(checker) = sending.checker.take() {
            if cut.is_some() {
                return Err(UploadError::Unverified);
            }
            if !checker.matches() {
                return Err(UploadError::ChecksumMismatch);
            }
        }
        let piece = if rest.is_empty() {
            None
        } else {
            let appended =
                self.store.append_partial(&row.storage_key, offset, Box::pin(rest), rest.len() as u64).await?;
            appended.piece
        };
        let end = offset + rest.len() as u64;
        let recorded = self.record_parts(row, end, piece.as_deref().map(|piece| (offset, piece)), &mut sending).await;
        // A database error leaves the piece alone: the advance may have committed all the same.
        if matches!(recorded, Err(UploadError::Conflict))
            && let Some(piece) = &piece
        {
            self.discard_unrecorded(row, piece).await;
        }
        recorded?;
        if let Some(cut) = cut {
            tracing::info!(upload_id = row.id, offset = row.offset(), reason = %cut, "upload body cut; kept what arrived");
        }
        Ok(())
    }

    /// Moves the stored offset to `end`, recording the parts sent since the last record, the
    /// digest of every byte in parts, and `piece`; then removes the pieces the parts replaced.
    async fn record_parts(
        &self,
        row: &mut UploadRow,
        end: u64,
        piece: Option<(u64, &str)>,
        sending: &mut Sending,
    ) -> Result<(), UploadError> {
        if end == row.offset() {
            return Ok(());
        }
        let saved = (!sending.parts.is_empty()).then(|| sending.digest.saved());
        let advance = Advance { parts: &sending.parts, digest: saved.as_deref(), piece };
        let Some(expires_at) = self.repo.advance_with(row.id, row.offset(), end - row.offset(), &advance).await? else {
            return Err(UploadError::Conflict);
        };
        row.upload_offset = i64::try_from(end).unwrap_or(i64::MAX);
        row.expires_at = expires_at;
        if saved.is_some() {
            row.digest_state = saved;
        }
        sending.parts.clear();
        for piece in std::mem::take(&mut sending.consumed) {
            self.discard_unrecorded(row, &piece).await;
        }
        Ok(())
    }

    /// Removes a piece no record needs (best effort: completing, or the leftover sweep, removes
    /// what this misses).
    async fn discard_unrecorded(&self, row: &UploadRow, piece: &str) {
        if let Err(error) = self.store.discard_piece(&row.storage_key, piece).await {
            tracing::warn!(upload_id = row.id, %error, "could not remove a piece; completing or the sweep will");
        }
    }

    /// Completes the multipart upload from its recorded parts, in one request, and records the
    /// digest kept as they were sent.
    pub(super) async fn finish_parts(&self, row: &UploadRow, multipart_id: &str) -> Result<StoredFile, UploadError> {
        let saved = row.digest_state.as_deref().ok_or_else(|| internal("a complete upload has no digest"))?;
        let stored = Digester::resume(saved).ok_or_else(|| internal("an upload's digest does not resume"))?;
        let stored = stored.stored(row.storage_key.clone());
        if stored.size_bytes != row.length() {
            return Err(internal("an upload's parts do not hold its length"));
        }
        let parts = self.repo.parts(row.id).await?;
        self.store.complete_parts(&row.storage_key, multipart_id, parts).await?;
        self.repo.finish(row.id, &stored).await?;
        tracing::info!(upload_id = row.id, size = stored.size_bytes, "upload complete");
        Ok(stored)
    }
}

/// Reads `content` into `buffer` until it is full or the body ends: how much was read, and why the
/// body ended early if it was cut (what arrived before is kept all the same).
async fn read_into(content: &mut (dyn AsyncRead + Send + Unpin), buffer: &mut [u8]) -> (usize, Option<std::io::Error>) {
    let mut filled = 0;
    while filled < buffer.len() {
        match content.read(&mut buffer[filled..]).await {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(cut) => return (filled, Some(cut)),
        }
    }
    (filled, None)
}

/// Whether the body has nothing past the upload's last byte (a cut there loses nothing).
async fn at_end(content: &mut (dyn AsyncRead + Send + Unpin)) -> bool {
    !matches!(content.read(&mut [0u8; 1]).await, Ok(read) if read > 0)
}

fn internal(what: &'static str) -> UploadError {
    UploadError::Store(StoreError::Io(std::io::Error::other(what)))
}
