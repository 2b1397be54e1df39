//! Signed webhooks: endpoints that hear about shares (an admin's about every share of the team, a
//! sender's about their own), the messages made for them from the share timeline, and their
//! delivery through a database outbox, signed after Standard Webhooks.
//!
//! - [`signing`]: the `whsec_…` secret and the `webhook-signature` header.
//! - [`guard`]: no delivery reaches a private, loopback or link-local address unless allowed.
//! - [`payload`]: what a message says (never a link token, a code, a session, a note or content).
//! - [`repo`]: the endpoints, and what the dispatcher reads (its cursors, events, new shares).
//! - [`outbox`]: the messages, claimed and marked by conditional UPDATEs.
//! - [`send`]: one HTTP attempt to the address the guard checked.
//!
//! The rules (who may register what, when a message is made, the backoff) are in
//! `services::webhooks`.

/// The sender `u` may not be heard of: disabled, or a deletion case not completed is open on them.
macro_rules! barred {
    () => {
        "(u.disabled_at IS NOT NULL OR EXISTS (SELECT 1 FROM deletion_cases d
            WHERE d.subject_id = u.id AND d.state <> 'completed'))"
    };
}

pub mod guard;
pub mod outbox;
pub mod payload;
pub mod repo;
pub mod send;
pub mod signing;

use crate::share::EventKind;

crate::db_code! {
    /// What a message tells, as its `type` field and the endpoint's choice of events name it.
    pub enum EventType {
        ShareCreated = "share.created",
        ShareOpened = "share.opened",
        ShareVerified = "share.verified",
        /// Every byte of the file reached the recipient (the download completed).
        ShareDownloaded = "share.downloaded",
        ShareExpired = "share.expired",
        /// The sender ended the share before it was downloaded.
        ShareEnded = "share.ended",
        /// Too many wrong codes: no more codes until the sender unlocks it.
        ShareLocked = "share.locked",
        RequestAnswered = "request.answered",
        /// The virus scan refused a file (of a handover, or one a request's uploader left).
        FileRefused = "file.refused",
        /// The "send test event" button; never chosen, always sent when asked.
        Test = "webhook.test",
    }
}

impl EventType {
    /// The events an endpoint may choose, in the order the form lists them.
    pub const CHOOSABLE: [Self; 9] = [
        Self::ShareCreated,
        Self::ShareOpened,
        Self::ShareVerified,
        Self::ShareDownloaded,
        Self::ShareExpired,
        Self::ShareEnded,
        Self::ShareLocked,
        Self::RequestAnswered,
        Self::FileRefused,
    ];

    /// The message a timeline event makes, if any: the timeline is where every one of these facts
    /// is recorded, so the dispatcher reads it rather than every place that records one.
    pub fn of_timeline(kind: EventKind) -> Option<Self> {
        Some(match kind {
            EventKind::Opened => Self::ShareOpened,
            EventKind::Verified => Self::ShareVerified,
            EventKind::Completed => Self::ShareDownloaded,
            EventKind::Expired => Self::ShareExpired,
            EventKind::Revoked => Self::ShareEnded,
            EventKind::Locked => Self::ShareLocked,
            EventKind::Answered => Self::RequestAnswered,
            EventKind::FileRefused | EventKind::ScanRefused => Self::FileRefused,
            // Steps of the code flow and the store's housekeeping: no integrator acts on them,
            // and a mailed code's own events would tell a receiver when a person is typing.
            // A new kind must be placed here or above: there is no catch-all on purpose.
            EventKind::CodeSent
            | EventKind::CodeMailFailed
            | EventKind::CodeFailed
            | EventKind::CodeRequestsBlocked
            | EventKind::Unlocked
            | EventKind::Downloaded
            | EventKind::Refused
            | EventKind::LinkRenewed
            | EventKind::KeyDestroyed
            | EventKind::Purged
            | EventKind::FileUploaded => return None,
        })
    }

    /// The space-separated codes stored for a choice of events.
    pub fn join(types: &[Self]) -> String {
        types.iter().map(|t| t.code()).collect::<Vec<_>>().join(" ")
    }

    /// A stored choice read back (a code no longer known is skipped).
    pub fn split(stored: &str) -> Vec<Self> {
        stored.split_whitespace().filter_map(|code| Self::parse(code).ok()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_choosable_event_comes_from_the_timeline_except_a_new_share() {
        let from_timeline: Vec<_> = EventKind::ALL.iter().filter_map(|k| EventType::of_timeline(*k)).collect();
        for event in EventType::CHOOSABLE {
            assert_eq!(from_timeline.contains(&event), event != EventType::ShareCreated, "{event}");
        }
        assert!(!from_timeline.contains(&EventType::Test));
    }

    #[test]
    fn a_choice_of_events_is_stored_as_codes_and_read_back() {
        let chosen = [EventType::ShareOpened, EventType::FileRefused];
        assert_eq!(EventType::join(&chosen), "share.opened file.refused");
        assert_eq!(EventType::split("share.opened bogus file.refused"), chosen);
    }
}
