//! Delivering a claimed file (the GET the claim's 303 points to): only to the browser session that
//! claimed it, only during the delivery grace, in byte ranges, so a dropped connection can be
//! resumed without a second claim, on this instance or another. Each response records its range
//! of bytes before they go out and its true end when it is over ([`crate::lifecycle`]'s
//! `delivered`); the response after which the ranges cover the file records "download completed"
//! and sends the sender's receipt.

use std::sync::Arc;

use super::{Fault, handover::Refusal, mails::Mails};
use crate::{
    lifecycle::{ClaimedFile, LifecycleRepository},
    secret::sha256_hex,
    session::{Session, is_token_shaped},
    share::{EventKind, ShareEvents},
    storage::{FileStore, OpenedFile, StoreError},
};

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

    /// The file of the share `token` names, if `session` claimed it and may still fetch it.
    pub async fn claimed_by(&self, token: &str, session: &Session) -> Result<Option<ClaimedFile>, Refusal> {
        if !is_token_shaped(token) {
            return Ok(None);
        }
        Ok(self.lifecycle.claimed_file(&sha256_hex(token), session).await?)
    }

    /// Opens `len` bytes of the claimed file from `start`. A file already gone is the same
    /// refusal as a purged share.
    pub async fn open(&self, file: &ClaimedFile, start: u64, len: u64) -> Result<OpenedFile, Refusal> {
        match self.store.open_range(&file.storage_key, start, len).await {
            Ok(opened) => Ok(opened),
            Err(StoreError::NotFound) => Err(Refusal::AlreadyDownloaded),
            Err(error) => Err(Fault::of_store(error).into()),
        }
    }

    /// Records, before they go out, that a response will have sent bytes `start..end` of the file
    /// (`range` its record so far): the first record starts the delivery grace. Answers the
    /// record, or `None` when it could not be written (logged; the bytes still go out).
    pub async fn sending(&self, file: &ClaimedFile, range: Option<i64>, start: u64, end: u64) -> Option<i64> {
        match self.lifecycle.record_sending(file.share_id, range, start, end).await {
            Ok(id) => Some(id),
            Err(error) => {
                tracing::warn!(share_id = file.share_id, %error, "could not record download progress");
                range
            }
        }
    }

    /// Records that a response sent bytes `start..end` of the file; the one that completes the
    /// covered file records the event and sends the receipt. Never fails the caller (the
    /// response is already over): a failure is logged.
    pub async fn delivered(&self, file: &ClaimedFile, range: Option<i64>, start: u64, end: u64) {
        let size = u64::try_from(file.size_bytes).unwrap_or(0);
        match self.lifecycle.record_sent(file.share_id, range, start, end, size).await {
            Ok(true) => {
                self.events.record_quietly(file.share_id, EventKind::Completed).await;
                tracing::info!(share_id = file.share_id, size, "download completed");
                self.mails.spawn_download_receipt(file.share_id);
            }
            Ok(false) => {}
            Err(error) => tracing::warn!(share_id = file.share_id, %error, "could not record download progress"),
        }
    }
}
