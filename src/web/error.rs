//! One error type for the HTTP layer and the one place that turns any error into a friendly page:
//! 4xx pages say what the person can do next; 5xx pages show a reference and log the cause.

use std::time::Duration;

use askama::Template;
use poem::{
    Endpoint, IntoResponse, PathPattern, Request, Response,
    http::{StatusCode, header},
};

use super::{
    back_link::back_link,
    middleware::{RequestId, is_htmx},
    pages::Chrome,
    paths,
};
use crate::{
    db::Timestamp,
    i18n::{
        ErrorText, Lang, Text,
        format::{Reader, clock_time},
    },
};

/// Everything a handler can fail with. The `Display` text goes to the log only.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("bad request: {0}")]
    BadRequest(&'static str),
    #[error("forbidden: {0}")]
    Forbidden(&'static str),
    #[error("not found: {0}")]
    NotFound(&'static str),
    #[error("gone: {0}")]
    Gone(&'static str),
    #[error("share not available: {0}")]
    NotAvailable(&'static str),
    #[error("share already downloaded")]
    AlreadyDownloaded,
    #[error("request already answered")]
    AlreadyAnswered,
    #[error("share locked after too many wrong codes")]
    ShareLocked,
    #[error("download without a grant")]
    VerifyFirst,
    /// The share's files are held by the virus scan.
    #[error("files held by the virus scan")]
    BeingChecked,
    /// A stored file's bytes did not authenticate: never served; the sender can send it again.
    #[error("stored file damaged")]
    FileDamaged,
    /// A secret note that does not open with this instance's secret key: nothing was claimed, and
    /// the link works again once the operator restores the key.
    #[error("secret note unreadable with this secret key")]
    NoteUnreadable,
    /// A recipient's link form without its token's cookie, or with a token it no longer
    /// accepts: the recipient did nothing wrong, and a fresh link page mends it.
    #[error("recipient form refused: missing or wrong CSRF token (cookies sent: {cookies_sent})")]
    LinkFormRefused { cookies_sent: bool },
    #[error("sign-in required")]
    SignInRequired,
    #[error("body too large")]
    TooLarge,
    #[error("rate limited: {reason}")]
    TooMany { reason: &'static str, retry_after: Duration },
    /// The file system refused to store more (ENOSPC or a quota): the operator's problem, not the file's.
    #[error("storage full")]
    StorageFull(#[source] std::io::Error),
    #[error("database unavailable")]
    Unavailable(#[source] anyhow::Error),
    /// The database's disk is full: nothing was written; the same request works once there is room.
    #[error("database full")]
    DatabaseFull(#[source] anyhow::Error),
    /// The file store does not answer (a bucket down, a disk failing): nothing is lost, try again.
    #[error("storage unavailable")]
    StorageUnavailable(#[source] crate::storage::StoreError),
    /// The server is stopping (a restart): the request was cut, nothing was kept; send it again.
    #[error("server restarting")]
    Restarting,
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<crate::services::Fault> for AppError {
    fn from(fault: crate::services::Fault) -> Self {
        match fault {
            crate::services::Fault::Unavailable(error) => Self::Unavailable(error),
            crate::services::Fault::StorageUnavailable(error) => Self::StorageUnavailable(error),
            crate::services::Fault::DatabaseFull(error) => Self::DatabaseFull(error),
            crate::services::Fault::Internal(error) => Self::Internal(error),
        }
    }
}

impl From<anyhow::Error> for AppError {
    fn from(error: anyhow::Error) -> Self {
        crate::services::Fault::from(error).into()
    }
}

impl From<askama::Error> for AppError {
    fn from(error: askama::Error) -> Self {
        Self::Internal(error.into())
    }
}

impl poem::error::ResponseError for AppError {
    fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Forbidden(_) => StatusCode::FORBIDDEN,
            Self::NotFound(_) | Self::NotAvailable(_) => StatusCode::NOT_FOUND,
            Self::AlreadyDownloaded | Self::AlreadyAnswered => StatusCode::GONE,
            Self::ShareLocked | Self::VerifyFirst | Self::LinkFormRefused { .. } => StatusCode::FORBIDDEN,
            Self::BeingChecked => StatusCode::CONFLICT,
            Self::Gone(_) => StatusCode::GONE,
            Self::TooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::SignInRequired => StatusCode::SEE_OTHER,
            Self::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Unavailable(_) | Self::StorageUnavailable(_) | Self::Restarting | Self::NoteUnreadable => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            Self::StorageFull(_) | Self::DatabaseFull(_) => StatusCode::INSUFFICIENT_STORAGE,
            Self::Internal(_) | Self::FileDamaged => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// When a sender cut by a restart may try again: a restart takes seconds.
const RESTART_RETRY_AFTER_SECONDS: u64 = 30;

#[derive(Template)]
#[template(path = "error.html", blocks = ["error_card"])]
struct ErrorPage<'a> {
    c: Chrome,
    status: u16,
    text: &'a ErrorText,
    request_id: Option<&'a str>,
    /// How long to wait before trying again, in the person's words (a 429 that says).
    wait: Option<String>,
    /// The same wait as a time of day in the reader's zone.
    wait_until: Option<String>,
    /// The way back to where the person was, and its words.
    back: String,
    back_text: &'static str,
}

fn error_text(t: &'static Text, status: StatusCode) -> &'static ErrorText {
    match status {
        StatusCode::BAD_REQUEST => &t.errors.bad_request,
        StatusCode::FORBIDDEN => &t.errors.forbidden,
        StatusCode::NOT_FOUND => &t.errors.not_found,
        StatusCode::METHOD_NOT_ALLOWED => &t.errors.method_not_allowed,
        StatusCode::GONE => &t.errors.gone,
        StatusCode::PAYLOAD_TOO_LARGE => &t.errors.too_large,
        StatusCode::TOO_MANY_REQUESTS => &t.errors.too_many,
        StatusCode::SERVICE_UNAVAILABLE => &t.errors.unavailable,
        StatusCode::INSUFFICIENT_STORAGE => &t.errors.storage_full,
        s if s.is_client_error() => &t.errors.bad_request,
        _ => &t.errors.internal,
    }
}

/// Middleware body: renders every error that reaches it as a page in the visitor's language.
pub async fn render_errors<E: Endpoint>(ep: std::sync::Arc<E>, req: Request) -> poem::Result<Response> {
    let lang = req.extensions().get::<Lang>().copied().unwrap_or_default();
    let request_id = req.extensions().get::<RequestId>().cloned();
    let htmx = is_htmx(&req);
    let readiness = req.data::<super::AppState>().map(|state| state.services.readiness.clone());
    let chrome = Chrome::new(&req, lang);
    let back = back_link(req.method(), req.uri().path(), chrome.signed_in);
    let error = match ep.call(req).await {
        Ok(response) => return Ok(response.into_response()),
        Err(error) => error,
    };
    // The matched route's pattern stays on the page, for the request metrics.
    let pattern = error.data::<PathPattern>().cloned();
    let with_pattern = |mut response: Response| {
        if let Some(pattern) = pattern {
            response.set_data(pattern);
        }
        Ok(response)
    };
    if matches!(error.downcast_ref::<AppError>(), Some(AppError::SignInRequired)) {
        let location = if htmx { "HX-Redirect" } else { "Location" };
        return with_pattern(Response::builder().status(StatusCode::SEE_OTHER).header(location, paths::LOGIN).finish());
    }
    // Whichever way a handler wrapped it, a write the database refused for lack of space gets
    // the storage-full page, is counted, and takes this instance out of the balancer's rotation.
    let database_full = is_database_full(&error);
    if database_full && let Some(readiness) = &readiness {
        readiness.database_full();
    }
    // An authenticator app sealed under a secret key since replaced: no retry helps, an admin's
    // reset does, and the page says so.
    let factor_unreadable =
        has_cause(&error, |cause| cause.downcast_ref::<crate::accounts::second_factor::Unreadable>().is_some());
    let status = if database_full {
        StatusCode::INSUFFICIENT_STORAGE
    } else if factor_unreadable {
        StatusCode::CONFLICT
    } else {
        error.status()
    };
    let rid = request_id.as_ref().map(|r| r.0.as_str());
    if status.is_server_error() {
        tracing::error!(request_id = rid, status = status.as_u16(), error = ?error_chain(&error), "request failed");
    } else {
        tracing::info!(request_id = rid, status = status.as_u16(), reason = %error, "request refused");
    }
    let retry_after = error.downcast_ref::<AppError>().and_then(|e| match e {
        AppError::TooMany { retry_after, .. } => Some(retry_after.as_secs().max(1)),
        _ => None,
    });
    let t = lang.text();
    let text = match error.downcast_ref::<AppError>() {
        Some(AppError::NotAvailable(_)) => &t.errors.share_not_available,
        Some(AppError::AlreadyDownloaded) => &t.errors.share_already_downloaded,
        Some(AppError::ShareLocked) => &t.errors.share_locked,
        Some(AppError::VerifyFirst) => &t.errors.verify_first,
        Some(AppError::BeingChecked) => &t.errors.being_checked,
        Some(AppError::FileDamaged) => &t.errors.file_damaged,
        Some(AppError::NoteUnreadable) => &t.errors.note_unreadable,
        Some(AppError::Restarting) => &t.errors.restarting,
        Some(AppError::LinkFormRefused { cookies_sent: true }) => &t.errors.link_form_stale,
        Some(AppError::LinkFormRefused { cookies_sent: false }) => &t.errors.link_form_needs_cookies,
        _ if database_full => &t.errors.database_full,
        _ if factor_unreadable => &t.errors.factor_unreadable,
        _ => error_text(t, status),
    };
    let shown_id = status.is_server_error().then_some(rid).flatten();
    let link_form = matches!(error.downcast_ref::<AppError>(), Some(AppError::LinkFormRefused { .. }));
    let back_text = match back.as_str() {
        // The way back is the link's page, loaded afresh (a new form and cookie), not the stale form.
        _ if link_form => t.errors.reopen_link,
        paths::HOME => t.errors.back_home,
        paths::SHARES => t.errors.back_dashboard,
        _ => t.errors.back,
    };
    let wait = retry_after.map(|seconds| wait_words(t, seconds));
    let wait_until = retry_after.map(|seconds| until_words(t, chrome.reader(), chrono::Utc::now(), seconds));
    let page =
        ErrorPage { c: chrome, status: status.as_u16(), text, request_id: shown_id, wait, wait_until, back, back_text };
    let body =
        if htmx { page.as_error_card().render() } else { page.render() }.unwrap_or_else(|_| text.title.to_owned());
    let mut response = Response::builder().status(status).content_type("text/html; charset=utf-8").body(body);
    if htmx {
        // Show the message in place of the whole main area instead of inside a small target.
        response.headers_mut().insert("HX-Retarget", "#main".parse().expect("static header"));
        response.headers_mut().insert("HX-Reswap", "innerHTML".parse().expect("static header"));
    }
    if matches!(error.downcast_ref::<AppError>(), Some(AppError::Restarting)) {
        // The rest of the request is not read: the connection cannot carry another.
        response.headers_mut().insert(header::CONNECTION, "close".parse().expect("static header"));
        response.headers_mut().insert(header::RETRY_AFTER, RESTART_RETRY_AFTER_SECONDS.into());
    }
    if let Some(seconds) = retry_after {
        response.headers_mut().insert(header::RETRY_AFTER, seconds.into());
    }
    if status == StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().insert(header::ALLOW, "GET, HEAD, POST".parse().expect("static header"));
    }
    with_pattern(response)
}

/// "Please wait 4 minutes": a wait in whole minutes, rounded up so trying then works.
fn wait_words(t: &Text, seconds: u64) -> String {
    match seconds.div_ceil(60) {
        0 | 1 => t.errors.too_many_wait_minute.to_owned(),
        minutes => t.errors.too_many_wait_minutes.replace("{n}", &minutes.to_string()),
    }
}

/// "You can try again from 17:45 UTC": the end of the wait, rounded up to the minute as the wait
/// is, so trying at the time shown works.
fn until_words(t: &Text, reader: Reader, now: chrono::DateTime<chrono::Utc>, seconds: u64) -> String {
    let end = now.timestamp().saturating_add(i64::try_from(seconds).unwrap_or(i64::MAX / 2));
    let minute = end + (60 - end.rem_euclid(60)) % 60;
    let at = Timestamp(chrono::DateTime::from_timestamp(minute, 0).unwrap_or(now));
    t.errors.too_many_until.replace("{time}", &clock_time(at, reader))
}

/// True when anywhere in the error's causes the database refused a write for lack of space.
fn is_database_full(error: &poem::Error) -> bool {
    matches!(error.downcast_ref::<AppError>(), Some(AppError::DatabaseFull(_)))
        || has_cause(error, |cause| cause.downcast_ref::<sqlx::Error>().is_some_and(crate::db::is_disk_full))
}

/// True when one of the causes of an application error passes `test`.
fn has_cause(error: &poem::Error, test: impl Fn(&(dyn std::error::Error + 'static)) -> bool) -> bool {
    let Some(app) = error.downcast_ref::<AppError>() else { return false };
    let mut source = std::error::Error::source(app);
    while let Some(cause) = source {
        if test(cause) {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The full cause chain of an error, for the log of a 5xx.
fn error_chain(error: &poem::Error) -> String {
    let mut text = error.to_string();
    if let Some(app) = error.downcast_ref::<AppError>() {
        let mut source = std::error::Error::source(app);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_said_in_whole_minutes_rounded_up() {
        let t = Lang::En.text();
        assert_eq!(wait_words(t, 1), "Please wait a minute, then try again.");
        assert_eq!(wait_words(t, 60), "Please wait a minute, then try again.");
        assert_eq!(wait_words(t, 61), "Please wait 2 minutes, then try again.");
        assert_eq!(wait_words(Lang::Ja.text(), 600), "10分ほど待ってから、もう一度お試しください。");
    }

    #[test]
    fn the_end_of_a_wait_is_a_clock_time_rounded_up_in_the_readers_zone() {
        let now = chrono::DateTime::from_timestamp(1_764_460_800 + 8 * 3600 + 43 * 60 + 50, 0).unwrap(); // 08:43:50 UTC
        let en = Reader::from(Lang::En);
        assert_eq!(until_words(Lang::En.text(), en, now, 61), "You can try again from 08:45 UTC.");
        assert_eq!(until_words(Lang::En.text(), en, now, 10), "You can try again from 08:44 UTC.");
        let ja = Reader::from(Lang::Ja);
        assert_eq!(until_words(Lang::Ja.text(), ja, now, 600), "17:54（日本時間）から、もう一度お試しいただけます。");
        let paris = Reader { lang: Lang::En, zone: crate::accounts::TimeZone::parse("Europe/Paris") };
        assert_eq!(until_words(Lang::En.text(), paris, now, 61), "You can try again from 09:45 Europe/Paris.");
    }
}
