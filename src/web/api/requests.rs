//! The API's file requests: ask someone for files, read a request with the files that arrived
//! (their digests) and its state, download them (one by one or as a ZIP archive, as the page
//! serves them), and delete it now. Every rule is the requests service's, as for the pages;
//! another sender's request answers 404 as one that does not exist.

use poem::{Request, http::StatusCode, web::Data};
use poem_openapi::{
    ApiResponse, Object, OpenApi,
    param::{Path, Query},
    payload::Json,
};

use super::{
    ApiTags,
    auth::Token,
    binary::{Download, OctetStream, Zip},
    cursor::Page,
    fields::{self, invalid},
    problem::ApiError,
};
use crate::{
    accounts::{EmailAddress, tokens::Scope},
    request::{RequestLimits, RequestListing, RequestState},
    scan::ScanState,
    services::{
        Fault,
        handover::Refusal,
        mails::Delivery,
        requests::{FileRequest, RequestError},
        sharing::{Change, viewer},
    },
    share::Message,
    web::{
        AppState,
        arrived::{self, Unserved},
    },
};

pub struct RequestApi;

/// A new file request.
#[derive(Object)]
pub struct NewRequest {
    /// Who is asked for files; the link goes to them by mail.
    pub uploader: String,
    /// A message in their mail.
    #[oai(default)]
    pub message: String,
    /// How long the link stays valid (`7d`, `12h`, …); the server's default without it.
    pub ttl: Option<String>,
    /// How many files at most; the server's default without it.
    pub max_files: Option<u32>,
    /// The largest file, in bytes; the instance's limit without it.
    pub max_file_bytes: Option<u64>,
    /// All files together, in bytes; the instance's limit without it.
    pub max_total_bytes: Option<u64>,
    /// The language of the uploader's mail and pages (`en`, `ja`); the owner's without it.
    pub lang: Option<String>,
}

/// A request just made: its link is seen only here and in the uploader's mail.
#[derive(Object)]
pub struct CreatedRequest {
    pub id: i64,
    pub link: String,
}

/// A request's answer: 201 with its id and link.
#[derive(ApiResponse)]
pub enum Asked {
    #[oai(status = 201)]
    Created(Json<CreatedRequest>),
}

/// A file that arrived.
#[derive(Object)]
pub struct ArrivedFileView {
    pub position: i32,
    pub name: String,
    pub size_bytes: i64,
    /// The content's SHA-256, hex.
    pub sha256: String,
    /// Its bytes are gone (the retention ended, it was deleted, or the scan refused it).
    pub purged: bool,
}

/// A file request as its sender follows it.
#[derive(Object)]
pub struct RequestView {
    pub id: i64,
    pub uploader: String,
    pub message: String,
    /// `open`, `answered`, `expired`, `ended` or `purged`.
    pub state: String,
    /// Too many wrong codes: no more until the sender unlocks it.
    pub locked: bool,
    pub created_at: String,
    #[oai(skip_serializing_if_is_none)]
    pub answered_at: Option<String>,
    pub files: Vec<ArrivedFileView>,
}

impl From<RequestListing> for RequestView {
    fn from(request: RequestListing) -> Self {
        let at = |t: crate::db::Timestamp| t.0.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        Self {
            id: request.id,
            uploader: request.uploader_email,
            message: request.message,
            state: request.state.code().to_owned(),
            locked: request.locked,
            created_at: at(request.created_at),
            answered_at: request.answered_at.map(at),
            files: request
                .files
                .into_iter()
                .map(|f| ArrivedFileView {
                    position: f.position,
                    name: f.name,
                    size_bytes: f.size_bytes,
                    sha256: f.sha256,
                    purged: f.purged,
                })
                .collect(),
        }
    }
}

/// A page of requests.
#[derive(Object)]
pub struct RequestPage {
    pub requests: Vec<RequestView>,
    /// The next page's `cursor`; absent on the last page.
    #[oai(skip_serializing_if_is_none)]
    pub next_cursor: Option<String>,
}

/// What a delete came to.
#[derive(Object)]
pub struct Deleted {
    pub id: i64,
}

#[OpenApi(tag = "ApiTags::Requests")]
impl RequestApi {
    /// Asks someone for files: they get a link by mail and send the files from their browser.
    ///
    /// Needs the scope `requests:write`.
    #[oai(path = "/requests", method = "post")]
    async fn create(&self, state: Data<&AppState>, token: Token, body: Json<NewRequest>) -> Result<Asked, ApiError> {
        let sender = token.with(Scope::RequestsWrite)?;
        let body = body.0;
        let settings = &state.config.settings;
        let uploader = EmailAddress::parse(&body.uploader).map_err(|e| invalid("uploader", e))?;
        let message = Message::parse(&body.message).map_err(|e| invalid("message", e))?;
        let ttl = fields::ttl(body.ttl.as_deref(), settings.share_ttl, settings.share_ttl_max)?;
        let limits =
            RequestLimits::parse(body.max_files, body.max_file_bytes, body.max_total_bytes, settings.max_upload_bytes)
                .map_err(|e| invalid("limits", e))?;
        let lang = fields::lang(body.lang.as_deref(), &sender.user)?;
        let request = FileRequest { uploader, message, ttl, limits, lang };
        match state.services.requests.create(&sender.user, request, Delivery::Background).await {
            Ok(created) => Ok(Asked::Created(Json(CreatedRequest { id: created.share_id, link: created.link }))),
            Err(RequestError::SenderDisabled) => {
                Err(ApiError::of(StatusCode::FORBIDDEN, "the sender's account is disabled"))
            }
            Err(RequestError::Fault(fault)) => Err(fault.into()),
        }
    }

    /// The token owner's requests, newest first, a page at a time: pass `next_cursor` as
    /// `cursor` for the next.
    ///
    /// Needs the scope `requests:read`.
    #[oai(path = "/requests", method = "get")]
    async fn list(
        &self,
        state: Data<&AppState>,
        token: Token,
        /// Where the previous page ended (its `next_cursor`).
        cursor: Query<Option<String>>,
        /// How many requests at most (1 to 100; 25 without it).
        #[oai(validator(minimum(value = "1"), maximum(value = "100")))]
        limit: Query<Option<u32>>,
    ) -> Result<Json<RequestPage>, ApiError> {
        let caller = token.with(Scope::RequestsRead)?;
        let page = Page::of(cursor.0.as_deref(), limit.0)?;
        let requests = state.services.requests.page(viewer(&caller.user), page.before, page.ask()).await?;
        let (requests, next_cursor) = page.cut(requests, |request| request.id);
        Ok(Json(RequestPage { requests: requests.into_iter().map(RequestView::from).collect(), next_cursor }))
    }

    /// A request with its state and the files that arrived, with their SHA-256 digests.
    ///
    /// Needs the scope `requests:read`.
    #[oai(path = "/requests/:id", method = "get")]
    async fn show(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Json<RequestView>, ApiError> {
        let caller = token.with(Scope::RequestsRead)?;
        let request = state.services.requests.find(viewer(&caller.user), id.0).await?;
        Ok(Json(request.ok_or_else(ApiError::not_found)?.into()))
    }

    /// The bytes of one file that arrived (`position` as the request lists it), as the request's
    /// page serves them: named in `Content-Disposition`, with an `ETag` (its SHA-256), and a
    /// part of it for a `Range` header (206). A file still held by the virus scan is 409; one
    /// deleted, past its retention or refused by the scan is 410.
    ///
    /// Needs the scope `requests:read`.
    #[oai(path = "/requests/:id/files/:position", method = "get")]
    async fn file(
        &self,
        state: Data<&AppState>,
        token: Token,
        req: &Request,
        id: Path<i64>,
        position: Path<i32>,
    ) -> Result<Download<OctetStream>, ApiError> {
        let caller = token.with(Scope::RequestsRead)?;
        match arrived::one_file(&state, &caller.user, id.0, position.0, req.headers()).await {
            Ok(response) => Ok(Download::new(response)),
            Err(unserved) => Err(not_served(&state, &caller.user, id.0, Some(position.0), unserved).await),
        }
    }

    /// Every file that arrived and may be fetched, as one streamed ZIP archive (a `Range` header
    /// asks for a part of it). Files held by the virus scan are 409 until it releases one; files
    /// all gone are 410.
    ///
    /// Needs the scope `requests:read`.
    #[oai(path = "/requests/:id/zip", method = "get")]
    async fn zip(
        &self,
        state: Data<&AppState>,
        token: Token,
        req: &Request,
        id: Path<i64>,
    ) -> Result<Download<Zip>, ApiError> {
        let caller = token.with(Scope::RequestsRead)?;
        match arrived::archive(&state, &caller.user, id.0, req.headers()).await {
            Ok(response) => Ok(Download::new(response)),
            Err(unserved) => Err(not_served(&state, &caller.user, id.0, None, unserved).await),
        }
    }

    /// Deletes the request now: an answered one's files go with the next collection, an open one
    /// ends at once.
    ///
    /// Needs the scope `requests:write`.
    #[oai(path = "/requests/:id", method = "delete")]
    async fn delete(&self, state: Data<&AppState>, token: Token, id: Path<i64>) -> Result<Json<Deleted>, ApiError> {
        let caller = token.with(Scope::RequestsWrite)?;
        match state.services.requests.delete_now(viewer(&caller.user), id.0).await? {
            Change::Done(()) => Ok(Json(Deleted { id: id.0 })),
            Change::NotVisible => Err(ApiError::not_found()),
            _ => Err(ApiError::conflict("the request has already ended")),
        }
    }
}

/// Why request `id`'s file at `position` (all of them without one) was not served, as its problem.
async fn not_served(
    state: &AppState,
    user: &crate::accounts::User,
    id: i64,
    position: Option<i32>,
    unserved: Unserved,
) -> ApiError {
    match unserved {
        Unserved::Missing => match state.services.requests.find(viewer(user), id).await {
            Ok(Some(request)) => missing(&request, position),
            Ok(None) => ApiError::not_found(),
            Err(fault) => fault.into(),
        },
        Unserved::Refused(Refusal::Fault(fault)) => fault.into(),
        Unserved::Refused(Refusal::Damaged) => {
            Fault::Internal(anyhow::anyhow!("a stored file of request {id} did not authenticate")).into()
        }
        Unserved::Refused(_) => gone(),
    }
}

/// What keeps a visible request's files from its sender, read from what its page shows.
fn missing(request: &RequestListing, position: Option<i32>) -> ApiError {
    let mut asked = request.files.iter().filter(|f| position.is_none_or(|p| f.position == p)).peekable();
    match request.state {
        RequestState::Open => ApiError::conflict("nothing has arrived yet: the request is still open"),
        RequestState::Answered if asked.peek().is_none() => {
            ApiError::of(StatusCode::NOT_FOUND, "the request has no file at that position")
        }
        // Only a file still waiting for its verdict is held; one the scan refused is gone even
        // while its bytes await deletion.
        RequestState::Answered if asked.any(|f| !f.purged && f.scan_state == Some(ScanState::Pending)) => {
            ApiError::conflict("the virus scan holds the file until it finds it clean")
        }
        _ => gone(),
    }
}

fn gone() -> ApiError {
    ApiError::of(StatusCode::GONE, "the files are gone: deleted, past their retention, or refused by the virus scan")
}
