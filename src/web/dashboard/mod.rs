//! The sender's dashboard: their shares, one share's timeline (refreshing itself while it can
//! still change), revoking, and the new-share upload. A share the viewer may not see answers 404,
//! exactly like one that does not exist.

mod from_upload;
mod new_share;

pub use new_share::{new_share_form, upload};

use askama::Template;
use poem::{
    Request, Response, handler,
    web::{Data, Html, Path, Query},
};
use serde::Deserialize;

use super::{
    AppError, AppState, Chrome, SignedIn,
    middleware::{SessionHandle, is_htmx},
    render, see_other,
};
use crate::{
    accounts::User,
    i18n::{
        Text,
        format::{Reader, human_size, human_time},
    },
    mail::outbox::{MailDelivery, MailKind, MailStatus},
    services::sharing::{Actor, Change, viewer},
    share::{
        EventKind,
        sender::{SenderStatus, ShareSummary},
    },
};

const PAGE_SIZE: i64 = 25;

/// The answer for a share this sender may not see: the same 404 as for one that does not exist.
fn not_visible() -> AppError {
    AppError::NotFound("share not visible to this sender")
}

fn status_text(t: &'static Text, status: SenderStatus) -> &'static str {
    match status {
        SenderStatus::Waiting => t.status_waiting,
        SenderStatus::Locked => t.status_locked,
        SenderStatus::Downloaded => t.status_downloaded,
        SenderStatus::Expired => t.status_expired,
        SenderStatus::Revoked => t.status_revoked,
        SenderStatus::Deleted => t.status_deleted,
    }
}

fn event_text(t: &'static Text, kind: EventKind) -> &'static str {
    match kind {
        EventKind::Opened => t.event_opened,
        EventKind::CodeSent => t.event_code_sent,
        EventKind::CodeMailFailed => t.event_code_mail_failed,
        EventKind::CodeFailed => t.event_code_failed,
        EventKind::Locked => t.event_locked,
        EventKind::Unlocked => t.event_unlocked,
        EventKind::Verified => t.event_verified,
        EventKind::Downloaded => t.event_downloaded,
        EventKind::Completed => t.event_completed,
        EventKind::Refused => t.event_refused,
        EventKind::Revoked => t.event_revoked,
        EventKind::Purged => t.event_purged,
    }
}

/// A share as the templates show it.
pub struct ShareRow {
    id: i64,
    recipient: String,
    file_name: String,
    size: String,
    created: String,
    expires: String,
    status: &'static str,
    status_text: &'static str,
}

fn row(c: &Chrome, share: ShareSummary) -> ShareRow {
    // The retention sweep blanks these once a purged share is old enough.
    let or_removed = |text: String| if text.is_empty() { c.t.removed_after_retention.to_owned() } else { text };
    ShareRow {
        id: share.id,
        recipient: or_removed(share.recipient_email),
        file_name: or_removed(share.file_name),
        size: human_size(share.size_bytes, c.lang),
        created: human_time(share.created_at, c.reader()),
        expires: human_time(share.expires_at, c.reader()),
        status: share.status.code(),
        status_text: status_text(c.t, share.status),
    }
}

#[derive(Template)]
#[template(path = "dashboard/shares.html")]
struct SharesPage {
    c: Chrome,
    rows: Vec<ShareRow>,
    older: Option<i64>,
}

#[derive(Deserialize)]
pub struct ListQuery {
    before: Option<i64>,
}

/// GET /shares: the viewer's shares, newest first.
#[handler]
pub async fn list(
    c: Chrome,
    Query(query): Query<ListQuery>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let shares = state.services.sharing.list(viewer(&user), query.before, PAGE_SIZE + 1).await?;
    let older = (shares.len() as i64 > PAGE_SIZE).then(|| shares[PAGE_SIZE as usize - 1].id);
    let rows = shares.into_iter().take(PAGE_SIZE as usize).map(|s| row(&c, s)).collect();
    render(&SharesPage { c, rows, older })
}

pub struct EventRow {
    kind: &'static str,
    text: &'static str,
    at: String,
}

pub struct MailRow {
    kind: &'static str,
    status: &'static str,
    text: &'static str,
    at: String,
}

#[derive(Template)]
#[template(path = "dashboard/share.html", blocks = ["live"])]
struct SharePage<'a> {
    c: Chrome,
    share: ShareRow,
    events: Vec<EventRow>,
    mails: Vec<MailRow>,
    is_final: bool,
    can_revoke: bool,
    can_unlock: bool,
    /// A link made just now, shown this once.
    fresh_link: Option<String>,
    csrf_token: &'a str,
}

fn mail_row(t: &'static Text, reader: Reader, mail: MailDelivery) -> MailRow {
    MailRow {
        kind: match mail.kind {
            MailKind::DownloadReceipt => t.mail_kind_receipt,
            MailKind::ShareNotification | MailKind::Invitation => t.mail_kind_notification,
        },
        text: match mail.status {
            MailStatus::Pending => t.mail_pending,
            MailStatus::Sending => t.mail_sending,
            MailStatus::Sent => t.mail_sent,
            MailStatus::Dead => t.mail_dead,
        },
        at: human_time(mail.sent_at.unwrap_or(mail.created_at), reader),
        status: mail.status.code(),
    }
}

/// What the share page needs besides the share's id: who asks, and how they asked.
struct ShareView<'a> {
    req: &'a Request,
    c: Chrome,
    session: &'a SessionHandle,
    user: &'a User,
}

/// The share page, or only its live part for HTMX.
async fn share_page(
    view: ShareView<'_>,
    state: &AppState,
    id: i64,
    fresh_link: Option<String>,
) -> Result<String, AppError> {
    let ShareView { req, c, session, user } = view;
    let timeline = state.services.sharing.timeline(viewer(user), id).await?.ok_or_else(not_visible)?;
    let (t, reader) = (c.t, c.reader());
    let events = timeline
        .events
        .into_iter()
        .map(|e| EventRow { text: event_text(t, e.kind), kind: e.kind.code(), at: human_time(e.at, reader) })
        .collect();
    let mails = timeline.mails.into_iter().map(|m| mail_row(t, reader, m)).collect();
    let share = timeline.share;
    let status = share.status;
    let csrf_token = session.form_token();
    let page = SharePage {
        share: row(&c, share),
        c,
        events,
        mails,
        is_final: status.is_final(),
        can_revoke: matches!(status, SenderStatus::Waiting | SenderStatus::Locked),
        can_unlock: status == SenderStatus::Locked,
        fresh_link,
        csrf_token: &csrf_token,
    };
    Ok(if is_htmx(req) { page.as_live().render()? } else { page.render()? })
}

/// GET /shares/{id}
#[handler]
pub async fn show(
    req: &Request,
    c: Chrome,
    Path(id): Path<i64>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let view = ShareView { req, c, session: &session, user: &user };
    Ok(Html(share_page(view, &state, id, None).await?))
}

/// GET /shares/{id}/live: the status and timeline fragment the share page polls (HTMX only).
#[handler]
pub async fn live(
    req: &Request,
    c: Chrome,
    Path(id): Path<i64>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    // Taken as a result so that a plain request gets the 404 before any sign-in check.
    user: poem::Result<SignedIn>,
) -> poem::Result<Html<String>> {
    if !is_htmx(req) {
        return Err(AppError::NotFound("the live fragment is for HTMX requests").into());
    }
    let SignedIn(user) = user?;
    let view = ShareView { req, c, session: &session, user: &user };
    Ok(Html(share_page(view, &state, id, None).await?))
}

/// Where a revoke or an unlock leads: back to the share, whether or not it changed anything.
fn back_to_share(change: Change, id: i64) -> Result<Response, AppError> {
    match change {
        Change::NotVisible => Err(not_visible()),
        // Neither a revoke nor an unlock is rate-limited, so `TooSoon` does not happen here.
        Change::Done(()) | Change::NotApplicable | Change::TooSoon(_) => Ok(see_other(&format!("/shares/{id}"))),
    }
}

/// POST /shares/{id}/revoke: ends an active share at once; the GC then deletes its file.
#[handler]
pub async fn revoke(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    back_to_share(state.services.sharing.revoke(Actor::Sender(viewer(&user)), id).await?, id)
}

/// POST /shares/{id}/link: a new link for the recipient (the old one dies), mailed and shown once.
#[handler]
pub async fn renew_link(
    req: &Request,
    c: Chrome,
    Path(id): Path<i64>,
    state: Data<&AppState>,
    session: Data<&SessionHandle>,
    SignedIn(user): SignedIn,
) -> Result<Html<String>, AppError> {
    let link = match state.services.sharing.renew_link(&user, id).await? {
        Change::Done(link) => link,
        Change::NotVisible => return Err(not_visible()),
        Change::TooSoon(retry_after) => return Err(AppError::TooMany { reason: "link renewals", retry_after }),
        Change::NotApplicable => return Err(AppError::Gone("the share is no longer active")),
    };
    let view = ShareView { req, c, session: &session, user: &user };
    Ok(Html(share_page(view, &state, id, Some(link)).await?))
}

/// POST /shares/{id}/unlock: accepts codes again after too many wrong ones.
#[handler]
pub async fn unlock(
    Path(id): Path<i64>,
    state: Data<&AppState>,
    SignedIn(user): SignedIn,
) -> Result<Response, AppError> {
    back_to_share(state.services.sharing.unlock(viewer(&user), id).await?, id)
}
