//! A secret note handed over instead of files: claimed like files, then shown to the claiming
//! session during the delivery grace, which counts as delivered whole.

use super::{Fetch, Handover, Refusal};
use crate::{secret::SecretString, services::Fault, session::Session, share::Share};

/// What a request for a claimed note finds.
pub enum ReadNote {
    /// The claiming session's note, with the share it came by.
    Shown { share: Share, note: SecretString },
    /// The share has not been claimed yet (a GET never claims).
    NotClaimed,
}

impl Handover {
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
        let (Some((handover_id, sealed)), Some(share)) = (sealed, share) else {
            return Err(Refusal::AlreadyDownloaded);
        };
        let Some(note) = self.notes.open(handover_id, &sealed) else {
            // The instance's secret key changed since the note was sealed: nothing can open it.
            return Err(Fault::Internal(anyhow::anyhow!("a sealed note does not open")).into());
        };
        self.deliveries.note_shown(&claimed).await;
        Ok(ReadNote::Shown { share, note })
    }
}
