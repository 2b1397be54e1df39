//! The sender's use cases: create a share and notify its recipient, see one's shares and a
//! share's timeline, revoke, send a fresh link, unlock. A share the viewer may not see is
//! answered exactly like one that does not exist.

use std::{sync::Arc, time::Duration};

use super::{
    Fault, Parts,
    handover::code_limits,
    mails::{Delivery, Mails, Notice},
    scanning::ScanWake,
    stopping::Stopping,
    uploads::Uploads,
};
use crate::{
    accounts::{EmailAddress, User},
    config::Config,
    i18n::Lang,
    lifecycle::LifecycleRepository,
    mail::outbox::MailDelivery,
    ratelimit::{Limit, RateLimiter},
    share::{
        EventKind, Message, ShareEvent, ShareEvents, ShareLinks, ShareListing, ShareRepository, ShareTtl,
        create::{CreateError, FileContent, FileRequest, HandoverRequest, create_handover_checked},
        names::clean_file_name,
        note::{Note, NoteSeal, NoteToSeal},
        sender::{HandoverFile, SenderShares, SenderStatus, ShareSummary, Viewer},
    },
    storage::{Content, FileStore, StoreError},
    uploads::Owner,
};

/// Fresh links a share may be sent in a day: each is a mail to the recipient, so a few a day are
/// plenty and more would be a nuisance.
const LINK_RENEWALS: [Limit; 1] = [Limit::new(5, Duration::from_secs(24 * 3600))];

/// Where a new share's file comes from.
pub enum Source<'a> {
    /// Arriving now, in the request.
    Stream(Content<'a>),
    /// A finished resumable upload of the sender's, by its public id.
    Finished(&'a str),
}

/// A finished upload as the new-share form shows it.
#[derive(Clone, Debug)]
pub struct FinishedUpload {
    pub id: String,
    pub file_name: String,
    pub content_type: String,
    pub size_bytes: u64,
}

/// A file of a new handover.
pub struct UploadFile<'a> {
    pub file_name: &'a str,
    pub content_type: &'a str,
    pub source: Source<'a>,
}

/// A new handover: its files, in order, or a secret note, for every recipient.
pub struct Handover<'a> {
    pub recipients: Vec<EmailAddress>,
    pub files: Vec<UploadFile<'a>>,
    pub note: Option<Note>,
    pub ttl: ShareTtl,
    pub message: Message,
    /// The language of the recipients' mails and pages.
    pub lang: Lang,
    pub notify_on_download: bool,
    /// The notification mail names the files and their sizes.
    pub name_file_in_mail: bool,
    /// The recipients may answer with files from their download page.
    pub allow_reply: bool,
}

/// A share just made: its link exists only here and in the recipient's mail.
#[derive(Debug)]
pub struct Created {
    pub share_id: i64,
    pub recipient: EmailAddress,
    pub link: String,
    pub notice: Notice,
}

/// One share as its sender follows it.
pub struct Timeline {
    pub share: ShareSummary,
    /// Its handover: every share of it (this one included) and its files.
    pub handover: HandoverView,
    pub events: Vec<ShareEvent>,
    pub mails: Vec<MailDelivery>,
    /// How long until the current link may have another code mailed (zero: now).
    pub code_mails_wait: Duration,
    /// While the share is locked: how many browsers typed the wrong codes (zero otherwise).
    pub wrong_code_browsers: i64,
}

/// A handover as its sender sees it: a share per recipient, and the files, in order.
pub struct HandoverView {
    pub shares: Vec<ShareSummary>,
    pub files: Vec<HandoverFile>,
}

/// Who acts on a share: a signed-in sender (their own shares; an admin, all) or the operator at
/// the command line (any share).
#[derive(Clone, Copy, Debug)]
pub enum Actor {
    Sender(Viewer),
    Operator,
}

/// What a revoke, unlock or fresh link came to.
#[derive(Debug, PartialEq, Eq)]
pub enum Change<T = ()> {
    Done(T),
    /// Nothing to do: the share is no longer in the state the change needs.
    NotApplicable,
    /// The share does not exist, or the viewer may not see it.
    NotVisible,
    /// Too many of these lately; try again after this long.
    TooSoon(Duration),
}

#[derive(Clone)]
pub struct Sharing {
    config: Arc<Config>,
    links: ShareLinks,
    shares: SenderShares,
    lifecycle: LifecycleRepository,
    events: ShareEvents,
    limiter: RateLimiter,
    store: Arc<dyn FileStore>,
    mails: Mails,
    uploads: Uploads,
    notes: NoteSeal,
    /// Cuts a file still arriving once the server stops (see [`super::stopping`]).
    stopping: Stopping,
    /// Tells the scan worker a new handover's files wait for it.
    scans: ScanWake,
}

/// What a sender may see.
pub fn viewer(user: &User) -> Viewer {
    Viewer { user_id: user.id, is_admin: user.is_admin() }
}

impl Sharing {
    pub fn new(parts: &Parts, mails: Mails, uploads: Uploads, scans: ScanWake) -> Self {
        Self {
            config: parts.config.clone(),
            links: ShareLinks::new(ShareRepository::new(parts.db.clone())),
            shares: SenderShares::new(parts.db.clone()),
            lifecycle: parts.lifecycle(),
            events: ShareEvents::new(parts.db.clone()),
            limiter: RateLimiter::new(parts.db.clone()),
            store: parts.store.clone(),
            mails,
            uploads,
            notes: NoteSeal::derive(&parts.secret_key),
            stopping: Stopping::default(),
            scans,
        }
    }

    /// The server's stop as uploads see it; `serve` begins it on SIGTERM.
    pub fn stopping(&self) -> &Stopping {
        &self.stopping
    }

    /// The sender's finished upload with this id, for the form to name; `None` when it is not
    /// theirs, not finished or gone.
    pub async fn finished_upload(&self, sender: &User, id: &str) -> Result<Option<FinishedUpload>, Fault> {
        let row = match self.uploads.finished(Owner::Sender(sender.id), id).await {
            Ok(row) => row,
            Err(super::uploads::UploadError::Fault(fault)) => return Err(fault),
            Err(error) => return Err(Fault::Internal(error.into())),
        };
        Ok(row.map(|row| FinishedUpload {
            id: id.to_owned(),
            size_bytes: row.length(),
            file_name: row.file_name,
            content_type: row.content_type,
        }))
    }

    /// Keeps a file that arrived in the form as a finished upload of the sender's, at most
    /// `max_bytes`: the form keeps each of its files so, then makes the handover of them, or comes
    /// back with a question and keeps them. A refusal keeps nothing of this file.
    pub async fn keep_file(
        &self,
        sender: &User,
        content: crate::storage::Content<'_>,
        file_name: &str,
        content_type: &str,
        max_bytes: u64,
    ) -> Result<Result<FinishedUpload, CreateError>, Fault> {
        use super::uploads::UploadError;
        let file_name = clean_file_name(file_name);
        let content = self.stopping.cut_off(content);
        let refused = match self.uploads.keep(sender.id, content, &file_name, content_type, max_bytes).await {
            Ok(id) => {
                return Ok(self.finished_upload(sender, &id).await?.ok_or(CreateError::UploadUnavailable));
            }
            Err(UploadError::Fault(fault)) => return Err(fault),
            Err(UploadError::TooLarge) => CreateError::TooLarge { limit: self.config.settings.max_upload_bytes },
            Err(UploadError::SenderDisabled) => CreateError::SenderDisabled,
            Err(UploadError::Store(StoreError::Content(_))) if self.stopping.has_cut() => {
                tracing::info!(account_id = sender.id, "upload cut: the server is stopping; nothing was kept");
                CreateError::ServerStopping
            }
            Err(UploadError::Store(error)) => CreateError::Store(error),
            Err(error) => {
                tracing::info!(account_id = sender.id, %error, "a form's file could not be kept");
                CreateError::Refused("the file could not be kept")
            }
        };
        Ok(Err(refused))
    }

    /// Removes the sender's finished uploads `ids` (a refused form's files), as far as they exist.
    pub async fn discard_uploads(&self, sender: &User, ids: &[String]) {
        for id in ids {
            if let Err(error) = self.uploads.terminate(Owner::Sender(sender.id), id).await {
                tracing::warn!(account_id = sender.id, %error, "could not remove a refused form's file");
            }
        }
    }

    /// The longest a share may stay downloadable, and the largest file it may hold.
    pub fn limits(&self) -> (Duration, u64) {
        (self.config.settings.share_ttl_max, self.config.settings.max_upload_bytes)
    }

    /// The validity a new share's form starts with (`WATASU_SHARE_TTL`).
    pub fn default_ttl(&self) -> Duration {
        self.config.settings.share_ttl
    }

    /// Stores the files, creates the handover with a share per recipient and notifies each
    /// recipient. `before_issue` is a last check between storing the files and creating the rows;
    /// a refusal removes the files again.
    pub async fn create(
        &self,
        sender: &User,
        handover: Handover<'_>,
        before_issue: impl AsyncFnOnce() -> Result<(), CreateError>,
        delivery: Delivery,
    ) -> Result<Vec<Created>, CreateError> {
        let lang = handover.lang;
        let mut files = Vec::with_capacity(handover.files.len());
        for file in handover.files {
            let content = match file.source {
                Source::Stream(content) => FileContent::Stream(self.stopping.cut_off(content)),
                Source::Finished(id) => self.uploaded(sender, id).await?,
            };
            files.push(FileRequest {
                name: file.file_name.to_owned(),
                content_type: file.content_type.to_owned(),
                content,
            });
        }
        let request = HandoverRequest {
            sender_id: sender.id,
            recipients: handover.recipients,
            files,
            note: handover.note.map(|note| NoteToSeal { seal: self.notes.clone(), note }),
            max_bytes: self.config.settings.max_upload_bytes,
            ttl: handover.ttl.get(),
            message: handover.message,
            lang,
            notify_on_download: handover.notify_on_download,
            name_file_in_mail: handover.name_file_in_mail,
            scan: self.config.settings.scan.scan_outbound,
            allow_reply: handover.allow_reply,
        };
        let issued = match create_handover_checked(&self.links, self.store.as_ref(), request, before_issue).await {
            // The store removed what had arrived; the sender is to send it again.
            Err(CreateError::Store(StoreError::Content(_))) if self.stopping.has_cut() => {
                tracing::info!(account_id = sender.id, "upload cut: the server is stopping; nothing was kept");
                return Err(CreateError::ServerStopping);
            }
            issued => issued?,
        };
        // Held files wait for the scan; their mails are queued now and leave once it found them
        // clean (see `mail::outbox`).
        self.scans.wake();
        let mut created = Vec::with_capacity(issued.len());
        for share in issued {
            tracing::info!(account_id = sender.id, share_id = share.share_id, "share created");
            let link = self.config.url_for(&format!("/s/{}", share.token.expose()));
            let notice = self.notify(sender, share.share_id, &link, lang, delivery).await;
            created.push(Created { share_id: share.share_id, recipient: share.recipient, link, notice });
        }
        Ok(created)
    }

    /// The sender's finished upload `id` as a handover's file.
    async fn uploaded(&self, sender: &User, id: &str) -> Result<FileContent<'static>, CreateError> {
        let row =
            self.uploads.finished(Owner::Sender(sender.id), id).await.map_err(|_| CreateError::UploadUnavailable)?;
        let row = row.ok_or(CreateError::UploadUnavailable)?;
        let stored = row.stored().ok_or(CreateError::UploadUnavailable)?;
        Ok(FileContent::Uploaded { upload_id: id.to_owned(), stored })
    }

    async fn notify(&self, sender: &User, share_id: i64, link: &str, lang: Lang, delivery: Delivery) -> Notice {
        let notice = self.mails.notify_recipient(share_id, sender, link, lang, delivery).await;
        if let Notice::NotQueued(error) = &notice {
            tracing::warn!(share_id, %error, "could not queue the notification mail");
        }
        notice
    }

    /// A page of the viewer's shares, newest first, older than `before`, of one outcome if given.
    pub async fn list(
        &self,
        viewer: Viewer,
        outcome: Option<SenderStatus>,
        before: Option<i64>,
        limit: i64,
    ) -> Result<Vec<ShareSummary>, Fault> {
        Ok(self.shares.list(viewer, outcome, before, limit).await?)
    }

    /// Every share, newest first (for scripts).
    pub async fn list_all(&self) -> Result<Vec<ShareListing>, Fault> {
        Ok(self.links.repo().list_all().await?)
    }

    /// The share behind a link, whatever its state (the operator names shares by URL).
    pub async fn id_for_link(&self, token: &str) -> Result<Option<i64>, Fault> {
        if !crate::session::is_token_shaped(token) {
            return Ok(None);
        }
        Ok(self.links.repo().id_by_token_hash(&crate::secret::sha256_hex(token)).await?)
    }

    /// The share alone, if the viewer may see it.
    pub async fn summary(&self, viewer: Viewer, id: i64) -> Result<Option<ShareSummary>, Fault> {
        Ok(self.shares.find(viewer, id).await?)
    }

    /// The handover share `id` belongs to, if the viewer may see it.
    pub async fn handover(&self, viewer: Viewer, id: i64) -> Result<Option<HandoverView>, Fault> {
        let shares = self.shares.handover(viewer, id).await?;
        if shares.is_empty() {
            return Ok(None);
        }
        Ok(Some(HandoverView { shares, files: self.shares.files(viewer, id).await? }))
    }

    /// The share, its handover, its events and its mails, if the viewer may see it.
    pub async fn timeline(&self, viewer: Viewer, id: i64) -> Result<Option<Timeline>, Fault> {
        let Some(handover) = self.handover(viewer, id).await? else { return Ok(None) };
        // The handover's shares include this one: no second query for it.
        let Some(share) = handover.shares.iter().find(|share| share.id == id).cloned() else { return Ok(None) };
        let events = self.events.list(id).await?;
        let mails = self.mails.outbox().delivery_state(id).await?;
        let code_mails_wait = self.mails.code_mails_wait(&code_limits(id)).await?;
        let wrong_code_browsers = match share.status {
            crate::share::sender::SenderStatus::Locked => self.events.wrong_code_browsers(id).await?,
            _ => 0,
        };
        Ok(Some(Timeline { share, handover, events, mails, code_mails_wait, wrong_code_browsers }))
    }

    async fn visible(&self, actor: Actor, id: i64) -> Result<bool, Fault> {
        match actor {
            Actor::Sender(viewer) => Ok(self.shares.find(viewer, id).await?.is_some()),
            Actor::Operator => Ok(true),
        }
    }

    /// Ends an active share at once; the GC then deletes its file.
    pub async fn revoke(&self, actor: Actor, id: i64) -> Result<Change, Fault> {
        if !self.visible(actor, id).await? {
            return Ok(Change::NotVisible);
        }
        if !self.end(id).await? {
            return Ok(Change::NotApplicable);
        }
        tracing::info!(?actor, share_id = id, "share revoked");
        Ok(Change::Done(()))
    }

    /// Ends share `id` if it is still active, and says so on its timeline.
    async fn end(&self, id: i64) -> Result<bool, Fault> {
        self.end_as(id, EventKind::Revoked).await
    }

    /// Ends share `id` as a revoke does, its timeline saying why with `kind`.
    async fn end_as(&self, id: i64, kind: EventKind) -> Result<bool, Fault> {
        let ended = self.lifecycle.revoke(id).await?;
        if ended {
            self.events.record_quietly(id, kind).await;
        }
        Ok(ended)
    }

    /// Ends every share of a handover one of whose files the virus scan refused; the file list
    /// of its timeline says which file and why.
    pub async fn end_refused_by_scan(&self, handover_id: i64) -> Result<usize, Fault> {
        let mut ended = 0;
        for id in self.links.repo().share_ids_of_handover(handover_id).await? {
            if self.end_as(id, EventKind::ScanRefused).await? {
                ended += 1;
            }
        }
        tracing::info!(handover_id, ended, "handover refused by the virus scan");
        Ok(ended)
    }

    /// Ends every active share of the handover share `id` belongs to (the viewer's own; an
    /// admin's, any); answers how many it ended. Each is ended as `revoke` ends one, so a share
    /// downloaded meanwhile keeps its outcome.
    pub async fn revoke_handover(&self, viewer: Viewer, id: i64) -> Result<Change<usize>, Fault> {
        let shares = self.shares.handover(viewer, id).await?;
        if shares.is_empty() {
            return Ok(Change::NotVisible);
        }
        let mut ended = 0;
        for share in shares.iter().filter(|share| share.status.can_be_ended()) {
            if self.end(share.id).await? {
                ended += 1;
            }
        }
        tracing::info!(account_id = viewer.user_id, share_id = id, ended, "handover ended");
        Ok(if ended == 0 { Change::NotApplicable } else { Change::Done(ended) })
    }

    /// A new link for the recipient (the old one stops working), mailed in the language the share's
    /// mails were chosen in; the link is answered so the sender sees it once.
    pub async fn renew_link(&self, sender: &User, id: i64) -> Result<Change<String>, Fault> {
        if !self.visible(Actor::Sender(viewer(sender)), id).await? {
            return Ok(Change::NotVisible);
        }
        if let Err(retry) = self.limiter.hit(&format!("share:{id}:link-renewals"), &LINK_RENEWALS).await? {
            return Ok(Change::TooSoon(retry.0));
        }
        let Some(token) = self.links.renew(&self.lifecycle, id).await? else { return Ok(Change::NotApplicable) };
        // The new link starts with the limits of a new share: nobody who held the old one keeps a say.
        self.limiter.clear(&code_limits(id)).await?;
        let link = self.config.url_for(&format!("/s/{}", token.expose()));
        // The recipient's language, not the sender's (that of the mails about their account).
        let lang = self.links.repo().find_by_id(id).await?.map_or(sender.lang, |share| share.lang);
        self.notify(sender, id, &link, lang, Delivery::Background).await;
        self.events.record_quietly(id, EventKind::LinkRenewed).await;
        tracing::info!(account_id = sender.id, share_id = id, "fresh link sent");
        Ok(Change::Done(link))
    }

    /// Accepts codes again after too many wrong ones, with fresh code limits.
    pub async fn unlock(&self, viewer: Viewer, id: i64) -> Result<Change, Fault> {
        if !self.visible(Actor::Sender(viewer), id).await? {
            return Ok(Change::NotVisible);
        }
        if !self.lifecycle.unlock(id).await? {
            return Ok(Change::NotApplicable);
        }
        self.limiter.clear(&code_limits(id)).await?;
        self.events.record_quietly(id, EventKind::Unlocked).await;
        Ok(Change::Done(()))
    }
}
