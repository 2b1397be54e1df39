//! The refusal the recipient's pages answer themselves, because only they know the link and the
//! browser: "already downloaded" (410) tells the browser that downloaded when it did and everyone
//! else to contact the sender. (Used-up code requests are a step of the link's page, not an
//! error.) Every other error goes on to the common error page.

use std::sync::Arc;

use askama::Template;
use poem::{Endpoint, IntoResponse, Request, Response, http::StatusCode};

use super::super::{AppError, AppState, Chrome, middleware::SessionHandle, middleware::is_htmx, paths};
use crate::i18n::format;

#[derive(Template)]
#[template(path = "recipient/end.html", blocks = ["end_card"])]
struct EndPage {
    c: Chrome,
    status: u16,
    title: &'static str,
    body: String,
    /// Where the button leads, and what it says.
    back: (String, &'static str),
}

/// Around each recipient route: turns that refusal into its page.
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
    let (rf, t, lang) = (&chrome.t.recipient, chrome.t, chrome.lang);
    let page = match error.downcast_ref::<AppError>() {
        Some(AppError::AlreadyDownloaded) => {
            let Some(state) = state else { return Err(error) };
            let session = session.and_then(|s| s.current());
            let at = state.services.handover.downloaded_at(&token, session.as_ref()).await.map_err(super::refusal)?;
            let body = match at {
                Some(at) => rf.downloaded_here.replace("{time}", &format::human_time(at, lang)),
                None => rf.downloaded_elsewhere.to_owned(),
            };
            tracing::info!(status = 410, downloaded_here = at.is_some(), "request refused: already downloaded");
            let back = (paths::HOME.to_owned(), t.errors.back_home);
            EndPage { c: chrome, status: 410, title: rf.downloaded_title, body, back }
        }
        _ => return Err(error),
    };
    page_response(page, htmx)
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
