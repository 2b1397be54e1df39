//! The uploader's steps of a file request, each checking the session's grant again: leave a file
//! (sent in the form, or a finished resumable upload), remove one, and send them, which answers
//! the request and tells its sender.

use super::Requests;
use crate::{
    accounts::TimeZone,
    i18n::format::{Reader, human_time},
    request::{Room, UploadRefused},
    services::{Fault, handover::Refusal, uploads::UploadError},
    session::Session,
    share::{EventKind, Message, Share, ShareError, ShareStatus},
    storage::{Content, StoreError, StoredFile},
    uploads::Owner,
};

impl Requests {
    /// The request a link names, for the session its grant is on, while it takes files. Nothing in
    /// the request chooses the share: the link names it, the grant must be this session's.
    pub async fn granted(&self, token: &str, session: Option<&Session>) -> Result<Share, Refusal> {
        let share = match self.access.authorize_download(token, session).await {
            Ok(share) => share,
            Err(ShareError::NotGranted) => return Err(Refusal::VerifyFirst),
            Err(ShareError::Malformed | ShareError::NotAvailable) => {
                return Err(Refusal::NotAvailable("upload to an unavailable link"));
            }
            Err(error) => return Err(error.into()),
        };
        if !share.is_request() {
            return Err(Refusal::NotAvailable("upload to a share of files"));
        }
        if share.status != ShareStatus::Active {
            return Err(Refusal::AlreadyAnswered);
        }
        Ok(share)
    }

    /// Stores one file of the uploader's, within what the request's limits leave; a refusal keeps
    /// nothing of it.
    pub async fn upload(
        &self,
        token: &str,
        session: Option<&Session>,
        content: Content<'_>,
        name: &str,
        content_type: &str,
    ) -> Result<Result<(), UploadRefused>, Refusal> {
        let share = self.granted(token, session).await?;
        let Some((limits, files, pending)) = self.repo.open_files(share.id).await? else {
            return Err(Refusal::AlreadyAnswered);
        };
        // Unfinished uploads hold their room already (the insert checks all of it again).
        let room = Room::of(limits, &files, pending);
        if let Err(refused) = room.admits(0) {
            return Ok(Err(refused));
        }
        let (bound, over) = room.bound();
        let stored = match self.store.put(content, u64::try_from(bound).unwrap_or(0)).await {
            Ok(stored) => stored,
            Err(StoreError::TooLarge { .. }) => return Ok(Err(over)),
            Err(error) => return Err(Fault::of_store(error).into()),
        };
        let added = self.add(&share, &stored, name, content_type, None).await;
        if !matches!(added, Ok(Ok(()))) {
            let _ = self.store.delete(&stored.key).await;
        }
        added
    }

    /// Makes the uploader's finished resumable upload `upload_id` a file of the request, as a
    /// form's file becomes one (limits checked again); the upload is consumed with it, so it
    /// becomes a file once. A refused one is ended, its bytes left to the GC: it no longer holds
    /// room the uploader needs for another.
    pub async fn attach(
        &self,
        token: &str,
        session: Option<&Session>,
        upload_id: &str,
    ) -> Result<Result<(), UploadRefused>, Refusal> {
        let share = self.granted(token, session).await?;
        let owner = Owner::Request(share.id);
        let row = match self.uploads.finished(owner, upload_id).await {
            Ok(Some(row)) => row,
            Ok(None) => return Ok(Err(UploadRefused::UploadUnfinished)),
            Err(UploadError::Fault(fault)) => return Err(fault.into()),
            Err(error) => return Err(Fault::Internal(error.into()).into()),
        };
        let Some(stored) = row.stored() else { return Ok(Err(UploadRefused::UploadUnfinished)) };
        let added = self.add(&share, &stored, &row.file_name, &row.content_type, Some(row.id)).await?;
        if added.is_err()
            && let Err(error) = self.uploads.terminate(owner, upload_id).await
        {
            tracing::info!(share_id = share.id, %error, "a refused upload could not be ended; it expires");
        }
        Ok(added)
    }

    /// Records a stored file (or the finished upload `upload` holding it) as the request's; the
    /// caller removes the bytes of a refused form's file.
    async fn add(
        &self,
        share: &Share,
        stored: &StoredFile,
        name: &str,
        content_type: &str,
        upload: Option<i64>,
    ) -> Result<Result<(), UploadRefused>, Refusal> {
        let name = crate::share::names::clean_file_name(name);
        let scan = self.config.settings.scan.clamd.is_some();
        let added = self.repo.add_file(share.id, stored, &name, content_type, scan, upload).await?;
        if added.is_ok() {
            if scan {
                self.scans.wake();
            }
            self.events.record_quietly(share.id, EventKind::FileUploaded).await;
            tracing::info!(share_id = share.id, size = stored.size_bytes, "file request: a file arrived");
        }
        Ok(added)
    }

    /// Ends the request's unfinished uploads (it was answered or ended): the GC removes their bytes.
    pub(super) async fn end_uploads(&self, share_id: i64) {
        match self.uploads.repo().expire_all_of_request(share_id).await {
            Ok(0) => {}
            Ok(ended) => tracing::info!(share_id, ended, "file request: its unfinished uploads ended"),
            Err(error) => tracing::warn!(share_id, %error, "could not end a request's uploads; they expire"),
        }
    }

    /// Takes a file back before finishing: its row first, then its bytes (should deleting them
    /// fail, no row needs them and the leftover sweep removes them).
    pub async fn remove(&self, token: &str, session: Option<&Session>, position: i32) -> Result<(), Refusal> {
        let share = self.granted(token, session).await?;
        let Some(key) = self.repo.remove_file(share.id, position).await? else {
            return Err(Refusal::NotAvailable("removal of a file the request does not have"));
        };
        if let Err(error) = self.store.delete(&key).await {
            tracing::warn!(share_id = share.id, %error, "could not delete a removed file; the leftover sweep will");
        }
        Ok(())
    }

    /// The uploader is done: the request is answered (once), the sender is told, and the link
    /// answers "already answered" from now on.
    pub async fn finish(
        &self,
        token: &str,
        session: Option<&Session>,
        note: &Message,
    ) -> Result<Result<(), UploadRefused>, Refusal> {
        let share = self.granted(token, session).await?;
        let settings = &self.config.settings;
        let keep = settings.request_retention.saturating_sub(settings.delivery_grace);
        let answered = self.repo.answer(share.id, note.as_str(), keep).await?;
        if answered.is_ok() {
            self.end_uploads(share.id).await;
            self.events.record_quietly(share.id, EventKind::Answered).await;
            tracing::info!(share_id = share.id, "file request answered");
            // Queued before the answer returns: a restart right after the finish loses no news.
            if let Err(error) = self.send_arrival_mail(share.id).await {
                tracing::warn!(share_id = share.id, error = %format!("{error:#}"), "could not queue the arrival mail");
            }
        }
        Ok(answered)
    }

    async fn send_arrival_mail(&self, share_id: i64) -> anyhow::Result<()> {
        let Some(sender) = self.repo.sender_reader(share_id).await? else { return Ok(()) };
        let Some(listing) = self.repo.find(0, true, share_id).await? else { return Ok(()) };
        let reader = Reader { lang: sender.lang, zone: sender.time_zone.as_deref().and_then(TimeZone::parse) };
        let kept = self.kept_until(&listing).map(|at| human_time(at, reader)).unwrap_or_default();
        // Sent at the finish, when a file may still be being checked: its line says so (and a
        // refused one why), so the mail never offers a file the sender cannot have yet.
        let t = sender.lang.text();
        let files: Vec<(String, String)> = listing
            .files
            .iter()
            .map(|f| {
                let name = match f.scan_state.filter(|_| !f.is_released()) {
                    Some(state) => {
                        format!(
                            "{} ({})",
                            f.name,
                            t.request.scan_mark(&t.dashboard.scan, state, f.scan_finding.as_deref())
                        )
                    }
                    None => f.name.clone(),
                };
                (name.replace('|', ""), f.sha256.clone())
            })
            .collect();
        let link = self.config.url_for(&format!("/requests/{share_id}"));
        let arrived = crate::mail::request_mails::Arrived {
            uploader: &listing.uploader_email,
            files: &files,
            note: &listing.uploader_note,
            kept_until: &kept,
            link: &link,
        };
        self.mails.tell_of_arrival(share_id, &sender.email, sender.lang, &arrived).await
    }
}
