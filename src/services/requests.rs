//! File requests' use cases: the sender asks an uploader for files (a share pointed the other
//! way, mailed like a share's link), the verified uploader leaves, removes and finally sends
//! files, and the sender alone fetches them until the retention ends or they delete them. The
//! uploader's steps before the code are the recipient's ([`super::handover`]), unchanged; every
//! step here checks the session's grant again, as a download does.

mod reply;

use std::sync::Arc;

pub use reply::{Replied, ReplyOffer};

use super::{
    Fault, Parts,
    handover::{Refusal, code_limits},
    mails::{Delivery, Mails, Notice},
    scanning::ScanWake,
    sharing::Change,
    uploads::{UploadError, Uploads},
};
use crate::{
    accounts::{EmailAddress, TimeZone, User},
    config::Config,
    i18n::{
        Lang,
        format::{Reader, human_time},
    },
    lifecycle::{Claimed, LifecycleRepository},
    ratelimit::RateLimiter,
    request::{NewRequest, RequestLimits, RequestListing, RequestRepository, Room, UploadRefused, kept_until},
    secret::{random_token, sha256_hex},
    session::Session,
    share::{EventKind, Message, Share, ShareAccess, ShareError, ShareEvents, ShareStatus, ShareTtl, sender::Viewer},
    storage::{Content, FileStore, StoreError, StoredFile},
    uploads::Owner,
};

/// A request to make: whom to ask, in which words, for how long, for how much.
pub struct FileRequest {
    pub uploader: EmailAddress,
    pub message: Message,
    pub ttl: ShareTtl,
    pub limits: RequestLimits,
    /// The language of the uploader's mail and pages.
    pub lang: Lang,
}

/// A request just made: its link exists only here and in the uploader's mail.
#[derive(Debug)]
pub struct Created {
    pub share_id: i64,
    pub link: String,
    /// The link's path, where this server answers it.
    pub path: String,
    pub notice: Notice,
}

#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("the sender's account is disabled")]
    SenderDisabled,
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for RequestError {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

/// The requests an admin's or the operator's listing shows: everyone's.
const EVERYONE: Viewer = Viewer { user_id: 0, is_admin: true };

#[derive(Clone)]
pub struct Requests {
    config: Arc<Config>,
    repo: RequestRepository,
    access: ShareAccess,
    lifecycle: LifecycleRepository,
    events: ShareEvents,
    store: Arc<dyn FileStore>,
    mails: Mails,
    limiter: RateLimiter,
    /// Inbound files are always scanned once clamd is configured: this wakes the worker.
    scans: ScanWake,
    /// The sender of a share a reply answers.
    users: crate::accounts::Users,
    /// The uploader's resumable uploads, made files of the request once finished.
    uploads: Uploads,
}

impl Requests {
    pub fn new(parts: &Parts, mails: Mails, scans: ScanWake, uploads: Uploads) -> Self {
        Self {
            config: parts.config.clone(),
            repo: RequestRepository::new(parts.db.clone()),
            access: parts.share_access(),
            lifecycle: parts.lifecycle(),
            events: ShareEvents::new(parts.db.clone()),
            store: parts.store.clone(),
            mails,
            limiter: RateLimiter::new(parts.db.clone()),
            scans,
            users: crate::accounts::Users::new(parts.db.clone()),
            uploads,
        }
    }

    /// The limits a request may set: within the instance's upload cap.
    pub fn upload_cap(&self) -> u64 {
        self.config.settings.max_upload_bytes
    }

    /// Makes the request (an empty handover and the uploader's share) and mails the uploader the link.
    pub async fn create(
        &self,
        sender: &User,
        request: FileRequest,
        delivery: Delivery,
    ) -> Result<Created, RequestError> {
        let made = self.issue(sender, request, delivery, None).await?;
        made.ok_or_else(|| {
            Fault::Internal(anyhow::anyhow!("a request that answers no share was refused as a reply")).into()
        })
    }

    /// The same, for a reply to share `reply_to` when there is one: `None` when that share has
    /// its reply already (the unique index decides, so two presses at once make one).
    async fn issue(
        &self,
        sender: &User,
        request: FileRequest,
        delivery: Delivery,
        reply_to: Option<i64>,
    ) -> Result<Option<Created>, RequestError> {
        let token = random_token();
        let token_hash = sha256_hex(token.expose());
        let new = NewRequest {
            sender_id: sender.id,
            uploader: request.uploader.as_str(),
            message: request.message.as_str(),
            lang: request.lang,
            ttl: request.ttl.get(),
            limits: request.limits,
            token_hash: &token_hash,
            reply_to,
        };
        let share_id = match self.repo.insert(&new).await {
            Err(error) if reply_to.is_some() && crate::db::is_unique_violation(&error) => return Ok(None),
            inserted => inserted?.ok_or(RequestError::SenderDisabled)?,
        };
        tracing::info!(account_id = sender.id, share_id, "file request created");
        let path = format!("/s/{}", token.expose());
        let link = self.config.url_for(&path);
        let notice = self.mails.ask_uploader(share_id, sender, &link, request.lang, delivery).await;
        if let Notice::NotQueued(error) = &notice {
            tracing::warn!(share_id, %error, "could not queue the request mail");
        }
        Ok(Some(Created { share_id, link, path, notice }))
    }

    /// The viewer's newest requests (an admin's: everyone's), with what arrived.
    pub async fn list(&self, viewer: Viewer, limit: i64) -> Result<Vec<RequestListing>, Fault> {
        Ok(self.repo.list(viewer.user_id, viewer.is_admin, limit).await?)
    }

    /// A page of the viewer's requests older than `before` (all without it), newest first.
    pub async fn page(&self, viewer: Viewer, before: Option<i64>, limit: i64) -> Result<Vec<RequestListing>, Fault> {
        Ok(self.repo.page(viewer.user_id, viewer.is_admin, before.unwrap_or(i64::MAX), limit).await?)
    }

    /// Every request (for scripts).
    pub async fn list_all(&self) -> Result<Vec<RequestListing>, Fault> {
        self.list(EVERYONE, i64::MAX).await
    }

    /// One request, if the viewer may see it.
    pub async fn find(&self, viewer: Viewer, id: i64) -> Result<Option<RequestListing>, Fault> {
        Ok(self.repo.find(viewer.user_id, viewer.is_admin, id).await?)
    }

    /// When an answered request's files go.
    pub fn kept_until(&self, listing: &RequestListing) -> Option<crate::db::Timestamp> {
        listing.answered_at.map(|at| kept_until(at, self.config.settings.request_retention))
    }

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
    async fn end_uploads(&self, share_id: i64) {
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

    /// The stored files of an answered request the viewer may see, as the archive and the file
    /// responses read them; `None` when there is none to fetch.
    pub async fn answered(&self, viewer: Viewer, id: i64) -> Result<Option<Claimed>, Fault> {
        let Some(listing) = self.find(viewer, id).await? else { return Ok(None) };
        let files = self.repo.answered_files(viewer.user_id, viewer.is_admin, id).await?;
        if files.is_empty() {
            return Ok(None);
        }
        Ok(Some(Claimed {
            share_id: id,
            lang: listing.lang,
            created_at: listing.created_at,
            delivery_started_at: None,
            files,
        }))
    }

    /// "Delete now": an answered request's files go with the next GC pass; an open one ends at
    /// once (and what arrived with it).
    pub async fn delete_now(&self, viewer: Viewer, id: i64) -> Result<Change, Fault> {
        if self.find(viewer, id).await?.is_none() {
            return Ok(Change::NotVisible);
        }
        if self.repo.end_keeping(id, self.config.settings.delivery_grace).await? {
            tracing::info!(account_id = viewer.user_id, share_id = id, "file request: files to be deleted now");
            return Ok(Change::Done(()));
        }
        if self.lifecycle.revoke(id).await? {
            self.end_uploads(id).await;
            self.events.record_quietly(id, EventKind::Revoked).await;
            return Ok(Change::Done(()));
        }
        Ok(Change::NotApplicable)
    }

    /// Accepts codes again after too many wrong ones, with fresh code limits (as for a share).
    pub async fn unlock(&self, viewer: Viewer, id: i64) -> Result<Change, Fault> {
        if self.find(viewer, id).await?.is_none() {
            return Ok(Change::NotVisible);
        }
        if !self.lifecycle.unlock(id).await? {
            return Ok(Change::NotApplicable);
        }
        self.limiter.clear(&code_limits(id)).await?;
        self.events.record_quietly(id, EventKind::Unlocked).await;
        Ok(Change::Done(()))
    }

    /// The request's timeline, if the viewer may see it.
    pub async fn events(&self, viewer: Viewer, id: i64) -> Result<Vec<crate::share::ShareEvent>, Fault> {
        if self.find(viewer, id).await?.is_none() {
            return Ok(Vec::new());
        }
        Ok(self.events.list(id).await?)
    }
}
