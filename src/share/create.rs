//! Creating a handover (files, or a secret note): store the files that arrive now, then the rows in one transaction; if the
//! rows cannot be written, the files stored here are removed again (a finished upload's file stays
//! the upload's). Used by the CLI and the dashboard alike.

use std::time::Duration;

use super::{
    IssuedShare, MIN_TTL, Message, NewFile, NewHandover, ShareError, ShareLinks,
    names::{clean_file_name, distinct_names},
    note::NoteToSeal,
};
use crate::{
    accounts::EmailAddress,
    i18n::Lang,
    storage::{Content, FileStore, StoreError, StoredFile},
};

/// Files one handover may hold.
pub const MAX_FILES: usize = 100;
/// Addresses one handover may name: each gets a share, a link and mails of their own.
pub const MAX_RECIPIENTS: usize = 20;

/// Where a file's bytes come from.
pub enum FileContent<'a> {
    /// Arriving now: stored here.
    Stream(Content<'a>),
    /// A finished resumable upload of the sender's, already stored.
    Uploaded { upload_id: String, stored: StoredFile },
}

/// One file of a handover to create, as the sender named it.
pub struct FileRequest<'a> {
    pub name: String,
    pub content_type: String,
    pub content: FileContent<'a>,
}

/// A handover to create: who sends which files to whom, for how long.
pub struct HandoverRequest<'a> {
    pub sender_id: i64,
    pub recipients: Vec<EmailAddress>,
    /// Empty when a note is handed over instead.
    pub files: Vec<FileRequest<'a>>,
    pub note: Option<NoteToSeal>,
    /// The most all files together may hold.
    pub max_bytes: u64,
    pub ttl: Duration,
    pub message: Message,
    pub lang: Lang,
    pub notify_on_download: bool,
    pub name_file_in_mail: bool,
    /// The files are held for the virus scan (WATASU_SCAN_OUTBOUND).
    pub scan: bool,
    pub allow_reply: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("the files are larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("a share must be valid for at least one minute")]
    TtlTooShort,
    #[error("a handover holds between 1 and {MAX_FILES} files, or a note instead")]
    FileCount,
    #[error("a handover holds files or a note, not both")]
    NoteWithFiles,
    #[error("a handover names between 1 and {MAX_RECIPIENTS} recipients")]
    RecipientCount,
    #[error("storing the file failed")]
    Store(#[source] StoreError),
    #[error("refused after storing: {0}")]
    Refused(&'static str),
    /// The sender was disabled (or their deletion case opened) while the files were arriving.
    #[error("the sender's account is disabled")]
    SenderDisabled,
    /// A finished upload named is not the sender's, not finished, or already a share's.
    #[error("the upload is not available")]
    UploadUnavailable,
    /// The server began to stop before the files had arrived: nothing was kept.
    #[error("the server is stopping")]
    ServerStopping,
    #[error(transparent)]
    Share(#[from] ShareError),
}

pub async fn create_handover(
    links: &ShareLinks,
    store: &dyn FileStore,
    request: HandoverRequest<'_>,
) -> Result<Vec<IssuedShare>, CreateError> {
    create_handover_checked(links, store, request, async || Ok(())).await
}

/// Whether a handover may go to `count` recipients: one at least, [`MAX_RECIPIENTS`] at most.
pub fn recipient_count(count: usize) -> Result<(), CreateError> {
    if (1..=MAX_RECIPIENTS).contains(&count) { Ok(()) } else { Err(CreateError::RecipientCount) }
}

/// Like `create_handover`, with a last check between storing the files and creating the rows (the
/// upload route refuses a body with anything after its files); a refusal removes the files again.
pub async fn create_handover_checked(
    links: &ShareLinks,
    store: &dyn FileStore,
    request: HandoverRequest<'_>,
    before_issue: impl AsyncFnOnce() -> Result<(), CreateError>,
) -> Result<Vec<IssuedShare>, CreateError> {
    if request.ttl < MIN_TTL {
        return Err(CreateError::TtlTooShort);
    }
    match (request.files.len(), &request.note) {
        (0, Some(_)) => {}
        (_, Some(_)) => return Err(CreateError::NoteWithFiles),
        (count, None) if !(1..=MAX_FILES).contains(&count) => return Err(CreateError::FileCount),
        _ => {}
    }
    recipient_count(request.recipients.len())?;
    let names = distinct_names(request.files.iter().map(|file| clean_file_name(&file.name)));
    let mut files = Vec::with_capacity(request.files.len());
    let mut remaining = request.max_bytes;
    for (file, name) in request.files.into_iter().zip(names) {
        let (stored, upload_id) = match file.content {
            FileContent::Stream(content) => match store.put(content, remaining).await {
                Ok(stored) => (stored, None),
                Err(error) => {
                    remove_arrived(store, &files).await;
                    return Err(match error {
                        StoreError::TooLarge { .. } => CreateError::TooLarge { limit: request.max_bytes },
                        other => CreateError::Store(other),
                    });
                }
            },
            FileContent::Uploaded { upload_id, stored } => (stored, Some(upload_id)),
        };
        let size = stored.size_bytes;
        files.push(NewFile { stored, name, content_type: file.content_type, upload_id });
        if size > remaining {
            remove_arrived(store, &files).await;
            return Err(CreateError::TooLarge { limit: request.max_bytes });
        }
        remaining -= size;
    }
    if let Err(refused) = before_issue().await {
        remove_arrived(store, &files).await;
        return Err(refused);
    }
    let new = NewHandover {
        sender_id: request.sender_id,
        files,
        note: request.note,
        recipients: request.recipients,
        message: request.message.into_inner(),
        lang: request.lang,
        ttl: request.ttl,
        notify_on_download: request.notify_on_download,
        name_file_in_mail: request.name_file_in_mail,
        scan: request.scan,
        allow_reply: request.allow_reply,
    };
    match links.issue(&new).await {
        Ok(issued) => Ok(issued),
        Err(error) => {
            remove_arrived(store, &new.files).await;
            Err(match error {
                ShareError::SenderDisabled => CreateError::SenderDisabled,
                ShareError::UploadUnavailable => CreateError::UploadUnavailable,
                ShareError::TtlTooShort => CreateError::TtlTooShort,
                other => other.into(),
            })
        }
    }
}

/// Removes the files that arrived in this request (a finished upload's file stays its upload's).
async fn remove_arrived(store: &dyn FileStore, files: &[NewFile]) {
    for file in files.iter().filter(|file| file.upload_id.is_none()) {
        let _ = store.delete(&file.stored.key).await;
    }
}
