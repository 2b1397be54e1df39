//! The recipient's pages: a share link identifies the share; the email step sends a code only to
//! the registered address (the answer is the same whatever was typed); the code step earns a
//! grant on a regenerated session; the download is a POST that claims the share and answers 303
//! to the file (or, for a handover of several files, to the ZIP archive of them all or to the one
//! file its button names), which only the claiming session may then GET (in ranges, to resume;
//! `serve`). The other
//! form posts answer 303 to the link (htmx gets the step itself): the step lives in the session,
//! so a reload shows it again and sends nothing. The rules live in [`crate::services::handover`];
//! these handlers parse, call it, and render.

mod ends;
pub(super) mod file;
mod note;
mod page;
pub(super) mod range;
mod reply;
mod serve;
mod tally;
mod upload;

pub use ends::recipient_refusals;
pub use file::content_disposition;

use std::net::IpAddr;

use poem::{
    EndpointExt, Request, Response, Route, get, handler, post,
    web::{Data, Path},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Context,
    form::Form,
    middleware::{SessionHandle, is_htmx},
    paths, see_other,
};
use crate::{
    i18n::Lang,
    services::handover::{Asked, Checked, Refusal, Step, Visit},
    session::Session,
    share::Share,
};

/// The recipient's link and its steps, each answering its own refusal (see `ends`).
pub fn routes(route: Route) -> Route {
    route
        .at("/s/:token", get(landing).around(recipient_refusals))
        .at("/s/:token/email", post(request_code).around(recipient_refusals))
        .at("/s/:token/code", post(submit_code).around(recipient_refusals))
        .at("/s/:token/code/new", post(resend_code).around(recipient_refusals))
        .at("/s/:token/address", post(other_address).around(recipient_refusals))
        .at("/s/:token/download", post(download).around(recipient_refusals))
        .at("/s/:token/file", get(serve::claimed_file).head(serve::claimed_file).around(recipient_refusals))
        .at("/s/:token/note", post(note::claim).get(note::show).around(recipient_refusals))
        .at("/s/:token/upload", post(upload::upload).around(recipient_refusals))
        .at("/s/:token/files/:position/remove", post(upload::remove).around(recipient_refusals))
        .at("/s/:token/finish", post(upload::finish).around(recipient_refusals))
        .at("/s/:token/reply", post(reply::reply).around(recipient_refusals))
        .at(
            "/s/:token/files/:position",
            post(download_one).get(serve::claimed_one).head(serve::claimed_one).around(recipient_refusals),
        )
}

/// The page a refusal answers with; the reason goes to the log only.
fn refusal(refusal: Refusal) -> AppError {
    match refusal {
        Refusal::NotAvailable(reason) => AppError::NotAvailable(reason),
        Refusal::AlreadyDownloaded => AppError::AlreadyDownloaded,
        Refusal::AlreadyAnswered => AppError::AlreadyAnswered,
        Refusal::Locked => AppError::ShareLocked,
        Refusal::VerifyFirst => AppError::VerifyFirst,
        Refusal::BeingChecked => AppError::BeingChecked,
        Refusal::Damaged => AppError::FileDamaged,
        Refusal::NoteUnreadable => AppError::NoteUnreadable,
        Refusal::Fault(fault) => fault.into(),
    }
}

/// The session of a form post (the CSRF guard already checked its token), started now if it had
/// none, but only for a link that still opens: a post to a dead link stores nothing.
async fn posted_session(state: &AppState, token: &str, session: &SessionHandle) -> Result<Session, AppError> {
    if let Some(current) = session.current() {
        return Ok(current);
    }
    state.services.handover.open(token).await.map_err(refusal)?;
    session.ensure().await
}

fn request_lang(req: &Request) -> Lang {
    req.extensions().get::<Lang>().copied().unwrap_or_default()
}

/// The answer to a form post: for a plain form, 303 to the link, whose page shows the step this
/// session is now at (so a reload shows it again and re-sends nothing); for htmx, that step.
async fn show_step(
    req: &Request,
    state: &AppState,
    token: &str,
    share: &Share,
    session: &Session,
    client: IpAddr,
) -> Result<Response, AppError> {
    if !is_htmx(req) {
        return Ok(see_other(&paths::link(token)));
    }
    let step = state.services.handover.step_of(share, Some(session), client).await.map_err(refusal)?;
    let reply = reply_shown(state, token, Some(session), &step).await?;
    page::render_step(req, token, share, &session.csrf_secret, step, reply)
}

/// GET /s/{token}: says a file is waiting and from whom, then shows the step this browser is at.
#[handler]
pub async fn landing(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    // No session is started for a visit: only an address submission has something to remember.
    let (share, step) = state
        .services
        .handover
        .visit(&token, session.current().as_ref(), client, visit_of(req))
        .await
        .map_err(refusal)?;
    let reply = reply_shown(state, &token, session.current().as_ref(), &step).await?;
    page::render_step(req, &token, &share, &session.form_token(), step, reply)
}

/// The reply button belongs to the download step only.
async fn reply_shown(
    state: &AppState,
    token: &str,
    session: Option<&Session>,
    step: &Step,
) -> Result<reply::ReplyShown, AppError> {
    match step {
        Step::Download(_) => reply::shown(state, token, session).await,
        _ => Ok(reply::ReplyShown::default()),
    }
}

/// A browser navigating to the page says so in its Fetch Metadata; a link previewer does not.
fn visit_of(req: &Request) -> Visit {
    let says = |name: &str, value: &str| {
        req.headers().get(name).is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value.as_bytes()))
    };
    if says("sec-fetch-mode", "navigate") && says("sec-fetch-dest", "document") {
        Visit::Navigation
    } else {
        Visit::Other
    }
}

#[derive(Deserialize)]
pub struct EmailForm {
    #[serde(default)]
    email: String,
}

/// POST /s/{token}/email: the same answer whatever was typed, and the same state afterwards: a
/// challenge is made either way, but only a matched one has a code, mailed in the background to
/// the registered address.
#[handler]
pub async fn request_code(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
    Form(form): Form<EmailForm>,
) -> Result<Response, AppError> {
    let session = posted_session(state, &token, session).await?;
    let handover = &state.services.handover;
    let share =
        handover.request_code(&token, &session, client, &form.email, request_lang(req)).await.map_err(refusal)?;
    show_step(req, state, &token, &share, &session, client).await
}

/// POST /s/{token}/code/new: the same code again while it works, else a fresh challenge, mailed
/// only if this browser gave the right address; the step then says a code was sent, or, with the
/// code requests used up, when to ask again.
#[handler]
pub async fn resend_code(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let session = posted_session(state, &token, session).await?;
    let handover = &state.services.handover;
    let share = handover.resend_code(&token, &session, client, request_lang(req)).await.map_err(refusal)?;
    show_step(req, state, &token, &share, &session, client).await
}

/// POST /s/{token}/address: "use a different address" takes this browser back to the email step
/// (a form, not a link: a reload of a link would send it back there every time).
#[handler]
pub async fn other_address(
    Context { state, session, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
) -> Result<Response, AppError> {
    let session = posted_session(state, &token, session).await?;
    let share = state.services.handover.use_other_address(&token, &session).await.map_err(refusal)?;
    show_step(req, state, &token, &share, &session, client).await
}

#[derive(Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    code: String,
}

/// POST /s/{token}/code: a right code regenerates the session id, then grants this share to it.
#[handler]
pub async fn submit_code(
    Context { state, session: session_handle, client, req, .. }: Context<'_>,
    Path(token): Path<String>,
    Form(form): Form<CodeForm>,
) -> Result<Response, AppError> {
    let session = posted_session(state, &token, session_handle).await?;
    let handover = &state.services.handover;
    let (share, checked) = handover.check_code(&token, &session, client, &form.code).await.map_err(refusal)?;
    let Checked::Verified(proof) = checked else {
        // What was wrong is left for the code step to say.
        return show_step(req, state, &token, &share, &session, client).await;
    };
    // The handle moves to the new session (and its cookie) before the grant names it.
    let renewed = session_handle.regenerate().await?;
    handover.grant(&share, proof, &renewed, client).await.map_err(refusal)?;
    show_step(req, state, &token, &share, &renewed, client).await
}

/// POST /s/{token}/download: checks this session's grant again and claims the share for it, then
/// sends the browser to everything it hands over (a form POST that answers 303 still downloads
/// without JavaScript). Nothing in the request chooses the share: the link names it.
#[handler]
pub async fn download(
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    claim_then(&state, &session, &token, Asked::All, &paths::link_file(&token)).await
}

/// POST /s/{token}/files/{position}: the same claim, sending the browser to one file of several.
#[handler]
pub async fn download_one(
    Path((token, position)): Path<(String, i32)>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    claim_then(&state, &session, &token, Asked::File(position), &paths::link_file_at(&token, position)).await
}

/// Checks this session's grant again, claims the share for it (the claimer asking again is no
/// second claim), and sends the browser to `then`, where it fetches what it asked for.
async fn claim_then(
    state: &AppState,
    session: &SessionHandle,
    token: &str,
    asked: Asked,
    then: &str,
) -> Result<Response, AppError> {
    state.services.handover.download(token, session.current().as_ref(), asked).await.map_err(refusal)?;
    Ok(see_other(then))
}
