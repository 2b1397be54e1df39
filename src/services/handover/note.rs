//! A secret note handed over instead of files: opened before it is claimed (a note that cannot be
//! opened never uses up the claim), claimed like files, then shown to the claiming session during
//! the delivery grace, which counts as delivered whole.

use super::{Fetch, Handover, Refusal};
use crate::{db::Timestamp, lifecycle::Claimed, secret::SecretString, session::Session, share::Share};

/// What a request for a claimed note finds.
pub enum ReadNote {
    /// The claiming session's note, with the share it came by and until when this session may see
    /// it again (the end of the grace; the GC destroys it then).
    Shown { share: Share, note: SecretString, visible_until: Timestamp },
    /// The share has not been claimed yet (a GET never claims).
    NotClaimed,
}

impl Handover {
    /// Before the claim: the share is a note's, the note is still there, and it opens with this
    /// instance's secret key. A note sealed under a key since lost or replaced is refused here,
    /// with the share still active, so it is not lost for good when the right key comes back.
    pub(super) async fn note_can_be_read(&self, share: &Share) -> Result<(), Refusal> {
        if !share.is_note() {
            return Err(Refusal::NotAvailable("a note of a share of files"));
        }
        let Some(sealed) = self.access.links.repo().sealed_note(share.id).await? else {
            return Err(Refusal::AlreadyDownloaded);
        };
        if self.notes.open(&sealed).is_none() {
            tracing::error!(share_id = share.id, "a secret note does not open with this secret key; not claimed");
            return Err(Refusal::NoteUnreadable);
        }
        Ok(())
    }

    /// The secret note for the session that claimed its share, during the grace: opened, and
    /// recorded as delivered whole (the download completes). Like `fetch` for everyone else.
    pub async fn read_note(&self, token: &str, session: Option<&Session>) -> Result<ReadNote, Refusal> {
        let claimed = match self.fetch(token, session).await? {
            Fetch::Claimed(claimed) => claimed,
            Fetch::NotClaimed => return Ok(ReadNote::NotClaimed),
        };
        let repo = self.access.links.repo();
        let sealed = repo.sealed_note(claimed.share_id).await?;
        let share = repo.find_by_id(claimed.share_id).await?;
        let (Some(sealed), Some(share)) = (sealed, share) else {
            return Err(Refusal::AlreadyDownloaded);
        };
        // Opened before the claim; the key can only have changed since (a restart between).
        let Some(note) = self.notes.open(&sealed) else { return Err(Refusal::NoteUnreadable) };
        self.deliveries.note_shown(&claimed).await;
        Ok(ReadNote::Shown { share, note, visible_until: self.note_visible_until(&claimed) })
    }

    /// Until when the claiming browser may show the note again: the delivery grace from its first
    /// showing (now, when this is the first), after which the GC destroys it.
    pub(super) fn note_visible_until(&self, claimed: &Claimed) -> Timestamp {
        let started = claimed.delivery_started_at.map_or_else(chrono::Utc::now, |at| at.0);
        let grace = chrono::Duration::from_std(self.lifecycle.delivery_grace()).unwrap_or(chrono::Duration::MAX);
        Timestamp(started + grace)
    }
}
