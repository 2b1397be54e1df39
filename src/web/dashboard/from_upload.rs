//! A share made from a finished resumable upload: the new-share form names the upload (its id in
//! the last field, `upload`) instead of carrying the file. The fields are checked as for a file;
//! a refused form shows the upload again so the sender need not send the file twice.

use poem::{http::StatusCode, web::Multipart};

use super::new_share::{Fields, NewFile, Sending, Submitted};
use crate::{services::sharing::Source, share::names::clean_file_name, web::AppError};

/// POST /shares/new with an `upload` field.
pub(super) async fn share(
    sending: Sending<'_>,
    mut fields: Fields,
    id: &str,
    multipart: &mut Multipart,
) -> Result<Submitted, AppError> {
    if !matches!(multipart.next_field().await, Ok(None)) {
        return Err(AppError::BadRequest("a field after the upload"));
    }
    let Some(upload) = sending.sharing().finished_upload(sending.user(), id).await? else {
        let unavailable = sending.text().dashboard.upload_unavailable;
        return sending.form_again(&fields, StatusCode::BAD_REQUEST, unavailable);
    };
    let file_name = clean_file_name(&upload.file_name);
    let content_type = if upload.content_type.is_empty() {
        "application/octet-stream".to_owned()
    } else {
        upload.content_type.clone()
    };
    fields.uploaded = Some(upload);
    let file = NewFile { name: &file_name, content_type: &content_type, source: Source::Finished(id) };
    sending.submit(fields, file, async || Ok(())).await
}
