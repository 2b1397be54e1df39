//! Where a browser is in the recipient's flow, read from its session alone: every form post
//! answers 303 to the link, so a reload shows the same step and sends nothing again. The code
//! step says what the last post did (a wrong code, a new code sent, a limit reached) and warns
//! before the share-wide cap locks the link. None of it depends on whether the address matched.

use std::{net::IpAddr, time::Duration};

use super::{Handover, PER_CLIENT, PER_SESSION, Refusal, Step, client_bucket, session_bucket};
use crate::{
    db::Timestamp,
    otp::{Challenge, Notice},
    secret::sha256_hex,
    session::{Session, is_token_shaped},
    share::Share,
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
}

/// The status line of the code step.
#[derive(Debug, PartialEq, Eq)]
pub enum CodeStatus {
    Quiet,
    Wrong {
        tries_left: i32,
    },
    Malformed,
    /// The code expired or ran out of tries: only a new code helps.
    Dead,
    /// A new code was asked for at this time.
    Resent(Timestamp),
    /// The code-request limit is reached; a new code can be asked for in this many minutes (0:
    /// now again).
    Limited {
        minutes: u64,
    },
}

impl Handover {
    /// The step `session` is at for an open share. Reading it shows (and clears) the status line
    /// its last form post left.
    pub async fn step_of(&self, share: &Share, session: Option<&Session>, client: IpAddr) -> Result<Step, Refusal> {
        if let Some(session) = session
            && self.access.grants.is_granted(session, share.id).await?
        {
            return Ok(Step::Download(self.file_of(share).await?));
        }
        if share.locked {
            return Err(Refusal::Locked);
        }
        let Some(session) = session else { return Ok(Step::Email { typed_before: String::new() }) };
        match self.codes.take_latest(share.id, session.id).await? {
            Some(challenge) if challenge.open => {
                Ok(Step::Code(self.code_step(share, session, client, challenge).await?))
            }
            latest => Ok(Step::Email { typed_before: latest.map(|c| c.typed_address).unwrap_or_default() }),
        }
    }

    async fn code_step(
        &self,
        share: &Share,
        session: &Session,
        client: IpAddr,
        challenge: Challenge,
    ) -> Result<CodeStep, Refusal> {
        // A reached limit is news even for a dead code; otherwise a dead code is all there is to say.
        let status = match (challenge.notice, challenge.live) {
            (Some(Notice::Limited), _) => {
                CodeStatus::Limited { minutes: self.code_request_wait(share, session, client).await? }
            }
            (_, false) => CodeStatus::Dead,
            (Some(Notice::Wrong), true) => CodeStatus::Wrong { tries_left: challenge.tries_left() },
            (Some(Notice::Malformed), true) => CodeStatus::Malformed,
            (Some(Notice::Resent), true) => CodeStatus::Resent(challenge.created_at),
            (None, true) => CodeStatus::Quiet,
        };
        let share_left = self.codes.share_tries_left(share.id).await?;
        let lock_warning = (share_left <= LOCK_WARNING_FROM).then_some(share_left);
        Ok(CodeStep { typed_address: challenge.typed_address, status, lock_warning })
    }

    /// Whole minutes until this browser may ask for a code again (0: it may now).
    async fn code_request_wait(&self, share: &Share, session: &Session, client: IpAddr) -> Result<u64, Refusal> {
        let own = self.limiter.wait_for_room(&session_bucket(share, session), &PER_SESSION).await?;
        let client = self.limiter.wait_for_room(&client_bucket(client), &PER_CLIENT).await?;
        let wait = own.max(client);
        Ok(if wait.is_zero() { 0 } else { minutes_to_wait(wait) })
    }

    /// "Use a different address": the browser goes back to the email step; no code request is
    /// spent until it sends the next address.
    pub async fn use_other_address(&self, token: &str, session: &Session) -> Result<Share, Refusal> {
        let share = self.open(token).await?;
        self.codes.set_aside(share.id, session.id).await?;
        Ok(share)
    }

    /// When this session claimed the share a link names, if it did: the "already downloaded"
    /// page tells the claimer when, and anyone else nothing more than before.
    pub async fn downloaded_at(&self, token: &str, session: Option<&Session>) -> Result<Option<Timestamp>, Refusal> {
        let Some(session) = session.filter(|_| is_token_shaped(token)) else { return Ok(None) };
        Ok(self.access.links.repo().claimed_at(&sha256_hex(token), session).await?)
    }
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
