//! A PATCH into an upload's multipart upload: its body is cut into the upload's parts, each part
//! filled is sent (two at a time while the next is read, as the form's uploads do) and recorded in
//! order with the offset it reaches, and what is left short of a part is a piece (as the joined
//! uploads keep them), read back in front of the PATCH that fills the part. Part buffers come from
//! the process's part budget. The digest of the bytes in parts is kept in the upload's row, so
//! completing is one request, with no byte read back.

use std::{collections::VecDeque, sync::Arc};

use tokio::{
    io::{AsyncRead, AsyncReadExt},
    task::JoinHandle,
};

use super::{UploadError, Uploads};
use crate::{
    storage::{
        Digester, ResumableStore, StoreError, StoredFile,
        object_store::PARTS_IN_FLIGHT,
        part_budget::{Part, PartBuffer},
    },
    uploads::{
        Advance, Checksum, UploadRow,
        checksum::Digester as ChecksumDigester,
        parts::{PartAt, part_bytes},
    },
};

/// Where a PATCH is: what it has sent and not recorded yet, and its digests.
struct Sending {
    /// The digest of every byte read into parts so far.
    digest: Digester,
    /// The digest of the body, when its PATCH has a checksum.
    checker: Option<ChecksumDigester>,
    /// The parts sent and not recorded yet, each as its start offset and the store's answer.
    parts: Vec<(u64, String)>,
    /// The saved digest of every byte up to the end of the last of `parts`.
    parts_digest: Option<Vec<u8>>,
    /// The pieces the parts took their front from, to be removed once the parts are recorded.
    consumed: Vec<String>,
}

/// A part on its way to the store. Dropped before it landed (the PATCH failed or went away), its
/// sending stops.
struct InFlight {
    part: PartAt,
    /// The saved digest of every byte up to this part's end.
    digest: Vec<u8>,
    /// The pieces its front was read from.
    consumed: Vec<String>,
    sent: JoinHandle<Result<String, StoreError>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.sent.abort();
    }
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
    /// it lands, and a body cut off keeps what arrived; with one, nothing is recorded before
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
        let mut sending = Sending { digest, checker, parts: Vec::new(), parts_digest: None, consumed: Vec::new() };
        let mut in_flight = VecDeque::new();
        let mut offset = row.offset();
        let mut front_pieces = self.repo.pieces(row.id).await?;
        while offset < row.length() {
            let part = PartAt::of(offset, row.length(), part_bytes);
            let front = usize::try_from(offset - part.start).unwrap_or(usize::MAX);
            let mut buffer = PartBuffer::new(usize::try_from(part.len).unwrap_or(usize::MAX)).await;
            let (filled, cut) = read_into(content, &mut buffer[front..]).await;
            if let Some(checker) = &mut sending.checker {
                checker.update(&buffer[front..front + filled]);
            }
            if front + filled < buffer.len() {
                self.land_all(row, &mut in_flight, &mut sending).await?;
                let rest = &buffer[front..front + filled];
                return self.keep_rest(row, offset, rest, cut, sending).await;
            }
            if part.end() == row.length() && !at_end(content).await {
                return Err(UploadError::TooLarge);
            }
            if front > 0 {
                match self.store.read_pieces(&row.storage_key, part.start, &front_pieces, &mut buffer[..front]).await {
                    // Another writer filled the part first and removed the pieces it replaced.
                    Err(StoreError::NotFound) => return Err(UploadError::Conflict),
                    other => other?,
                }
            }
            sending.digest.update(&buffer);
            while in_flight.len() >= PARTS_IN_FLIGHT {
                self.land(row, &mut in_flight, &mut sending).await?;
            }
            let whole = buffer.len();
            let sent = send(self.store.clone(), &row.storage_key, &multipart_id, part.index, buffer.into_part(whole));
            let consumed = std::mem::take(&mut front_pieces);
            in_flight.push_back(InFlight { part, digest: sending.digest.saved(), consumed, sent });
            offset = part.end();
        }
        self.land_all(row, &mut in_flight, &mut sending).await?;
        if !sending.checker.take().is_none_or(ChecksumDigester::matches) {
            return Err(UploadError::ChecksumMismatch);
        }
        self.record_parts(row, offset, None, &mut sending).await
    }

    /// Waits for the oldest part in flight to land; records it unless the body has a checksum
    /// still to match.
    async fn land(
        &self,
        row: &mut UploadRow,
        in_flight: &mut VecDeque<InFlight>,
        sending: &mut Sending,
    ) -> Result<(), UploadError> {
        let Some(mut oldest) = in_flight.pop_front() else { return Ok(()) };
        let e_tag = match (&mut oldest.sent).await {
            Ok(sent) => sent?,
            Err(failed) => return Err(UploadError::Store(StoreError::Io(std::io::Error::other(failed)))),
        };
        sending.parts.push((oldest.part.start, e_tag));
        sending.parts_digest = Some(std::mem::take(&mut oldest.digest));
        sending.consumed.append(&mut oldest.consumed);
        if sending.checker.is_none() {
            self.record_parts(row, oldest.part.end(), None, sending).await?;
        }
        Ok(())
    }

    async fn land_all(
        &self,
        row: &mut UploadRow,
        in_flight: &mut VecDeque<InFlight>,
        sending: &mut Sending,
    ) -> Result<(), UploadError> {
        while !in_flight.is_empty() {
            self.land(row, in_flight, sending).await?;
        }
        Ok(())
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
        let saved = if sending.parts.is_empty() { None } else { sending.parts_digest.take() };
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

/// Sends `part` as part `index` on a task of its own, so the next part is read meanwhile; the part
/// keeps its share of the budget until it has been sent.
fn send(
    store: Arc<dyn ResumableStore>,
    key: &str,
    id: &str,
    index: usize,
    part: Part,
) -> JoinHandle<Result<String, StoreError>> {
    let (key, id) = (key.to_owned(), id.to_owned());
    tokio::spawn(async move { store.put_part(&key, &id, index, part.bytes.clone()).await })
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
