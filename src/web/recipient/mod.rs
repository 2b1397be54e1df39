//! The recipient's pages: a share link identifies the share; the email step sends a code only to
//! the registered address (the answer is the same whatever was typed); the code step earns a
//! grant on a regenerated session; the download is a POST that serves the file the share names.

mod file;
mod mail;

pub use file::content_disposition;

use std::time::Duration;

use askama::Template;
use poem::{
    IntoResponse, Request, Response, handler,
    web::{Data, Form, Html, Path},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome,
    middleware::{ClientAddr, SessionHandle, is_htmx},
    see_other,
};
use crate::{
    accounts::EmailAddress,
    i18n::{Lang, format},
    otp::CodeOutcome,
    ratelimit::Limit,
    session::Session,
    share::{EventKind, Share, ShareError, ShareStatus},
};

/// Address submissions and "send a new code" per browser session and share: a person who mistypes
/// gets at least three in a row. Matched or not, every request counts the same, so the limit itself
/// reveals nothing; a refused one counts nothing, and a new link or an unlock starts afresh.
const PER_SESSION: [Limit; 2] =
    [Limit::new(3, Duration::from_secs(10 * 60)), Limit::new(10, Duration::from_secs(24 * 3600))];
/// The same requests per client address, across shares and sessions: high enough that an office
/// behind one NAT address never meets it, low enough to stop one machine cycling sessions.
const PER_CLIENT: [Limit; 1] = [Limit::new(200, Duration::from_secs(3600))];

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

/// Resolves the token or answers the one common "not available" page; the reason goes to the log.
async fn open_share(state: &AppState, token: &str) -> Result<Share, AppError> {
    match state.shares.open(token).await {
        Ok(share) if share.status == ShareStatus::Active => Ok(share),
        Ok(_) => Err(AppError::AlreadyDownloaded),
        Err(ShareError::Malformed) => Err(AppError::NotAvailable("malformed token")),
        Err(ShareError::NotAvailable) => Err(AppError::NotAvailable("unknown or expired token")),
        Err(error) => Err(share_error(error)),
    }
}

fn share_error(error: ShareError) -> AppError {
    match error {
        ShareError::Database(e) => e.into(),
        other => AppError::Internal(other.into()),
    }
}

/// The session of a form post (the CSRF guard already checked its token), started now if the
/// form was shown without one.
async fn posted_session(session: &SessionHandle) -> Result<Session, AppError> {
    session.ensure().await
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
    poem::web::Query(query): poem::web::Query<StepQuery>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    let share = open_share(&state, &token).await?;
    state.events.record_collapsed(share.id, EventKind::Opened).await;
    // No session is started for a visit: only an address submission has something to remember.
    let current = session.current();
    if let Some(current) = &current
        && state.shares.grants.is_granted(current, share.id).await?
    {
        return download_step(&state, req, &token, &share, current).await;
    }
    if share.locked {
        return Err(AppError::ShareLocked);
    }
    let wants_email = query.step.as_deref() == Some("email");
    let step = match &current {
        Some(current) if !wants_email && state.codes.has_live_code(share.id, current.id).await? => Step::Code,
        _ => Step::Email,
    };
    render_step(req, &token, &share, &session.form_token(), step, StepExtras::default())
}

async fn download_step(
    state: &AppState,
    req: &Request,
    token: &str,
    share: &Share,
    session: &Session,
) -> Result<Response, AppError> {
    let lang = req.extensions().get::<Lang>().copied().unwrap_or_default();
    let file = state.shares.links.repo().file_of(share).await?.ok_or(AppError::AlreadyDownloaded)?;
    let view =
        FileView { name: file.original_name, size: format::human_size(file.size_bytes, lang), sha256: file.sha256 };
    let extras = StepExtras { file: Some(view), ..Default::default() };
    render_step(req, token, share, &session.csrf_secret, Step::Download, extras)
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
    let (share, session) = code_request(&state, &token, &session, client.0.0).await?;
    let matches = EmailAddress::parse(&form.email).is_ok_and(|typed| typed.as_str() == share.recipient_email);
    issue_code(&state, req, &share, &session, client.0.0, matches).await?;
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
    let (share, session) = code_request(&state, &token, &session, client.0.0).await?;
    let mailed = state.codes.latest_mailed(share.id, session.id).await?.unwrap_or(false);
    issue_code(&state, req, &share, &session, client.0.0, mailed).await?;
    render_step(req, &token, &share, &session.csrf_secret, Step::Code, StepExtras::default())
}

/// Makes the session's new challenge and, when it is to be mailed, sends its code in the
/// background: the answer never waits for (or depends on) the mail.
async fn issue_code(
    state: &AppState,
    req: &Request,
    share: &Share,
    session: &Session,
    client: std::net::IpAddr,
    mailed: bool,
) -> Result<(), AppError> {
    let code = state.codes.issue(share.id, session.id, mailed).await?;
    tracing::info!(share_id = share.id, %client, session = session_ref(session), mailed, "code requested");
    if let Some(code) = code {
        mail::spawn_code_mail(state, share, code, request_lang(req));
    }
    Ok(())
}

/// What every request for a code goes through: an open, unlocked share, a session, and the limits.
async fn code_request(
    state: &AppState,
    token: &str,
    session: &SessionHandle,
    client: std::net::IpAddr,
) -> Result<(Share, Session), AppError> {
    let share = open_share(state, token).await?;
    let session = posted_session(session).await?;
    if share.locked {
        return Err(AppError::ShareLocked);
    }
    let session_bucket = format!("{}session:{}", share_code_limits(share.id), session.id);
    let per_session = state.limiter.hit(&session_bucket, &PER_SESSION).await?;
    let per_client = match per_session {
        Ok(()) => state.limiter.hit(&format!("code-request:client:{client}"), &PER_CLIENT).await?,
        Err(retry) => Err(retry),
    };
    match per_client {
        Ok(()) => Ok((share, session)),
        Err(retry) => Err(AppError::TooMany { reason: "code requests", retry_after: retry.0 }),
    }
}

/// The rate-limit buckets of the code step that belong to one share's current link (cleared with a
/// new link or an unlock); `mail::MAILS_PER_SHARE` counts under it too. Every bucket of a share
/// starts with `share:{id}:`, which is how an account's deletion finds them.
pub fn share_code_limits(share_id: i64) -> String {
    format!("share:{share_id}:code:")
}

/// A short, stable reference to the session for the log: a prefix of its cookie's hash, which
/// neither is the cookie nor leads to it.
fn session_ref(session: &Session) -> &str {
    &session.id_hash[..12]
}

fn request_lang(req: &Request) -> Lang {
    req.extensions().get::<Lang>().copied().unwrap_or_default()
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
    let share = open_share(&state, &token).await?;
    let session = posted_session(&session_handle).await?;
    let t = request_lang(req).text();
    let outcome = state.codes.verify(share.id, session.id, &form.code).await?;
    let (share_id, client, session_ref) = (share.id, client.0.0, session_ref(&session));
    let extras = match outcome {
        CodeOutcome::Verified => {
            let renewed = session_handle.regenerate().await?;
            state.shares.grant_after_verification(&share, renewed.id, &outcome).await.map_err(share_error)?;
            state.events.record_quietly(share.id, EventKind::Verified).await;
            tracing::info!(share_id, %client, session = session_ref, "code verified; session regenerated and granted");
            if is_htmx(req) {
                return download_step(&state, req, &token, &share, &renewed).await;
            }
            return Ok(see_other(&format!("/s/{token}")));
        }
        CodeOutcome::Wrong { tries_left } => {
            state.events.record_quietly(share.id, EventKind::CodeFailed).await;
            tracing::info!(share_id, %client, session = session_ref, tries_left, "wrong code");
            StepExtras { error: Some(t.code_wrong), tries_left: Some(tries_left), file: None }
        }
        CodeOutcome::Malformed => StepExtras { error: Some(t.code_malformed), ..Default::default() },
        CodeOutcome::NoLiveCode => {
            tracing::info!(share_id, %client, session = session_ref, "code tried with no live challenge");
            StepExtras { error: Some(t.code_dead), ..Default::default() }
        }
        CodeOutcome::Locked { now } => {
            if now {
                state.events.record_quietly(share.id, EventKind::CodeFailed).await;
                state.events.record_quietly(share.id, EventKind::Locked).await;
                tracing::warn!(share_id, %client, session = session_ref, "share locked after too many wrong codes");
            }
            return Err(AppError::ShareLocked);
        }
    };
    render_step(req, &token, &share, &session.csrf_secret, Step::Code, extras)
}

/// POST /s/{token}/download: resolve again, check this session's grant, serve the file the share
/// row names. Nothing in the request chooses the file.
#[handler]
pub async fn download(
    Path(token): Path<String>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
) -> Result<Response, AppError> {
    let session = session.current();
    let share = match state.shares.authorize_download(&token, session.as_ref()).await {
        Ok(share) => share,
        Err(ShareError::NotGranted) => {
            if let Ok(share) = state.shares.open(&token).await {
                state.events.record_collapsed(share.id, EventKind::Refused).await;
            }
            return Err(AppError::VerifyFirst);
        }
        Err(ShareError::Malformed | ShareError::NotAvailable) => {
            return Err(AppError::NotAvailable("download of an unavailable share"));
        }
        Err(error) => return Err(share_error(error)),
    };
    let file = state.shares.links.repo().file_of(&share).await?.ok_or(AppError::AlreadyDownloaded)?;
    // Opened before the claim, so a file that cannot be read never uses up the one download.
    let opened = match state.store.open(&file.storage_key).await {
        Ok(opened) => opened,
        Err(crate::lifecycle::StoreError::NotFound) => return Err(AppError::AlreadyDownloaded),
        Err(error) => return Err(AppError::Internal(error.into())),
    };
    // The claim commits on its own before the first byte; the share id comes only from the
    // authorisation. Losing it means someone else already downloaded the file.
    if !state.lifecycle.mark_consumed(share.id).await? {
        state.events.record_collapsed(share.id, EventKind::Refused).await;
        return Err(AppError::AlreadyDownloaded);
    }
    state.events.record_quietly(share.id, EventKind::Downloaded).await;
    mail::spawn_download_receipt(&state, share.id);
    Ok(file::file_response(opened, &file.original_name))
}
