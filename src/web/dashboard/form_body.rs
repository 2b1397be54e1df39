//! Reading the new-share form's body: its text fields (each bounded), its files kept one after
//! another as the sender's finished uploads, and the rest of a refused form read and thrown away
//! so the browser shows the answer. The API's multipart handover reads its fields and drains a
//! refused body with the same bounds.

use poem::web::{Field, Multipart};
use tokio::io::AsyncReadExt;

use super::fields::Fields;
use crate::{
    accounts::User,
    services::{
        Fault,
        sharing::{FinishedUpload, Sharing},
    },
    share::{
        create::{CreateError, MAX_FILES},
        note::NOTE_LIMIT,
    },
    web::{AppError, AppState},
};

/// Longest accepted text field of the form.
const TEXT_FIELD_LIMIT: u64 = 8 * 1024;
/// Room for the form fields and multipart framing around the file.
pub(super) const FORM_OVERHEAD: u64 = 64 * 1024;
/// How many times the largest form is read from a form over the limit before its form comes
/// back: reading costs time, not storage, and a browser answered before it has sent its whole
/// body shows "connection reset" instead of the answer.
pub(crate) const OVERSIZED_READ: u64 = 2;

/// Longest accepted note field: room for a note over its limit to come back with the form (a
/// character the browser counts as one may take up to four bytes).
const NOTE_FIELD_LIMIT: u64 = 4 * NOTE_LIMIT as u64;

pub(crate) async fn read_text(field: Field) -> Result<String, AppError> {
    read_up_to(field, TEXT_FIELD_LIMIT).await
}

/// The note field, which may be longer than the other text fields.
pub(super) async fn read_note(field: Field) -> Result<String, AppError> {
    read_up_to(field, NOTE_FIELD_LIMIT).await
}

async fn read_up_to(field: Field, limit: u64) -> Result<String, AppError> {
    let mut text = String::new();
    field
        .into_async_read()
        .take(limit + 1)
        .read_to_string(&mut text)
        .await
        .map_err(|_| AppError::BadRequest("unreadable form field"))?;
    if text.len() as u64 > limit {
        return Err(AppError::TooLarge);
    }
    Ok(text)
}

/// Reads and throws away the form's remaining fields, up to `left` bytes in all.
pub(crate) async fn discard_rest(multipart: &mut Multipart, mut left: u64) {
    while left > 0
        && let Ok(Some(field)) = multipart.next_field().await
    {
        left -= discard(field.into_async_read(), left).await;
    }
}

/// The largest body the form may have: the files at their limit and the fields around them.
pub(crate) fn largest_form(state: &AppState) -> u64 {
    state.services.sharing.limits().1 + FORM_OVERHEAD
}

/// Reads and throws away up to `left` bytes of `reader` (stopping at an error); returns how many.
pub(super) async fn discard(reader: impl tokio::io::AsyncRead + Unpin, left: u64) -> u64 {
    tokio::io::copy(&mut reader.take(left), &mut tokio::io::sink()).await.unwrap_or(left)
}

/// Keeps `first` and every file after it as the sender's finished uploads (added to
/// `fields.uploaded`), answering their ids; the files are the last fields, so anything after
/// them refuses the form (and the caller removes what was kept).
pub(super) async fn keep_files(
    sharing: &Sharing,
    user: &User,
    fields: &mut Fields,
    first: Field,
    multipart: &mut Multipart,
) -> Result<Result<Vec<String>, CreateError>, AppError> {
    let named = fields.uploaded.len();
    let kept = keep_uploads(sharing, user, &mut fields.uploaded, first, multipart).await?;
    Ok(kept.map(|()| fields.uploaded[named..].iter().map(|file| file.id.clone()).collect()))
}

/// Keeps `first` and every `file` part after it as the sender's finished uploads, each added to
/// `uploaded` as soon as it is kept (so the caller can remove them after a refusal), within what
/// is left of the upload limit after what `uploaded` holds. The form and the API's multipart
/// handover both read their files with it.
pub(crate) async fn keep_uploads(
    sharing: &Sharing,
    user: &User,
    uploaded: &mut Vec<FinishedUpload>,
    first: Field,
    multipart: &mut Multipart,
) -> Result<Result<(), CreateError>, Fault> {
    let limit = sharing.limits().1;
    let mut next = Some(first);
    while let Some(field) = next.take() {
        if uploaded.len() >= MAX_FILES {
            return Ok(Err(CreateError::FileCount));
        }
        let file_name = field.file_name().unwrap_or_default().to_owned();
        let content_type = field.content_type().unwrap_or("application/octet-stream").to_owned();
        let used: u64 = uploaded.iter().map(|file| file.size_bytes).sum();
        let content = Box::pin(field.into_async_read());
        match sharing.keep_file(user, content, &file_name, &content_type, limit.saturating_sub(used)).await? {
            Ok(file) => uploaded.push(file),
            Err(refused) => return Ok(Err(refused)),
        }
        loop {
            match multipart.next_field().await {
                Ok(None) => break,
                Ok(Some(field)) if field.name() == Some("file") => {
                    if !field.file_name().unwrap_or_default().is_empty() {
                        next = Some(field);
                        break;
                    }
                }
                Ok(Some(_)) => return Ok(Err(CreateError::Refused("a field after the files"))),
                Err(_) => return Ok(Err(CreateError::Refused("malformed multipart body after the files"))),
            }
        }
    }
    Ok(Ok(()))
}
