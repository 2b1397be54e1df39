//! Share links (seed 001): the URL token identifies a share and never authorises a download.
//! A download needs the token, a grant on this session earned with an emailed code, and (with the
//! lifecycle) a successful claim.

mod access;
pub mod create;
mod events;
mod grants;
mod message;
pub mod names;
pub mod note;
mod repo;
pub mod sender;
mod ttl;
pub(crate) mod writes;

use std::time::Duration;

pub use access::ShareAccess;
pub use events::{EventKind, ShareEvent, ShareEvents};
pub use grants::DownloadGrants;
pub use message::{MESSAGE_LIMIT, Message, MessageTooLong};
pub use repo::{ClaimedHere, FileInfo, SenderContact, ShareListing, ShareRepository, StatusTally};
pub(crate) use repo::{INSERT_FILE, INSERT_HANDOVER};
pub use ttl::{MIN_TTL, ShareTtl, TtlError};

use crate::{
    accounts::EmailAddress,
    db::Timestamp,
    i18n::Lang,
    lifecycle::LifecycleRepository,
    secret::{SecretString, random_token, sha256_hex},
    session::is_token_shaped,
    storage::StoredFile,
};

crate::db_code! {
    /// Where a share is in its life; it only ever moves forward. A stored value none of the three
    /// is a decoding error, never a guess (a guess of "active" would let a row in an unknown state
    /// be downloaded).
    pub enum ShareStatus { Active = "active", Consumed = "consumed", Purged = "purged" }
}

crate::db_code! {
    /// Which way a share points: a delivery hands the sender's files to the recipient; a request
    /// asks the recipient (the uploader) for files, which the sender alone then fetches. Both use
    /// the same link, code step, grant, limits and lock; only the step after the code differs.
    pub enum ShareKind { Delivery = "delivery", Request = "request" }
}

/// A share found by its token: what the recipient pages and the authorisation need.
#[derive(Clone, Debug)]
pub struct Share {
    pub id: i64,
    /// What the share hands over: the handover its files belong to.
    pub handover_id: i64,
    pub recipient_email: String,
    pub sender_name: String,
    pub message: String,
    pub lang: Lang,
    pub status: ShareStatus,
    pub kind: ShareKind,
    pub expires_at: Timestamp,
    /// Too many wrong codes: no more codes until the sender unlocks it.
    pub locked: bool,
    /// How many files the handover holds: the page before the code says so, without names.
    pub file_count: i64,
    /// A file of the handover is not released by the virus scan (still being checked, or
    /// refused): the link opens nothing until it is. Never for a request: its files are held
    /// from the sender who asked for them, not from the uploader whose link it is.
    pub held: bool,
}

impl Share {
    /// A handover holds files or a secret note: none of the one means the other.
    pub fn is_note(&self) -> bool {
        self.file_count == 0 && self.kind == ShareKind::Delivery
    }

    /// The share asks its recipient for files instead of handing them some.
    pub fn is_request(&self) -> bool {
        self.kind == ShareKind::Request
    }
}

/// A file of a new handover, already in storage.
#[derive(Debug)]
pub struct NewFile {
    pub stored: StoredFile,
    /// Cleaned, and distinct from the handover's other names.
    pub name: String,
    pub content_type: String,
    /// The sender's finished resumable upload it came from, whose row goes when the handover is made.
    pub upload_id: Option<String>,
}

/// Everything needed to create a handover: its files, in order, and a share per recipient.
#[derive(Debug)]
pub struct NewHandover {
    pub sender_id: i64,
    /// None when it hands over a note instead.
    pub files: Vec<NewFile>,
    pub note: Option<note::NoteToSeal>,
    pub recipients: Vec<EmailAddress>,
    pub message: String,
    pub lang: Lang,
    pub ttl: Duration,
    pub notify_on_download: bool,
    /// The notification mail names the files and their sizes (the sender may switch it off).
    pub name_file_in_mail: bool,
    /// The files start pending, held until the virus scan releases them.
    pub scan: bool,
    /// The recipients may answer with files (a reply: a request made from the download page).
    pub allow_reply: bool,
}

/// A freshly created share and its link token, which exists only here and in the link.
#[derive(Debug)]
pub struct IssuedShare {
    pub share_id: i64,
    pub recipient: EmailAddress,
    pub token: SecretString,
}

#[derive(Debug, thiserror::Error)]
pub enum ShareError {
    #[error("malformed share token")]
    Malformed,
    #[error("share link is unknown or has expired")]
    NotAvailable,
    #[error("download is not granted for this session")]
    NotGranted,
    #[error("a grant needs a successful verification")]
    NotVerified,
    #[error("a share must be valid for at least one minute")]
    TtlTooShort,
    #[error("the sender's account is disabled")]
    SenderDisabled,
    /// The finished upload named is not the sender's, not finished, or already a share's.
    #[error("the upload is not available")]
    UploadUnavailable,
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Issues tokens and resolves them back to shares.
#[derive(Clone, Debug)]
pub struct ShareLinks {
    repo: ShareRepository,
}

impl ShareLinks {
    pub fn new(repo: ShareRepository) -> Self {
        Self { repo }
    }

    pub fn repo(&self) -> &ShareRepository {
        &self.repo
    }

    /// Creates the handover with a share per recipient, each with a fresh 256-bit token; only the
    /// tokens' SHA-256 is stored.
    pub async fn issue(&self, new: &NewHandover) -> Result<Vec<IssuedShare>, ShareError> {
        if new.ttl < MIN_TTL {
            return Err(ShareError::TtlTooShort);
        }
        let tokens: Vec<SecretString> = new.recipients.iter().map(|_| random_token()).collect();
        let hashes: Vec<String> = tokens.iter().map(|token| sha256_hex(token.expose())).collect();
        let ids = self.repo.insert(new, &hashes).await?;
        Ok(ids
            .into_iter()
            .zip(new.recipients.iter().cloned())
            .zip(tokens)
            .map(|((share_id, recipient), token)| IssuedShare { share_id, recipient, token })
            .collect())
    }

    /// Gives an active share a fresh link token; the old link stops working. `None` when the
    /// share is no longer active.
    pub async fn renew(
        &self,
        lifecycle: &LifecycleRepository,
        share_id: i64,
    ) -> Result<Option<SecretString>, sqlx::Error> {
        let token = random_token();
        Ok(lifecycle.renew_link(share_id, &sha256_hex(token.expose())).await?.then_some(token))
    }

    /// Finds the live share a token names. Only the exact 64-hex form is looked up; expiry is
    /// judged by the database clock in the same query.
    pub async fn resolve(&self, token: &str) -> Result<Share, ShareError> {
        if !is_token_shaped(token) {
            return Err(ShareError::Malformed);
        }
        self.repo.find_live_by_token_hash(&sha256_hex(token)).await?.ok_or(ShareError::NotAvailable)
    }
}
