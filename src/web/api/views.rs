//! The API's bodies: what it reads and answers, each the same type in the handlers and in the
//! document.

use poem_openapi::{Enum, Object};

use crate::{
    db::Timestamp,
    share::{
        ShareEvent,
        sender::{HandoverFile, SenderStatus, ShareSummary},
    },
};

/// A new handover: files (finished uploads) or a note, for one or more recipients.
#[derive(Object)]
pub struct NewHandover {
    /// The recipients' addresses; each gets their own share and link.
    pub recipients: Vec<String>,
    /// Ids of the token owner's finished uploads (the `/uploads` endpoint), in order.
    #[oai(default)]
    pub upload_ids: Vec<String>,
    /// A secret note, handed over instead of files.
    pub note: Option<String>,
    /// How long the links stay valid (`7d`, `12h`, …); the server's default without it.
    pub ttl: Option<String>,
    /// A message in the recipients' mail.
    #[oai(default)]
    pub message: String,
    /// The language of the recipients' mails and pages (`en`, `ja`); the owner's without it.
    pub lang: Option<String>,
    /// A mail to the sender once a recipient downloads.
    #[oai(default = "yes")]
    pub notify_on_download: bool,
    /// The recipients' mail names the files and their sizes.
    #[oai(default = "yes")]
    pub name_file_in_mail: bool,
    /// The recipients may answer with files from their download page.
    #[oai(default)]
    pub allow_reply: bool,
}

fn yes() -> bool {
    true
}

/// A handover just made.
#[derive(Object)]
pub struct CreatedHandover {
    pub shares: Vec<CreatedShare>,
}

/// A recipient's share just made: its link is seen only here and in their mail.
#[derive(Object)]
pub struct CreatedShare {
    pub id: i64,
    pub recipient: String,
    pub link: String,
}

/// The token's owner and what the token may do.
#[derive(Object)]
pub struct Me {
    pub email: String,
    pub scopes: Vec<String>,
}

/// How a share ended, or that it has not.
#[derive(Enum)]
#[oai(rename_all = "lowercase")]
pub enum Outcome {
    Waiting,
    Locked,
    Downloaded,
    Expired,
    Revoked,
    Deleted,
}

impl From<SenderStatus> for Outcome {
    fn from(status: SenderStatus) -> Self {
        match status {
            SenderStatus::Waiting => Self::Waiting,
            SenderStatus::Locked => Self::Locked,
            SenderStatus::Downloaded => Self::Downloaded,
            SenderStatus::Expired => Self::Expired,
            SenderStatus::Revoked => Self::Revoked,
            SenderStatus::Deleted => Self::Deleted,
        }
    }
}

fn rfc3339(at: Timestamp) -> String {
    at.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// One recipient's share.
#[derive(Object)]
pub struct ShareItem {
    /// Names the share, and its handover at `/handovers/{id}`.
    pub id: i64,
    pub recipient: String,
    pub outcome: Outcome,
    /// The handover's first file (empty for a note).
    pub file_name: String,
    pub file_count: i64,
    pub size_bytes: i64,
    pub created_at: String,
    pub expires_at: String,
    #[oai(skip_serializing_if_is_none)]
    pub downloaded_at: Option<String>,
    /// The file is gone from the server.
    pub file_deleted: bool,
}

impl From<ShareSummary> for ShareItem {
    fn from(share: ShareSummary) -> Self {
        Self {
            id: share.id,
            recipient: share.recipient_email,
            outcome: share.status.into(),
            file_name: share.file_name,
            file_count: share.file_count,
            size_bytes: share.size_bytes,
            created_at: rfc3339(share.created_at),
            expires_at: rfc3339(share.expires_at),
            downloaded_at: share.downloaded_at.map(rfc3339),
            file_deleted: share.file_deleted,
        }
    }
}

/// A page of shares.
#[derive(Object)]
pub struct SharePage {
    pub shares: Vec<ShareItem>,
    /// The next page's `cursor`; absent on the last page.
    #[oai(skip_serializing_if_is_none)]
    pub next_cursor: Option<String>,
}

/// An event of a share's timeline.
#[derive(Object)]
pub struct Event {
    /// What happened (`created`, `code_sent`, `downloaded`, …).
    pub kind: String,
    pub at: String,
    /// The file it is about, if it is about one.
    #[oai(skip_serializing_if_is_none)]
    pub file_name: Option<String>,
}

impl From<ShareEvent> for Event {
    fn from(event: ShareEvent) -> Self {
        Self { kind: event.kind.code().to_owned(), at: rfc3339(event.at), file_name: event.file_name }
    }
}

/// A share with its timeline.
#[derive(Object)]
pub struct ShareDetail {
    #[oai(flatten)]
    pub share: ShareItem,
    pub events: Vec<Event>,
}

/// A file of a handover.
#[derive(Object)]
pub struct FileItem {
    pub name: String,
    pub size_bytes: i64,
    /// The content's SHA-256, hex.
    pub sha256: String,
    /// The virus scan's state (`pending`, `clean`, …); absent when not scanned.
    #[oai(skip_serializing_if_is_none)]
    pub scan_state: Option<String>,
}

impl From<HandoverFile> for FileItem {
    fn from(file: HandoverFile) -> Self {
        Self {
            name: file.original_name,
            size_bytes: file.size_bytes,
            sha256: file.sha256,
            scan_state: file.scan_state.map(|state| state.code().to_owned()),
        }
    }
}

/// A handover: a share per recipient, and its files in order.
#[derive(Object)]
pub struct HandoverDetail {
    pub shares: Vec<ShareDetail>,
    pub files: Vec<FileItem>,
}
