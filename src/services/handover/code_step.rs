//! Where a browser is in the recipient's flow, read from its session alone: every form post
//! answers 303 to the link, so a reload shows the same step and sends nothing again. The code
//! step says what the last post did (a wrong code, a code sent again) and warns before the
//! share-wide cap locks the link; either step says when the next code request is the last for a
//! while, and once they are used up with no working code, the form gives way to when to ask
//! again. None of it depends on whether the address matched.

use std::{net::IpAddr, time::Duration};

use super::{
    Handover, Refusal, Step,
    limits::{PER_CLIENT, PER_SESSION, client_bucket, session_bucket},
};
use crate::{
    db::Timestamp,
    lifecycle::ClaimedFile,
    otp::{Challenge, Notice},
    ratelimit::Room,
    secret::sha256_hex,
    session::{Session, is_token_shaped},
    share::{ClaimedHere, EventKind, SenderContact, Share},
};

/// Wrong codes left on the share at which the code step starts warning that the link will lock.
pub const LOCK_WARNING_FROM: i32 = 2;

/// The code step as this browser sees it now.
#[derive(Debug)]
pub struct CodeStep {
    /// What it typed on the email step: the typed text only, never the registered address.
    pub typed_address: String,
    pub status: CodeStatus,
    /// Wrong codes the share still takes (the last one locks it), once they are few.
    pub lock_warning: Option<i32>,
    /// Set when the code no longer works and the next code request is the last until then.
    pub last_request: Option<Timestamp>,
}

/// Code requests used up, and no working code: when this browser may ask again.
#[derive(Debug)]
pub struct Blocked {
    pub until: Timestamp,
    /// The same wait in whole minutes, rounded up.
    pub minutes: u64,
}

/// The status line of the code step.
#[derive(Debug, PartialEq, Eq)]
pub enum CodeStatus {
    Quiet,
    Wrong {
        tries_left: i32,
    },
    Malformed,
    /// The code's time ran out, with tries left: only a new code helps.
    Expired,
    /// The code ran out of tries: only a new code helps.
    Dead,
    /// A new code was asked for at this time.
    Resent(Timestamp),
    /// The same code was sent again at this time.
    Repeated(Timestamp),
}

impl Handover {
    /// The step `session` is at for an open share. Reading it shows (and clears) the status line
    /// its last form post left.
    pub async fn step_of(&self, share: &Share, session: Option<&Session>, client: IpAddr) -> Result<Step, Refusal> {
        if let Some(session) = session
            && self.access.grants.is_granted(session, share.id).await?
        {
            if share.is_request() {
                let open = self.requests.open_files(share.id).await?;
                let (limits, arrived, _) = open.ok_or(Refusal::AlreadyAnswered)?;
                return Ok(Step::Upload { limits, arrived });
            }
            return Ok(Step::Download(self.files_of(share).await?));
        }
        if share.locked {
            return Err(Refusal::Locked);
        }
        let Some(session) = session else {
            return Ok(Step::Email { typed_before: String::new(), last_request: None });
        };
        let latest = match self.codes.take_latest(share.id, session.id).await? {
            Some(challenge) if challenge.open && challenge.live => {
                return Ok(Step::Code(self.code_step(share, challenge, None).await?));
            }
            latest => latest,
        };
        // No working code: what helps now is a code request, if there is room for one.
        let room = self.code_request_room(share, session, client).await?;
        if room.left == 0 {
            return Ok(Step::Blocked(self.blocked(share, session, room).await?));
        }
        let last_request = (room.left == 1).then(|| after(room.frees_in));
        Ok(match latest {
            Some(challenge) if challenge.open => Step::Code(self.code_step(share, challenge, last_request).await?),
            latest => Step::Email { typed_before: latest.map(|c| c.typed_address).unwrap_or_default(), last_request },
        })
    }

    async fn code_step(
        &self,
        share: &Share,
        challenge: Challenge,
        last_request: Option<Timestamp>,
    ) -> Result<CodeStep, Refusal> {
        let status = match (challenge.notice, challenge.live) {
            (_, false) if challenge.expired && challenge.tries_left() > 0 => CodeStatus::Expired,
            (_, false) => CodeStatus::Dead,
            (Some(Notice::Wrong), true) => CodeStatus::Wrong { tries_left: challenge.tries_left() },
            (Some(Notice::Malformed), true) => CodeStatus::Malformed,
            (Some(Notice::Resent), true) => CodeStatus::Resent(challenge.created_at),
            (Some(Notice::Repeated), true) => CodeStatus::Repeated(challenge.resent_at.unwrap_or(challenge.created_at)),
            (None, true) => CodeStatus::Quiet,
        };
        let share_left = self.codes.share_tries_left(share.id).await?;
        let lock_warning = (share_left <= LOCK_WARNING_FROM).then_some(share_left);
        Ok(CodeStep { typed_address: challenge.typed_address, status, lock_warning, last_request })
    }

    /// The block this browser is in; the sender's timeline hears of each block once.
    async fn blocked(&self, share: &Share, session: &Session, room: Room) -> Result<Blocked, Refusal> {
        if self.codes.note_block(share.id, session.id, room.frees_in).await? {
            self.events.record_quietly(share.id, EventKind::CodeRequestsBlocked).await;
        }
        Ok(Blocked { until: after(room.frees_in), minutes: minutes_to_wait(room.frees_in) })
    }

    /// The code requests this browser has left, under its own limits and its client address's.
    async fn code_request_room(&self, share: &Share, session: &Session, client: IpAddr) -> Result<Room, Refusal> {
        let own = self.limiter.room(&session_bucket(share, session), &PER_SESSION).await?;
        let client = self.limiter.room(&client_bucket(client), &PER_CLIENT).await?;
        Ok(own.min(client))
    }

    /// "Use a different address": the browser goes back to the email step; no code request is
    /// spent until it sends the next address.
    pub async fn use_other_address(&self, token: &str, session: &Session) -> Result<Share, Refusal> {
        let share = self.open(token).await?;
        self.codes.set_aside(share.id, session.id).await?;
        Ok(share)
    }

    /// When this session claimed the share a link names, if it did, and whether it was a note:
    /// the "already downloaded" page tells the claimer when, and anyone else nothing more than
    /// before.
    pub async fn claimed_here(&self, token: &str, session: Option<&Session>) -> Result<Option<ClaimedHere>, Refusal> {
        let Some(session) = session.filter(|_| is_token_shaped(token)) else { return Ok(None) };
        Ok(self.access.links.repo().claimed_here(&sha256_hex(token), session).await?)
    }

    /// What the browser which claimed a share may still fetch during the grace, so the "already
    /// downloaded" page offers it again: the files of a handover of several, or the note; nothing
    /// for a handover of one file, after the grace, or for anyone else.
    pub async fn still_fetchable(&self, token: &str, session: Option<&Session>) -> Result<StillFetchable, Refusal> {
        let Some(session) = session else { return Ok(StillFetchable::Nothing) };
        let Some(claimed) = self.deliveries.claimed_by(token, session).await? else {
            return Ok(StillFetchable::Nothing);
        };
        Ok(match claimed.files.len() {
            0 => StillFetchable::Note { until: self.note_visible_until(&claimed) },
            1 => StillFetchable::Nothing,
            _ => StillFetchable::Files(claimed.files),
        })
    }

    /// Who sent the share a link names, whatever its state, so the pages that end the flow can
    /// offer to write to them; `None` for a link that names no share (those pages name no one).
    pub async fn sender_of(&self, token: &str) -> Result<Option<SenderContact>, Refusal> {
        if !is_token_shaped(token) {
            return Ok(None);
        }
        Ok(self.access.links.repo().sender_contact(&sha256_hex(token)).await?)
    }
}

/// What the claiming browser may fetch again during the grace.
#[derive(Debug)]
pub enum StillFetchable {
    Nothing,
    Files(Vec<ClaimedFile>),
    /// The note, which this browser may show again until `until`.
    Note {
        until: Timestamp,
    },
}

/// The time `wait` from now.
fn after(wait: Duration) -> Timestamp {
    Timestamp(chrono::Utc::now() + wait)
}

/// A wait as the whole minutes a person is told, rounded up so they never come back too early.
pub fn minutes_to_wait(wait: Duration) -> u64 {
    wait.as_secs().div_ceil(60).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_told_in_whole_minutes_rounded_up() {
        assert_eq!(minutes_to_wait(Duration::from_secs(1)), 1);
        assert_eq!(minutes_to_wait(Duration::from_secs(60)), 1);
        assert_eq!(minutes_to_wait(Duration::from_secs(61)), 2);
        assert_eq!(minutes_to_wait(Duration::from_secs(600)), 10);
    }
}
