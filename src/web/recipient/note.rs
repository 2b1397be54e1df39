//! A secret note's two requests: the POST that claims the share (as a download does) and answers
//! 303 to the note's page, and that page, for the claiming session during the delivery grace,
//! never stored by a browser or a proxy (`no-store`). Anyone else gets what a file's GET gives.

use askama::Template;
use poem::{
    IntoResponse, Response, handler,
    http::header,
    web::{Data, Html, Path},
};

use super::{claim_then, refusal};
use crate::{
    i18n::{RecipientText, format},
    services::handover::{Asked, ReadNote},
    web::{AppError, AppState, Chrome, Context, middleware::SessionHandle, paths, see_other},
};

#[derive(Template)]
#[template(path = "recipient/note.html")]
struct NotePage<'a> {
    c: Chrome,
    rf: &'static RecipientText,
    sender_name: &'a str,
    note: &'a str,
    message: &'a str,
    /// "Copy the note … this browser can show it again until {time}".
    keep_it: String,
}

/// POST /s/{token}/note: checks this session's grant and claims the share for it.
#[handler]
pub async fn claim(
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    claim_then(&state, &session, &token, Asked::Note, &paths::link_note(&token)).await
}

/// GET /s/{token}/note: the note, for the session that claimed it.
#[handler]
pub async fn show(
    Context { state, session, req, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let read = state.services.handover.read_note(&token, session.current().as_ref()).await.map_err(refusal)?;
    let ReadNote::Shown { share, note, visible_until } = read else { return Ok(see_other(&paths::link(&token))) };
    let c = Chrome::for_request(req);
    let rf = &c.lang.text().recipient;
    let keep_it = rf.note.keep_it.replace("{time}", &format::clock_time(visible_until, c.lang));
    let page =
        NotePage { c, rf, sender_name: &share.sender_name, note: note.expose(), message: &share.message, keep_it };
    Ok(Html(page.render()?).with_header(header::CACHE_CONTROL, "no-store").into_response())
}
