//! The sender's file requests: the list with a form to ask someone for files, one request's page
//! (who answered, their note, what arrived with its digests, the timeline), each file or all as
//! the streamed ZIP, as often as needed until the retention ends, and "Delete now". A request the
//! viewer may not see answers 404, exactly like one that does not exist. The rules live in
//! [`crate::services::requests`].

use std::time::Duration;

use askama::Template;
use poem::{
    Response, Route, get, handler, post,
    web::{Data, Html, Path},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, Context, SignedIn,
    arrived::{self, Unserved},
    form::Form,
    render, see_other,
};
use crate::{
    accounts::EmailAddress,
    config::{format_duration, parse_duration},
    i18n::{
        RequestText,
        format::{Reader, human_size, human_time},
    },
    request::{RequestLimits, RequestListing, RequestState},
    services::{
        handover::Refusal,
        mails::Delivery,
        requests::{FileRequest, RequestError},
        sharing::{Change, viewer},
    },
    share::{EventKind, Message, ShareTtl},
};

/// Requests the list shows.
const LISTED: i64 = 50;
/// The validities the form offers, within the instance's longest.
const EXPIRY_CHOICES: [&str; 4] = ["1d", "3d", "7d", "14d"];

pub fn routes(route: Route) -> Route {
    route
        .at("/requests", get(list).post(create))
        .at("/requests/:id", get(show))
        .at("/requests/:id/files/:position", get(one_file))
        .at("/requests/:id/archive", get(archive))
        .at("/requests/:id/delete", post(delete_now))
        .at("/requests/:id/unlock", post(unlock))
}

fn not_visible() -> AppError {
    AppError::NotFound("request not visible to this sender")
}

/// A request as a row or a page shows it.
struct RequestRow {
    id: i64,
    uploader: String,
    state: &'static str,
    state_text: &'static str,
    created: String,
    files: usize,
}

fn state_text(rq: &RequestText, state: RequestState) -> &'static str {
    match state {
        RequestState::Open => rq.state_open,
        RequestState::Answered => rq.state_answered,
        RequestState::Expired => rq.state_expired,
        RequestState::Ended => rq.state_ended,
        RequestState::Purged => rq.state_purged,
    }
}

fn row(c: &Chrome, request: &RequestListing) -> RequestRow {
    RequestRow {
        id: request.id,
        uploader: request.uploader_email.clone(),
        state: request.state.code(),
        state_text: state_text(&c.t.request, request.state),
        created: human_time(request.created_at, c.reader()),
        files: request.files.len(),
    }
}

#[derive(Template)]
#[template(path = "dashboard/requests.html")]
struct RequestsPage {
    c: Chrome,
    rows: Vec<RequestRow>,
    csrf_token: String,
    expiry: Vec<(&'static str, String)>,
    error: Option<String>,
}

/// The validities offered (the code the form posts, and how it reads), within `max`.
fn expiry_choices(max: Duration) -> Vec<(&'static str, String)> {
    EXPIRY_CHOICES
        .iter()
        .filter_map(|code| Some((*code, parse_duration(code).ok().filter(|d| *d <= max)?)))
        .map(|(code, duration)| (code, format_duration(duration)))
        .collect()
}

async fn requests_page(
    c: Chrome,
    state: &AppState,
    user: &crate::accounts::User,
    csrf_token: String,
    error: Option<String>,
) -> Result<RequestsPage, AppError> {
    let requests = state.services.requests.list(viewer(user), LISTED).await?;
    let rows = requests.iter().map(|r| row(&c, r)).collect();
    let expiry = expiry_choices(state.config.settings.share_ttl_max);
    Ok(RequestsPage { c, rows, csrf_token, expiry, error })
}

/// GET /requests: the viewer's requests, newest first, and the form to make one.
#[handler]
pub async fn list(
    Context { c, state, session, .. }: Context<'_>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    render(&requests_page(c, state, &user, session.form_token(), None).await?)
}

#[derive(Deserialize)]
pub struct RequestForm {
    #[serde(default)]
    uploader: String,
    #[serde(default)]
    message: String,
    #[serde(default)]
    expires_in: String,
    #[serde(default)]
    max_files: String,
}

/// POST /requests: asks the uploader for files (the link goes to them by mail) and shows the
/// request; a field that does not parse comes back on the list with what was wrong.
#[handler]
pub async fn create(
    Context { c, state, session, .. }: Context<'_>,
    SignedIn(user): SignedIn,
    Form(form): Form<RequestForm>,
) -> Result<Response, AppError> {
    let settings = &state.config.settings;
    let parsed = (|| {
        let uploader =
            EmailAddress::parse(&form.uploader).map_err(|e| format!("{}: {e}", c.t.request.uploader_label))?;
        let message = Message::parse(&form.message).map_err(|e| e.to_string())?;
        let ttl = parse_duration(&form.expires_in).unwrap_or(settings.share_ttl);
        let ttl = ShareTtl::parse(ttl, settings.share_ttl_max).map_err(|e| e.to_string())?;
        let files = form.max_files.trim().parse().ok();
        let limits = RequestLimits::parse(files, None, None, settings.max_upload_bytes).map_err(|e| e.to_string())?;
        Ok::<_, String>(FileRequest { uploader, message, ttl, limits, lang: user.lang })
    })();
    let request = match parsed {
        Ok(request) => request,
        Err(error) => {
            let page = requests_page(c, state, &user, session.form_token(), Some(error)).await?;
            return super::render_with(poem::http::StatusCode::UNPROCESSABLE_ENTITY, &page);
        }
    };
    match state.services.requests.create(&user, request, Delivery::Background).await {
        Ok(created) => Ok(see_other(&format!("/requests/{}", created.share_id))),
        Err(RequestError::SenderDisabled) => Err(AppError::Forbidden("the sender's account is disabled")),
        Err(RequestError::Fault(fault)) => Err(fault.into()),
    }
}

/// A file that arrived, as the request page lists it.
struct FileRow {
    position: i32,
    name: String,
    size: String,
    sha256: String,
    purged: bool,
    /// The virus scan let the sender have it (or it is not subject to the scan).
    released: bool,
    /// The scan's word on it (its code for the page's style, and the words), if it is scanned.
    scan: Option<(&'static str, String)>,
}

#[derive(Template)]
#[template(path = "dashboard/request.html")]
struct RequestPage {
    c: Chrome,
    row: RequestRow,
    message: String,
    note: String,
    files: Vec<FileRow>,
    /// The files can be fetched now (answered, not deleted).
    fetchable: bool,
    /// "Delete now" applies (open, or answered and still kept).
    deletable: bool,
    /// Open and locked after too many wrong codes: the unlock button shows.
    locked: bool,
    kept_until: Option<String>,
    /// A reply: the page of the share it answers, and the words that name it.
    reply_to: Option<(String, String)>,
    /// Each event's time and words (the Japanese line-break marks taken out).
    events: Vec<(String, String)>,
    csrf_token: String,
}

/// GET /requests/{id}: the request, what arrived and its timeline.
#[handler]
pub async fn show(
    Context { c, state, session, .. }: Context<'_>,
    Path(id): Path<i64>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let requests = &state.services.requests;
    let request = requests.find(viewer(&user), id).await?.ok_or_else(not_visible)?;
    let reader: Reader = c.reader();
    let answered = request.state == RequestState::Answered;
    let kept_until = requests.kept_until(&request).map(|at| human_time(at, reader));
    let files: Vec<FileRow> = request
        .files
        .iter()
        .map(|f| FileRow {
            position: f.position,
            name: f.name.clone(),
            size: human_size(f.size_bytes, c.lang),
            sha256: f.sha256.clone(),
            purged: f.purged,
            released: f.is_released(),
            scan: f.scan_state.map(|state| {
                let words = c.t.request.scan_mark(&c.t.dashboard.scan, state, f.scan_finding.as_deref());
                (state.code(), words.replace('|', ""))
            }),
        })
        .collect();
    let kept = answered && files.iter().any(|f| !f.purged);
    // A file still being checked is kept (and can be deleted) but not fetched.
    let fetchable = kept && files.iter().any(|f| !f.purged && f.released);
    let deletable = request.state == RequestState::Open || kept;
    let events = requests.events(viewer(&user), id).await?;
    let events = events
        .into_iter()
        .map(|e| {
            let text = match e.kind {
                EventKind::Verified => c.t.request.event_verified,
                kind => super::dashboard::event_text(c.t, c.lang, kind, false),
            };
            let text = text.replace('|', "");
            let name = e.file_name.as_deref().map(crate::text::strip_invisible).unwrap_or_default();
            (human_time(e.at, reader), text.replace("{name}", &name))
        })
        .collect();
    render(&RequestPage {
        row: row(&c, &request),
        message: request.message.clone(),
        note: request.uploader_note.clone(),
        files,
        fetchable,
        deletable,
        locked: request.locked && request.state == RequestState::Open,
        kept_until,
        reply_to: request
            .reply_to
            .map(|id| (super::paths::share(id), c.t.request.reply_to.replace("{id}", &id.to_string()))),
        events,
        csrf_token: session.form_token(),
        c,
    })
}

/// A file or the archive not served, as the page says it: whatever the viewer cannot fetch is
/// not there (404), a file the store lost since is gone (410).
fn unserved(unserved: Unserved) -> AppError {
    match unserved {
        Unserved::Missing => not_visible(),
        Unserved::Refused(Refusal::Fault(fault)) => fault.into(),
        Unserved::Refused(Refusal::Damaged) => AppError::FileDamaged,
        Unserved::Refused(_) => AppError::Gone("the request's files are gone"),
    }
}

/// GET /requests/{id}/files/{position}: one file that arrived, whole or one range.
#[handler]
pub async fn one_file(
    Context { state, req, .. }: Context<'_>,
    Path((id, position)): Path<(i64, i32)>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    arrived::one_file(state, &user, id, position, req.headers()).await.map_err(unserved)
}

/// GET /requests/{id}/archive: everything that arrived as one streamed ZIP archive.
#[handler]
pub async fn archive(
    Context { state, req, .. }: Context<'_>,
    Path(id): Path<i64>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    arrived::archive(state, &user, id, req.headers()).await.map_err(unserved)
}

/// POST /requests/{id}/unlock: the uploader may ask for codes again.
#[handler]
pub async fn unlock(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    match state.services.requests.unlock(viewer(&user), id).await? {
        Change::NotVisible => Err(not_visible()),
        _ => Ok(see_other(&format!("/requests/{id}"))),
    }
}

/// POST /requests/{id}/delete: the files go with the next GC pass (an open request ends now).
#[handler]
pub async fn delete_now(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    match state.services.requests.delete_now(viewer(&user), id).await? {
        Change::NotVisible => Err(not_visible()),
        Change::Done(()) | Change::NotApplicable | Change::TooSoon(_) => Ok(see_other(&format!("/requests/{id}"))),
    }
}
