//! The tus 1.0.0 endpoint (core, creation, expiration, termination, checksum), so a file larger
//! than a proxy's request cap arrives in pieces and a lost connection resumes: at `/uploads` for
//! signed-in, enabled senders, and at `/s/{token}/uploads` for a file request's uploader whose
//! session holds the link's grant (checked on every call, before any byte is stored). Each owner
//! sees only its own uploads (see [`Owner`]). Every answer carries `Tus-Resumable`; everything
//! but OPTIONS needs the owner (403 otherwise: a tus client cannot follow a sign-in redirect). The
//! CSRF token comes in the `X-CSRF-Token` header, checked by the CSRF guard without reading the
//! body.

use std::sync::Arc;

use poem::{
    Body, Endpoint, IntoResponse, Request, Response, Route, RouteMethod, handler,
    http::{HeaderValue, Method, StatusCode, header},
    web::{Data, Path},
};

use super::{AppState, middleware::SessionHandle, paths};
use crate::{
    accounts::tokens::bearer_token,
    db::Timestamp,
    request::UploadRefused,
    services::{
        Fault,
        handover::Refusal,
        uploads::{Patch, Progress, UploadError},
    },
    storage::StoreError,
    uploads::{Checksum, ChecksumError, Metadata, Owner, checksum::ALGORITHMS},
};

const TUS_VERSION: &str = "1.0.0";
const EXTENSIONS: &str = "creation,expiration,termination,checksum";
/// The content type of every PATCH body.
const OFFSET_OCTET_STREAM: &str = "application/offset+octet-stream";
/// tus's status for a body whose checksum does not match.
const CHECKSUM_MISMATCH: u16 = 460;

/// The tus endpoints: creation at `/uploads`, each upload at `/uploads/{id}`; the uploader's
/// under their request's link.
pub fn routes(route: Route) -> Route {
    route
        .at("/uploads", RouteMethod::new().options(options).post(create))
        .at("/uploads/:id", RouteMethod::new().head(upload).patch(upload).delete(upload).post(upload))
        .at("/s/:token/uploads", RouteMethod::new().options(options).post(create_for_request))
        .at(
            "/s/:token/uploads/:id",
            RouteMethod::new()
                .head(upload_for_request)
                .patch(upload_for_request)
                .delete(upload_for_request)
                .post(upload_for_request),
        )
}

/// Whether a path is a tus endpoint's (which checks its CSRF token from the header alone).
pub fn is_tus_path(path: &str) -> bool {
    let under_uploads = |rest: &str| rest == "/uploads" || rest.starts_with("/uploads/");
    if under_uploads(path) {
        return true;
    }
    // `/s/{token}/uploads[/{id}]`
    let Some(rest) = path.strip_prefix("/s/") else { return false };
    rest.find('/').is_some_and(|slash| slash > 0 && under_uploads(&rest[slash..]))
}

/// Middleware body: `Tus-Resumable` on every answer of the endpoint, error pages included.
pub async fn tus_resumable<E: Endpoint>(ep: Arc<E>, req: Request) -> poem::Result<Response> {
    let tus = is_tus_path(req.uri().path());
    let mut response = ep.call(req).await?.into_response();
    if tus {
        response.headers_mut().insert("Tus-Resumable", HeaderValue::from_static(TUS_VERSION));
    }
    Ok(response)
}

/// OPTIONS /uploads: what this server offers; no sign-in needed.
#[handler]
pub async fn options(state: Data<&AppState>) -> Response {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .header("Tus-Version", TUS_VERSION)
        .header("Tus-Extension", EXTENSIONS)
        .header("Tus-Max-Size", state.services.uploads.max_size())
        .header("Tus-Checksum-Algorithm", ALGORITHMS)
        .finish()
}

/// POST /uploads (creation).
#[handler]
pub async fn create(req: &Request, state: Data<&AppState>) -> Response {
    match admit_sender(req, &state).await {
        Ok(owner) => create_as(req, &state, owner, paths::upload).await,
        Err(refused) => refused,
    }
}

/// POST /s/{token}/uploads (creation, by the request's verified uploader).
#[handler]
pub async fn create_for_request(req: &Request, Path(token): Path<String>, state: Data<&AppState>) -> Response {
    match admit_uploader(req, &state, &token).await {
        Ok(owner) => create_as(req, &state, owner, |id| paths::request_upload(&token, id)).await,
        Err(refused) => refused,
    }
}

/// Creates the owner's upload; `location` is where its id is then found.
async fn create_as(req: &Request, state: &AppState, owner: Owner, location: impl Fn(&str) -> String) -> Response {
    if req.header("upload-defer-length").is_some() {
        return plain(StatusCode::BAD_REQUEST, "Upload-Defer-Length is not supported");
    }
    let Some(length) = req.header("upload-length").and_then(|v| v.parse::<u64>().ok()) else {
        return plain(StatusCode::BAD_REQUEST, "Upload-Length is required");
    };
    let Ok(metadata) = Metadata::parse(req.header("upload-metadata")) else {
        return plain(StatusCode::BAD_REQUEST, "malformed Upload-Metadata");
    };
    let uploads = &state.services.uploads;
    let created = async {
        let id = uploads.create(owner, length, metadata).await?;
        Ok::<_, UploadError>((uploads.progress(owner, &id).await?, id))
    };
    match created.await {
        Ok((progress, id)) => Response::builder()
            .status(StatusCode::CREATED)
            .header(header::LOCATION, location(&id))
            .header("Upload-Expires", http_date(progress.expires_at))
            .finish(),
        Err(error) => refusal(error),
    }
}

/// HEAD, PATCH and DELETE /uploads/{id}, and POST with `X-HTTP-Method-Override` naming one.
#[handler]
pub async fn upload(req: &Request, body: Body, Path(id): Path<String>, state: Data<&AppState>) -> Response {
    match admit_sender(req, &state).await {
        Ok(owner) => upload_as(req, body, &id, &state, owner).await,
        Err(refused) => refused,
    }
}

/// The same at /s/{token}/uploads/{id}, for the request's verified uploader.
#[handler]
pub async fn upload_for_request(
    req: &Request,
    body: Body,
    Path((token, id)): Path<(String, String)>,
    state: Data<&AppState>,
) -> Response {
    match admit_uploader(req, &state, &token).await {
        Ok(owner) => upload_as(req, body, &id, &state, owner).await,
        Err(refused) => refused,
    }
}

async fn upload_as(req: &Request, body: Body, id: &str, state: &AppState, owner: Owner) -> Response {
    let method = match (req.method(), req.header("x-http-method-override")) {
        (&Method::POST, Some(name)) => match Method::from_bytes(name.trim().to_ascii_uppercase().as_bytes()) {
            Ok(method) => method,
            Err(_) => return plain(StatusCode::BAD_REQUEST, "unknown method override"),
        },
        (method, _) => method.clone(),
    };
    let uploads = &state.services.uploads;
    let answer = match method {
        Method::HEAD => uploads.progress(owner, id).await.map(head_answer),
        Method::PATCH => match patch_of(req, body) {
            Ok(patch) => uploads.patch(owner, id, patch).await.map(patch_answer),
            Err((status, reason)) => return plain(status, reason),
        },
        Method::DELETE => uploads.terminate(owner, id).await.map(|()| empty(StatusCode::NO_CONTENT)),
        _ => return plain(StatusCode::METHOD_NOT_ALLOWED, "HEAD, PATCH or DELETE"),
    };
    answer.unwrap_or_else(refusal)
}

/// The protocol version, then the signed-in, enabled sender.
async fn admit_sender(req: &Request, state: &AppState) -> Result<Owner, Response> {
    if let Some(refused) = speaks_tus(req) {
        return Err(refused);
    }
    // A script's personal API token (with `shares:write`) stands for the sender; the session is
    // then not read at all, which is why the CSRF guard lets such a request pass.
    if let Some(header) = bearer_header(req) {
        let client =
            req.data::<super::middleware::ClientAddr>().map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0);
        return match state.services.tokens.authenticate(Some(header), client).await {
            Ok(caller) if caller.may(crate::accounts::tokens::Scope::SharesWrite) => Ok(Owner::Sender(caller.user.id)),
            Ok(_) => Err(plain(StatusCode::FORBIDDEN, "this token lacks the scope shares:write")),
            Err(crate::services::tokens::TokenRefusal::Fault(fault)) => Err(fault_answer(fault)),
            Err(crate::services::tokens::TokenRefusal::TooMany(wait)) => {
                let mut refused = plain(StatusCode::TOO_MANY_REQUESTS, "too many requests");
                refused.headers_mut().insert(poem::http::header::RETRY_AFTER, wait.as_secs().max(1).into());
                Err(refused)
            }
            Err(_) => Err(plain(StatusCode::UNAUTHORIZED, "a valid bearer token is required")),
        };
    }
    let session = req.extensions().get::<SessionHandle>().and_then(SessionHandle::current);
    match state.services.accounts.signed_in(session.as_ref()).await {
        Ok(Some(user)) => Ok(Owner::Sender(user.id)),
        Ok(None) => Err(plain(StatusCode::FORBIDDEN, "sign in first")),
        Err(fault) => Err(fault_answer(fault)),
    }
}

/// The `Authorization` header of a script's tus call: the `Bearer` scheme only. A browser behind
/// a proxy's password prompt sends `Basic` credentials by itself; its call stays the session's
/// (and the CSRF guard's), instead of failing as a wrong token.
pub fn bearer_header(req: &Request) -> Option<&str> {
    req.header(header::AUTHORIZATION).filter(|value| bearer_token(value).is_some())
}

/// The protocol version, then the request the link names, granted to this session and still
/// taking files: a stranger holding the link, a session granted another link, and an answered
/// or ended request all get 403 before a byte is read.
async fn admit_uploader(req: &Request, state: &AppState, token: &str) -> Result<Owner, Response> {
    if let Some(refused) = speaks_tus(req) {
        return Err(refused);
    }
    let session = req.extensions().get::<SessionHandle>().and_then(SessionHandle::current);
    match state.services.requests.granted(token, session.as_ref()).await {
        Ok(share) => Ok(Owner::Request(share.id)),
        Err(Refusal::Fault(fault)) => Err(fault_answer(fault)),
        Err(Refusal::VerifyFirst) => Err(plain(StatusCode::FORBIDDEN, "verify your address on the link first")),
        Err(refused) => {
            tracing::info!(?refused, "request upload refused");
            Err(plain(StatusCode::FORBIDDEN, "this link takes no uploads"))
        }
    }
}

/// The refusal of a request that does not speak tus 1.0.0; none when it does.
fn speaks_tus(req: &Request) -> Option<Response> {
    if req.header("tus-resumable") == Some(TUS_VERSION) {
        return None;
    }
    let mut refused = plain(StatusCode::PRECONDITION_FAILED, "Tus-Resumable 1.0.0 is required");
    refused.headers_mut().insert("Tus-Version", HeaderValue::from_static(TUS_VERSION));
    Some(refused)
}

/// The PATCH's headers, or the status and reason refusing them.
fn patch_of(req: &Request, body: Body) -> Result<Patch, (StatusCode, &'static str)> {
    if req.header("content-type").map(str::trim) != Some(OFFSET_OCTET_STREAM) {
        return Err((StatusCode::UNSUPPORTED_MEDIA_TYPE, "the body must be application/offset+octet-stream"));
    }
    let Some(offset) = req.header("upload-offset").and_then(|v| v.parse::<u64>().ok()) else {
        return Err((StatusCode::BAD_REQUEST, "Upload-Offset is required"));
    };
    let checksum = match req.header("upload-checksum").map(Checksum::parse).transpose() {
        Ok(checksum) => checksum,
        Err(ChecksumError::Unsupported) => return Err((StatusCode::BAD_REQUEST, "unsupported checksum algorithm")),
        Err(ChecksumError::Malformed) => return Err((StatusCode::BAD_REQUEST, "malformed Upload-Checksum")),
    };
    let content_length = req.header("content-length").and_then(|v| v.parse::<u64>().ok());
    Ok(Patch { offset, content_length, checksum, body: Box::pin(body.into_async_read()) })
}

fn head_answer(progress: Progress) -> Response {
    let mut answer = Response::builder()
        .status(StatusCode::OK)
        .header("Upload-Offset", progress.offset)
        .header("Upload-Length", progress.length)
        .header("Upload-Expires", http_date(progress.expires_at))
        .header(header::CACHE_CONTROL, "no-store")
        .finish();
    if let Some(metadata) = progress.metadata.and_then(|m| HeaderValue::from_str(&m).ok()) {
        answer.headers_mut().insert("Upload-Metadata", metadata);
    }
    answer
}

fn patch_answer(progress: Progress) -> Response {
    Response::builder()
        .status(StatusCode::NO_CONTENT)
        .header("Upload-Offset", progress.offset)
        .header("Upload-Expires", http_date(progress.expires_at))
        .finish()
}

/// The protocol's answer to each refusal; the reason goes to the log for server errors only.
fn refusal(error: UploadError) -> Response {
    match error {
        UploadError::NotFound => plain(StatusCode::NOT_FOUND, "no such upload"),
        UploadError::TooLarge => plain(StatusCode::PAYLOAD_TOO_LARGE, "larger than the upload allows"),
        UploadError::OverReservation => plain(
            StatusCode::INSUFFICIENT_STORAGE,
            "your uploads not yet shared already reserve the space allowed: share or cancel one first",
        ),
        UploadError::SenderDisabled => plain(StatusCode::FORBIDDEN, "sign in first"),
        UploadError::Refused(UploadRefused::Closed) => plain(StatusCode::FORBIDDEN, "this link takes no uploads"),
        UploadError::Refused(refused) => {
            plain(StatusCode::PAYLOAD_TOO_LARGE, &format!("{refused}: the request has no room for this file"))
        }
        UploadError::Conflict => plain(StatusCode::CONFLICT, "Upload-Offset does not match the upload"),
        UploadError::ChecksumMismatch => {
            plain(StatusCode::from_u16(CHECKSUM_MISMATCH).expect("valid status"), "checksum mismatch")
        }
        UploadError::Unverified => plain(StatusCode::BAD_REQUEST, "the body ended before its checksum was checked"),
        UploadError::Locked => plain(StatusCode::LOCKED, "another request is writing this upload"),
        UploadError::Store(StoreError::Io(io))
            if matches!(io.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded) =>
        {
            tracing::error!(error = %io, "upload refused: storage full");
            plain(StatusCode::INSUFFICIENT_STORAGE, "the server's storage is full")
        }
        UploadError::Store(StoreError::Io(io)) => {
            tracing::error!(error = %io, "upload refused: storage unavailable");
            plain(StatusCode::SERVICE_UNAVAILABLE, "storage unavailable: try again")
        }
        UploadError::Store(error) => {
            tracing::error!(error = ?anyhow::Error::from(error), "upload storage failed");
            plain(StatusCode::INTERNAL_SERVER_ERROR, "internal error")
        }
        UploadError::Fault(fault) => fault_answer(fault),
    }
}

fn fault_answer(fault: Fault) -> Response {
    let status = match &fault {
        Fault::Unavailable(_) | Fault::StorageUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
        Fault::DatabaseFull(_) => StatusCode::INSUFFICIENT_STORAGE,
        Fault::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
    };
    tracing::error!(error = ?anyhow::Error::from(fault), "upload request failed");
    plain(status, "try again later")
}

fn plain(status: StatusCode, reason: &str) -> Response {
    Response::builder().status(status).content_type("text/plain; charset=utf-8").body(reason.to_owned())
}

fn empty(status: StatusCode) -> Response {
    Response::builder().status(status).finish()
}

/// An HTTP-date (RFC 9110 IMF-fixdate), as `Upload-Expires` is.
fn http_date(at: Timestamp) -> String {
    at.0.format("%a, %d %b %Y %H:%M:%S GMT").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tus_paths_are_the_senders_and_each_links() {
        for path in ["/uploads", "/uploads/abc", "/s/tok/uploads", "/s/tok/uploads/abc"] {
            assert!(is_tus_path(path), "{path}");
        }
        for path in ["/uploadsx", "/s/tok/upload", "/s//uploads", "/s/tok/uploadsx", "/s/tok/files/uploads", "/shares"]
        {
            assert!(!is_tus_path(path), "{path}");
        }
    }

    #[test]
    fn upload_expires_is_an_imf_fixdate() {
        let at = chrono::DateTime::from_timestamp(784_111_777, 0).unwrap();
        assert_eq!(http_date(Timestamp(at)), "Sun, 06 Nov 1994 08:49:37 GMT");
    }
}
