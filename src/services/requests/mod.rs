//! File requests' use cases: the sender asks an uploader for files (a share pointed the other
//! way, mailed like a share's link), the verified uploader leaves, removes and finally sends
//! files, and the sender alone fetches them until the retention ends or they delete them. The
//! uploader's steps before the code are the recipient's ([`super::handover`]), unchanged; every
//! step here checks the session's grant again, as a download does.

mod reply;
mod uploader;

use std::sync::Arc;

pub use reply::{Replied, ReplyOffer};

use super::{
    Fault, Parts,
    handover::code_limits,
    mails::{Delivery, Mails, Notice},
    scanning::ScanWake,
    sharing::Change,
    uploads::Uploads,
};
use crate::{
    accounts::{EmailAddress, User},
    config::Config,
    i18n::Lang,
    lifecycle::{Claimed, LifecycleRepository},
    ratelimit::RateLimiter,
    request::{NewRequest, RequestLimits, RequestListing, RequestRepository, kept_until},
    secret::{random_token, sha256_hex},
    share::{EventKind, Message, ShareAccess, ShareEvents, ShareTtl, sender::Viewer},
    storage::FileStore,
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
