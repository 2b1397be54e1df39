//! The one download: the claim of a share for the session its grant names, made only once every
//! file asked for (or the note) opens, and the fetches of the claimer during the grace.

use super::{Handover, Refusal};
use crate::{
    lifecycle::Claimed,
    services::Fault,
    session::Session,
    share::{EventKind, FileInfo, Share, ShareError},
    storage::StoreError,
};

/// What a download asks for: everything the share hands over (its one file, or the archive of
/// its several), or one file of several by its position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asked {
    All,
    File(i32),
    /// The secret note a handover carries instead of files.
    Note,
}

/// What a request for the claimed files finds.
#[derive(Debug)]
pub enum Fetch {
    /// This session claimed the share and may fetch its files now.
    Claimed(Claimed),
    /// The share has not been claimed yet: its landing page has the download step (a GET never
    /// claims).
    NotClaimed,
}

impl Handover {
    /// Resolves the link again, checks this session's grant, opens the files asked for and claims
    /// the share for this session, whichever of its files are asked for: the claim is the one
    /// download of the whole handover. Nothing in the request chooses the share: the link names it,
    /// and a position only picks one of its files. The claimer asking again during the grace is no
    /// second claim: it may fetch any of the files again.
    pub async fn download(&self, token: &str, session: Option<&Session>, asked: Asked) -> Result<(), Refusal> {
        if let Some(session) = session
            && self.deliveries.claimed_by(token, session).await?.is_some()
        {
            return Ok(());
        }
        let share = match self.access.authorize_download(token, session).await {
            Ok(share) => share,
            Err(ShareError::NotGranted) => {
                if let Ok(share) = self.access.open(token).await {
                    self.events.record_collapsed(share.id, EventKind::Refused).await;
                }
                return Err(Refusal::VerifyFirst);
            }
            Err(ShareError::Malformed | ShareError::NotAvailable) => {
                return Err(Refusal::NotAvailable("download of an unavailable share"));
            }
            Err(error) => return Err(error.into()),
        };
        // A request's files are its sender's alone: its link never hands any out.
        if share.is_request() {
            return Err(Refusal::NotAvailable("a download through a request's link"));
        }
        // Never a byte the scan has not released, whatever the page showed before.
        if share.held {
            return Err(Refusal::BeingChecked);
        }
        if asked == Asked::Note {
            self.note_can_be_read(&share).await?;
        } else {
            self.files_can_be_read(&share, asked).await?;
        }
        // The claim commits on its own before the first byte; losing it means someone else
        // already downloaded the file.
        if !self.lifecycle.mark_consumed(share.id, session.map(|s| s.id)).await? {
            self.events.record_collapsed(share.id, EventKind::Refused).await;
            return Err(Refusal::AlreadyDownloaded);
        }
        self.events.record_quietly(share.id, EventKind::Downloaded).await;
        Ok(())
    }

    /// The files `asked` for, each opened before the claim, so a file that cannot be read never
    /// uses up the one download.
    async fn files_can_be_read(&self, share: &Share, asked: Asked) -> Result<(), Refusal> {
        let files = self.files_of(share).await?;
        let wanted: Vec<&FileInfo> = match asked {
            Asked::All => files.iter().collect(),
            Asked::File(position) => files.iter().filter(|file| file.position == position).collect(),
            Asked::Note => Vec::new(),
        };
        if wanted.is_empty() {
            return Err(Refusal::NotAvailable("download of a file the share does not have"));
        }
        for file in wanted {
            match self.store.open(&file.storage_key).await {
                Ok(_) => {}
                Err(StoreError::NotFound) => return Err(Refusal::AlreadyDownloaded),
                Err(error) => return Err(Fault::of_store(error).into()),
            }
        }
        Ok(())
    }

    /// A request for the claimed files: the files for the session that claimed it (during the
    /// grace), the landing page for a share not claimed yet, and the "already downloaded"
    /// refusal for everyone else (no cookie, another session, the claimer after the grace, a
    /// purged share). Records nothing: link previewers and mail scanners fetch what they like.
    pub async fn fetch(&self, token: &str, session: Option<&Session>) -> Result<Fetch, Refusal> {
        if let Some(session) = session
            && let Some(claimed) = self.deliveries.claimed_by(token, session).await?
        {
            return Ok(Fetch::Claimed(claimed));
        }
        self.open(token).await?;
        Ok(Fetch::NotClaimed)
    }
}
