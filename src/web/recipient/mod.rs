//! The recipient's pages: a share link identifies the share; the email step sends a code only to
//! the registered address (the answer is the same whatever was typed); the code step earns a
//! grant on a regenerated session; the download is a POST that claims the share and answers 303
//! to the file, which only the claiming session may then GET (in ranges, to resume).
//! The rules live in [`crate::services::handover`]; these handlers parse, call it, and render.

mod file;
mod range;
mod tally;

pub use file::content_disposition;

use askama::Template;
use poem::{
    Body, IntoResponse, Request, Response, handler,
    http::{Method, header},
    web::{Data, Form, Html, Path, Query},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome,
    middleware::{ClientAddr, SessionHandle, is_htmx},
    see_other,
};
use crate::{
    i18n::{Lang, format},
    services::handover::{self, Checked, Fetch, Refusal},
    session::Session,
    share::{FileInfo, Share},
};

/// Which step of the flow the page shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Email,
    Code,
    Download,
}

impl Step {
    pub fn name(&self) -> &'static str {
        match self {
            Step::Email => "email",
            Step::Code => "code",
            Step::Download => "download",
        }
    }
}

/// The file as the download step shows it.
pub struct FileView {
    pub name: String,
    pub size: String,
    pub sha256: String,
}

#[derive(Template)]
#[template(path = "recipient/share.html", blocks = ["step"])]
struct SharePage<'a> {
    c: Chrome,
    step: Step,
    sender_name: &'a str,
    base_path: String,
    csrf_token: &'a str,
    error: Option<&'static str>,
    tries_left: Option<i32>,
    file: Option<FileView>,
    message: &'a str,
    expires: String,
}

/// What the step shows besides the share itself.
#[derive(Default)]
struct StepExtras {
    error: Option<&'static str>,
    tries_left: Option<i32>,
    file: Option<FileView>,
}

impl StepExtras {
    /// The download step's file, sized in the visitor's language.
    fn download(file: FileInfo, lang: Lang) -> Self {
        let size = format::human_size(file.size_bytes, lang);
        let view = FileView { name: file.original_name, size, sha256: file.sha256 };
        Self { file: Some(view), ..Default::default() }
    }
}

fn render_step(
    req: &Request,
    token: &str,
    share: &Share,
    csrf_token: &str,
    step: Step,
    extras: StepExtras,
) -> Result<Response, AppError> {
    let c = Chrome::for_request(req);
    let lang = c.lang;
    let page = SharePage {
        c,
        step,
        sender_name: &share.sender_name,
        base_path: format!("/s/{token}"),
        csrf_token,
        error: extras.error,
        tries_left: extras.tries_left,
        file: extras.file,
        message: &share.message,
        expires: format::human_time(share.expires_at, lang),
    };
    let html = if is_htmx(req) { page.as_step().render()? } else { page.render()? };
    Ok(Html(html).into_response())
}

/// The page a refusal answers with; the reason goes to the log only.
fn refusal(refusal: Refusal) -> AppError {
    match refusal {
        Refusal::NotAvailable(reason) => AppError::NotAvailable(reason),
        Refusal::AlreadyDownloaded => AppError::AlreadyDownloaded,
        Refusal::Locked => AppError::ShareLocked,
        Refusal::VerifyFirst => AppError::VerifyFirst,
        Refusal::TooMany(retry_after) => AppError::TooMany { reason: "code requests", retry_after },
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

#[derive(Deserialize)]
pub struct StepQuery {
    step: Option<String>,
}

/// GET /s/{token}: says a file is waiting and from whom, then shows the step this browser is at.
#[handler]
pub async fn landing(
    req: &Request,
    Path(token): Path<String>,
    Query(query): Query<StepQuery>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    let wants_email = query.step.as_deref() == Some("email");
    // No session is started for a visit: only an address submission has something to remember.
    let (share, step) =
        state.services.handover.visit(&token, session.current().as_ref(), wants_email).await.map_err(refusal)?;
    let (step, extras) = match step {
        handover::Step::Email => (Step::Email, StepExtras::default()),
        handover::Step::Code => (Step::Code, StepExtras::default()),
        handover::Step::Download(file) => (Step::Download, StepExtras::download(file, request_lang(req))),
    };
    render_step(req, &token, &share, &session.form_token(), step, extras)
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
    req: &Request,
    Path(token): Path<String>,
    Form(form): Form<EmailForm>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let session = posted_session(&state, &token, &session).await?;
    let handover = &state.services.handover;
    let share =
        handover.request_code(&token, &session, client.0.0, &form.email, request_lang(req)).await.map_err(refusal)?;
    render_step(req, &token, &share, &session.csrf_secret, Step::Code, StepExtras::default())
}

/// POST /s/{token}/code/new: a fresh challenge, mailed only if this browser gave the right address.
#[handler]
pub async fn resend_code(
    req: &Request,
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let session = posted_session(&state, &token, &session).await?;
    let handover = &state.services.handover;
    let share = handover.resend_code(&token, &session, client.0.0, request_lang(req)).await.map_err(refusal)?;
    render_step(req, &token, &share, &session.csrf_secret, Step::Code, StepExtras::default())
}

#[derive(Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    code: String,
}

/// POST /s/{token}/code: a right code regenerates the session id, then grants this share to it.
#[handler]
pub async fn submit_code(
    req: &Request,
    Path(token): Path<String>,
    Form(form): Form<CodeForm>,
    state: Data<&AppState>,
    session_handle: Data<&SessionHandle>,
    client: Data<&ClientAddr>,
) -> Result<Response, AppError> {
    let session = posted_session(&state, &token, &session_handle).await?;
    let (handover, client, lang) = (&state.services.handover, client.0.0, request_lang(req));
    let (share, checked) = handover.check_code(&token, &session, client, &form.code).await.map_err(refusal)?;
    let t = lang.text();
    let extras = match checked {
        Checked::Verified(proof) => {
            // The handle moves to the new session (and its cookie) before the grant names it.
            let renewed = session_handle.regenerate().await?;
            handover.grant(&share, proof, &renewed, client).await.map_err(refusal)?;
            if !is_htmx(req) {
                return Ok(see_other(&format!("/s/{token}")));
            }
            let file = handover.file_of(&share).await.map_err(refusal)?;
            let extras = StepExtras::download(file, lang);
            return render_step(req, &token, &share, &renewed.csrf_secret, Step::Download, extras);
        }
        Checked::Wrong { tries_left } => {
            StepExtras { error: Some(t.code_wrong), tries_left: Some(tries_left), file: None }
        }
        Checked::Malformed => StepExtras { error: Some(t.code_malformed), ..Default::default() },
        Checked::NoLiveCode => StepExtras { error: Some(t.code_dead), ..Default::default() },
    };
    render_step(req, &token, &share, &session.csrf_secret, Step::Code, extras)
}

/// POST /s/{token}/download: checks this session's grant again and claims the share for it, then
/// sends the browser to the file (a form POST that answers 303 still downloads without
/// JavaScript). Nothing in the request chooses the file: the share row names it.
#[handler]
pub async fn download(
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    state.services.handover.download(&token, session.current().as_ref()).await.map_err(refusal)?;
    Ok(see_other(&format!("/s/{token}/file")))
}

/// GET and HEAD /s/{token}/file: the claimed file, whole or one range, for the claiming session
/// during the delivery grace; a share not claimed yet goes to its landing page (a GET never
/// claims). HEAD says the same and sends, and records, nothing.
#[handler]
pub async fn claimed_file(
    req: &Request,
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    let claimed = match state.services.handover.fetch(&token, session.current().as_ref()).await.map_err(refusal)? {
        Fetch::Claimed(claimed) => claimed,
        Fetch::NotClaimed => return Ok(see_other(&format!("/s/{token}"))),
    };
    let size = u64::try_from(claimed.size_bytes).unwrap_or(0);
    let header_of = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let part = range::choose(header_of(header::RANGE), header_of(header::IF_RANGE), &file::etag(&claimed), size);
    let Some((start, len)) = part.span(size) else { return Ok(file::unsatisfiable(&claimed)) };
    let deliveries = &state.services.deliveries;
    let opened = deliveries.open(&claimed, start, len).await.map_err(refusal)?;
    if req.method() == Method::HEAD {
        return Ok(file::file_response(&claimed, part, Body::empty()));
    }
    let body = tally::tallied(file::stream(opened), deliveries.clone(), claimed.clone(), start);
    Ok(file::file_response(&claimed, part, body))
}
