//! The pages that end the recipient's flow, answered here because only the recipient's routes
//! know the link and the browser: "already downloaded" (410) tells the browser that downloaded
//! when it did, in a calm card (it is good news), with the buttons of a handover of several files
//! (or the link to a note) again while its grace runs, and everyone else to contact the sender; the
//! locked (403) and the expired or ended (404) pages say what happened. Each offers to write to
//! the sender, but only for a link that names a share: a page for an unknown link names no one
//! and goes on, as every other error, to the common error page. (Used-up code requests are a step
//! of the link's page, not an error.)

use std::sync::Arc;

use askama::Template;
use poem::{Endpoint, IntoResponse, Request, Response, http::StatusCode};

use super::{
    super::{AppError, AppState, Chrome, middleware::SessionHandle, middleware::is_htmx, paths},
    reply::ReplyShown,
};
use crate::{i18n::format, services::handover::StillFetchable, share::SenderContact};

#[derive(Template)]
#[template(path = "recipient/end.html", blocks = ["end_card"])]
struct EndPage {
    c: Chrome,
    status: u16,
    title: &'static str,
    body: String,
    /// Good news (downloaded in this browser) rather than a refusal.
    calm: bool,
    /// "Write to <sender>": the address for the mailto link, and the words.
    write_to: Option<(String, String)>,
    /// Where the button leads without a sender to write to, and what it says.
    back: (String, &'static str),
    /// The browser that downloaded a handover of several files, during the grace: its files
    /// (position and name), offered again with the forms' token.
    again: Vec<(i32, String)>,
    /// The browser that was shown a note, during the grace: a link to show it again.
    note_again: bool,
    csrf_token: String,
    share_path: String,
    /// The browser that downloaded, during the grace: "Reply with a file", or that it replied.
    reply: ReplyShown,
    reply_explain: String,
}

/// Around each recipient route: turns the refusals that end the flow into their pages.
pub async fn recipient_refusals<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let token = req.raw_path_param("token").unwrap_or_default().to_owned();
    let chrome = Chrome::for_request(&req);
    let htmx = is_htmx(&req);
    let state = req.data::<AppState>().cloned();
    let session = req.extensions().get::<SessionHandle>().cloned();
    let error = match ep.call(req).await {
        Ok(response) => return Ok(response.into_response()),
        Err(error) => error,
    };
    let Some(state) = state else { return Err(error) };
    let handover = &state.services.handover;
    let (rf, t, lang) = (&chrome.t.recipient, chrome.t, chrome.lang);
    let session = session.and_then(|s| s.current());
    let (mut again, mut note_again, mut reply) = (Vec::new(), false, ReplyShown::default());
    let (status, title, body, calm) = match error.downcast_ref::<AppError>() {
        Some(AppError::AlreadyDownloaded) => {
            let claimed = handover.claimed_here(&token, session.as_ref()).await.map_err(super::refusal)?;
            let (title, here, until) =
                match handover.still_fetchable(&token, session.as_ref()).await.map_err(super::refusal)? {
                    StillFetchable::Files(files) => {
                        again = files.into_iter().map(|file| (file.position, file.original_name)).collect();
                        (rf.downloaded_title, rf.many.downloaded_here, None)
                    }
                    StillFetchable::Note { until } => {
                        note_again = true;
                        (rf.note.read_title, rf.note.read_here, Some(until))
                    }
                    StillFetchable::Nothing if claimed.is_some_and(|c| c.note) => {
                        (rf.note.read_title, rf.note.read_gone, None)
                    }
                    StillFetchable::Nothing => (rf.downloaded_title, rf.downloaded_here, None),
                };
            if claimed.is_some() {
                reply = super::reply::shown(&state, &token, session.as_ref()).await?;
            }
            let body = match claimed {
                Some(claimed) => here
                    .replace("{time}", &format::human_time(claimed.at, lang))
                    .replace("{until}", &until.map(|at| format::clock_time(at, lang)).unwrap_or_default()),
                None => rf.downloaded_elsewhere.to_owned(),
            };
            (StatusCode::GONE, title, body, claimed.is_some())
        }
        Some(AppError::AlreadyAnswered) => {
            let text = &t.request;
            (StatusCode::GONE, text.answered_title, text.answered_body.to_owned(), false)
        }
        Some(AppError::ShareLocked) => {
            let text = &t.errors.share_locked;
            (StatusCode::FORBIDDEN, text.title, text.body.to_owned(), false)
        }
        Some(AppError::NotAvailable(_)) => {
            let text = &t.errors.share_not_available;
            (StatusCode::NOT_FOUND, text.title, text.body.to_owned(), false)
        }
        _ => return Err(error),
    };
    let sender = handover.sender_of(&token).await.map_err(super::refusal)?;
    if sender.is_none() && status != StatusCode::GONE {
        return Err(error);
    }
    tracing::info!(status = status.as_u16(), reason = %error, calm, "request refused: the flow ended");
    let reply_explain =
        sender.as_ref().map(|s| t.request.reply_explain.replace("{sender}", &s.name)).unwrap_or_default();
    let write_to = sender.and_then(|sender| write_to(&sender, rf.write_to));
    let back = (paths::HOME.to_owned(), t.errors.back_home);
    let csrf_token = session.map(|s| s.csrf_secret).unwrap_or_default();
    let share_path = paths::link(&token);
    let page = EndPage {
        c: chrome,
        status: status.as_u16(),
        title,
        body,
        calm,
        write_to,
        back,
        again,
        note_again,
        csrf_token,
        share_path,
        reply,
        reply_explain,
    };
    page_response(page, htmx)
}

/// The sender's address as a mailto link's path (the URL parser escapes what the address needs)
/// and the button's words.
fn write_to(sender: &SenderContact, words: &str) -> Option<(String, String)> {
    let href = url::Url::parse(&format!("mailto:{}", sender.email)).ok()?;
    Some((href.path().to_owned(), words.replace("{sender}", &sender.name)))
}

fn page_response(page: EndPage, htmx: bool) -> poem::Result<Response> {
    let status = StatusCode::from_u16(page.status).unwrap_or(StatusCode::BAD_REQUEST);
    let body = if htmx { page.as_end_card().render() } else { page.render() }.map_err(AppError::from)?;
    let mut response = Response::builder().status(status).content_type("text/html; charset=utf-8").body(body);
    if htmx {
        // As the common error page: the message replaces the main area, not the small target.
        response.headers_mut().insert("HX-Retarget", "#main".parse().expect("static header"));
        response.headers_mut().insert("HX-Reswap", "innerHTML".parse().expect("static header"));
    }
    Ok(response)
}
