//! Delivering a claimed handover (the GETs the claim's 303 points to): only to the browser session
//! that claimed it, only during the delivery grace, in byte ranges, so a dropped connection can be
//! resumed without a second claim, on this instance or another. A handover of one file is
//! delivered as that file; one of several as a ZIP archive of them all or file by file. Each
//! response records the ranges of the files it sends before the bytes go out and their true ends
//! when it is over ([`crate::lifecycle`]'s `delivered`); the response after which the ranges cover
//! every file records "download completed" and sends the sender's receipt.

use std::{io, sync::Arc};

use bytes::Bytes;
use futures_util::stream::BoxStream;

use super::{Fault, handover::Refusal, mails::Mails};
use crate::{
    i18n::format,
    lifecycle::{Claimed, ClaimedFile, LifecycleRepository, RangeRows, Span},
    secret::sha256_hex,
    session::{Session, is_token_shaped},
    share::{EventKind, ShareEvents},
    storage::{FileStore, OpenedFile, StoreError},
    zip::{Entry, Layout, Piece, archive_bytes},
};

/// What one response sends of a claimed handover, and how its bytes map onto the files.
#[derive(Clone)]
pub struct Delivery {
    pub claimed: Arc<Claimed>,
    pub what: Sent,
}

/// One file of the handover (by its index in `Claimed::files`), or the archive of them all.
#[derive(Clone)]
pub enum Sent {
    File(usize),
    Archive(Arc<Layout>),
}

impl Delivery {
    /// The response's length in bytes.
    pub fn len(&self) -> u64 {
        match &self.what {
            Sent::File(index) => size_of(&self.claimed.files[*index]),
            Sent::Archive(layout) => layout.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of files that bytes `start..end` of the response are: the same range of the one
    /// file, or the file pieces of the archive's range (its records belong to no file).
    pub fn spans(&self, start: u64, end: u64) -> Vec<Span> {
        match &self.what {
            Sent::File(index) => vec![Span { position: self.claimed.files[*index].position, start, end }],
            Sent::Archive(layout) => layout
                .range(start, end)
                .into_iter()
                .filter_map(|piece| match piece {
                    Piece::File { entry, offset, len } => {
                        Some(Span { position: self.claimed.files[entry].position, start: offset, end: offset + len })
                    }
                    Piece::Records(_) => None,
                })
                .collect(),
        }
    }

    /// Every file's position and size.
    fn sizes(&self) -> Vec<(i32, u64)> {
        self.claimed.files.iter().map(|file| (file.position, size_of(file))).collect()
    }
}

fn size_of(file: &ClaimedFile) -> u64 {
    u64::try_from(file.size_bytes).unwrap_or(0)
}

/// The archive of a claimed handover's files, under their names, dated when the handover was made
/// on the clock of the share's language (a ZIP's times have no zone).
pub fn archive_of(claimed: &Claimed) -> Result<Layout, Refusal> {
    let modified = format::local_time(claimed.created_at, claimed.lang.into()).naive_local();
    let entries = claimed
        .files
        .iter()
        .map(|file| {
            // Every file of a handover of several was stored with its CRC-32 (migration 0034 came first).
            let crc32 = file.crc32.and_then(|crc| u32::try_from(crc).ok()).ok_or_else(|| {
                Fault::Internal(anyhow::anyhow!("file {} of share {} has no CRC-32", file.position, claimed.share_id))
            })?;
            let (name, sha256) = (file.original_name.clone(), file.sha256.clone());
            Ok(Entry { name, size: size_of(file), crc32, modified, sha256 })
        })
        .collect::<Result<Vec<_>, Fault>>()?;
    Ok(Layout::new(&entries))
}

#[derive(Clone)]
pub struct Deliveries {
    lifecycle: LifecycleRepository,
    store: Arc<dyn FileStore>,
    events: ShareEvents,
    mails: Mails,
}

impl Deliveries {
    pub fn new(lifecycle: LifecycleRepository, store: Arc<dyn FileStore>, events: ShareEvents, mails: Mails) -> Self {
        Self { lifecycle, store, events, mails }
    }

    /// The handover of the share `token` names, if `session` claimed it and may still fetch it.
    pub async fn claimed_by(&self, token: &str, session: &Session) -> Result<Option<Claimed>, Refusal> {
        if !is_token_shaped(token) {
            return Ok(None);
        }
        Ok(self.lifecycle.claimed(&sha256_hex(token), session).await?)
    }

    /// Opens `len` bytes of a claimed file from `start`. A file already gone is the same refusal
    /// as a purged share.
    pub async fn open(&self, file: &ClaimedFile, start: u64, len: u64) -> Result<OpenedFile, Refusal> {
        match self.store.open_range(&file.storage_key, start, len).await {
            Ok(opened) => Ok(opened),
            Err(StoreError::NotFound) => Err(Refusal::AlreadyDownloaded),
            Err(StoreError::Damaged) => Err(Refusal::Damaged),
            Err(error) => Err(Fault::of_store(error).into()),
        }
    }

    /// Bytes `start..end` of an archive of the claimed files, each file opened only when its turn
    /// comes (a file gone by then ends the stream with an error).
    pub fn archive(
        &self,
        claimed: &Claimed,
        layout: &Layout,
        start: u64,
        end: u64,
    ) -> BoxStream<'static, io::Result<Bytes>> {
        let keys: Arc<[String]> = claimed.files.iter().map(|file| file.storage_key.clone()).collect();
        archive_bytes(layout, start, end, self.store.clone(), keys)
    }

    /// Records, before they go out, that a response will have sent bytes `start..end` of what it
    /// sends (`rows` its record so far): the first record starts the delivery grace. Answers the
    /// record, the same when it could not be written (logged; the bytes still go out).
    pub async fn sending(&self, delivery: &Delivery, rows: RangeRows, start: u64, end: u64) -> RangeRows {
        let share_id = delivery.claimed.share_id;
        match self.lifecycle.record_sending(share_id, rows.clone(), &delivery.spans(start, end)).await {
            Ok(rows) => rows,
            Err(error) => {
                tracing::warn!(share_id, %error, "could not record download progress");
                rows
            }
        }
    }

    /// Records that a response sent bytes `start..end` of what it sends; the one after which every
    /// file is covered records the event and sends the receipt. Never fails the caller (the
    /// response is already over): a failure is logged.
    pub async fn delivered(&self, delivery: &Delivery, rows: RangeRows, start: u64, end: u64) {
        self.record_sent(delivery.claimed.share_id, rows, &delivery.spans(start, end), &delivery.sizes()).await;
    }

    /// A handover's secret note went to the claiming session: it holds no file, so it is
    /// delivered whole at once (the grace starts, the download completes).
    pub async fn note_shown(&self, claimed: &Claimed) {
        self.record_sent(claimed.share_id, RangeRows::default(), &[], &[]).await;
    }

    async fn record_sent(&self, share_id: i64, rows: RangeRows, spans: &[Span], sizes: &[(i32, u64)]) {
        match self.lifecycle.record_sent(share_id, rows, spans, sizes).await {
            Ok(true) => {
                self.events.record_quietly(share_id, EventKind::Completed).await;
                let size: u64 = sizes.iter().map(|(_, size)| size).sum();
                tracing::info!(share_id, size, "download completed");
                self.mails.spawn_download_receipt(share_id);
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(share_id, %error, "could not record download progress"),
        }
    }
}
