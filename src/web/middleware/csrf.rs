//! CSRF guard and form body cap for every state-changing request: the browser must not say it
//! came from another site, and the session's (or anonymous form's) token must come back in the form field
//! `csrf_token` or the `X-CSRF-Token` header (HTMX, and the tus endpoint, whose body is never read
//! here). Refused requests change nothing: the handler never runs. A recipient's link form refused
//! for its token gets a page in the recipient's words (`AppError::LinkFormRefused`); sender pages
//! keep theirs.

use std::sync::Arc;

use poem::{Endpoint, IntoResponse, Request, Response, error::ReadBodyError, http::Method};

use super::SessionHandle;
use crate::{session::origin_is_allowed, web::AppError};

/// Largest body of an ordinary form. Only the upload route takes more, and checks its own token.
pub const FORM_BODY_LIMIT: usize = 64 * 1024;

/// Routes whose multipart body is streamed by the handler, which checks the token itself: the
/// new-share form, and a file request's upload form below its link (`/s/{token}/upload`).
fn is_streamed_upload(path: &str) -> bool {
    path == "/shares/new" || (is_link_form(path) && path.ends_with("/upload") && path.matches('/').count() == 3)
}

/// Routes for machines that authenticate every request with a bearer token and use no cookie,
/// so a forged cross-site request carries no credential (and the API's, below `/api/`, whose
/// session layer reads no cookie at all).
const BEARER_PATHS: [&str; 1] = ["/maintenance/runs"];

/// A sender's tus call carrying a bearer token: the endpoint then checks the token alone and
/// reads no session, so a forged cross-site request (which cannot set `Authorization`) has no
/// credential to borrow.
fn is_bearer_upload(req: &Request) -> bool {
    let path = req.uri().path();
    (path == "/uploads" || path.starts_with("/uploads/")) && crate::web::uploads::bearer_header(req).is_some()
}

/// A form below a share link (`/s/{token}/…`): the recipient's.
fn is_link_form(path: &str) -> bool {
    let mut segments = path.split('/').skip(1);
    segments.next() == Some("s") && segments.next().is_some() && segments.next().is_some()
}

pub async fn csrf_guard<E: Endpoint>(ep: Arc<E>, mut req: Request, our_origin: Arc<str>) -> poem::Result<Response> {
    if matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS) {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    if BEARER_PATHS.contains(&req.uri().path())
        || crate::web::api::is_api_path(req.uri().path())
        || is_bearer_upload(&req)
    {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    if !origin_is_allowed(req.header("sec-fetch-site"), req.header("origin"), &our_origin) {
        return Err(AppError::Forbidden("cross-site request").into());
    }
    let streamed = is_streamed_upload(req.uri().path())
        && req.header("content-type").is_some_and(|ct| ct.starts_with("multipart/form-data"));
    if streamed {
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    // The tus endpoint's bodies are file bytes, streamed by the handler: the token is in the header.
    if crate::web::uploads::is_tus_path(req.uri().path()) {
        let handle = req.extensions().get::<SessionHandle>();
        let valid = match (handle, req.header("x-csrf-token")) {
            (Some(handle), Some(token)) => handle.accepts_csrf_token(token),
            _ => false,
        };
        if !valid {
            return Err(AppError::Forbidden("missing or wrong CSRF token").into());
        }
        return ep.call(req).await.map(IntoResponse::into_response);
    }
    let body = req.take_body().into_bytes_limit(FORM_BODY_LIMIT).await.map_err(|e| match e {
        ReadBodyError::PayloadTooLarge => AppError::TooLarge,
        _ => AppError::BadRequest("unreadable body"),
    })?;
    let submitted = match req.header("x-csrf-token") {
        Some(token) => Some(token.to_owned()),
        None => {
            url::form_urlencoded::parse(&body).find(|(key, _)| key == "csrf_token").map(|(_, value)| value.into_owned())
        }
    };
    let handle = req.extensions().get::<SessionHandle>();
    let valid = match (handle, submitted) {
        (Some(handle), Some(token)) => handle.accepts_csrf_token(&token),
        _ => false,
    };
    if !valid && is_link_form(req.uri().path()) {
        let cookies_sent = handle.is_some_and(SessionHandle::sent_cookies);
        return Err(AppError::LinkFormRefused { cookies_sent }.into());
    }
    if !valid {
        return Err(AppError::Forbidden("missing or wrong CSRF token").into());
    }
    req.set_body(body);
    ep.call(req).await.map(IntoResponse::into_response)
}
