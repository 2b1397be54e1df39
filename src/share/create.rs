//! Creating a share from a stream of bytes: store the file, then the rows; if the rows cannot be
//! written the stored file is removed again. Used by the CLI and the dashboard alike.

use std::{pin::Pin, time::Duration};

use tokio::io::AsyncRead;

use super::{IssuedShare, MIN_TTL, Message, NewShare, ShareError, ShareLinks, names::clean_file_name};
use crate::{
    accounts::EmailAddress,
    i18n::Lang,
    storage::{FileStore, StoreError},
};

/// A share to create: who sends what to whom, for how long.
pub struct ShareRequest<'a> {
    pub sender_id: i64,
    pub recipient: EmailAddress,
    pub file_name: &'a str,
    pub content_type: &'a str,
    pub content: Pin<Box<dyn AsyncRead + Send + 'a>>,
    pub max_bytes: u64,
    pub ttl: Duration,
    pub message: Message,
    pub lang: Lang,
    pub notify_on_download: bool,
    pub name_file_in_mail: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("the file is larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("a share must be valid for at least one minute")]
    TtlTooShort,
    #[error("storing the file failed")]
    Store(#[source] StoreError),
    #[error("refused after storing: {0}")]
    Refused(&'static str),
    /// The sender was disabled (or their deletion case opened) while the file was arriving.
    #[error("the sender's account is disabled")]
    SenderDisabled,
    /// The finished upload named is not the sender's, not finished, or already a share's.
    #[error("the upload is not available")]
    UploadUnavailable,
    /// The server began to stop before the file had arrived: nothing was kept.
    #[error("the server is stopping")]
    ServerStopping,
    #[error(transparent)]
    Share(#[from] ShareError),
}

pub async fn create_share(
    links: &ShareLinks,
    store: &dyn FileStore,
    request: ShareRequest<'_>,
) -> Result<IssuedShare, CreateError> {
    create_share_checked(links, store, request, async || Ok(())).await
}

/// Like `create_share`, with a last check between storing the file and creating the rows (the
/// upload route refuses a body with anything after its file); a refusal removes the file again.
pub async fn create_share_checked(
    links: &ShareLinks,
    store: &dyn FileStore,
    request: ShareRequest<'_>,
    before_issue: impl AsyncFnOnce() -> Result<(), CreateError>,
) -> Result<IssuedShare, CreateError> {
    if request.ttl < MIN_TTL {
        return Err(CreateError::TtlTooShort);
    }
    let stored = store.put(request.content, request.max_bytes).await.map_err(|e| match e {
        StoreError::TooLarge { limit } => CreateError::TooLarge { limit },
        other => CreateError::Store(other),
    })?;
    if let Err(refused) = before_issue().await {
        let _ = store.delete(&stored.key).await;
        return Err(refused);
    }
    let new = NewShare {
        sender_id: request.sender_id,
        file: stored,
        original_name: clean_file_name(request.file_name),
        content_type: request.content_type.to_owned(),
        recipient: request.recipient,
        message: request.message.into_inner(),
        lang: request.lang,
        ttl: request.ttl,
        notify_on_download: request.notify_on_download,
        name_file_in_mail: request.name_file_in_mail,
    };
    match links.issue(&new).await {
        Ok(issued) => Ok(issued),
        Err(error) => {
            let _ = store.delete(&new.file.key).await;
            Err(match error {
                ShareError::SenderDisabled => CreateError::SenderDisabled,
                other => other.into(),
            })
        }
    }
}

/// A share of a finished resumable upload's file (`new.file`); the upload's row goes in the same
/// transaction, so a form submitted twice makes one share.
pub async fn create_share_from_upload(
    links: &ShareLinks,
    new: &NewShare,
    upload_id: &str,
) -> Result<IssuedShare, CreateError> {
    links.issue_from_upload(new, upload_id).await.map_err(|error| match error {
        ShareError::SenderDisabled => CreateError::SenderDisabled,
        ShareError::UploadUnavailable => CreateError::UploadUnavailable,
        ShareError::TtlTooShort => CreateError::TtlTooShort,
        other => other.into(),
    })
}
