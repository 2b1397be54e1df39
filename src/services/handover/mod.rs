//! The recipient's use cases (seeds 000 and 001): a link identifies a share; an address
//! submission makes a code challenge whatever was typed (only a matched one is mailed); a right
//! code earns the session a grant; the download claims the share for that session before the
//! first byte, and only that session then fetches the file ([`super::delivery`]).
//!
//! No answer depends on whether the typed address matched: the same challenge is made, the same
//! limits count, and the mail leaves in the background.

mod claim;
mod code_step;
mod limits;
mod note;

pub use claim::{Asked, Fetch};
pub use code_step::{Blocked, CodeStatus, CodeStep, StillFetchable, minutes_to_wait};
pub use limits::code_limits;
pub use note::ReadNote;

use limits::{PER_CLIENT, PER_SESSION, client_bucket, session_bucket};

use std::{net::IpAddr, sync::Arc};

use super::{Fault, Parts, delivery::Deliveries, mails::Mails};
use crate::{
    accounts::EmailAddress,
    db::Timestamp,
    i18n::Lang,
    lifecycle::LifecycleRepository,
    otp::{CodeOutcome, Codes, Notice, Repeat},
    ratelimit::RateLimiter,
    request::{RequestLimits, RequestRepository},
    session::Session,
    share::{EventKind, FileInfo, Share, ShareAccess, ShareError, ShareEvents, ShareStatus, note::NoteSeal},
    storage::FileStore,
    text::strip_invisible,
};

/// Why the recipient's request is not answered with the next step. The `&'static str`s go to the
/// log only: the pages never say which of several reasons it was.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("share not available: {0}")]
    NotAvailable(&'static str),
    #[error("share already downloaded")]
    AlreadyDownloaded,
    /// A file request's uploader finished: the link takes nothing more, from anyone.
    #[error("request already answered")]
    AlreadyAnswered,
    #[error("share locked after too many wrong codes")]
    Locked,
    #[error("download without a grant")]
    VerifyFirst,
    /// A file of the handover is still being checked by the virus scan (or was refused by it).
    #[error("a file of the share is held by the virus scan")]
    BeingChecked,
    /// A file's stored bytes did not authenticate (found before its first byte was answered).
    #[error("a stored file is damaged")]
    Damaged,
    /// The secret note does not open with this instance's secret key (the key was replaced or
    /// lost): refused before the claim, so the link works again once the right key is back.
    #[error("the secret note does not open with this instance's secret key")]
    NoteUnreadable,
    #[error(transparent)]
    Fault(#[from] Fault),
}

impl From<sqlx::Error> for Refusal {
    fn from(error: sqlx::Error) -> Self {
        Self::Fault(error.into())
    }
}

impl From<ShareError> for Refusal {
    fn from(error: ShareError) -> Self {
        match error {
            ShareError::Malformed => Self::NotAvailable("malformed token"),
            ShareError::NotAvailable => Self::NotAvailable("unknown or expired token"),
            ShareError::NotGranted => Self::VerifyFirst,
            ShareError::Database(e) => e.into(),
            other => Self::Fault(Fault::Internal(other.into())),
        }
    }
}

/// Which step this browser is at.
#[derive(Debug)]
pub enum Step {
    Email {
        /// The address it typed last, if it went back to correct it.
        typed_before: String,
        /// Set when the next address is its last code request until then.
        last_request: Option<Timestamp>,
    },
    Code(CodeStep),
    /// Its code requests are used up for now and it has no working code: no form helps until then.
    Blocked(Blocked),
    /// Verified: the files it may download, in order (at least one).
    Download(Vec<FileInfo>),
    /// Verified for a file request: what the uploader may still leave, and what arrived.
    Upload {
        limits: RequestLimits,
        arrived: Vec<FileInfo>,
    },
}

/// A right code, checked just now: only it earns a grant, once the session has a new id.
#[derive(Debug)]
pub struct Verified(());

/// What kind of request a visit to the link was, as far as it says: a browser navigating to the
/// page (Fetch Metadata `Sec-Fetch-Mode: navigate`, `Sec-Fetch-Dest: document`), which the
/// timeline records as opened, or anything else (a link previewer, a script, a browser too old to
/// send those headers), which it does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Visit {
    Navigation,
    Other,
}

/// What a submitted code came to, short of a locked share (a refusal).
#[derive(Debug)]
pub enum Checked {
    Verified(Verified),
    Wrong { tries_left: i32 },
    Malformed,
    NoLiveCode,
}

#[derive(Clone)]
pub struct Handover {
    access: ShareAccess,
    codes: Codes,
    events: ShareEvents,
    limiter: RateLimiter,
    lifecycle: LifecycleRepository,
    store: Arc<dyn FileStore>,
    mails: Mails,
    deliveries: Deliveries,
    notes: NoteSeal,
    requests: RequestRepository,
}

impl Handover {
    pub fn new(parts: &Parts, mails: Mails, deliveries: Deliveries) -> Self {
        let db = &parts.db;
        Self {
            access: parts.share_access(),
            codes: parts.codes(),
            events: ShareEvents::new(db.clone()),
            limiter: RateLimiter::new(db.clone()),
            lifecycle: parts.lifecycle(),
            store: parts.store.clone(),
            mails,
            deliveries,
            notes: NoteSeal::derive(&parts.secret_key),
            requests: RequestRepository::new(db.clone()),
        }
    }

    /// The live share a link names, while it can still be downloaded.
    pub async fn open(&self, token: &str) -> Result<Share, Refusal> {
        let share = self.access.open(token).await?;
        match share.status {
            ShareStatus::Active if share.held => Err(Refusal::BeingChecked),
            ShareStatus::Active => Ok(share),
            _ if share.is_request() => Err(Refusal::AlreadyAnswered),
            _ => Err(Refusal::AlreadyDownloaded),
        }
    }

    /// A visit to the link: the share and the step this browser is at. Starts no session; only a
    /// navigation is an `opened` event (see [`Visit`]).
    pub async fn visit(
        &self,
        token: &str,
        session: Option<&Session>,
        client: IpAddr,
        visit: Visit,
    ) -> Result<(Share, Step), Refusal> {
        let share = self.open(token).await?;
        if visit == Visit::Navigation {
            self.events.record_collapsed(share.id, EventKind::Opened).await;
        }
        let step = self.step_of(&share, session, client).await?;
        Ok((share, step))
    }

    /// The files a share hands over, while they are still there.
    pub async fn files_of(&self, share: &Share) -> Result<Vec<FileInfo>, Refusal> {
        let files = self.access.links.repo().files_of(share).await?;
        // A note's handover has none; one of files whose rows went has nothing left to give.
        if files.is_empty() && !share.is_note() {
            return Err(Refusal::AlreadyDownloaded);
        }
        Ok(files)
    }

    /// An address typed on the email step: a challenge either way, mailed only on a match. Past
    /// the limits nothing is made, and the step this browser is at says when it may ask again.
    pub async fn request_code(
        &self,
        token: &str,
        session: &Session,
        client: IpAddr,
        typed: &str,
        lang: Lang,
    ) -> Result<Share, Refusal> {
        let share = self.open_unlocked(token).await?;
        if !self.admitted(&share, session, client).await? {
            return Ok(share);
        }
        let matches = EmailAddress::parse(typed).is_ok_and(|typed| typed.as_str() == share.recipient_email);
        self.issue_code(&share, session, client, matches, &shown_back(typed), lang).await?;
        Ok(share)
    }

    /// "Send a new code": while this session's code still works, that same code again (mailed only
    /// if it was mailed the first time), spending no code request; otherwise a fresh challenge,
    /// mailed only if this session gave the right address, to the address it typed. Either way
    /// the code step then says a code was sent; past the limits the step says when to ask again.
    pub async fn resend_code(
        &self,
        token: &str,
        session: &Session,
        client: IpAddr,
        lang: Lang,
    ) -> Result<Share, Refusal> {
        let share = self.open_unlocked(token).await?;
        if let Repeat::Again(code) = self.codes.repeat(share.id, session.id).await? {
            tracing::info!(share_id = share.id, %client, session = session_ref(session), "code sent again");
            if let Some(code) = code {
                // Still under the share's code-mail budget: sending again cannot mail-bomb.
                self.mails.spawn_code_mail(&share, code, lang, code_limits(share.id));
            }
            return Ok(share);
        }
        if !self.admitted(&share, session, client).await? {
            return Ok(share);
        }
        let latest = self.codes.take_latest(share.id, session.id).await?;
        let typed = latest.map(|c| c.typed_address).unwrap_or_default();
        let mailed = self.codes.latest_mailed(share.id, session.id).await?.unwrap_or(false);
        self.issue_code(&share, session, client, mailed, &typed, lang).await?;
        self.codes.leave_notice(share.id, session.id, Notice::Resent).await?;
        Ok(share)
    }

    /// The share every request for a code needs: open and unlocked.
    async fn open_unlocked(&self, token: &str) -> Result<Share, Refusal> {
        let share = self.open(token).await?;
        if share.locked {
            return Err(Refusal::Locked);
        }
        Ok(share)
    }

    /// Counts one code request against the limits, if they have room for it.
    async fn admitted(&self, share: &Share, session: &Session, client: IpAddr) -> Result<bool, Refusal> {
        let limited = match self.limiter.hit(&session_bucket(share, session), &PER_SESSION).await? {
            Ok(()) => self.limiter.hit(&client_bucket(client), &PER_CLIENT).await?,
            Err(retry) => Err(retry),
        };
        if limited.is_err() {
            tracing::info!(share_id = share.id, %client, session = session_ref(session), "code request refused: limit");
        }
        Ok(limited.is_ok())
    }

    /// Makes the session's new challenge and, when it is to be mailed, sends its code in the
    /// background: the answer never waits for (or depends on) the mail.
    async fn issue_code(
        &self,
        share: &Share,
        session: &Session,
        client: IpAddr,
        mailed: bool,
        typed: &str,
        lang: Lang,
    ) -> Result<(), Refusal> {
        let code = self.codes.issue_typed(share.id, session.id, mailed, typed).await?;
        tracing::info!(share_id = share.id, %client, session = session_ref(session), mailed, "code requested");
        if let Some(code) = code {
            self.mails.spawn_code_mail(share, code, lang, code_limits(share.id));
        }
        Ok(())
    }

    /// Checks a submitted code. A right one must then be redeemed with [`Handover::grant`] on the
    /// session's new id.
    pub async fn check_code(
        &self,
        token: &str,
        session: &Session,
        client: IpAddr,
        code: &str,
    ) -> Result<(Share, Checked), Refusal> {
        let share = self.open(token).await?;
        let (share_id, session_ref) = (share.id, session_ref(session));
        let checked = match self.codes.verify(share.id, session.id, code).await? {
            CodeOutcome::Verified => Checked::Verified(Verified(())),
            CodeOutcome::Wrong { tries_left } => {
                self.events.record_quietly(share_id, EventKind::CodeFailed).await;
                tracing::info!(share_id, %client, session = session_ref, tries_left, "wrong code");
                self.codes.leave_notice(share_id, session.id, Notice::Wrong).await?;
                Checked::Wrong { tries_left }
            }
            CodeOutcome::Malformed => {
                self.codes.leave_notice(share_id, session.id, Notice::Malformed).await?;
                Checked::Malformed
            }
            CodeOutcome::NoLiveCode => {
                tracing::info!(share_id, %client, session = session_ref, "code tried with no live challenge");
                Checked::NoLiveCode
            }
            CodeOutcome::Locked { now } => {
                if now {
                    self.events.record_quietly(share_id, EventKind::CodeFailed).await;
                    self.events.record_quietly(share_id, EventKind::Locked).await;
                    self.mails.spawn_lock_notice(share_id);
                    tracing::warn!(share_id, %client, session = session_ref, "share locked after too many wrong codes");
                }
                return Err(Refusal::Locked);
            }
        };
        Ok((share, checked))
    }

    /// Grants the share to the session a right code moved to a new id.
    pub async fn grant(
        &self,
        share: &Share,
        _proof: Verified,
        renewed: &Session,
        client: IpAddr,
    ) -> Result<(), Refusal> {
        self.access.grants.grant(renewed.id, share.id).await?;
        self.events.record_quietly(share.id, EventKind::Verified).await;
        tracing::info!(share_id = share.id, %client, session = session_ref(renewed), "code verified; session regenerated and granted");
        Ok(())
    }
}

/// The typed address as the code step shows it back: without control or invisible characters
/// (a NUL cannot even be stored), trimmed, and no longer than an address can be.
fn shown_back(typed: &str) -> String {
    strip_invisible(typed).trim().chars().take(254).collect()
}

/// A short, stable reference to the session for the log: a prefix of its cookie's hash, which
/// neither is the cookie nor leads to it.
fn session_ref(session: &Session) -> &str {
    &session.id_hash[..12]
}
