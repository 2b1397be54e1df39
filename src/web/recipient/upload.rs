//! A file request's uploader, once verified: `POST /s/{token}/upload` (multipart, the CSRF token
//! first, checked here since the body is streamed; files, or the ids of finished resumable
//! uploads in `upload` fields), `POST /s/{token}/files/{position}/remove`
//! and `POST /s/{token}/finish`. Each checks the session's grant again before anything is stored
//! and answers 303 to the link; a refused upload or finish answers the upload step with what was
//! wrong. The rules live in [`crate::services::requests`].

use poem::{Request, Response, handler, http::StatusCode, web::Multipart, web::Path};
use serde::Deserialize;
use tokio::io::AsyncReadExt;

use super::{page, refusal};
use crate::{
    request::UploadRefused,
    session::Session,
    share::Message,
    web::{AppError, AppState, Context, form::Form, paths, see_other},
};

/// Room for the form's token and multipart framing around the files.
const FORM_OVERHEAD: u64 = 64 * 1024;
/// Longest CSRF field read.
const TOKEN_FIELD_LIMIT: u64 = 1024;

/// POST /s/{token}/upload: stores each chosen file within the request's limits; the first refused
/// one stops the rest, and nothing of it is kept.
#[handler]
pub async fn upload(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
    mut multipart: Multipart,
) -> Result<Response, AppError> {
    let current = session.current();
    let requests = &state.services.requests;
    let token_field = multipart.next_field().await.map_err(|_| AppError::BadRequest("malformed multipart body"))?;
    let submitted = match token_field {
        Some(field) if field.name() == Some("csrf_token") => read_token(field).await?,
        _ => String::new(),
    };
    if !session.accepts_csrf_token(&submitted) {
        discard_rest(&mut multipart, state).await;
        return Err(AppError::LinkFormRefused { cookies_sent: session.sent_cookies() });
    }
    // The grant before any byte: a stranger holding the link stores nothing.
    if let Err(refused) = requests.granted(&token, current.as_ref()).await {
        discard_rest(&mut multipart, state).await;
        return Err(refusal(refused));
    }
    let mut outcome = Err(UploadRefused::NoFile);
    while let Ok(Some(field)) = multipart.next_field().await {
        // A file already sent through the resumable endpoint (the page's script posts its id).
        if field.name() == Some("upload") {
            let id = read_token(field).await?;
            outcome = requests.attach(&token, current.as_ref(), id.trim()).await.map_err(refusal)?;
            if outcome.is_err() {
                discard_rest(&mut multipart, state).await;
                break;
            }
            continue;
        }
        let name = field.file_name().unwrap_or_default().to_owned();
        if field.name() != Some("file") || name.is_empty() {
            discard(field.into_async_read(), FORM_OVERHEAD).await;
            continue;
        }
        let content_type = field.content_type().unwrap_or("application/octet-stream").to_owned();
        let content = Box::pin(field.into_async_read());
        outcome = requests.upload(&token, current.as_ref(), content, &name, &content_type).await.map_err(refusal)?;
        if outcome.is_err() {
            discard_rest(&mut multipart, state).await;
            break;
        }
    }
    match outcome {
        Ok(()) => Ok(see_other(&paths::link(&token))),
        Err(refused) => refused_step(req, state, &token, current, client, refused).await,
    }
}

/// POST /s/{token}/files/{position}/remove: takes one file back before finishing.
#[handler]
pub async fn remove(
    Context { state, session, .. }: Context<'_>,
    Path((token, position)): Path<(String, i32)>,
) -> Result<Response, AppError> {
    state.services.requests.remove(&token, session.current().as_ref(), position).await.map_err(refusal)?;
    Ok(see_other(&paths::link(&token)))
}

#[derive(Deserialize)]
pub struct FinishForm {
    #[serde(default)]
    note: String,
}

/// POST /s/{token}/finish: the request is answered; the link then says so to everyone.
#[handler]
pub async fn finish(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
    Form(form): Form<FinishForm>,
) -> Result<Response, AppError> {
    let current = session.current();
    let note = Message::parse(&form.note).map_err(|_| AppError::BadRequest("the note is too long"))?;
    match state.services.requests.finish(&token, current.as_ref(), &note).await.map_err(refusal)? {
        Ok(()) => Ok(see_other(&paths::link(&token))),
        Err(refused) => refused_step(req, state, &token, current, client, refused).await,
    }
}

/// The upload step again, saying what was refused (422: nothing was kept).
async fn refused_step(
    req: &Request,
    state: &AppState,
    token: &str,
    session: Option<Session>,
    client: std::net::IpAddr,
    refused: UploadRefused,
) -> Result<Response, AppError> {
    let handover = &state.services.handover;
    let share = handover.open(token).await.map_err(refusal)?;
    let step = handover.step_of(&share, session.as_ref(), client).await.map_err(refusal)?;
    let csrf = session.map(|s| s.csrf_secret).unwrap_or_default();
    let mut response = page::render_step_refused(req, token, &share, &csrf, step, Some(refused))?;
    response.set_status(StatusCode::UNPROCESSABLE_ENTITY);
    Ok(response)
}

/// A short text field: the CSRF token, or an upload's id.
async fn read_token(field: poem::web::Field) -> Result<String, AppError> {
    let mut text = String::new();
    field
        .into_async_read()
        .take(TOKEN_FIELD_LIMIT)
        .read_to_string(&mut text)
        .await
        .map_err(|_| AppError::BadRequest("unreadable form field"))?;
    Ok(text)
}

/// Reads and throws away what is left of a refused body, up to the largest upload accepted: a
/// browser answered before it has sent its body shows "connection reset" instead of the answer.
async fn discard_rest(multipart: &mut Multipart, state: &AppState) {
    let mut left = state.services.requests.upload_cap() + FORM_OVERHEAD;
    while left > 0
        && let Ok(Some(field)) = multipart.next_field().await
    {
        left -= discard(field.into_async_read(), left).await;
    }
}

async fn discard(reader: impl tokio::io::AsyncRead + Unpin, left: u64) -> u64 {
    tokio::io::copy(&mut reader.take(left), &mut tokio::io::sink()).await.unwrap_or(left)
}
