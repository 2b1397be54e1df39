//! Delivering a claimed file (the GET the claim's 303 points to): only to the browser session that
//! claimed it, only during the delivery grace, in byte ranges, so a dropped connection can be
//! resumed without a second claim. When each response ends, how far it got is recorded; the
//! delivered prefix grows only without gaps, and the response that completes it records
//! "download completed" and sends the sender's receipt.

use std::sync::Arc;

use super::{Fault, handover::Refusal, mails::Mails};
use crate::{
    lifecycle::{ClaimedFile, FileStore, LifecycleRepository, OpenedFile, StoreError},
    secret::sha256_hex,
    session::{Session, is_token_shaped},
    share::{EventKind, ShareEvents},
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
        Ok(self.lifecycle.claimed_file(&sha256_hex(token), session.id).await?)
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

    /// Records that a response sent bytes `start..end` of the file; the one that completes the
    /// delivered prefix records the event and sends the receipt. Never fails the caller (the
    /// response is already over): a failure is logged.
    pub async fn delivered(&self, file: &ClaimedFile, start: u64, end: u64) {
        let size = u64::try_from(file.size_bytes).unwrap_or(0);
        match self.lifecycle.record_delivery(file.share_id, start, end, size).await {
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
