//! A share made from a finished resumable upload: the new-share form names the upload (its id in
//! the last field, `upload`) instead of carrying the file. The fields are checked as for a file;
//! a refused form shows the upload again so the sender need not send the file twice.

use poem::{http::StatusCode, web::Multipart};

use super::new_share::{Fields, Invalid, Submitted, create_error, form_page, parse_fields};
use crate::{
    accounts::User,
    i18n::Lang,
    services::{
        mails::Delivery,
        sharing::{Source, Upload},
    },
    share::create::{CreateError, clean_file_name},
    web::{AppError, AppState, Chrome, render_with},
};

/// POST /shares/new with an `upload` field.
pub(super) async fn share(
    state: &AppState,
    user: &User,
    c: Chrome,
    csrf: &str,
    mut fields: Fields,
    id: &str,
    multipart: &mut Multipart,
) -> Result<Submitted, AppError> {
    if !matches!(multipart.next_field().await, Ok(None)) {
        return Err(AppError::BadRequest("a field after the upload"));
    }
    let sharing = &state.services.sharing;
    let t = c.t;
    let Some(upload) = sharing.finished_upload(user, id).await? else {
        return Ok(render_with(
            StatusCode::BAD_REQUEST,
            &form_page(state, c, csrf, &fields, Some(t.dashboard.upload_unavailable)),
        )?
        .into());
    };
    let file_name = clean_file_name(&upload.file_name);
    let content_type = if upload.content_type.is_empty() {
        "application/octet-stream".to_owned()
    } else {
        upload.content_type.clone()
    };
    fields.uploaded = Some(upload);
    let parsed = match parse_fields(t, &fields, &file_name, sharing.limits().0) {
        Ok(parsed) => parsed,
        Err(Invalid::Form(error)) => {
            return Ok(render_with(StatusCode::BAD_REQUEST, &form_page(state, c, csrf, &fields, Some(error)))?.into());
        }
        Err(Invalid::TtlTooShort) => return Err(AppError::BadRequest("ttl too short")),
    };
    let from_upload = Upload {
        recipient: parsed.recipient,
        file_name: &file_name,
        content_type: &content_type,
        source: Source::Finished(id),
        ttl: parsed.ttl,
        message: parsed.message,
        lang: Lang::from_code(&fields.mail_lang).unwrap_or(user.lang),
        notify_on_download: fields.notify,
    };
    match sharing.create(user, from_upload, async || Ok(()), Delivery::Background).await {
        Ok(created) => Ok(Submitted::Created { share_id: created.share_id, link: created.link }),
        // Used by a first submission of the same form, or gone meanwhile.
        Err(CreateError::UploadUnavailable) => {
            fields.uploaded = None;
            Ok(render_with(
                StatusCode::BAD_REQUEST,
                &form_page(state, c, csrf, &fields, Some(t.dashboard.upload_unavailable)),
            )?
            .into())
        }
        Err(CreateError::SenderDisabled) => Ok(render_with(
            StatusCode::FORBIDDEN,
            &form_page(state, c, csrf, &fields, Some(t.dashboard.upload_sender_disabled)),
        )?
        .into()),
        Err(error) => Err(create_error(error)),
    }
}
